/* What the maxwell plug-in (maxwell_cpu_impl.h) includes first: the shared
 * definitions and records.  Its entry point, sweep_maxwell_run, is defined by
 * the generated sweep_kernels.c (cpu_dispatch.h). */
#ifndef SWEEP_MAXWELL_CPU_H
#define SWEEP_MAXWELL_CPU_H
#include "sweep_common.h"
#endif
