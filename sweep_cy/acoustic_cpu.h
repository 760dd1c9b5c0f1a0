/* What the acoustic plug-in (acoustic_cpu_impl.h) includes first: the shared
 * definitions and records.  Its entry point, sweep_acoustic_run, is defined by
 * the generated sweep_kernels.c (cpu_dispatch.h). */
#ifndef SWEEP_ACOUSTIC_CPU_H
#define SWEEP_ACOUSTIC_CPU_H
#include "sweep_common.h"
#endif
