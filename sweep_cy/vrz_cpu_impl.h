/*
 * The VRZ equation's plug-in to the CPU time loops (cpu_skeleton.h, which
 * documents the hooks defined here): scalar rows over the point arithmetic
 * of cuda/vrz_stencil.h and the hooks that tell the skeleton its fields.
 * One specialisation per translation unit (cpu_kernel.c.in).
 *
 * Fields (sweep_vrz_fields, sweep_common.h): the state and its rotation are
 * the acoustic's (acoustic_cpu_impl.h): u, u_prev, psi / psi_new, zeta
 * forward; mu = K lambda, P, Z adjoint.  The models are K = kappa_dt2 and
 * the buoyancy B.  A snapshot (one record per shot and step,
 * vrz_store_row) holds u^n of every stored cell, W^n of the outer cells (a
 * plain cell's is recomputed from u) or, for compressed stores, of every
 * stored cell, and psi^n of each axis of the outer cells (a plain cell's is
 * zero); the adjoint pairs it with mu^{n+1} and
 * Z^{n+1} (vrz_gradient_point), which are not written during step n, so a
 * row's gradient may read its neighbour rows at any time of the step.
 * Boundary saving keeps the band's u; the adjoint runs u backwards in
 * recon_u / recon_u_next on the plain cells and rebuilds each step's whole
 * snapshot from it, the band's u, the ring's state and the CPML's snapshots
 * of the CPML replay (SWEEP_EQ_RECON_SNAPSHOT), since a cell's B gradient
 * reads its neighbours' u.
 */
#include "vrz_cpu.h"

#define SWEEP_EQ_PARAMS sweep_acoustic_params
#define SWEEP_EQ_FIELDS sweep_vrz_fields
#define SWEEP_STENCIL_KEEP_MACROS
#include "vrz_stencil.h"
#include "cpu_rows.h"
#include "cpu_wave_state.h"

/* ---- Forward vector rows: acoustic's (acoustic_cpu_vec.h: windows, outer
 * taps, tail buffer, the CPML terms) with L_d in place of D2 and B psi in
 * place of psi, in vrz_fwd_point's order, so every lane rounds as the point
 * function does; B (m1) slides in its own window along x. ---- */
#define SWEEP_VEC_M1 1
#define SWEEP_VEC_FWD_OP SWEEP_VRZ_L
#define SWEEP_VEC_FWD_CELL                                    \
  const V b0_ = SWEEP_FN(vld)(m1 + i), u0_ = uw.cur;          \
  const SWEEP_R *const bb_ = m1 + i;                          \
  (void)bb_
#define SWEEP_VEC_FWD_XOP_(k) ((b0_ + SWEEP_WINDOW_TAP(mw, k)) * (SWEEP_TAP_XU_(k) - u0_))
#define SWEEP_VEC_FWD_OOP_(k) ((b0_ + SWEEP_OUTER_TAP(bb_, tp, s_, k)) * (SWEEP_TAP_OU_(k) - u0_))
#define SWEEP_VEC_FWD_XPSI_(k) (SWEEP_WINDOW_TAP(mw, k) * SWEEP_TAP_XPSI_(k))
#define SWEEP_VEC_FWD_OPSI_(k) (SWEEP_OUTER_TAP(bb_, tp, s_, k) * SWEEP_TAP_OPSI_(k))
#include "acoustic_cpu_vec.h"

/* ---- Scalar rows: cells [x0, x1) of a row through the point functions, one
 * never-inlined function per CPML mask (SWEEP_DEFINE_BY_MASK). ---- */

#define SWEEP_VRZ_FWD_PARAMS                                                                  \
  const sweep_acoustic_params *p, const SWEEP_R *kappa_dt2, const SWEEP_R *buoyancy,          \
      const SWEEP_R *u, SWEEP_R *u_prev, SWEEP_R *const *psi, SWEEP_R *const *psi_new,        \
      SWEEP_R *const *zeta, const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wrow, \
      sweep_int base, sweep_int z, sweep_int y, sweep_int x0, sweep_int x1
#define SWEEP_VRZ_FWD_ARGS \
  p, kappa_dt2, buoyancy, u, u_prev, psi, psi_new, zeta, pa, pb, wrow, base, z, y, x0, x1
#define SWEEP_VRZ_ADJ_PARAMS                                                                    \
  const sweep_acoustic_params *p, const SWEEP_R *kappa_dt2, const SWEEP_R *buoyancy,            \
      const SWEEP_R *mu, SWEEP_R *mu_prev, SWEEP_R *const *P, SWEEP_R *const *P_new,            \
      SWEEP_R *const *Z, SWEEP_R *const *Z_new, const SWEEP_R *const *pa,                       \
      const SWEEP_R *const *pb, sweep_int base, sweep_int z, sweep_int y, sweep_int x0,         \
      sweep_int x1
#define SWEEP_VRZ_ADJ_ARGS \
  p, kappa_dt2, buoyancy, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, base, z, y, x0, x1
