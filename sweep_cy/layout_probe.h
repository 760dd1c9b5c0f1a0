/* Reports sizeof/offsetof of the shared structs so tests can compare them
 * with the NumPy mirror in sweep/_params.py. */
#ifndef SWEEP_LAYOUT_PROBE_H
#define SWEEP_LAYOUT_PROBE_H
#include <stddef.h>
#include "sweep_common.h"

#define SWEEP_P(field) offsetof(sweep_acoustic_params, field)
#define SWEEP_F(field) offsetof(sweep_acoustic_fields, field)
#define SWEEP_L(field) offsetof(sweep_lsrtm_fields, field)
#define SWEEP_V(field) offsetof(sweep_vrz_fields, field)
#define SWEEP_E(field) offsetof(sweep_elastic_fields, field)

static int sweep_layout_probe(long long *out, int n) {
  const long long v[] = {
      sizeof(sweep_acoustic_params), SWEEP_P(n_shots), SWEEP_P(n_src), SWEEP_P(n_rec),
      SWEEP_P(nt), SWEEP_P(halo), SWEEP_P(shot_stride), SWEEP_P(shape), SWEEP_P(stride),
      SWEEP_P(plain_lo), SWEEP_P(plain_hi), SWEEP_P(free_lo), SWEEP_P(free_hi), SWEEP_P(model_lo),
      SWEEP_P(model_hi), SWEEP_P(store_lo), SWEEP_P(store_hi), SWEEP_P(store_every),
      SWEEP_P(n_band), SWEEP_P(n_rec_groups), SWEEP_P(n_outer), SWEEP_P(n_cpml), SWEEP_P(n_ring), SWEEP_P(block_steps), SWEEP_P(block_group),
      SWEEP_P(block_tile), SWEEP_P(slot_shots), SWEEP_P(simd_rows), SWEEP_P(rdx),
      SWEEP_P(rdx2),
      sizeof(sweep_acoustic_fields), SWEEP_F(v2dt2), SWEEP_F(u_prev), SWEEP_F(u), SWEEP_F(psi),
      SWEEP_F(psi_new), SWEEP_F(zeta), SWEEP_F(zeta_new), SWEEP_F(pml_a), SWEEP_F(pml_b),
      SWEEP_F(src_amp), SWEEP_F(src_idx), SWEEP_F(rec), SWEEP_F(rec_idx), SWEEP_F(store),
      SWEEP_F(grad_v2dt2), SWEEP_F(grad_src), SWEEP_F(band_idx), SWEEP_F(band_row), SWEEP_F(band_u),
      SWEEP_F(replay_u), SWEEP_F(recon_u_next), SWEEP_F(recon_u), SWEEP_F(replay_w),
      SWEEP_F(outer_idx), SWEEP_F(outer_row), SWEEP_F(cpml_pos), SWEEP_F(ring_code), SWEEP_F(rec_groups),
      SWEEP_F(rec_order),
      sizeof(sweep_lsrtm_fields), SWEEP_L(v2dt2), SWEEP_L(dv2dt2),
      SWEEP_L(u0_prev), SWEEP_L(u0), SWEEP_L(psi0), SWEEP_L(psi0_new), SWEEP_L(zeta0),
      SWEEP_L(zeta0_new), SWEEP_L(u1_prev), SWEEP_L(u1), SWEEP_L(psi1), SWEEP_L(psi1_new),
      SWEEP_L(zeta1), SWEEP_L(zeta1_new), SWEEP_L(pml_a), SWEEP_L(pml_b), SWEEP_L(src_amp),
      SWEEP_L(src_idx), SWEEP_L(rec), SWEEP_L(rec_idx), SWEEP_L(store), SWEEP_L(grad_v2dt2),
      SWEEP_L(grad_dv2dt2), SWEEP_L(grad_src), SWEEP_L(band_idx), SWEEP_L(band_row),
      SWEEP_L(band_u), SWEEP_L(replay_u), SWEEP_L(recon_u0_next),
      SWEEP_L(recon_u0), SWEEP_L(recon_u1_next), SWEEP_L(recon_u1), SWEEP_L(replay_w), SWEEP_L(outer_idx),
      SWEEP_L(outer_row), SWEEP_L(cpml_pos), SWEEP_L(ring_code), SWEEP_L(rec_groups), SWEEP_L(rec_order),
      sizeof(sweep_vrz_fields), SWEEP_V(kappa_dt2), SWEEP_V(buoyancy), SWEEP_V(u_prev),
      SWEEP_V(u), SWEEP_V(psi), SWEEP_V(psi_new), SWEEP_V(zeta), SWEEP_V(zeta_new),
      SWEEP_V(pml_a), SWEEP_V(pml_b), SWEEP_V(src_amp), SWEEP_V(src_idx), SWEEP_V(rec),
      SWEEP_V(rec_idx), SWEEP_V(store), SWEEP_V(grad_kappa_dt2), SWEEP_V(grad_buoyancy),
      SWEEP_V(grad_src), SWEEP_V(band_idx), SWEEP_V(band_row), SWEEP_V(band_u), SWEEP_V(replay_u),
      SWEEP_V(recon_u_next), SWEEP_V(recon_u), SWEEP_V(replay_w), SWEEP_V(outer_idx), SWEEP_V(outer_row), SWEEP_V(cpml_pos), SWEEP_V(ring_code),
      SWEEP_V(rec_groups), SWEEP_V(rec_order),
      sizeof(sweep_elastic_fields), SWEEP_E(coef), SWEEP_E(field), SWEEP_E(psi), SWEEP_E(grad), SWEEP_E(pml_a), SWEEP_E(pml_b), SWEEP_E(pml_ah), SWEEP_E(pml_bh), SWEEP_E(wv), SWEEP_E(ws), SWEEP_E(src_amp), SWEEP_E(src_idx), SWEEP_E(rec), SWEEP_E(rec_idx), SWEEP_E(store), SWEEP_E(grad_src), SWEEP_E(band_idx), SWEEP_E(band_row), SWEEP_E(band_u), SWEEP_E(replay_u), SWEEP_E(replay_w), SWEEP_E(outer_idx), SWEEP_E(outer_row), SWEEP_E(cpml_pos), SWEEP_E(ring_code), SWEEP_E(rec_groups), SWEEP_E(rec_order)};
  const int m = (int)(sizeof(v) / sizeof(v[0]));
  for (int i = 0; i < m && i < n; ++i) out[i] = v[i];
  return m < n ? m : n;
}
#endif
