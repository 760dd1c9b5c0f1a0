/*
 * SWEEP_FMA for the CPU kernels: x * y + z in one rounding (a fused
 * multiply-add) wherever the target has FMA, for the scalar point functions
 * and the explicit vector rows alike, so that both still round identically
 * (tests/test_simd_rows.py).  The compiler's own contraction cannot promise
 * that: with -ffp-contract=fast the scalar and vector paths fused different
 * products.  The type of z selects the operation; a scalar x or y is
 * broadcast to it (x - 0 is x exactly, signed zeros included).  Without FMA,
 * or with another compiler, it is the unfused x * y + z everywhere.
 *
 * Included before sweep_common.h, which otherwise defines the unfused form.
 */
#ifndef SWEEP_CPU_FMA_H
#define SWEEP_CPU_FMA_H
#if defined(__FMA__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

typedef float sweep_f32x4 __attribute__((vector_size(16)));
typedef float sweep_f32x8 __attribute__((vector_size(32)));
typedef double sweep_f64x2 __attribute__((vector_size(16)));
typedef double sweep_f64x4 __attribute__((vector_size(32)));

#define SWEEP_FMA_DEF_(name, T, expr)                                            \
  static inline __attribute__((always_inline)) T name(T x, T y, T z) { return expr; }
SWEEP_FMA_DEF_(sweep_fma_f32, float, __builtin_fmaf(x, y, z))
SWEEP_FMA_DEF_(sweep_fma_f64, double, __builtin_fma(x, y, z))
SWEEP_FMA_DEF_(sweep_fma_f32x4, sweep_f32x4,
               (sweep_f32x4)_mm_fmadd_ps((__m128)x, (__m128)y, (__m128)z))
SWEEP_FMA_DEF_(sweep_fma_f32x8, sweep_f32x8,
               (sweep_f32x8)_mm256_fmadd_ps((__m256)x, (__m256)y, (__m256)z))
SWEEP_FMA_DEF_(sweep_fma_f64x2, sweep_f64x2,
               (sweep_f64x2)_mm_fmadd_pd((__m128d)x, (__m128d)y, (__m128d)z))
SWEEP_FMA_DEF_(sweep_fma_f64x4, sweep_f64x4,
               (sweep_f64x4)_mm256_fmadd_pd((__m256d)x, (__m256d)y, (__m256d)z))

#if defined(__AVX512F__)
typedef float sweep_f32x16 __attribute__((vector_size(64)));
typedef double sweep_f64x8 __attribute__((vector_size(64)));
SWEEP_FMA_DEF_(sweep_fma_f32x16, sweep_f32x16,
               (sweep_f32x16)_mm512_fmadd_ps((__m512)x, (__m512)y, (__m512)z))
SWEEP_FMA_DEF_(sweep_fma_f64x8, sweep_f64x8,
               (sweep_f64x8)_mm512_fmadd_pd((__m512d)x, (__m512d)y, (__m512d)z))
#define SWEEP_FMA_512_ , sweep_f32x16 : sweep_fma_f32x16, sweep_f64x8 : sweep_fma_f64x8
#else
#define SWEEP_FMA_512_
#endif
#undef SWEEP_FMA_DEF_

#define SWEEP_FMA(x, y, z)                                                       \
  _Generic((z), float : sweep_fma_f32, double : sweep_fma_f64,                 \
           sweep_f32x4 : sweep_fma_f32x4, sweep_f32x8 : sweep_fma_f32x8,        \
           sweep_f64x2 : sweep_fma_f64x2,                                       \
           sweep_f64x4 : sweep_fma_f64x4 SWEEP_FMA_512_)(                       \
      (x) - (__typeof__(z)){0}, (y) - (__typeof__(z)){0}, (z))
#endif
#endif /* SWEEP_CPU_FMA_H */