#define SWEEP_VRZ_GRAD_PARAMS                                                              \
  const sweep_acoustic_params *p, const SWEEP_R *mu, SWEEP_R *const *Z,                    \
      const SWEEP_R *const *pa, const SWEEP_R *buoyancy, const SWEEP_R *st, const SWEEP_R *sw, \
      const SWEEP_R *sp, sweep_int no, sweep_int oa, sweep_int ob, SWEEP_R *gk, SWEEP_R *gb,   \
      sweep_int base, sweep_int z, sweep_int y, sweep_int x0, sweep_int x1
#define SWEEP_VRZ_GRAD_ARGS \
  p, mu, Z, pa, buoyancy, st, sw, sp, no, oa, ob, gk, gb, base, z, y, x0, x1

/* Forward: W^n goes to wrow[x] when wrow is not NULL. */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_fwd_cells)(SWEEP_VRZ_FWD_PARAMS,
                                                                          const int mask) {
  if (wrow) {
#pragma omp simd
    for (sweep_int x = x0; x < x1; ++x)
      wrow[x] = SWEEP_FN(vrz_fwd_point)(p, kappa_dt2, buoyancy, u, u_prev, psi, psi_new, zeta, pa,
                                        pb, base + x, z, y, x, mask);
  } else {
#pragma omp simd
    for (sweep_int x = x0; x < x1; ++x)
      SWEEP_FN(vrz_fwd_point)(p, kappa_dt2, buoyancy, u, u_prev, psi, psi_new, zeta, pa, pb,
                              base + x, z, y, x, mask);
  }
}

static inline __attribute__((always_inline)) void SWEEP_FN(vrz_adj_cells)(SWEEP_VRZ_ADJ_PARAMS,
                                                                          const int mask) {
#pragma omp simd
  for (sweep_int x = x0; x < x1; ++x)
    SWEEP_FN(vrz_adj_point)(p, kappa_dt2, buoyancy, mu, mu_prev, P, P_new, Z, Z_new, pa, pb,
                            base + x, z, y, x, mask);
}

/* The gradients of cells [x0, x1) of a row whose taps may leave the stored
 * cells (the point function with its halo cases).  One function for every
 * mask, taken at run time: these are the few cells next to the stored
 * region's edges, and compiled per mask with the rows, their scalar loops
 * made up two thirds of the 3D order-8 unit's code (its compile: 19.5 s). */
static __attribute__((noinline)) void SWEEP_FN(vrz_grad_edge_cells)(SWEEP_VRZ_GRAD_PARAMS,
                                                                   const int mask) {
  const sweep_int lo = p->store_lo[2], ks = x0 < oa ? lo : ob - (oa - lo);
  const SWEEP_R *const w = sw + (p->store_layout ? ks - lo : 0);
  for (sweep_int x = x0; x < x1; ++x)
    SWEEP_FN(vrz_gradient_point)(p, mu, Z, pa, buoyancy, st, w, sp, no, gk, gb, base + x, x - lo,
                                 x - ks, z, y, x, mask, 1, mask == 0 && !p->store_layout);
}

/* The gradients of the stored cells [x0, x1) of a row, of one CPML mask:
 * st holds the row's u (at its first stored cell), sp its outer cells' psi
 * (of the d'-th axis at sp[d' no + k], k counting the row's outer cells
 * [store_lo, oa) then [ob, store_hi)) and sw their W at sw[k]; with
 * store_layout 1 sw holds W of every cell of the row (at sw[x - store_lo]),
 * else a plain cell (mask 0) recomputes W from u.
 * Cells whose taps stay within the stored cells (in rows that do) take the
 * point function without its halo cases, in a vectorisable loop. */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_grad_cells)(
    SWEEP_VRZ_GRAD_PARAMS, const int mask) {
  const sweep_int h = SWEEP_H, lo = p->store_lo[2];
  int inner = 1;
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d) {
    const sweep_int c = d ? y : z;
    inner = inner && c >= p->store_lo[d] + h && c < p->store_hi[d] - h;
  }
  sweep_int a = inner ? lo + h : x1, b = inner ? p->store_hi[2] - h : x1;
  a = a < x0 ? x0 : a > x1 ? x1 : a;
  b = b < a ? a : b > x1 ? x1 : b;
  const sweep_int ks = x0 < oa ? lo : ob - (oa - lo);
  /* sw[k] is the cell's W in either layout: k = x - ks. */
  const SWEEP_R *const w = sw + (p->store_layout ? ks - lo : 0);
  if (x0 < a)
    SWEEP_FN(vrz_grad_edge_cells)(p, mu, Z, pa, buoyancy, st, sw, sp, no, oa, ob, gk, gb, base, z,
                                  y, x0, a, mask);
#define SWEEP_VRZ_GRAD_LOOP_(recompute)                                                          \
  _Pragma("omp simd") for (sweep_int x = a; x < b; ++x)                                         \
      SWEEP_FN(vrz_gradient_point)(p, mu, Z, pa, buoyancy, st, w, sp, no, gk, gb, base + x,      \
                                   x - lo, x - ks, z, y, x, mask, 0, recompute)
  if (mask == 0 && !p->store_layout) {
    SWEEP_VRZ_GRAD_LOOP_(1);
  } else {
    SWEEP_VRZ_GRAD_LOOP_(0);
  }
