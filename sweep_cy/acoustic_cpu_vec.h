/*
 * Explicit-vector rows of the CPU kernels: the x range of a row whose x axis
 * is plain, SWEEP_VL cells at a time, with GCC vector extensions.
 *
 * Why: the compiler's own vectorisation of the point functions loads every x
 * tap u[i + k] as its own unaligned vector, and most of those loads straddle
 * two cache lines; the load ports, not the arithmetic, bound the plain
 * stencil.  Here the x taps come from three vectors in registers (the
 * previous, current and next SWEEP_VL cells of the row) shifted by one
 * instruction each (valignd on AVX-512): one new load per vector instead of
 * 2h + 1.  2D benchmark forward (order 8, 4 shots, 2 threads): 0.52 -> 0.43
 * ms per step; measurements in benchmarks/README.md.
 *
 * The arithmetic is the stencil header's (SWEEP_FWD_AXIS, SWEEP_ADJ_AXIS, the
 * tap sums and the leapfrog lines, with SWEEP_LD / SWEEP_ST redefined to load
 * and store vectors) in the same order, so every lane rounds exactly like the
 * scalar path (tests/test_simd_rows.py checks bitwise equality; the build uses
 * -std=c11, which keeps the compiler from contracting into FMAs differently).
 *
 * Included by acoustic_cpu_impl.h once per specialisation, after the stencil
 * header (with SWEEP_STENCIL_KEEP_MACROS), where SWEEP_FN / SWEEP_R / SWEEP_H
 * and the stencil macros are defined.  Compilers without GCC's
 * __builtin_shuffle, and lane counts below the halo, define no vector rows
 * (SWEEP_HAVE_VEC 0): the scalar rows do all the work.
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

/* The x taps of the cells [x, x + VL) from a window. */
#define SWEEP_TAP_XW_(w_, k)                                               \
  ((k) == 0 ? (w_).cur : (k) > 0 ? SWEEP_VSHIFT((w_).cur, (w_).next, (k))   \
                                 : SWEEP_VSHIFT((w_).prev, (w_).cur, SWEEP_VL + (k)))
#define SWEEP_TAP_XU_(k) SWEEP_TAP_XW_(uw, k)
#define SWEEP_TAP_XPSI_(k) SWEEP_TAP_XW_(pw, k)
#define SWEEP_TAP_XG_(k) SWEEP_TAP_XW_(gw, k)
#define SWEEP_TAP_XAG_(k) ((1 + SWEEP_TAP_XW_(aw, k)) * SWEEP_TAP_XW_(gw, k))
#define SWEEP_TAP_XAZ_(k) (SWEEP_TAP_XW_(aw, k) * SWEEP_TAP_XW_(zw, k))
#define SWEEP_TAP_XAP_(k) (SWEEP_TAP_XW_(aw, k) * SWEEP_TAP_XW_(qw, k))

/*
 * Byte offsets of the outer axes' taps (z and y; per axis d: +-stride and
 * +-3 strides, the other taps are these times 2 or 4).  Taps of u and psi
 * then address as row pointer + offset * scale, so a vector needs the row
 * pointer and these four registers per axis.  Through u + i + k * stride the
 * compiler kept one pointer per tap (16 in 3D, plus psi's) and reloaded
 * them from the stack every vector: 7 of 72 instructions of the 3D plain
 * loop, 13-20 of ~122 with one CPML axis, 24-31 of ~178 with two (now 1,
 * 6-7 and 12-16).  The 3D row loop hides their values from the compiler once
 * per vector (an empty asm), which stops it from deriving per-tap pointers
 * again.
 */
typedef struct SWEEP_FN(taps) {
  sweep_int p1[2], p3[2], m1[2], m3[2];
} SWEEP_FN(taps);

static inline __attribute__((always_inline)) SWEEP_FN(taps)
    SWEEP_FN(taps_of)(const sweep_acoustic_params *p) {
  SWEEP_FN(taps) t = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d) {
    t.p1[d] = p->stride[d] * (sweep_int)sizeof(SWEEP_R);
    t.p3[d] = 3 * t.p1[d];
    t.m1[d] = -t.p1[d];
    t.m3[d] = -t.p3[d];
  }
  return t;
}

