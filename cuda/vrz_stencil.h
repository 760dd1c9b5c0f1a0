/*
 * VRZ (variable-density acoustic, in velocity and impedance): one grid point
 * of one time step, forward, adjoint and model gradient.  The single
 * definition of the arithmetic, shared by the C/OpenMP kernels
 * (sweep_cy/vrz_cpu_impl.h) and the CUDA kernels (cuda/vrz.cu); the discrete
 * operator is the eager reference's (sweep/equations/vrz/eager.py).  Built on
 * acoustic_stencil.h's macros (finite-difference weights, first differences,
 * the CPML terms, the leapfrog), which it includes; included once per
 * specialisation like it, and ended by vrz_stencil_undef.h.
 *
 * Models on the padded grid: K = kappa dt^2 = z vp dt^2 (zero where u is not
 * updated, as acoustic's v^2 dt^2) and the buoyancy B = vp / z, on the whole
 * padded grid (edge values repeated into the CPML and the halo, even mirror
 * images behind a free surface).  With h_k = c2_k / 2 (c2: the
 * second-difference weights), per axis d:
 *
 *   L_d u (i)    = sum_k h_k [(B_i + B_{i+k}) (u_{i+k} - u_i)
 *                             + (B_i + B_{i-k}) (u_{i-k} - u_i)]
 *   t_d          = L_d u^n rdx2 + D1_d (B psi_d^n) rdx
 *   zeta_d^{n+1} = b_d zeta_d^n + a_d t_d,   psi_d^{n+1} = b_d psi_d^n + a_d D1_d u^n rdx
 *   W^n          = sum_d (t_d + zeta_d^{n+1})
 *   u^{n+1}      = K W^n + 2 u^n - u^{n-1}   (- K B f at sources)
 *
 * L_d (the flux form: the acoustic's D2 with B_i + B_{i+k} on each pair of
 * cells) is symmetric, so the adjoint has the acoustic's shape.  In mu = K
 * lambda (the adjoint of u^{n+1}), with P_d, Z_d the adjoints of psi_d^{n+1},
 * zeta_d^{n+1}:
 *
 *   T_d   = (1 + a_d) mu + a_d Z_d          (the adjoint of t_d; mu outside the CPML)
 *   mu^n  = K sum_d [L_d(T_d) rdx2 - D1_d(a_d P_d) rdx] + 2 mu - mu^{n+1}_prev
 *   P_d^n = b_d P_d - B D1_d(T_d) rdx,      Z_d^n = b_d (Z_d + mu).
 *
 * Free-surface ghosts of mu are odd mirrors (the caller's), which with B's
 * even mirror makes L_d on them the transpose of the forward's ghosts.
 *
 * Model gradients, pairing the adjoint state of step n + 1 with the forward
 * snapshot of step n (W^n, u^n, psi_d^n; the CPU kernels store W and psi of
 * the outer cells only and recompute a plain cell's W from u in
 * vrz_gradient_point):
 *
 *   K-part:  sum_n mu W^n                          (K dL/dK; the caller divides by K)
 *   dL/dB_j  = sum_n sum_d [rdx2 sum_k h_k sum_{s = +-1} (u_{j+sk} - u_j)(T_{d,j} - T_{d,j+sk})
 *                          - rdx psi_{d,j} D1_d(T_d)_j]
 *
 * with u and T on the halo as the kernels hold them (zero, or odd mirrors
 * behind a free surface).  B of halo cells enters L_d too, and the kernels,
 * which visit stored cells only, add its gradient to the stored cell it
 * copies (then sweep/equations/vrz/compiled.py folds the CPML onto the model
 * as for K):
 *  - a ghost copies its mirror cell m, and the odd mirrors of u and T make the
 *    sum above at m equal the gradient of B_m plus that of its ghost;
 *  - the surface row (no ghost of its own, u = T = 0 there) gets its sum
 *    twice, hence halved;
 *  - the halo of a face without free surface copies the edge cell e next to
 *    it, which adds - rdx2 sum_{m < H} (sum_{k > m} h_k) u_{e+m} T_{e+m}
 *    (m counted inward).
 * Sources (the term - K B f): the amplitude gradient is - B mu, the K-part
 * takes - B f mu and dL/dB - f mu.
 */
