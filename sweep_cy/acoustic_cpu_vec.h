/*
 * Explicit-vector rows of the acoustic equation: the x range of a row whose
 * x axis is plain, SWEEP_VL cells at a time, on the shared vector machinery
 * of cpu_vec.h (the window over a row, the outer axes' tap offsets, the tail
 * buffer).  The arithmetic is the stencil header's (SWEEP_FWD_AXIS,
 * SWEEP_ADJ_AXIS, the tap sums and the leapfrog lines, with SWEEP_LD /
 * SWEEP_ST loading and storing vectors) in the same order, so every lane
 * rounds exactly like the scalar path (tests/test_simd_rows.py).
 *
 * Included by acoustic_cpu_impl.h once per specialisation, after the stencil
 * header (with SWEEP_STENCIL_KEEP_MACROS), where SWEEP_FN / SWEEP_R / SWEEP_H
 * and the stencil macros are defined.  Without vector rows (SWEEP_HAVE_VEC 0)
 * the scalar rows do all the work.
 */

/* The forward's tail buffer holds u^{n-1} and zeta of each axis. */
#define SWEEP_TAIL_SLOTS 4
#include "cpu_vec.h"

/*
 * The forward's second-difference operator.  Acoustic's is SWEEP_D2 of u; an
 * equation with another one on the same fields and CPML (VRZ's flux form,
 * vrz_stencil.h) defines, before including this header, SWEEP_VEC_FWD_OP
 * (SWEEP_D2's place in SWEEP_FWD_AXIS_OP) and these taps:
 *   SWEEP_VEC_FWD_XOP_(k), SWEEP_VEC_FWD_OOP_(k): the operator's taps along x
 *     (from the windows uw and mw) and along the outer axes (through tp);
 *   SWEEP_VEC_FWD_XPSI_(k), SWEEP_VEC_FWD_OPSI_(k): those of D1 psi;
 *   SWEEP_VEC_FWD_CELL: declarations per vector of cells the taps use;
 *   SWEEP_VEC_M1 1: the rows take a second model m1 (VRZ's buoyancy), whose
 *     row the window mw slides over (else mw is a copy of uw, never read).
 */
#ifndef SWEEP_VEC_FWD_OP
#define SWEEP_VEC_FWD_OP SWEEP_D2
#define SWEEP_VEC_FWD_XOP_ SWEEP_TAP_XU_
#define SWEEP_VEC_FWD_OOP_ SWEEP_TAP_OU_
#define SWEEP_VEC_FWD_XPSI_ SWEEP_TAP_XPSI_
#define SWEEP_VEC_FWD_OPSI_ SWEEP_TAP_OPSI_
#define SWEEP_VEC_FWD_CELL (void)0
#define SWEEP_VEC_M1 0
#endif

#if SWEEP_HAVE_VEC
/* The x taps of the cells [x, x + VL) from a window. */
#define SWEEP_TAP_XU_(k) SWEEP_WINDOW_TAP(uw, k)
#define SWEEP_TAP_XPSI_(k) SWEEP_WINDOW_TAP(pw, k)
#define SWEEP_TAP_XG_(k) SWEEP_WINDOW_TAP(gw, k)
#define SWEEP_TAP_XAG_(k) ((1 + SWEEP_WINDOW_TAP(aw, k)) * SWEEP_WINDOW_TAP(gw, k))
#define SWEEP_TAP_XAZ_(k) (SWEEP_WINDOW_TAP(aw, k) * SWEEP_WINDOW_TAP(zw, k))
#define SWEEP_TAP_XAP_(k) (SWEEP_WINDOW_TAP(aw, k) * SWEEP_WINDOW_TAP(qw, k))

/* The outer axes' taps, from the offsets tp (the axis index s_ is in the
 * stride slot of SWEEP_FWD_AXIS_TAPS / SWEEP_ADJ_AXIS_TAPS). */
#define SWEEP_TAP_OU_(k) SWEEP_OUTER_TAP(u_, tp, s_, k)
#define SWEEP_TAP_OPSI_(k) SWEEP_OUTER_TAP(ps_, tp, s_, k)
/* The adjoint's outer-axis taps (SWEEP_ADJ_AXIS_TAPS's g_, a_, z_, p_). */
#define SWEEP_TAP_OG_(k) SWEEP_OUTER_TAP(g_, tp, s_, k)
#define SWEEP_TAP_OAG_(k) ((1 + a_[k]) * SWEEP_TAP_OG_(k))
#define SWEEP_TAP_OAZ_(k) (a_[k] * SWEEP_OUTER_TAP(z_, tp, s_, k))
#define SWEEP_TAP_OAP_(k) (a_[k] * SWEEP_OUTER_TAP(p_, tp, s_, k))

