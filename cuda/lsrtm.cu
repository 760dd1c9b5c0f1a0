/*
 * CUDA kernels of Born modelling (LSRTM), compiled like acoustic.cu (see
 * there and sweep/_cuda_backend.py).  The per-point arithmetic is
 * lsrtm_stencil.h, the same code the CPU kernels run (acoustic's point
 * functions for both fields).  One step is: stencil kernel, then receivers,
 * sources, then free-surface ghosts of both fields, as for the acoustic
 * kernels, with boundary saving's kernels where acoustic.cu has them.  A
 * snapshot slot holds W0 of every shot, then W1 (SWEEP_EQ_SNAP_VALUES 2 of
 * the CPU kernels), and so does a slot of replay_w; a slot of band_u holds
 * u0, then u1, and one of replay_u u0, u1, psi0, psi1 of the ring.  The
 * forward's rec holds the scattered traces, then the background ones.
 */
#include "sweep_common.h"
#define SWEEP_STENCIL_KEEP_MACROS
#include "acoustic_stencil.h"
#include "lsrtm_stencil.h"
#include "acoustic_stencil_undef.h"
#undef SWEEP_STENCIL_KEEP_MACROS
#include "sweep_cuda.h"

/* slot: compact snapshot slot of this step, or -1 (not stored). */
extern "C" __global__ void lsrtm_forward(const sweep_acoustic_params p, const sweep_lsrtm_fields f,
                                         sweep_int slot) {
  sweep_int shot, c[3];
  if (!sweep_thread_point(p, &shot, c)) return;
  const sweep_int off = shot * p.shot_stride;
  const sweep_int i = c[0] * p.stride[0] + c[1] * p.stride[1] + c[2];
  R *psi0[3], *psi0_new[3], *zeta0[3], *psi1[3], *psi1_new[3], *zeta1[3];
  const R *pa[3], *pb[3];
  sweep_axes(f.psi0, off, psi0);
  sweep_axes(f.psi0_new, off, psi0_new);
  sweep_axes(f.zeta0, off, zeta0);
  sweep_axes(f.psi1, off, psi1);
  sweep_axes(f.psi1_new, off, psi1_new);
  sweep_axes(f.zeta1, off, zeta1);
  for (int d = 0; d < 3; ++d) {
    pa[d] = (const R *)f.pml_a[d];
    pb[d] = (const R *)f.pml_b[d];
  }
  const int mask = sweep_pml_mask(p, c);
  /* The CPML replay holds the outer cells only (the band's u0, u1 loaded each step). */
  if (f.replay_w && !mask) return;
  R w[2];
  FN(lsrtm_fwd_point)(&p, (const R *)f.v2dt2, (const R *)f.dv2dt2, (const R *)f.u0 + off,
                      (R *)f.u0_prev + off, psi0, psi0_new, zeta0, (const R *)f.u1 + off,
                      (R *)f.u1_prev + off, psi1, psi1_new, zeta1, pa, pb, i, c[0], c[1], c[2],
                      mask, w);
  if (f.replay_w) {
    const sweep_int o = sweep_outer_pos(p, f.outer_row, c, mask);
    if (o >= 0) {
      R *rw = (R *)f.replay_w + 2 * slot * p.n_shots * p.n_outer;
      rw[shot * p.n_outer + o] = w[0];
      rw[(p.n_shots + shot) * p.n_outer + o] = w[1];
    }
  }
  if (f.store && slot >= 0) {
    const sweep_int m = sweep_store_index(p, c);
    if (m >= 0) {
      const sweep_int mc = sweep_store_cells(p);
      R *st = (R *)f.store + 2 * slot * p.n_shots * mc;
      st[shot * mc + m] = w[0];
      st[(p.n_shots + shot) * mc + m] = w[1];
    }
  }
}

/* CPML replay: the band's saved u0^t, u1^t into u0, u1 before the step. */
extern "C" __global__ void lsrtm_band_load(const sweep_acoustic_params p,
                                           const sweep_lsrtm_fields f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band) return;
  const sweep_int shot = item / p.n_band, i = shot * p.shot_stride + f.band_idx[item % p.n_band];
  const R *bu = (const R *)f.band_u + 2 * slot * p.n_shots * p.n_band;
  ((R *)f.u0)[i] = bu[item];
  ((R *)f.u1)[i] = bu[p.n_shots * p.n_band + item];
}

