/* Entry point of the Maxwell CPU kernels, declared for the Cython binding (see
 * cpu_dispatch.h); the arrays come in the staggered systems' record. */
#ifndef SWEEP_MAXWELL_CPU_H
#define SWEEP_MAXWELL_CPU_H
#include "sweep_common.h"

int sweep_maxwell_run(int ndim, int order, int is_double, int adjoint,
                      const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                      sweep_int t, sweep_int n_steps, int n_threads);
#endif