#undef SWEEP_VRZ_GRAD_LOOP_
  if (b < x1)
    SWEEP_FN(vrz_grad_edge_cells)(p, mu, Z, pa, buoyancy, st, sw, sp, no, oa, ob, gk, gb, base, z,
                                  y, b, x1, mask);
}

#if SWEEP_HAVE_VEC
/* The forward rows: the vector rows, then the point function for what they
 * leave (segments shorter than a vector; every cell with SWEEP_SIMD_ROWS=0),
 * one function for all masks, as acoustic's (acoustic_cpu_scalar.h). */
SWEEP_DEFINE_ANY_MASK(vrz_fwd_scalar_row, vrz_fwd_cells, (SWEEP_VRZ_FWD_PARAMS),
                      (SWEEP_VRZ_FWD_ARGS))
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_fwd_vec_cells)(
    SWEEP_VRZ_FWD_PARAMS, const int mask) {
  if (p->simd_rows)
    x0 = SWEEP_FN(fwd_row_vec)(p, kappa_dt2, buoyancy, u, u_prev, psi, psi_new, zeta, pa, pb, wrow,
                               base, z, y, x0, x1, mask);
  if (x0 < x1) SWEEP_FN(vrz_fwd_scalar_row)(SWEEP_VRZ_FWD_ARGS, mask);
}
SWEEP_DEFINE_BY_MASK(vrz_fwd_row, vrz_fwd_vec_cells, (SWEEP_VRZ_FWD_PARAMS),
                     (SWEEP_VRZ_FWD_ARGS))
#else
SWEEP_DEFINE_BY_MASK(vrz_fwd_row, vrz_fwd_cells, (SWEEP_VRZ_FWD_PARAMS), (SWEEP_VRZ_FWD_ARGS))
#endif
SWEEP_DEFINE_BY_MASK(vrz_adj_row, vrz_adj_cells, (SWEEP_VRZ_ADJ_PARAMS), (SWEEP_VRZ_ADJ_ARGS))
SWEEP_DEFINE_BY_MASK(vrz_grad_row, vrz_grad_cells, (SWEEP_VRZ_GRAD_PARAMS),
                     (SWEEP_VRZ_GRAD_ARGS))

/* ---- The compact snapshot of the CPU kernels (CUDA's keeps 2 + ndim
 * values of every stored cell): per shot u^n of every stored cell (in
 * store_row order), then W^n of the outer cells (the stored cells outside
 * the plain box, sweep/_grid.py's outer_idx order), and psi^n of each axis of
 * the outer cells, one block of vrz_outer_cells each.  A plain cell's W is a
 * stencil of u (recomputed by vrz_gradient_point) and its psi zero, so only
 * u is kept there: 1 value per plain cell and 2 + ndim per outer cell
 * instead of 2 + ndim everywhere (2D 300 x 1000, CPML 20: 1.54 values per
 * cell on average instead of 4).  store_layout 1 (compressed stores, where W
 * recomputed from rounded u would amplify the rounding) keeps W of every
 * stored cell in store_row order instead (2.36 values per cell there). ---- */

/* The row's outer cells: [store_lo, *a) and [*b, store_hi) (the skeleton's
 * row_ends). */
static inline void SWEEP_FN(vrz_outer_ends)(const sweep_acoustic_params *p, int outer,
                                            sweep_int *a, sweep_int *b) {
  const sweep_int hi = p->store_hi[2];
  *a = outer || p->plain_lo[2] > hi ? hi : p->plain_lo[2];
  *b = outer || p->plain_hi[2] < *a ? hi : p->plain_hi[2];
}

/* Outer cells of the snapshot rows before row (z, y); all of them for
 * (store_hi[0], store_lo[1]).  Rows plain in z and y hold their x ends,
 * the others all their cells. */
static inline sweep_int SWEEP_FN(vrz_outer_row)(const sweep_acoustic_params *p, sweep_int z,
                                                sweep_int y) {
  const sweep_int n1 = p->store_hi[1] - p->store_lo[1], n2 = p->store_hi[2] - p->store_lo[2];
  sweep_int a, b, lo[2], n[2];
  SWEEP_FN(vrz_outer_ends)(p, 0, &a, &b);
  for (int d = 0; d < 2; ++d) {
    lo[d] = p->plain_lo[d] > p->store_lo[d] ? p->plain_lo[d] : p->store_lo[d];
    const sweep_int hi = p->plain_hi[d] < p->store_hi[d] ? p->plain_hi[d] : p->store_hi[d];
    n[d] = hi > lo[d] ? hi - lo[d] : 0;
  }
  if (SWEEP_NDIM == 2) lo[0] = p->store_lo[0], n[0] = p->store_hi[0] - p->store_lo[0];
  const sweep_int rz = z < lo[0] ? 0 : z - lo[0] > n[0] ? n[0] : z - lo[0];
  const sweep_int ry = y < lo[1] ? 0 : y - lo[1] > n[1] ? n[1] : y - lo[1];
  const sweep_int plain = rz * n[1] + (z >= lo[0] && z < lo[0] + n[0] ? ry : 0);
  const sweep_int rows = (z - p->store_lo[0]) * n1 + (y - p->store_lo[1]);
  return (rows - plain) * n2 + plain * (a - p->store_lo[2] + p->store_hi[2] - b);
}