#ifndef SWEEP_STENCIL_KEEP_MACROS
#define SWEEP_STENCIL_KEEP_MACROS /* acoustic_stencil.h's macros are used below */
#endif
#include "acoustic_stencil.h"

/* out = L of the fluxes FLUX(k) = (B_i + B_{i+k}) (f_{i+k} - f_i), unscaled
 * (SWEEP_D2's place in SWEEP_FWD_AXIS_OP). */
#define SWEEP_VRZ_L(out, FLUX)                                               \
  do {                                                                       \
    out = (SWEEP_R)(0.5 * c2[1]) * ((FLUX(1)) + (FLUX(-1)));                 \
    SWEEP_UNROLL                                                             \
    for (int k_ = 2; k_ <= SWEEP_H; ++k_)                                    \
      out = SWEEP_FMA((SWEEP_R)(0.5 * c2[k_]), (FLUX(k_)) + (FLUX(-k_)), out); \
  } while (0)

/* Taps along the axis of SWEEP_FWD_AXIS_OP / SWEEP_VRZ_ADJ_AXIS (u_, g_, ps_,
 * z_, a_, s_: theirs); bb_ points at B of the cell, b0_ is its value. */
#define SWEEP_VRZ_FLUX_U_(k) ((b0_ + SWEEP_LD(bb_ + (k) * s_)) * (SWEEP_LD(u_ + (k) * s_) - u0_))
#define SWEEP_VRZ_TAP_BPSI_(k) (SWEEP_LD(bb_ + (k) * s_) * SWEEP_LD(ps_ + (k) * s_))
#define SWEEP_VRZ_TAP_T_(k) \
  ((1 + a_[k]) * SWEEP_LD(g_ + (k) * s_) + a_[k] * SWEEP_LD(z_ + (k) * s_))
#define SWEEP_VRZ_FLUX_T_(k) ((b0_ + SWEEP_LD(bb_ + (k) * s_)) * (SWEEP_VRZ_TAP_T_(k) - t0_))
#define SWEEP_VRZ_FLUX_G_(k) ((b0_ + SWEEP_LD(bb_ + (k) * s_)) * (SWEEP_LD(g_ + (k) * s_) - g0_))

/* Adjoint terms of one axis (acoustic_stencil.h's SWEEP_ADJ_AXIS, with L_d
 * and the B of P's update): adds them to acc; writes P and Z of the previous
 * step in the CPML.  g points at mu of the cell, a at its CPML profile a. */
#define SWEEP_VRZ_ADJ_AXIS(T, acc, g, P, P_new, Z, Z_new, a, b, s, rdx, rdx2, cpml) \
  do {                                                                       \
    const SWEEP_R *const g_ = (g);                                           \
    const sweep_int s_ = (s);                                                \
    const T g0_ = SWEEP_LD(g_);                                              \
    if (cpml) {                                                              \
      const SWEEP_R *const a_ = (a);                                         \
      const SWEEP_R *const p_ = (P);                                         \
      const SWEEP_R *const z_ = (Z);                                         \
      const T t0_ = SWEEP_VRZ_TAP_T_(0);                                     \
      T lt_, d1t_, d1p_;                                                     \
      SWEEP_VRZ_L(lt_, SWEEP_VRZ_FLUX_T_);                                   \
      SWEEP_D1(d1t_, SWEEP_VRZ_TAP_T_);                                      \
      SWEEP_D1(d1p_, SWEEP_TAP_AP_);                                         \
      acc = SWEEP_FMA(lt_, (rdx2), SWEEP_FMA(-d1p_, (rdx), acc));            \
      SWEEP_ST(P_new, SWEEP_FMA(-b0_ * d1t_, (rdx), (b) * SWEEP_LD(p_)));    \
      SWEEP_ST(Z_new, (b) * (SWEEP_LD(z_) + g0_));                           \
    } else {                                                                 \
      T lg_;                                                                 \
      SWEEP_VRZ_L(lg_, SWEEP_VRZ_FLUX_G_);                                   \
      acc = SWEEP_FMA(lg_, (rdx2), acc);                                     \
    }                                                                        \
  } while (0)