/* Boundary saving, forward: u0^t, u1^t of the band (before the step). */
extern "C" __global__ void lsrtm_band_save(const sweep_acoustic_params p,
                                           const sweep_lsrtm_fields f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band) return;
  const sweep_int shot = item / p.n_band, j = f.band_idx[item % p.n_band];
  const sweep_int off = shot * p.shot_stride, vs = p.n_shots * p.n_band;
  const sweep_int o = 2 * slot * vs + item;
  ((R *)f.band_u)[o] = ((const R *)f.u0)[off + j];
  ((R *)f.band_u)[o + vs] = ((const R *)f.u1)[off + j];
}

/* CPML replay: u0^t, u1^t, psi0^t, psi1^t (psi along the cell's axis) of the
 * ring, after the band's load (lsrtm_ring_load). */
extern "C" __global__ void lsrtm_ring_save(const sweep_acoustic_params p,
                                           const sweep_lsrtm_fields f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_ring) return;
  sweep_int off;
  int d;
  const sweep_int i = sweep_ring_cell(p, f.ring_code, item, &off, &d);
  const sweep_int vs = p.n_shots * p.n_ring;
  R *out = (R *)f.replay_u + 4 * slot * vs + item;
  out[0] = ((const R *)f.u0)[off + i];
  out[vs] = ((const R *)f.u1)[off + i];
  out[2 * vs] = ((const R *)f.psi0[d])[off + i];
  out[3 * vs] = ((const R *)f.psi1[d])[off + i];
}

/* Boundary saving, adjoint, before the step: the ring's u0^t, u1^t into
 * recon_u0, recon_u1 and psi0^t, psi1^t into recon_u0_next, recon_u1_next
 * (lsrtm_recon_band_point reads them there). */
extern "C" __global__ void lsrtm_ring_load(const sweep_acoustic_params p,
                                           const sweep_lsrtm_fields f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_ring) return;
  sweep_int off;
  int d;
  const sweep_int i = sweep_ring_cell(p, f.ring_code, item, &off, &d);
  const sweep_int vs = p.n_shots * p.n_ring;
  const R *in = (const R *)f.replay_u + 4 * slot * vs + item;
  ((R *)f.recon_u0)[off + i] = in[0];
  ((R *)f.recon_u1)[off + i] = in[vs];
  ((R *)f.recon_u0_next)[off + i] = in[2 * vs];
  ((R *)f.recon_u1_next)[off + i] = in[3 * vs];
}

/* The model gradients of cell i from a saved W0 (w[0]) and W1 (w[vs]), as
 * the snapshot correlation of lsrtm_adjoint. */
__device__ __forceinline__ void lsrtm_correlate_saved(const sweep_lsrtm_fields &f, sweep_int i,
                                                      const R *w, sweep_int vs) {
  const R m0 = ((const R *)f.u0)[i], m1 = ((const R *)f.u1)[i]; /* m0: G0 */
  R *gk = (R *)f.grad_v2dt2, *gd = (R *)f.grad_dv2dt2;
  gk[i] = gk[i] + m0 * w[0] + m1 * w[vs];
  gd[i] += m1 * w[0];
}

/* Boundary saving, adjoint: correlate the CPML cells with W^t of the replay. */
extern "C" __global__ void lsrtm_replay_correlate(const sweep_acoustic_params p,
                                                  const sweep_lsrtm_fields f, sweep_int slot) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_cpml) return;
  const sweep_int shot = item / p.n_cpml, j = f.cpml_pos[item % p.n_cpml];
  const sweep_int vs = p.n_shots * p.n_outer;
  lsrtm_correlate_saved(f, shot * p.shot_stride + f.outer_idx[j],
                        (const R *)f.replay_w + 2 * slot * vs + shot * p.n_outer + j, vs);
}

/* Boundary saving, adjoint: restore u0^{t-1}, u1^{t-1} of the band (after
 * lsrtm_adjoint_sources; the band's correlation is lsrtm_adjoint's). */
