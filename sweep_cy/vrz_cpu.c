/* Dispatch to the VRZ kernels (cpu_dispatch.h). */
#include "vrz_cpu.h"
#include "cpu_dispatch.h"

SWEEP_DISPATCH(vrz, sweep_vrz_fields)
