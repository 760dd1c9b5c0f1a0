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
#include "acoustic_cpu.h"

#define SWEEP_EQ_PARAMS sweep_acoustic_params
#define SWEEP_EQ_FIELDS sweep_acoustic_fields
#define SWEEP_STENCIL_KEEP_MACROS
#include "acoustic_stencil.h"
#include "cpu_rows.h"
#include "acoustic_cpu_vec.h"
#include "acoustic_cpu_scalar.h"

/* Rows of one stencil, x in [x0, x1), with a compile-time CPML axis mask;
 * W^n goes to wrow[x] when wrow is not NULL (full storage). */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_prev,
    SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wrow, sweep_int base,
    sweep_int z, sweep_int y, sweep_int x0, sweep_int x1, const int mask) {
#if SWEEP_HAVE_VEC
  if (p->simd_rows)
    x0 = SWEEP_FN(fwd_row_vec)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wrow, base, z, y,
                               x0, x1, mask);
#endif
  SWEEP_FN(fwd_row_scalar)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wrow, base, z, y, x0,
                           x1, mask);
}

static inline __attribute__((always_inline)) void SWEEP_FN(adj_row)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *mu, SWEEP_R *mu_prev,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, sweep_int base, sweep_int z, sweep_int y,
    sweep_int x0, sweep_int x1, const int mask) {
#if SWEEP_HAVE_VEC
  if (p->simd_rows)
    x0 = SWEEP_FN(adj_row_vec)(p, v2dt2, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, base, z, y, x0,
                               x1, mask);
#endif
  SWEEP_FN(adj_row_scalar)(p, v2dt2, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, base, z, y, x0, x1,
                           mask);
}

/* Cells per shot of a gradient snapshot: [store_lo, store_hi), the model and
 * its CPML (every cell whose v^2 dt^2 derives from the model). */
static inline sweep_int SWEEP_FN(store_cells)(const sweep_acoustic_params *p) {
  return (p->store_hi[0] - p->store_lo[0]) * (p->store_hi[1] - p->store_lo[1]) *
         (p->store_hi[2] - p->store_lo[2]);
}

/* Offset of row (z, y) in a compact snapshot, or -1 when the row is outside
 * the stored cells. */
static inline sweep_int SWEEP_FN(store_row)(const sweep_acoustic_params *p, sweep_int z,
                                            sweep_int y) {
  if (z < p->store_lo[0] || z >= p->store_hi[0] || y < p->store_lo[1] || y >= p->store_hi[1])
    return -1;
  const sweep_int m1 = p->store_hi[1] - p->store_lo[1], m2 = p->store_hi[2] - p->store_lo[2];
  return ((z - p->store_lo[0]) * m1 + (y - p->store_lo[1])) * m2;
}

/* Slot of step t in a snapshot chunk whose first step is t0, or -1 when t is
 * not a sampled step (t % store_every != 0). */
static inline sweep_int SWEEP_FN(store_slot)(const sweep_acoustic_params *p, sweep_int t,
                                             sweep_int t0) {
  const sweep_int k = p->store_every > 0 ? p->store_every : 1;
  if (t % k) return -1;
  return t / k - (t0 + k - 1) / k;
}

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
#define SWEEP_FWD_ROW(x0, x1, m) \
  SWEEP_FN(fwd_row)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wr, base, z, y, x0, x1, m)
  /* The high x-CPML segment's psi window reaches a vector (<= a line) below it. */
  const sweep_int xa = p->plain_hi[2] - SWEEP_CACHE_LINE / (sweep_int)sizeof(SWEEP_R);
  const sweep_int xb = p->shape[2];
#define SWEEP_FWD_AHEAD                                                  \
  if (SWEEP_NDIM == 3) {                                                 \
    SWEEP_FN(prefetch_cells)(psi[2] + base, xa, xb);                     \
    SWEEP_FN(prefetch_cells)(zeta[2] + base, xa, xb);                    \
    SWEEP_FN(prefetch_cells)(psi_new[2] + base, xa, xb);                 \
  }
#define SWEEP_ROW_SEGMENTS(m) SWEEP_ROW_IN_ORDER(SWEEP_FWD_ROW, m, SWEEP_FWD_AHEAD)
  SWEEP_MASK_SWITCH(outer, SWEEP_ROW_SEGMENTS)
#undef SWEEP_FWD_AHEAD
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
  SWEEP_FN(fwd_row)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wr, base, z, y, h,
                    p->plain_lo[2], 4);
  SWEEP_FN(fwd_row)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wr, base, z, y,
                    p->plain_hi[2], x_end, 4);
}

/* The cells of row segment [lo, hi) outside the plain cells: [lo, *a) and
 * [*b, hi); all of it when the row is outside the plain cells in z or y
 * (outer).  On models narrower than a halo the plain range reaches past hi,
 * hence the clamp; the band and outer indices (sweep/_grid.py) count the
 * same cells. */
static inline void SWEEP_FN(row_ends)(const sweep_acoustic_params *p, sweep_int hi, int outer,
                                      sweep_int *a, sweep_int *b) {
  *a = outer || p->plain_lo[2] > hi ? hi : p->plain_lo[2];
  *b = outer || p->plain_hi[2] < *a ? hi : p->plain_hi[2];
}

/* Copies W of the outer cells of row (z, y) from wr to dst, in outer_idx order. */
static inline void SWEEP_FN(copy_outer_row)(const sweep_acoustic_params *p, SWEEP_R *dst,
                                            const SWEEP_R *wr, int outer) {
  const sweep_int lo = p->store_lo[2], hi = p->store_hi[2];
  sweep_int a, b, k = 0;
  SWEEP_FN(row_ends)(p, hi, outer, &a, &b);
  for (sweep_int x = lo; x < a; ++x, ++k) dst[k] = wr[x];
  for (sweep_int x = b; x < hi; ++x, ++k) dst[k] = wr[x];
}

