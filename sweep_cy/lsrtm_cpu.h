/* What the lsrtm plug-in (lsrtm_cpu_impl.h) includes first: the shared
 * definitions and records.  Its entry point, sweep_lsrtm_run, is defined by
 * the generated sweep_kernels.c (cpu_dispatch.h). */
#ifndef SWEEP_LSRTM_CPU_H
#define SWEEP_LSRTM_CPU_H
#include "sweep_common.h"
#endif