extern "C" __global__ void lsrtm_band_restore(const sweep_acoustic_params p,
                                              const sweep_lsrtm_fields f, sweep_int slot,
                                              int restore_u) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_band) return;
  const sweep_int shot = item / p.n_band;
  const sweep_int i = shot * p.shot_stride + f.band_idx[item % p.n_band];
  const sweep_int vs = p.n_shots * p.n_band, o = 2 * slot * vs + item;
  if (restore_u) {
    ((R *)f.recon_u0_next)[i] = ((const R *)f.band_u)[o];
    ((R *)f.recon_u1_next)[i] = ((const R *)f.band_u)[o + vs];
  }
}

/* Sources add -K f^t to u0^{t+1} and -dK f^t to u1^{t+1}: one thread per shot. */
extern "C" __global__ void lsrtm_forward_sources(const sweep_acoustic_params p,
                                                 const sweep_lsrtm_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots || !f.src_amp) return;
  const sweep_int off = shot * p.shot_stride;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k];
    SWEEP_CHECK_INDEX("source", shot, k, j);
    const R a = ((const R *)f.src_amp)[(shot * p.n_src + k) * p.nt + t];
    ((R *)f.u0_prev)[off + j] -= ((const R *)f.v2dt2)[j] * a;
    ((R *)f.u1_prev)[off + j] -= ((const R *)f.dv2dt2)[j] * a;
  }
}

/* Receivers record u1^t, and u0^t in the background traces after the
 * scattered ones: one thread per (shot, receiver). */
extern "C" __global__ void lsrtm_record(const sweep_acoustic_params p, const sweep_lsrtm_fields f,
                                        sweep_int t) {
  const sweep_int item = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (item >= p.n_shots * p.n_rec) return;
  const sweep_int shot = item / p.n_rec;
  const sweep_int j = shot * p.shot_stride + f.rec_idx[item];
  SWEEP_CHECK_INDEX("receiver", shot, item % p.n_rec, f.rec_idx[item]);
  R *rec = (R *)f.rec;
  rec[item * p.nt + t] = ((const R *)f.u1)[j];
  rec[(p.n_shots * p.n_rec + item) * p.nt + t] = ((const R *)f.u0)[j];
}

/* Adjoint receiver injection, as acoustic's: K r into mu1 (mu = K lambda)
 * and dK r into G0 (lsrtm_stencil.h). */
extern "C" __global__ void lsrtm_inject_residuals(const sweep_acoustic_params p,
                                                  const sweep_lsrtm_fields f, sweep_int t) {
  sweep_inject_residuals(p, f, (R *)f.u1_prev, (const R *)f.v2dt2, t);
  sweep_inject_residuals(p, f, (R *)f.u0_prev, (const R *)f.dv2dt2, t);
}

extern "C" __global__ void lsrtm_ghosts(const sweep_acoustic_params p, R *field, int d, int side) {
  sweep_mirror_ghost(p, field, d, side, (sweep_int)blockIdx.x * blockDim.x + threadIdx.x);
}

/*
 * Adjoint step, in G0 = mu0 + R mu1 and mu1, mu = K lambda (lsrtm_stencil.h;
 * G0 in the u0 slot).  slot >= 0: the model gradients from the snapshot of
 * that slot, grad_v2dt2 += G0 W0 + mu1 W1 and grad_dv2dt2 += mu1 W0 (at
 * t + 1, before the step).
 * f.recon_u0 set: also run both forward fields one step backwards on the
 * plain cells, correlating there (boundary saving).
 */
