/*
 * Explicit-vector rows of the CPU kernels, the part every equation shares:
 * the vector type of SWEEP_VL cells (GCC vector extensions), a sliding window
 * over a row, the byte offsets of the outer axes' taps, and the tail buffer.
 * An equation's vector rows (acoustic_cpu_vec.h) build on these to update
 * the x range of a row whose x axis is plain, SWEEP_VL cells at a time.
 *
 * Why: the compiler's own vectorisation of the point functions loads every x
 * tap u[i + k] as its own unaligned vector, and most of those loads straddle
 * two cache lines; the load ports, not the arithmetic, bound the plain
 * stencil.  Here the x taps come from three vectors in registers (the
 * previous, current and next SWEEP_VL cells of the row) shifted by one
 * instruction each (valignd on AVX-512): one new load per vector instead of
 * 2h + 1.  2D acoustic benchmark forward (order 8, 4 shots, 2 threads):
 * 0.52 -> 0.43 ms per step; measurements in benchmarks/README.md.
 *
 * The arithmetic stays the stencil header's: once this header is included,
 * SWEEP_LD / SWEEP_ST load and store vectors, so the stencil's type-generic
 * macros, run on vectors, round every lane exactly like the scalar path
 * (tests/test_simd_rows.py checks bitwise equality; the build uses -std=c11,
 * which keeps the compiler from contracting into FMAs differently).
 *
 * Included by an equation's vector rows once per specialisation, after its
 * stencil header, where SWEEP_FN / SWEEP_R / SWEEP_H / SWEEP_FIRST_AXIS and
 * SWEEP_LD / SWEEP_ST are defined, with SWEEP_EQ_PARAMS (the equation's
 * parameter record, cpu_skeleton.h) and SWEEP_TAIL_SLOTS (vectors in the
 * tail buffer) defined.  Compilers without GCC's __builtin_shuffle, and lane
 * counts below the reach SWEEP_H, define no vector rows (SWEEP_HAVE_VEC 0):
 * the scalar rows do all the work.  The macros stay defined to the end of
 * the translation unit, which holds one specialisation.
 */

#if !defined(SWEEP_VEC_BYTES)
#if defined(__AVX512F__)
#define SWEEP_VEC_BYTES 64
#elif defined(__AVX__)
#define SWEEP_VEC_BYTES 32
#else
#define SWEEP_VEC_BYTES 16
#endif
#endif

/* 3D rows use at most 32-byte vectors: measured on AVX-512 (AMD family 26),
 * the 3D benchmark forward (128^3 + CPML 20, order 8, two threads) ran
 * 12-15 % faster with 8 float lanes than with 16, where the 2D forward ran
 * ~10 % slower; still 3.19-3.45 s against 4.38-4.58 s once partial vectors
 * no longer ran as scalar cells (benchmarks/README.md, session 6). */
#if SWEEP_NDIM == 3 && SWEEP_VEC_BYTES > 32
#define SWEEP_ROW_BYTES 32
#else
#define SWEEP_ROW_BYTES SWEEP_VEC_BYTES
#endif
#define SWEEP_VL (SWEEP_ROW_BYTES / SWEEP_REAL_BYTES)

#if defined(__GNUC__) && !defined(__clang__) && SWEEP_VL >= SWEEP_H && SWEEP_VL >= 2
#define SWEEP_HAVE_VEC 1

#if SWEEP_VL == 16
#define SWEEP_IOTA {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
#elif SWEEP_VL == 8
#define SWEEP_IOTA {0, 1, 2, 3, 4, 5, 6, 7}
#elif SWEEP_VL == 4
#define SWEEP_IOTA {0, 1, 2, 3}
#else
#define SWEEP_IOTA {0, 1}
#endif

typedef SWEEP_R SWEEP_FN(vec) __attribute__((vector_size(SWEEP_ROW_BYTES)));
#if SWEEP_REAL_BYTES == 4
typedef int SWEEP_FN(lanes) __attribute__((vector_size(SWEEP_ROW_BYTES)));
#else
typedef long long SWEEP_FN(lanes) __attribute__((vector_size(SWEEP_ROW_BYTES)));
#endif

/* The same vector at the element's alignment, for unaligned loads and stores
 * that (unlike memcpy) the compiler knows alias only SWEEP_R data. */
typedef SWEEP_R SWEEP_FN(uvec) __attribute__((vector_size(SWEEP_ROW_BYTES), aligned(SWEEP_REAL_BYTES)));

static inline __attribute__((always_inline)) SWEEP_FN(vec) SWEEP_FN(vld)(const SWEEP_R *ptr) {
  return *(const SWEEP_FN(uvec) *)ptr;
}

static inline __attribute__((always_inline)) void SWEEP_FN(vst)(SWEEP_R *ptr, SWEEP_FN(vec) v) {
  *(SWEEP_FN(uvec) *)ptr = v;
}

/* Lanes [k, k + VL) of the concatenation (a, b); k is a compile-time constant. */
#define SWEEP_VSHIFT(a, b, k) \
  __builtin_shuffle((a), (b), (SWEEP_FN(lanes))SWEEP_IOTA + (k))

