/* What the vrz plug-in (vrz_cpu_impl.h) includes first: the shared
 * definitions and records.  Its entry point, sweep_vrz_run, is defined by
 * the generated sweep_kernels.c (cpu_dispatch.h). */
#ifndef SWEEP_VRZ_CPU_H
#define SWEEP_VRZ_CPU_H
#include "sweep_common.h"
#endif
