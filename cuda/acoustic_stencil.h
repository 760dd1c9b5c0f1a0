/*
 * Constant-density acoustic wave equation: one grid point of one time step,
 * forward and adjoint.  The single definition of the stencil and the CPML
 * update, shared by the C/OpenMP kernels (sweep_cy/acoustic_cpu_impl.h) and the
 * CUDA kernels (cuda/acoustic.cu).  Included once per specialisation, so it
 * has no include guard; see sweep_common.h for the macros it needs.
 *
 * PDE: lap u - u_tt / v^2 = f (the sign convention of Deepwave and most
 * seismic codes), i.e. u_tt = v^2 (lap u - f).  Leapfrog in time, centred
 * differences of order SWEEP_ORDER in space, C-PML (Komatitsch & Martin 2007 form, second
 * order in time after Pasalic & McGarry 2010).  Per axis d, with CPML
 * profiles a_d <= 0 and b_d in (0, 1] (both zero outside the CPML):
 *
 *   t_d          = D2_d u^n + D1_d psi_d^n
 *   zeta_d^{n+1} = b_d zeta_d^n + a_d t_d
 *   psi_d^{n+1}  = b_d psi_d^n + a_d D1_d u^n
 *   W^n          = sum_d (t_d + zeta_d^{n+1})
 *   u^{n+1}      = v^2 dt^2 W^n + 2 u^n - u^{n-1}   (- v^2 dt^2 f at sources)
 *
 * Away from the CPML (psi = zeta = a = b = 0 within a halo) this reduces
 * exactly to W = lap u, so the "plain" path below is the same linear operator.
 *
 * Adjoint (the exact transpose of the step above; D2^T = D2, D1^T = -D1 on
 * zero-padded fields).  With lambda = adjoint of u^{n+1}, P_d = adjoint of
 * psi_d^{n+1}, Z_d = adjoint of zeta_d^{n+1}:
 *
 *   lambda^n  = 2 lambda - lambda^{n+1}_prev
 *               + sum_d [D2_d((1 + a_d) g) + D2_d(a_d Z_d) - D1_d(a_d P_d)]
 *   P_d^n     = b_d P_d - D1_d((1 + a_d) g) - D1_d(a_d Z_d)
 *   Z_d^n     = b_d (Z_d + g),      g = v^2 dt^2 lambda.
 *
 * The kernels carry mu = v^2 dt^2 lambda instead of lambda (a diagonal change
 * of variables, so the same operator in exact arithmetic): g is then the field
 * itself and the update has the forward's shape,
 *
 *   mu^n = v^2 dt^2 A + 2 mu - mu^{n+1}_prev,   A = the sum over d above,
 *
 * with P and Z unchanged.  That saves a pass that formed g every step (a
 * third of the 2D adjoint's time).  Residuals enter as v^2 dt^2 r, the
 * source-amplitude gradient is -mu, and the drivers accumulate
 * sum_n mu^{n+1} W^n, which the caller divides by v^2 dt^2 once at the end.
 *
 * Assumptions: every field is zero on the outer halo (the adjoint's free
 * surface ghosts are odd mirrors, written by the caller); psi and zeta are zero
 * outside the CPML.  The forward update returns W^n, the factor that
 * multiplies v^2 dt^2, so the model gradient is sum_n lambda^{n+1} W^n; the
 * drivers store it (full storage) or recompute it (boundary saving).
 *
 * Boundary saving runs the leapfrog backwards on the model cells farther than
 * a halo from the CPML ("plain" cells, where W is the plain Laplacian):
 *   u^{n-1} = v^2 dt^2 W^n + 2 u^n - u^{n+1}   (- v^2 dt^2 f at sources)
 * with u^n of the remaining model cells (the band) saved in the forward pass;
 * the band's W^n is recomputed from it, the plain cells' u^n and the state of
 * the CPML cells next to the band (acoustic_w_band_point).
 */

#define SWEEP_H (SWEEP_ORDER / 2)
#define SWEEP_FN(name) SWEEP_CAT3(name, _, SWEEP_SUFFIX)
#define SWEEP_R SWEEP_REAL
#define SWEEP_FIRST_AXIS (3 - SWEEP_NDIM)