/*
 * A sliding window over one row: `prev`, `cur`, `next` hold the row's cells
 * [x - VL, x + 2 VL), of which the stencil needs [x - h, x + VL + h).  Only
 * cells of the row itself are read: at the row's ends the needed lanes come
 * from a load at x - h or x + h, shifted into place.
 */
typedef struct SWEEP_FN(window) {
  SWEEP_FN(vec) prev, cur, next;
} SWEEP_FN(window);

/* The window at x (next is loaded by window_next at each step). */
static inline __attribute__((always_inline)) SWEEP_FN(window)
    SWEEP_FN(window_at)(const SWEEP_R *row, sweep_int x) {
  SWEEP_FN(window) w;
  w.cur = SWEEP_FN(vld)(row + x);
  if (x >= SWEEP_VL) {
    w.prev = SWEEP_FN(vld)(row + x - SWEEP_VL);
  } else {
    const SWEEP_FN(vec) lo = SWEEP_FN(vld)(row + x - SWEEP_H);
    w.prev = SWEEP_VSHIFT(lo, lo, SWEEP_H);
  }
  w.next = w.cur;
  return w;
}

static inline __attribute__((always_inline)) void SWEEP_FN(window_next)(
    SWEEP_FN(window) *w, const SWEEP_R *row, sweep_int x, sweep_int nx) {
  if (x + 2 * SWEEP_VL <= nx) {
    w->next = SWEEP_FN(vld)(row + x + SWEEP_VL);
  } else {
    const SWEEP_FN(vec) hi = SWEEP_FN(vld)(row + x + SWEEP_H);
    w->next = SWEEP_VSHIFT(hi, hi, SWEEP_VL - SWEEP_H);
  }
}

static inline __attribute__((always_inline)) void SWEEP_FN(window_slide)(SWEEP_FN(window) *w) {
  w->prev = w->cur;
  w->cur = w->next;
}

/* Tap k (a compile-time constant) of the cells [x, x + VL) from window w_. */
#define SWEEP_WINDOW_TAP(w_, k)                                            \
  ((k) == 0 ? (w_).cur : (k) > 0 ? SWEEP_VSHIFT((w_).cur, (w_).next, (k))   \
                                 : SWEEP_VSHIFT((w_).prev, (w_).cur, SWEEP_VL + (k)))

#include "cpu_taps.h"

static inline __attribute__((always_inline)) SWEEP_FN(taps)
    SWEEP_FN(taps_of)(const SWEEP_EQ_PARAMS *p) {
  return SWEEP_FN(taps_of_strides)(p->stride, SWEEP_FIRST_AXIS);
}

#if SWEEP_NDIM == 3 || (defined(SWEEP_VEC_M1) && SWEEP_VEC_M1)
#define SWEEP_TAPS_OPAQUE(t) SWEEP_TAPS_HIDE(t)
#else
/* 2D (one outer axis, 8 taps, fewer pointers) measured 2 % slower with it
 * (forward order 4, 0.116 -> 0.119 s): there the compiler keeps its own.
 * Rows with a second model (SWEEP_VEC_M1, VRZ: 16 outer taps, of u and B)
 * take it in 2D too: the compiler's per-tap pointers spilled, and the 2D
 * forward (order 8) ran 1.11-1.15 s against 1.17-1.18 s. */
#define SWEEP_TAPS_OPAQUE(t) ((void)(t))
#endif

/* The vector at tap k of outer axis d from ptr (a cell of the row). */
#define SWEEP_OUTER_TAP(ptr, tp, d, k) \
  SWEEP_LD((const SWEEP_R *)((const char *)(ptr) + SWEEP_TAP_BYTES(tp, d, k)))

#undef SWEEP_LD
#undef SWEEP_ST
#define SWEEP_LD(ptr) SWEEP_FN(vld)(ptr)
#define SWEEP_ST(ptr, value) SWEEP_FN(vst)((ptr), (value))

/*
 * Rows end in a tail of fewer than VL cells (a 22-cell x-CPML segment is one
 * vector and 6 cells).  The tail is one more vector, the last VL cells of the
 * segment, which overlaps cells the loop updates too: each lane's
 * arithmetic does not depend on its neighbours, so the overlapped cells get
 * the same values twice, provided both read the old values of the fields
 * updated in place.  The tail runs first, on copies of those (the acoustic
 * u^{n-1}, zeta, mu_prev, ...) in a tail buffer of SWEEP_TAIL_SLOTS vectors,
 * which go into the row after the loop.  Segments shorter than VL stay
 * scalar.  2D acoustic forward, order 4, one thread, 340 x 1040 cells, CPML
 * on every face: 114.4 -> 103.7 ms per 1000 steps.
 */
typedef struct SWEEP_FN(tail) {
  SWEEP_R v[SWEEP_TAIL_SLOTS][SWEEP_VL] __attribute__((aligned(SWEEP_ROW_BYTES)));
} SWEEP_FN(tail);

/* GCC cannot always see that the copy back into the row (under has_tail)
 * reads a buffer filled under has_tail, and warns; the pragma covers this copy only. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
static inline __attribute__((always_inline)) void SWEEP_FN(tail_save)(SWEEP_R *dst,
                                                                      const SWEEP_R *src) {
  SWEEP_FN(vst)(dst, SWEEP_FN(vld)(src));
}
#pragma GCC diagnostic pop
#else
#define SWEEP_HAVE_VEC 0
#endif
