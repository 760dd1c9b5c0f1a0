/*
 * The two pieces of arithmetic every staggered first-order system shares
 * (elastic_stencil.h, maxwell_stencil.h): the staggered first difference and
 * the C-PML stretch of one derivative.  Included by an equation's stencil
 * after SWEEP_FN and SWEEP_R are defined (once per specialisation).
 */
/* Staggered difference at f (unscaled): forward (nodes to half nodes)
 * sum_k w_k (f[k] - f[1 - k]), backward sum_k w_k (f[k - 1] - f[-k]), s the
 * stride along the axis, w_k = w[(k - 1) ws]. */
SWEEP_HD SWEEP_R SWEEP_FN(stag_diff)(const SWEEP_R *f, sweep_int s, int fw, const SWEEP_R *w,
                                   sweep_int ws, int nh) {
  const sweep_int o = fw ? 0 : -1;
  SWEEP_R acc = 0;
  for (int k = 1; k <= nh; ++k)
    acc = SWEEP_FMA(w[(k - 1) * ws], f[(k + o) * s] - f[(1 - k + o) * s], acc);
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