/* Forward update of one vector of cells, x .. x + VL - 1 at flat index i:
 * up and zt[d] point at the cells' u^{n-1} (u^{n+1} is written there) and
 * zeta of axis d (updated in place), wv (when not NULL) receives W^n.  ra,
 * rb: the row's CPML a and b of the outer axes, read once per row (through
 * pa and pb the compiler reloaded them every vector, as a store might have
 * changed them).  m1, mw: the second model and its window (SWEEP_VEC_M1). */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *m1, const SWEEP_R *u,
    SWEEP_R *up, SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zt,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, const SWEEP_R *ra, const SWEEP_R *rb,
    const SWEEP_FN(taps) tp, SWEEP_R *wv, sweep_int i, sweep_int x, const SWEEP_FN(window) uw,
    const SWEEP_FN(window) pw, const SWEEP_FN(window) mw, const int mask) {
  typedef SWEEP_FN(vec) V;
  SWEEP_COEFFS;
  V w = {0};
  SWEEP_VEC_FWD_CELL;
  (void)m1;
  (void)mw;
  /* The outer axes take their taps through tp (the axis index d goes in the
   * stride slot, where SWEEP_TAP_BYTES reads it). */
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    SWEEP_FWD_AXIS_OP(SWEEP_VEC_FWD_OP, SWEEP_VEC_FWD_OOP_, SWEEP_TAP_OU_, SWEEP_VEC_FWD_OPSI_, V,
                      w, u + i, psi[d] + i, psi_new[d] + i, zt[d], ra[d], rb[d], d,
                      (SWEEP_R)p->rdx[d], (SWEEP_R)p->rdx2[d], mask & (1 << d));
  /* The x axis: the same terms with the taps taken from the windows. */
  SWEEP_FWD_AXIS_OP(SWEEP_VEC_FWD_OP, SWEEP_VEC_FWD_XOP_, SWEEP_TAP_XU_, SWEEP_VEC_FWD_XPSI_, V, w,
                    u + i, psi[2] + i, psi_new[2] + i, zt[2], SWEEP_FN(vld)(pa[2] + x),
                    SWEEP_FN(vld)(pb[2] + x), 1, (SWEEP_R)p->rdx[2], (SWEEP_R)p->rdx2[2],
                    mask & 4);
  SWEEP_FN(vst)(up, SWEEP_LEAPFROG(SWEEP_FN(vld)(v2dt2 + i), w, uw.cur, SWEEP_FN(vld)(up)));
  if (wv) SWEEP_FN(vst)(wv, w);
}

