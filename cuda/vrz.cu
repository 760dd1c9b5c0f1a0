/*
 * CUDA kernels of the VRZ equation (variable density, velocity and
 * impedance), compiled at run time like acoustic.cu (sweep/_cuda_backend.py)
 * over the point arithmetic of vrz_stencil.h, which the CPU kernels run too.
 * One step is: stencil kernel (the adjoint's also adds the model gradients
 * of its cell from the step's snapshot), receivers, sources, free-surface
 * ghosts.  Boundary saving: the forward keeps the band's u (band_u; the
 * CPML replay, the outer cells' snapshot values replay_w and the ring's
 * state replay_u); the adjoint first rebuilds the step's snapshot in slot 0
 * of store (vrz_recon_snapshot, which also runs u backwards on the plain
 * cells), then correlates it as full storage does (SWEEP_EQ_RECON_SNAPSHOT
 * of the CPU skeleton).
 */
#include "sweep_common.h"
#include "vrz_stencil.h"
#include "sweep_cuda.h"

/* Values per cell of a snapshot: W, u and psi of each axis (value v of shot
 * s in slot k at ((k * V + v) * n_shots + s) * cells). */
#define SNAP_VALUES (2 + SWEEP_NDIM)

/* The snapshot values of a cell (value v at st[v * vs]): W, u and psi of each axis. */
__device__ __forceinline__ void vrz_put_snapshot(R *st, sweep_int vs, R w, R u, R *const *psi,
                                                 sweep_int i) {
  st[0] = w;
  st[vs] = u;
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) st[(2 + d - SWEEP_FIRST_AXIS) * vs] = psi[d] ? psi[d][i] : (R)0;
}

/* slot: compact snapshot slot of this step, or -1 (not stored); in the CPML
 * replay the step's slot of replay_w. */
extern "C" __global__ void vrz_forward(const sweep_acoustic_params p, const sweep_vrz_fields f,
                                       sweep_int slot) {
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
  const R *u = (const R *)f.u + off;
  const int mask = sweep_pml_mask(p, c);
  /* The CPML replay holds the outer cells only (the band's u loaded each step). */
  if (f.replay_w && !mask) return;
  const R w = FN(vrz_fwd_point)(&p, (const R *)f.kappa_dt2, (const R *)f.buoyancy, u,
                                (R *)f.u_prev + off, psi, psi_new, zeta, pa, pb, i, c[0], c[1],
                                c[2], mask);
  if (f.replay_w) {
    const sweep_int o = sweep_outer_pos(p, f.outer_row, c, mask);
    const sweep_int vs = p.n_shots * p.n_outer;
    if (o >= 0)
      vrz_put_snapshot((R *)f.replay_w + slot * SNAP_VALUES * vs + shot * p.n_outer + o, vs, w,
                       u[i], psi, i);
    return;
  }
  if (!f.store || slot < 0) return;
  const sweep_int m = sweep_store_index(p, c);
  if (m < 0) return;
  const sweep_int vs = p.n_shots * sweep_store_cells(p);
  vrz_put_snapshot((R *)f.store + slot * SNAP_VALUES * vs + shot * sweep_store_cells(p) + m, vs,
                   w, u[i], psi, i);
}

/* CPML replay: the band's saved u^t into u before the step. */
extern "C" __global__ void vrz_band_load(const sweep_acoustic_params p, const sweep_vrz_fields f,
                                         sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band) return;
  const sweep_int shot = item / p.n_band, j = item % p.n_band;
  ((R *)f.u)[shot * p.shot_stride + f.band_idx[j]] =
      ((const R *)f.band_u)[slot * p.n_shots * p.n_band + item];
}

/* Boundary saving, forward: u^t of the band. */
extern "C" __global__ void vrz_band_save(const sweep_acoustic_params p, const sweep_vrz_fields f,
                                         sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band) return;
  const sweep_int shot = item / p.n_band, j = item % p.n_band;
  ((R *)f.band_u)[slot * p.n_shots * p.n_band + item] =
      ((const R *)f.u)[shot * p.shot_stride + f.band_idx[j]];
}