#if SWEEP_NDIM == 3
#define SWEEP_TAPS_OPAQUE(t)                                                          \
  __asm__("" : "+r"((t).p1[0]), "+r"((t).p3[0]), "+r"((t).m1[0]), "+r"((t).m3[0]),  \
          "+r"((t).p1[1]), "+r"((t).p3[1]), "+r"((t).m1[1]), "+r"((t).m3[1]))
#else
/* 2D (one outer axis, 8 taps, fewer pointers) measured 2 % slower with it
 * (forward order 4, 0.116 -> 0.119 s): there the compiler keeps its own. */
#define SWEEP_TAPS_OPAQUE(t) ((void)(t))
#endif

/* Offset in bytes of tap k of axis s_ (the axis index, in SWEEP_FWD_AXIS_TAPS's
 * stride slot) from the offsets tp. */
#define SWEEP_TAP_BYTES_(k)                                                       \
  ((k) == 1    ? tp.p1[s_]                                                        \
   : (k) == 2  ? 2 * tp.p1[s_]                                                    \
   : (k) == 3  ? tp.p3[s_]                                                        \
   : (k) == 4  ? 4 * tp.p1[s_]                                                    \
   : (k) == -1 ? tp.m1[s_]                                                        \
   : (k) == -2 ? 2 * tp.m1[s_]                                                    \
   : (k) == -3 ? tp.m3[s_]                                                        \
   : (k) == -4 ? 4 * tp.m1[s_]                                                    \
               : 0)
#define SWEEP_TAP_OU_(k) SWEEP_LD((const SWEEP_R *)((const char *)u_ + SWEEP_TAP_BYTES_(k)))
#define SWEEP_TAP_OPSI_(k) SWEEP_LD((const SWEEP_R *)((const char *)ps_ + SWEEP_TAP_BYTES_(k)))
/* The adjoint's outer-axis taps (SWEEP_ADJ_AXIS_TAPS's g_, a_, z_, p_). */
#define SWEEP_TAP_OG_(k) SWEEP_LD((const SWEEP_R *)((const char *)g_ + SWEEP_TAP_BYTES_(k)))
#define SWEEP_TAP_OAG_(k) ((1 + a_[k]) * SWEEP_TAP_OG_(k))
#define SWEEP_TAP_OAZ_(k) \
  (a_[k] * SWEEP_LD((const SWEEP_R *)((const char *)z_ + SWEEP_TAP_BYTES_(k))))
#define SWEEP_TAP_OAP_(k) \
  (a_[k] * SWEEP_LD((const SWEEP_R *)((const char *)p_ + SWEEP_TAP_BYTES_(k))))

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
 * updated in place.  The tail runs first, on copies of those (u^{n-1}, zeta,
 * mu_prev, ...) in a tail buffer, which go into the row after the loop.
 * Segments shorter than VL stay scalar.  2D forward, order 4, one thread,
 * 340 x 1040 cells, CPML on every face: 114.4 -> 103.7 ms per 1000 steps.
 */