/* out = sum of weighted second / first differences of ACC(k) (k = offset). */
#define SWEEP_D2(out, ACC)                                                   \
  do {                                                                       \
    out = (SWEEP_R)c2[0] * (ACC(0));                                         \
    SWEEP_UNROLL                                                             \
    for (int k_ = 1; k_ <= SWEEP_H; ++k_)                                    \
      out = SWEEP_FMA((SWEEP_R)c2[k_], (ACC(k_)) + (ACC(-k_)), out);         \
  } while (0)
#define SWEEP_D1(out, ACC)                                                   \
  do {                                                                       \
    out = (SWEEP_R)c1[0] * ((ACC(1)) - (ACC(-1)));                           \
    SWEEP_UNROLL                                                             \
    for (int k_ = 2; k_ <= SWEEP_H; ++k_)                                    \
      out = SWEEP_FMA((SWEEP_R)c1[k_ - 1], (ACC(k_)) - (ACC(-k_)), out);     \
  } while (0)

/* The arithmetic that combines the tap sums, generic in the value type (a
 * scalar here and on CUDA; a whole vector of x cells in the CPU's explicit
 * vector rows, acoustic_cpu_vec.h), so every path rounds identically. */
#define SWEEP_LEAPFROG(v2dt2, w, u, u_other) SWEEP_FMA((v2dt2), (w), 2 * (u) - (u_other))
/* One axis's share of W, t + zeta^{n+1} with t = D2 u rdx2 + D1 psi rdx, from
 * the unscaled D2 u: added last, in one rounding, so that where psi and
 * zeta^{n+1} are zero it is exactly the plain axis's SWEEP_W_PLAIN. */
#define SWEEP_W_PLAIN(w, d2u, rdx2) SWEEP_FMA((d2u), (rdx2), (w))
#define SWEEP_W_AXIS(w, d2u, rdx2, d1psi, rdx, zn) \
  SWEEP_FMA((d2u), (rdx2), (w) + SWEEP_FMA((d1psi), (rdx), (zn)))
/* CPML terms of one axis (values of type T; d2u unscaled): zeta^{n+1} to zn,
 * psi^{n+1} to pn; adds t + zeta^{n+1} to w. */
#define SWEEP_CPML_FWD(T, w, d2u, d1u, d1psi, zeta_old, psi_old, a, b, rdx, rdx2, zn, pn) \
  do {                                                                       \
    const T t_ = SWEEP_FMA((d1psi), (rdx), (d2u) * (rdx2));                 \
    zn = SWEEP_FMA((b), (zeta_old), (a) * t_);                               \
    pn = SWEEP_FMA((b), (psi_old), (a) * ((d1u) * (rdx)));                   \
    w = SWEEP_W_AXIS(w, d2u, rdx2, d1psi, rdx, zn);                          \
  } while (0)

#define SWEEP_COEFFS                                                         \
  const double c1[SWEEP_H] = SWEEP_CAT(SWEEP_D1_, SWEEP_ORDER);              \
  const double c2[SWEEP_H + 1] = SWEEP_CAT(SWEEP_D2_, SWEEP_ORDER);          \
  (void)c1;                                                                  \
  (void)c2

/*
 * The per-axis terms, written once for every path.  Values are read and
 * written through SWEEP_LD(ptr) / SWEEP_ST(ptr, value): one value here (and
 * on CUDA), a vector of consecutive x cells in the CPU's explicit vector rows
 * (sweep_cy/acoustic_cpu_vec.h; sweep_cy/cpu_vec.h redefines them).  Pointers point at the
 * cell; s is the axis stride; cpml (a compile-time constant) selects the CPML
 * terms, which need a, b of the cell's coordinate along the axis.
 */
#define SWEEP_LD(ptr) (*(ptr))
#define SWEEP_ST(ptr, value) (*(ptr) = (value))
#define SWEEP_TAP_U_(k) SWEEP_LD(u_ + (k) * s_)
#define SWEEP_TAP_PSI_(k) SWEEP_LD(ps_ + (k) * s_)

