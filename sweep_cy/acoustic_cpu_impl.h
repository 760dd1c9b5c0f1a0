/*
 * CPU time loop for the acoustic equation: one specialisation per inclusion
 * (SWEEP_NDIM, SWEEP_ORDER, SWEEP_REAL, SWEEP_SUFFIX; see acoustic_cpu.c).
 *
 * The whole chunk of time steps runs inside one OpenMP parallel region.  Each
 * step is three work-shared phases separated by the implicit barriers of
 * `omp for`: (1) the stencil over rows of (shot, z, y), (2) sources and
 * receivers per shot, (3) free-surface ghost rows.  Every output element is
 * written by one thread in a fixed order, so results do not depend on the
 * number of threads (bitwise).
 */
#include "acoustic_stencil.h"

#define SWEEP_FN(name) SWEEP_CAT3(name, _, SWEEP_SUFFIX)
#define SWEEP_R SWEEP_REAL
#define SWEEP_H (SWEEP_ORDER / 2)

/* Pointers of one shot, per axis; unused axes stay NULL. */
static inline void SWEEP_FN(shot_axes)(void *const *src, sweep_int off, SWEEP_R **dst) {
  for (int d = 0; d < 3; ++d) dst[d] = src[d] ? (SWEEP_R *)src[d] + off : NULL;
}

/* One row of the forward stencil: x in [x0, x1), constant pml flag. */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_prev,
    SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *store, sweep_int base,
    sweep_int *c, sweep_int x0, sweep_int x1, const int pml) {
  if (pml) {
    for (sweep_int x = x0; x < x1; ++x) {
      c[2] = x;
      SWEEP_FN(acoustic_fwd_point)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, store,
                                   base + x, c, 1);
    }
  } else {
#pragma omp simd
    for (sweep_int x = x0; x < x1; ++x) {
      SWEEP_FN(acoustic_fwd_point)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, store,
                                   base + x, c, 0);
    }
  }
}

static inline __attribute__((always_inline)) void SWEEP_FN(adj_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *lam, SWEEP_R *lam_prev,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, const SWEEP_R *store, SWEEP_R *grad,
    sweep_int base, sweep_int *c, sweep_int x0, sweep_int x1, const int pml) {
  if (pml) {
    for (sweep_int x = x0; x < x1; ++x) {
      c[2] = x;
      SWEEP_FN(acoustic_adj_point)(p, v2dt2, lam, lam_prev, P, P_new, Z, Z_new, pa, pb, store,
                                   grad, base + x, c, 1);
    }
  } else {
#pragma omp simd
    for (sweep_int x = x0; x < x1; ++x) {
      SWEEP_FN(acoustic_adj_point)(p, v2dt2, lam, lam_prev, P, P_new, Z, Z_new, pa, pb, store,
                                   grad, base + x, c, 0);
    }
  }
}

/* Odd mirror of the wavefield into the ghost rows of every free surface. */
static void SWEEP_FN(fill_ghosts)(const sweep_acoustic_params *p, SWEEP_R *field) {
  const sweep_int h = SWEEP_H;
  for (int d = 3 - SWEEP_NDIM; d < 3; ++d) {
    for (int side = 0; side < 2; ++side) {
      if (!(side ? p->free_hi[d] : p->free_lo[d])) continue;
      /* The surface is the row next to the ghosts; ghost g mirrors surface +- (surface - g). */
      const sweep_int surface = side ? p->shape[d] - 1 - h : h;
      const sweep_int g0 = side ? p->shape[d] - h : 0;
      const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
      const sweep_int n1 = p->shape[e1], n2 = p->shape[e2];
      const sweep_int n_items = p->n_shots * h * n1;
#pragma omp for schedule(static)
      for (sweep_int item = 0; item < n_items; ++item) {
        const sweep_int shot = item / (h * n1);
        const sweep_int g = g0 + (item / n1) % h;
        const sweep_int j1 = item % n1;
        const sweep_int mirror = 2 * surface - g;
        SWEEP_R *f = field + shot * p->shot_stride + j1 * p->stride[e1];
        for (sweep_int j2 = 0; j2 < n2; ++j2) {
          const sweep_int o = j2 * p->stride[e2];
          f[o + g * p->stride[d]] = -f[o + mirror * p->stride[d]];
        }
      }
    }
  }
}

static inline int SWEEP_FN(has_free_surface)(const sweep_acoustic_params *p) {
  for (int d = 0; d < 3; ++d)
    if (p->free_lo[d] || p->free_hi[d]) return 1;
  return 0;
}

/* Active rows (halo excluded) of all shots, decoded to (shot, z, y). */
#define SWEEP_ROWS(p) ((p)->n_shots * ((p)->shape[0] - (SWEEP_NDIM == 3 ? 2 * SWEEP_H : 0)) \
                       * ((p)->shape[1] - 2 * SWEEP_H))
