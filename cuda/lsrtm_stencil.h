/*
 * Born modelling (LSRTM): one grid point of one time step, forward and
 * adjoint, on the acoustic point arithmetic of acoustic_stencil.h.  Shared by
 * the C/OpenMP kernels (sweep_cy/lsrtm_cpu_impl.h) and the CUDA kernels
 * (cuda/lsrtm.cu).  Included once per specialisation, after
 * acoustic_stencil.h; no include guard.
 *
 * Two acoustic wavefields, each with its own CPML memory variables: the
 * background u0, driven by the sources, and the scattered u1, driven by the
 * perturbation.  With K = v^2 dt^2 and dK = 2 K mp (zero where K is):
 *
 *   u0^{n+1} = K W0^n + 2 u0^n - u0^{n-1}             (- K f at sources)
 *   u1^{n+1} = K W1^n + 2 u1^n - u1^{n-1} + dK W0^n   (- dK f at sources)
 *
 * W0, W1: acoustic's bracket (acoustic_fwd_point returns it) of each field.
 *
 * Adjoint, in acoustic's variables mu = K lambda (acoustic_stencil.h): mu1
 * is an ordinary acoustic adjoint.  u0 reaches the next step through both
 * updates, so the field whose taps the adjoint of W0 takes is
 * K lambda0 + dK lambda1 = G0 = mu0 + R mu1 with R = dK / K.  The kernels
 * carry G0 itself in mu0's place (a change of variables, the same operator
 * in exact arithmetic, as mu is for lambda): with A1 the adjoint sum of mu1
 * (what acoustic_adj_point returns), R times mu1's update added to mu0's is
 *
 *   G0^n = K A(G0) + 2 G0^{n+1} - G0^{n+2} + dK A1       (+ dK r at receivers)
 *   Z0^n = b (Z0 + G0),   P0^n = b P0 - D1((1 + a) G0) - D1(a Z0),
 *
 * an acoustic adjoint step of G0 plus the scattering term dK A1, the
 * transpose of the forward's dK W0.  So each field's update is acoustic's,
 * and the CPU's vector rows run acoustic's on each (lsrtm_cpu_impl.h).
 * The model gradients, per step with mu^{n+1} and W^n (the drivers'
 * correlations, sources included): grad_v2dt2 += G0 (W0 - f) + mu1 W1 (K
 * times the gradient of K at fixed mp: that of K at fixed dK plus R times
 * that of dK) and grad_dv2dt2 += mu1 (W0 - f); the source gradient is -G0
 * at the source cell.  Residuals r enter as K r into mu1 and dK r into G0.
 */

/* Forward update of point i of both fields (see acoustic_fwd_point): u0^{n+1}
 * over u0_prev, u1^{n+1} over u1_prev; W0^n to w[0], W1^n to w[1]. */
SWEEP_HD void SWEEP_FN(lsrtm_fwd_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT v2dt2,
    const SWEEP_R *SWEEP_RESTRICT dv2dt2, const SWEEP_R *SWEEP_RESTRICT u0,
    SWEEP_R *SWEEP_RESTRICT u0_prev, SWEEP_R *const *psi0, SWEEP_R *const *psi0_new,
    SWEEP_R *const *zeta0, const SWEEP_R *SWEEP_RESTRICT u1, SWEEP_R *SWEEP_RESTRICT u1_prev,
    SWEEP_R *const *psi1, SWEEP_R *const *psi1_new, SWEEP_R *const *zeta1,
    const SWEEP_R *const *pml_a, const SWEEP_R *const *pml_b, sweep_int i, sweep_int cz,
    sweep_int cy, sweep_int cx, const int flags, SWEEP_R *w) {
  const SWEEP_R w0 = SWEEP_FN(acoustic_fwd_point)(p, v2dt2, u0, u0_prev, psi0, psi0_new, zeta0,
                                                  pml_a, pml_b, i, cz, cy, cx, flags);
  const SWEEP_R w1 = SWEEP_FN(acoustic_fwd_point)(p, v2dt2, u1, u1_prev, psi1, psi1_new, zeta1,
                                                  pml_a, pml_b, i, cz, cy, cx, flags);
  u1_prev[i] = SWEEP_FMA(dv2dt2[i], w0, u1_prev[i]);
  w[0] = w0;
  w[1] = w1;
}

/* The model-gradient correlations of cell i with W0^n = w0, W1^n = w1 and
 * G0, mu1 at n + 1: gk += g0 W0 + mu1 W1, gd += mu1 W0. */
SWEEP_HD void SWEEP_FN(lsrtm_correlate)(const SWEEP_R *SWEEP_RESTRICT g0,
                                        const SWEEP_R *SWEEP_RESTRICT mu1,
                                        SWEEP_R *SWEEP_RESTRICT gk, SWEEP_R *SWEEP_RESTRICT gd,
                                        sweep_int i, SWEEP_R w0, SWEEP_R w1) {
  gk[i] = gk[i] + g0[i] * w0 + mu1[i] * w1;
  gd[i] += mu1[i] * w0;
}

