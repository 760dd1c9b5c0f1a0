/*
 * The CUDA kernels' bodies every staggered first-order system shares
 * (elastic.cu, maxwell.cu), the device side of cpu_phased.h and
 * cpu_staggered_hooks.h: two in-place phases per step, each as rows (one
 * thread per cell), sources (one thread per shot, its terms in order, as on
 * the CPU), receivers (one thread per receiver term forward, per receiver
 * cell in the adjoint) and the images behind free faces (one thread per
 * image cell of a face; the faces one launch after another, in the CPU's
 * order).  sweep/_cuda_backend.py launches them in this order:
 *   forward phase k: rows, sources, record (phase STAG_RECORD_PHASE),
 *     images of set k;
 *   adjoint phase k (k = 1, 0): rows, the adjoint's gather at the image
 *     cells of set 1 - k, residuals, the images of set 1 - k folded back,
 *     the sources' gradients (of step t, or t - 1 in phase 0).
 * Sources and receivers are single-cell terms, index field * shot_stride +
 * cell (sweep._points.KernelTerms).
 *
 * The equation's .cu file names its kernels with STAG_KERNELS(equation) (and
 * STAG_BS_KERNELS(equation) with boundary saving: <equation>_forward, ...;
 * the host tests read them from the preprocessed source) and defines, before
 * including this header (after sweep_common.h, its stencil header and
 * sweep_cuda.h):
 *   STAG_CTX                       its context type (pointers of one call)
 *   STAG_CTX_INIT(p, f, e)         fill *e for shot 0 (p, f pointers)
 *   STAG_SHOT(e, off)              the context offset to a shot
 *   STAG_FWD(e, i, c, mask, k, W, vs), STAG_ADJ(e, i, c, mask, k, st, vs)
 *                                  forward phase k at cell i (snapshot values
 *                                  to W[v * vs] or NULL), and its adjoint
 *                                  (snapshot st[v * vs] or NULL)
 *   STAG_SNAP_VALUES, STAG_GRAD_SLOT  as cpu_staggered_hooks.h
 *   STAG_SOURCE(e, k, F, off, cell, a), STAG_SOURCE_ADJ(e, k, F, off, cell,
 *                                  amp, gs, model): a source term in phase
 *                                  k and its adjoint (e of shot 0)
 *   STAG_RECORD_PHASE              the forward phase after which receivers record
 *   STAG_RESIDUAL(F, k)            whether adjoint phase k injects the
 *                                  residuals of field F
 *   STAG_IMAGE(set, F, d, sign)    0, or 1 (2) when field F has images of set
 *                                  set across the free faces of axis d on
 *                                  the nodes (half a cell out); *sign their sign
 *   STAG_HALO(p, e, q, c, set)     the adjoint's gather at image cell q of set
 */

/* The thread's cell: its shot, coordinates, index and the shot's context. */
__device__ __forceinline__ bool stag_point(const sweep_acoustic_params &p,
                                           const sweep_elastic_fields &f, sweep_int *shot,
                                           sweep_int c[3], sweep_int *i, STAG_CTX *e) {
  if (!sweep_thread_point(p, shot, c)) return false;
  *i = c[0] * p.stride[0] + c[1] * p.stride[1] + c[2];
  STAG_CTX base;
  STAG_CTX_INIT(&p, &f, &base);
  *e = STAG_SHOT(&base, *shot * p.shot_stride);
  return true;
}

/* Where cell c of shot keeps its snapshot values in slot (null: none stored). */
__device__ __forceinline__ R *stag_snapshot(const sweep_acoustic_params &p,
                                            const sweep_elastic_fields &f, sweep_int slot,
                                            sweep_int shot, const sweep_int c[3]) {
  if (!f.store || slot < 0) return (R *)0;
  const sweep_int m = sweep_store_index(p, c);
  if (m < 0) return (R *)0;
  const sweep_int vs = p.n_shots * sweep_store_cells(p);
  return (R *)f.store + slot * STAG_SNAP_VALUES * vs + shot * sweep_store_cells(p) + m;
}

__device__ __forceinline__ void stag_forward(const sweep_acoustic_params &p,
                                             const sweep_elastic_fields &f, sweep_int slot,
                                             int phase) {
  sweep_int shot, c[3], i;
  STAG_CTX e;
  if (!stag_point(p, f, &shot, c, &i, &e)) return;
  STAG_FWD(&e, i, c, sweep_pml_mask(p, c), phase, stag_snapshot(p, f, slot, shot, c),
           p.n_shots * sweep_store_cells(p));
}

