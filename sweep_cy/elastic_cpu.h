/* Entry point of the elastic CPU kernels, declared for the Cython binding (see
 * cpu_dispatch.h). */
#ifndef SWEEP_ELASTIC_CPU_H
#define SWEEP_ELASTIC_CPU_H
#include "sweep_common.h"

int sweep_elastic_run(int ndim, int order, int is_double, int adjoint,
                      const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                      sweep_int t, sweep_int n_steps, int n_threads);
#endif