/*
 * Boundary saving: one backward-in-time step of both fields at a plain cell,
 * fused with the model-gradient correlations (acoustic_recon_point for each
 * field, plus the Born source):
 *
 *   u0^{n-1} = K W0^n + 2 u0^n - u0^{n+1}
 *   u1^{n-1} = K W1^n + 2 u1^n - u1^{n+1} + dK W0^n
 *
 * (the sources are removed by the caller).  u0_next, u1_next hold u^{n+1} and
 * receive u^{n-1}; gk += g0 W0 + mu1 W1 and gd += mu1 W0 with G0 and mu1 at
 * n + 1 (g0: the adjoint's G0, in mu0's slot).
 */
SWEEP_HD void SWEEP_FN(lsrtm_recon_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT v2dt2,
    const SWEEP_R *SWEEP_RESTRICT dv2dt2, const SWEEP_R *SWEEP_RESTRICT u0,
    SWEEP_R *SWEEP_RESTRICT u0_next, const SWEEP_R *SWEEP_RESTRICT u1,
    SWEEP_R *SWEEP_RESTRICT u1_next, const SWEEP_R *SWEEP_RESTRICT g0,
    const SWEEP_R *SWEEP_RESTRICT mu1, SWEEP_R *SWEEP_RESTRICT gk, SWEEP_R *SWEEP_RESTRICT gd,
    sweep_int i) {
  const SWEEP_R w0 = SWEEP_FN(acoustic_w_plain_point)(p, u0, i);
  const SWEEP_R w1 = SWEEP_FN(acoustic_w_plain_point)(p, u1, i);
  SWEEP_FN(lsrtm_correlate)(g0, mu1, gk, gd, i, w0, w1);
  u0_next[i] = SWEEP_LEAPFROG(v2dt2[i], w0, u0[i], u0_next[i]);
  u1_next[i] = SWEEP_FMA(dv2dt2[i], w0, SWEEP_LEAPFROG(v2dt2[i], w1, u1[i], u1_next[i]));
}

/* Boundary saving: the correlations of band cell i, W0^n and W1^n from
 * acoustic_w_band_point of each field (u0, u1 on the model and the ring;
 * rpsi0, rpsi1 the ring's psi; flags: the cell's CPML axes). */
SWEEP_HD void SWEEP_FN(lsrtm_recon_band_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT u0,
    const SWEEP_R *SWEEP_RESTRICT rpsi0, const SWEEP_R *SWEEP_RESTRICT u1,
    const SWEEP_R *SWEEP_RESTRICT rpsi1, const SWEEP_R *SWEEP_RESTRICT g0,
    const SWEEP_R *SWEEP_RESTRICT mu1, SWEEP_R *SWEEP_RESTRICT gk, SWEEP_R *SWEEP_RESTRICT gd,
    sweep_int i, sweep_int cz, sweep_int cy, sweep_int cx, const int flags) {
  SWEEP_FN(lsrtm_correlate)(g0, mu1, gk, gd, i,
                            SWEEP_FN(acoustic_w_band_point)(p, u0, rpsi0, i, cz, cy, cx, flags),
                            SWEEP_FN(acoustic_w_band_point)(p, u1, rpsi1, i, cz, cy, cx, flags));
}

/*
 * Adjoint update of point i of both fields (see acoustic_adj_point): mu1 and
 * G0 as acoustic's, then G0 += dK A1.  g0, mu1 hold step n + 1 and are only
 * read; g0_prev, mu1_prev, P*_new, Z*_new receive step n.
 */
SWEEP_HD void SWEEP_FN(lsrtm_adj_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT v2dt2,
    const SWEEP_R *SWEEP_RESTRICT dv2dt2, const SWEEP_R *SWEEP_RESTRICT g0,
    SWEEP_R *SWEEP_RESTRICT g0_prev, SWEEP_R *const *P0, SWEEP_R *const *P0_new,
    SWEEP_R *const *Z0, SWEEP_R *const *Z0_new, const SWEEP_R *SWEEP_RESTRICT mu1,
    SWEEP_R *SWEEP_RESTRICT mu1_prev, SWEEP_R *const *P1, SWEEP_R *const *P1_new,
    SWEEP_R *const *Z1, SWEEP_R *const *Z1_new, const SWEEP_R *const *pml_a,
    const SWEEP_R *const *pml_b, sweep_int i, sweep_int cz, sweep_int cy, sweep_int cx,
    const int flags) {
  const SWEEP_R a1 = SWEEP_FN(acoustic_adj_point)(p, v2dt2, mu1, mu1_prev, P1, P1_new, Z1, Z1_new,
                                                  pml_a, pml_b, i, cz, cy, cx, flags);
  SWEEP_FN(acoustic_adj_point)(p, v2dt2, g0, g0_prev, P0, P0_new, Z0, Z0_new, pml_a, pml_b, i, cz,
                               cy, cx, flags);
  g0_prev[i] = SWEEP_FMA(dv2dt2[i], a1, g0_prev[i]);
}