__device__ __forceinline__ void stag_adjoint(const sweep_acoustic_params &p,
                                             const sweep_elastic_fields &f, sweep_int slot,
                                             int phase) {
  sweep_int shot, c[3], i;
  STAG_CTX e;
  if (!stag_point(p, f, &shot, c, &i, &e)) return;
  const R *st = f.grad[STAG_GRAD_SLOT] ? stag_snapshot(p, f, slot, shot, c) : (const R *)0;
  STAG_ADJ(&e, i, c, sweep_pml_mask(p, c), phase, st, p.n_shots * sweep_store_cells(p));
}

/* Sources of phase k (forward: step t; adjoint: the gradients of step t, or
 * t - 1 in phase 0, once the adjoint field is complete). */
__device__ __forceinline__ void stag_sources(const sweep_acoustic_params &p,
                                             const sweep_elastic_fields &f, sweep_int t,
                                             int phase, int adjoint) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots || !p.n_src) return;
  const sweep_int ss = p.shot_stride, off = shot * ss;
  const sweep_int ts = adjoint && !phase ? t - 1 : t;
  if (ts < 0) return;
  STAG_CTX e;
  STAG_CTX_INIT(&p, &f, &e);
  const R *amp = (const R *)f.src_amp;
  R *gs = (R *)f.grad_src;
  const int model = f.store && amp && ts % p.store_every == 0;
  if (!adjoint && !amp) return;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k], F = j / ss, cell = j - F * ss;
    const sweep_int a = (shot * p.n_src + k) * p.nt + ts;
    if (adjoint)
      STAG_SOURCE_ADJ(&e, phase, F, off, cell, amp ? amp + a : (const R *)0,
                      gs ? gs + a : (R *)0, model);
    else
      STAG_SOURCE(&e, phase, F, off, cell, amp[a]);
  }
}

/* The field cell of term index j (field * shot_stride + cell) of a shot. */
__device__ __forceinline__ R *stag_term_cell(const sweep_acoustic_params &p,
                                             const sweep_elastic_fields &f, sweep_int shot,
                                             sweep_int j) {
  const sweep_int F = j / p.shot_stride;
  return (R *)f.field[F] + shot * p.shot_stride + (j - F * p.shot_stride);
}

__device__ __forceinline__ void stag_record(const sweep_acoustic_params &p,
                                            const sweep_elastic_fields &f, sweep_int t,
                                            int phase) {
  if (phase != STAG_RECORD_PHASE) return;
  sweep_record_at(p, f, t, 0,
                  [&](sweep_int shot, sweep_int j) { return stag_term_cell(p, f, shot, j); });
}

__device__ __forceinline__ void stag_residuals(const sweep_acoustic_params &p,
                                               const sweep_elastic_fields &f, sweep_int t,
                                               int phase) {
  sweep_inject_at(p, f, t, 0, [&](sweep_int shot, sweep_int j, R *) {
    return STAG_RESIDUAL(j / p.shot_stride, phase) ? stag_term_cell(p, f, shot, j) : (R *)0;
  });
}

/* The images of set `set` across face (axis d, side): every field that has
 * them, one image cell per thread (h + 1 layers: half-cell images reach one
 * further on the high side). */
__device__ __forceinline__ void stag_images(const sweep_acoustic_params &p,
                                            const sweep_elastic_fields &f, int d, int side,
                                            int set, int adjoint) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  for (int F = 0; F < 9; ++F) {
    R sign = 0;
    const int kind = STAG_IMAGE(set, F, d, &sign);
    if (kind)
      sweep_mirror_cell(p, (R *)f.field[F], d, side, item, H + 1, kind == 2, sign, adjoint);
  }
}

/* The adjoint's gather at the halo cells of face (axis d, side) (h layers),
 * each cell once: those of an earlier free face (lower axis) are its. */
__device__ __forceinline__ void stag_halo(const sweep_acoustic_params &p,
                                          const sweep_elastic_fields &f, int d, int side,
                                          int set) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
  const sweep_int n1 = p.shape[e1], n2 = p.shape[e2];
  if (item >= p.n_shots * H * n1 * n2) return;
  sweep_int c[3];
  c[e2] = item % n2;
  c[e1] = (item / n2) % n1;
  const sweep_int gk = (item / (n2 * n1)) % H, shot = item / (n2 * n1 * H);
  c[d] = side ? p.shape[d] - H + gk : gk;
  for (int b = 3 - SWEEP_NDIM; b < d; ++b)
    if ((p.free_lo[b] && c[b] < H) || (p.free_hi[b] && c[b] >= p.shape[b] - H)) return;
  STAG_CTX base;
  STAG_CTX_INIT(&p, &f, &base);
  const STAG_CTX e = STAG_SHOT(&base, shot * p.shot_stride);
  STAG_HALO(p, &e, c[0] * p.stride[0] + c[1] * p.stride[1] + c[2], c, set);
}

