/*
 * Dispatch from (ndim, order, dtype, direction) to the acoustic kernels, one
 * translation unit per (ndim, order, dtype) rendered from cpu_kernel.c.in;
 * the Cython binding calls this with the GIL released.
 */
#ifdef _OPENMP
#include <omp.h>
#endif

#include "sweep_common.h"
#include "acoustic_cpu.h"

#define SWEEP_DECLARE(nd, o, t)                                                              \
  void sweep_acoustic_forward_##nd##d_o##o##_##t(const sweep_acoustic_params *,              \
                                                 const sweep_acoustic_fields *, sweep_int,   \
                                                 sweep_int, int);                            \
  void sweep_acoustic_backward_##nd##d_o##o##_##t(const sweep_acoustic_params *,             \
                                                  const sweep_acoustic_fields *, sweep_int,  \
                                                  sweep_int, int);
#define SWEEP_DECLARE_ALL(nd, t) \
  SWEEP_DECLARE(nd, 2, t) SWEEP_DECLARE(nd, 4, t) SWEEP_DECLARE(nd, 6, t) SWEEP_DECLARE(nd, 8, t)
SWEEP_DECLARE_ALL(2, f32)
SWEEP_DECLARE_ALL(2, f64)
SWEEP_DECLARE_ALL(3, f32)
SWEEP_DECLARE_ALL(3, f64)

typedef void (*sweep_acoustic_fn)(const sweep_acoustic_params *, const sweep_acoustic_fields *,
                                  sweep_int, sweep_int, int);

#define SWEEP_ENTRY(nd, o, t) \
  {sweep_acoustic_forward_##nd##d_o##o##_##t, sweep_acoustic_backward_##nd##d_o##o##_##t}
#define SWEEP_ENTRIES(nd, t) \
  SWEEP_ENTRY(nd, 2, t), SWEEP_ENTRY(nd, 4, t), SWEEP_ENTRY(nd, 6, t), SWEEP_ENTRY(nd, 8, t)

/* [ndim - 2][dtype][order / 2 - 1][forward, backward] */
static const sweep_acoustic_fn sweep_acoustic_table[2][2][4][2] = {
    {{SWEEP_ENTRIES(2, f32)}, {SWEEP_ENTRIES(2, f64)}},
    {{SWEEP_ENTRIES(3, f32)}, {SWEEP_ENTRIES(3, f64)}},
};

int sweep_acoustic_run(int ndim, int order, int is_double, int adjoint,
                       const sweep_acoustic_params *p, const sweep_acoustic_fields *f,
                       sweep_int t, sweep_int n_steps, int n_threads) {
  if (ndim < 2 || ndim > 3 || order < 2 || order > 8 || order % 2) return -1;
  if (n_threads <= 0) n_threads = sweep_max_threads();
  sweep_acoustic_table[ndim - 2][is_double ? 1 : 0][order / 2 - 1][adjoint ? 1 : 0](
      p, f, t, n_steps, n_threads);
  return 0;
}

int sweep_max_threads(void) {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

int sweep_openmp_enabled(void) {
#ifdef _OPENMP
  return 1;
#else
  return 0;
#endif
}