static inline sweep_int SWEEP_FN(vrz_outer_cells)(const sweep_acoustic_params *p) {
  return SWEEP_FN(vrz_outer_row)(p, p->store_hi[0], p->store_lo[1]);
}

/* Stored cells of one shot, and the offset of a stored row (z, y) among
 * them: the skeleton's (cpu_skeleton.h, included at the end of this file). */
static inline sweep_int SWEEP_FN(store_cells)(const SWEEP_EQ_PARAMS *p);
static inline sweep_int SWEEP_FN(store_row)(const SWEEP_EQ_PARAMS *p, sweep_int z, sweep_int y);

/* Cells of a record's W block (see above). */
static inline sweep_int SWEEP_FN(vrz_w_cells)(const sweep_acoustic_params *p) {
  return p->store_layout ? SWEEP_FN(store_cells)(p) : SWEEP_FN(vrz_outer_cells)(p);
}

/* A shot's snapshot record: u of the stored cells, W, then psi of each axis
 * of the outer cells. */
#define SWEEP_VRZ_RECORD(p)                                  \
  (SWEEP_FN(store_cells)(p) + SWEEP_FN(vrz_w_cells)(p) + \
   SWEEP_NDIM * SWEEP_FN(vrz_outer_cells)(p))

/* Row (z, y) of a record whose row (u) is at st: its W (*w: of the row's
 * outer cells, or with store_layout 1 of all its cells) and psi of its outer
 * cells (the d'-th axis's d' vrz_outer_cells further). */
static inline void SWEEP_FN(vrz_row_of)(const sweep_acoustic_params *p, const SWEEP_R *st,
                                        sweep_int z, sweep_int y, SWEEP_R **w, SWEEP_R **psi) {
  const sweep_int orow = SWEEP_FN(vrz_outer_row)(p, z, y), srow = SWEEP_FN(store_row)(p, z, y);
  SWEEP_R *const blocks = (SWEEP_R *)st - srow + SWEEP_FN(store_cells)(p);
  *w = blocks + (p->store_layout ? srow : orow);
  *psi = blocks + SWEEP_FN(vrz_w_cells)(p) + orow;
}

/* Full storage: row (z, y) of a record (dst: its u) from the forward row's
 * values (wr: W, u, psi of each axis at wr[x + v shape[2]]). */
static inline void SWEEP_FN(vrz_store_row)(const sweep_acoustic_params *p, SWEEP_R *dst,
                                           const SWEEP_R *wr, sweep_int z, sweep_int y,
                                           int outer) {
  const sweep_int lo = p->store_lo[2], hi = p->store_hi[2], pitch = p->shape[2];
  sweep_stream_copy(dst, wr + pitch + lo, sizeof(SWEEP_R) * (size_t)(hi - lo));
  SWEEP_R *sw, *sp;
  SWEEP_FN(vrz_row_of)(p, dst, z, y, &sw, &sp);
  const sweep_int no = SWEEP_FN(vrz_outer_cells)(p);
  sweep_int a, b;
  SWEEP_FN(vrz_outer_ends)(p, outer, &a, &b);
  if (p->store_layout) sweep_stream_copy(sw, wr + lo, sizeof(SWEEP_R) * (size_t)(hi - lo));
  for (int v = p->store_layout ? 1 : 0; v <= SWEEP_NDIM; ++v) { /* W (v 0), psi of each axis */
    const SWEEP_R *src = wr + (v ? v + 1 : 0) * pitch;
    SWEEP_R *const out = v ? sp + (v - 1) * no : sw;
    if (a > lo) sweep_stream_copy(out, src + lo, sizeof(SWEEP_R) * (size_t)(a - lo));
    if (hi > b) sweep_stream_copy(out + (a - lo), src + b, sizeof(SWEEP_R) * (size_t)(hi - b));
  }
}

/* The snapshot's values past W of row base (the cells h .. shape[2] - h):
 * u^n and psi^n of each axis, at wr[x + v * shape[2]] for v = 1, 2, ... */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_snapshot_u_psi)(
    const sweep_acoustic_params *p, const SWEEP_R *u, SWEEP_R *const *psi, sweep_int base,
    SWEEP_R *wr) {
  const sweep_int h = SWEEP_H;
  const size_t n = sizeof(SWEEP_R) * (size_t)(p->shape[2] - 2 * h);
  memcpy(wr + p->shape[2] + h, u + base + h, n);
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
    memcpy(wr + (2 + d - SWEEP_FIRST_AXIS) * p->shape[2] + h, psi[d] + base + h, n);
}

