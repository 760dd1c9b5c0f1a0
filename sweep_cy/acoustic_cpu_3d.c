/* 3D specialisations of the acoustic CPU kernels. */
#define SWEEP_NDIM 3
#include "acoustic_cpu_unit.h"
