/*
 * Helpers every kernel translation unit (cpu_kernel.c.in) shares, whatever
 * its equation: system headers, the floating-point mode, streaming stores,
 * sorted source/receiver points, the temporal-blocking record and the
 * progress counters of the pipelined blocked forward.  The unit then includes
 * its equation's plug-in (<equation>_cpu_impl.h), which specialises the time
 * loops (cpu_skeleton.h) for the SWEEP_NDIM, SWEEP_ORDER, SWEEP_REAL,
 * SWEEP_REAL_BYTES and SWEEP_SUFFIX the unit defines.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include <stdint.h>
#if defined(__SSE2__)
#include <xmmintrin.h>
#endif
#if defined(__AVX__)
#include <immintrin.h>
#endif
#if defined(__unix__) || defined(__APPLE__)
#include <sched.h>
#endif

#include "fd_coeffs.h"
#include "cpu_fma.h"
#include "sweep_common.h"

/*
 * Waves decaying in the CPML (and the tails of the memory variables) reach
 * subnormal floats, which x86 processes up to ~100x slower.  Each kernel
 * thread flushes them to zero while it runs and restores its previous mode.
 */
static inline unsigned int sweep_flush_denormals(void) {
#if defined(__SSE2__)
  const unsigned int state = _mm_getcsr();
  _mm_setcsr(state | 0x8040); /* FTZ | DAZ */
  return state;
#else
  return 0;
#endif
}

static inline void sweep_restore_fp(unsigned int state) {
#if defined(__SSE2__)
  _mm_setcsr(state);
#else
  (void)state;
#endif
}

/*
 * Copies n bytes to memory that is not read again soon (gradient snapshots,
 * which the adjoint pass reads back long after) with non-temporal stores:
 * they skip the read-for-ownership of each cache line and leave the caches
 * to the wavefields.  The writing thread calls sweep_stream_fence() before
 * another thread may read dst.
 */
static inline void sweep_stream_copy(void *dst, const void *src, size_t n) {
#if defined(__AVX__)
  char *d = (char *)dst;
  const char *s = (const char *)src;
  size_t head = (32 - ((uintptr_t)d & 31)) & 31;
  if (head > n) head = n;
  memcpy(d, s, head);
  d += head;
  s += head;
  n -= head;
  for (; n >= 32; n -= 32, d += 32, s += 32)
    _mm256_stream_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
  memcpy(d, s, n);
#else
  memcpy(dst, src, n);
#endif
}

static inline void sweep_stream_fence(void) {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

/* A source or receiver of one shot: flat cell index and its position in the
 * caller's list.  Sorted by (idx, k), so the cells of a range of rows are one
 * slice and sources sharing a cell keep their order (bitwise as unblocked). */
typedef struct sweep_point {
  sweep_int idx, k;
} sweep_point;

static int sweep_point_cmp(const void *a, const void *b) {
  const sweep_point *x = (const sweep_point *)a, *y = (const sweep_point *)b;
  if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
  return (x->k > y->k) - (x->k < y->k);
}

/* Points of every shot, sorted per shot; NULL when n == 0 (or on allocation failure). */
static __attribute__((unused)) sweep_point *sweep_sorted_points(const sweep_int *idx, sweep_int n_shots, sweep_int n) {
  if (!idx || n <= 0) return NULL;
  sweep_point *pts = (sweep_point *)malloc(sizeof(sweep_point) * n_shots * n);
  if (!pts) return NULL;
  for (sweep_int shot = 0; shot < n_shots; ++shot) {
    for (sweep_int k = 0; k < n; ++k) {
      pts[shot * n + k].idx = idx[shot * n + k];
      pts[shot * n + k].k = k;
    }
    qsort(pts + shot * n, (size_t)n, sizeof(sweep_point), sweep_point_cmp);
  }
  return pts;
}

/* First of n sorted points with idx >= key.  Keys past the last point or
 * before the first return at once: the blocked loops ask per plane and
 * item, and most planes hold no point (the binary search's mispredicted
 * branches were ~9 % of blocked_item's own samples in the 3D forward). */
static inline sweep_int sweep_points_lower(const sweep_point *pts, sweep_int n, sweep_int key) {
  if (n == 0 || pts[n - 1].idx < key) return n;
  if (pts[0].idx >= key) return 0;
  sweep_int lo = 0, hi = n;
  while (lo < hi) {
    const sweep_int mid = lo + (hi - lo) / 2;
    if (pts[mid].idx < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Derived constants of a temporally blocked forward call (forward_blocked). */
typedef struct sweep_blocking {
  sweep_int steps;              /* steps per block */
  sweep_int q_lo, q_hi;         /* computed planes along the streaming axis */
  sweep_int group, n_groups;    /* planes per group; groups */
  sweep_int lag;                /* groups between consecutive steps of a stage */
  sweep_int y_lo, y_hi, tile;   /* 3D: computed rows in y, rows per y tile */
  sweep_int n_ytiles;
  sweep_int chunk, n_chunks;    /* rows per work item of a tile and step; items */
} sweep_blocking;

/* Bytes per cache line of the CPUs the kernels target (x86, most ARM). */
#define SWEEP_CACHE_LINE 64

/* The stages a task of the pipelined blocked forward has finished, on a
 * cache line of its own (the two threads bump neighbouring counters). */
typedef struct sweep_progress {
  sweep_int done;
  char pad[SWEEP_CACHE_LINE - sizeof(sweep_int)];
} sweep_progress;

/* n zeroed counters, or NULL without memory. */
static __attribute__((unused)) sweep_progress *sweep_progress_new(sweep_int n) {
  return (sweep_progress *)calloc((size_t)n, sizeof(sweep_progress));
}

static inline void sweep_publish(sweep_progress *c, sweep_int value) {
  sweep_int *d = &c->done;
  (void)value; /* GCC warns "set but not used" where the function is unused */
#pragma omp atomic write seq_cst
  *d = value;
}

/* Waits until counter c reaches target: spinning first (a stage takes tens of
 * microseconds), then yielding the core, so oversubscribed threads still
 * progress. */
static inline void sweep_wait(sweep_progress *c, sweep_int target) {
  sweep_int *d = &c->done;
  for (unsigned int spins = 0;; ++spins) {
    sweep_int now;
#pragma omp atomic read seq_cst
    now = *d;
    if (now >= target) return;
#if defined(__SSE2__)
    if (spins < 20000) {
      _mm_pause();
      continue;
    }
#endif
#if defined(__unix__) || defined(__APPLE__)
    sched_yield();
#endif
  }
}

static inline int sweep_thread_num(void) {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

static inline int sweep_num_threads(void) {
#ifdef _OPENMP
  return omp_get_num_threads();
#else
  return 1;
#endif
}