/* Forward: adds this axis's share of W^n to w; updates zeta in place and
 * writes psi^{n+1} in the CPML.  SWEEP_FWD_AXIS_TAPS takes the taps of u and
 * psi as macros TAP_U(k), TAP_PSI(k) (the vector rows' x taps come from
 * registers); SWEEP_FWD_AXIS loads them along the stride.
 * SWEEP_FWD_AXIS_OP is the same with the second-order operator made a
 * parameter: OP(out, TAP_OP) in place of SWEEP_D2(out, TAP_U), so an
 * equation with another operator (VRZ's variable-coefficient one,
 * vrz_stencil.h) shares the CPML terms. */
#define SWEEP_FWD_AXIS(T, w, u, ps, ps_new, zt, a, b, s, rdx, rdx2, cpml)      \
  SWEEP_FWD_AXIS_TAPS(SWEEP_TAP_U_, SWEEP_TAP_PSI_, T, w, u, ps, ps_new, zt, a, b, s, rdx, \
                      rdx2, cpml)
#define SWEEP_FWD_AXIS_TAPS(TAP_U, TAP_PSI, T, w, u, ps, ps_new, zt, a, b, s, rdx, rdx2,  \
                            cpml)                                            \
  SWEEP_FWD_AXIS_OP(SWEEP_D2, TAP_U, TAP_U, TAP_PSI, T, w, u, ps, ps_new, zt, a, b, s, rdx, \
                    rdx2, cpml)
#define SWEEP_FWD_AXIS_OP(OP, TAP_OP, TAP_U, TAP_PSI, T, w, u, ps, ps_new, zt, a, b, s, rdx, \
                          rdx2, cpml)                                        \
  do {                                                                       \
    const SWEEP_R *const u_ = (u);                                           \
    const sweep_int s_ = (s);                                                \
    (void)u_;                                                                \
    (void)s_;                                                                \
    T d2u_;                                                                  \
    OP(d2u_, TAP_OP);                                                        \
    if (cpml) {                                                              \
      const SWEEP_R *const ps_ = (ps);                                       \
      T d1psi_, d1u_, zn_, pn_;                                              \
      SWEEP_D1(d1psi_, TAP_PSI);                                             \
      SWEEP_D1(d1u_, TAP_U);                                                 \
      SWEEP_CPML_FWD(T, w, d2u_, d1u_, d1psi_, SWEEP_LD(zt), SWEEP_LD(ps_),  \
                     (a), (b), (rdx), (rdx2), zn_, pn_);                     \
      SWEEP_ST(zt, zn_);                                                     \
      SWEEP_ST(ps_new, pn_);                                                 \
    } else {                                                                 \
      w = SWEEP_W_PLAIN(w, d2u_, (rdx2));                                    \
    }                                                                        \
  } while (0)

/* Adjoint: adds this axis's terms to acc; writes the adjoint psi and zeta of
 * the previous step in the CPML.  g = v^2 dt^2 lambda (the adjoint field mu
 * itself), gi its value at the cell; a points at the CPML profile a of the cell (a[k]: k cells along).
 * SWEEP_ADJ_AXIS_TAPS takes the taps (g, (1 + a) g, a Z, a P) as macros. */
#define SWEEP_TAP_G_(k) SWEEP_LD(g_ + (k) * s_)
#define SWEEP_TAP_AG_(k) ((1 + a_[k]) * SWEEP_LD(g_ + (k) * s_))
#define SWEEP_TAP_AZ_(k) (a_[k] * SWEEP_LD(z_ + (k) * s_))
#define SWEEP_TAP_AP_(k) (a_[k] * SWEEP_LD(p_ + (k) * s_))
#define SWEEP_ADJ_AXIS(T, acc, g, gi, P, P_new, Z, Z_new, a, b, s, rdx, rdx2, cpml) \
  SWEEP_ADJ_AXIS_TAPS(SWEEP_TAP_G_, SWEEP_TAP_AG_, SWEEP_TAP_AZ_, SWEEP_TAP_AP_, T, acc, g, \
                      gi, P, P_new, Z, Z_new, a, b, s, rdx, rdx2, cpml)