/*
 * Forward update of the cells [x0, x1) of row (z, y), or none (returning x0)
 * when the range is shorter than a vector; returns x1 otherwise.  mask holds
 * the CPML bits of the row's segment (x: bit 2, a compile-time constant like
 * the others).  W^n goes to wrow[x] when wrow is not NULL.
 */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(fwd_row_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *m1, const SWEEP_R *u,
    SWEEP_R *u_prev, SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wrow, sweep_int base,
    sweep_int z, sweep_int y, sweep_int x0, sweep_int x1, const int mask) {
  const sweep_int c[2] = {z, y};
  const sweep_int nx = p->shape[2];
  const SWEEP_R *row = u + base;
  const SWEEP_R *psi_row = mask & 4 ? psi[2] + base : row;
  const SWEEP_R *m1_row = SWEEP_VEC_M1 ? m1 + base : row;
  if (x1 - x0 < SWEEP_VL) return x0;
  SWEEP_FN(taps) tp = SWEEP_FN(taps_of)(p);
  SWEEP_R ra[2] = {0, 0}, rb[2] = {0, 0};
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    if (mask & (1 << d)) {
      ra[d] = pa[d][c[d]];
      rb[d] = pb[d][c[d]];
    }
  /* The tail first, on copies of its in-place fields (the loop below still
   * needs their old values); the copies go into the row at the end. */
  const sweep_int xt = x1 - SWEEP_VL;
  const int has_tail = (x1 - x0) % SWEEP_VL != 0;
  SWEEP_FN(tail) tb;
  if (has_tail) {
    const sweep_int i = base + xt;
    SWEEP_R *zt[3];
    SWEEP_FN(tail_save)(tb.v[3], u_prev + i);
    for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) {
      zt[d] = zeta[d] + i;
      if (mask & (1 << d)) {
        SWEEP_FN(tail_save)(tb.v[d], zeta[d] + i);
        zt[d] = tb.v[d];
      }
    }
    SWEEP_FN(window) uw = SWEEP_FN(window_at)(row, xt);
    SWEEP_FN(window_next)(&uw, row, xt, nx);
    SWEEP_FN(window) pw = uw, mw = uw;
    if (mask & 4) {
      pw = SWEEP_FN(window_at)(psi_row, xt);
      SWEEP_FN(window_next)(&pw, psi_row, xt, nx);
    }
    if (SWEEP_VEC_M1) {
      mw = SWEEP_FN(window_at)(m1_row, xt);
      SWEEP_FN(window_next)(&mw, m1_row, xt, nx);
    }
    SWEEP_FN(fwd_vec)(p, v2dt2, m1, u, tb.v[3], psi, psi_new, zt, pa, pb, ra, rb, tp,
                      wrow ? wrow + xt : NULL, i, xt, uw, pw, mw, mask);
  }
  sweep_int x = x0;
  SWEEP_FN(window) uw = SWEEP_FN(window_at)(row, x);
  SWEEP_FN(window) pw = mask & 4 ? SWEEP_FN(window_at)(psi_row, x) : uw;
  SWEEP_FN(window) mw = SWEEP_VEC_M1 ? SWEEP_FN(window_at)(m1_row, x) : uw;
  for (; x + SWEEP_VL <= x1; x += SWEEP_VL) {
    SWEEP_FN(window_next)(&uw, row, x, nx);
    if (mask & 4) SWEEP_FN(window_next)(&pw, psi_row, x, nx);
    if (SWEEP_VEC_M1) SWEEP_FN(window_next)(&mw, m1_row, x, nx);
    const sweep_int i = base + x;
    SWEEP_R *zt[3];
    for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) zt[d] = zeta[d] + i;
    SWEEP_TAPS_OPAQUE(tp);
    SWEEP_FN(fwd_vec)(p, v2dt2, m1, u, u_prev + i, psi, psi_new, zt, pa, pb, ra, rb, tp,
                      wrow ? wrow + x : NULL, i, x, uw, pw, mw, mask);
    SWEEP_FN(window_slide)(&uw);
    SWEEP_FN(window_slide)(&pw);
    SWEEP_FN(window_slide)(&mw);
  }
  if (has_tail) {
    const sweep_int i = base + xt;
    SWEEP_FN(tail_save)(u_prev + i, tb.v[3]);
    for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
      if (mask & (1 << d)) SWEEP_FN(tail_save)(zeta[d] + i, tb.v[d]);
  }
  return x1;
}

/* Adjoint update of one vector of cells in mu = v^2 dt^2 lambda (as fwd_vec;
 * gw is the window over mu's row, lp points at the cells' mu^{n+1}_prev,
 * which receives mu^n; av, when not NULL, receives A, the factor of
 * v^2 dt^2, as acoustic_adj_point returns it). */
static inline __attribute__((always_inline)) void SWEEP_FN(adj_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *g, SWEEP_R *lp,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, const SWEEP_FN(taps) tp,
    const sweep_int *c, sweep_int i, sweep_int x, const SWEEP_FN(window) gw,
    const SWEEP_FN(window) aw, const SWEEP_FN(window) qw, const SWEEP_FN(window) zw,
    SWEEP_R *av, const int mask) {
  typedef SWEEP_FN(vec) V;
  SWEEP_COEFFS;
  V acc = {0};
  /* Outer-axis taps through tp, as in fwd_vec. */
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    SWEEP_ADJ_AXIS_TAPS(SWEEP_TAP_OG_, SWEEP_TAP_OAG_, SWEEP_TAP_OAZ_, SWEEP_TAP_OAP_, V, acc,
                        g + i, gw.cur, P[d] + i, P_new[d] + i, Z[d] + i, Z_new[d] + i,
                        pa[d] + c[d], pb[d][c[d]], d, (SWEEP_R)p->rdx[d], (SWEEP_R)p->rdx2[d],
                        mask & (1 << d));
  /* The x axis: the same terms with the taps (and a) taken from the windows. */
  SWEEP_ADJ_AXIS_TAPS(SWEEP_TAP_XG_, SWEEP_TAP_XAG_, SWEEP_TAP_XAZ_, SWEEP_TAP_XAP_, V, acc,
                      g + i, gw.cur, P[2] + i, P_new[2] + i, Z[2] + i, Z_new[2] + i, pa[2] + x,
                      SWEEP_FN(vld)(pb[2] + x), 1, (SWEEP_R)p->rdx[2], (SWEEP_R)p->rdx2[2],
                      mask & 4);
  SWEEP_FN(vst)(lp, SWEEP_LEAPFROG(SWEEP_FN(vld)(v2dt2 + i), acc, gw.cur, SWEEP_FN(vld)(lp)));
  if (av) SWEEP_FN(vst)(av, acc);
}

