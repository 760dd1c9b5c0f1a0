/*
 * What the CUDA kernels of every equation share (acoustic.cu, lsrtm.cu,
 * vrz.cu): the thread -> point map, CPML masks, per-shot pointers, compact
 * snapshot indices, the debug index checks, and the bodies of the kernels
 * that only move values: receivers, the adjoint's residual injection and
 * free-surface ghosts (each .cu file wraps them in its own extern "C"
 * kernels, which the host tests find in its text).  C++ (the fields record
 * is a template parameter); included after sweep_common.h and the equation's
 * stencil header (SWEEP_REAL, SWEEP_ORDER come from the preamble of
 * sweep/_cuda_backend.py); one module per specialisation, so no include
 * guard is needed.
 */
#define R SWEEP_REAL
#define H (SWEEP_ORDER / 2)
#define FN(name) SWEEP_CAT3(name, _, SWEEP_SUFFIX)

/* Debug builds (SWEEP_DEBUG, defined by the preamble in debug mode): every
 * source and receiver index must point at a model cell of its shot, or the
 * kernel prints which one and stops (__trap).  sweep/_debug.py does the same
 * test on the host.  Without SWEEP_DEBUG the checks compile to nothing. */
#ifdef SWEEP_DEBUG
#ifndef SWEEP_DEBUG_FAIL
#define SWEEP_DEBUG_FAIL(what, shot, k, j)                                                 \
  do {                                                                                     \
    printf("sweep debug: %s %lld of shot %lld has kernel index %lld, not a model cell\n", \
           what, (long long)(k), (long long)(shot), (long long)(j));                      \
    __trap();                                                                              \
  } while (0)
#endif
__device__ __forceinline__ bool sweep_is_model_cell(const sweep_acoustic_params &p, sweep_int j) {
  if (j < 0 || j >= p.shot_stride) return false;
  const sweep_int c[3] = {j / p.stride[0], j % p.stride[0] / p.stride[1], j % p.stride[1]};
  for (int d = 0; d < 3; ++d)
    if (c[d] < p.model_lo[d] || c[d] >= p.model_hi[d]) return false;
  return true;
}
#define SWEEP_CHECK_INDEX(what, shot, k, j) \
  do {                                      \
    if (!sweep_is_model_cell(p, (j))) {     \
      SWEEP_DEBUG_FAIL(what, shot, k, j);   \
      return;                               \
    }                                       \
  } while (0)
#else
#define SWEEP_CHECK_INDEX(what, shot, k, j) ((void)0)
#endif

/* Thread -> (shot, z, y, x) over the active (non-halo) region. */
__device__ __forceinline__ bool sweep_thread_point(const sweep_acoustic_params &p, sweep_int *shot,
                                                   sweep_int *c) {
  const sweep_int x = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x + H;
  const sweep_int y = (sweep_int)blockIdx.y * blockDim.y + threadIdx.y + H;
  const sweep_int nz = SWEEP_NDIM == 3 ? p.shape[0] - 2 * H : 1;
  const sweep_int zs = blockIdx.z;
  *shot = zs / nz;
  c[0] = zs % nz + (SWEEP_NDIM == 3 ? H : 0);
  c[1] = y;
  c[2] = x;
  return x < p.shape[2] - H && y < p.shape[1] - H && *shot < p.n_shots;
}

/* Bit d set when point c needs the CPML terms along axis d. */
__device__ __forceinline__ int sweep_pml_mask(const sweep_acoustic_params &p, const sweep_int *c) {
  int mask = 0;
  for (int d = 3 - SWEEP_NDIM; d < 3; ++d)
    if (c[d] < p.plain_lo[d] || c[d] >= p.plain_hi[d]) mask |= 1 << d;
  return mask;
}

__device__ __forceinline__ void sweep_axes(void *const *src, sweep_int off, R **dst) {
  for (int d = 0; d < 3; ++d) dst[d] = src[d] ? (R *)src[d] + off : (R *)0;
}

/* Index of cell c in a compact snapshot ([store_lo, store_hi): the model and
 * its CPML), or -1 outside it. */
__device__ __forceinline__ sweep_int sweep_store_index(const sweep_acoustic_params &p,
                                                       const sweep_int *c) {
  for (int d = 0; d < 3; ++d)
    if (c[d] < p.store_lo[d] || c[d] >= p.store_hi[d]) return -1;
  const sweep_int m1 = p.store_hi[1] - p.store_lo[1], m2 = p.store_hi[2] - p.store_lo[2];
  return ((c[0] - p.store_lo[0]) * m1 + (c[1] - p.store_lo[1])) * m2 + (c[2] - p.store_lo[2]);
}