#define SWEEP_DECODE_ROW(p, row, shot, c)                                          \
  do {                                                                             \
    const sweep_int ny_ = (p)->shape[1] - 2 * SWEEP_H;                             \
    const sweep_int nz_ = (p)->shape[0] - (SWEEP_NDIM == 3 ? 2 * SWEEP_H : 0);     \
    shot = (row) / (nz_ * ny_);                                                    \
    c[0] = ((row) / ny_) % nz_ + (SWEEP_NDIM == 3 ? SWEEP_H : 0);                  \
    c[1] = (row) % ny_ + SWEEP_H;                                                  \
  } while (0)
#define SWEEP_ROW_IN_PML(p, c)                                                     \
  ((SWEEP_NDIM == 3 && (c[0] < (p)->plain_lo[0] || c[0] >= (p)->plain_hi[0])) ||   \
   c[1] < (p)->plain_lo[1] || c[1] >= (p)->plain_hi[1])

void SWEEP_FN(sweep_acoustic_forward)(const sweep_acoustic_params *p,
                                      const sweep_acoustic_fields *f, sweep_int t0,
                                      sweep_int n_steps, int n_threads) {
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int x_end = p->shape[2] - h;
  const sweep_int n_rows = SWEEP_ROWS(p);
  const int free_surface = SWEEP_FN(has_free_surface)(p);
  const SWEEP_R *v2dt2 = (const SWEEP_R *)f->v2dt2;
  const SWEEP_R *pa[3], *pb[3];
  for (int d = 0; d < 3; ++d) {
    pa[d] = (const SWEEP_R *)f->pml_a[d];
    pb[d] = (const SWEEP_R *)f->pml_b[d];
  }
#pragma omp parallel num_threads(n_threads)
  {
    SWEEP_R *u_prev = (SWEEP_R *)f->u_prev, *u = (SWEEP_R *)f->u;
    void *psi_all[3], *psi_new_all[3];
    for (int d = 0; d < 3; ++d) {
      psi_all[d] = f->psi[d];
      psi_new_all[d] = f->psi_new[d];
    }
    for (sweep_int t = t0; t < t0 + n_steps; ++t) {
      SWEEP_R *store = f->store ? (SWEEP_R *)f->store + (t - t0) * p->n_shots * ss : NULL;
#pragma omp for schedule(static)
      for (sweep_int row = 0; row < n_rows; ++row) {
        sweep_int shot, c[3] = {0, 0, 0};
        SWEEP_DECODE_ROW(p, row, shot, c);
        const sweep_int off = shot * ss;
        SWEEP_R *psi[3], *psi_new[3], *zeta[3];
        SWEEP_FN(shot_axes)(psi_all, off, psi);
        SWEEP_FN(shot_axes)(psi_new_all, off, psi_new);
        SWEEP_FN(shot_axes)(f->zeta, off, zeta);
        SWEEP_R *st = store ? store + off : NULL;
        const sweep_int base = c[0] * p->stride[0] + c[1] * p->stride[1];
        if (SWEEP_ROW_IN_PML(p, c)) {
          SWEEP_FN(fwd_row)(p, v2dt2, u + off, u_prev + off, psi, psi_new, zeta, pa, pb, st,
                            base, c, h, x_end, 1);
        } else {
          SWEEP_FN(fwd_row)(p, v2dt2, u + off, u_prev + off, psi, psi_new, zeta, pa, pb, st,
                            base, c, h, p->plain_lo[2], 1);
          SWEEP_FN(fwd_row)(p, v2dt2, u + off, u_prev + off, psi, psi_new, zeta, pa, pb, st,
                            base, c, p->plain_lo[2], p->plain_hi[2], 0);
          SWEEP_FN(fwd_row)(p, v2dt2, u + off, u_prev + off, psi, psi_new, zeta, pa, pb, st,
                            base, c, p->plain_hi[2], x_end, 1);
        }
      }
      /* Receivers record u^t; sources add v^2 dt^2 f^t to u^{t+1} (now in u_prev). */
#pragma omp for schedule(static)
      for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
        const sweep_int off = shot * ss;
        if (f->rec) {
          SWEEP_R *rec = (SWEEP_R *)f->rec;
          for (sweep_int r = 0; r < p->n_rec; ++r)
            rec[(shot * p->n_rec + r) * p->nt + t] = u[off + f->rec_idx[shot * p->n_rec + r]];
        }
        if (f->src_amp) {
          const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
          for (sweep_int k = 0; k < p->n_src; ++k) {
            const sweep_int i = off + f->src_idx[shot * p->n_src + k];
            u_prev[i] += v2dt2[i - off] * amp[(shot * p->n_src + k) * p->nt + t];
          }
        }
      }
      if (free_surface) SWEEP_FN(fill_ghosts)(p, u_prev);
      SWEEP_R *tmp = u_prev;
      u_prev = u;
      u = tmp;
      for (int d = 0; d < 3; ++d) {
        void *tp = psi_all[d];
        psi_all[d] = psi_new_all[d];
        psi_new_all[d] = tp;
      }
    }
  }
}