/*
 * Forward update of point i (flat index in one shot's padded field) at
 * coordinates (cz, cy, cx): writes u^{n+1} over u_prev, psi_new and zeta (in
 * place) and returns W^n.  flags: the CPML axes, as acoustic_fwd_point's.
 */
SWEEP_HD SWEEP_R SWEEP_FN(vrz_fwd_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT kappa_dt2,
    const SWEEP_R *SWEEP_RESTRICT buoyancy, const SWEEP_R *SWEEP_RESTRICT u,
    SWEEP_R *SWEEP_RESTRICT u_prev, SWEEP_R *const *psi, SWEEP_R *const *psi_new,
    SWEEP_R *const *zeta, const SWEEP_R *const *pml_a, const SWEEP_R *const *pml_b,
    sweep_int i, sweep_int cz, sweep_int cy, sweep_int cx, const int flags) {
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  const SWEEP_R *const bb_ = buoyancy + i;
  const SWEEP_R b0_ = *bb_, u0_ = u[i];
  SWEEP_R w = 0;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
    SWEEP_FWD_AXIS_OP(SWEEP_VRZ_L, SWEEP_VRZ_FLUX_U_, SWEEP_TAP_U_, SWEEP_VRZ_TAP_BPSI_, SWEEP_R,
                      w, u + i, psi[d] + i, psi_new[d] + i, zeta[d] + i, pml_a[d][c[d]],
                      pml_b[d][c[d]], p->stride[d], (SWEEP_R)p->rdx[d], (SWEEP_R)p->rdx2[d],
                      flags & (1 << d));
  u_prev[i] = SWEEP_LEAPFROG(kappa_dt2[i], w, u0_, u_prev[i]);
  return w;
}

/* Boundary saving: W^n of band cell i at (cz, cy, cx), bitwise vrz_fwd_point's
 * there (up to the sign of a zero), from u^n on the model and the ring (u)
 * and psi^n of each ring cell along its axis (rpsi), as
 * acoustic_w_band_point. */
#define SWEEP_VRZ_TAP_RING_BPSI_(k) (SWEEP_LD(bb_ + (k) * s_) * SWEEP_TAP_RING_PSI_(k))
SWEEP_HD SWEEP_R SWEEP_FN(vrz_w_band_point)(const sweep_acoustic_params *p,
                                            const SWEEP_R *SWEEP_RESTRICT buoyancy,
                                            const SWEEP_R *SWEEP_RESTRICT u,
                                            const SWEEP_R *SWEEP_RESTRICT rpsi, sweep_int i,
                                            sweep_int cz, sweep_int cy, sweep_int cx,
                                            const int flags) {
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  const SWEEP_R *const bb_ = buoyancy + i;
  const SWEEP_R b0_ = *bb_, u0_ = u[i];
  SWEEP_R w = 0;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) {
    const sweep_int cd_ = c[d];
    const SWEEP_R rdx_ = (SWEEP_R)p->rdx[d], rdx2_ = (SWEEP_R)p->rdx2[d];
    SWEEP_RING_BOUNDS(p, d);
    (void)cd_;
    SWEEP_BAND_AXIS_OP(SWEEP_VRZ_L, SWEEP_VRZ_FLUX_U_, SWEEP_VRZ_TAP_RING_BPSI_, SWEEP_R, w,
                       u + i, rpsi + i, p->stride[d], rdx_, rdx2_, flags & (1 << d));
  }
  return w;
}

