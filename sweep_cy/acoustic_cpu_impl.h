/*
 * The acoustic equation's plug-in to the CPU time loops (cpu_skeleton.h, which
 * documents the hooks defined here): its rows, vector (acoustic_cpu_vec.h)
 * and scalar (acoustic_cpu_scalar.h) over the point arithmetic of
 * acoustic_stencil.h, and the hooks that tell the skeleton its fields.  One
 * specialisation per translation unit (cpu_kernel.c.in).
 *
 * Fields (sweep_acoustic_fields, sweep_common.h): the forward's state is u
 * (u^n) and u_prev (u^{n-1}, which receives u^{n+1}), psi and psi_new per axis
 * (psi^n, psi^{n+1}), all swapped after every step, and zeta, updated in
 * place; the model is v2dt2 = v^2 dt^2.  The adjoint carries mu = v^2 dt^2
 * lambda in u / u_prev and the adjoint psi and zeta in psi / psi_new and
 * zeta / zeta_new, all swapped (acoustic_stencil.h); boundary saving runs the
 * forward wavefield backwards in recon_u / recon_u_next (and recomputes the
 * band's W from it and the ring the CPML replay kept).  The snapshot value
 * of a cell is W^n, the factor of v^2 dt^2 in the update, so the model
 * gradient is sum_n mu^{n+1} W^n (divided by v^2 dt^2 by the caller).
 */
#include "acoustic_cpu.h"

#define SWEEP_EQ_PARAMS sweep_acoustic_params
#define SWEEP_EQ_FIELDS sweep_acoustic_fields
#define SWEEP_STENCIL_KEEP_MACROS
#include "acoustic_stencil.h"
#include "cpu_rows.h"
#include "cpu_wave_state.h"
#include "acoustic_cpu_vec.h"
#include "acoustic_cpu_scalar.h"

/* Rows of one stencil, x in [x0, x1), with a compile-time CPML axis mask
 * (fwd_row: acoustic_cpu_scalar.h). */
static inline __attribute__((always_inline)) void SWEEP_FN(adj_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *mu, SWEEP_R *mu_prev,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, sweep_int base, sweep_int z, sweep_int y,
    sweep_int x0, sweep_int x1, const int mask) {
#if SWEEP_HAVE_VEC
  if (p->simd_rows)
    x0 = SWEEP_FN(adj_row_vec)(p, v2dt2, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, NULL, base, z,
                               y, x0, x1, mask);
#endif
  SWEEP_FN(adj_row_scalar)(p, v2dt2, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, base, z, y, x0, x1,
                           mask);
}
#define SWEEP_ADJ_ROW_PARAMS                                                                    \
  const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *mu, SWEEP_R *mu_prev,   \
      SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,    \
      const SWEEP_R *const *pa, const SWEEP_R *const *pb, sweep_int base, sweep_int z,       \
      sweep_int y, sweep_int x0, sweep_int x1
/* One never-inlined function per mask, as fwd_mask_row (acoustic_cpu_scalar.h). */
SWEEP_DEFINE_BY_MASK(adj_mask_row, adj_row, (SWEEP_ADJ_ROW_PARAMS),
                     (p, v2dt2, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, base, z, y, x0, x1))
#undef SWEEP_ADJ_ROW_PARAMS

/* One row (z, y) of one shot (pointers already offset to the shot): the x
 * segments in the CPML and the plain middle, each with its compile-time mask.
 * W^n goes to wr[x] when wr is not NULL. */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_full_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_prev,
    SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wr, sweep_int z, sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const int outer = SWEEP_FN(row_mask)(p, z, y);
#define SWEEP_FWD_ROW(x0, x1, m)  \
  SWEEP_CALL_BY_MASK(fwd_mask_row, m, \
                     (p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wr, base, z, y, x0, x1))
