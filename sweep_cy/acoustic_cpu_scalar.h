/*
 * Scalar rows of the acoustic CPU kernels: the cells [x0, x1) of a row one by
 * one through the stencil header's point functions (#pragma omp simd, so the
 * compiler vectorises them).  They take what the explicit-vector rows
 * (acoustic_cpu_vec.h) leave: segments shorter than a vector, and whole rows
 * with SWEEP_SIMD_ROWS=0 or without vector rows.  One never-inlined function
 * per CPML mask (SWEEP_DEFINE_BY_MASK, cpu_rows.h, says why).
 *
 * Included by acoustic_cpu_impl.h (and lsrtm_cpu_impl.h) once per
 * specialisation, after the stencil header (SWEEP_FN, SWEEP_R and the point
 * functions are defined there), cpu_rows.h and acoustic_cpu_vec.h.
 */

#define SWEEP_FWD_SCALAR_PARAMS                                                          \
  const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_prev, \
      SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,                 \
      const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wrow, sweep_int base,  \
      sweep_int z, sweep_int y, sweep_int x0, sweep_int x1
#define SWEEP_FWD_SCALAR_ARGS p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, wrow, base, z, y, x0, x1

#define SWEEP_ADJ_SCALAR_PARAMS                                                           \
  const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *mu, SWEEP_R *mu_prev, \
      SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,  \
      const SWEEP_R *const *pa, const SWEEP_R *const *pb, sweep_int base, sweep_int z,     \
      sweep_int y, sweep_int x0, sweep_int x1
#define SWEEP_ADJ_SCALAR_ARGS p, v2dt2, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, base, z, y, x0, x1

/* Forward: W^n goes to wrow[x] when wrow is not NULL. */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_scalar)(SWEEP_FWD_SCALAR_PARAMS,
                                                                       const int mask) {
  if (wrow) {
#pragma omp simd
    for (sweep_int x = x0; x < x1; ++x)
      wrow[x] = SWEEP_FN(acoustic_fwd_point)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb,
                                             base + x, z, y, x, mask);
  } else {
#pragma omp simd
    for (sweep_int x = x0; x < x1; ++x)
      SWEEP_FN(acoustic_fwd_point)(p, v2dt2, u, u_prev, psi, psi_new, zeta, pa, pb, base + x, z,
                                   y, x, mask);
  }
}

static inline __attribute__((always_inline)) void SWEEP_FN(adj_scalar)(SWEEP_ADJ_SCALAR_PARAMS,
                                                                       const int mask) {
#pragma omp simd
  for (sweep_int x = x0; x < x1; ++x)
    SWEEP_FN(acoustic_adj_point)(p, v2dt2, mu, mu_prev, P, P_new, Z, Z_new, pa, pb, base + x, z,
                                 y, x, mask);
}

#if SWEEP_HAVE_VEC
/* Behind the vector rows these take only what they leave (and every row with
 * SWEEP_SIMD_ROWS=0): one function for all masks (cpu_rows.h).  Per mask
 * they were half of the 3D order-8 unit's code. */
SWEEP_DEFINE_ANY_MASK(fwd_scalar_row, fwd_scalar, (SWEEP_FWD_SCALAR_PARAMS), (SWEEP_FWD_SCALAR_ARGS))
SWEEP_DEFINE_ANY_MASK(adj_scalar_row, adj_scalar, (SWEEP_ADJ_SCALAR_PARAMS), (SWEEP_ADJ_SCALAR_ARGS))
#define SWEEP_SCALAR_ROW_(name, args, mask) SWEEP_FN(name)(SWEEP_UNWRAP_ args, mask)
#else
/* The rows themselves: one function per mask m (z: bit 0, y: bit 1, x: bit 2). */
SWEEP_DEFINE_BY_MASK(fwd_scalar_row, fwd_scalar, (SWEEP_FWD_SCALAR_PARAMS), (SWEEP_FWD_SCALAR_ARGS))
SWEEP_DEFINE_BY_MASK(adj_scalar_row, adj_scalar, (SWEEP_ADJ_SCALAR_PARAMS), (SWEEP_ADJ_SCALAR_ARGS))
#define SWEEP_SCALAR_ROW_(name, args, mask) SWEEP_CALL_BY_MASK(name, mask, args)
#endif

static inline __attribute__((always_inline)) void SWEEP_FN(fwd_row_scalar)(SWEEP_FWD_SCALAR_PARAMS,
                                                                           const int mask) {
  if (x0 < x1) SWEEP_SCALAR_ROW_(fwd_scalar_row, (SWEEP_FWD_SCALAR_ARGS), mask);
}

static inline __attribute__((always_inline)) void SWEEP_FN(adj_row_scalar)(SWEEP_ADJ_SCALAR_PARAMS,
                                                                           const int mask) {
  if (x0 < x1) SWEEP_SCALAR_ROW_(adj_scalar_row, (SWEEP_ADJ_SCALAR_ARGS), mask);
}
#undef SWEEP_SCALAR_ROW_

/* The forward rows of one field, x in [x0, x1), with a compile-time CPML axis
 * mask: the vector rows, then the scalar rows for what they leave; W^n goes
 * to wrow[x] when wrow is not NULL (full storage).  Acoustic's, and Born's
 * for each of its two fields (lsrtm_cpu_impl.h). */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_row)(SWEEP_FWD_SCALAR_PARAMS,
                                                                    const int mask) {
#if SWEEP_HAVE_VEC
  if (p->simd_rows)
    x0 = SWEEP_FN(fwd_row_vec)(p, v2dt2, NULL, u, u_prev, psi, psi_new, zeta, pa, pb, wrow, base,
                               z, y, x0, x1, mask);
#endif
  SWEEP_FN(fwd_row_scalar)(SWEEP_FWD_SCALAR_ARGS, mask);
}

/* fwd_row as one never-inlined function per mask, which every row loop
 * calls (acoustic's forward, blocked and replay loops, each Born field):
 * inlined at each x segment of each outer mask of each loop, the vector
 * rows were most of a unit's code and compile time. */
SWEEP_DEFINE_BY_MASK(fwd_mask_row, fwd_row, (SWEEP_FWD_SCALAR_PARAMS), (SWEEP_FWD_SCALAR_ARGS))

#undef SWEEP_FWD_SCALAR_PARAMS
#undef SWEEP_FWD_SCALAR_ARGS
#undef SWEEP_ADJ_SCALAR_PARAMS
#undef SWEEP_ADJ_SCALAR_ARGS