/*
 * Adjoint update of point i in mu = K lambda: mu holds that of u^{n+1},
 * mu_prev that of u^{n+2} on entry and receives that of u^n; P/Z hold the
 * adjoints of psi^{n+1}/zeta^{n+1}, P_new/Z_new receive those of
 * psi^n/zeta^n (as acoustic_adj_point).
 */
SWEEP_HD void SWEEP_FN(vrz_adj_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT kappa_dt2,
    const SWEEP_R *SWEEP_RESTRICT buoyancy, const SWEEP_R *SWEEP_RESTRICT mu,
    SWEEP_R *SWEEP_RESTRICT mu_prev, SWEEP_R *const *P, SWEEP_R *const *P_new,
    SWEEP_R *const *Z, SWEEP_R *const *Z_new, const SWEEP_R *const *pml_a,
    const SWEEP_R *const *pml_b, sweep_int i, sweep_int cz, sweep_int cy, sweep_int cx,
    const int flags) {
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  const SWEEP_R *const bb_ = buoyancy + i;
  const SWEEP_R b0_ = *bb_;
  SWEEP_R acc = 0;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
    SWEEP_VRZ_ADJ_AXIS(SWEEP_R, acc, mu + i, P[d] + i, P_new[d] + i, Z[d] + i, Z_new[d] + i,
                       pml_a[d] + c[d], pml_b[d][c[d]], p->stride[d], (SWEEP_R)p->rdx[d],
                       (SWEEP_R)p->rdx2[d], flags & (1 << d));
  mu_prev[i] = SWEEP_LEAPFROG(kappa_dt2[i], acc, mu[i], mu_prev[i]);
}

/* u of the snapshot at o cells from a stored cell along axis d: su[m] is u of
 * the cell, cd its coordinate along d, cs the snapshot's stride along d.
 * Outside the stored cells (the halo) u is zero, or behind a free surface the
 * odd mirror of the cell across the surface row. */
SWEEP_HD SWEEP_R SWEEP_FN(vrz_snapshot_u)(const sweep_acoustic_params *p,
                                          const SWEEP_R *SWEEP_RESTRICT su, sweep_int m,
                                          int d, sweep_int cd, sweep_int o, sweep_int cs) {
  const sweep_int c = cd + o;
  if (c < p->store_lo[d])
    return p->free_lo[d] ? -su[m + (2 * p->store_lo[d] - c - cd) * cs] : (SWEEP_R)0;
  if (c >= p->store_hi[d])
    return p->free_hi[d] ? -su[m + (2 * (p->store_hi[d] - 1) - c - cd) * cs] : (SWEEP_R)0;
  return su[m + o * cs];
}

/*
 * The model gradients of stored cell i of one shot from the adjoint state of
 * step n + 1 (mu; Z per axis) and the snapshot of step n: su[m] is u^n of the
 * cell (m: its index in the compact snapshot of u), sw[k] W^n and
 * sp[d' xs + k] psi^n of the d'-th axis.  With recompute (a plain cell, flags
 * 0, whose W the snapshot does not hold) W^n = sum_d L_d u^n rdx2 is formed
 * from the same taps of u in the axis loop, in vrz_fwd_point's arithmetic,
 * so bitwise the forward's (up to contractions the compiler chooses), and
 * sw, sp are not read.  Adds the K-part to gk[i] and dL/dB to gb[i] (see the
 * top).  flags: the CPML axes of the cell; edge (a compile-time constant in
 * the CPU rows): 0 where the cell's taps stay within the stored cells
 * (SWEEP_H cells or more from the halo along every axis), 1 anywhere.
 */
