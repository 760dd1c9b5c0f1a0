/*
 * The two pieces of arithmetic every staggered first-order system shares
 * (elastic_stencil.h, maxwell_stencil.h): the staggered first difference and
 * the C-PML stretch of one derivative.  Included by an equation's stencil
 * after SWEEP_FN and SWEEP_R are defined (once per specialisation).
 */
/* The taps of a difference, by nh.  nh > 0: the reach, a literal (the plain
 * rows: nh taps, unrolled).  nh == 0: the run-time reach rnh as STAG_MAX_H
 * taps, those past rnh repeating tap rnh with weight 0 (exact zeros added): a
 * loop of constant length, which unrolls, so the CPU vectorises the cell loop
 * around it (around a loop of run-time length it does not).  nh < 0: a loop
 * of rnh taps (less code; the CPU runs it scalar). */
#define STAG_MAX_H 4
#define STAG_TAPS(nh, rnh) ((nh) > 0 ? (nh) : (nh) == 0 ? STAG_MAX_H : (rnh))
/* Tap t as read (clamped to the reach) and its weight w (times 0 past the
 * reach: w is loaded either way, a select of a load the vectoriser refused). */
#define STAG_TAP(nh, rnh, t) ((nh) > 0 || (t) <= (rnh) ? (t) : (rnh))
#define STAG_TAP_W(nh, rnh, t, w) (((nh) > 0 || (t) <= (rnh) ? (SWEEP_R)1 : (SWEEP_R)0) * (w))

/* Staggered difference at f (unscaled): forward (nodes to half nodes)
 * sum_k w_k (f[k] - f[1 - k]), backward sum_k w_k (f[k - 1] - f[-k]), s the
 * stride along the axis, w_k = w[(k - 1) ws]; taps of (nh, rnh) as above. */
/* Its tap sum, type-generic (the scalar here, a vector of cells in the CPU's
 * TM2D rows, sweep_cy/maxwell_cpu_impl.h): acc (zero on entry) += w_k (F(k
 * + o) - F(1 - k + o)), o = fw ? 0 : -1, with F(j) the value j cells along
 * the axis and W(k) the weight w_k. */
#define STAG_DIFF_SUM(acc, F, W, fw, nh, rnh)                                         \
  for (int t_ = 1; t_ <= STAG_TAPS(nh, rnh); ++t_) {                                  \
    const int k_ = STAG_TAP(nh, rnh, t_), o_ = (fw) ? 0 : -1;                         \
    (acc) = SWEEP_FMA(STAG_TAP_W(nh, rnh, t_, W(k_)), F(k_ + o_) - F(1 - k_ + o_), (acc)); \
  }
SWEEP_HD SWEEP_R SWEEP_FN(stag_diff)(const SWEEP_R *f, sweep_int s, int fw, const SWEEP_R *w,
                                   sweep_int ws, int nh, int rnh) {
  SWEEP_R acc = 0;
#define STAG_F_(j) f[(j) * s]
#define STAG_W_(k) w[((k) - 1) * ws]
  STAG_DIFF_SUM(acc, STAG_F_, STAG_W_, fw, nh, rnh)
#undef STAG_F_
#undef STAG_W_
  return acc;
}

/* The C-PML stretch of derivative D at cell i (memory variable m, profiles at
 * coordinate cd): psi = B psi + A D, returns D + psi. */
SWEEP_HD SWEEP_R SWEEP_FN(stag_stretch)(SWEEP_R *m, const SWEEP_R *A, const SWEEP_R *B,
                                      sweep_int cd, SWEEP_R D) {
  const SWEEP_R psi = SWEEP_FMA(B[cd], *m, A[cd] * D);
  *m = psi;
  return D + psi;
}