#define SWEEP_ROW_SEGMENTS(m) SWEEP_ROW_IN_ORDER(SWEEP_FWD_ROW, m, (void)0)
  if (SWEEP_NDIM == 3 && psi[2]) {
    /* The next row's x memory variables: psi where the x segments' windows
     * read it, zeta and psi_new, for writing, where they write (as
     * adj_full_row). */
    const sweep_int nb = base + p->stride[1];
    SWEEP_FN(prefetch_xcpml_row)(p, psi[2] + nb, SWEEP_H, 0);
    SWEEP_FN(prefetch_xcpml_row)(p, zeta[2] + nb, 0, 1);
    SWEEP_FN(prefetch_xcpml_row)(p, psi_new[2] + nb, 0, 1);
  }
  SWEEP_MASK_SWITCH(outer, SWEEP_ROW_SEGMENTS)
#undef SWEEP_FWD_ROW
#undef SWEEP_ROW_SEGMENTS
}

/* The x-CPML segments alone of a row that is plain in z and y, as
 * fwd_full_row runs them (the CPML replay skips the plain middle, whose
 * cells it does not hold). */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_edge_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_prev,
    SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wr, sweep_int z, sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  SWEEP_FN(fwd_mask_row4)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wr, base, z, y, h,
                          p->plain_lo[2]);
  SWEEP_FN(fwd_mask_row4)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wr, base, z, y,
                          p->plain_hi[2], x_end);
}

/*
 * Snapshot correlation of one model row of n cells (gr, ln: the gradient and
 * mu^{t+1} of the row; st: W^t, or NULL when step t stores none):
 * gr += ln st.  held (W^{t+1} of a deferred step t + 1, with lo its mu^{t+2},
 * the row of mu_prev before the stencil overwrites it) is added first, as
 * step t + 1 would have; skip leaves step t's own term to step t - 1.
 */
static inline __attribute__((always_inline)) void SWEEP_FN(adj_correlate)(
    SWEEP_R *SWEEP_RESTRICT gr, const SWEEP_R *SWEEP_RESTRICT ln,
    const SWEEP_R *SWEEP_RESTRICT st, const SWEEP_R *SWEEP_RESTRICT lo,
    const SWEEP_R *SWEEP_RESTRICT held, int skip, sweep_int n) {
  if (held && st && !skip) {
#pragma omp simd
    for (sweep_int x = 0; x < n; ++x) gr[x] = gr[x] + lo[x] * held[x] + ln[x] * st[x];
  } else if (held) {
#pragma omp simd
    for (sweep_int x = 0; x < n; ++x) gr[x] += lo[x] * held[x];
  } else if (st && !skip) {
#pragma omp simd
    for (sweep_int x = 0; x < n; ++x) gr[x] += ln[x] * st[x];
  }
}

/* The x memory variables of the next row's x-CPML segments (3D; row base
 * nb), before an adjoint row: P and Z where the segments' windows read them
 * (a halo into the plain middle), P_new and Z_new, for writing, where they
 * write (prefetch_xcpml_row, cpu_rows.h). */
static inline __attribute__((always_inline)) void SWEEP_FN(prefetch_adj_xcpml)(
    const sweep_acoustic_params *p, const SWEEP_R *P, const SWEEP_R *Z, const SWEEP_R *Pn,
    const SWEEP_R *Zn, sweep_int nb) {
  if (SWEEP_NDIM != 3 || !P || !Pn) return;
  SWEEP_FN(prefetch_xcpml_row)(p, P + nb, SWEEP_H, 0);
  SWEEP_FN(prefetch_xcpml_row)(p, Z + nb, SWEEP_H, 0);
  SWEEP_FN(prefetch_xcpml_row)(p, Pn + nb, 0, 1);
  SWEEP_FN(prefetch_xcpml_row)(p, Zn + nb, 0, 1);
}

/* The stencil of one adjoint row (z, y) of one shot (pointers offset to the
 * shot): the x-CPML segments and the plain middle, each with its
 * compile-time mask. */
