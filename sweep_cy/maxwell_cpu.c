/* Dispatch to the Maxwell kernels (cpu_dispatch.h); one unit per (ndim,
 * dtype) defines the entry points of every order. */
#include "maxwell_cpu.h"
#include "cpu_dispatch.h"

SWEEP_DISPATCH(maxwell, sweep_elastic_fields)