/* Work items are (shot, tile of SWEEP_TILE_Y rows in y); each streams through
 * z so the planes a 3D stencil reads stay in cache. */
#define SWEEP_TILE_Y 8
#define SWEEP_N_TILES(p) (((p)->shape[1] - 2 * SWEEP_H + SWEEP_TILE_Y - 1) / SWEEP_TILE_Y)
#define SWEEP_Z_BEGIN (SWEEP_NDIM == 3 ? SWEEP_H : 0)
#define SWEEP_Z_END(p) (SWEEP_NDIM == 3 ? (p)->shape[0] - SWEEP_H : 1)

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

/*
 * Temporal blocking of forward steps that store nothing (the forward-only
 * propagation).  One step streams every field through memory once, which
 * bounds large grids by DRAM bandwidth; here block_steps steps advance
 * together in one sweep along the outermost axis (z in 3D, y in 2D):
 *
 *   stage k: step s of the block updates plane group k - s * lag
 *
 * so each plane is read from memory once per block while the planes of the
 * wavefront stay in cache.  With lag = 1 + ceil(h / G) groups of G planes,
 * step s reads only planes step s - 1 finished in an earlier stage, and
 * overwrites (u^{n-1}, psi^{n-1} share a buffer with u^{n+1}, psi^{n+1})
 * only planes step s - 1 no longer reads.  In 3D the y axis is cut into
 * tiles that lean back by h rows per step (parallelograms) and run in
 * order, which keeps the wavefront of a tile small: a tile reads rows of
 * the previous, finished tile and overwrites only rows the next tile no
 * longer needs.  The updates in one stage are independent; an OpenMP
 * barrier separates stages (when the threads divide the shots, run_by_shot
 * has already given each thread single-shot calls, so there is none to
 * pay).  Each cell sees exactly the arithmetic of the unblocked loop (sources are added right after their
 * cell's update, in the same order), so the results are bitwise identical.
 */
static sweep_blocking SWEEP_FN(blocking)(const sweep_acoustic_params *p) {
  const sweep_int h = SWEEP_H;
  const int sa = SWEEP_NDIM == 3 ? 0 : 1; /* streaming axis */
  sweep_blocking b;
  b.steps = p->block_steps;
  b.q_lo = h;
  b.q_hi = p->shape[sa] - h;
  b.group = p->block_group > 0 ? p->block_group : 1;
  b.n_groups = (b.q_hi - b.q_lo + b.group - 1) / b.group;
  b.lag = 1 + (h + b.group - 1) / b.group;
  b.y_lo = h;
  b.y_hi = p->shape[1] - h;
  /* 3D: y tiles of `tile` rows; the first must keep a row at the last step. */
  b.tile = SWEEP_NDIM == 3 && p->block_tile > 0 ? p->block_tile : b.y_hi - b.y_lo;
  if (b.tile > b.y_hi - b.y_lo) b.tile = b.y_hi - b.y_lo;
  if (SWEEP_NDIM == 3 && b.tile <= (b.steps - 1) * h) b.steps = (b.tile - 1) / h + 1;
  b.n_ytiles = SWEEP_NDIM == 3 ? (b.y_hi - b.y_lo + b.tile - 1) / b.tile : 1;
  const sweep_int last_rows = b.y_hi - (b.y_lo + (b.n_ytiles - 1) * b.tile) + (b.steps - 1) * h;
  const sweep_int max_rows = SWEEP_NDIM == 3 ? (last_rows > b.tile ? last_rows : b.tile) : 1;
  b.chunk = SWEEP_NDIM == 3 ? 4 : 1;
  b.n_chunks = (max_rows + b.chunk - 1) / b.chunk;
  return b;
}

/* Work item (shot, step s of the block starting at tb, y tile, stage k,
 * chunk c) of forward_blocked: the rows of one plane group, or nothing when
 * step s has no group in stage k. */