/* One row (z, y) of one shot (pointers offset to the shot), its x segments
 * in memory order, each with its mask.  With wr, the snapshot of the row:
 * value v of cell x at wr[x + v * shape[2]] (SWEEP_WR_PITCH): W^n, u^n, psi^n
 * of each axis. */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_fwd_full_row)(
    const sweep_acoustic_params *p, const SWEEP_R *kappa_dt2, const SWEEP_R *buoyancy,
    const SWEEP_R *u, SWEEP_R *u_prev, SWEEP_R *const *psi, SWEEP_R *const *psi_new,
    SWEEP_R *const *zeta, const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wr,
    sweep_int z, sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const int outer = SWEEP_FN(row_mask)(p, z, y);
#define SWEEP_VRZ_ROW(x0, x1, m)                                                              \
  if ((x0) < (x1))                                                                            \
  SWEEP_CALL_BY_MASK(vrz_fwd_row, m,                                                          \
                     (p, kappa_dt2, buoyancy, u, u_prev, psi, psi_new, zeta, pa, pb, wr, base, \
                      z, y, x0, x1))
#define SWEEP_VRZ_SEGMENTS(m) \
  SWEEP_ROW_IN_ORDER(SWEEP_VRZ_ROW, m, SWEEP_FN(prefetch_fwd_xcpml)(p, psi, zeta, psi_new, base))
  SWEEP_MASK_SWITCH(outer, SWEEP_VRZ_SEGMENTS)
#undef SWEEP_VRZ_ROW
#undef SWEEP_VRZ_SEGMENTS
  if (wr) SWEEP_FN(vrz_snapshot_u_psi)(p, u, psi, base, wr);
}

/* The adjoint of one row (z, y) of one shot: first the gradients of its
 * stored cells from the snapshot st (when not NULL), then the stencil. */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_adj_full_row)(
    const sweep_acoustic_params *p, const SWEEP_R *kappa_dt2, const SWEEP_R *buoyancy,
    const SWEEP_R *mu, SWEEP_R *mu_prev, SWEEP_R *const *P, SWEEP_R *const *Pn,
    SWEEP_R *const *Z, SWEEP_R *const *Zn, const SWEEP_R *const *pa, const SWEEP_R *const *pb,
    const SWEEP_R *st, SWEEP_R *gk, SWEEP_R *gb, sweep_int z, sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const int outer = SWEEP_FN(row_mask)(p, z, y);
#define SWEEP_VRZ_ROW(x0, x1, m)                                                               \
  if ((x0) < (x1))                                                                             \
  SWEEP_CALL_BY_MASK(vrz_grad_row, m,                                                          \
                     (p, mu, Z, pa, buoyancy, st, sw, sp, no, oa, ob, gk, gb, base, z, y, x0,  \
                      x1))
#define SWEEP_VRZ_SEGMENTS(m) SWEEP_ROW_IN_ORDER(SWEEP_VRZ_ROW, m, (void)0)
  if (st) {
    SWEEP_R *sw, *sp;
    SWEEP_FN(vrz_row_of)(p, st, z, y, &sw, &sp);
    const sweep_int no = SWEEP_FN(vrz_outer_cells)(p);
    sweep_int oa, ob;
    SWEEP_FN(vrz_outer_ends)(p, outer, &oa, &ob);
    SWEEP_MASK_SWITCH(outer, SWEEP_VRZ_SEGMENTS)
  }
#undef SWEEP_VRZ_ROW
#define SWEEP_VRZ_ROW(x0, x1, m)                                                             \
  if ((x0) < (x1))                                                                           \
  SWEEP_CALL_BY_MASK(vrz_adj_row, m,                                                         \
                     (p, kappa_dt2, buoyancy, mu, mu_prev, P, Pn, Z, Zn, pa, pb, base, z, y, \
                      x0, x1))
  SWEEP_MASK_SWITCH(outer, SWEEP_VRZ_SEGMENTS)
#undef SWEEP_VRZ_ROW
#undef SWEEP_VRZ_SEGMENTS
}

/* The x-CPML segments alone of a row that is plain in z and y, with the
 * row's snapshot values as vrz_fwd_full_row writes them (the CPML replay,
 * which does not hold the plain middle). */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_fwd_edge_row)(
    const sweep_acoustic_params *p, const SWEEP_R *kappa_dt2, const SWEEP_R *buoyancy,
    const SWEEP_R *u, SWEEP_R *u_prev, SWEEP_R *const *psi, SWEEP_R *const *psi_new,
    SWEEP_R *const *zeta, const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wr,
    sweep_int z, sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const sweep_int ends[2][2] = {{h, p->plain_lo[2]}, {p->plain_hi[2], x_end}};
  for (int e = 0; e < 2; ++e) {
    const sweep_int x0 = ends[e][0], x1 = ends[e][1];
    if (x0 < x1)
      SWEEP_CALL_BY_MASK(vrz_fwd_row, 4, (p, kappa_dt2, buoyancy, u, u_prev, psi, psi_new, zeta,
                                          pa, pb, wr, base, z, y, x0, x1))
  }
  if (wr) SWEEP_FN(vrz_snapshot_u_psi)(p, u, psi, base, wr);
}

