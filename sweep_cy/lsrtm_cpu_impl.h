/*
 * The Born (LSRTM) plug-in to the CPU time loops (cpu_skeleton.h, which
 * documents the hooks defined here): rows over the point arithmetic of
 * lsrtm_stencil.h and the hooks that tell the skeleton its fields.  One
 * specialisation per translation unit (cpu_kernel.c.in).
 *
 * Each field's update is an acoustic one plus a scattering term (the
 * forward's dK W0 into u1, the adjoint's dK A1 into G0, lsrtm_stencil.h), so
 * a row runs acoustic's explicit vector rows (acoustic_cpu_vec.h) on each
 * field, W0 (or A1) going to a row buffer, and then adds the scattering term
 * from it: the same arithmetic in the same order per cell as the point
 * functions, so bitwise the scalar rows (tests/test_simd_rows.py).  Segments
 * shorter than a vector, and SWEEP_SIMD_ROWS=0, take acoustic's scalar rows
 * (forward) or the point functions (adjoint).  2D 300 x 1000, order 8, 4
 * shots, nt 2000, one thread, forward: 16.4 s on the point functions alone,
 * whose forward the compiler did not vectorise; 6.8 s now
 * (benchmarks/README.md).
 *
 * Fields (sweep_lsrtm_fields, sweep_common.h): the forward's state is two
 * acoustic states, u0 / u0_prev / psi0 / psi0_new / zeta0 (the background)
 * and the same with 1 (the scattered field), rotated as acoustic's; the
 * model is v2dt2 = K and dv2dt2 = dK.  The adjoint carries G0 = mu0 + R mu1
 * and mu1 (mu = K lambda, R = dK / K) in the u0 and u1 slots, with
 * zeta*_new, and reads dv2dt2 as well.  A snapshot holds two values per
 * cell, W0^n and W1^n; the model gradients are grad_v2dt2 =
 * sum_n G0 (W0 - f) + mu1 W1 and grad_dv2dt2 = sum_n mu1 (W0 - f) (mu at
 * n + 1), which the caller turns into the gradients of K and mp.  The
 * receivers record u1, and the forward records u0 at the same receivers
 * after them (rec is (2, slot_shots, n_rec, nt)).  Boundary saving keeps
 * both fields of the band (SWEEP_EQ_BAND_VALUES 2) and runs both backwards
 * in recon_u0 / recon_u0_next and recon_u1 / recon_u1_next
 * (lsrtm_recon_point); forward steps that store nothing (no snapshot, no
 * band save, no CPML replay) may be blocked in time.
 */
#include "lsrtm_cpu.h"

#define SWEEP_EQ_PARAMS sweep_acoustic_params
#define SWEEP_EQ_FIELDS sweep_lsrtm_fields
#define SWEEP_STENCIL_KEEP_MACROS
#include "acoustic_stencil.h"
#include "lsrtm_stencil.h"
#include "cpu_rows.h"
#include "acoustic_cpu_vec.h"
#include "acoustic_cpu_scalar.h"

/* ---- Point rows: both fields of the cells [x0, x1) of row (z, y), one point
 * at a time (lsrtm_fwd_point, lsrtm_adj_point) ---- */

#define SWEEP_BORN_FWD_PARAMS                                                                 \
  const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *dv2dt2,                \
      const SWEEP_R *u0, SWEEP_R *u0_prev, SWEEP_R *const *psi0, SWEEP_R *const *psi0_new,    \
      SWEEP_R *const *zeta0, const SWEEP_R *u1, SWEEP_R *u1_prev, SWEEP_R *const *psi1,       \
      SWEEP_R *const *psi1_new, SWEEP_R *const *zeta1, const SWEEP_R *const *pa,              \
      const SWEEP_R *const *pb, SWEEP_R *wrow, sweep_int pitch, sweep_int base, sweep_int z,  \
      sweep_int y, sweep_int x0, sweep_int x1
#define SWEEP_BORN_FWD_ARGS                                                                   \
  p, v2dt2, dv2dt2, u0, u0_prev, psi0, psi0_new, zeta0, u1, u1_prev, psi1, psi1_new, zeta1,  \
      pa, pb, wrow, pitch, base, z, y, x0, x1
#define SWEEP_BORN_ADJ_PARAMS                                                                 \
  const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *dv2dt2,                \
      const SWEEP_R *g0, SWEEP_R *g0_prev, SWEEP_R *const *P0, SWEEP_R *const *P0n,           \
      SWEEP_R *const *Z0, SWEEP_R *const *Z0n, const SWEEP_R *mu1, SWEEP_R *mu1_prev,         \
      SWEEP_R *const *P1, SWEEP_R *const *P1n, SWEEP_R *const *Z1, SWEEP_R *const *Z1n,       \
      const SWEEP_R *const *pa, const SWEEP_R *const *pb, sweep_int base, sweep_int z,        \
      sweep_int y, sweep_int x0, sweep_int x1
#define SWEEP_BORN_ADJ_ARGS                                                                   \
  p, v2dt2, dv2dt2, g0, g0_prev, P0, P0n, Z0, Z0n, mu1, mu1_prev, P1, P1n, Z1, Z1n, pa, pb,   \
      base, z, y, x0, x1

