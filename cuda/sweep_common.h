/*
 * Shared definitions for the CPU (C + OpenMP) and CUDA (NVRTC) kernels.
 *
 * This header is compiled twice: by the C compiler into sweep._C, and at run
 * time by CuPy/NVRTC as part of the CUDA sources.  It must therefore stay
 * valid C99 and CUDA C++, and must not include system headers (NVRTC has none).
 *
 * Specialisation is by macros defined before including the kernel headers:
 *   SWEEP_NDIM   2 or 3
 *   SWEEP_ORDER  2, 4, 6 or 8 (spatial accuracy)
 *   SWEEP_REAL   float or double
 *   SWEEP_SUFFIX token appended to every function name (e.g. 2d_o4_f32)
 */
#ifndef SWEEP_COMMON_H
#define SWEEP_COMMON_H

/* The records of a call (sweep_int, sweep_acoustic_params and each
 * equation's fields struct) are declared once, in sweep/_fields_table.py,
 * which renders them as sweep_fields.h: the build's copy for the C compiler,
 * the CUDA preamble's text (sweep/_cuda_backend.py) for NVRTC, which defines
 * SWEEP_FIELDS_H first so that no file is looked for. */
#ifndef SWEEP_FIELDS_H
#include "sweep_fields.h"
#endif

/* SWEEP_UNROLL fully unrolls the short loops over axes and stencil taps, so
 * that per-axis branches become compile-time constants (and CPU loops over x
 * vectorise without control flow). */
#ifdef __CUDACC__
#define SWEEP_HD __device__ __forceinline__
#define SWEEP_RESTRICT __restrict__
#define SWEEP_UNROLL _Pragma("unroll")
#else
#define SWEEP_HD static inline __attribute__((always_inline))
#define SWEEP_RESTRICT restrict
#define SWEEP_UNROLL _Pragma("GCC unroll 8")
#endif

/* SWEEP_FMA(x, y, z) = x * y + z, where the stencil may fuse it into one
 * rounding.  The CPU build defines it first (sweep_cy/cpu_fma.h:
 * fused for scalars and vector rows alike where the target has FMA, so both
 * round identically); CUDA fuses, like nvcc's own contraction. */
#ifndef SWEEP_FMA
#ifdef __CUDACC__
#define SWEEP_FMA(x, y, z) fma((x), (y), (z))
#else
#define SWEEP_FMA(x, y, z) ((x) * (y) + (z))
#endif
#endif

#define SWEEP_CAT_(a, b) a##b
#define SWEEP_CAT(a, b) SWEEP_CAT_(a, b)
#define SWEEP_CAT3(a, b, c) SWEEP_CAT(SWEEP_CAT(a, b), c)

#endif /* SWEEP_COMMON_H */