typedef struct SWEEP_FN(tail) {
  SWEEP_R v[4][SWEEP_VL] __attribute__((aligned(SWEEP_ROW_BYTES)));
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

/* Forward update of one vector of cells, x .. x + VL - 1 at flat index i:
 * up and zt[d] point at the cells' u^{n-1} (u^{n+1} is written there) and
 * zeta of axis d (updated in place), wv (when not NULL) receives W^n.  ra,
 * rb: the row's CPML a and b of the outer axes, read once per row (through
 * pa and pb the compiler reloaded them every vector, as a store might have
 * changed them). */
static inline __attribute__((always_inline)) void SWEEP_FN(fwd_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *up,
    SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zt, const SWEEP_R *const *pa,
    const SWEEP_R *const *pb, const SWEEP_R *ra, const SWEEP_R *rb, const SWEEP_FN(taps) tp,
    SWEEP_R *wv, sweep_int i, sweep_int x, const SWEEP_FN(window) uw,
    const SWEEP_FN(window) pw, const int mask) {
  typedef SWEEP_FN(vec) V;
  SWEEP_COEFFS;
  V w = {0};
  /* The outer axes take their taps through tp (the axis index d goes in the
   * stride slot, where SWEEP_TAP_BYTES_ reads it). */
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    SWEEP_FWD_AXIS_TAPS(SWEEP_TAP_OU_, SWEEP_TAP_OPSI_, V, w, u + i, psi[d] + i, psi_new[d] + i,
                        zt[d], ra[d], rb[d], d, (SWEEP_R)p->rdx[d], (SWEEP_R)p->rdx2[d],
                        mask & (1 << d));
  /* The x axis: the same terms with the taps taken from the windows. */
  SWEEP_FWD_AXIS_TAPS(SWEEP_TAP_XU_, SWEEP_TAP_XPSI_, V, w, u + i, psi[2] + i, psi_new[2] + i,
                      zt[2], SWEEP_FN(vld)(pa[2] + x), SWEEP_FN(vld)(pb[2] + x), 1,
                      (SWEEP_R)p->rdx[2], (SWEEP_R)p->rdx2[2], mask & 4);
  SWEEP_FN(vst)(up, SWEEP_LEAPFROG(SWEEP_FN(vld)(v2dt2 + i), w, uw.cur, SWEEP_FN(vld)(up)));
  if (wv) SWEEP_FN(vst)(wv, w);
}

/*
 * Forward update of the cells [x0, x1) of row (z, y), or none (returning x0)
 * when the range is shorter than a vector; returns x1 otherwise.  mask holds
 * the CPML bits of the row's segment (x: bit 2, a compile-time constant like
 * the others).  W^n goes to wrow[x] when wrow is not NULL.
 */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(fwd_row_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_prev,
    SWEEP_R *const *psi, SWEEP_R *const *psi_new, SWEEP_R *const *zeta,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, SWEEP_R *wrow, sweep_int base,
    sweep_int z, sweep_int y, sweep_int x0, sweep_int x1, const int mask) {
  const sweep_int c[2] = {z, y};
  const sweep_int nx = p->shape[2];
  const SWEEP_R *row = u + base;
  const SWEEP_R *psi_row = mask & 4 ? psi[2] + base : row;
  if (x1 - x0 < SWEEP_VL) return x0;
  SWEEP_FN(taps) tp = SWEEP_FN(taps_of)(p);
  SWEEP_R ra[2] = {0, 0}, rb[2] = {0, 0};
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    if (mask & (1 << d)) {
      ra[d] = pa[d][c[d]];
      rb[d] = pb[d][c[d]];
    }
  /* The tail first, on copies of its in-place fields (the loop below still
   * needs their old values); the copies go into the row at the end. */
  const sweep_int xt = x1 - SWEEP_VL;
  const int has_tail = (x1 - x0) % SWEEP_VL != 0;
  SWEEP_FN(tail) tb;
  if (has_tail) {
    const sweep_int i = base + xt;
    SWEEP_R *zt[3];
    SWEEP_FN(tail_save)(tb.v[3], u_prev + i);
    for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) {
      zt[d] = zeta[d] + i;
      if (mask & (1 << d)) {
        SWEEP_FN(tail_save)(tb.v[d], zeta[d] + i);
        zt[d] = tb.v[d];
      }
    }
    SWEEP_FN(window) uw = SWEEP_FN(window_at)(row, xt);
    SWEEP_FN(window_next)(&uw, row, xt, nx);
    SWEEP_FN(window) pw = uw;
    if (mask & 4) {
      pw = SWEEP_FN(window_at)(psi_row, xt);
      SWEEP_FN(window_next)(&pw, psi_row, xt, nx);
    }
    SWEEP_FN(fwd_vec)(p, v2dt2, u, tb.v[3], psi, psi_new, zt, pa, pb, ra, rb, tp,
                      wrow ? wrow + xt : NULL, i, xt, uw, pw, mask);
  }
  sweep_int x = x0;
  SWEEP_FN(window) uw = SWEEP_FN(window_at)(row, x);
  SWEEP_FN(window) pw = mask & 4 ? SWEEP_FN(window_at)(psi_row, x) : uw;
  for (; x + SWEEP_VL <= x1; x += SWEEP_VL) {
    SWEEP_FN(window_next)(&uw, row, x, nx);
    if (mask & 4) SWEEP_FN(window_next)(&pw, psi_row, x, nx);
    const sweep_int i = base + x;
    SWEEP_R *zt[3];
    for (int d = SWEEP_FIRST_AXIS; d < 3; ++d) zt[d] = zeta[d] + i;
    SWEEP_TAPS_OPAQUE(tp);
    SWEEP_FN(fwd_vec)(p, v2dt2, u, u_prev + i, psi, psi_new, zt, pa, pb, ra, rb, tp,
                      wrow ? wrow + x : NULL, i, x, uw, pw, mask);
    SWEEP_FN(window_slide)(&uw);
    SWEEP_FN(window_slide)(&pw);
  }
  if (has_tail) {
    const sweep_int i = base + xt;
    SWEEP_FN(tail_save)(u_prev + i, tb.v[3]);
    for (int d = SWEEP_FIRST_AXIS; d < 3; ++d)
      if (mask & (1 << d)) SWEEP_FN(tail_save)(zeta[d] + i, tb.v[d]);
  }
  return x1;
}

