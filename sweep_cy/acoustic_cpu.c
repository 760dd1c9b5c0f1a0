/*
 * Dispatch to the acoustic CPU kernels (cpu_dispatch.h), and the OpenMP
 * facts the binding reports.
 */
#ifdef _OPENMP
#include <omp.h>
#endif

#include "acoustic_cpu.h"
#include "cpu_dispatch.h"

SWEEP_DISPATCH(acoustic, sweep_acoustic_fields)

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