/* Forward, only where the skeleton had no scratch row (out of memory): the
 * compiler does not vectorise it.  W0^n to wrow[x], W1^n to wrow[x + pitch]
 * when wrow is not NULL. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_fwd_point_rows)(
    SWEEP_BORN_FWD_PARAMS, const int mask) {
  for (sweep_int x = x0; x < x1; ++x) {
    SWEEP_R w[2];
    SWEEP_FN(lsrtm_fwd_point)(p, v2dt2, dv2dt2, u0, u0_prev, psi0, psi0_new, zeta0, u1, u1_prev,
                              psi1, psi1_new, zeta1, pa, pb, base + x, z, y, x, mask, w);
    if (wrow) {
      wrow[x] = w[0];
      wrow[x + pitch] = w[1];
    }
  }
}

/* Adjoint: what the vector rows leave (segments shorter than a vector,
 * SWEEP_SIMD_ROWS=0); the compiler vectorises it. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_adj_point_rows)(
    SWEEP_BORN_ADJ_PARAMS, const int mask) {
#pragma omp simd
  for (sweep_int x = x0; x < x1; ++x)
    SWEEP_FN(lsrtm_adj_point)(p, v2dt2, dv2dt2, g0, g0_prev, P0, P0n, Z0, Z0n, mu1, mu1_prev, P1,
                              P1n, Z1, Z1n, pa, pb, base + x, z, y, x, mask);
}

/* One never-inlined function per CPML mask (cpu_rows.h says why). */
SWEEP_DEFINE_BY_MASK(born_fwd_point_row, born_fwd_point_rows, (SWEEP_BORN_FWD_PARAMS),
                     (SWEEP_BORN_FWD_ARGS))
#if SWEEP_HAVE_VEC
/* The vector rows take the adjoint's segments; these take what they leave. */
SWEEP_DEFINE_ANY_MASK(born_adj_point_row, born_adj_point_rows, (SWEEP_BORN_ADJ_PARAMS),
                      (SWEEP_BORN_ADJ_ARGS))
#define SWEEP_BORN_ADJ_POINT_ROW(mask) SWEEP_FN(born_adj_point_row)(SWEEP_BORN_ADJ_ARGS, mask)
#else
SWEEP_DEFINE_BY_MASK(born_adj_point_row, born_adj_point_rows, (SWEEP_BORN_ADJ_PARAMS),
                     (SWEEP_BORN_ADJ_ARGS))
#define SWEEP_BORN_ADJ_POINT_ROW(mask) \
  SWEEP_CALL_BY_MASK(born_adj_point_row, mask, (SWEEP_BORN_ADJ_ARGS))
#endif

/* ---- Rows of one field: acoustic's, then the scattering term ---- */

/* up[x] += dk[x] w[x] in one rounding, x in [x0, x1): the scattering term of
 * lsrtm_fwd_point / lsrtm_adj_point. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_scatter)(
    SWEEP_R *SWEEP_RESTRICT up, const SWEEP_R *SWEEP_RESTRICT dk,
    const SWEEP_R *SWEEP_RESTRICT w, sweep_int x0, sweep_int x1) {
#pragma omp simd
  for (sweep_int x = x0; x < x1; ++x) up[x] = SWEEP_FMA(dk[x], w[x], up[x]);
}

/* Acoustic's rows of one field, one never-inlined function per CPML mask
 * that both fields call (fwd_mask_row, acoustic_cpu_scalar.h; adj_row_vec
 * with A to arow below): inlined, the rows of two fields per segment and
 * mask doubled the code to compile. */
#if SWEEP_HAVE_VEC
#define SWEEP_BORN_WADJ_PARAMS                                                                \
  const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *g, SWEEP_R *g_prev,    \
      SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,    \
      const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *arow, sweep_int base,     \
      sweep_int z, sweep_int y, sweep_int x0, sweep_int x1
#define SWEEP_BORN_WADJ_ARGS p, v2dt2, g, g_prev, P, P_new, Z, Z_new, pa, pb, arow, base, z, y, x0, x1
static inline __attribute__((always_inline)) void SWEEP_FN(born_wave_adj)(SWEEP_BORN_WADJ_PARAMS,
                                                                          const int mask) {
  SWEEP_FN(adj_row_vec)(SWEEP_BORN_WADJ_ARGS, mask);
}
SWEEP_DEFINE_BY_MASK(born_wave_adj_row, born_wave_adj, (SWEEP_BORN_WADJ_PARAMS),
                     (SWEEP_BORN_WADJ_ARGS))
#undef SWEEP_BORN_WADJ_PARAMS
#undef SWEEP_BORN_WADJ_ARGS
#endif

/* ---- Rows: the cells [x0, x1) of row (z, y) with mask m ---- */