/* The windows of an adjoint vector at x (g always; a, P, Z in an x-CPML segment). */
#define SWEEP_ADJ_WINDOWS(x_)                                                   \
  do {                                                                          \
    gw = SWEEP_FN(window_at)(row, x_);                                          \
    aw = qw = zw = gw;                                                          \
    if (xc) {                                                                   \
      aw = SWEEP_FN(window_at)(pa[2], x_);                                      \
      qw = SWEEP_FN(window_at)(P[2] + base, x_);                                \
      zw = SWEEP_FN(window_at)(Z[2] + base, x_);                                \
    }                                                                           \
  } while (0)
#define SWEEP_ADJ_WINDOWS_NEXT(x_)                                              \
  do {                                                                          \
    SWEEP_FN(window_next)(&gw, row, x_, nx);                                    \
    if (xc) {                                                                   \
      SWEEP_FN(window_next)(&aw, pa[2], x_, nx);                                \
      SWEEP_FN(window_next)(&qw, P[2] + base, x_, nx);                          \
      SWEEP_FN(window_next)(&zw, Z[2] + base, x_, nx);                          \
    }                                                                           \
  } while (0)

/*
 * Adjoint update (in mu = v^2 dt^2 lambda) of the cells [x0, x1) of row
 * (z, y), as fwd_row_vec.  In an x-CPML segment the a-weighted x taps take a
 * from a window over the profile as well.  A goes to arow[x] when arow is
 * not NULL (the Born adjoint's scattering term, lsrtm_cpu_impl.h).
 */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(adj_row_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *g, SWEEP_R *lam_prev,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *arow, sweep_int base,
    sweep_int z, sweep_int y, sweep_int x0, sweep_int x1, const int mask) {
  const sweep_int c[2] = {z, y};
  const sweep_int nx = p->shape[2];
  const SWEEP_R *row = g + base;
  const int xc = mask & 4;
  if (x1 - x0 < SWEEP_VL) return x0;
  SWEEP_FN(taps) tp = SWEEP_FN(taps_of)(p);
  const sweep_int xt = x1 - SWEEP_VL;
  const int has_tail = (x1 - x0) % SWEEP_VL != 0;
  SWEEP_FN(tail) tb;
  SWEEP_FN(window) gw, aw, qw, zw;
  if (has_tail) {
    /* The tail first, on a copy of mu_prev (as in fwd_row_vec). */
    SWEEP_FN(tail_save)(tb.v[0], lam_prev + base + xt);
    SWEEP_ADJ_WINDOWS(xt);
    SWEEP_ADJ_WINDOWS_NEXT(xt);
    SWEEP_FN(adj_vec)(p, v2dt2, g, tb.v[0], P, P_new, Z, Z_new, pa, pb, tp, c, base + xt, xt, gw,
                      aw, qw, zw, arow ? arow + xt : NULL, mask);
  }
  sweep_int x = x0;
  SWEEP_ADJ_WINDOWS(x);
  for (; x + SWEEP_VL <= x1; x += SWEEP_VL) {
    SWEEP_ADJ_WINDOWS_NEXT(x);
    const sweep_int i = base + x;
    SWEEP_TAPS_OPAQUE(tp);
    SWEEP_FN(adj_vec)(p, v2dt2, g, lam_prev + i, P, P_new, Z, Z_new, pa, pb, tp, c, i, x, gw, aw,
                      qw, zw, arow ? arow + x : NULL, mask);
    SWEEP_FN(window_slide)(&gw);
    SWEEP_FN(window_slide)(&aw);
    SWEEP_FN(window_slide)(&qw);
    SWEEP_FN(window_slide)(&zw);
  }
  if (has_tail) SWEEP_FN(tail_save)(lam_prev + base + xt, tb.v[0]);
  return x1;
}
#undef SWEEP_ADJ_WINDOWS
#undef SWEEP_ADJ_WINDOWS_NEXT

