/*
 * Body of acoustic_cpu_2d.c / acoustic_cpu_3d.c: every (order, dtype)
 * specialisation of acoustic_cpu_impl.h for the SWEEP_NDIM they define.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__SSE2__)
#include <xmmintrin.h>
#endif

#include "fd_coeffs.h"
#include "sweep_common.h"
#include "acoustic_cpu.h"

/*
 * Waves decaying in the CPML (and the tails of the memory variables) reach
 * subnormal floats, which x86 processes up to ~100x slower.  Each kernel
 * thread flushes them to zero while it runs and restores its previous mode.
 */
static inline unsigned int sweep_flush_denormals(void) {
#if defined(__SSE2__)
  const unsigned int state = _mm_getcsr();
  _mm_setcsr(state | 0x8040); /* FTZ | DAZ */
  return state;
#else
  return 0;
#endif
}

static inline void sweep_restore_fp(unsigned int state) {
#if defined(__SSE2__)
  _mm_setcsr(state);
#else
  (void)state;
#endif
}

#define SWEEP_INSTANTIATE_FILE "acoustic_cpu_impl.h"
#include "instantiate_orders.h"
#undef SWEEP_INSTANTIATE_FILE