/* Boundary saving: one step backwards of u on the plain cells [plain_lo,
 * plain_hi) of row (z, y) (ru: u^t; ru_next: u^{t+1}, receives u^{t-1}; the
 * forward update with no CPML axis is its own inverse in this form), writing
 * the cells' snapshot value u^t to st[x - store_lo] (their W^t is
 * recomputed from it, as in full storage). */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_recon_snap_row)(
    const sweep_acoustic_params *p, const SWEEP_R *kappa_dt2, const SWEEP_R *buoyancy,
    const SWEEP_R *ru, SWEEP_R *ru_next, const SWEEP_R *const *pa, const SWEEP_R *const *pb,
    sweep_int z, sweep_int y, SWEEP_R *st) {
  const sweep_int base = z * p->stride[0] + y * p->stride[1], lo = p->store_lo[2];
  SWEEP_R *const none[3] = {NULL, NULL, NULL}; /* no CPML terms: never read */
#pragma omp simd
  for (sweep_int x = p->plain_lo[2]; x < p->plain_hi[2]; ++x) {
    SWEEP_FN(vrz_fwd_point)(p, kappa_dt2, buoyancy, ru, ru_next, none, none, none, pa, pb,
                            base + x, z, y, x, 0);
    st[x - lo] = ru[base + x];
  }
}

/* Boundary saving: the snapshot values of the band cells [x0, x1) of row
 * (z, y) (mask: their CPML axes; st: the row's u as vrz_recon_snap_row's):
 * u^t, and W^t (an outer cell's value) from the reconstruction, the band's
 * u^t (ru) and the ring's u^t and psi^t (ru, rpsi; vrz_w_band_point).  Their
 * psi is zero (and so is the one-step buffer's, never written there). */
SWEEP_ONCE_FN void SWEEP_FN(vrz_recon_snap_band)(const sweep_acoustic_params *p,
                                                 const SWEEP_R *buoyancy, const SWEEP_R *ru,
                                                 const SWEEP_R *rpsi, sweep_int z, sweep_int y,
                                                 sweep_int x0, sweep_int x1, int mask,
                                                 SWEEP_R *st) {
  const sweep_int base = z * p->stride[0] + y * p->stride[1], lo = p->store_lo[2];
  sweep_int a, b;
  SWEEP_FN(vrz_outer_ends)(p, SWEEP_FN(row_mask)(p, z, y), &a, &b);
  SWEEP_R *w, *psi;
  SWEEP_FN(vrz_row_of)(p, st, z, y, &w, &psi);
  /* w[x]: the cell's W, by outer cell or (store_layout 1) by cell. */
  SWEEP_R *const sw = w - (p->store_layout || x0 < a ? lo : b - (a - lo));
  (void)psi;
#pragma omp simd
  for (sweep_int x = x0; x < x1; ++x) {
    sw[x] = SWEEP_FN(vrz_w_band_point)(p, buoyancy, ru, rpsi, base + x, z, y, x, mask);
    st[x - lo] = ru[base + x];
  }
}

/* sub_problem's VRZ arrays of shots: the wavefields, the model gradients and
 * the reconstruction, fo elements on. */
static inline __attribute__((always_inline)) void SWEEP_FN(vrz_shift_shots)(
    const sweep_vrz_fields *f, sweep_int fo, sweep_vrz_fields *g) {
  SWEEP_WAVE_SHIFT_SHOTS(f, fo, g);
  g->grad_kappa_dt2 = SWEEP_OFF(f->grad_kappa_dt2, fo);
  g->grad_buoyancy = SWEEP_OFF(f->grad_buoyancy, fo);
  g->recon_u = SWEEP_OFF(f->recon_u, fo);
  g->recon_u_next = SWEEP_OFF(f->recon_u_next, fo);
}

/* ---- The hooks of cpu_skeleton.h ---- */

#define SWEEP_EQ_FORWARD SWEEP_FN(sweep_vrz_forward)
#define SWEEP_EQ_BACKWARD SWEEP_FN(sweep_vrz_backward)
/* The forward row's values: W^n, u^n and psi^n of each axis (the CPML
 * replay keeps them all); the store keeps one record per shot and step
 * (vrz_store_row). */
#define SWEEP_EQ_SNAP_VALUES (2 + SWEEP_NDIM)
#define SWEEP_EQ_STORE_VALUES 1
#define SWEEP_EQ_STORE_CELLS(p) SWEEP_VRZ_RECORD(p)
#define SWEEP_EQ_FWD_STORE(p, dst, wr, z, y, outer) \
  SWEEP_FN(vrz_store_row)(p, dst, wr, z, y, outer)
/* A row's gradient reads the snapshot of its neighbour rows with the
 * adjoint state of the same step, so no correlation is deferred. */
#define SWEEP_EQ_PAIRED_CORRELATION 0
/* One leapfrog stage per step of reach SWEEP_H, as the acoustic's. */
#define SWEEP_EQ_BLOCKING 1
#define SWEEP_EQ_MODEL(f)                                                 \
  const SWEEP_R *kappa_dt2 = (const SWEEP_R *)(f)->kappa_dt2;            \
  const SWEEP_R *buoyancy = (const SWEEP_R *)(f)->buoyancy