/*
 * Boundary saving, adjoint, before vrz_adjoint: the snapshot of step t in
 * slot 0 of store.  Plain cells: u runs one step backwards (recon_u: u^t;
 * recon_u_next: u^{t+1}, receives u^{t-1}; the forward update with no CPML
 * axis, vrz_fwd_point's), W^t, u^t and psi^t = 0; band cells the same, W^t
 * from the reconstruction, the band's u^t and the ring's state
 * (vrz_w_band_point, after vrz_ring_load); the CPML's from the replay (slot:
 * the step's slot of replay_w).
 */
extern "C" __global__ void vrz_recon_snapshot(const sweep_acoustic_params p,
                                              const sweep_vrz_fields f, sweep_int slot) {
  sweep_int shot, c[3];
  if (!sweep_thread_point(p, &shot, c)) return;
  const sweep_int m = sweep_store_index(p, c);
  if (m < 0) return;
  const sweep_int off = shot * p.shot_stride;
  const sweep_int i = c[0] * p.stride[0] + c[1] * p.stride[1] + c[2];
  const sweep_int vs = p.n_shots * sweep_store_cells(p);
  R *st = (R *)f.store + shot * sweep_store_cells(p) + m;
  const int mask = sweep_pml_mask(p, c);
  if (!mask) {
    R *none[3] = {0, 0, 0}; /* no CPML terms: never read */
    const R *pa[3], *pb[3];
    for (int d = 0; d < 3; ++d) {
      pa[d] = (const R *)f.pml_a[d];
      pb[d] = (const R *)f.pml_b[d];
    }
    const R *ru = (const R *)f.recon_u + off;
    const R w = FN(vrz_fwd_point)(&p, (const R *)f.kappa_dt2, (const R *)f.buoyancy, ru,
                                  (R *)f.recon_u_next + off, none, none, none, pa, pb, i, c[0],
                                  c[1], c[2], 0);
    vrz_put_snapshot(st, vs, w, ru[i], none, i);
    return;
  }
  if (sweep_band_pos(p, f.band_row, c, mask) >= 0) {
    R *none[3] = {0, 0, 0}; /* psi^t of a model cell: zero */
    const R *ru = (const R *)f.recon_u + off;
    const R w = FN(vrz_w_band_point)(&p, (const R *)f.buoyancy, ru,
                                     (const R *)f.recon_u_next + off, i, c[0], c[1], c[2], mask);
    vrz_put_snapshot(st, vs, w, ru[i], none, i);
    return;
  }
  const sweep_int o = sweep_outer_pos(p, f.outer_row, c, mask);
  const sweep_int svs = p.n_shots * p.n_outer;
  const R *src = (const R *)f.replay_w + slot * SNAP_VALUES * svs + shot * p.n_outer + o;
  for (int v = 0; v < SNAP_VALUES; ++v) st[v * vs] = src[v * svs];
}

/* CPML replay: u^t and psi^t of the ring (sweep_ring_save). */
extern "C" __global__ void vrz_ring_save(const sweep_acoustic_params p, const sweep_vrz_fields f,
                                         sweep_int slot) {
  sweep_ring_save(p, f, slot);
}

/* Boundary saving, adjoint, before the step: the ring's state into the
 * reconstruction (sweep_ring_load). */
extern "C" __global__ void vrz_ring_load(const sweep_acoustic_params p, const sweep_vrz_fields f,
                                         sweep_int slot) {
  sweep_ring_load(p, f, slot);
}

/* Boundary saving, adjoint: restore u^{t-1} of the band (after
 * vrz_adjoint_sources; the correlation is vrz_adjoint's). */
extern "C" __global__ void vrz_band_restore(const sweep_acoustic_params p,
                                            const sweep_vrz_fields f, sweep_int slot,
                                            int restore_u) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band || !restore_u) return;
  const sweep_int shot = item / p.n_band, j = item % p.n_band;
  ((R *)f.recon_u_next)[shot * p.shot_stride + f.band_idx[j]] =
      ((const R *)f.band_u)[slot * p.n_shots * p.n_band + item];
}