static inline __attribute__((always_inline)) void SWEEP_FN(adj_full_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *mu, SWEEP_R *mu_prev,
    SWEEP_R *const *P, SWEEP_R *const *Pn, SWEEP_R *const *Z, SWEEP_R *const *Zn,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, sweep_int z, sweep_int y) {
  const sweep_int h = SWEEP_H, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const int outer = SWEEP_FN(row_mask)(p, z, y);
#define SWEEP_ADJ_ROW(x0, x1, m)  \
  SWEEP_CALL_BY_MASK(adj_mask_row, m, \
                     (p, v2dt2, mu, mu_prev, P, Pn, Z, Zn, pa, pb, base, z, y, x0, x1))
#define SWEEP_ROW_SEGMENTS(m) SWEEP_ROW_IN_ORDER(SWEEP_ADJ_ROW, m, (void)0)
  SWEEP_FN(prefetch_adj_xcpml)(p, P[2], Z[2], Pn[2], Zn[2], base + p->stride[1]);
  SWEEP_MASK_SWITCH(outer, SWEEP_ROW_SEGMENTS)
#undef SWEEP_ADJ_ROW
#undef SWEEP_ROW_SEGMENTS
}

/* sub_problem's acoustic arrays of shots: the wavefields, the model gradient
 * and the reconstruction, fo elements on. */
static inline __attribute__((always_inline)) void SWEEP_FN(shift_shots)(
    const sweep_acoustic_fields *f, sweep_int fo, sweep_acoustic_fields *g) {
  SWEEP_WAVE_SHIFT_SHOTS(f, fo, g);
  g->grad_v2dt2 = SWEEP_OFF(f->grad_v2dt2, fo);
  g->recon_u = SWEEP_OFF(f->recon_u, fo);
  g->recon_u_next = SWEEP_OFF(f->recon_u_next, fo);
}

/* ---- The hooks of cpu_skeleton.h ---- */

#define SWEEP_EQ_FORWARD SWEEP_FN(sweep_acoustic_forward)
#define SWEEP_EQ_BACKWARD SWEEP_FN(sweep_acoustic_backward)
/* One leapfrog stage per step: u^{n+1}, psi^{n+1} go over u^{n-1}, psi^{n-1}. */
#define SWEEP_EQ_BLOCKING 1
/* ... and so may the storing forward (W of each row straight into the store). */
#define SWEEP_EQ_BLOCK_STORE 1
#define SWEEP_EQ_MODEL(f) const SWEEP_R *v2dt2 = (const SWEEP_R *)(f)->v2dt2
#define SWEEP_EQ_SHIFT_SHOTS(f, fo, g) SWEEP_FN(shift_shots)(f, fo, g)

/* Forward: u, u_prev and psi_all, psi_new_all (all shots) swap every step;
 * zeta does not rotate. */
#define SWEEP_EQ_FWD_STATE(f) SWEEP_WAVE_FWD_STATE(f)
#define SWEEP_EQ_FWD_SHOT(f, off) SWEEP_WAVE_FWD_SHOT(f, off)
#define SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y)                                            \
  SWEEP_FN(fwd_full_row)(p, v2dt2, u + (off), u_prev + (off), psi, psi_new, zeta, pa, pb, wr, \
                         z, y)
#define SWEEP_EQ_FWD_EDGE_ROW(p, pa, pb, off, wr, z, y)                                       \
  SWEEP_FN(fwd_edge_row)(p, v2dt2, u + (off), u_prev + (off), psi, psi_new, zeta, pa, pb, wr, \
                         z, y)