#define SWEEP_ADJ_AXIS_TAPS(TAP_G, TAP_AG, TAP_AZ, TAP_AP, T, acc, g, gi, P, P_new, Z,    \
                            Z_new, a, b, s, rdx, rdx2, cpml)                 \
  do {                                                                       \
    const SWEEP_R *const g_ = (g);                                           \
    const sweep_int s_ = (s);                                                \
    (void)g_;                                                                \
    (void)s_;                                                                \
    if (cpml) {                                                              \
      const SWEEP_R *const a_ = (a);                                         \
      const SWEEP_R *const p_ = (P);                                         \
      const SWEEP_R *const z_ = (Z);                                         \
      (void)a_;                                                              \
      T d2g_, d1g_, d2z_, d1z_, d1p_;                                        \
      SWEEP_D2(d2g_, TAP_AG);                                                \
      SWEEP_D1(d1g_, TAP_AG);                                                \
      SWEEP_D2(d2z_, TAP_AZ);                                                \
      SWEEP_D1(d1z_, TAP_AZ);                                                \
      SWEEP_D1(d1p_, TAP_AP);                                                \
      acc = SWEEP_FMA(d2g_ + d2z_, (rdx2), SWEEP_FMA(-d1p_, (rdx), acc));    \
      SWEEP_ST(P_new, SWEEP_FMA(-(d1g_ + d1z_), (rdx), (b) * SWEEP_LD(p_)));  \
      SWEEP_ST(Z_new, (b) * (SWEEP_LD(z_) + (gi)));                          \
    } else {                                                                 \
      T d2g_;                                                                \
      SWEEP_D2(d2g_, TAP_G);                                                 \
      acc = SWEEP_FMA(d2g_, (rdx2), acc);                                    \
    }                                                                        \
  } while (0)

/*
 * Forward update of point i (flat index in one shot's padded field) at
 * coordinates (c0, c1, c2).  Writes u^{n+1} over u_prev, psi_new, zeta (in
 * place) and returns W^n.  Bit d of flags selects the CPML terms along axis
 * d; a clear bit uses the plain stencil, which is exact wherever the point is
 * farther than a halo from the CPML along that axis.  flags is a compile-time
 * constant in the CPU loops, so each combination compiles to its own
 * branch-free (vectorisable) body.
 */
SWEEP_HD SWEEP_R SWEEP_FN(acoustic_fwd_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT v2dt2,
    const SWEEP_R *SWEEP_RESTRICT u, SWEEP_R *SWEEP_RESTRICT u_prev,
    SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,
    const SWEEP_R *const *pml_a, const SWEEP_R *const *pml_b,
    sweep_int i, sweep_int cz, sweep_int cy, sweep_int cx, const int flags) {
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  SWEEP_R w = 0;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
    SWEEP_FWD_AXIS(SWEEP_R, w, u + i, psi[d] + i, psi_new[d] + i, zeta[d] + i, pml_a[d][c[d]],
                   pml_b[d][c[d]], p->stride[d], (SWEEP_R)p->rdx[d], (SWEEP_R)p->rdx2[d],
                   flags & (1 << d));
  u_prev[i] = SWEEP_LEAPFROG(v2dt2[i], w, u[i], u_prev[i]);
  return w;
}

/* Boundary saving: whether coordinate c along the axis of SWEEP_RING_BOUNDS
 * is a ring cell's (a stored cell outside the model, sweep/_grid.py's
 * ring_idx); the band's stencil reads psi there and nowhere else (psi is
 * zero on the model).  The bounds are read before the taps and combined
 * with & and |, not ?: or &&: with a branch per tap, or a load of them under
 * the CPML branch, the CPU's band rows ran as scalar code. */
#define SWEEP_RING_BOUNDS(p, d)                                                 \
  const sweep_int rml_ = (p)->model_lo[d], rmh_ = (p)->model_hi[d];             \
  const sweep_int rsl_ = (p)->store_lo[d], rsh_ = (p)->store_hi[d];             \
  (void)rml_;                                                                   \
  (void)rmh_;                                                                   \
  (void)rsl_;                                                                   \
  (void)rsh_
