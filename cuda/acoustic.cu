/*
 * CUDA kernels of the constant-density acoustic equation.
 *
 * Compiled at run time by CuPy (NVRTC) with a preamble that defines
 * SWEEP_NDIM, SWEEP_ORDER, SWEEP_REAL, SWEEP_SUFFIX and the FD coefficients
 * (rendered from sweep/_fd.py); see sweep/_cuda_backend.py.  The per-point
 * arithmetic is acoustic_stencil.h, the same code the CPU kernels run, so the
 * two backends cannot drift apart; sweep_cuda.h holds the device helpers
 * every equation's kernels share.  One step is: stencil kernel, then
 * receivers (one thread per receiver, or per receiver cell in the adjoint so
 * that repeated locations accumulate in a fixed order), sources (one thread
 * per shot, sequential within a shot for the same reason), then free-surface
 * ghosts.
 */
#include "sweep_common.h"
#include "acoustic_stencil.h"
#include "sweep_cuda.h"

/* slot: compact snapshot slot of this step, or -1 (not stored). */
extern "C" __global__ void acoustic_forward(const sweep_acoustic_params p,
                                            const sweep_acoustic_fields f, sweep_int slot) {
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
  const int mask = sweep_pml_mask(p, c);
  /* The CPML replay holds the outer cells only (band u loaded each step). */
  if (f.replay_w && !mask) return;
  const R w = FN(acoustic_fwd_point)(&p, (const R *)f.v2dt2, (const R *)f.u + off,
                                     (R *)f.u_prev + off, psi, psi_new, zeta, pa, pb, i, c[0],
                                     c[1], c[2], mask);
  if (f.store && slot >= 0) {
    const sweep_int m = sweep_store_index(p, c);
    if (m >= 0) ((R *)f.store)[(slot * p.n_shots + shot) * sweep_store_cells(p) + m] = w;
  }
  if (f.replay_w) {
    const sweep_int o = sweep_outer_pos(p, f.outer_row, c, mask);
    if (o >= 0) ((R *)f.replay_w)[(slot * p.n_shots + shot) * p.n_outer + o] = w;
  }
}

/* CPML replay: the band's saved u^t into u before the step. */
extern "C" __global__ void acoustic_band_load(const sweep_acoustic_params p,
                                              const sweep_acoustic_fields f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band) return;
  const sweep_int shot = item / p.n_band, j = item % p.n_band;
  ((R *)f.u)[shot * p.shot_stride + f.band_idx[j]] =
      ((const R *)f.band_u)[slot * p.n_shots * p.n_band + item];
}

/* Boundary saving, adjoint: correlate the CPML cells with W^t of the replay. */
extern "C" __global__ void acoustic_replay_correlate(const sweep_acoustic_params p,
                                                     const sweep_acoustic_fields f,
                                                     sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_cpml) return;
  const sweep_int shot = item / p.n_cpml, j = f.cpml_pos[item % p.n_cpml];
  const sweep_int i = shot * p.shot_stride + f.outer_idx[j];
  ((R *)f.grad_v2dt2)[i] +=
      ((const R *)f.u)[i] * ((const R *)f.replay_w)[(slot * p.n_shots + shot) * p.n_outer + j];
}

/* Boundary saving, forward: u^t of the band (before the step's swap). */
extern "C" __global__ void acoustic_band_save(const sweep_acoustic_params p,
                                              const sweep_acoustic_fields f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band) return;
  const sweep_int shot = item / p.n_band, j = item % p.n_band;
  ((R *)f.band_u)[slot * p.n_shots * p.n_band + item] =
      ((const R *)f.u)[shot * p.shot_stride + f.band_idx[j]];
}

/* CPML replay: u^t and psi^t of the ring (sweep_ring_save). */
extern "C" __global__ void acoustic_ring_save(const sweep_acoustic_params p,
                                              const sweep_acoustic_fields f, sweep_int slot) {
  sweep_ring_save(p, f, slot);
}

/* Boundary saving, adjoint, before the step: the ring's state into the
 * reconstruction (sweep_ring_load). */
extern "C" __global__ void acoustic_ring_load(const sweep_acoustic_params p,
                                              const sweep_acoustic_fields f, sweep_int slot) {
  sweep_ring_load(p, f, slot);
}

extern "C" __global__ void acoustic_forward_sources(const sweep_acoustic_params p,
                                                    const sweep_acoustic_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots) return;
  const sweep_int off = shot * p.shot_stride;
  const R *v2dt2 = (const R *)f.v2dt2;
  if (f.src_amp) {
    for (sweep_int k = 0; k < p.n_src; ++k) {
      const sweep_int j = f.src_idx[shot * p.n_src + k];
      SWEEP_CHECK_INDEX("source", shot, k, j);
      ((R *)f.u_prev)[off + j] -= v2dt2[j] * ((const R *)f.src_amp)[(shot * p.n_src + k) * p.nt + t];
    }
  }
}

