/* What the elastic plug-in (elastic_cpu_impl.h) includes first: the shared
 * definitions and records.  Its entry point, sweep_elastic_run, is defined by
 * the generated sweep_kernels.c (cpu_dispatch.h). */
#ifndef SWEEP_ELASTIC_CPU_H
#define SWEEP_ELASTIC_CPU_H
#include "sweep_common.h"
#endif