extern "C" __global__ void lsrtm_adjoint(const sweep_acoustic_params p, const sweep_lsrtm_fields f,
                                         sweep_int slot) {
  sweep_int shot, c[3];
  if (!sweep_thread_point(p, &shot, c)) return;
  const sweep_int off = shot * p.shot_stride;
  const sweep_int i = c[0] * p.stride[0] + c[1] * p.stride[1] + c[2];
  R *P0[3], *P0n[3], *Z0[3], *Z0n[3], *P1[3], *P1n[3], *Z1[3], *Z1n[3];
  const R *pa[3], *pb[3];
  sweep_axes(f.psi0, off, P0);
  sweep_axes(f.psi0_new, off, P0n);
  sweep_axes(f.zeta0, off, Z0);
  sweep_axes(f.zeta0_new, off, Z0n);
  sweep_axes(f.psi1, off, P1);
  sweep_axes(f.psi1_new, off, P1n);
  sweep_axes(f.zeta1, off, Z1);
  sweep_axes(f.zeta1_new, off, Z1n);
  for (int d = 0; d < 3; ++d) {
    pa[d] = (const R *)f.pml_a[d];
    pb[d] = (const R *)f.pml_b[d];
  }
  const R *g0 = (const R *)f.u0 + off, *mu1 = (const R *)f.u1 + off;
  if (f.grad_v2dt2 && f.store && slot >= 0) {
    const sweep_int m = sweep_store_index(p, c);
    if (m >= 0) {
      const sweep_int mc = sweep_store_cells(p);
      const R *st = (const R *)f.store + 2 * slot * p.n_shots * mc;
      const R w0 = st[shot * mc + m], w1 = st[(p.n_shots + shot) * mc + m];
      R *gk = (R *)f.grad_v2dt2 + off, *gd = (R *)f.grad_dv2dt2 + off;
      gk[i] = gk[i] + g0[i] * w0 + mu1[i] * w1;
      gd[i] += mu1[i] * w0;
    }
  }
  const int mask = sweep_pml_mask(p, c);
  FN(lsrtm_adj_point)(&p, (const R *)f.v2dt2, (const R *)f.dv2dt2, g0,
                      (R *)f.u0_prev + off, P0, P0n, Z0, Z0n, mu1, (R *)f.u1_prev + off, P1, P1n,
                      Z1, Z1n, pa, pb, i, c[0], c[1], c[2], mask);
  if (f.recon_u0 && f.grad_v2dt2 && !mask)
    FN(lsrtm_recon_point)(&p, (const R *)f.v2dt2, (const R *)f.dv2dt2,
                          (const R *)f.recon_u0 + off, (R *)f.recon_u0_next + off,
                          (const R *)f.recon_u1 + off, (R *)f.recon_u1_next + off, g0, mu1,
                          (R *)f.grad_v2dt2 + off, (R *)f.grad_dv2dt2 + off, i);
  else if (f.recon_u0 && f.grad_v2dt2 && f.replay_u &&
           sweep_band_pos(p, f.band_row, c, mask) >= 0)
    FN(lsrtm_recon_band_point)(&p, (const R *)f.recon_u0 + off, (const R *)f.recon_u0_next + off,
                               (const R *)f.recon_u1 + off, (const R *)f.recon_u1_next + off, g0,
                               mu1, (R *)f.grad_v2dt2 + off, (R *)f.grad_dv2dt2 + off, i, c[0],
                               c[1], c[2], mask);
}

/* Source terms, reading G0^{t+1}, mu1^{t+1}: dL/df = -G0, and the model
 * gradients' -f G0, -f mu1 (sampled like the snapshots). */
extern "C" __global__ void lsrtm_adjoint_sources(const sweep_acoustic_params p,
                                                 const sweep_lsrtm_fields f, sweep_int t) {
  const sweep_int shot = (sweep_int)blockIdx.x * blockDim.x + threadIdx.x;
  if (shot >= p.n_shots) return;
  const sweep_int off = shot * p.shot_stride;
  const R *g0 = (const R *)f.u0 + off, *mu1 = (const R *)f.u1 + off;
  for (sweep_int k = 0; k < p.n_src; ++k) {
    const sweep_int j = f.src_idx[shot * p.n_src + k];
    SWEEP_CHECK_INDEX("source", shot, k, j);
    const sweep_int a = (shot * p.n_src + k) * p.nt + t;
    if (f.grad_src) ((R *)f.grad_src)[a] = -g0[j];
    if (f.grad_v2dt2 && f.src_amp && t % p.store_every == 0) {
      const R amp = ((const R *)f.src_amp)[a];
      ((R *)f.grad_v2dt2)[off + j] -= amp * g0[j];
      ((R *)f.grad_dv2dt2)[off + j] -= amp * mu1[j];
    }
  }
  if (f.recon_u0 && f.grad_v2dt2 && f.src_amp) {
    /* u^{t+1} held the source terms of step t; the backward step removes them. */
    for (sweep_int k = 0; k < p.n_src; ++k) {
      const sweep_int j = f.src_idx[shot * p.n_src + k];
      const R a = ((const R *)f.src_amp)[(shot * p.n_src + k) * p.nt + t];
      ((R *)f.recon_u0_next)[off + j] -= ((const R *)f.v2dt2)[j] * a;
      ((R *)f.recon_u1_next)[off + j] -= ((const R *)f.dv2dt2)[j] * a;
    }
  }
}