#define SWEEP_RING_TAP(c) ((((c) >= rsl_) & ((c) < rml_)) | (((c) >= rmh_) & ((c) < rsh_)))
/* psi tap k of a band cell: the ring's, zero (up to its sign) on the model,
 * where rpsi holds other (finite) values; a product, not a branch. */
#define SWEEP_TAP_RING_PSI_(k) (SWEEP_LD(ps_ + (k) * s_) * (SWEEP_R)SWEEP_RING_TAP(cd_ + (k)))

/* One axis's share of W^n at a band cell, as SWEEP_FWD_AXIS_OP adds it
 * there, psi's taps through TAP_PSI (the ring's).  The CPML profiles are zero
 * on the model, so the forward's zeta^{n+1} = b zeta^n + a t is +0 there (a
 * fused +0 addend): W takes SWEEP_W_AXIS with zn = 0, and psi^{n+1} and
 * zeta are neither read nor written (with them in a local array the CPU's
 * band rows did not vectorise). */
#define SWEEP_BAND_AXIS_OP(OP, TAP_OP, TAP_PSI, T, w, u, ps, s, rdx, rdx2, cpml) \
  do {                                                                       \
    const SWEEP_R *const u_ = (u);                                           \
    const sweep_int s_ = (s);                                                \
    (void)u_;                                                                \
    (void)s_;                                                                \
    T d2u_;                                                                  \
    OP(d2u_, TAP_OP);                                                        \
    if (cpml) {                                                              \
      const SWEEP_R *const ps_ = (ps);                                       \
      T d1psi_;                                                              \
      SWEEP_D1(d1psi_, TAP_PSI);                                             \
      w = SWEEP_W_AXIS(w, d2u_, (rdx2), d1psi_, (rdx), (T)0);                \
    } else {                                                                 \
      w = SWEEP_W_PLAIN(w, d2u_, (rdx2));                                    \
    }                                                                        \
  } while (0)

/*
 * W^n of band cell i (a model cell within a halo of the CPML) at (cz, cy,
 * cx), bitwise what acoustic_fwd_point returned there (up to the sign of a
 * zero): u holds u^n on the model and the ring, rpsi psi^n of each ring cell
 * along its axis (the CPML replay's; boundary saving's adjoint).  flags: the
 * cell's CPML axes, as the forward's; psi is read only on the ring.
 */
SWEEP_HD SWEEP_R SWEEP_FN(acoustic_w_band_point)(const sweep_acoustic_params *p,
                                                 const SWEEP_R *SWEEP_RESTRICT u,
                                                 const SWEEP_R *SWEEP_RESTRICT rpsi, sweep_int i,
                                                 sweep_int cz, sweep_int cy, sweep_int cx,
                                                 const int flags) {
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  SWEEP_R w = 0;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) {
    const sweep_int cd_ = c[d];
    const SWEEP_R rdx_ = (SWEEP_R)p->rdx[d], rdx2_ = (SWEEP_R)p->rdx2[d];
    SWEEP_RING_BOUNDS(p, d);
    (void)cd_;
    SWEEP_BAND_AXIS_OP(SWEEP_D2, SWEEP_TAP_U_, SWEEP_TAP_RING_PSI_, SWEEP_R, w, u + i, rpsi + i,
                       p->stride[d], rdx_, rdx2_, flags & (1 << d));
  }
  return w;
}

/* The model-gradient correlation of band cell i (acoustic_recon_point's on a
 * plain cell): grad += mu^{n+1} W^n, W^n from acoustic_w_band_point. */
SWEEP_HD void SWEEP_FN(acoustic_recon_band_point)(const sweep_acoustic_params *p,
                                                  const SWEEP_R *SWEEP_RESTRICT u,
                                                  const SWEEP_R *SWEEP_RESTRICT rpsi,
                                                  const SWEEP_R *SWEEP_RESTRICT mu,
                                                  SWEEP_R *SWEEP_RESTRICT grad, sweep_int i,
                                                  sweep_int cz, sweep_int cy, sweep_int cx,
                                                  const int flags) {
  grad[i] += mu[i] * SWEEP_FN(acoustic_w_band_point)(p, u, rpsi, i, cz, cy, cx, flags);
}

