/*
 * Scalar rows of the CPU kernels: the cells [x0, x1) of a row one by one
 * through the stencil header's point functions (#pragma omp simd, so the
 * compiler vectorises them).  They take what the explicit-vector rows
 * (acoustic_cpu_vec.h) leave: segments shorter than a vector, and whole rows
 * with SWEEP_SIMD_ROWS=0 or without vector rows.
 *
 * One function per CPML mask, called from the row loops rather than inlined
 * into them: inlined, every loop carried a compiler-vectorised copy (with its
 * remainder loops) per x segment and mask, 12 in 3D, more code than the
 * vector rows themselves.  3D order 8 float32: 36.6 -> 9.1 s of CPU to
 * compile, the forward, blocked and adjoint loops 213, 213 and 192 KB ->
 * 52, 45 and 81 KB of code; run time unchanged (benchmark cases, within 1-5 %,
 * if anything faster).
 *
 * Included by acoustic_cpu_impl.h once per specialisation, after the stencil
 * header (SWEEP_FN, SWEEP_R and the point functions are defined there).
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

/* The functions of mask m (z: bit 0, y: bit 1, x: bit 2). */
#define SWEEP_SCALAR_ROWS(m)                                                                 \
  static __attribute__((noinline)) void SWEEP_FN(fwd_scalar_row##m)(SWEEP_FWD_SCALAR_PARAMS) { \
    SWEEP_FN(fwd_scalar)(SWEEP_FWD_SCALAR_ARGS, m);                                           \
  }                                                                                          \
  static __attribute__((noinline)) void SWEEP_FN(adj_scalar_row##m)(SWEEP_ADJ_SCALAR_PARAMS) { \
    SWEEP_FN(adj_scalar)(SWEEP_ADJ_SCALAR_ARGS, m);                                           \
  }
SWEEP_SCALAR_ROWS(0)
SWEEP_SCALAR_ROWS(1)
SWEEP_SCALAR_ROWS(2)
SWEEP_SCALAR_ROWS(3)
SWEEP_SCALAR_ROWS(4)
SWEEP_SCALAR_ROWS(5)
SWEEP_SCALAR_ROWS(6)
SWEEP_SCALAR_ROWS(7)
#undef SWEEP_SCALAR_ROWS

/* The scalar row of a compile-time mask (the switch folds away; masks a
 * dimension never uses are not compiled). */
#define SWEEP_SCALAR_SWITCH(fn, mask, ARGS)  \
  switch (mask) {                            \
    case 0: SWEEP_FN(fn##0)(ARGS); break;    \
    case 1: SWEEP_FN(fn##1)(ARGS); break;    \
    case 2: SWEEP_FN(fn##2)(ARGS); break;    \
    case 3: SWEEP_FN(fn##3)(ARGS); break;    \
    case 4: SWEEP_FN(fn##4)(ARGS); break;    \
    case 5: SWEEP_FN(fn##5)(ARGS); break;    \
    case 6: SWEEP_FN(fn##6)(ARGS); break;    \
    default: SWEEP_FN(fn##7)(ARGS); break;   \
  }

static inline __attribute__((always_inline)) void SWEEP_FN(fwd_row_scalar)(SWEEP_FWD_SCALAR_PARAMS,
                                                                           const int mask) {
  if (x0 < x1) SWEEP_SCALAR_SWITCH(fwd_scalar_row, mask, SWEEP_FWD_SCALAR_ARGS)
}

static inline __attribute__((always_inline)) void SWEEP_FN(adj_row_scalar)(SWEEP_ADJ_SCALAR_PARAMS,
                                                                           const int mask) {
  if (x0 < x1) SWEEP_SCALAR_SWITCH(adj_scalar_row, mask, SWEEP_ADJ_SCALAR_ARGS)
}

#undef SWEEP_SCALAR_SWITCH
#undef SWEEP_FWD_SCALAR_PARAMS
#undef SWEEP_FWD_SCALAR_ARGS
#undef SWEEP_ADJ_SCALAR_PARAMS
#undef SWEEP_ADJ_SCALAR_ARGS