static inline void SWEEP_FN(blocked_item)(const sweep_acoustic_params *p,
                                          const sweep_acoustic_fields *f, const sweep_blocking *b,
                                          const sweep_point *src, const sweep_point *rec,
                                          const SWEEP_R *const *pa, const SWEEP_R *const *pb,
                                          sweep_int t0, sweep_int tb, sweep_int shot, sweep_int s,
                                          sweep_int tile, sweep_int k, sweep_int c) {
  const sweep_int h = SWEEP_H;
  const sweep_int grp = k - s * b->lag;
  if (grp < 0 || grp >= b->n_groups) return;
  const sweep_int t = tb + s;
  /* Rows of this item: planes [q0, q1) x rows [ya, yb) (2D: the planes are rows). */
  const sweep_int q0 = b->q_lo + grp * b->group;
  const sweep_int q1 = q0 + b->group < b->q_hi ? q0 + b->group : b->q_hi;
  sweep_int ya = 0, yb = 1;
  if (SWEEP_NDIM == 3) {
    const sweep_int lo = tile == 0 ? b->y_lo : b->y_lo + tile * b->tile - s * h;
    const sweep_int hi =
        tile == b->n_ytiles - 1 ? b->y_hi : b->y_lo + (tile + 1) * b->tile - s * h;
    ya = lo + c * b->chunk;
    yb = ya + b->chunk < hi ? ya + b->chunk : hi;
    if (ya >= yb) return;
  }
  /* Buffers swap every step: after an odd number of steps since t0, u is in u_prev. */
  const int odd = (int)((t - t0) & 1);
  const sweep_int off = shot * p->shot_stride;
  const SWEEP_R *v2dt2 = (const SWEEP_R *)f->v2dt2;
  SWEEP_R *u = (SWEEP_R *)(odd ? f->u_prev : f->u) + off;
  SWEEP_R *u_prev = (SWEEP_R *)(odd ? f->u : f->u_prev) + off;
  SWEEP_R *psi[3], *psi_new[3], *zeta[3];
  SWEEP_FN(shot_axes)(odd ? f->psi_new : f->psi, off, psi);
  SWEEP_FN(shot_axes)(odd ? f->psi : f->psi_new, off, psi_new);
  SWEEP_FN(shot_axes)(f->zeta, off, zeta);
  for (sweep_int q = q0; q < q1; ++q) {
    const sweep_int z = SWEEP_NDIM == 3 ? q : 0;
    const sweep_int r0 = SWEEP_NDIM == 3 ? ya : q, r1 = SWEEP_NDIM == 3 ? yb : q + 1;
    for (sweep_int y = r0; y < r1; ++y)
      SWEEP_FN(fwd_full_row)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, NULL, z, y);
    /* Receivers record u^t and sources add to u^{t+1} in the rows just updated. */
    const sweep_int i0 = z * p->stride[0] + r0 * p->stride[1];
    const sweep_int i1 = z * p->stride[0] + r1 * p->stride[1];
    if (rec) {
      const sweep_point *rs = rec + shot * p->n_rec;
      SWEEP_R *out = (SWEEP_R *)f->rec;
      for (sweep_int j = sweep_points_lower(rs, p->n_rec, i0); j < p->n_rec && rs[j].idx < i1; ++j)
        out[(shot * p->n_rec + rs[j].k) * p->nt + t] = u[rs[j].idx];
    }
    if (src) {
      const sweep_point *sp = src + shot * p->n_src;
      const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
      for (sweep_int j = sweep_points_lower(sp, p->n_src, i0); j < p->n_src && sp[j].idx < i1; ++j)
        u_prev[sp[j].idx] -= v2dt2[sp[j].idx] * amp[(shot * p->n_src + sp[j].k) * p->nt + t];
    }
  }
}

/* Stages of a block of nb steps: the last step's last group runs in the last one. */
static inline sweep_int SWEEP_FN(stage_count)(const sweep_blocking *b, sweep_int nb) {
  return b->n_groups + (nb - 1) * b->lag;
}

/* Steps s of a block of nb steps with a plane group in stage k (0 <= k - s lag < n_groups). */
static inline void SWEEP_FN(stage_steps)(const sweep_blocking *b, sweep_int nb, sweep_int k,
                                         sweep_int *s_lo, sweep_int *s_hi) {
  *s_lo = k < b->n_groups ? 0 : (k - b->n_groups + b->lag) / b->lag;
  *s_hi = k / b->lag < nb - 1 ? k / b->lag : nb - 1;
}

/*
 * forward_blocked with a task per (block, y tile) instead of threads sharing
 * every stage: thread i runs tasks i, i + n_threads, ... in order (a block's
 * tiles, then the next block's), each task's stages on its own, so no
 * barrier separates stages.  A task waits only on what it reads or
 * overwrites (forward_blocked's comment gives the dependencies):
 *   - before stage k, the previous tile of its block has finished stage
 *     k - 1 (step s of stage k reads planes step s - 1 wrote up to stage k - 1
 *     and overwrites planes it read up to then);
 *   - before stage 0, the previous block's tiles up to `reach` tiles past its
 *     own are complete (its first step reads, and overwrites, rows the
 *     previous block's last steps computed or read that far up in y).
 * Tiles lean back by h rows per step, so a later step of the previous tile
 * never touches rows of this tile: the previous tile may run ahead freely.
 * Returns 0, having done nothing, when its progress counters get no memory.
 * 3D benchmark (128^3 + CPML 20, order 8, 1 shot, 2 threads), where the
 * shared stages spent 17 % of the time in OpenMP barriers: 6.06-6.34 ->
 * 5.50-5.65 ms per step (best of 6, interleaved; medians 6.8-7.0 -> 5.8-6.3).
 */
static int SWEEP_FN(forward_pipelined)(const sweep_acoustic_params *p,
                                       const sweep_acoustic_fields *f, const sweep_blocking *bp,
                                       const sweep_point *src, const sweep_point *rec,
                                       sweep_int t0, sweep_int n_steps, int n_threads) {
  const sweep_blocking b = *bp;
  const sweep_int T = b.steps, nty = b.n_ytiles;
  const sweep_int n_tasks = (n_steps + T - 1) / T * nty;
  const sweep_int full_stages = SWEEP_FN(stage_count)(&b, T);
  const sweep_int reach = (T * SWEEP_H + b.tile - 1) / b.tile;
  sweep_progress *done = sweep_progress_new(n_tasks);
  if (!done) return 0;
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    const int tid = sweep_thread_num(), nth = sweep_num_threads();
    for (sweep_int j = tid; j < n_tasks; j += nth) {
      const sweep_int blk = j / nty, tile = j % nty, tb = t0 + blk * T;
      const sweep_int nb = t0 + n_steps - tb < T ? t0 + n_steps - tb : T;
      const sweep_int n_stages = SWEEP_FN(stage_count)(&b, nb);
      if (blk > 0) {
        const sweep_int last = tile + reach < nty - 1 ? tile + reach : nty - 1;
        for (sweep_int t = 0; t <= last; ++t) sweep_wait(&done[(blk - 1) * nty + t], full_stages);
      }
      for (sweep_int k = 0; k < n_stages; ++k) {
        if (tile > 0) sweep_wait(&done[j - 1], k);
        sweep_int s_lo, s_hi;
        SWEEP_FN(stage_steps)(&b, nb, k, &s_lo, &s_hi);
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          for (sweep_int s = s_lo; s <= s_hi; ++s)
            for (sweep_int c = 0; c < b.n_chunks; ++c)
              SWEEP_FN(blocked_item)(p, f, &b, src, rec, pa, pb, t0, tb, shot, s, tile, k, c);
        sweep_publish(&done[j], k + 1);
      }
    }
    sweep_restore_fp(fp_state);
  }
  free(done);
  return 1;
}