/* Forward: u0 (W0^n to wrow, else to scratch), u1 (W1^n to wrow + pitch),
 * then dK W0^n into u1^{n+1}. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_fwd_row)(
    SWEEP_BORN_FWD_PARAMS, SWEEP_R *scratch, const int mask) {
  SWEEP_R *w0 = wrow ? wrow : scratch;
  if (x0 >= x1) return;
  if (!w0) {
    SWEEP_CALL_BY_MASK(born_fwd_point_row, mask, (SWEEP_BORN_FWD_ARGS))
    return;
  }
  SWEEP_CALL_BY_MASK(fwd_mask_row, mask, (p, v2dt2, u0, u0_prev, psi0, psi0_new, zeta0, pa,
                                               pb, w0, base, z, y, x0, x1))
  SWEEP_CALL_BY_MASK(fwd_mask_row, mask, (p, v2dt2, u1, u1_prev, psi1, psi1_new, zeta1, pa,
                                               pb, wrow ? wrow + pitch : NULL, base, z, y, x0, x1))
  SWEEP_FN(born_scatter)(u1_prev + base, dv2dt2 + base, w0, x0, x1);
}

/* Adjoint: the vector rows take whole segments of at least a vector (as
 * adj_row_vec does), mu1's A1 going to scratch for G0's scattering term;
 * the point rows take the rest. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_adj_row)(
    SWEEP_BORN_ADJ_PARAMS, SWEEP_R *scratch, const int mask) {
#if SWEEP_HAVE_VEC
  if (p->simd_rows && scratch && x1 - x0 >= SWEEP_VL) {
    SWEEP_CALL_BY_MASK(born_wave_adj_row, mask, (p, v2dt2, mu1, mu1_prev, P1, P1n, Z1, Z1n, pa,
                                                 pb, scratch, base, z, y, x0, x1))
    SWEEP_CALL_BY_MASK(born_wave_adj_row, mask, (p, v2dt2, g0, g0_prev, P0, P0n, Z0, Z0n, pa, pb,
                                                 NULL, base, z, y, x0, x1))
    SWEEP_FN(born_scatter)(g0_prev + base, dv2dt2 + base, scratch, x0, x1);
    return;
  }
#else
  (void)scratch;
#endif
  if (x0 < x1) SWEEP_BORN_ADJ_POINT_ROW(mask);
}

/* A whole row (z, y) of one shot (pointers offset to the shot): the x
 * segments in memory order, each with its compile-time mask. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_fwd_full_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *dv2dt2,
    const SWEEP_R *u0, SWEEP_R *u0_prev, SWEEP_R *const *psi0, SWEEP_R *const *psi0_new,
    SWEEP_R *const *zeta0, const SWEEP_R *u1, SWEEP_R *u1_prev, SWEEP_R *const *psi1,
    SWEEP_R *const *psi1_new, SWEEP_R *const *zeta1, const SWEEP_R *const *pa,
    const SWEEP_R *const *pb, SWEEP_R *wrow, sweep_int pitch, SWEEP_R *scratch, sweep_int z,
    sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const int outer = SWEEP_FN(row_mask)(p, z, y);
#define SWEEP_BORN_FWD_SEGMENT(a, b, m) \
  SWEEP_FN(born_fwd_row)(p, v2dt2, dv2dt2, u0, u0_prev, psi0, psi0_new, zeta0, u1, u1_prev, psi1, \
                         psi1_new, zeta1, pa, pb, wrow, pitch, base, z, y, a, b, scratch, m)
#define SWEEP_ROW_SEGMENTS(m) SWEEP_ROW_IN_ORDER(SWEEP_BORN_FWD_SEGMENT, m, (void)0)
  SWEEP_MASK_SWITCH(outer, SWEEP_ROW_SEGMENTS)
#undef SWEEP_BORN_FWD_SEGMENT
#undef SWEEP_ROW_SEGMENTS
}

static inline __attribute__((always_inline)) void SWEEP_FN(born_adj_full_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *dv2dt2,
    const SWEEP_R *g0, SWEEP_R *g0_prev, SWEEP_R *const *P0, SWEEP_R *const *P0n,
    SWEEP_R *const *Z0, SWEEP_R *const *Z0n, const SWEEP_R *mu1, SWEEP_R *mu1_prev,
    SWEEP_R *const *P1, SWEEP_R *const *P1n, SWEEP_R *const *Z1, SWEEP_R *const *Z1n,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *scratch, sweep_int z,
    sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const int outer = SWEEP_FN(row_mask)(p, z, y);
#define SWEEP_BORN_ADJ_SEGMENT(a, b, m)                                                       \
  SWEEP_FN(born_adj_row)(p, v2dt2, dv2dt2, g0, g0_prev, P0, P0n, Z0, Z0n, mu1, mu1_prev, P1, P1n, \
                         Z1, Z1n, pa, pb, base, z, y, a, b, scratch, m)
#define SWEEP_ROW_SEGMENTS(m) SWEEP_ROW_IN_ORDER(SWEEP_BORN_ADJ_SEGMENT, m, (void)0)
  SWEEP_MASK_SWITCH(outer, SWEEP_ROW_SEGMENTS)
#undef SWEEP_BORN_ADJ_SEGMENT
#undef SWEEP_ROW_SEGMENTS
}

/* The x-CPML segments alone of a row that is plain in z and y (the CPML
 * replay, which does not hold the plain middle). */
static inline __attribute__((always_inline)) void SWEEP_FN(born_fwd_edge_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *dv2dt2,
    const SWEEP_R *u0, SWEEP_R *u0_prev, SWEEP_R *const *psi0, SWEEP_R *const *psi0_new,
    SWEEP_R *const *zeta0, const SWEEP_R *u1, SWEEP_R *u1_prev, SWEEP_R *const *psi1,
    SWEEP_R *const *psi1_new, SWEEP_R *const *zeta1, const SWEEP_R *const *pa,
    const SWEEP_R *const *pb, SWEEP_R *wrow, sweep_int pitch, SWEEP_R *scratch, sweep_int z,
    sweep_int y) {
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const sweep_int ends[2][2] = {{SWEEP_H, p->plain_lo[2]}, {p->plain_hi[2], p->shape[2] - SWEEP_H}};
  for (int e = 0; e < 2; ++e)
    SWEEP_FN(born_fwd_row)(p, v2dt2, dv2dt2, u0, u0_prev, psi0, psi0_new, zeta0, u1, u1_prev, psi1,
                           psi1_new, zeta1, pa, pb, wrow, pitch, base, z, y, ends[e][0],
                           ends[e][1], scratch, 4);
}