/* Receivers record u^t; sources add -v^2 dt^2 f^t to u^{t+1} (in u_prev). */
#define SWEEP_EQ_FWD_RECORD(i) (u[i])
#define SWEEP_EQ_FWD_SOURCE(i, j, a) (u_prev[i] -= v2dt2[j] * (a))
/* The free surface mirrors u^{t+1}. */
#define SWEEP_EQ_FWD_GHOSTS(p) SWEEP_FN(fill_ghosts)(p, u_prev)
#define SWEEP_EQ_FWD_ROTATE() SWEEP_WAVE_FWD_ROTATE()
/* Blocked forward: the model and the state of one shot. */
#define SWEEP_EQ_BLOCK_STATE(f, odd, off) \
  SWEEP_EQ_MODEL(f);                      \
  SWEEP_WAVE_BLOCK_STATE(f, odd, off)
/* Boundary saving: the band keeps u^t; the CPML replay loads it back and
 * keeps u^t and psi^t (along the cell's axis) of the ring. */
#define SWEEP_EQ_FWD_SAVED(off, v) (u + (off))
#define SWEEP_EQ_FWD_LOAD_BAND(i, v, x) (u[i] = (x))
#define SWEEP_EQ_FWD_RING(off, v, d) (((v) ? (SWEEP_R *)psi_all[d] : u) + (off))

/* Adjoint, in mu = v^2 dt^2 lambda: mu, mu_prev, the adjoint psi (P) and
 * zeta (Z) swap every step, and so do ru, ru_next (boundary saving). */
#define SWEEP_EQ_GRAD(f) ((f)->grad_v2dt2)
#define SWEEP_EQ_ADJ_STATE(f)                                                         \
  SWEEP_R *mu_prev = (SWEEP_R *)(f)->u_prev, *mu = (SWEEP_R *)(f)->u;                \
  SWEEP_R *ru_next = (SWEEP_R *)(f)->recon_u_next, *ru = (SWEEP_R *)(f)->recon_u;    \
  SWEEP_WAVE_ADJ_AXES(f)                                                             \
  SWEEP_R *grad_all = (SWEEP_R *)(f)->grad_v2dt2
#define SWEEP_EQ_ADJ_GRAD grad_all
#define SWEEP_EQ_ADJ_SHOT(f, off)                 \
  SWEEP_WAVE_ADJ_SHOT(f, off);                    \
  const SWEEP_R *mu_s = mu + (off);               \
  SWEEP_R *grad = grad_all ? grad_all + (off) : NULL
#define SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y) \
  SWEEP_FN(adj_full_row)(p, v2dt2, mu_s, mu_prev + (off), P, Pn, Z, Zn, pa, pb, z, y)
/* gradient += mu^{t+1} W^t; a deferred step's mu^{t+2} is still in mu_prev. */
#define SWEEP_EQ_ADJ_CORRELATE(off, o, st, held, skip, n) \
  SWEEP_FN(adj_correlate)(grad + (o), mu_s + (o), st, mu_prev + (off) + (o), held, skip, n)
/* Residuals of u^t, times v^2 dt^2, go into mu^t (in mu_prev); the source
 * terms read mu^{t+1}. */
#define SWEEP_EQ_ADJ_RESIDUAL(i, j, r) (mu_prev[i] += v2dt2[j] * (r))
#define SWEEP_EQ_ADJ_SOURCE_GRAD(i, j) (-mu[i])
#define SWEEP_EQ_ADJ_SOURCE_TERM(i, j, a) (grad_all[i] -= (a) * mu[i])
#define SWEEP_EQ_ADJ_GHOSTS(p, recon) SWEEP_WAVE_ADJ_GHOSTS(p, recon)
#define SWEEP_EQ_ADJ_ROTATE() SWEEP_WAVE_ADJ_ROTATE()
/* The blocked adjoint (cpu_blocking.h): the model and the adjoint state of
 * one shot after an odd (1) or even (0) number of steps, under the names
 * the adjoint hooks above use (their off then 0). */