SWEEP_HD void SWEEP_FN(vrz_gradient_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT mu, SWEEP_R *const *Z,
    const SWEEP_R *const *pml_a, const SWEEP_R *SWEEP_RESTRICT buoyancy,
    const SWEEP_R *SWEEP_RESTRICT su, const SWEEP_R *SWEEP_RESTRICT sw,
    const SWEEP_R *SWEEP_RESTRICT sp, sweep_int xs, SWEEP_R *SWEEP_RESTRICT gk,
    SWEEP_R *SWEEP_RESTRICT gb, sweep_int i, sweep_int m, sweep_int k_, sweep_int cz,
    sweep_int cy, sweep_int cx, const int flags, const int edge, const int recompute) {
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  const sweep_int n2 = p->store_hi[2] - p->store_lo[2];
  const sweep_int cs[3] = {(p->store_hi[1] - p->store_lo[1]) * n2, n2, 1};
  const SWEEP_R u0 = su[m];
  const SWEEP_R *const g_ = mu + i;
  const SWEEP_R *const bb_ = buoyancy + i;
  const SWEEP_R b0_ = *bb_;
  SWEEP_R w = 0, grad = 0;
  (void)bb_;
  (void)b0_;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) {
    const int cpml = flags & (1 << d);
    const sweep_int s_ = p->stride[d];
    const SWEEP_R *const a_ = pml_a[d] + c[d];
    const SWEEP_R *const z_ = cpml ? Z[d] + i : g_;
    (void)a_;
    (void)z_;
#define SWEEP_VRZ_T_(k) (cpml ? SWEEP_VRZ_TAP_T_(k) : g_[(k) * s_])
#define SWEEP_VRZ_SNAP_U_(k) \
  (edge ? SWEEP_FN(vrz_snapshot_u)(p, su, m, d, c[d], k, cs[d]) : su[m + (k) * cs[d]])
    const SWEEP_R t0 = SWEEP_VRZ_T_(0);
    if (recompute) { /* this axis's L_d u^n rdx2, as vrz_fwd_point's plain axis */
#define SWEEP_VRZ_FLUX_SU_(k) ((b0_ + SWEEP_LD(bb_ + (k) * s_)) * (SWEEP_VRZ_SNAP_U_(k) - u0))
      SWEEP_R d2u;
      SWEEP_VRZ_L(d2u, SWEEP_VRZ_FLUX_SU_);
#undef SWEEP_VRZ_FLUX_SU_
      w = SWEEP_W_PLAIN(w, d2u, (SWEEP_R)p->rdx2[d]);
    }
    SWEEP_R sum = 0;
    SWEEP_UNROLL
    for (int k = 1; k <= SWEEP_H; ++k)
      sum = SWEEP_FMA((SWEEP_R)(0.5 * c2[k]),
                      (SWEEP_VRZ_SNAP_U_(k) - u0) * (t0 - SWEEP_VRZ_T_(k)) +
                          (SWEEP_VRZ_SNAP_U_(-k) - u0) * (t0 - SWEEP_VRZ_T_(-k)),
                      sum);
    for (int side = 0; edge && side < 2; ++side) {
      if (c[d] != (side ? p->store_hi[d] - 1 : p->store_lo[d])) continue;
      if (side ? p->free_hi[d] : p->free_lo[d]) {
        sum *= (SWEEP_R)0.5; /* the surface row */
        continue;
      }
      /* The halo's B copies this edge cell's. */
      const int dir = side ? -1 : 1;
      SWEEP_R weight = 0;
      for (int k = SWEEP_H; k >= 1; --k) {
        weight += (SWEEP_R)(0.5 * c2[k]); /* sum_{k' > k - 1} h_k' */
        sum -= weight * SWEEP_VRZ_SNAP_U_(dir * (k - 1)) * SWEEP_VRZ_T_(dir * (k - 1));
      }
    }
    SWEEP_R gd = sum * (SWEEP_R)p->rdx2[d];
    if (cpml) {
      SWEEP_R d1t;
      SWEEP_D1(d1t, SWEEP_VRZ_T_);
      gd = SWEEP_FMA(-sp[(d - SWEEP_FIRST_AXIS) * xs + k_] * d1t, (SWEEP_R)p->rdx[d], gd);
    }
    grad += gd;
#undef SWEEP_VRZ_T_
#undef SWEEP_VRZ_SNAP_U_
  }
  gk[i] = SWEEP_FMA(*g_, recompute ? w : sw[k_], gk[i]);
  gb[i] += grad;
}
