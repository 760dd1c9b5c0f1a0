/* The OpenMP facts the binding reports (declared in cpu_dispatch.h). */
#ifdef _OPENMP
#include <omp.h>
#endif

#include "cpu_dispatch.h"

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