#undef SWEEP_BORN_FWD_PARAMS
#undef SWEEP_BORN_FWD_ARGS
#undef SWEEP_BORN_ADJ_PARAMS
#undef SWEEP_BORN_ADJ_ARGS
#undef SWEEP_BORN_ADJ_POINT_ROW

/* One step's terms of born_correlate below: gk += a0 s + a1 s[vs], gd +=
 * a1 s.  The snapshot rows come from memory: a line at a time, the same
 * line of the next row (the record's rows follow each other, n cells
 * apart) is prefetched, which the next row's correlation reads. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_correlate_step)(
    SWEEP_R *SWEEP_RESTRICT gk, SWEEP_R *SWEEP_RESTRICT gd, const SWEEP_R *SWEEP_RESTRICT a0,
    const SWEEP_R *SWEEP_RESTRICT a1, const SWEEP_R *SWEEP_RESTRICT s, sweep_int vs,
    sweep_int n) {
  const sweep_int line = SWEEP_CACHE_LINE / (sweep_int)sizeof(SWEEP_R);
  for (sweep_int xa = 0; xa < n; xa += line) {
    const sweep_int xb = xa + line < n ? xa + line : n;
    __builtin_prefetch(s + n + xa, 0, 3);
    __builtin_prefetch(s + vs + n + xa, 0, 3);
#pragma omp simd
    for (sweep_int x = xa; x < xb; ++x) {
      gk[x] = gk[x] + a0[x] * s[x] + a1[x] * s[x + vs];
      gd[x] += a1[x] * s[x];
    }
  }
}

/*
 * Snapshot correlation of one model row of n cells (gk, gd: the rows of
 * grad_v2dt2 and grad_dv2dt2; m0, m1: G0^{t+1}, mu1^{t+1}; st: W0^t, with
 * W1^t vs further, or NULL): gk += m0 W0 + m1 W1, gd += m1 W0.  held (the
 * snapshot of a deferred step t + 1, with lo0, lo1 its G0^{t+2}, mu1^{t+2},
 * still in the _prev fields) is added first, as step t + 1 would have; skip leaves step t's
 * own terms to step t - 1.  Each cell receives the same additions in the same
 * order whichever way the steps pair up.
 */
static inline __attribute__((always_inline)) void SWEEP_FN(born_correlate)(
    SWEEP_R *SWEEP_RESTRICT gk, SWEEP_R *SWEEP_RESTRICT gd, const SWEEP_R *SWEEP_RESTRICT m0,
    const SWEEP_R *SWEEP_RESTRICT m1, const SWEEP_R *SWEEP_RESTRICT st,
    const SWEEP_R *SWEEP_RESTRICT lo0, const SWEEP_R *SWEEP_RESTRICT lo1,
    const SWEEP_R *SWEEP_RESTRICT held, sweep_int vs, int skip, sweep_int n) {
  if (held) SWEEP_FN(born_correlate_step)(gk, gd, lo0, lo1, held, vs, n);
  if (st && !skip) SWEEP_FN(born_correlate_step)(gk, gd, m0, m1, st, vs, n);
}

/* sub_problem's arrays of shots: both fields and both gradients, fo elements on. */
static inline __attribute__((always_inline)) void SWEEP_FN(born_shift_shots)(
    const sweep_lsrtm_fields *f, sweep_int fo, sweep_lsrtm_fields *g) {
  g->u0_prev = SWEEP_OFF(f->u0_prev, fo);
  g->u0 = SWEEP_OFF(f->u0, fo);
  g->u1_prev = SWEEP_OFF(f->u1_prev, fo);
  g->u1 = SWEEP_OFF(f->u1, fo);
  for (int d = 0; d < 3; ++d) {
    g->psi0[d] = SWEEP_OFF(f->psi0[d], fo);
    g->psi0_new[d] = SWEEP_OFF(f->psi0_new[d], fo);
    g->zeta0[d] = SWEEP_OFF(f->zeta0[d], fo);
    g->zeta0_new[d] = SWEEP_OFF(f->zeta0_new[d], fo);
    g->psi1[d] = SWEEP_OFF(f->psi1[d], fo);
    g->psi1_new[d] = SWEEP_OFF(f->psi1_new[d], fo);
    g->zeta1[d] = SWEEP_OFF(f->zeta1[d], fo);
    g->zeta1_new[d] = SWEEP_OFF(f->zeta1_new[d], fo);
  }
  g->grad_v2dt2 = SWEEP_OFF(f->grad_v2dt2, fo);
  g->grad_dv2dt2 = SWEEP_OFF(f->grad_dv2dt2, fo);
  g->recon_u0_next = SWEEP_OFF(f->recon_u0_next, fo);
  g->recon_u0 = SWEEP_OFF(f->recon_u0, fo);
  g->recon_u1_next = SWEEP_OFF(f->recon_u1_next, fo);
  g->recon_u1 = SWEEP_OFF(f->recon_u1, fo);
}

/* The background traces of one shot and step: u0^t at the receivers, after
 * the scattered traces in rec. */