/* Adjoint update of one vector of cells in mu = v^2 dt^2 lambda (as fwd_vec;
 * gw is the window over mu's row, lp points at the cells' mu^{n+1}_prev,
 * which receives mu^n). */
static inline __attribute__((always_inline)) void SWEEP_FN(adj_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *g, SWEEP_R *lp,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, const SWEEP_FN(taps) tp,
    const sweep_int *c, sweep_int i, sweep_int x, const SWEEP_FN(window) gw,
    const SWEEP_FN(window) aw, const SWEEP_FN(window) qw, const SWEEP_FN(window) zw,
    const int mask) {
  typedef SWEEP_FN(vec) V;
  SWEEP_COEFFS;
  V acc = {0};
  /* Outer-axis taps through tp, as in fwd_vec. */
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    SWEEP_ADJ_AXIS_TAPS(SWEEP_TAP_OG_, SWEEP_TAP_OAG_, SWEEP_TAP_OAZ_, SWEEP_TAP_OAP_, V, acc,
                        g + i, gw.cur, P[d] + i, P_new[d] + i, Z[d] + i, Z_new[d] + i,
                        pa[d] + c[d], pb[d][c[d]], d, (SWEEP_R)p->rdx[d], (SWEEP_R)p->rdx2[d],
                        mask & (1 << d));
  /* The x axis: the same terms with the taps (and a) taken from the windows. */
  SWEEP_ADJ_AXIS_TAPS(SWEEP_TAP_XG_, SWEEP_TAP_XAG_, SWEEP_TAP_XAZ_, SWEEP_TAP_XAP_, V, acc,
                      g + i, gw.cur, P[2] + i, P_new[2] + i, Z[2] + i, Z_new[2] + i, pa[2] + x,
                      SWEEP_FN(vld)(pb[2] + x), 1, (SWEEP_R)p->rdx[2], (SWEEP_R)p->rdx2[2],
                      mask & 4);
  SWEEP_FN(vst)(lp, SWEEP_LEAPFROG(SWEEP_FN(vld)(v2dt2 + i), acc, gw.cur, SWEEP_FN(vld)(lp)));
}