#define SWEEP_EQ_SHIFT_SHOTS(f, fo, g) SWEEP_FN(vrz_shift_shots)(f, fo, g)

/* Forward state and rotation: the acoustic's (cpu_wave_state.h). */
#define SWEEP_EQ_FWD_STATE(f) SWEEP_WAVE_FWD_STATE(f)
#define SWEEP_EQ_FWD_SHOT(f, off) SWEEP_WAVE_FWD_SHOT(f, off)
#define SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y)                                            \
  SWEEP_FN(vrz_fwd_full_row)(p, kappa_dt2, buoyancy, u + (off), u_prev + (off), psi, psi_new, \
                             zeta, pa, pb, wr, z, y)
#define SWEEP_EQ_FWD_EDGE_ROW(p, pa, pb, off, wr, z, y)                                        \
  SWEEP_FN(vrz_fwd_edge_row)(p, kappa_dt2, buoyancy, u + (off), u_prev + (off), psi, psi_new, \
                             zeta, pa, pb, wr, z, y)
/* Receivers record u^t; sources add -K B f^t to u^{t+1} (in u_prev). */
#define SWEEP_EQ_FWD_RECORD(i) (u[i])
#define SWEEP_EQ_FWD_SOURCE(i, j, a) (u_prev[i] -= kappa_dt2[j] * buoyancy[j] * (a))
#define SWEEP_EQ_FWD_GHOSTS(p) SWEEP_FN(fill_ghosts)(p, u_prev)
#define SWEEP_EQ_FWD_ROTATE() SWEEP_WAVE_FWD_ROTATE()
#define SWEEP_EQ_BLOCK_STATE(f, odd, off) \
  SWEEP_EQ_MODEL(f);                      \
  SWEEP_WAVE_BLOCK_STATE(f, odd, off)
/* Boundary saving: the band keeps u^t; the CPML replay loads it back. */
#define SWEEP_EQ_FWD_SAVED(off, v) (u + (off))
#define SWEEP_EQ_FWD_LOAD_BAND(i, v, x) (u[i] = (x))
/* ... and keeps u^t and psi^t (along the cell's axis) of the ring. */
#define SWEEP_EQ_FWD_RING(off, v, d) (((v) ? (SWEEP_R *)psi_all[d] : u) + (off))

/* Adjoint, in mu = K lambda.  The correlate hook hands the row's snapshot to
 * the row hook (snap), which computes the row's gradients before its
 * stencil. */
#define SWEEP_EQ_GRAD(f) ((f)->grad_kappa_dt2)
#define SWEEP_EQ_ADJ_STATE(f)                                                         \
  SWEEP_R *mu_prev = (SWEEP_R *)(f)->u_prev, *mu = (SWEEP_R *)(f)->u;                \
  SWEEP_R *ru_next = (SWEEP_R *)(f)->recon_u_next, *ru = (SWEEP_R *)(f)->recon_u;    \
  SWEEP_WAVE_ADJ_AXES(f)                                                             \
  SWEEP_R *gk_all = (SWEEP_R *)(f)->grad_kappa_dt2;                                  \
  SWEEP_R *gb_all = (SWEEP_R *)(f)->grad_buoyancy
#define SWEEP_EQ_ADJ_GRAD gk_all
#define SWEEP_EQ_ADJ_SHOT(f, off) \
  SWEEP_WAVE_ADJ_SHOT(f, off);    \
  const SWEEP_R *snap = NULL
#define SWEEP_EQ_ADJ_CORRELATE(off, o, st, held, skip, n) \
  (snap = (st), (void)(o), (void)(held), (void)(skip), (void)(n))
#define SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y)                                                  \
  do {                                                                                          \
    SWEEP_FN(vrz_adj_full_row)(p, kappa_dt2, buoyancy, mu + (off), mu_prev + (off), P, Pn, Z,   \
                               Zn, pa, pb, snap, gk_all ? gk_all + (off) : NULL,               \
                               gb_all ? gb_all + (off) : NULL, z, y);                           \
    snap = NULL;                                                                                \
  } while (0)
/* The storing forward and the adjoint may be blocked in time too
 * (cpu_blocking.h): each row's record goes into the store right after the
 * row (vrz_store_row), and the adjoint's rows compute their gradients from
 * mu^{t+1} and Z^{t+1}, which no row of step t writes, so they run in the
 * forward's wavefront.  The blocked adjoint's state of one shot after an odd
 * (1) or even (0) number of steps, under the names of the hooks above. */
#define SWEEP_EQ_BLOCK_STORE 1
#define SWEEP_EQ_BLOCK_ADJOINT 1
#define SWEEP_EQ_ADJ_BLOCK_STATE(f, odd, off)                                                \
  SWEEP_EQ_MODEL(f);                                                                         \
  SWEEP_WAVE_ADJ_BLOCK_STATE(f, odd, off);                                                   \
  SWEEP_R *gk_all = (f)->grad_kappa_dt2 ? (SWEEP_R *)(f)->grad_kappa_dt2 + (off) : NULL;     \
  SWEEP_R *gb_all = (f)->grad_buoyancy ? (SWEEP_R *)(f)->grad_buoyancy + (off) : NULL;       \
  const SWEEP_R *snap = NULL