static inline void SWEEP_FN(born_record_background)(const sweep_acoustic_params *p,
                                                    const sweep_lsrtm_fields *f,
                                                    const SWEEP_R *u0, sweep_int shot,
                                                    sweep_int off, sweep_int t) {
  SWEEP_R *bg = (SWEEP_R *)f->rec + (p->slot_shots + shot) * p->n_rec * p->nt;
  const sweep_int *ri = f->rec_idx + shot * p->n_rec;
  for (sweep_int r = 0; r < p->n_rec; ++r) bg[r * p->nt + t] = u0[off + ri[r]];
}

/* ---- The hooks of cpu_skeleton.h ---- */

#define SWEEP_EQ_FORWARD SWEEP_FN(sweep_lsrtm_forward)
#define SWEEP_EQ_BACKWARD SWEEP_FN(sweep_lsrtm_backward)
#define SWEEP_EQ_SNAP_VALUES 2
/* A row of W0 (forward) or A1 (adjoint) per thread, for the vector rows. */
#define SWEEP_EQ_ROW_SCRATCH 1
/* One leapfrog stage per step for both fields, so forward steps that store
 * nothing may be blocked in time (cpu_blocking.h). */
#define SWEEP_EQ_BLOCKING 1
#define SWEEP_EQ_BAND_VALUES 2
#define SWEEP_EQ_MODEL(f)                                   \
  const SWEEP_R *v2dt2 = (const SWEEP_R *)(f)->v2dt2;       \
  const SWEEP_R *dv2dt2 = (const SWEEP_R *)(f)->dv2dt2
#define SWEEP_EQ_SHIFT_SHOTS(f, fo, g) SWEEP_FN(born_shift_shots)(f, fo, g)

/* Forward: both fields rotate as acoustic's u (zeta* in place). */
#define SWEEP_EQ_FWD_STATE(f)                                                 \
  SWEEP_R *u0_prev = (SWEEP_R *)(f)->u0_prev, *u0 = (SWEEP_R *)(f)->u0;      \
  SWEEP_R *u1_prev = (SWEEP_R *)(f)->u1_prev, *u1 = (SWEEP_R *)(f)->u1;      \
  void *psi0_all[3], *psi0_new_all[3], *psi1_all[3], *psi1_new_all[3];       \
  for (int d = 0; d < 3; ++d) {                                              \
    psi0_all[d] = (f)->psi0[d];                                              \
    psi0_new_all[d] = (f)->psi0_new[d];                                      \
    psi1_all[d] = (f)->psi1[d];                                              \
    psi1_new_all[d] = (f)->psi1_new[d];                                      \
  }
#define SWEEP_EQ_FWD_SHOT(f, off)                                                     \
  SWEEP_R *psi0[3], *psi0_new[3], *zeta0[3], *psi1[3], *psi1_new[3], *zeta1[3];     \
  SWEEP_FN(shot_axes)(psi0_all, off, psi0);                                         \
  SWEEP_FN(shot_axes)(psi0_new_all, off, psi0_new);                                 \
  SWEEP_FN(shot_axes)((f)->zeta0, off, zeta0);                                      \
  SWEEP_FN(shot_axes)(psi1_all, off, psi1);                                         \
  SWEEP_FN(shot_axes)(psi1_new_all, off, psi1_new);                                 \
  SWEEP_FN(shot_axes)((f)->zeta1, off, zeta1)
#define SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y)                                          \
  SWEEP_FN(born_fwd_full_row)(p, v2dt2, dv2dt2, u0 + (off), u0_prev + (off), psi0, psi0_new, \
                              zeta0, u1 + (off), u1_prev + (off), psi1, psi1_new, zeta1, pa, \
                              pb, wr, SWEEP_WR_PITCH(p), eq_scratch, z, y)
#define SWEEP_EQ_FWD_EDGE_ROW(p, pa, pb, off, wr, z, y)                                          \
  SWEEP_FN(born_fwd_edge_row)(p, v2dt2, dv2dt2, u0 + (off), u0_prev + (off), psi0, psi0_new, \
                              zeta0, u1 + (off), u1_prev + (off), psi1, psi1_new, zeta1, pa, \
                              pb, wr, SWEEP_WR_PITCH(p), eq_scratch, z, y)
/* Receivers record u1^t (and u0^t after them); sources add -K f^t to u0^{t+1}
 * and -dK f^t to u1^{t+1}. */
#define SWEEP_EQ_FWD_RECORD(i) (u1[i])
#define SWEEP_EQ_FWD_RECORD_EXTRA(p, f, shot, off, t) \
  SWEEP_FN(born_record_background)(p, f, u0, shot, off, t)
#define SWEEP_EQ_FWD_SOURCE(i, j, a) \
  do {                               \
    u0_prev[i] -= v2dt2[j] * (a);    \
    u1_prev[i] -= dv2dt2[j] * (a);   \
  } while (0)
#define SWEEP_EQ_FWD_GHOSTS(p)              \
  do {                                      \
    SWEEP_FN(fill_ghosts)(p, u0_prev);      \
    SWEEP_FN(fill_ghosts)(p, u1_prev);      \
  } while (0)
#define SWEEP_EQ_FWD_ROTATE()                          \
  do {                                                 \
    SWEEP_SWAP(SWEEP_R *, u0_prev, u0);                \
    SWEEP_SWAP(SWEEP_R *, u1_prev, u1);                \
    for (int d = 0; d < 3; ++d) {                      \
      SWEEP_SWAP(void *, psi0_all[d], psi0_new_all[d]); \
      SWEEP_SWAP(void *, psi1_all[d], psi1_new_all[d]); \
    }                                                  \
  } while (0)