void SWEEP_FN(sweep_acoustic_backward)(const sweep_acoustic_params *p,
                                       const sweep_acoustic_fields *f, sweep_int t_end,
                                       sweep_int n_steps, int n_threads) {
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int x_end = p->shape[2] - h;
  const sweep_int n_rows = SWEEP_ROWS(p);
  const sweep_int t_begin = t_end - n_steps;
  const int free_surface = SWEEP_FN(has_free_surface)(p);
  const SWEEP_R *v2dt2 = (const SWEEP_R *)f->v2dt2;
  const SWEEP_R *pa[3], *pb[3];
  for (int d = 0; d < 3; ++d) {
    pa[d] = (const SWEEP_R *)f->pml_a[d];
    pb[d] = (const SWEEP_R *)f->pml_b[d];
  }
#pragma omp parallel num_threads(n_threads)
  {
    SWEEP_R *lam_prev = (SWEEP_R *)f->u_prev, *lam = (SWEEP_R *)f->u;
    void *P_all[3], *Pn_all[3], *Z_all[3], *Zn_all[3];
    for (int d = 0; d < 3; ++d) {
      P_all[d] = f->psi[d];
      Pn_all[d] = f->psi_new[d];
      Z_all[d] = f->zeta[d];
      Zn_all[d] = f->zeta_new[d];
    }
    for (sweep_int t = t_end - 1; t >= t_begin; --t) {
      const SWEEP_R *store =
          f->store ? (const SWEEP_R *)f->store + (t - t_begin) * p->n_shots * ss : NULL;
      SWEEP_R *grad_all = (SWEEP_R *)f->grad_v2dt2;
#pragma omp for schedule(static)
      for (sweep_int row = 0; row < n_rows; ++row) {
        sweep_int shot, c[3] = {0, 0, 0};
        SWEEP_DECODE_ROW(p, row, shot, c);
        const sweep_int off = shot * ss;
        SWEEP_R *P[3], *Pn[3], *Z[3], *Zn[3];
        SWEEP_FN(shot_axes)(P_all, off, P);
        SWEEP_FN(shot_axes)(Pn_all, off, Pn);
        SWEEP_FN(shot_axes)(Z_all, off, Z);
        SWEEP_FN(shot_axes)(Zn_all, off, Zn);
        const SWEEP_R *st = store ? store + off : NULL;
        SWEEP_R *grad = grad_all && store ? grad_all + off : NULL;
        const sweep_int base = c[0] * p->stride[0] + c[1] * p->stride[1];
        if (SWEEP_ROW_IN_PML(p, c)) {
          SWEEP_FN(adj_row)(p, v2dt2, lam + off, lam_prev + off, P, Pn, Z, Zn, pa, pb, st, grad,
                            base, c, h, x_end, 1);
        } else {
          SWEEP_FN(adj_row)(p, v2dt2, lam + off, lam_prev + off, P, Pn, Z, Zn, pa, pb, st, grad,
                            base, c, h, p->plain_lo[2], 1);
          SWEEP_FN(adj_row)(p, v2dt2, lam + off, lam_prev + off, P, Pn, Z, Zn, pa, pb, st, grad,
                            base, c, p->plain_lo[2], p->plain_hi[2], 0);
          SWEEP_FN(adj_row)(p, v2dt2, lam + off, lam_prev + off, P, Pn, Z, Zn, pa, pb, st, grad,
                            base, c, p->plain_hi[2], x_end, 1);
        }
      }
      /* Source terms use lambda^{t+1} (still in lam); residuals of u^t go into lambda^t. */
#pragma omp for schedule(static)
      for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
        const sweep_int off = shot * ss;
        for (sweep_int k = 0; k < p->n_src; ++k) {
          const sweep_int j = f->src_idx[shot * p->n_src + k];
          const sweep_int a = (shot * p->n_src + k) * p->nt + t;
          if (f->grad_src) ((SWEEP_R *)f->grad_src)[a] = v2dt2[j] * lam[off + j];
          if (grad_all && f->src_amp)
            grad_all[off + j] += ((const SWEEP_R *)f->src_amp)[a] * lam[off + j];
        }
        if (f->rec) {
          const SWEEP_R *res = (const SWEEP_R *)f->rec;
          for (sweep_int r = 0; r < p->n_rec; ++r)
            lam_prev[off + f->rec_idx[shot * p->n_rec + r]] += res[(shot * p->n_rec + r) * p->nt + t];
        }
      }
      if (free_surface) SWEEP_FN(fill_ghosts)(p, lam_prev);
      SWEEP_R *tmp = lam_prev;
      lam_prev = lam;
      lam = tmp;
      for (int d = 0; d < 3; ++d) {
        void *tp = P_all[d];
        P_all[d] = Pn_all[d];
        Pn_all[d] = tp;
        tp = Z_all[d];
        Z_all[d] = Zn_all[d];
        Zn_all[d] = tp;
      }
    }
  }
}

#undef SWEEP_FN
#undef SWEEP_R
#undef SWEEP_H
#undef SWEEP_ROWS
#undef SWEEP_DECODE_ROW
#undef SWEEP_ROW_IN_PML
