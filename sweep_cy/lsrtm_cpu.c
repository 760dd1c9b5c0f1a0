/* Dispatch to the Born (LSRTM) CPU kernels (cpu_dispatch.h). */
#include "sweep_common.h"
#include "lsrtm_cpu.h"
#include "cpu_dispatch.h"

SWEEP_DISPATCH(lsrtm, sweep_lsrtm_fields)