/* Boundary saving, one vector of cells (un and gr point at the cells' u^{n+1}
 * and gradient, both updated in place). */
static inline __attribute__((always_inline)) void SWEEP_FN(recon_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *un,
    const SWEEP_R *mu, SWEEP_R *gr, sweep_int i, const SWEEP_FN(window) uw) {
  typedef SWEEP_FN(vec) V;
  SWEEP_COEFFS;
  V w = {0};
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    SWEEP_FWD_AXIS(V, w, u + i, NULL, NULL, NULL, 0, 0, p->stride[d], 0, (SWEEP_R)p->rdx2[d], 0);
  SWEEP_FWD_AXIS_TAPS(SWEEP_TAP_XU_, SWEEP_TAP_XU_, V, w, u + i, NULL, NULL, NULL, 0, 0, 1, 0,
                      (SWEEP_R)p->rdx2[2], 0);
  SWEEP_FN(vst)(gr, SWEEP_FMA(SWEEP_FN(vld)(mu + i), w, SWEEP_FN(vld)(gr)));
  SWEEP_FN(vst)(un, SWEEP_LEAPFROG(SWEEP_FN(vld)(v2dt2 + i), w, uw.cur, SWEEP_FN(vld)(un)));
}

/*
 * Boundary saving: the backward-in-time step of the forward wavefield and
 * the gradient correlation (acoustic_recon_point) on the cells [x0, x1) of a
 * row that is plain in every axis (as fwd_row_vec).
 */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(recon_row_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_next,
    const SWEEP_R *mu, SWEEP_R *grad, sweep_int base, sweep_int x0, sweep_int x1) {
  const sweep_int nx = p->shape[2];
  const SWEEP_R *row = u + base;
  if (x1 - x0 < SWEEP_VL) return x0;
  const sweep_int xt = x1 - SWEEP_VL;
  const int has_tail = (x1 - x0) % SWEEP_VL != 0;
  SWEEP_FN(tail) tb;
  if (has_tail) {
    /* The tail first, on copies of u_next and grad (as in fwd_row_vec). */
    SWEEP_FN(tail_save)(tb.v[0], u_next + base + xt);
    SWEEP_FN(tail_save)(tb.v[1], grad + base + xt);
    SWEEP_FN(window) tw = SWEEP_FN(window_at)(row, xt);
    SWEEP_FN(window_next)(&tw, row, xt, nx);
    SWEEP_FN(recon_vec)(p, v2dt2, u, tb.v[0], mu, tb.v[1], base + xt, tw);
  }
  sweep_int x = x0;
  SWEEP_FN(window) uw = SWEEP_FN(window_at)(row, x);
  for (; x + SWEEP_VL <= x1; x += SWEEP_VL) {
    SWEEP_FN(window_next)(&uw, row, x, nx);
    const sweep_int i = base + x;
    SWEEP_FN(recon_vec)(p, v2dt2, u, u_next + i, mu, grad + i, i, uw);
    SWEEP_FN(window_slide)(&uw);
  }
  if (has_tail) {
    SWEEP_FN(tail_save)(u_next + base + xt, tb.v[0]);
    SWEEP_FN(tail_save)(grad + base + xt, tb.v[1]);
  }
  return x1;
}

#undef SWEEP_TAP_OU_
#undef SWEEP_TAP_OPSI_
#undef SWEEP_TAP_OG_
#undef SWEEP_TAP_OAG_
#undef SWEEP_TAP_OAZ_
#undef SWEEP_TAP_OAP_
#undef SWEEP_TAP_XU_
#undef SWEEP_TAP_XPSI_
#undef SWEEP_TAP_XG_
#undef SWEEP_TAP_XAG_
#undef SWEEP_TAP_XAZ_
#undef SWEEP_TAP_XAP_
#endif /* SWEEP_HAVE_VEC */
#undef SWEEP_VEC_FWD_OP
#undef SWEEP_VEC_FWD_XOP_
#undef SWEEP_VEC_FWD_OOP_
#undef SWEEP_VEC_FWD_XPSI_
#undef SWEEP_VEC_FWD_OPSI_
#undef SWEEP_VEC_FWD_CELL
#undef SWEEP_VEC_M1
