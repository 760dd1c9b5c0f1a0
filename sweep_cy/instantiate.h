/*
 * Includes SWEEP_INSTANTIATE_FILE once per (ndim, order, dtype), defining
 * SWEEP_NDIM, SWEEP_ORDER, SWEEP_REAL and SWEEP_SUFFIX (e.g. 2d_o4_f32) for
 * each inclusion.  Equations reuse it to stamp out their specialisations.
 */

#define SWEEP_NDIM 2
#include "instantiate_orders.h"
#undef SWEEP_NDIM
#define SWEEP_NDIM 3
#include "instantiate_orders.h"
#undef SWEEP_NDIM