/* W^n of a plain cell (the plain Laplacian of u), as the forward computes it. */
SWEEP_HD SWEEP_R SWEEP_FN(acoustic_w_plain_point)(const sweep_acoustic_params *p,
                                                  const SWEEP_R *SWEEP_RESTRICT u, sweep_int i) {
  SWEEP_COEFFS;
  SWEEP_R w = 0;
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) {
    const sweep_int s = p->stride[d];
    SWEEP_R d2u;
#define ACC_U(k) u[i + (k) * s]
    SWEEP_D2(d2u, ACC_U);
#undef ACC_U
    w = SWEEP_W_PLAIN(w, d2u, (SWEEP_R)p->rdx2[d]);
  }
  return w;
}

/*
 * One backward-in-time step of the forward wavefield at a plain cell, fused
 * with the model-gradient correlation: u_next holds u^{n+1} and receives
 * u^{n-1} (sources are removed by the caller); grad += mu^{n+1} W^n (the
 * adjoint variable the kernels carry, see the top).
 */
SWEEP_HD void SWEEP_FN(acoustic_recon_point)(const sweep_acoustic_params *p,
                                             const SWEEP_R *SWEEP_RESTRICT v2dt2,
                                             const SWEEP_R *SWEEP_RESTRICT u,
                                             SWEEP_R *SWEEP_RESTRICT u_next,
                                             const SWEEP_R *SWEEP_RESTRICT mu,
                                             SWEEP_R *SWEEP_RESTRICT grad, sweep_int i) {
  const SWEEP_R w = SWEEP_FN(acoustic_w_plain_point)(p, u, i);
  grad[i] = SWEEP_FMA(mu[i], w, grad[i]);
  u_next[i] = SWEEP_LEAPFROG(v2dt2[i], w, u[i], u_next[i]);
}

/*
 * Adjoint update of point i, in mu = v^2 dt^2 lambda (see the top): mu holds
 * that of u^{n+1}, mu_prev that of u^{n+2} on entry and receives that of
 * u^n.  P/Z hold the adjoints of psi^{n+1}/zeta^{n+1}; P_new/Z_new receive
 * those of psi^n/zeta^n.  The CPML bits of flags mean what they mean in the
 * forward update; the model-gradient correlation is the caller's (it depends
 * on the strategy).  Returns A, the factor of v^2 dt^2 (the adjoint's
 * counterpart of W^n; Born's adjoint scatters it, lsrtm_stencil.h).
 */
SWEEP_HD SWEEP_R SWEEP_FN(acoustic_adj_point)(
    const sweep_acoustic_params *p, const SWEEP_R *SWEEP_RESTRICT v2dt2,
    const SWEEP_R *SWEEP_RESTRICT mu, SWEEP_R *SWEEP_RESTRICT mu_prev,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pml_a, const SWEEP_R *const *pml_b,
    sweep_int i, sweep_int cz, sweep_int cy, sweep_int cx, const int flags) {
  SWEEP_COEFFS;
  const sweep_int c[3] = {cz, cy, cx};
  SWEEP_R acc = 0;
  const SWEEP_R mi = mu[i];
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
    SWEEP_ADJ_AXIS(SWEEP_R, acc, mu + i, mi, P[d] + i, P_new[d] + i, Z[d] + i, Z_new[d] + i,
                   pml_a[d] + c[d], pml_b[d][c[d]], p->stride[d], (SWEEP_R)p->rdx[d],
                   (SWEEP_R)p->rdx2[d], flags & (1 << d));
  mu_prev[i] = SWEEP_LEAPFROG(v2dt2[i], acc, mi, mu_prev[i]);
  return acc;
}

/* The includer that still needs these macros (the CPU kernels' vector rows)
 * includes acoustic_stencil_undef.h itself when it is done with them. */
#ifndef SWEEP_STENCIL_KEEP_MACROS
#include "acoustic_stencil_undef.h"
#endif
