/* 2D specialisations of the acoustic CPU kernels (one translation unit per
 * dimension so the build compiles them in parallel). */
#define SWEEP_NDIM 2
#include "acoustic_cpu_unit.h"