#ifdef STAG_BOUNDARY
/* Boundary saving (cpu_phased.h's band save, bs_replay and bs_reverse on the
 * device; sweep/_cuda_backend.py launches them in the CPU's order).  The
 * equation defines STAG_BS_SPLIT (the fields of phase 0 are [0, split), of
 * phase 1 the rest; a snapshot has one value per field) and
 * STAG_REVERSE(e, i, c, k, W, vs): phase k undone at plain cell i. */

/* Fields [F0, F1) at the cells of the band (which 0: band_idx, band_u) or
 * of the ring (1: ring_idx, replay_u), slot `slot`, one thread per (shot,
 * cell): to_grid 0 saves them, 1 loads them. */
__device__ __forceinline__ void stag_bs_copy(const sweep_acoustic_params &p,
                                             const sweep_elastic_fields &f, sweep_int slot,
                                             int which, int F0, int F1, int to_grid) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  const sweep_int n = which ? p.n_ring : p.n_band;
  if (item >= p.n_shots * n) return;
  const sweep_int shot = item / n, r = item - shot * n;
  const sweep_int cell = (which ? f.ring_idx : f.band_idx)[r];
  R *c = (R *)(which ? f.replay_u : f.band_u) + slot * STAG_SNAP_VALUES * p.n_shots * n;
  for (int F = F0; F < F1; ++F) {
    R *g = (R *)f.field[F] + shot * p.shot_stride + cell, *x = c + (F * p.n_shots + shot) * n + r;
    if (to_grid)
      *g = *x;
    else
      *x = *g;
  }
}

/* Phase k at one cell, one thread per cell: reverse 0, the CPML replay (the
 * cells with C-PML terms, snapshot values to replay_w's slot); reverse 1,
 * the reconstruction (the plain cells undone, snapshot values to store's). */
__device__ __forceinline__ void stag_bs_rows(const sweep_acoustic_params &p,
                                             const sweep_elastic_fields &f, sweep_int slot,
                                             int phase, int reverse) {
  sweep_int shot, c[3];
  if (!sweep_thread_point(p, &shot, c)) return;
  const int mask = sweep_pml_mask(p, c);
  if (reverse ? mask != 0 : mask == 0) return;
  const sweep_int i = c[0] * p.stride[0] + c[1] * p.stride[1] + c[2];
  STAG_CTX base;
  STAG_CTX_INIT(&p, &f, &base);
  const STAG_CTX e = STAG_SHOT(&base, shot * p.shot_stride);
  if (reverse) {
    const sweep_int mc = sweep_store_cells(p), vs = p.n_shots * mc;
    R *W = (R *)f.store + slot * STAG_SNAP_VALUES * vs + shot * mc + sweep_store_index(p, c);
    STAG_REVERSE(&e, i, c, phase, W, vs);
  } else {
    const sweep_int vs = p.n_shots * p.n_outer;
    R *W = (R *)f.replay_w + slot * STAG_SNAP_VALUES * vs + shot * p.n_outer +
           sweep_outer_pos(p, f.outer_row, c, mask);
    STAG_FWD(&e, i, c, mask, phase, W, vs);
  }
}

/* The reconstruction's snapshot values of the cells with C-PML terms (outer_idx),
 * from replay_w's slot into store's, one thread per (shot, cell). */
__device__ __forceinline__ void stag_bs_outer(const sweep_acoustic_params &p,
                                              const sweep_elastic_fields &f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  const sweep_int n = p.n_outer;
  if (item >= p.n_shots * n) return;
  const sweep_int shot = item / n, k = item - shot * n, cell = f.outer_idx[k];
  sweep_int c[3];
  c[0] = cell / p.stride[0];
  c[1] = (cell - c[0] * p.stride[0]) / p.stride[1];
  c[2] = cell - c[0] * p.stride[0] - c[1] * p.stride[1];
  const sweep_int mc = sweep_store_cells(p), vs = p.n_shots * mc, vo = p.n_shots * n;
  R *dst = (R *)f.store + slot * STAG_SNAP_VALUES * vs + shot * mc + sweep_store_index(p, c);
  const R *src = (const R *)f.replay_w + slot * STAG_SNAP_VALUES * vo + shot * n + k;
  for (int v = 0; v < STAG_SNAP_VALUES; ++v) dst[v * vs] = src[v * vo];
}