/* Receivers record u^t: one thread per (shot, receiver). */
extern "C" __global__ void acoustic_record(const sweep_acoustic_params p,
                                           const sweep_acoustic_fields f, sweep_int t) {
  sweep_record(p, f, t);
}

/* Adjoint receiver injection, in mu = v^2 dt^2 lambda (sweep_cuda.h). */
extern "C" __global__ void acoustic_inject_residuals(const sweep_acoustic_params p,
                                                     const sweep_acoustic_fields f, sweep_int t) {
  sweep_inject_residuals(p, f, (R *)f.u_prev, (const R *)f.v2dt2, t);
}

/* Odd mirror into the ghost rows of face (axis d, side); one thread per ghost cell. */
extern "C" __global__ void acoustic_ghosts(const sweep_acoustic_params p, R *field, int d, int side) {
  sweep_mirror_ghost(p, field, d, side, (sweep_int)blockIdx.x * blockDim.x + threadIdx.x);
}

/*
 * Adjoint step, in mu = v^2 dt^2 lambda (acoustic_stencil.h).  slot >= 0:
 * correlate with the compact snapshot of that slot
 * (full storage).  f.recon_u set: also run the forward wavefield one step
 * backwards on the plain cells, correlating there, and correlate the band
 * with its W^t recomputed from the reconstruction and the ring (boundary
 * saving).
 */
extern "C" __global__ void acoustic_adjoint(const sweep_acoustic_params p,
                                            const sweep_acoustic_fields f, sweep_int slot) {
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
  const R *mu = (const R *)f.u + off;
  const int mask = sweep_pml_mask(p, c);
  FN(acoustic_adj_point)(&p, (const R *)f.v2dt2, mu, (R *)f.u_prev + off, P, Pn, Z, Zn, pa, pb,
                         i, c[0], c[1], c[2], mask);
  if (!f.grad_v2dt2) return;
  R *grad = (R *)f.grad_v2dt2 + off;
  if (f.store && slot >= 0) {
    const sweep_int m = sweep_store_index(p, c);
    if (m >= 0)
      grad[i] += mu[i] * ((const R *)f.store)[(slot * p.n_shots + shot) * sweep_store_cells(p) + m];
  }
  if (f.recon_u && !mask)
    FN(acoustic_recon_point)(&p, (const R *)f.v2dt2, (const R *)f.recon_u + off,
                             (R *)f.recon_u_next + off, mu, grad, i);
  else if (f.recon_u && f.replay_u && sweep_band_pos(p, f.band_row, c, mask) >= 0)
    FN(acoustic_recon_band_point)(&p, (const R *)f.recon_u + off, (const R *)f.recon_u_next + off,
                                  mu, grad, i, c[0], c[1], c[2], mask);
}

/* Boundary saving, adjoint: restore u^{t-1} of the band (after
 * acoustic_adjoint_sources, which removes the sources from recon_u_next; the
 * band's correlation is acoustic_adjoint's). */
extern "C" __global__ void acoustic_band_restore(const sweep_acoustic_params p,
                                                 const sweep_acoustic_fields f, sweep_int slot,
                                                 int restore_u) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band || !restore_u) return;
  const sweep_int shot = item / p.n_band, j = item % p.n_band;
  ((R *)f.recon_u_next)[shot * p.shot_stride + f.band_idx[j]] =
      ((const R *)f.band_u)[slot * p.n_shots * p.n_band + item];
}

extern "C" __global__ void acoustic_adjoint_sources(const sweep_acoustic_params p,
                                                    const sweep_acoustic_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots) return;
  const sweep_int off = shot * p.shot_stride;
  const R *v2dt2 = (const R *)f.v2dt2;
  const R *mu = (const R *)f.u;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k];
    SWEEP_CHECK_INDEX("source", shot, k, j);
    const sweep_int a = (shot * p.n_src + k) * p.nt + t;
    if (f.grad_src) ((R *)f.grad_src)[a] = -mu[off + j];
    /* Sampled like the snapshots (the caller scales by store_every). */
    if (f.grad_v2dt2 && f.src_amp && t % p.store_every == 0)
      ((R *)f.grad_v2dt2)[off + j] -= ((const R *)f.src_amp)[a] * mu[off + j];
  }
  if (f.recon_u && f.grad_v2dt2 && f.src_amp) {
    /* u^{t+1} held the source term of step t; the backward step removes it. */
    for (sweep_int k = 0; k < p.n_src; ++k) {
      const sweep_int j = f.src_idx[shot * p.n_src + k];
      SWEEP_CHECK_INDEX("source", shot, k, j);
      ((R *)f.recon_u_next)[off + j] -=
          v2dt2[j] * ((const R *)f.src_amp)[(shot * p.n_src + k) * p.nt + t];
    }
  }
}