static void SWEEP_FN(forward_blocked)(const sweep_acoustic_params *p,
                                      const sweep_acoustic_fields *f, const sweep_point *src,
                                      const sweep_point *rec, sweep_int t0, sweep_int n_steps,
                                      int n_threads) {
  const sweep_blocking b = SWEEP_FN(blocking)(p);
  /* Pipelined when every thread can have a tile (and its counters fit in memory). */
  if (SWEEP_NDIM == 3 && n_threads <= b.n_ytiles &&
      SWEEP_FN(forward_pipelined)(p, f, &b, src, rec, t0, n_steps, n_threads))
    return;
  const sweep_int T = b.steps;
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    for (sweep_int tb = t0; tb < t0 + n_steps; tb += T) {
      const sweep_int nb = t0 + n_steps - tb < T ? t0 + n_steps - tb : T;
      const sweep_int n_stages = SWEEP_FN(stage_count)(&b, nb);
      for (sweep_int tile = 0; tile < b.n_ytiles; ++tile) {
        for (sweep_int k = 0; k < n_stages; ++k) {
          /* Only the steps s with a plane group in stage k (0 <= k - s lag <
           * n_groups) share the stage out: while the wavefront fills and
           * drains, a split over every step left one thread idle. */
          sweep_int s_lo, s_hi;
          SWEEP_FN(stage_steps)(&b, nb, k, &s_lo, &s_hi);
          const sweep_int ns = s_hi - s_lo + 1;
          const sweep_int n_items = p->n_shots * ns * b.n_chunks;
#pragma omp for schedule(static)
          for (sweep_int item = 0; item < n_items; ++item) {
            const sweep_int c = item % b.n_chunks, s = s_lo + (item / b.n_chunks) % ns;
            SWEEP_FN(blocked_item)(p, f, &b, src, rec, pa, pb, t0, tb, item / (b.n_chunks * ns), s,
                                   tile, k, c);
          }
        }
      }
    }
    sweep_restore_fp(fp_state);
  }
}

/*
 * Receiver data are (shot, receiver, step): one step's receivers are a cache
 * line (and often a page) apart.  The unblocked loops keep the last
 * SWEEP_REC_STEPS steps in a (shot, step, receiver) buffer instead and move
 * them as runs of steps (2D 300 x 1000, 5,000 receivers per shot: 209-215 ->
 * 175-191 us per step).  NULL (direct access) when there are no receivers or no memory.
 */
#define SWEEP_REC_STEPS 32
static SWEEP_R *SWEEP_FN(receiver_buffer)(const sweep_acoustic_params *p,
                                          const sweep_acoustic_fields *f) {
  if (!f->rec || p->n_rec <= 0) return NULL;
  return (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->n_shots * SWEEP_REC_STEPS * p->n_rec);
}

/*
 * Shots are independent, so when the threads divide them evenly (one thread
 * included) each thread runs whole shots, one single-shot call each
 * (sub_problem: the same call restricted to shots [shot0, shot0 + n)), with
 * no barrier per step and the working set of one shot.  Measured on 2
 * threads, 2D 300 x 1000, 4 shots, full storage gradient: 1.01-1.05 s ->
 * 0.92-0.98 s against all threads sharing every step.
 */
static inline int SWEEP_FN(split_by_shot)(const sweep_acoustic_params *p, int n_threads) {
  return p->n_shots > 1 && p->n_shots % n_threads == 0;
}

static void SWEEP_FN(sub_problem)(const sweep_acoustic_params *p, const sweep_acoustic_fields *f,
                                  sweep_int shot0, sweep_int n, sweep_acoustic_params *q,
                                  sweep_acoustic_fields *g) {
  *q = *p;
  *g = *f;
  q->n_shots = n;
  const sweep_int fo = shot0 * p->shot_stride;
#define SWEEP_OFF(ptr, k) ((ptr) ? (void *)((SWEEP_R *)(ptr) + (k)) : NULL)
  g->u_prev = SWEEP_OFF(f->u_prev, fo);
  g->u = SWEEP_OFF(f->u, fo);
  for (int d = 0; d < 3; ++d) {
    g->psi[d] = SWEEP_OFF(f->psi[d], fo);
    g->psi_new[d] = SWEEP_OFF(f->psi_new[d], fo);
    g->zeta[d] = SWEEP_OFF(f->zeta[d], fo);
    g->zeta_new[d] = SWEEP_OFF(f->zeta_new[d], fo);
  }
  g->grad_v2dt2 = SWEEP_OFF(f->grad_v2dt2, fo);
  g->recon_u = SWEEP_OFF(f->recon_u, fo);
  g->recon_u_next = SWEEP_OFF(f->recon_u_next, fo);
  g->src_amp = SWEEP_OFF(f->src_amp, shot0 * p->n_src * p->nt);
  g->grad_src = SWEEP_OFF(f->grad_src, shot0 * p->n_src * p->nt);
  g->rec = SWEEP_OFF(f->rec, shot0 * p->n_rec * p->nt);
  g->store = SWEEP_OFF(f->store, shot0 * SWEEP_FN(store_cells)(p));
  g->band_u = SWEEP_OFF(f->band_u, shot0 * p->n_band);
  g->band_w = SWEEP_OFF(f->band_w, shot0 * p->n_band);
  g->replay_w = SWEEP_OFF(f->replay_w, shot0 * p->n_outer);
#undef SWEEP_OFF
  g->src_idx = f->src_idx ? f->src_idx + shot0 * p->n_src : NULL;
  g->rec_idx = f->rec_idx ? f->rec_idx + shot0 * p->n_rec : NULL;
}

