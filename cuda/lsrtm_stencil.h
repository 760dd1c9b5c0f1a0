/*
 * Born modelling (LSRTM): one grid point of one time step, forward and
 * adjoint, on the acoustic point arithmetic of acoustic_stencil.h.  Shared by
 * the C/OpenMP kernels (sweep_cy/lsrtm_cpu_impl.h) and the CUDA kernels
 * (cuda/lsrtm.cu).  Included once per specialisation, after
 * acoustic_stencil.h with SWEEP_STENCIL_KEEP_MACROS defined (its tap macros
 * are used here); no include guard.
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
 * K lambda0 + dK lambda1 = G0 = mu0 + R mu1 with R = dK / K:
 *
 *   mu0^n = K A(G0) + 2 mu0^{n+1} - mu0^{n+2}
 *   Z0^n  = b (Z0 + G0),   P0^n = b P0 - D1((1 + a) G0) - D1(a Z0)
 *
 * (A: acoustic's adjoint sum with the taps of G0; the leapfrog part keeps
 * mu0).  G0's taps are formed as they are read, so no pass forms G0.  R
 * holds the even mirror in free-surface ghosts, like K, so that G0's ghosts
 * are odd mirrors as mu0's and mu1's are.  The model gradients, per step
 * with mu^{n+1} and W^n (the drivers' correlations, sources included):
 * grad_v2dt2 += mu0 (W0 - f) + mu1 W1 and grad_dv2dt2 += mu1 (W0 - f);
 * the source gradient is -G0 at the source cell.
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

/*
 * Boundary saving: one backward-in-time step of both fields at a plain cell,
 * fused with the model-gradient correlations (acoustic_recon_point for each
 * field, plus the Born source):
 *
 *   u0^{n-1} = K W0^n + 2 u0^n - u0^{n+1}
 *   u1^{n-1} = K W1^n + 2 u1^n - u1^{n+1} + dK W0^n
 *
 * (the sources are removed by the caller).  u0_next, u1_next hold u^{n+1} and
 * receive u^{n-1}; gk += mu0 W0 + mu1 W1 and gd += mu1 W0 with mu at n + 1.
 */
SWEEP_HD void SWEEP_FN(lsrtm_recon_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT v2dt2,
    const SWEEP_R *SWEEP_RESTRICT dv2dt2, const SWEEP_R *SWEEP_RESTRICT u0,
    SWEEP_R *SWEEP_RESTRICT u0_next, const SWEEP_R *SWEEP_RESTRICT u1,
    SWEEP_R *SWEEP_RESTRICT u1_next, const SWEEP_R *SWEEP_RESTRICT mu0,
    const SWEEP_R *SWEEP_RESTRICT mu1, SWEEP_R *SWEEP_RESTRICT gk, SWEEP_R *SWEEP_RESTRICT gd,
    sweep_int i) {
  const SWEEP_R w0 = SWEEP_FN(acoustic_w_plain_point)(p, u0, i);
  const SWEEP_R w1 = SWEEP_FN(acoustic_w_plain_point)(p, u1, i);
  gk[i] = gk[i] + mu0[i] * w0 + mu1[i] * w1;
  gd[i] += mu1[i] * w0;
  u0_next[i] = SWEEP_LEAPFROG(v2dt2[i], w0, u0[i], u0_next[i]);
  u1_next[i] = SWEEP_FMA(dv2dt2[i], w0, SWEEP_LEAPFROG(v2dt2[i], w1, u1[i], u1_next[i]));
}

/* G0 = mu0 + R mu1 at tap k (SWEEP_ADJ_AXIS_TAPS's g_, s_ and a_; born_r_,
 * born_m1_: R and mu1 at the point). */
#define SWEEP_TAP_G0_(k) \
  SWEEP_FMA(SWEEP_LD(born_r_ + (k) * s_), SWEEP_LD(born_m1_ + (k) * s_), SWEEP_LD(g_ + (k) * s_))
#define SWEEP_TAP_AG0_(k) ((1 + a_[k]) * SWEEP_TAP_G0_(k))

/*
 * Adjoint update of point i of both fields (see acoustic_adj_point): mu1 as
 * acoustic's; mu0 with the taps of G0.  mu0, mu1 hold step n + 1 and are
 * only read; mu0_prev, mu1_prev, P*_new, Z*_new receive step n.
 */
SWEEP_HD void SWEEP_FN(lsrtm_adj_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT v2dt2,
    const SWEEP_R *SWEEP_RESTRICT ratio, const SWEEP_R *SWEEP_RESTRICT mu0,
    SWEEP_R *SWEEP_RESTRICT mu0_prev, SWEEP_R *const *P0, SWEEP_R *const *P0_new,
    SWEEP_R *const *Z0, SWEEP_R *const *Z0_new, const SWEEP_R *SWEEP_RESTRICT mu1,
    SWEEP_R *SWEEP_RESTRICT mu1_prev, SWEEP_R *const *P1, SWEEP_R *const *P1_new,
    SWEEP_R *const *Z1, SWEEP_R *const *Z1_new, const SWEEP_R *const *pml_a,
    const SWEEP_R *const *pml_b, sweep_int i, sweep_int cz, sweep_int cy, sweep_int cx,
    const int flags) {
  SWEEP_FN(acoustic_adj_point)(p, v2dt2, mu1, mu1_prev, P1, P1_new, Z1, Z1_new, pml_a, pml_b, i,
                               cz, cy, cx, flags);
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  const SWEEP_R *const born_r_ = ratio + i;
  const SWEEP_R *const born_m1_ = mu1 + i;
  const SWEEP_R gi = SWEEP_FMA(ratio[i], mu1[i], mu0[i]);
  SWEEP_R acc = 0;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
    SWEEP_ADJ_AXIS_TAPS(SWEEP_TAP_G0_, SWEEP_TAP_AG0_, SWEEP_TAP_AZ_, SWEEP_TAP_AP_, SWEEP_R, acc,
                        mu0 + i, gi, P0[d] + i, P0_new[d] + i, Z0[d] + i, Z0_new[d] + i,
                        pml_a[d] + c[d], pml_b[d][c[d]], p->stride[d], (SWEEP_R)p->rdx[d],
                        (SWEEP_R)p->rdx2[d], flags & (1 << d));
  mu0_prev[i] = SWEEP_LEAPFROG(v2dt2[i], acc, mu0[i], mu0_prev[i]);
}

#undef SWEEP_TAP_G0_
#undef SWEEP_TAP_AG0_