/* Sources add -K B f^t to u^{t+1} (in u_prev): one thread per shot, in source order. */
extern "C" __global__ void vrz_forward_sources(const sweep_acoustic_params p,
                                               const sweep_vrz_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots || !f.src_amp) return;
  const sweep_int off = shot * p.shot_stride;
  const R *kappa_dt2 = (const R *)f.kappa_dt2, *buoyancy = (const R *)f.buoyancy;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k];
    SWEEP_CHECK_INDEX("source", shot, k, j);
    ((R *)f.u_prev)[off + j] -=
        kappa_dt2[j] * buoyancy[j] * ((const R *)f.src_amp)[(shot * p.n_src + k) * p.nt + t];
  }
}

extern "C" __global__ void vrz_record(const sweep_acoustic_params p, const sweep_vrz_fields f,
                                      sweep_int t) {
  sweep_record(p, f, t);
}

/* Residuals of u^t, times K, go into mu^t (sweep_cuda.h). */
extern "C" __global__ void vrz_inject_residuals(const sweep_acoustic_params p,
                                                const sweep_vrz_fields f, sweep_int t) {
  sweep_inject_residuals(p, f, (R *)f.u_prev, (const R *)f.kappa_dt2, t);
}

extern "C" __global__ void vrz_ghosts(const sweep_acoustic_params p, R *field, int d, int side) {
  sweep_mirror_ghost(p, field, d, side, (sweep_int)blockIdx.x * blockDim.x + threadIdx.x);
}

/* Adjoint step in mu = K lambda (vrz_stencil.h); slot >= 0: the model
 * gradients of the cell from the snapshot of that slot. */
extern "C" __global__ void vrz_adjoint(const sweep_acoustic_params p, const sweep_vrz_fields f,
                                       sweep_int slot) {
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
  FN(vrz_adj_point)(&p, (const R *)f.kappa_dt2, (const R *)f.buoyancy, mu, (R *)f.u_prev + off, P,
                    Pn, Z, Zn, pa, pb, i, c[0], c[1], c[2], mask);
  if (!f.grad_kappa_dt2 || !f.store || slot < 0) return;
  const sweep_int m = sweep_store_index(p, c);
  if (m < 0) return;
  const sweep_int vs = p.n_shots * sweep_store_cells(p);
  const R *st = (const R *)f.store + slot * SNAP_VALUES * vs + shot * sweep_store_cells(p);
  FN(vrz_gradient_point)(&p, mu, Z, pa, (const R *)f.buoyancy, st + vs, st, st + 2 * vs, vs,
                         (R *)f.grad_kappa_dt2 + off, (R *)f.grad_buoyancy + off, i, m, m, c[0],
                         c[1], c[2], mask, 1, 0);
}

/* Source terms, reading mu^{t+1}: the amplitude gradient -B mu and the model
 * gradients' terms (sampled like the snapshots; the caller scales by
 * store_every). */
extern "C" __global__ void vrz_adjoint_sources(const sweep_acoustic_params p,
                                               const sweep_vrz_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots) return;
  const sweep_int off = shot * p.shot_stride;
  const R *buoyancy = (const R *)f.buoyancy;
  const R *mu = (const R *)f.u + off;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k];
    SWEEP_CHECK_INDEX("source", shot, k, j);
    const sweep_int a = (shot * p.n_src + k) * p.nt + t;
    if (f.grad_src) ((R *)f.grad_src)[a] = -buoyancy[j] * mu[j];
    if (f.grad_kappa_dt2 && f.src_amp && t % p.store_every == 0) {
      const R amp = ((const R *)f.src_amp)[a];
      ((R *)f.grad_kappa_dt2)[off + j] -= amp * buoyancy[j] * mu[j];
      ((R *)f.grad_buoyancy)[off + j] -= amp * mu[j];
    }
  }
  if (f.recon_u && f.grad_kappa_dt2 && f.src_amp) {
    /* u^{t+1} held the source term of step t; the backward step removes it. */
    const R *kappa_dt2 = (const R *)f.kappa_dt2;
    for (sweep_int k = 0; k < p.n_src; ++k) {
      const sweep_int j = f.src_idx[shot * p.n_src + k];
      ((R *)f.recon_u_next)[off + j] -=
          kappa_dt2[j] * buoyancy[j] * ((const R *)f.src_amp)[(shot * p.n_src + k) * p.nt + t];
    }
  }
}