/* Blocked forward: the model, the state of one shot (after an odd or even
 * number of rotations) and a row for W0 (the item's own: blocked items have
 * no per-thread scratch). */
#define SWEEP_EQ_BLOCK_STATE(f, odd, off)                                          \
  SWEEP_EQ_MODEL(f);                                                              \
  SWEEP_R *u0 = (SWEEP_R *)((odd) ? (f)->u0_prev : (f)->u0) + (off);             \
  SWEEP_R *u0_prev = (SWEEP_R *)((odd) ? (f)->u0 : (f)->u0_prev) + (off);        \
  SWEEP_R *u1 = (SWEEP_R *)((odd) ? (f)->u1_prev : (f)->u1) + (off);             \
  SWEEP_R *u1_prev = (SWEEP_R *)((odd) ? (f)->u1 : (f)->u1_prev) + (off);        \
  SWEEP_R *psi0[3], *psi0_new[3], *zeta0[3], *psi1[3], *psi1_new[3], *zeta1[3];  \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi0_new : (f)->psi0, off, psi0);             \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi0 : (f)->psi0_new, off, psi0_new);         \
  SWEEP_FN(shot_axes)((f)->zeta0, off, zeta0);                                   \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi1_new : (f)->psi1, off, psi1);             \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi1 : (f)->psi1_new, off, psi1_new);         \
  SWEEP_FN(shot_axes)((f)->zeta1, off, zeta1);                                   \
  SWEEP_R eq_scratch[p->shape[2]]
/* The background trace of receiver k of the shot (state index i) at step t. */
#define SWEEP_EQ_BLOCK_RECORD_EXTRA(p, f, shot, k, i, t) \
  (((SWEEP_R *)(f)->rec)[(((p)->slot_shots + (shot)) * (p)->n_rec + (k)) * (p)->nt + (t)] = u0[i])
/* Boundary saving: the band keeps u0^t (value 0) and u1^t (value 1). */
#define SWEEP_EQ_FWD_SAVED(off, v) (((v) ? u1 : u0) + (off))
#define SWEEP_EQ_FWD_LOAD_BAND(i, v, x) (((v) ? u1 : u0)[i] = (x))
/* The ring: u0^t, u1^t, then psi0^t, psi1^t along the cell's axis. */
#define SWEEP_EQ_FWD_RING(off, v, d)                                                      \
  ((v) == 0   ? u0 + (off)                                                                \
   : (v) == 1 ? u1 + (off)                                                                \
   : (v) == 2 ? (SWEEP_R *)psi0_all[d] + (off)                                            \
              : (SWEEP_R *)psi1_all[d] + (off))

/* The storing forward may be blocked too: each row's W0, W1 (wr, wr + pitch)
 * go into their slot right after the row (cpu_blocking.h). */
#define SWEEP_EQ_BLOCK_STORE 1
/* The blocked adjoint (cpu_blocking.h): the models and the adjoint state of
 * one shot after an odd (1) or even (0) number of steps, under the names the
 * adjoint hooks below use (their off then 0), and a row for A1. */
#define SWEEP_EQ_BLOCK_ADJOINT 1
#define SWEEP_EQ_ADJ_BLOCK_STATE(f, odd, off)                                        \
  SWEEP_EQ_MODEL(f);                                                                 \
  SWEEP_R *mu0 = (SWEEP_R *)((odd) ? (f)->u0_prev : (f)->u0) + (off);                \
  SWEEP_R *mu0_prev = (SWEEP_R *)((odd) ? (f)->u0 : (f)->u0_prev) + (off);           \
  SWEEP_R *mu1 = (SWEEP_R *)((odd) ? (f)->u1_prev : (f)->u1) + (off);                \
  SWEEP_R *mu1_prev = (SWEEP_R *)((odd) ? (f)->u1 : (f)->u1_prev) + (off);           \
  SWEEP_R *P0[3], *P0n[3], *Z0[3], *Z0n[3], *P1[3], *P1n[3], *Z1[3], *Z1n[3];        \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi0_new : (f)->psi0, off, P0);                   \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi0 : (f)->psi0_new, off, P0n);                  \
  SWEEP_FN(shot_axes)((odd) ? (f)->zeta0_new : (f)->zeta0, off, Z0);                 \
  SWEEP_FN(shot_axes)((odd) ? (f)->zeta0 : (f)->zeta0_new, off, Z0n);                \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi1_new : (f)->psi1, off, P1);                   \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi1 : (f)->psi1_new, off, P1n);                  \
  SWEEP_FN(shot_axes)((odd) ? (f)->zeta1_new : (f)->zeta1, off, Z1);                 \
  SWEEP_FN(shot_axes)((odd) ? (f)->zeta1 : (f)->zeta1_new, off, Z1n);                \
  const SWEEP_R *mu0_s = mu0, *mu1_s = mu1;                                          \
  SWEEP_R *grad_k_all = (f)->grad_v2dt2 ? (SWEEP_R *)(f)->grad_v2dt2 + (off) : NULL; \
  SWEEP_R *grad_dk_all =                                                             \
      (f)->grad_dv2dt2 ? (SWEEP_R *)(f)->grad_dv2dt2 + (off) : NULL;                 \
  SWEEP_R *grad_k = grad_k_all, *grad_dk = grad_dk_all;                              \
  SWEEP_R eq_scratch[p->shape[2]];                                                   \
  (void)grad_k;                                                                      \
  (void)grad_dk