typedef void (*SWEEP_FN(run_fn))(const sweep_acoustic_params *, const sweep_acoustic_fields *,
                                 sweep_int, sweep_int, int);

static void SWEEP_FN(run_by_shot)(SWEEP_FN(run_fn) run, const sweep_acoustic_params *p,
                                  const sweep_acoustic_fields *f, sweep_int t, sweep_int n_steps,
                                  int n_threads) {
#pragma omp parallel for num_threads(n_threads) schedule(static)
  for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
    sweep_acoustic_params q;
    sweep_acoustic_fields g;
    SWEEP_FN(sub_problem)(p, f, shot, 1, &q, &g);
    run(&q, &g, t, n_steps, 1);
  }
}

void SWEEP_FN(sweep_acoustic_forward)(const sweep_acoustic_params *p,
                                      const sweep_acoustic_fields *f, sweep_int t0,
                                      sweep_int n_steps, int n_threads) {
  if (SWEEP_FN(split_by_shot)(p, n_threads)) {
    SWEEP_FN(run_by_shot)(SWEEP_FN(sweep_acoustic_forward), p, f, t0, n_steps, n_threads);
    return;
  }
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int mc = SWEEP_FN(store_cells)(p);
  const sweep_int mlo2 = p->model_lo[2];
  const sweep_int slo2 = p->store_lo[2], s2 = p->store_hi[2] - p->store_lo[2];
  /* CPML replay: band_u is an input (loaded into u each step) and W of the
   * outer cells goes to replay_w; otherwise band_u/band_w receive the band. */
  const int replay = f->replay_w != NULL;
  const sweep_int n_band = f->band_idx ? p->n_band : 0;
  const sweep_int n_save = replay ? 0 : n_band;
  const int free_surface = SWEEP_FN(has_free_surface)(p);
  if (p->block_steps > 1 && !f->store && !n_band && !replay && !free_surface) {
    sweep_point *src = f->src_amp ? sweep_sorted_points(f->src_idx, p->n_shots, p->n_src) : NULL;
    sweep_point *rec = f->rec ? sweep_sorted_points(f->rec_idx, p->n_shots, p->n_rec) : NULL;
    const int ok = (src || !f->src_amp || p->n_src == 0) && (rec || !f->rec || p->n_rec == 0);
    if (ok) SWEEP_FN(forward_blocked)(p, f, src, rec, t0, n_steps, n_threads);
    free(src);
    free(rec);
    if (ok) return;
  }
  const SWEEP_R *v2dt2 = (const SWEEP_R *)f->v2dt2;
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
  SWEEP_R *rbuf = SWEEP_FN(receiver_buffer)(p, f);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_R *u_prev = (SWEEP_R *)f->u_prev, *u = (SWEEP_R *)f->u;
    void *psi_all[3], *psi_new_all[3];
    for (int d = 0; d < 3; ++d) {
      psi_all[d] = f->psi[d];
      psi_new_all[d] = f->psi_new[d];
    }
    /* W^n of one row, copied into the compact snapshot (model cells only)
     * and/or the band save. */
    SWEEP_R *wrow = f->store || n_band || replay
                        ? (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->shape[2])
                        : NULL;
    for (sweep_int t = t0; t < t0 + n_steps; ++t) {
      const sweep_int slot = f->store ? SWEEP_FN(store_slot)(p, t, t0) : -1;
      SWEEP_R *store = slot >= 0 ? (SWEEP_R *)f->store + slot * p->slot_shots * mc : NULL;
      SWEEP_R *bu = n_band ? (SWEEP_R *)f->band_u + (t - t0) * p->slot_shots * n_band : NULL;
      SWEEP_R *bw = n_save ? (SWEEP_R *)f->band_w + (t - t0) * p->slot_shots * n_band : NULL;
      SWEEP_R *rw = replay ? (SWEEP_R *)f->replay_w + (t - t0) * p->slot_shots * p->n_outer : NULL;
      if (replay) {
        /* The band's u^t, saved by the forward pass: the inner boundary of the CPML. */
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          for (sweep_int j = 0; j < n_band; ++j)
            u[shot * ss + f->band_idx[j]] = bu[shot * n_band + j];
      }
#pragma omp for schedule(static)
      for (sweep_int item = 0; item < n_items; ++item) {
        const sweep_int shot = item / n_tiles;
        const sweep_int y0 = h + (item % n_tiles) * SWEEP_TILE_Y;
        const sweep_int y1 = y0 + SWEEP_TILE_Y < p->shape[1] - h ? y0 + SWEEP_TILE_Y : p->shape[1] - h;
        const sweep_int off = shot * ss;
        SWEEP_R *psi[3], *psi_new[3], *zeta[3];
        SWEEP_FN(shot_axes)(psi_all, off, psi);
        SWEEP_FN(shot_axes)(psi_new_all, off, psi_new);
        SWEEP_FN(shot_axes)(f->zeta, off, zeta);
        for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z) {
          for (sweep_int y = y0; y < y1; ++y) {
            const int outer = SWEEP_FN(row_mask)(p, z, y);
            const sweep_int srow = store ? SWEEP_FN(store_row)(p, z, y) : -1;
            const sweep_int brow = n_save ? f->band_row[z * p->shape[1] + y] : -1;
            const sweep_int orow = replay ? f->outer_row[z * p->shape[1] + y] : -1;
            SWEEP_R *wr = srow >= 0 || brow >= 0 || orow >= 0 ? wrow : NULL;
            if (replay && !outer) {
              if (orow >= 0)
                SWEEP_FN(fwd_edge_row)(p, v2dt2, u + off, u_prev + off, psi, psi_new, zeta, pa,
                                       pb, wr, z, y);
            } else {
              SWEEP_FN(fwd_full_row)(p, v2dt2, u + off, u_prev + off, psi, psi_new, zeta, pa,
                                     pb, wr, z, y);
            }
            if (orow >= 0) SWEEP_FN(copy_outer_row)(p, rw + shot * p->n_outer + orow, wr, outer);
            if (srow >= 0)
              sweep_stream_copy(store + shot * mc + srow, wr + slo2, sizeof(SWEEP_R) * s2);
            if (brow >= 0) {
              /* Band cells of this row, in band_idx order: the whole model row,
               * or its ends when the row is plain in z and y. */
              SWEEP_R *bu_s = bu + shot * n_band + brow, *bw_s = bw + shot * n_band + brow;
              const SWEEP_R *u_row = u + off + z * p->stride[0] + y * p->stride[1];
              const sweep_int mhi2 = p->model_hi[2];
              sweep_int a, b, k = 0;
              SWEEP_FN(row_ends)(p, mhi2, outer, &a, &b);
              for (sweep_int x = mlo2; x < a; ++x, ++k) {
                bu_s[k] = u_row[x];
                bw_s[k] = wr[x];
              }
              for (sweep_int x = b; x < mhi2; ++x, ++k) {
                bu_s[k] = u_row[x];
                bw_s[k] = wr[x];
              }
            }
          }
        }
      }
      /* Receivers record u^t; sources add -v^2 dt^2 f^t to u^{t+1} (now in u_prev). */
#pragma omp for schedule(static)
      for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
        const sweep_int off = shot * ss;
        if (f->rec) {
          SWEEP_R *rec = (SWEEP_R *)f->rec;
          const sweep_int *ri = f->rec_idx + shot * p->n_rec;
          if (rbuf) {
            /* Steps gather in a (step, receiver) buffer and reach the
             * (receiver, step) output a run of steps at a time. */
            const sweep_int j = (t - t0) % SWEEP_REC_STEPS;
            SWEEP_R *b = rbuf + shot * SWEEP_REC_STEPS * p->n_rec;
            for (sweep_int r = 0; r < p->n_rec; ++r) b[j * p->n_rec + r] = u[off + ri[r]];
            if (j == SWEEP_REC_STEPS - 1 || t == t0 + n_steps - 1)
              for (sweep_int r = 0; r < p->n_rec; ++r) {
                SWEEP_R *o = rec + (shot * p->n_rec + r) * p->nt + t - j;
                for (sweep_int k = 0; k <= j; ++k) o[k] = b[k * p->n_rec + r];
              }
          } else {
            for (sweep_int r = 0; r < p->n_rec; ++r)
              rec[(shot * p->n_rec + r) * p->nt + t] = u[off + ri[r]];
          }
        }
        if (f->src_amp) {
          const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
          for (sweep_int k = 0; k < p->n_src; ++k) {
            const sweep_int i = off + f->src_idx[shot * p->n_src + k];
            u_prev[i] -= v2dt2[i - off] * amp[(shot * p->n_src + k) * p->nt + t];
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
    if (wrow) sweep_stream_fence();
    free(wrow);
    sweep_restore_fp(fp_state);
  }
  free(rbuf);
}

/* Flags per (shot, z, y) row: 1 where the row holds a source whose term
 * enters the model gradient, whose correlation then must not be deferred
 * (see sweep_acoustic_backward).  NULL when no row has one; *ok is 0 when
 * memory is short (the caller then defers nothing). */
static unsigned char *SWEEP_FN(source_rows)(const sweep_acoustic_params *p,
                                            const sweep_acoustic_fields *f, int *ok) {
  *ok = 1;
  if (!f->src_amp || p->n_src <= 0) return NULL;
  const sweep_int rows = p->shape[0] * p->shape[1];
  unsigned char *m = (unsigned char *)calloc((size_t)(p->n_shots * rows), 1);
  if (!m) {
    *ok = 0;
    return NULL;
  }
  for (sweep_int s = 0; s < p->n_shots; ++s)
    for (sweep_int k = 0; k < p->n_src; ++k)
      m[s * rows + f->src_idx[s * p->n_src + k] / p->stride[1]] = 1;
  return m;
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
#define SWEEP_ADJ_ROW(x0, x1, m) \
  SWEEP_FN(adj_row)(p, v2dt2, mu, mu_prev, P, Pn, Z, Zn, pa, pb, base, z, y, x0, x1, m)
#define SWEEP_ROW_SEGMENTS(m) SWEEP_ROW_IN_ORDER(SWEEP_ADJ_ROW, m, (void)0)
  SWEEP_MASK_SWITCH(outer, SWEEP_ROW_SEGMENTS)
#undef SWEEP_ADJ_ROW
#undef SWEEP_ROW_SEGMENTS
}

/*
 * Adjoint steps t_end - 1 down to t_end - n_steps, in mu = v^2 dt^2 lambda
 * (f->u and f->u_prev hold mu; see acoustic_stencil.h).  The model gradient
 * (sum of mu^{t+1} W^t, to be divided by v^2 dt^2 by the caller) comes from
 * the compact snapshots in f->store (full storage and checkpointing) or,
 * with f->recon_u set (boundary saving), from the forward wavefield run
 * backwards on the plain cells plus W^t saved on the band and, for the CPML
 * cells, W^t of the segment's replay in f->replay_w (slot 0: step t_begin).
 * band_w slot 0 is step t_begin; band_u slot 0 is step t_begin - 1.
 */
void SWEEP_FN(sweep_acoustic_backward)(const sweep_acoustic_params *p,
                                       const sweep_acoustic_fields *f, sweep_int t_end,
                                       sweep_int n_steps, int n_threads) {
  if (SWEEP_FN(split_by_shot)(p, n_threads)) {
    SWEEP_FN(run_by_shot)(SWEEP_FN(sweep_acoustic_backward), p, f, t_end, n_steps, n_threads);
    return;
  }
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int t_begin = t_end - n_steps;
  const sweep_int mc = SWEEP_FN(store_cells)(p);
  const sweep_int slo2 = p->store_lo[2];
  const int recon = f->recon_u != NULL && f->grad_v2dt2 != NULL;
  const sweep_int n_band = recon && f->band_idx ? p->n_band : 0;
  const int free_surface = SWEEP_FN(has_free_surface)(p);
  const SWEEP_R *v2dt2 = (const SWEEP_R *)f->v2dt2;
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
  SWEEP_R *rbuf = SWEEP_FN(receiver_buffer)(p, f);
  /*
   * Snapshot correlations in pairs: step t's term mu^{t+1} W^t is left to
   * step t - 1, which adds it and its own mu^t W^{t-1} in one pass over the
   * gradient row (mu^{t+1} is still in mu_prev until the stencil of step
   * t - 1 overwrites the row), so the gradient is read and written every
   * other step.  Each cell receives the same additions in the same order, so
   * the result does not depend on the pairing (strategies that split the
   * steps into other calls stay bitwise equal).  Rows holding a source are
   * never deferred: its gradient term, added after the step's rows, must
   * follow that step's correlation.
   */
  const sweep_int rows_per_shot = p->shape[0] * p->shape[1];
  int pairing = 0; /* set by source_rows: 1 unless its flags got no memory */
  unsigned char *src_rows =
      f->store && f->grad_v2dt2 && !recon ? SWEEP_FN(source_rows)(p, f, &pairing) : NULL;
  const sweep_int n_s2 = p->store_hi[2] - slo2;
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_R *mu_prev = (SWEEP_R *)f->u_prev, *mu = (SWEEP_R *)f->u;
    SWEEP_R *ru_next = (SWEEP_R *)f->recon_u_next, *ru = (SWEEP_R *)f->recon_u;
    void *P_all[3], *Pn_all[3], *Z_all[3], *Zn_all[3];
    for (int d = 0; d < 3; ++d) {
      P_all[d] = f->psi[d];
      Pn_all[d] = f->psi_new[d];
      Z_all[d] = f->zeta[d];
      Zn_all[d] = f->zeta_new[d];
    }
    SWEEP_R *grad_all = (SWEEP_R *)f->grad_v2dt2;
    const SWEEP_R *deferred = NULL;
    for (sweep_int t = t_end - 1; t >= t_begin; --t) {
      const sweep_int slot = f->store && grad_all ? SWEEP_FN(store_slot)(p, t, t_begin) : -1;
      const SWEEP_R *store = slot >= 0 ? (const SWEEP_R *)f->store + slot * p->slot_shots * mc : NULL;
      /* held: the snapshots of step t + 1, whose correlation this step does. */
      const SWEEP_R *held = deferred;
      const int defer = pairing && store && !held && t > t_begin &&
                        SWEEP_FN(store_slot)(p, t - 1, t_begin) >= 0;
      deferred = defer ? store : NULL;
#pragma omp for schedule(static)
      for (sweep_int item = 0; item < n_items; ++item) {
        const sweep_int shot = item / n_tiles;
        const sweep_int y0 = h + (item % n_tiles) * SWEEP_TILE_Y;
        const sweep_int y1 = y0 + SWEEP_TILE_Y < p->shape[1] - h ? y0 + SWEEP_TILE_Y : p->shape[1] - h;
        const sweep_int off = shot * ss;
        SWEEP_R *P[3], *Pn[3], *Z[3], *Zn[3];
        SWEEP_FN(shot_axes)(P_all, off, P);
        SWEEP_FN(shot_axes)(Pn_all, off, Pn);
        SWEEP_FN(shot_axes)(Z_all, off, Z);
        SWEEP_FN(shot_axes)(Zn_all, off, Zn);
        const SWEEP_R *mu_s = mu + off;
        SWEEP_R *grad = grad_all ? grad_all + off : NULL;
        for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z) {
          for (sweep_int y = y0; y < y1; ++y) {
            const sweep_int base = z * p->stride[0] + y * p->stride[1];
            const sweep_int srow = store || held ? SWEEP_FN(store_row)(p, z, y) : -1;
            if (srow >= 0) {
              /* Before the stencil, which overwrites mu_prev's row. */
              const int fixed = src_rows && src_rows[shot * rows_per_shot + z * p->shape[1] + y];
              const sweep_int o = base + slo2;
              SWEEP_FN(adj_correlate)(grad + o, mu_s + o, store ? store + shot * mc + srow : NULL,
                                      mu_prev + off + o,
                                      held && !fixed ? held + shot * mc + srow : NULL,
                                      defer && !fixed, n_s2);
            }
            SWEEP_FN(adj_full_row)(p, v2dt2, mu_s, mu_prev + off, P, Pn, Z, Zn, pa, pb, z, y);
            /* z and y plain (no outer mask): [plain_lo, plain_hi) of x is plain. */
            if (recon && !SWEEP_FN(row_mask)(p, z, y)) {
              sweep_int x0 = p->plain_lo[2];
#if SWEEP_HAVE_VEC
              if (p->simd_rows)
                x0 = SWEEP_FN(recon_row_vec)(p, v2dt2, ru + off, ru_next + off, mu_s, grad, base,
                                             x0, p->plain_hi[2]);
#endif
#pragma omp simd
              for (sweep_int x = x0; x < p->plain_hi[2]; ++x)
                SWEEP_FN(acoustic_recon_point)(p, v2dt2, ru + off, ru_next + off, mu_s, grad,
                                               base + x);
            }
          }
        }
      }
      /* Source terms use mu^{t+1} (still in mu); residuals of u^t, times
       * v^2 dt^2, go into mu^t. */
#pragma omp for schedule(static)
      for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
        const sweep_int off = shot * ss;
        for (sweep_int k = 0; k < p->n_src; ++k) {
          const sweep_int j = f->src_idx[shot * p->n_src + k];
          const sweep_int a = (shot * p->n_src + k) * p->nt + t;
          if (f->grad_src) ((SWEEP_R *)f->grad_src)[a] = -mu[off + j];
          /* With sampling (store_every k > 1) the caller scales the gradient by k,
           * so the source term is sampled like the snapshots. */
          if (grad_all && f->src_amp && t % p->store_every == 0)
            grad_all[off + j] -= ((const SWEEP_R *)f->src_amp)[a] * mu[off + j];
        }
        if (f->rec) {
          const SWEEP_R *res = (const SWEEP_R *)f->rec;
          const sweep_int *ri = f->rec_idx + shot * p->n_rec;
          if (rbuf) {
            /* The residuals of a run of steps, read once per run into a
             * (step, receiver) buffer. */
            const sweep_int j = (t_end - 1 - t) % SWEEP_REC_STEPS;
            SWEEP_R *b = rbuf + shot * SWEEP_REC_STEPS * p->n_rec;
            if (j == 0) {
              const sweep_int n = t - t_begin + 1 < SWEEP_REC_STEPS ? t - t_begin + 1 : SWEEP_REC_STEPS;
              for (sweep_int r = 0; r < p->n_rec; ++r) {
                const SWEEP_R *o = res + (shot * p->n_rec + r) * p->nt + t;
                for (sweep_int k = 0; k < n; ++k) b[k * p->n_rec + r] = o[-k];
              }
            }
            for (sweep_int r = 0; r < p->n_rec; ++r)
              mu_prev[off + ri[r]] += v2dt2[ri[r]] * b[j * p->n_rec + r];
          } else {
            for (sweep_int r = 0; r < p->n_rec; ++r)
              mu_prev[off + ri[r]] += v2dt2[ri[r]] * res[(shot * p->n_rec + r) * p->nt + t];
          }
        }
        if (recon) {
          /* Band cells: W^t was saved; u^{t-1} is restored from the save. */
          const sweep_int b0 = ((t - t_begin) * p->slot_shots + shot) * n_band;
          const SWEEP_R *bw = (const SWEEP_R *)f->band_w + b0;
          for (sweep_int j = 0; j < n_band; ++j) {
            const sweep_int i = off + f->band_idx[j];
            grad_all[i] += mu[i] * bw[j];
          }
          if (f->replay_w) {
            /* CPML cells: W^t from the replay of this segment. */
            const SWEEP_R *rw =
                (const SWEEP_R *)f->replay_w + ((t - t_begin) * p->slot_shots + shot) * p->n_outer;
            for (sweep_int q = 0; q < p->n_cpml; ++q) {
              const sweep_int j = f->cpml_pos[q];
              const sweep_int i = off + f->outer_idx[j];
              grad_all[i] += mu[i] * rw[j];
            }
          }
          if (f->src_amp) {
            const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
            for (sweep_int k = 0; k < p->n_src; ++k) {
              const sweep_int j = f->src_idx[shot * p->n_src + k];
              ru_next[off + j] -= v2dt2[j] * amp[(shot * p->n_src + k) * p->nt + t];
            }
          }
          if (t > 0) {
            const SWEEP_R *bu = (const SWEEP_R *)f->band_u + b0;
            for (sweep_int j = 0; j < n_band; ++j) ru_next[off + f->band_idx[j]] = bu[j];
          }
        }
      }
      if (free_surface) {
        SWEEP_FN(fill_ghosts)(p, mu_prev);
        if (recon) SWEEP_FN(fill_ghosts)(p, ru_next);
      }
      SWEEP_R *tmp = mu_prev;
      mu_prev = mu;
      mu = tmp;
      tmp = ru_next;
      ru_next = ru;
      ru = tmp;
      for (int d = 0; d < 3; ++d) {
        void *tp = P_all[d];
        P_all[d] = Pn_all[d];
        Pn_all[d] = tp;
        tp = Z_all[d];
        Z_all[d] = Zn_all[d];
        Zn_all[d] = tp;
      }
    }
    sweep_restore_fp(fp_state);
  }
  free(rbuf);
  free(src_rows);
}

#include "acoustic_stencil_undef.h"
#undef SWEEP_HAVE_VEC
#undef SWEEP_STENCIL_KEEP_MACROS
#undef SWEEP_MASK_SWITCH
#undef SWEEP_ROW_IN_ORDER
#undef SWEEP_REC_STEPS
#undef SWEEP_TILE_Y
#undef SWEEP_N_TILES
#undef SWEEP_Z_BEGIN
#undef SWEEP_Z_END