__device__ __forceinline__ sweep_int sweep_store_cells(const sweep_acoustic_params &p) {
  return (p.store_hi[0] - p.store_lo[0]) * (p.store_hi[1] - p.store_lo[1]) *
         (p.store_hi[2] - p.store_lo[2]);
}

/* Position of cell c in outer_idx (the CPML and the band, in flat order), or
 * -1 for a plain cell: a row outside the plain cells in z or y is outer as a
 * whole, others at their two x ends (copy_outer_row on the CPU). */
__device__ __forceinline__ sweep_int sweep_outer_pos(const sweep_acoustic_params &p,
                                                     const sweep_int *outer_row,
                                                     const sweep_int *c, int mask) {
  const sweep_int r = outer_row[c[0] * p.shape[1] + c[1]];
  if (r < 0) return -1;
  if (mask & 3) return r + c[2] - p.store_lo[2];
  if (c[2] < p.plain_lo[2]) return r + c[2] - p.store_lo[2];
  if (c[2] >= p.plain_hi[2]) return r + (p.plain_lo[2] - p.store_lo[2]) + c[2] - p.plain_hi[2];
  return -1;
}

/* Position of cell c in band_idx (the model cells that are not plain, in
 * flat order), or -1: a model row outside the plain cells in z or y is band
 * as a whole, others at their two x ends (row_ends of the CPU skeleton,
 * clamped the same way on narrow models). */
/* Boundary saving's ring (ring_code: 4 * cell + the axis of its psi), one
 * thread per (shot, ring cell j): item = shot * n_ring + j.  Returns the cell
 * (in one shot's grid), its shot's offset and the axis.  A slot of replay_u
 * holds value v at (v * n_shots + shot) * n_ring + j. */
__device__ __forceinline__ sweep_int sweep_ring_cell(const sweep_acoustic_params &p,
                                                     const sweep_int *ring_code, sweep_int item,
                                                     sweep_int *off, int *d) {
  const sweep_int code = ring_code[item % p.n_ring];
  *off = item / p.n_ring * p.shot_stride;
  *d = (int)(code & 3);
  return code >> 2;
}

/* The ring kernels of an equation of one wavefield (u, psi; acoustic and
 * VRZ).  Save (CPML replay, after the band's load): u^t and psi^t along the
 * cell's axis to replay_u.  Load (adjoint, before the step): u^t into
 * recon_u and psi^t into recon_u_next, whose ring cells the step reads
 * nowhere else (the band's W, acoustic_w_band_point). */
template <class F>
__device__ __forceinline__ void sweep_ring_save(const sweep_acoustic_params &p, const F &f,
                                                sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_ring) return;
  sweep_int off;
  int d;
  const sweep_int i = sweep_ring_cell(p, f.ring_code, item, &off, &d);
  const sweep_int vs = p.n_shots * p.n_ring;
  R *out = (R *)f.replay_u + 2 * slot * vs + item;
  out[0] = ((const R *)f.u)[off + i];
  out[vs] = ((const R *)f.psi[d])[off + i];
}

template <class F>
__device__ __forceinline__ void sweep_ring_load(const sweep_acoustic_params &p, const F &f,
                                                sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_ring) return;
  sweep_int off;
  int d;
  const sweep_int i = sweep_ring_cell(p, f.ring_code, item, &off, &d);
  const sweep_int vs = p.n_shots * p.n_ring;
  const R *in = (const R *)f.replay_u + 2 * slot * vs + item;
  ((R *)f.recon_u)[off + i] = in[0];
  ((R *)f.recon_u_next)[off + i] = in[vs];
}

__device__ __forceinline__ sweep_int sweep_band_pos(const sweep_acoustic_params &p,
                                                    const sweep_int *band_row,
                                                    const sweep_int *c, int mask) {
  const sweep_int r = band_row[c[0] * p.shape[1] + c[1]];
  const sweep_int lo = p.model_lo[2], hi = p.model_hi[2];
  if (r < 0 || c[2] < lo || c[2] >= hi) return -1;
  const int outer = (mask & 3) != 0;
  const sweep_int a = outer || p.plain_lo[2] > hi ? hi : p.plain_lo[2];
  const sweep_int b = outer || p.plain_hi[2] < a ? hi : p.plain_hi[2];
  if (c[2] < a) return r + c[2] - lo;
  if (c[2] >= b) return r + (a - lo) + c[2] - b;
  return -1;
}