/* Adjoint, in mu = K lambda: mu0 (which holds G0 = mu0 + R mu1, see
 * lsrtm_stencil.h), mu1 and their P, Z swap every step. */
#define SWEEP_EQ_GRAD(f) ((f)->grad_v2dt2)
#define SWEEP_EQ_ADJ_STATE(f)                                                      \
  SWEEP_R *mu0_prev = (SWEEP_R *)(f)->u0_prev, *mu0 = (SWEEP_R *)(f)->u0;         \
  SWEEP_R *mu1_prev = (SWEEP_R *)(f)->u1_prev, *mu1 = (SWEEP_R *)(f)->u1;         \
  SWEEP_BORN_RECON_STATE(f);                                                      \
  void *P0_all[3], *P0n_all[3], *Z0_all[3], *Z0n_all[3];                          \
  void *P1_all[3], *P1n_all[3], *Z1_all[3], *Z1n_all[3];                          \
  for (int d = 0; d < 3; ++d) {                                                   \
    P0_all[d] = (f)->psi0[d];                                                     \
    P0n_all[d] = (f)->psi0_new[d];                                                \
    Z0_all[d] = (f)->zeta0[d];                                                    \
    Z0n_all[d] = (f)->zeta0_new[d];                                               \
    P1_all[d] = (f)->psi1[d];                                                     \
    P1n_all[d] = (f)->psi1_new[d];                                                \
    Z1_all[d] = (f)->zeta1[d];                                                    \
    Z1n_all[d] = (f)->zeta1_new[d];                                               \
  }                                                                               \
  SWEEP_R *grad_k_all = (SWEEP_R *)(f)->grad_v2dt2;                               \
  SWEEP_R *grad_dk_all = (SWEEP_R *)(f)->grad_dv2dt2
#define SWEEP_EQ_ADJ_GRAD grad_k_all
#define SWEEP_EQ_ADJ_SHOT(f, off)                                  \
  SWEEP_R *P0[3], *P0n[3], *Z0[3], *Z0n[3];                        \
  SWEEP_R *P1[3], *P1n[3], *Z1[3], *Z1n[3];                        \
  SWEEP_FN(shot_axes)(P0_all, off, P0);                            \
  SWEEP_FN(shot_axes)(P0n_all, off, P0n);                          \
  SWEEP_FN(shot_axes)(Z0_all, off, Z0);                            \
  SWEEP_FN(shot_axes)(Z0n_all, off, Z0n);                          \
  SWEEP_FN(shot_axes)(P1_all, off, P1);                            \
  SWEEP_FN(shot_axes)(P1n_all, off, P1n);                          \
  SWEEP_FN(shot_axes)(Z1_all, off, Z1);                            \
  SWEEP_FN(shot_axes)(Z1n_all, off, Z1n);                          \
  const SWEEP_R *mu0_s = mu0 + (off), *mu1_s = mu1 + (off);        \
  SWEEP_R *grad_k = grad_k_all ? grad_k_all + (off) : NULL;        \
  SWEEP_R *grad_dk = grad_dk_all ? grad_dk_all + (off) : NULL
#define SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y)                                                \
  SWEEP_FN(born_adj_full_row)(p, v2dt2, dv2dt2, mu0_s, mu0_prev + (off), P0, P0n, Z0, Z0n,    \
                              mu1_s, mu1_prev + (off), P1, P1n, Z1, Z1n, pa, pb, eq_scratch, z, \
                              y)
/* W0^t and W1^t of a row: st and st + SWEEP_SNAP_STRIDE(p) (p: the skeleton's
 * parameters, in scope where the hook expands). */
#define SWEEP_EQ_ADJ_CORRELATE(off, o, st, held, skip, n)                                  \
  SWEEP_FN(born_correlate)(grad_k + (o), grad_dk + (o), mu0_s + (o), mu1_s + (o), st,     \
                           mu0_prev + (off) + (o), mu1_prev + (off) + (o), held,          \
                           SWEEP_SNAP_STRIDE(p), skip, n)
/* Residuals r of u1^t go into mu1^t as K r and into G0^t as dK r (in the
 * _prev fields); the source terms read G0^{t+1}: dL/df = -G0. */
#define SWEEP_EQ_ADJ_RESIDUAL(i, j, r)  \
  do {                                  \
    mu1_prev[i] += v2dt2[j] * (r);      \
    mu0_prev[i] += dv2dt2[j] * (r);     \
  } while (0)
#define SWEEP_EQ_ADJ_SOURCE_GRAD(i, j) (-mu0[i])
#define SWEEP_EQ_ADJ_SOURCE_TERM(i, j, a) \
  do {                                    \
    grad_k_all[i] -= (a) * mu0[i];        \
    grad_dk_all[i] -= (a) * mu1[i];       \
  } while (0)
#define SWEEP_EQ_ADJ_GHOSTS(p, recon)         \
  do {                                        \
    SWEEP_FN(fill_ghosts)(p, mu0_prev);       \
    SWEEP_FN(fill_ghosts)(p, mu1_prev);       \
    if (recon) SWEEP_BORN_RECON_GHOSTS(p);    \
  } while (0)