#define SWEEP_EQ_BLOCK_ADJOINT 1
#define SWEEP_EQ_ADJ_BLOCK_STATE(f, odd, off)                                             \
  SWEEP_EQ_MODEL(f);                                                                      \
  SWEEP_WAVE_ADJ_BLOCK_STATE(f, odd, off);                                                \
  const SWEEP_R *mu_s = mu;                                                               \
  SWEEP_R *grad_all = (f)->grad_v2dt2 ? (SWEEP_R *)(f)->grad_v2dt2 + (off) : NULL;        \
  SWEEP_R *grad = grad_all;                                                               \
  (void)grad

/* Boundary saving: u runs backwards in ru / ru_next (u^{t+1} in ru_next
 * receives u^{t-1}). */
#define SWEEP_EQ_RECON(f) ((f)->recon_u != NULL && (f)->grad_v2dt2 != NULL)
/* The backward-in-time step of u and the gradient correlation
 * (acoustic_recon_point) on the plain x range of the row.  A macro: as an
 * inlined function, its omp simd loop changed the stack frame and registers
 * of the whole adjoint loop. */
#if SWEEP_HAVE_VEC
#define SWEEP_RECON_ROW_VEC_(p, off, base)                                              \
  if ((p)->simd_rows)                                                                   \
    x0 = SWEEP_FN(recon_row_vec)(p, v2dt2, ru + (off), ru_next + (off), mu_s, grad, base, \
                                 x0, (p)->plain_hi[2]);
#else
#define SWEEP_RECON_ROW_VEC_(p, off, base)
#endif
#define SWEEP_EQ_RECON_ROW(p, off, base)                                                    \
  do {                                                                                      \
    sweep_int x0 = (p)->plain_lo[2];                                                        \
    SWEEP_RECON_ROW_VEC_(p, off, base)                                                      \
    _Pragma("omp simd") for (sweep_int x = x0; x < (p)->plain_hi[2]; ++x)                   \
        SWEEP_FN(acoustic_recon_point)(p, v2dt2, ru + (off), ru_next + (off), mu_s, grad,   \
                                       (base) + x);                                         \
  } while (0)
#define SWEEP_EQ_RECON_CELL(i, w, vs) (grad_all[i] += mu[i] * *(w))
#define SWEEP_EQ_RECON_SOURCE(i, j, a) (ru_next[i] -= v2dt2[j] * (a))
#define SWEEP_EQ_RECON_LOAD_BAND(i, v, x) (ru_next[i] = (x))
/* The ring's u^t into ru and its psi^t into ru_next, whose ring cells the
 * step reads nowhere else; the band's W^t reads both there
 * (acoustic_w_band_point). */
#define SWEEP_EQ_RECON_LOAD_RING(i, v, d, x) (((v) ? ru_next : ru)[i] = (x))
/* The band's rows are thin strips: one function with the CPML mask a
 * run-time value (SWEEP_ONCE_FN), not a vector loop per mask and call. */
SWEEP_ONCE_FN void SWEEP_FN(acoustic_recon_band_row)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT u,
    const SWEEP_R *SWEEP_RESTRICT rpsi, const SWEEP_R *SWEEP_RESTRICT mu,
    SWEEP_R *SWEEP_RESTRICT grad, sweep_int base, sweep_int z, sweep_int y, sweep_int x0,
    sweep_int x1, const int mask) {
  _Pragma("omp simd") for (sweep_int x = x0; x < x1; ++x)
      SWEEP_FN(acoustic_recon_band_point)(p, u, rpsi, mu, grad, base + x, z, y, x, mask);
}
#define SWEEP_EQ_RECON_BAND(p, off, base, z, y, x0, x1, mask)                                 \
  SWEEP_FN(acoustic_recon_band_row)(p, ru + (off), ru_next + (off), mu_s, grad, (base), z, y, x0, \
                                    x1, mask)

#include "cpu_skeleton.h"

#include "acoustic_stencil_undef.h"
#undef SWEEP_STENCIL_KEEP_MACROS