/* Image cell gk of face (axis d, side) of field, as mirror_axis does on the
 * CPU (cpu_rows.h): item enumerates (shot, gk < layers, the face's cells);
 * half = 1 for a field staggered along d (its images start half a cell out:
 * h of them on the low side, h + 1 on the high one).  Forward: the image is
 * sign times its mirror cell; adjoint: it is folded back onto the mirror
 * cell and zeroed.  One image per thread, each its own mirror cell. */
__device__ __forceinline__ void sweep_mirror_cell(const sweep_acoustic_params &p, R *field, int d,
                                                  int side, sweep_int item, sweep_int layers,
                                                  int half, R sign, int adjoint) {
  const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
  const sweep_int n1 = p.shape[e1], n2 = p.shape[e2];
  if (item >= p.n_shots * layers * n1 * n2) return;
  const sweep_int j2 = item % n2;
  const sweep_int j1 = (item / n2) % n1;
  const sweep_int gk = (item / (n2 * n1)) % layers;
  const sweep_int shot = item / (n2 * n1 * layers);
  if (gk >= H + (side ? half : 0)) return;
  const sweep_int surface = side ? p.shape[d] - 1 - H : H;
  const sweep_int g = side ? p.shape[d] - H - half + gk : gk;
  const sweep_int mirror = 2 * surface - g - half;
  R *fs = field + shot * p.shot_stride + j1 * p.stride[e1] + j2 * p.stride[e2];
  if (adjoint) {
    fs[mirror * p.stride[d]] += sign * fs[g * p.stride[d]];
    fs[g * p.stride[d]] = 0;
  } else {
    fs[g * p.stride[d]] = sign * fs[mirror * p.stride[d]];
  }
}

/* Odd mirror of field into one ghost cell (item) of face (axis d, side). */
__device__ __forceinline__ void sweep_mirror_ghost(const sweep_acoustic_params &p, R *field,
                                                   int d, int side, sweep_int item) {
  sweep_mirror_cell(p, field, d, side, item, H, 0, (R)-1, 0);
}

/* Receivers record *at(shot, index): one thread per (shot, receiver); check:
 * the index is a model cell (debug builds; single-field equations). */
template <class F, class At>
__device__ __forceinline__ void sweep_record_at(const sweep_acoustic_params &p, const F &f,
                                                sweep_int t, int check, At at) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_rec) return;
  const sweep_int shot = item / p.n_rec;
  if (check) SWEEP_CHECK_INDEX("receiver", shot, item % p.n_rec, f.rec_idx[item]);
  ((R *)f.rec)[item * p.nt + t] = *at(shot, f.rec_idx[item]);
}

/* Receivers record u^t. */
template <class F>
__device__ __forceinline__ void sweep_record(const sweep_acoustic_params &p, const F &f,
                                             sweep_int t) {
  const R *u = (const R *)f.u;
  sweep_record_at(p, f, t, 1, [&](sweep_int shot, sweep_int j) { return u + shot * p.shot_stride + j; });
}

/* Adjoint receiver injection: one thread per (shot, receiver cell) group
 * (rec_groups: shot, index, first, end into rec_order); the receivers of one
 * cell add in receiver order (as on the CPU), times c, into
 * target(shot, index, &c), or nowhere where it returns NULL. */
template <class F, class Target>
__device__ __forceinline__ void sweep_inject_at(const sweep_acoustic_params &p, const F &f,
                                                sweep_int t, int check, Target target) {
  const sweep_int g = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= p.n_rec_groups) return;
  const sweep_int *grp = f.rec_groups + 4 * g;
  if (check) SWEEP_CHECK_INDEX("receiver", grp[0], f.rec_order[grp[2]] % p.n_rec, grp[1]);
  R c = 1;
  R *m = target(grp[0], grp[1], &c);
  if (!m) return;
  for (sweep_int k = grp[2]; k < grp[3]; ++k)
    *m += c * ((const R *)f.rec)[f.rec_order[k] * p.nt + t];
}

/* Adjoint receiver injection into mu_prev (all shots), in mu = coef lambda
 * (coef: the factor of W in the update, acoustic's v^2 dt^2). */
template <class F>
__device__ __forceinline__ void sweep_inject_residuals(const sweep_acoustic_params &p,
                                                       const F &f, R *mu_prev, const R *coef,
                                                       sweep_int t) {
  sweep_inject_at(p, f, t, 1, [&](sweep_int shot, sweep_int j, R *c) {
    *c = coef[j];
    return mu_prev + shot * p.shot_stride + j;
  });
}