/* The sources of phase k of step t taken away (the reconstruction), one thread per shot. */
__device__ __forceinline__ void stag_bs_sources(const sweep_acoustic_params &p,
                                                const sweep_elastic_fields &f, sweep_int t,
                                                int phase) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots || !p.n_src || !f.src_amp) return;
  const sweep_int ss = p.shot_stride, off = shot * ss;
  STAG_CTX e;
  STAG_CTX_INIT(&p, &f, &e);
  const R *amp = (const R *)f.src_amp;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k], F = j / ss, cell = j - F * ss;
    STAG_SOURCE(&e, phase, F, off, cell, -amp[(shot * p.n_src + k) * p.nt + t]);
  }
}

/* Boundary saving's kernels of equation eq (eq_bs_copy, ...). */
#define STAG_BS_KERNELS(eq)                                                                    \
  extern "C" __global__ void eq##_bs_copy(const sweep_acoustic_params p,                       \
                                          const sweep_elastic_fields f, sweep_int slot,        \
                                          int which, int f0, int f1, int to_grid) {            \
    stag_bs_copy(p, f, slot, which, f0, f1, to_grid);                                          \
  }                                                                                            \
  extern "C" __global__ void eq##_bs_rows(const sweep_acoustic_params p,                       \
                                          const sweep_elastic_fields f, sweep_int slot,        \
                                          int phase, int reverse) {                            \
    stag_bs_rows(p, f, slot, phase, reverse);                                                  \
  }                                                                                            \
  extern "C" __global__ void eq##_bs_outer(const sweep_acoustic_params p,                      \
                                           const sweep_elastic_fields f, sweep_int slot) {     \
    stag_bs_outer(p, f, slot);                                                                 \
  }                                                                                            \
  extern "C" __global__ void eq##_bs_sources(const sweep_acoustic_params p,                    \
                                             const sweep_elastic_fields f, sweep_int t,        \
                                             int phase) {                                      \
    stag_bs_sources(p, f, t, phase);                                                           \
  }
#endif

/* The kernels of equation eq (eq_forward, ...); slot: the compact snapshot
 * slot of the step, or -1 (not stored). */
#define STAG_KERNELS(eq)                                                                       \
  extern "C" __global__ void eq##_forward(const sweep_acoustic_params p,                       \
                                          const sweep_elastic_fields f, sweep_int slot,        \
                                          int phase) {                                         \
    stag_forward(p, f, slot, phase);                                                           \
  }                                                                                            \
  extern "C" __global__ void eq##_adjoint(const sweep_acoustic_params p,                       \
                                          const sweep_elastic_fields f, sweep_int slot,        \
                                          int phase) {                                         \
    stag_adjoint(p, f, slot, phase);                                                           \
  }                                                                                            \
  extern "C" __global__ void eq##_forward_sources(const sweep_acoustic_params p,               \
                                                  const sweep_elastic_fields f, sweep_int t,   \
                                                  int phase) {                                 \
    stag_sources(p, f, t, phase, 0);                                                           \
  }                                                                                            \
  extern "C" __global__ void eq##_adjoint_sources(const sweep_acoustic_params p,               \
                                                  const sweep_elastic_fields f, sweep_int t,   \
                                                  int phase) {                                 \
    stag_sources(p, f, t, phase, 1);                                                           \
  }                                                                                            \
  extern "C" __global__ void eq##_record(const sweep_acoustic_params p,                        \
                                         const sweep_elastic_fields f, sweep_int t, int phase) { \
    stag_record(p, f, t, phase);                                                               \
  }                                                                                            \
  extern "C" __global__ void eq##_inject_residuals(const sweep_acoustic_params p,              \
                                                   const sweep_elastic_fields f, sweep_int t,  \
                                                   int phase) {                                \
    stag_residuals(p, f, t, phase);                                                            \
  }                                                                                            \
  extern "C" __global__ void eq##_images(const sweep_acoustic_params p,                        \
                                         const sweep_elastic_fields f, int d, int side,        \
                                         int set, int adjoint) {                               \
    stag_images(p, f, d, side, set, adjoint);                                                  \
  }                                                                                            \
  extern "C" __global__ void eq##_halo(const sweep_acoustic_params p,                          \
                                       const sweep_elastic_fields f, int d, int side, int set) { \
    stag_halo(p, f, d, side, set);                                                             \
  }