/* Residuals of u^t, times K, go into mu^t (in mu_prev); the source terms
 * read mu^{t+1}. */
#define SWEEP_EQ_ADJ_RESIDUAL(i, j, r) (mu_prev[i] += kappa_dt2[j] * (r))
#define SWEEP_EQ_ADJ_SOURCE_GRAD(i, j) (-buoyancy[j] * mu[i])
#define SWEEP_EQ_ADJ_SOURCE_TERM(i, j, a)          \
  do {                                             \
    gk_all[i] -= (a) * buoyancy[j] * mu[i];        \
    gb_all[i] -= (a) * mu[i];                      \
  } while (0)
#define SWEEP_EQ_ADJ_GHOSTS(p, recon) SWEEP_WAVE_ADJ_GHOSTS(p, recon)
#define SWEEP_EQ_ADJ_ROTATE() SWEEP_WAVE_ADJ_ROTATE()
/* Boundary saving: u runs backwards in ru / ru_next, and each step's
 * snapshot is rebuilt in the one-slot store before the rows correlate it
 * (vrz_recon_snap_row on the plain cells); the correlation is full
 * storage's, so the cell hooks have nothing to do. */
#define SWEEP_EQ_RECON(f) ((f)->recon_u != NULL && (f)->grad_kappa_dt2 != NULL)
#define SWEEP_EQ_RECON_SNAPSHOT 1
#define SWEEP_EQ_RECON_SNAP_ROW(p, pa, pb, off, z, y, st, vs)                                  \
  ((void)(vs), SWEEP_FN(vrz_recon_snap_row)(p, kappa_dt2, buoyancy, ru + (off), ru_next + (off), \
                                            pa, pb, z, y, st))
#define SWEEP_EQ_RECON_ROW(p, off, base) ((void)0)
#define SWEEP_EQ_RECON_CELL(i, w, vs) ((void)(i), (void)(w), (void)(vs))
#define SWEEP_EQ_RECON_SOURCE(i, j, a) (ru_next[i] -= kappa_dt2[j] * buoyancy[j] * (a))
#define SWEEP_EQ_RECON_LOAD_BAND(i, v, x) (ru_next[i] = (x))
/* The CPML replay's W, u, psi of the n outer cells from j (CPML cells) into
 * the record st: u from m, W from j of its block (from m with store_layout 1)
 * and psi from j of the outer blocks. */
#define SWEEP_EQ_RECON_SNAP_CPML(p, st, m, j, n, rw, vs, ovs)                               \
  do {                                                                                      \
    SWEEP_R *const sw_ = (st) + SWEEP_FN(store_cells)(p) + ((p)->store_layout ? (m) : (j));   \
    SWEEP_R *const sp_ = (st) + SWEEP_FN(store_cells)(p) + SWEEP_FN(vrz_w_cells)(p) + (j);    \
    const sweep_int no_ = SWEEP_FN(vrz_outer_cells)(p);                                     \
    (void)(vs);                                                                             \
    for (sweep_int x_ = 0; x_ < (n); ++x_) {                                                \
      (st)[(m) + x_] = (rw)[(ovs) + (j) + x_];                                              \
      sw_[x_] = (rw)[(j) + x_];                                                             \
    }                                                                                       \
    for (int v_ = 0; v_ < SWEEP_NDIM; ++v_)                                                 \
      for (sweep_int x_ = 0; x_ < (n); ++x_)                                                \
        sp_[v_ * no_ + x_] = (rw)[(v_ + 2) * (ovs) + (j) + x_];                             \
  } while (0)
/* The ring's u^t into ru and its psi^t into ru_next (as acoustic's), read by
 * the band's snapshot (vrz_recon_snap_band). */
#define SWEEP_EQ_RECON_LOAD_RING(i, v, d, x) (((v) ? ru_next : ru)[i] = (x))
/* (The band's row base goes unused: the snapshot rows index by z, y.) */
#define SWEEP_EQ_RECON_SNAP_BAND(p, off, base, z, y, x0, x1, mask, st, vs)                      \
  ((void)(base), (void)(vs),                                                                    \
   SWEEP_FN(vrz_recon_snap_band)(p, buoyancy, ru + (off), ru_next + (off), z, y, x0, x1, mask, st))

#include "cpu_skeleton.h"

#include "vrz_stencil_undef.h"
#undef SWEEP_STENCIL_KEEP_MACROS
#undef SWEEP_VRZ_FWD_PARAMS
#undef SWEEP_VRZ_FWD_ARGS
#undef SWEEP_VRZ_ADJ_PARAMS
#undef SWEEP_VRZ_ADJ_ARGS
#undef SWEEP_VRZ_GRAD_PARAMS
#undef SWEEP_VRZ_GRAD_ARGS