/* The windows of an adjoint vector at x (g always; a, P, Z in an x-CPML segment). */
#define SWEEP_ADJ_WINDOWS(x_)                                                   \
  do {                                                                          \
    gw = SWEEP_FN(window_at)(row, x_);                                          \
    aw = qw = zw = gw;                                                          \
    if (xc) {                                                                   \
      aw = SWEEP_FN(window_at)(pa[2], x_);                                      \
      qw = SWEEP_FN(window_at)(P[2] + base, x_);                                \
      zw = SWEEP_FN(window_at)(Z[2] + base, x_);                                \
    }                                                                           \
  } while (0)
#define SWEEP_ADJ_WINDOWS_NEXT(x_)                                              \
  do {                                                                          \
    SWEEP_FN(window_next)(&gw, row, x_, nx);                                    \
    if (xc) {                                                                   \
      SWEEP_FN(window_next)(&aw, pa[2], x_, nx);                                \
      SWEEP_FN(window_next)(&qw, P[2] + base, x_, nx);                          \
      SWEEP_FN(window_next)(&zw, Z[2] + base, x_, nx);                          \
    }                                                                           \
  } while (0)

/*
 * Adjoint update (in mu = v^2 dt^2 lambda) of the cells [x0, x1) of row
 * (z, y), as fwd_row_vec.  In an x-CPML segment the a-weighted x taps take a
 * from a window over the profile as well.
 */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(adj_row_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *g, SWEEP_R *lam_prev,
    SWEEP_R *const *P, SWEEP_R *const *P_new, SWEEP_R *const *Z, SWEEP_R *const *Z_new,
    const SWEEP_R *const *pa, const SWEEP_R *const *pb, sweep_int base, sweep_int z,
    sweep_int y, sweep_int x0, sweep_int x1, const int mask) {
  const sweep_int c[2] = {z, y};
  const sweep_int nx = p->shape[2];
  const SWEEP_R *row = g + base;
  const int xc = mask & 4;
  if (x1 - x0 < SWEEP_VL) return x0;
  SWEEP_FN(taps) tp = SWEEP_FN(taps_of)(p);
  const sweep_int xt = x1 - SWEEP_VL;
  const int has_tail = (x1 - x0) % SWEEP_VL != 0;
  SWEEP_FN(tail) tb;
  SWEEP_FN(window) gw, aw, qw, zw;
  if (has_tail) {
    /* The tail first, on a copy of mu_prev (as in fwd_row_vec). */
    SWEEP_FN(tail_save)(tb.v[0], lam_prev + base + xt);
    SWEEP_ADJ_WINDOWS(xt);
    SWEEP_ADJ_WINDOWS_NEXT(xt);
    SWEEP_FN(adj_vec)(p, v2dt2, g, tb.v[0], P, P_new, Z, Z_new, pa, pb, tp, c, base + xt, xt, gw,
                      aw, qw, zw, mask);
  }
  sweep_int x = x0;
  SWEEP_ADJ_WINDOWS(x);
  for (; x + SWEEP_VL <= x1; x += SWEEP_VL) {
    SWEEP_ADJ_WINDOWS_NEXT(x);
    const sweep_int i = base + x;
    SWEEP_TAPS_OPAQUE(tp);
    SWEEP_FN(adj_vec)(p, v2dt2, g, lam_prev + i, P, P_new, Z, Z_new, pa, pb, tp, c, i, x, gw, aw,
                      qw, zw, mask);
    SWEEP_FN(window_slide)(&gw);
    SWEEP_FN(window_slide)(&aw);
    SWEEP_FN(window_slide)(&qw);
    SWEEP_FN(window_slide)(&zw);
  }
  if (has_tail) SWEEP_FN(tail_save)(lam_prev + base + xt, tb.v[0]);
  return x1;
}
#undef SWEEP_ADJ_WINDOWS
#undef SWEEP_ADJ_WINDOWS_NEXT

/* Boundary saving, one vector of cells (un and gr point at the cells' u^{n+1}
 * and gradient, both updated in place). */
