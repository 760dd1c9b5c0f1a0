/* Entry points of the CPU kernels, declared for the Cython binding. */
#ifndef SWEEP_ACOUSTIC_CPU_H
#define SWEEP_ACOUSTIC_CPU_H
#include "sweep_common.h"

/* Runs n_steps forward steps from time t (adjoint == 0), or n_steps adjoint
 * steps ending at time t, exclusive (adjoint == 1).  Returns 0, or -1 for an
 * unsupported ndim/order. */
int sweep_acoustic_run(int ndim, int order, int is_double, int adjoint,
                       const sweep_acoustic_params *p, const sweep_acoustic_fields *f,
                       sweep_int t, sweep_int n_steps, int n_threads);
int sweep_max_threads(void);
int sweep_openmp_enabled(void);
#endif
