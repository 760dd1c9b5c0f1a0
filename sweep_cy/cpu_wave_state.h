/*
 * The CPU skeleton's state hooks (cpu_skeleton.h) of one second-order field
 * with CPML memory variables, which the acoustic and VRZ plug-ins share (in
 * their fields records under the names of sweep_acoustic_fields): forward,
 * u (u^n) and u_prev (u^{n-1}, which receives u^{n+1}), psi and psi_new per
 * axis, all swapped after every step, and zeta, updated in place; adjoint,
 * mu and mu_prev in the same slots, the adjoint psi (P, P_new) and zeta (Z,
 * Z_new), all swapped.  A plug-in defines its hooks from these and adds its
 * own locals.  Included once per specialisation, after cpu_rows.h.
 */

/* Declarations of SWEEP_EQ_FWD_STATE: u, u_prev and the psi pair of every
 * axis, all shots. */
#define SWEEP_WAVE_FWD_STATE(f)                                       \
  SWEEP_R *u_prev = (SWEEP_R *)(f)->u_prev, *u = (SWEEP_R *)(f)->u;  \
  void *psi_all[3], *psi_new_all[3];                                 \
  for (int d = 0; d < 3; ++d) {                                      \
    psi_all[d] = (f)->psi[d];                                        \
    psi_new_all[d] = (f)->psi_new[d];                                \
  }
/* SWEEP_EQ_FWD_SHOT: psi, psi_new and zeta per axis of the shot at off. */
#define SWEEP_WAVE_FWD_SHOT(f, off)                \
  SWEEP_R *psi[3], *psi_new[3], *zeta[3];          \
  SWEEP_FN(shot_axes)(psi_all, off, psi);          \
  SWEEP_FN(shot_axes)(psi_new_all, off, psi_new);  \
  SWEEP_FN(shot_axes)((f)->zeta, off, zeta)
#define SWEEP_WAVE_FWD_ROTATE()                        \
  do {                                                 \
    SWEEP_SWAP(SWEEP_R *, u_prev, u);                  \
    for (int d = 0; d < 3; ++d)                        \
      SWEEP_SWAP(void *, psi_all[d], psi_new_all[d]);  \
  } while (0)
/* The state part of SWEEP_EQ_BLOCK_STATE: after an odd number of steps since
 * the first, u is in u_prev and psi in psi_new. */
#define SWEEP_WAVE_BLOCK_STATE(f, odd, off)                                   \
  SWEEP_R *u = (SWEEP_R *)((odd) ? (f)->u_prev : (f)->u) + (off);            \
  SWEEP_R *u_prev = (SWEEP_R *)((odd) ? (f)->u : (f)->u_prev) + (off);       \
  SWEEP_R *psi[3], *psi_new[3], *zeta[3];                                    \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi_new : (f)->psi, off, psi);            \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi : (f)->psi_new, off, psi_new);        \
  SWEEP_FN(shot_axes)((f)->zeta, off, zeta)

/* The blocked adjoint (cpu_blocking.h): mu, mu_prev and the P, Pn, Z, Zn
 * of every axis of one shot (offset by off) after an odd (1) or even (0)
 * number of steps, under the names SWEEP_WAVE_ADJ_SHOT gives them. */
#define SWEEP_WAVE_ADJ_BLOCK_STATE(f, odd, off)                                 \
  SWEEP_R *mu = (SWEEP_R *)((odd) ? (f)->u_prev : (f)->u) + (off);              \
  SWEEP_R *mu_prev = (SWEEP_R *)((odd) ? (f)->u : (f)->u_prev) + (off);         \
  SWEEP_R *P[3], *Pn[3], *Z[3], *Zn[3];                                         \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi_new : (f)->psi, off, P);                 \
  SWEEP_FN(shot_axes)((odd) ? (f)->psi : (f)->psi_new, off, Pn);                \
  SWEEP_FN(shot_axes)((odd) ? (f)->zeta_new : (f)->zeta, off, Z);               \
  SWEEP_FN(shot_axes)((odd) ? (f)->zeta : (f)->zeta_new, off, Zn)

/* Adjoint: the P and Z pairs of every axis, all shots (after the plug-in's
 * mu, mu_prev). */
#define SWEEP_WAVE_ADJ_AXES(f)                                                        \
  void *P_all[3], *Pn_all[3], *Z_all[3], *Zn_all[3];                                 \
  for (int d = 0; d < 3; ++d) {                                                      \
    P_all[d] = (f)->psi[d];                                                          \
    Pn_all[d] = (f)->psi_new[d];                                                     \
    Z_all[d] = (f)->zeta[d];                                                         \
    Zn_all[d] = (f)->zeta_new[d];                                                    \
  }
/* SWEEP_EQ_ADJ_SHOT's P, Pn, Z and Zn per axis of the shot at off. */
#define SWEEP_WAVE_ADJ_SHOT(f, off)               \
  SWEEP_R *P[3], *Pn[3], *Z[3], *Zn[3];           \
  SWEEP_FN(shot_axes)(P_all, off, P);             \
  SWEEP_FN(shot_axes)(Pn_all, off, Pn);           \
  SWEEP_FN(shot_axes)(Z_all, off, Z);             \
  SWEEP_FN(shot_axes)(Zn_all, off, Zn)
/* The swap of the P and Z pairs in SWEEP_EQ_ADJ_ROTATE. */
#define SWEEP_WAVE_ADJ_SWAP_AXES()           \
  for (int d = 0; d < 3; ++d) {              \
    SWEEP_SWAP(void *, P_all[d], Pn_all[d]); \
    SWEEP_SWAP(void *, Z_all[d], Zn_all[d]); \
  }
/* SWEEP_EQ_ADJ_GHOSTS and SWEEP_EQ_ADJ_ROTATE of a plug-in whose adjoint is
 * mu / mu_prev and whose boundary-saving reconstruction runs u backwards in
 * ru / ru_next (u^{t+1} in ru_next receives u^{t-1}). */
#define SWEEP_WAVE_ADJ_GHOSTS(p, recon)           \
  do {                                            \
    SWEEP_FN(fill_ghosts)(p, mu_prev);            \
    if (recon) SWEEP_FN(fill_ghosts)(p, ru_next); \
  } while (0)
#define SWEEP_WAVE_ADJ_ROTATE()            \
  do {                                     \
    SWEEP_SWAP(SWEEP_R *, mu_prev, mu);    \
    SWEEP_SWAP(SWEEP_R *, ru_next, ru);    \
    SWEEP_WAVE_ADJ_SWAP_AXES()             \
  } while (0)

/* sub_problem's wavefields of shots (SWEEP_EQ_SHIFT_SHOTS), fo elements on. */
#define SWEEP_WAVE_SHIFT_SHOTS(f, fo, g)                 \
  do {                                                   \
    (g)->u_prev = SWEEP_OFF((f)->u_prev, fo);            \
    (g)->u = SWEEP_OFF((f)->u, fo);                      \
    for (int d = 0; d < 3; ++d) {                        \
      (g)->psi[d] = SWEEP_OFF((f)->psi[d], fo);          \
      (g)->psi_new[d] = SWEEP_OFF((f)->psi_new[d], fo);  \
      (g)->zeta[d] = SWEEP_OFF((f)->zeta[d], fo);        \
      (g)->zeta_new[d] = SWEEP_OFF((f)->zeta_new[d], fo); \
    }                                                    \
  } while (0)