static inline __attribute__((always_inline)) void SWEEP_FN(recon_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *un,
    const SWEEP_R *mu, SWEEP_R *gr, sweep_int i, const SWEEP_FN(window) uw) {
  typedef SWEEP_FN(vec) V;
  SWEEP_COEFFS;
  V w = {0};
  SWEEP_UNROLL
  for (int d = SWEEP_FIRST_AXIS; d < 2; ++d)
    SWEEP_FWD_AXIS(V, w, u + i, NULL, NULL, NULL, 0, 0, p->stride[d], 0, (SWEEP_R)p->rdx2[d], 0);
  SWEEP_FWD_AXIS_TAPS(SWEEP_TAP_XU_, SWEEP_TAP_XU_, V, w, u + i, NULL, NULL, NULL, 0, 0, 1, 0,
                      (SWEEP_R)p->rdx2[2], 0);
  SWEEP_FN(vst)(gr, SWEEP_FMA(SWEEP_FN(vld)(mu + i), w, SWEEP_FN(vld)(gr)));
  SWEEP_FN(vst)(un, SWEEP_LEAPFROG(SWEEP_FN(vld)(v2dt2 + i), w, uw.cur, SWEEP_FN(vld)(un)));
}

/*
 * Boundary saving: the backward-in-time step of the forward wavefield and
 * the gradient correlation (acoustic_recon_point) on the cells [x0, x1) of a
 * row that is plain in every axis (as fwd_row_vec).
 */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(recon_row_vec)(
    const sweep_acoustic_params *p, const SWEEP_R *v2dt2, const SWEEP_R *u, SWEEP_R *u_next,
    const SWEEP_R *mu, SWEEP_R *grad, sweep_int base, sweep_int x0, sweep_int x1) {
  const sweep_int nx = p->shape[2];
  const SWEEP_R *row = u + base;
  if (x1 - x0 < SWEEP_VL) return x0;
  const sweep_int xt = x1 - SWEEP_VL;
  const int has_tail = (x1 - x0) % SWEEP_VL != 0;
  SWEEP_FN(tail) tb;
  if (has_tail) {
    /* The tail first, on copies of u_next and grad (as in fwd_row_vec). */
    SWEEP_FN(tail_save)(tb.v[0], u_next + base + xt);
    SWEEP_FN(tail_save)(tb.v[1], grad + base + xt);
    SWEEP_FN(window) tw = SWEEP_FN(window_at)(row, xt);
    SWEEP_FN(window_next)(&tw, row, xt, nx);
    SWEEP_FN(recon_vec)(p, v2dt2, u, tb.v[0], mu, tb.v[1], base + xt, tw);
  }
  sweep_int x = x0;
  SWEEP_FN(window) uw = SWEEP_FN(window_at)(row, x);
  for (; x + SWEEP_VL <= x1; x += SWEEP_VL) {
    SWEEP_FN(window_next)(&uw, row, x, nx);
    const sweep_int i = base + x;
    SWEEP_FN(recon_vec)(p, v2dt2, u, u_next + i, mu, grad + i, i, uw);
    SWEEP_FN(window_slide)(&uw);
  }
  if (has_tail) {
    SWEEP_FN(tail_save)(u_next + base + xt, tb.v[0]);
    SWEEP_FN(tail_save)(grad + base + xt, tb.v[1]);
  }
  return x1;
}

#undef SWEEP_TAPS_OPAQUE
#undef SWEEP_TAP_BYTES_
#undef SWEEP_TAP_OU_
#undef SWEEP_TAP_OPSI_
#undef SWEEP_TAP_OG_
#undef SWEEP_TAP_OAG_
#undef SWEEP_TAP_OAZ_
#undef SWEEP_TAP_OAP_
#undef SWEEP_IOTA
#undef SWEEP_VSHIFT
#undef SWEEP_TAP_XW_
#undef SWEEP_TAP_XU_
#undef SWEEP_TAP_XPSI_
#undef SWEEP_TAP_XG_
#undef SWEEP_TAP_XAG_
#undef SWEEP_TAP_XAZ_
#undef SWEEP_TAP_XAP_
#else
#define SWEEP_HAVE_VEC 0
#endif
#undef SWEEP_VL
#undef SWEEP_ROW_BYTES
