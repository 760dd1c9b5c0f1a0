/* Dispatch to the elastic kernels (cpu_dispatch.h); one unit per (ndim,
 * dtype) defines the entry points of every order. */
#include "elastic_cpu.h"
#include "cpu_dispatch.h"

SWEEP_DISPATCH(elastic, sweep_elastic_fields)
