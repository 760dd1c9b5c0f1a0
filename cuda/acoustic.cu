/*
 * CUDA kernels of the constant-density acoustic equation.
 *
 * Compiled at run time by CuPy (NVRTC) with a preamble that defines
 * SWEEP_NDIM, SWEEP_ORDER, SWEEP_REAL, SWEEP_SUFFIX and the FD coefficients
 * (rendered from sweep/_fd.py); see sweep/_cuda_backend.py.  The per-point
 * arithmetic is acoustic_stencil.h, the same code the CPU kernels run, so the
 * two backends cannot drift apart.  One step is: stencil kernel, then
 * sources/receivers (one thread per shot, sequential within a shot so
 * repeated locations accumulate deterministically), then free-surface ghosts.
 */
#include "sweep_common.h"
#include "acoustic_stencil.h"

#define R SWEEP_REAL
#define H (SWEEP_ORDER / 2)
#define FN(name) SWEEP_CAT3(name, _, SWEEP_SUFFIX)

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

extern "C" __global__ void acoustic_forward(const sweep_acoustic_params p,
                                            const sweep_acoustic_fields f, sweep_int step) {
  sweep_int shot, c[3];
  if (!sweep_thread_point(p, &shot, c)) return;
  const sweep_int off = shot * p.shot_stride;
  const sweep_int i = c[0] * p.stride[0] + c[1] * p.stride[1] + c[2];
  R *psi[3], *psi_new[3], *zeta[3];
  const R *pa[3], *pb[3];
  sweep_axes(f.psi, off, psi);
  sweep_axes(f.psi_new, off, psi_new);
  sweep_axes(f.zeta, off, zeta);
  for (int d = 0; d < 3; ++d) {
    pa[d] = (const R *)f.pml_a[d];
    pb[d] = (const R *)f.pml_b[d];
  }
  R *store = f.store ? (R *)f.store + (step * p.n_shots + shot) * p.shot_stride : (R *)0;
  FN(acoustic_fwd_point)(&p, (const R *)f.v2dt2, (const R *)f.u + off, (R *)f.u_prev + off,
                         psi, psi_new, zeta, pa, pb, store, i, c[0], c[1], c[2],
                         sweep_pml_mask(p, c) | (store ? SWEEP_STORE : 0));
}

extern "C" __global__ void acoustic_forward_sources(const sweep_acoustic_params p,
                                                    const sweep_acoustic_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots) return;
  const sweep_int off = shot * p.shot_stride;
  const R *v2dt2 = (const R *)f.v2dt2;
  if (f.rec) {
    for (sweep_int r = 0; r < p.n_rec; ++r)
      ((R *)f.rec)[(shot * p.n_rec + r) * p.nt + t] =
          ((const R *)f.u)[off + f.rec_idx[shot * p.n_rec + r]];
  }
  if (f.src_amp) {
    for (sweep_int k = 0; k < p.n_src; ++k) {
      const sweep_int j = f.src_idx[shot * p.n_src + k];
      ((R *)f.u_prev)[off + j] -= v2dt2[j] * ((const R *)f.src_amp)[(shot * p.n_src + k) * p.nt + t];
    }
  }
}

/* Odd mirror into the ghost rows of face (axis d, side); one thread per ghost cell. */
extern "C" __global__ void acoustic_ghosts(const sweep_acoustic_params p, R *field, int d, int side) {
  const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
  const sweep_int n1 = p.shape[e1], n2 = p.shape[e2];
  const sweep_int total = p.n_shots * H * n1 * n2;
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= total) return;
  const sweep_int j2 = item % n2;
  const sweep_int j1 = (item / n2) % n1;
  const sweep_int gk = (item / (n2 * n1)) % H;
  const sweep_int shot = item / (n2 * n1 * H);
  const sweep_int surface = side ? p.shape[d] - 1 - H : H;
  const sweep_int g = side ? p.shape[d] - H + gk : gk;
  const sweep_int mirror = 2 * surface - g;
  R *fs = field + shot * p.shot_stride + j1 * p.stride[e1] + j2 * p.stride[e2];
  fs[g * p.stride[d]] = -fs[mirror * p.stride[d]];
}

extern "C" __global__ void acoustic_adjoint(const sweep_acoustic_params p,
                                            const sweep_acoustic_fields f, sweep_int step) {
  sweep_int shot, c[3];
  if (!sweep_thread_point(p, &shot, c)) return;
  const sweep_int off = shot * p.shot_stride;
  const sweep_int i = c[0] * p.stride[0] + c[1] * p.stride[1] + c[2];
  R *P[3], *Pn[3], *Z[3], *Zn[3];
  const R *pa[3], *pb[3];
  sweep_axes(f.psi, off, P);
  sweep_axes(f.psi_new, off, Pn);
  sweep_axes(f.zeta, off, Z);
  sweep_axes(f.zeta_new, off, Zn);
  for (int d = 0; d < 3; ++d) {
    pa[d] = (const R *)f.pml_a[d];
    pb[d] = (const R *)f.pml_b[d];
  }
  const R *store =
      f.store ? (const R *)f.store + (step * p.n_shots + shot) * p.shot_stride : (const R *)0;
  R *grad = f.grad_v2dt2 && store ? (R *)f.grad_v2dt2 + off : (R *)0;
  FN(acoustic_adj_point)(&p, (const R *)f.v2dt2, (const R *)f.u + off, (R *)f.u_prev + off, P,
                         Pn, Z, Zn, pa, pb, store, grad, i, c[0], c[1], c[2],
                         sweep_pml_mask(p, c) | (grad ? SWEEP_STORE : 0));
}

extern "C" __global__ void acoustic_adjoint_sources(const sweep_acoustic_params p,
                                                    const sweep_acoustic_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots) return;
  const sweep_int off = shot * p.shot_stride;
  const R *v2dt2 = (const R *)f.v2dt2;
  const R *lam = (const R *)f.u;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k];
    const sweep_int a = (shot * p.n_src + k) * p.nt + t;
    if (f.grad_src) ((R *)f.grad_src)[a] = -v2dt2[j] * lam[off + j];
    if (f.grad_v2dt2 && f.src_amp)
      ((R *)f.grad_v2dt2)[off + j] -= ((const R *)f.src_amp)[a] * lam[off + j];
  }
  if (f.rec) {
    for (sweep_int r = 0; r < p.n_rec; ++r)
      ((R *)f.u_prev)[off + f.rec_idx[shot * p.n_rec + r]] +=
          ((const R *)f.rec)[(shot * p.n_rec + r) * p.nt + t];
  }
}
