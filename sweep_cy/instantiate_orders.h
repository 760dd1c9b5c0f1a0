/* Includes SWEEP_INSTANTIATE_FILE once per (order, dtype) for the current
 * SWEEP_NDIM, defining SWEEP_ORDER, SWEEP_REAL and SWEEP_SUFFIX (e.g. 2d_o4_f32)
 * each time.  Equations reuse it to stamp out their specialisations. */
#define SWEEP_ORDER 2
#define SWEEP_REAL float
#define SWEEP_REAL_BYTES 4
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o2_f32
#else
#define SWEEP_SUFFIX 3d_o2_f32
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX

#define SWEEP_ORDER 2
#define SWEEP_REAL double
#define SWEEP_REAL_BYTES 8
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o2_f64
#else
#define SWEEP_SUFFIX 3d_o2_f64
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX

#define SWEEP_ORDER 4
#define SWEEP_REAL float
#define SWEEP_REAL_BYTES 4
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o4_f32
#else
#define SWEEP_SUFFIX 3d_o4_f32
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX

#define SWEEP_ORDER 4
#define SWEEP_REAL double
#define SWEEP_REAL_BYTES 8
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o4_f64
#else
#define SWEEP_SUFFIX 3d_o4_f64
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX

#define SWEEP_ORDER 6
#define SWEEP_REAL float
#define SWEEP_REAL_BYTES 4
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o6_f32
#else
#define SWEEP_SUFFIX 3d_o6_f32
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX

#define SWEEP_ORDER 6
#define SWEEP_REAL double
#define SWEEP_REAL_BYTES 8
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o6_f64
#else
#define SWEEP_SUFFIX 3d_o6_f64
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX

#define SWEEP_ORDER 8
#define SWEEP_REAL float
#define SWEEP_REAL_BYTES 4
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o8_f32
#else
#define SWEEP_SUFFIX 3d_o8_f32
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX

#define SWEEP_ORDER 8
#define SWEEP_REAL double
#define SWEEP_REAL_BYTES 8
#if SWEEP_NDIM == 2
#define SWEEP_SUFFIX 2d_o8_f64
#else
#define SWEEP_SUFFIX 3d_o8_f64
#endif
#include SWEEP_INSTANTIATE_FILE
#undef SWEEP_ORDER
#undef SWEEP_REAL
#undef SWEEP_REAL_BYTES
#undef SWEEP_SUFFIX