#define SWEEP_EQ_ADJ_ROTATE()                    \
  do {                                           \
    SWEEP_SWAP(SWEEP_R *, mu0_prev, mu0);        \
    SWEEP_SWAP(SWEEP_R *, mu1_prev, mu1);        \
    for (int d = 0; d < 3; ++d) {                \
      SWEEP_SWAP(void *, P0_all[d], P0n_all[d]); \
      SWEEP_SWAP(void *, Z0_all[d], Z0n_all[d]); \
      SWEEP_SWAP(void *, P1_all[d], P1n_all[d]); \
      SWEEP_SWAP(void *, Z1_all[d], Z1n_all[d]); \
    }                                            \
    SWEEP_BORN_RECON_ROTATE();                   \
  } while (0)

/* Boundary saving: u0 and u1 run backwards in ru0 / ru0_next and ru1 /
 * ru1_next (u^{t+1} in *_next receives u^{t-1}), which rotate with the
 * adjoint fields. */
#define SWEEP_BORN_RECON_STATE(f)                                                  \
  SWEEP_R *ru0_next = (SWEEP_R *)(f)->recon_u0_next, *ru0 = (SWEEP_R *)(f)->recon_u0; \
  SWEEP_R *ru1_next = (SWEEP_R *)(f)->recon_u1_next, *ru1 = (SWEEP_R *)(f)->recon_u1
#define SWEEP_BORN_RECON_ROTATE()         \
  do {                                    \
    SWEEP_SWAP(SWEEP_R *, ru0_next, ru0); \
    SWEEP_SWAP(SWEEP_R *, ru1_next, ru1); \
  } while (0)
#define SWEEP_BORN_RECON_GHOSTS(p)          \
  do {                                      \
    SWEEP_FN(fill_ghosts)(p, ru0_next);     \
    SWEEP_FN(fill_ghosts)(p, ru1_next);     \
  } while (0)
#define SWEEP_EQ_RECON(f) ((f)->recon_u0 != NULL && (f)->grad_v2dt2 != NULL)
/* Both fields one step backwards and the correlations on the plain x range
 * of the row (lsrtm_recon_point; mu0_s holds G0). */
#define SWEEP_EQ_RECON_ROW(p, off, base)                                                     \
  do {                                                                                       \
    _Pragma("omp simd") for (sweep_int x = (p)->plain_lo[2]; x < (p)->plain_hi[2]; ++x)      \
        SWEEP_FN(lsrtm_recon_point)(p, v2dt2, dv2dt2, ru0 + (off), ru0_next + (off),         \
                                    ru1 + (off), ru1_next + (off), mu0_s, mu1_s, grad_k,     \
                                    grad_dk, (base) + x);                                    \
  } while (0)
/* The saved W0^t (w[0]) and W1^t (w[vs]) of a band or CPML cell, correlated
 * as born_correlate does (mu0 holds G0). */
#define SWEEP_EQ_RECON_CELL(i, w, vs)                                                  \
  do {                                                                                 \
    grad_k_all[i] = grad_k_all[i] + mu0[i] * (w)[0] + mu1[i] * (w)[vs];                \
    grad_dk_all[i] += mu1[i] * (w)[0];                                                 \
  } while (0)
#define SWEEP_EQ_RECON_SOURCE(i, j, a) \
  do {                                 \
    ru0_next[i] -= v2dt2[j] * (a);     \
    ru1_next[i] -= dv2dt2[j] * (a);    \
  } while (0)
#define SWEEP_EQ_RECON_LOAD_BAND(i, v, x) (((v) ? ru1_next : ru0_next)[i] = (x))
/* The ring's u0^t, u1^t into ru0, ru1 and psi0^t, psi1^t into ru0_next,
 * ru1_next, where the band's W reads them (lsrtm_recon_band_point). */
#define SWEEP_EQ_RECON_LOAD_RING(i, v, d, x) \
  (((v) == 0 ? ru0 : (v) == 1 ? ru1 : (v) == 2 ? ru0_next : ru1_next)[i] = (x))
/* One function for the band's rows, the mask a run-time value (as acoustic's). */
SWEEP_ONCE_FN void SWEEP_FN(lsrtm_recon_band_row)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT u0,
    const SWEEP_R *SWEEP_RESTRICT rpsi0, const SWEEP_R *SWEEP_RESTRICT u1,
    const SWEEP_R *SWEEP_RESTRICT rpsi1, const SWEEP_R *SWEEP_RESTRICT g0,
    const SWEEP_R *SWEEP_RESTRICT mu1, SWEEP_R *SWEEP_RESTRICT gk, SWEEP_R *SWEEP_RESTRICT gd,
    sweep_int base, sweep_int z, sweep_int y, sweep_int x0, sweep_int x1, const int mask) {
  _Pragma("omp simd") for (sweep_int x = x0; x < x1; ++x)
      SWEEP_FN(lsrtm_recon_band_point)(p, u0, rpsi0, u1, rpsi1, g0, mu1, gk, gd, base + x, z, y,
                                       x, mask);
}
#define SWEEP_EQ_RECON_BAND(p, off, base, z, y, x0, x1, mask)                                \
  SWEEP_FN(lsrtm_recon_band_row)(p, ru0 + (off), ru0_next + (off), ru1 + (off),              \
                                 ru1_next + (off), mu0_s, mu1_s, grad_k, grad_dk, base, z, y, \
                                 x0, x1, mask)

#include "cpu_skeleton.h"

#include "acoustic_stencil_undef.h"
#undef SWEEP_STENCIL_KEEP_MACROS
