/*
 * The elastic equation's plug-in to the CPU time loops: two phases per step
 * (cpu_phased.h through cpu_skeleton.h), `omp simd` rows over the point
 * arithmetic of cuda/elastic_stencil.h (GCC vectorises the plain rows and
 * the 2D z-strip C-PML rows), one never-inlined function per CPML mask for
 * each of the four row kinds, and the points and free-surface
 * images of each phase.  The order is a run-time value: the unit of
 * (ndim, dtype) defines the entry points of every order (see the end).
 *
 * Sources and receivers are single cells of one field each: the caller
 * (sweep/equations/elastic/compiled.py) expands every kind into its weighted
 * terms, one column of src_amp / rec per term, and encodes the field in the
 * index, field * shot_stride + cell.  Forward: phase V's points add the
 * force terms (times b of the cell) and record every receiver term (v at
 * t + 1/2, s at t); phase S's add the stress terms and fill the stress
 * images behind free surfaces.  Adjoint (phase S's adjoint first): after
 * phase A the velocity residuals and the force gradients of step t; after
 * phase B the stress residuals of step t, then the images of step t - 1
 * folded back onto their cells and the stress-source gradients of step
 * t - 1 (which read the stresses of step t).  New receiver kinds (DAS strain
 * rates) are more weighted terms on the Python side: nothing here changes.
 */
#include "elastic_cpu.h"

#define SWEEP_EQ_PARAMS sweep_acoustic_params
#define SWEEP_EQ_FIELDS sweep_elastic_fields
#include "elastic_stencil.h"
#include "cpu_rows.h"
#include "cpu_taps.h"

typedef SWEEP_FN(elastic_ctx) SWEEP_FN(el_ctx_t);

/* The pointers of a call and of a shot: el_ctx, el_shot (elastic_stencil.h). */

/* ---- Adjoint: the products its stencils read, precomputed per line ----
 *
 * Adjoint phase A reads gbar (elastic_stencil.h el_gbar_v: sum_i C_ij s_ii
 * per normal stress, mu s per shear stress) at 2 nh cells per (j, b) and
 * phase B gv = b_a v_a at as many: each product was evaluated 2 nh times per
 * cell.  Each thread computes them once per cell and phase into a window of
 * lines (el_win: lines [lo, next) of the products at the grid's line pitch,
 * so cell q's product is at gb[k][q]), the lines ahead of the adjoint line
 * by the reach; phase A reads gb[j] (gbar of normal stress j) and gb[ND +
 * pair] (shear), phase B gb[a] (b_a v_a).  2D: the lines are rows (whole);
 * 3D: planes in z, of each only the rows of the work item's tile and the
 * reach around it (a tile streams through z).  The same expressions (no
 * contraction: ISO C), so bitwise the same results. */
#define EL_PRE 1
#define EL_PRE_N (EL_ND + EL_NP) /* products per cell: phase A's; phase B's EL_ND */
/* Lines of the window beyond the two reaches it keeps when it slides (3D
 * o8 adjoint: 2h + 24 planes no faster than 2h + 8). */
#define EL_WIN_LINES 8
typedef struct {
  SWEEP_R *buf;          /* EL_PRE_N arrays of lines lines of pitch rs */
  sweep_int lines, rs, lo, next;
  sweep_int seg0, segn;  /* each line's computed cells: [seg0, seg0 + segn) */
  sweep_int shot, stamp; /* which shot, phase, step (and 3D tile) the lines are of */
} SWEEP_FN(el_win_t);

static inline void SWEEP_FN(el_win_init)(const sweep_acoustic_params *p, SWEEP_FN(el_win_t) * w) {
  w->rs = p->stride[SWEEP_NDIM == 3 ? 0 : 1];
  w->seg0 = 0;
  w->segn = p->shape[2];
  w->lines = 2 * p->halo + EL_WIN_LINES;
  w->buf = (SWEEP_R *)malloc(sizeof(SWEEP_R) * EL_PRE_N * w->lines * w->rs);
  w->shot = -1;
  w->stamp = -1;
  w->lo = w->next = 0;
}

/* Cells [base, base + n) of phase k's products (1: phase A's gbar, 0: phase
 * B's b_a v_a) into the window at dst (array k at dst + k step). */
static inline void SWEEP_FN(el_win_row)(const SWEEP_FN(el_ctx_t) * e, SWEEP_R *dst, sweep_int step,
                                        sweep_int base, sweep_int n, int k) {
  if (k) {
    SWEEP_UNROLL
    for (int j = 0; j < EL_ND; ++j) {
      SWEEP_R *o = dst + j * step;
      _Pragma("omp simd") for (sweep_int x = 0; x < n; ++x) o[x] =
          SWEEP_FN(el_gbar_v)(e, base + x, j, j);
    }
    SWEEP_UNROLL
    for (int a = 0; a < EL_ND; ++a)
      SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      if (a >= b) continue;
      SWEEP_R *o = dst + (EL_ND + EL_PAIR(a, b)) * step;
      _Pragma("omp simd") for (sweep_int x = 0; x < n; ++x) o[x] =
          SWEEP_FN(el_gbar_v)(e, base + x, a, b);
    }
  } else {
    SWEEP_UNROLL
    for (int a = 0; a < EL_ND; ++a) {
      SWEEP_R *o = dst + a * step;
      const SWEEP_R *c = e->c[EL_CB(a)] + base, *v = e->f[a] + base;
      _Pragma("omp simd") for (sweep_int x = 0; x < n; ++x) o[x] = c[x] * v[x];
    }
  }
}

/* Before phase k's rows of shot from row y0 on (step t; tile_y rows in 3D): the window restarts
 * unless it holds this shot's, phase's and step's lines from the first
 * line's - h on (2D: the thread's previous work item ended where this one
 * starts; 3D: a tile of rows y0 .. runs all planes, so it always restarts,
 * its rows and their reach the lines' computed cells). */
static inline void SWEEP_FN(el_win_tile)(const sweep_acoustic_params *p, SWEEP_FN(el_win_t) * w,
                                         sweep_int shot, sweep_int y0, sweep_int tile_y, int k,
                                         sweep_int t) {
  const sweep_int h = p->halo, stamp = 2 * t + k;
#if SWEEP_NDIM == 3
  const sweep_int y1 = y0 + tile_y < p->shape[1] - h ? y0 + tile_y : p->shape[1] - h;
  w->seg0 = (y0 - h) * p->stride[1];
  w->segn = (y1 - y0 + 2 * h) * p->stride[1];
  const sweep_int l0 = h; /* the first plane */
  (void)stamp;
  w->shot = shot;
  w->stamp = -1;
#else
  (void)tile_y;
  const sweep_int l0 = y0;
  if (w->shot == shot && w->stamp == stamp && w->lo <= l0 - h && l0 - h <= w->next) return;
  w->shot = shot;
  w->stamp = stamp;
#endif
  w->lo = w->next = l0 - h;
}

/* Before adjoint line l (2D: row y; 3D: plane z) of phase k: the window's
 * lines up to l + h computed (sliding it when full: the last 2 h lines to
 * its start), e's pointers at them. */
static inline void SWEEP_FN(el_win_rows)(const sweep_acoustic_params *p, SWEEP_FN(el_win_t) * w,
                                         SWEEP_FN(el_ctx_t) * e, sweep_int l, int k) {
  const sweep_int h = p->halo, rs = w->rs, step = w->lines * rs;
  const sweep_int s0 = w->seg0, sn = w->segn;
  const int n = k ? EL_PRE_N : EL_ND;
  for (; w->next <= l + h; ++w->next) {
    if (w->next - w->lo >= w->lines) {
      const sweep_int keep = 2 * h, from = w->next - keep - w->lo;
      for (int a = 0; a < n; ++a)
        for (sweep_int i = 0; i < keep; ++i)
          memmove(w->buf + a * step + i * rs + s0, w->buf + a * step + (from + i) * rs + s0,
                  sizeof(SWEEP_R) * sn);
      w->lo = w->next - keep;
    }
    SWEEP_FN(el_win_row)(e, w->buf + (w->next - w->lo) * rs + s0, step, w->next * rs + s0, sn, k);
  }
  for (int a = 0; a < n; ++a) e->gb[a] = w->buf + a * step - w->lo * rs;
}

/* ---- Rows: cells [x0, x1) of row base = (z, y), one function per mask ---- */

#define EL_ROW_PARAMS                                                                        \
  const SWEEP_FN(el_ctx_t) * e, SWEEP_R *wrow, const SWEEP_R *st, sweep_int vs, sweep_int base, \
      sweep_int z, sweep_int y, sweep_int x0, sweep_int x1
#define EL_ROW_ARGS e, wrow, st, vs, base, z, y, x0, x1

/* 3D rows run vectors of 8 cells (a cache line of doubles, half of floats):
 * a 3D row's plain middle is seldom a multiple of 16 cells (88 at 100^3 +
 * CPML 10), and its remainder ran scalar, 23 % of the plain rows' samples
 * at order 8 (GCC 12 has no masked epilogues for AVX-512). */
#if SWEEP_NDIM == 3
#define EL_SIMD _Pragma("omp simd simdlen(8)")
#else
#define EL_SIMD _Pragma("omp simd")
#endif
/* The forward cells of one phase (point: el_fwd_v or el_fwd_s), each cell's
 * snapshot values to wrow + x, pitch apart, when wrow is not NULL. */
#define EL_FWD_CELLS_(name, point)                                                          \
  static inline __attribute__((always_inline)) void SWEEP_FN(name)(EL_ROW_PARAMS,          \
                                                                   const int mask,         \
                                                                   const int nh) {         \
    (void)st, (void)vs;                                                                    \
    const sweep_int pitch = e->n[2];                                                       \
    if (wrow) {                                                                            \
      EL_SIMD for (sweep_int x = x0; x < x1; ++x) {                                        \
        SWEEP_FN(point)(e, base + x, z, y, x, mask, nh, wrow + x, pitch);                  \
      }                                                                                    \
    } else {                                                                               \
      EL_SIMD for (sweep_int x = x0; x < x1; ++x) {                                        \
        SWEEP_FN(point)(e, base + x, z, y, x, mask, nh, NULL, pitch);                      \
      }                                                                                    \
    }                                                                                      \
  }
EL_FWD_CELLS_(el_fwd_v_cells, el_fwd_v)
EL_FWD_CELLS_(el_fwd_s_cells, el_fwd_s)
EL_FWD_CELLS_(el_rev_v_cells, el_rev_v)
EL_FWD_CELLS_(el_rev_s_cells, el_rev_s)
#undef EL_FWD_CELLS_

/* The 3D adjoint's rows prefetch their own streams EL_APF_DIST cells ahead
 * (0: none), as the forward's vector rows (EL_PF_DIST): the rows run in
 * chunks of a vector (EL_ACH cells), each chunk an `omp simd` loop over the
 * point function as before (the same arithmetic per cell, so the same bits)
 * after one prefetch per stream of the cells EL_APF_DIST on.  Streams: phase
 * A's C-PML rows the velocities they update (for writing) and their b, the
 * memory variables it updates (P of the stress derivatives, for writing) and
 * the velocities' ones its taps read at their leading tap along z and y (the
 * planes and rows first read there).  Phase B the stresses it updates, the
 * velocities, on gradient steps the 9 snapshot values and the 15 gradients
 * (for writing), on C-PML rows the gbar inputs of the P update (the
 * distinct coefficients), the velocities' memory variables it updates and
 * the stresses' ones its taps read at their leading tap.  (The products of
 * the window, e->gb, are the thread's own, in cache; phase A's plain rows
 * stream 6 arrays and run as before: prefetched, no faster.)  3D o8
 * adjoint kernels 2.2-2.3 -> 1.6-1.8 s, o4 1.4-1.6 -> 1.1-1.3 s; 64 cells
 * ahead about as fast, 256 slower; prefetching the window's inputs in its
 * lines (el_win_row) slower (benchmarks/README.md, branch eladjpf). */
#if SWEEP_NDIM == 3
#ifndef EL_APF_DIST
#define EL_APF_DIST 128
#endif
#else
#define EL_APF_DIST 0
#endif
/* A prefetch for writing / for reading, into every cache level. */
#define EL_PFW(ptr) __builtin_prefetch((ptr), 1, 3)
#define EL_PFR(ptr) __builtin_prefetch((ptr), 0, 3)
/* Cells per chunk of a prefetching adjoint row: one vector (a whole
 * vector's straight-line code after each chunk's prefetches; chunks of a
 * cache line, 16 floats, gained less than half as much, of 2 lines none). */
#define EL_ACH 8

/* The leading tap's offset, in strides along kernel axis d, of a staggered
 * difference's transpose of reach r: forward (fw) taps end at + r - 1,
 * backward ones at + r. */
#define EL_ALEAD(fw, r) ((fw) ? (r) - 1 : (r))

/* The C-PML memory variables of the adjoint rows on the row's mask: the
 * ones a phase updates (write) and the ones its taps read at their leading
 * tap along z and y.  Phase A (b_phase 0) updates the stresses' variables
 * and reads the velocities'; phase B the other way round. */
static inline __attribute__((always_inline)) void SWEEP_FN(el_adj_mv_pf)(
    const SWEEP_FN(el_ctx_t) * e, sweep_int j, const int mask, const int r, const int b_phase) {
  SWEEP_UNROLL
  for (int b = 0; b < EL_ND; ++b) {
    const int d = EL_A0 + b;
    if (!(mask & (1 << d))) continue;
    SWEEP_UNROLL
    for (int a = 0; a < EL_ND; ++a) {
      const int w = b_phase ? a : EL_S(a, b), rd = b_phase ? EL_S(a, b) : a;
      const int fw = b_phase ? a == b : a != b;
      EL_PFW(e->m[w][d] + j);
      EL_PFR(e->m[rd][d] + j + (d == 2 ? 0 : EL_ALEAD(fw, r) * e->st[d]));
    }
  }
}

static inline __attribute__((always_inline)) void SWEEP_FN(el_adj_a_pf)(
    const SWEEP_FN(el_ctx_t) * e, sweep_int j, const int mask, const int nh) {
  const int r = nh > 0 ? nh : e->nh;
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    EL_PFW(e->f[a] + j);
    EL_PFR(e->c[EL_CB(a)] + j);
  }
  SWEEP_FN(el_adj_mv_pf)(e, j, mask, r, 0);
}

/* cp: the n distinct coefficient pointers of gbar (C-PML rows). */
static inline __attribute__((always_inline)) void SWEEP_FN(el_adj_b_pf)(
    const SWEEP_FN(el_ctx_t) * e, sweep_int j, const SWEEP_R *stj, sweep_int vs, const int mask,
    const int nh, const SWEEP_R *const *cp, int ncp) {
  const int r = nh > 0 ? nh : e->nh;
  SWEEP_UNROLL
  for (int F = 0; F < EL_NF; ++F) {
    if (F < EL_ND)
      EL_PFR(e->f[F] + j);
    else
      EL_PFW(e->f[F] + j);
  }
  if (stj) {
    SWEEP_UNROLL
    for (int v = 0; v < EL_NF; ++v) EL_PFR(stj + v * vs);
    SWEEP_UNROLL
    for (int k = 0; k < EL_NC; ++k) EL_PFW(e->g[k] + j);
  }
  if (mask) {
    for (int u = 0; u < ncp; ++u) EL_PFR(cp[u] + j);
    SWEEP_FN(el_adj_mv_pf)(e, j, mask, r, 1);
  }
}

/* The distinct coefficient pointers that gbar reads (C_ij, mu): n of them
 * into cp. */
static inline __attribute__((always_inline)) int SWEEP_FN(el_gbar_coefs)(
    const SWEEP_FN(el_ctx_t) * e, const SWEEP_R **cp) {
  int n = 0;
  for (int k = EL_ND; k < EL_NC; ++k) {
    const SWEEP_R *q = e->c[k];
    int dup = 0;
    for (int u = 0; u < n; ++u) dup |= cp[u] == q;
    if (!dup) cp[n++] = q;
  }
  return n;
}

static inline __attribute__((always_inline)) void SWEEP_FN(el_adj_a_cells)(EL_ROW_PARAMS,
                                                                           const int mask,
                                                                           const int nh) {
  (void)wrow, (void)st, (void)vs;
  sweep_int x = x0;
  if (EL_APF_DIST && mask) {
    for (; x + EL_ACH <= x1; x += EL_ACH) {
      SWEEP_FN(el_adj_a_pf)(e, base + x + EL_APF_DIST, mask, nh);
      const sweep_int xc = x;
      EL_SIMD
      for (sweep_int c = 0; c < EL_ACH; ++c) {
        SWEEP_FN(el_adj_a)(e, base + xc + c, z, y, xc + c, mask, nh, EL_PRE);
      }
    }
  }
  EL_SIMD
  for (sweep_int c = x; c < x1; ++c) {
    SWEEP_FN(el_adj_a)(e, base + c, z, y, c, mask, nh, EL_PRE);
  }
}

/* st: the row's snapshot, value 0 of cell x at st[x] (or NULL). */
static inline __attribute__((always_inline)) void SWEEP_FN(el_adj_b_cells)(EL_ROW_PARAMS,
                                                                           const int mask,
                                                                           const int nh) {
  (void)wrow;
  sweep_int x = x0;
  if (EL_APF_DIST) {
    const SWEEP_R *cp[EL_NC];
    const int ncp = mask ? SWEEP_FN(el_gbar_coefs)(e, cp) : 0;
    for (; x + EL_ACH <= x1; x += EL_ACH) {
      const sweep_int j = x + EL_APF_DIST;
      SWEEP_FN(el_adj_b_pf)(e, base + j, st ? st + j : NULL, vs, mask, nh, cp, ncp);
      const sweep_int xc = x;
      if (st) {
        EL_SIMD
        for (sweep_int c = 0; c < EL_ACH; ++c) {
          SWEEP_FN(el_adj_b)(e, base + xc + c, z, y, xc + c, mask, nh, st + xc + c, vs, EL_PRE);
        }
      } else {
        EL_SIMD
        for (sweep_int c = 0; c < EL_ACH; ++c) {
          SWEEP_FN(el_adj_b)(e, base + xc + c, z, y, xc + c, mask, nh, NULL, vs, EL_PRE);
        }
      }
    }
  }
  if (st) {
    EL_SIMD
    for (sweep_int c = x; c < x1; ++c) {
      SWEEP_FN(el_adj_b)(e, base + c, z, y, c, mask, nh, st + c, vs, EL_PRE);
    }
  } else {
    EL_SIMD
    for (sweep_int c = x; c < x1; ++c) {
      SWEEP_FN(el_adj_b)(e, base + c, z, y, c, mask, nh, NULL, vs, EL_PRE);
    }
  }
}

/* ---- 3D forward plain rows in explicit vectors ----
 *
 * The compiler's own vectorisation of el_fwd_v / el_fwd_s keeps one pointer
 * per tap (z and y taps at a run-time stride, x taps too): at order 8 a
 * plain phase-V vector of 8 cells held 72 field loads and ~60 reloads of
 * those pointers from the stack (224 instructions; order 4: 128), phase S
 * alike.  Here the rows run
 * per output (phase V: each velocity; phase S: the three normal stresses,
 * then each shear pair), in vectors of 32 bytes, with the z and y taps at
 * byte offsets held in registers (+-1 and +-3 strides; 2 and 4 by the
 * address scale, as cpu_vec.h's acoustic rows) and hidden from the compiler
 * once per vector (an empty asm), so it cannot derive per-tap pointers
 * again; x taps are displacements.  Each output's expression is the point
 * function's, operation for operation (SWEEP_FMA on vectors rounds as on
 * scalars), so the results are bitwise the same; the remainder of a row
 * (fewer than a vector) runs the point functions.  This cut the
 * instructions (an o8 V output: 71, 8 stack loads) but not the time: the
 * rows wait on memory (their in-row prefetches, EL_PF_DIST, are what paid;
 * benchmarks/README.md). */
#if SWEEP_NDIM == 3 && defined(__GNUC__) && !defined(__clang__)
#define EL_XVEC 1
#define EL_VL (32 / (sweep_int)sizeof(SWEEP_R))
typedef SWEEP_R SWEEP_FN(el_v) __attribute__((vector_size(32)));
typedef SWEEP_R SWEEP_FN(el_uv) __attribute__((vector_size(32), aligned(sizeof(SWEEP_R))));
#define EL_VLD(ptr) (*(const SWEEP_FN(el_uv) *)(ptr))
#define EL_VST(ptr, v) (*(SWEEP_FN(el_uv) *)(ptr) = (v))
/* Byte offset of the tap m strides along kernel axis d (0, 1: from t; 2: x). */
#define EL_TB(t, d, m) \
  ((d) == 2 ? (sweep_int)((m) * (sweep_int)sizeof(SWEEP_R)) : SWEEP_TAP_BYTES(t, d, m))
#define EL_VTAP(ptr, t, d, m) EL_VLD((const char *)(ptr) + EL_TB(t, d, m))

/* Software prefetch distance of the 3D forward's vector rows, cells (0:
 * none): at each vector every stream of the row EL_PF_DIST cells ahead, the
 * updated fields for writing, the coefficients, the fields read at their
 * leading taps along z and y (the planes and rows first read there) and
 * the C-PML memory variables of the row's mask, as mx_vcells
 * (maxwell_cpu_impl.h).  3D o8 forward's warm call 1.18-1.28 -> 0.92-0.95 s,
 * o4 0.80-0.83 -> 0.74-0.75 (distances 64 / 192 / 256 slower at o8;
 * benchmarks/README.md, branch elpf).  They replace a burst of prefetches of
 * the row two rows on before each row (el_prefetch_ahead), slower with them
 * (o8 1.11-1.14 s) and removed. */
#ifndef EL_PF_DIST
#define EL_PF_DIST 128
#endif

static inline __attribute__((always_inline)) SWEEP_FN(taps)
    SWEEP_FN(el_taps_of)(const SWEEP_FN(el_ctx_t) * e) {
  return SWEEP_FN(taps_of_strides)(e->st, 0);
}

/* stag_diff on the vector of cells at f (nh taps, a literal), the weights
 * w[0 .. nh) as vectors. */
static inline __attribute__((always_inline)) SWEEP_FN(el_v)
    SWEEP_FN(el_vdiff)(const SWEEP_R *f, const SWEEP_FN(taps) t, const int d, const int fw,
                       const SWEEP_FN(el_v) *w, const int nh) {
  const int o = fw ? 0 : -1;
  SWEEP_FN(el_v) acc = {0};
  SWEEP_UNROLL
  for (int k = 1; k <= 4; ++k)
    if (k <= nh)
      acc = SWEEP_FMA(w[k - 1], EL_VTAP(f, t, d, k + o) - EL_VTAP(f, t, d, 1 - k + o), acc);
  return acc;
}

/* The weights of v's difference along d (fw) at a row's coordinate c (z, y:
 * the same for the row) or at cells x .. (x: a vector each). */
static inline __attribute__((always_inline)) void SWEEP_FN(el_vweights)(
    const SWEEP_FN(el_ctx_t) * e, const int d, const int fw, sweep_int c, const int nh,
    SWEEP_FN(el_v) * w) {
  SWEEP_UNROLL
  for (int k = 1; k <= 4; ++k)
    if (k <= nh) {
      const SWEEP_R *wk = e->wv[d][fw] + (k - 1) * e->n[d] + c;
      if (d == 2)
        w[k - 1] = EL_VLD(wk);
      else
        w[k - 1] = (SWEEP_FN(el_v)){0} + *wk;
    }
}

/* The C-PML stretch of the vector of derivatives D along kernel axis d
 * (stag_stretch: psi = B psi + A D, D + psi) when mask has d, at the
 * memory variables m (cells x ..) and the profiles at the row's coordinate c
 * (z, y: the row's, broadcast) or at cells x (x). */
static inline __attribute__((always_inline)) SWEEP_FN(el_v)
    SWEEP_FN(el_vstretch)(const SWEEP_FN(el_ctx_t) * e, const int mask, const int d,
                          const int fw, sweep_int c, SWEEP_R *m, SWEEP_FN(el_v) D) {
  typedef SWEEP_FN(el_v) V;
  if (!(mask & (1 << d))) return D;
  const SWEEP_R *A = (fw ? e->pah[d] : e->pa[d]) + c, *B = (fw ? e->pbh[d] : e->pb[d]) + c;
  const V a = d == 2 ? EL_VLD(A) : (V){0} + *A, b = d == 2 ? EL_VLD(B) : (V){0} + *B;
  const V psi = SWEEP_FMA(b, EL_VLD(m), a * D);
  EL_VST(m, psi);
  return D + psi;
}

/* Phase V's plain cells [x0, x1) of row base (z, y): each velocity, el_step_v's
 * expressions; returns the first cell left (fewer than a vector). */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(el_fwd_v_vec)(EL_ROW_PARAMS,
                                                                            const int mask,
                                                                            const int nh) {
  (void)st, (void)vs, (void)z, (void)y;
  typedef SWEEP_FN(el_v) V;
  const sweep_int pitch = e->n[2], xv = x0 + (x1 - x0) / EL_VL * EL_VL;
  const SWEEP_FN(taps) t0 = SWEEP_FN(el_taps_of)(e);
  V w[4];
  SWEEP_UNROLL
  for (int k = 0; k < 4; ++k) w[k] = (V){0} + e->ws[k < nh ? k : 0];
  const sweep_int pd = EL_PF_DIST;
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    const SWEEP_R *s0 = e->f[EL_S(a, 0)] + base, *s1 = e->f[EL_S(a, 1)] + base;
    const SWEEP_R *s2 = e->f[EL_S(a, 2)] + base, *c = e->c[EL_CB(a)] + base;
    const SWEEP_R r0 = e->rdx[0], r1 = e->rdx[1], r2 = e->rdx[2];
    SWEEP_R *v = e->f[a] + base, *wa = wrow ? wrow + a * pitch : NULL;
    /* The leading taps along z and y (forward differences of axis a: +nh;
     * backward: +nh - 1). */
    const sweep_int lz = (a == 0 ? nh : nh - 1) * e->st[0], ly = (a == 1 ? nh : nh - 1) * e->st[1];
    for (sweep_int x = x0; x < xv; x += EL_VL) {
      SWEEP_FN(taps) t = t0;
      SWEEP_TAPS_HIDE(t);
      V acc = {0};
      const sweep_int i = base + x;
      if (pd) {
        const sweep_int j = i + pd;
        EL_PFW(e->f[a] + j);
        EL_PFR(e->c[EL_CB(a)] + j);
        EL_PFR(e->f[EL_S(a, 0)] + j + lz);
        EL_PFR(e->f[EL_S(a, 1)] + j + ly);
        EL_PFR(e->f[EL_S(a, 2)] + j);
        SWEEP_UNROLL
        for (int d = 0; d < 3; ++d)
          if (mask & (1 << d)) EL_PFW(e->m[EL_S(a, d)][d] + j);
      }
      acc += SWEEP_FN(el_vstretch)(e, mask, 0, a == 0, z, e->m[EL_S(a, 0)][0] + i,
                                   SWEEP_FN(el_vdiff)(s0 + x, t, 0, a == 0, w, nh) * r0);
      acc += SWEEP_FN(el_vstretch)(e, mask, 1, a == 1, y, e->m[EL_S(a, 1)][1] + i,
                                   SWEEP_FN(el_vdiff)(s1 + x, t, 1, a == 1, w, nh) * r1);
      acc += SWEEP_FN(el_vstretch)(e, mask, 2, a == 2, x, e->m[EL_S(a, 2)][2] + i,
                                   SWEEP_FN(el_vdiff)(s2 + x, t, 2, a == 2, w, nh) * r2);
      EL_VST(v + x, SWEEP_FMA(EL_VLD(c + x), acc, EL_VLD(v + x)));
      if (wa) EL_VST(wa + x, acc);
    }
  }
  return xv;
}

/* Phase S's plain cells [x0, x1): the normal stresses, then each shear
 * pair, el_step_s's expressions; returns the first cell left. */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(el_fwd_s_vec)(EL_ROW_PARAMS,
                                                                            const int mask,
                                                                            const int nh) {
  (void)st, (void)vs;
  typedef SWEEP_FN(el_v) V;
  const sweep_int pitch = e->n[2], xv = x0 + (x1 - x0) / EL_VL * EL_VL;
  const SWEEP_FN(taps) t0 = SWEEP_FN(el_taps_of)(e);
  const SWEEP_R r0 = e->rdx[0], r1 = e->rdx[1], r2 = e->rdx[2];
  const sweep_int pd = EL_PF_DIST;
  {
    V wz[4], wy[4];
    SWEEP_FN(el_vweights)(e, 0, 0, z, nh, wz);
    SWEEP_FN(el_vweights)(e, 1, 0, y, nh, wy);
    const SWEEP_R *v0 = e->f[0] + base, *v1 = e->f[1] + base, *v2 = e->f[2] + base;
    /* The distinct coefficients of the normal stresses (isotropic: 2). */
    const SWEEP_R *cp[EL_ND * EL_ND];
    int ncp = 0;
    for (int k = 0; k < EL_ND * EL_ND; ++k) {
      const SWEEP_R *q = e->c[EL_ND + k];
      int dup = 0;
      for (int u = 0; u < ncp; ++u) dup |= cp[u] == q;
      if (!dup) cp[ncp++] = q;
    }
    const sweep_int lz = (nh - 1) * e->st[0], ly = (nh - 1) * e->st[1];
    for (sweep_int x = x0; x < xv; x += EL_VL) {
      SWEEP_FN(taps) t = t0;
      SWEEP_TAPS_HIDE(t);
      V wx[4];
      SWEEP_FN(el_vweights)(e, 2, 0, x, nh, wx);
      V D[3];
      const sweep_int i = base + x;
      if (pd) {
        const sweep_int j = i + pd;
        EL_PFR(e->f[0] + j + lz);
        EL_PFR(e->f[1] + j + ly);
        EL_PFR(e->f[2] + j);
        for (int u = 0; u < ncp; ++u) EL_PFR(cp[u] + j);
        SWEEP_UNROLL
        for (int a = 0; a < EL_ND; ++a) EL_PFW(e->f[EL_ND + a] + j);
        SWEEP_UNROLL
        for (int d = 0; d < 3; ++d)
          if (mask & (1 << d)) EL_PFW(e->m[d][d] + j);
      }
      D[0] = SWEEP_FN(el_vstretch)(e, mask, 0, 0, z, e->m[0][0] + i,
                                   SWEEP_FN(el_vdiff)(v0 + x, t, 0, 0, wz, nh) * r0);
      D[1] = SWEEP_FN(el_vstretch)(e, mask, 1, 0, y, e->m[1][1] + i,
                                   SWEEP_FN(el_vdiff)(v1 + x, t, 1, 0, wy, nh) * r1);
      D[2] = SWEEP_FN(el_vstretch)(e, mask, 2, 0, x, e->m[2][2] + i,
                                   SWEEP_FN(el_vdiff)(v2 + x, t, 2, 0, wx, nh) * r2);
      SWEEP_UNROLL
      for (int a = 0; a < EL_ND; ++a) {
        V acc = EL_VLD(e->c[EL_CC(a, 0)] + i) * D[0];
        SWEEP_UNROLL
        for (int j = 1; j < EL_ND; ++j) acc = SWEEP_FMA(EL_VLD(e->c[EL_CC(a, j)] + i), D[j], acc);
        EL_VST(e->f[EL_ND + a] + i, EL_VLD(e->f[EL_ND + a] + i) + acc);
        if (wrow) EL_VST(wrow + (EL_ND + a) * pitch + x, D[a]);
      }
    }
  }
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      if (a >= b) continue;
      /* D_ab: v_a along b; D_ba: v_b along a (forward differences). */
      V wb[4], wa[4];
      const sweep_int cb = b == 0 ? z : y, ca = a == 0 ? z : y;
      if (b < 2) SWEEP_FN(el_vweights)(e, b, 1, cb, nh, wb);
      SWEEP_FN(el_vweights)(e, a, 1, ca, nh, wa);
      const SWEEP_R *va = e->f[a] + base, *vb = e->f[b] + base, *mu = e->c[EL_CMU(a, b)] + base;
      const SWEEP_R rb = e->rdx[b], ra = e->rdx[a];
      SWEEP_R *s = e->f[EL_S(a, b)] + base;
      SWEEP_R *ws = wrow ? wrow + (2 * EL_ND + EL_PAIR(a, b)) * pitch : NULL;
      /* Forward differences: the leading taps nh strides on (v_a along b,
       * v_b along a). */
      const sweep_int lb = b == 2 ? 0 : nh * e->st[b], la = nh * e->st[a];
      for (sweep_int x = x0; x < xv; x += EL_VL) {
        SWEEP_FN(taps) t = t0;
        SWEEP_TAPS_HIDE(t);
        if (b == 2) SWEEP_FN(el_vweights)(e, 2, 1, x, nh, wb);
        const sweep_int i = base + x;
        if (pd) {
          const sweep_int j = i + pd;
          EL_PFW(e->f[EL_S(a, b)] + j);
          EL_PFR(e->c[EL_CMU(a, b)] + j);
          EL_PFR(e->f[a] + j + lb);
          EL_PFR(e->f[b] + j + la);
          if (mask & (1 << b)) EL_PFW(e->m[a][b] + j);
          if (mask & (1 << a)) EL_PFW(e->m[b][a] + j);
        }
        const V dab = SWEEP_FN(el_vstretch)(e, mask, b, 1, b == 2 ? x : cb, e->m[a][b] + i,
                                            SWEEP_FN(el_vdiff)(va + x, t, b, 1, wb, nh) * rb);
        const V dba = SWEEP_FN(el_vstretch)(e, mask, a, 1, ca, e->m[b][a] + i,
                                            SWEEP_FN(el_vdiff)(vb + x, t, a, 1, wa, nh) * ra);
        const V sum = dab + dba;
        EL_VST(s + x, SWEEP_FMA(EL_VLD(mu + x), sum, EL_VLD(s + x)));
        if (ws) EL_VST(ws + x, sum);
      }
    }
  }
  return xv;
}
#else
#define EL_XVEC 0
#endif

/* Every C-PML row runs vectorised (the taps a loop of constant length,
 * nh == 0 of STAG_TAPS).  In 3D the rows of the z and the y strips share one
 * function, mask 3 (both axes' C-PML terms; the profiles a = b = 0 off an
 * axis's strips make its terms exact zeros there, as on the model cells next
 * to a strip): three vector functions per kind (masks 3, 4, 7) instead of
 * seven, which kept the 3D unit's compile time at ~2x the scalar C-PML rows'
 * (vectorised per mask, 2.7x).  Scalar, the 3D C-PML rows held 60 % of the
 * 3D forward's kernel samples. */
#define EL_OUTER (SWEEP_NDIM == 3 ? 3 : 2)

/* The rows of every kind: with the CPML (mask != 0) the order is the
 * run-time e->nh, one function per mask; the plain rows, where the time
 * goes, one function per order (nh a literal: the taps unroll). */
#define EL_KIND(kind)                                                                        \
  static inline __attribute__((always_inline)) void SWEEP_FN(el_##kind##_any)(EL_ROW_PARAMS, \
                                                                             const int mask) { \
    SWEEP_FN(el_##kind##_cells)(EL_ROW_ARGS, mask, 0);                                        \
  }                                                                                          \
  SWEEP_DEFINE_BY_MASK(el_##kind##_row, el_##kind##_any, (EL_ROW_PARAMS), (EL_ROW_ARGS))
#define EL_KIND_PLAIN_(kind) \
  EL_PLAIN_(kind, 1) EL_PLAIN_(kind, 2) EL_PLAIN_(kind, 3) EL_PLAIN_(kind, 4)
#define EL_KIND_PLAIN_VEC_(kind) \
  EL_PLAIN_(kind, 1) EL_PLAIN_VEC_(kind, 2) EL_PLAIN_(kind, 3) EL_PLAIN_VEC_(kind, 4)
#define EL_PLAIN_(kind, nh)                                                              \
  static __attribute__((noinline)) void SWEEP_FN(el_##kind##_plain##nh)(EL_ROW_PARAMS) { \
    SWEEP_FN(el_##kind##_cells)(EL_ROW_ARGS, 0, nh);                                     \
  }
/* The 3D forward's plain rows at orders 4 and 8: explicit vectors, the
 * remainder by the point functions. */
#if EL_XVEC
#define EL_PLAIN_VEC_(kind, nh)                                                          \
  static __attribute__((noinline)) void SWEEP_FN(el_##kind##_plain##nh)(EL_ROW_PARAMS) { \
    const sweep_int xr = SWEEP_FN(el_##kind##_vec)(EL_ROW_ARGS, 0, nh);                  \
    SWEEP_FN(el_##kind##_cells)(e, wrow, st, vs, base, z, y, xr, x1, 0, nh);             \
  }
#else
#define EL_PLAIN_VEC_ EL_PLAIN_
#endif
/* The C-PML rows also with the reach a literal (EL_NH_, orders 4 and 8):
 * nh == 0's STAG_MAX_H taps are the reach at order 8 only; at order 4 half
 * of them are zero-weight taps (3D o4 forward: kernel -20 %). */
#define EL_NH_(kind, nh)                                                                     \
  static inline __attribute__((always_inline)) void SWEEP_FN(el_##kind##_n##nh)(EL_ROW_PARAMS, \
                                                                                const int mask) { \
    SWEEP_FN(el_##kind##_cells)(EL_ROW_ARGS, mask, nh);                                       \
  }                                                                                          \
  SWEEP_DEFINE_BY_MASK(el_##kind##_row_n##nh, el_##kind##_n##nh, (EL_ROW_PARAMS), (EL_ROW_ARGS))
/* The 3D forward's C-PML rows of a literal reach: explicit vectors as the
 * plain rows (el_fwd_v_vec, el_fwd_s_vec), the remainder by the point
 * functions. */
#if EL_XVEC
#define EL_NH_VEC_(kind, nh)                                                                 \
  static inline __attribute__((always_inline)) void SWEEP_FN(el_##kind##_n##nh)(EL_ROW_PARAMS, \
                                                                                const int mask) { \
    const sweep_int xr = SWEEP_FN(el_##kind##_vec)(EL_ROW_ARGS, mask, nh);                   \
    SWEEP_FN(el_##kind##_cells)(e, wrow, st, vs, base, z, y, xr, x1, mask, nh);               \
  }                                                                                          \
  SWEEP_DEFINE_BY_MASK(el_##kind##_row_n##nh, el_##kind##_n##nh, (EL_ROW_PARAMS), (EL_ROW_ARGS))
#else
#define EL_NH_VEC_ EL_NH_
#endif
EL_KIND(fwd_v)
EL_KIND_PLAIN_VEC_(fwd_v)
EL_KIND(fwd_s)
EL_KIND_PLAIN_VEC_(fwd_s)
EL_KIND(adj_a)
EL_KIND_PLAIN_(adj_a)
EL_KIND(adj_b)
EL_KIND_PLAIN_(adj_b)
EL_NH_VEC_(fwd_v, 2) EL_NH_VEC_(fwd_s, 2) EL_NH_(adj_a, 2) EL_NH_(adj_b, 2)
EL_NH_VEC_(fwd_v, 4) EL_NH_VEC_(fwd_s, 4) EL_NH_(adj_a, 4) EL_NH_(adj_b, 4)
#undef EL_NH_
#undef EL_NH_VEC_
/* Boundary saving's reconstruction runs the plain cells only. */
EL_PLAIN_(rev_v, 1) EL_PLAIN_(rev_v, 2) EL_PLAIN_(rev_v, 3) EL_PLAIN_(rev_v, 4)
EL_PLAIN_(rev_s, 1) EL_PLAIN_(rev_s, 2) EL_PLAIN_(rev_s, 3) EL_PLAIN_(rev_s, 4)
#undef EL_KIND
#undef EL_KIND_PLAIN_
#undef EL_KIND_PLAIN_VEC_
#undef EL_PLAIN_VEC_
#undef EL_PLAIN_

/* Cells [x0, x1) of kind's plain row, the function of the run's order. */
#define EL_CALL_PLAIN_(kind, args)                           \
  do {                                                       \
    switch (e->nh) {                                         \
      case 1: SWEEP_FN(el_##kind##_plain1) args; break;      \
      case 2: SWEEP_FN(el_##kind##_plain2) args; break;      \
      case 3: SWEEP_FN(el_##kind##_plain3) args; break;      \
      default: SWEEP_FN(el_##kind##_plain4) args; break;     \
    }                                                        \
  } while (0)

/* Cells [x0, x1) of kind's row with mask m (a literal), the C-PML rows of a
 * literal reach at orders 4 and 8. */
#define EL_CALL_NH_(kind, m, args)                          \
  do {                                                      \
    if ((m) == 0) {                                         \
      EL_CALL_PLAIN_(kind, args);                           \
    } else if (e->nh == 2) {                                \
      SWEEP_CALL_BY_MASK(el_##kind##_row_n2, m, args)       \
    } else if (e->nh == 4) {                                \
      SWEEP_CALL_BY_MASK(el_##kind##_row_n4, m, args)       \
    } else {                                                \
      SWEEP_CALL_BY_MASK(el_##kind##_row, m, args)          \
    }                                                       \
  } while (0)

/* Prefetches the x memory variables that a row's kind reads on cells
 * [x0, x1) of row base: those of the stresses (forward V), of the velocities
 * (forward S) or both (adjoint). */
static inline __attribute__((always_inline)) void SWEEP_FN(el_prefetch_psi)(
    const SWEEP_FN(el_ctx_t) * e, int kind, sweep_int base, sweep_int x0, sweep_int x1) {
  SWEEP_UNROLL
  for (int F = 0; F < EL_NF; ++F) {
    if ((kind == 0 && F < EL_ND) || (kind == 1 && F >= EL_ND) || !e->m[F][2]) continue;
    SWEEP_FN(prefetch_cells)(e->m[F][2] + base, x0, x1, 0);
  }
}

/* Row (z, y) of one shot in one phase: kind 0/1 forward V/S (wr: the row's
 * snapshot values, or NULL), 2/3 adjoint A/B (st: the row's snapshot from
 * its first stored cell, or NULL; vs: its value stride); boundary saving:
 * 4/5 forward V/S on the segments with C-PML terms only (the CPML replay),
 * 6/7 phase V/S undone on the plain segment only (the reconstruction). */
static inline __attribute__((always_inline)) void SWEEP_FN(el_row)(
    const sweep_acoustic_params *p, const SWEEP_FN(el_ctx_t) * e, SWEEP_R *wr,
    const SWEEP_R *st, sweep_int vs, sweep_int z, sweep_int y, const int kind) {
  const sweep_int h = p->halo, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const SWEEP_R *sx = st ? st - p->store_lo[2] : NULL;
  /* The forward's kinds (0, 1) run the C-PML terms on the cells of nonzero
   * profiles only (el_ctx's flo, fhi: a halo less per face than plain_lo,
   * plain_hi, which the adjoint and boundary saving keep): 3D o8, 26 % fewer
   * outer rows.  Bitwise the same (psi stays an exact zero there). */
  const int fwd = kind < 2;
  const sweep_int *plo = fwd ? e->flo : p->plain_lo, *phi = fwd ? e->fhi : p->plain_hi;
  const int outer =
      (SWEEP_NDIM == 3 && (z < plo[0] || z >= phi[0])) || y < plo[1] || y >= phi[1];
#define EL_ROW(x0, x1, m)                                                                   \
  if ((x0) < (x1) && (kind < 4 || (kind < 6) == ((m) != 0))) {                              \
    if (kind == 0 || kind == 4)                                                             \
      EL_CALL_NH_(fwd_v, m, (e, wr, sx, vs, base, z, y, x0, x1));                          \
    else if (kind == 1 || kind == 5)                                                        \
      EL_CALL_NH_(fwd_s, m, (e, wr, sx, vs, base, z, y, x0, x1));                          \
    else if (kind == 2)                                                                     \
      EL_CALL_NH_(adj_a, m, (e, wr, sx, vs, base, z, y, x0, x1));                           \
    else if (kind == 3)                                                                     \
      EL_CALL_NH_(adj_b, m, (e, wr, sx, vs, base, z, y, x0, x1));                           \
    else if (kind == 6)                                                                     \
      EL_CALL_PLAIN_(rev_v, (e, wr, sx, vs, base, z, y, x0, x1));                           \
    else                                                                                    \
      EL_CALL_PLAIN_(rev_s, (e, wr, sx, vs, base, z, y, x0, x1));                           \
  }
  /* The x segments in memory order (x-CPML, plain, x-CPML).  Vectorised,
   * the x-CPML segments widen to whole vectors (a cache line of cells) into
   * the plain middle, where the profiles a = b = 0 make the C-PML form give
   * the plain values exactly (as it does on the model cells a segment already
   * holds): a 22-cell segment (CPML 20, order 4) ran 16 cells as a vector and
   * 6 scalar, which cost more than the vector (2D forward, perf).  Boundary
   * saving's kinds keep the exact split: its replay runs the cells with
   * C-PML terms only, its reconstruction the plain cells only. */
  const sweep_int lane = SWEEP_CACHE_LINE / (sweep_int)sizeof(SWEEP_R);
  sweep_int xl = plo[2], xh = phi[2];
  if (kind < 4) {
    if (xl > h) xl = h + (xl - h + lane - 1) / lane * lane;
    if (xl > xh) xl = xh;
    if (xh < x_end) xh = x_end - (x_end - xh + lane - 1) / lane * lane;
    if (xh < xl) xh = xl;
  }
  /* The x-CPML segments' memory variables are a few cache lines per row
   * that the hardware prefetcher, following the plain middle's streams,
   * leaves to miss (one load held ~20 % of the 2D forward's x-segment
   * samples): this row's high segment and the next row's low one are
   * fetched before the middle. */
#define EL_SEGMENTS(m)                                                       \
  EL_ROW(h, xl, (m) | 4);                                                    \
  if (xl < xh) {                                                             \
    SWEEP_FN(el_prefetch_psi)(e, kind, base, xh, x_end);                     \
    SWEEP_FN(el_prefetch_psi)(e, kind, base + p->stride[1], h, xl);          \
  }                                                                          \
  EL_ROW(xl, xh, m);                                                         \
  EL_ROW(xh, x_end, (m) | 4)
  if (outer) {
#if SWEEP_NDIM == 3
    /* A forward row in the strips of one of z, y only (all but the corner
     * rows of a 3D outer region): the other axis's profiles are zero on it,
     * so its memory variables read and write an exact zero.  They go to a
     * zeroed scratch row (in L1) instead of their full-grid arrays: the
     * row's memory traffic of one axis's C-PML terms, not two's, with the
     * same functions (mask 3) and arithmetic. */
    const int oz = z < plo[0] || z >= phi[0], oy = y < plo[1] || y >= phi[1];
    if (fwd && oz != oy) {
      const sweep_int lane_ = SWEEP_CACHE_LINE / (sweep_int)sizeof(SWEEP_R);
      SWEEP_R buf[p->shape[2] + lane_] __attribute__((aligned(SWEEP_CACHE_LINE)));
      memset(buf, 0, sizeof(buf));
      SWEEP_R *zero = buf + lane_ - h % lane_ - base; /* x = h on a line */
      SWEEP_FN(el_ctx_t) own = *e;
      for (int F = 0; F < EL_NF; ++F)
        if (own.m[F][oz]) own.m[F][oz] = zero;
      {
        const SWEEP_FN(el_ctx_t) *const e = &own;
        EL_SEGMENTS(EL_OUTER);
      }
      return;
    }
#endif
    EL_SEGMENTS(EL_OUTER);
  } else {
    EL_SEGMENTS(0);
  }
#undef EL_ROW
#undef EL_SEGMENTS
}

/* ---- Free-surface images of the stresses ---- */

/* Adjoint phase B on the halo cells of the free faces of the shot at off,
 * whose stresses (odd images) the forward phase V read: the rows cover the
 * interior only. */
static void SWEEP_FN(el_adj_b_images)(const sweep_acoustic_params *p,
                                      const SWEEP_FN(el_ctx_t) * base, sweep_int off) {
  const sweep_int h = p->halo;
  const SWEEP_FN(el_ctx_t) e = SWEEP_FN(el_shot)(base, off);
  for (sweep_int z = 0; z < p->shape[0]; ++z)
    for (sweep_int y = 0; y < p->shape[1]; ++y) {
      const sweep_int c0[2] = {z, y};
      int row_ghost = 0, row_halo = 0;
      for (int d = EL_A0; d < 2; ++d) {
        row_halo |= c0[d] < h || c0[d] >= p->shape[d] - h;
        row_ghost |= (p->free_lo[d] && c0[d] < h) || (p->free_hi[d] && c0[d] >= p->shape[d] - h);
      }
      for (sweep_int x = 0; x < p->shape[2]; ++x) {
        if (!row_halo && x == h) x = p->shape[2] - h; /* skip the interior */
        if (x >= p->shape[2]) break;
        const int ghost = row_ghost || (p->free_lo[2] && x < h) ||
                          (p->free_hi[2] && x >= p->shape[2] - h);
        if (!ghost) continue;
            SWEEP_FN(el_adj_b_halo)(&e, z * p->stride[0] + y * p->stride[1] + x, z, y, x);
      }
    }
}

/* The images of every stress field of the shot at off (axes in order
 * forward, reversed adjoint). */
static void SWEEP_FN(el_images)(const sweep_acoustic_params *p, SWEEP_R *const *fields,
                                sweep_int off, int adjoint) {
  for (int F = EL_ND; F < EL_NF; ++F)
    for (int i = 0; i < EL_ND; ++i) {
      const int b = adjoint ? EL_ND - 1 - i : i, d = EL_A0 + b;
      if (!(p->free_lo[d] || p->free_hi[d]) || !SWEEP_FN(el_mirrored)(F, b)) continue;
      const int half = SWEEP_FN(el_mirrored)(F, b) == 2; /* a shear stress */
      SWEEP_FN(mirror_axis)(p, fields[F] + off, d, half, -1, adjoint);
    }
}

/* ---- Points of one shot ---- */

/* The sources of phase `phase` of step t, added (sign 1) or taken away
 * (-1: boundary saving's reconstruction). */
static void SWEEP_FN(el_sources)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                                 const SWEEP_FN(el_ctx_t) * e, int phase, sweep_int shot,
                                 sweep_int off, sweep_int t, SWEEP_R sign) {
  const sweep_int ss = p->shot_stride;
  if (f->src_amp) {
    const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
    for (sweep_int k = 0; k < p->n_src; ++k) {
      const sweep_int j = f->src_idx[shot * p->n_src + k], F = j / ss, cell = j - F * ss;
      SWEEP_FN(el_source)(e, phase, F, off, cell, sign * amp[(shot * p->n_src + k) * p->nt + t]);
    }
  }
}

static void SWEEP_FN(el_fwd_points)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                                    const SWEEP_FN(el_ctx_t) * e, int phase, sweep_int shot,
                                    sweep_int off, sweep_int t) {
  const sweep_int ss = p->shot_stride;
  SWEEP_FN(el_sources)(p, f, e, phase, shot, off, t, 1);
  if (phase == 0 && f->rec) {
    SWEEP_R *rec = (SWEEP_R *)f->rec;
    for (sweep_int r = 0; r < p->n_rec; ++r) {
      const sweep_int j = f->rec_idx[shot * p->n_rec + r], F = j / ss;
      rec[(shot * p->n_rec + r) * p->nt + t] = e->f[F][off + j - F * ss];
    }
  }
  if (phase == 1) SWEEP_FN(el_images)(p, e->f, off, 0);
}

static void SWEEP_FN(el_adj_points)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                                    const SWEEP_FN(el_ctx_t) * e, int phase, sweep_int shot,
                                    sweep_int off, sweep_int t) {
  const sweep_int ss = p->shot_stride;
  /* phase 1 (after A): the velocities' of step t; phase 0 (after B): the
   * stresses' residuals of step t and sources of step t - 1. */
  const int vel = phase == 1;
  if (f->rec) {
    const SWEEP_R *res = (const SWEEP_R *)f->rec;
    for (sweep_int r = 0; r < p->n_rec; ++r) {
      const sweep_int j = f->rec_idx[shot * p->n_rec + r], F = j / ss;
      if ((F < EL_ND) == vel) e->f[F][off + j - F * ss] += res[(shot * p->n_rec + r) * p->nt + t];
    }
  }
  int free = 0;
  for (int d = 0; d < 3; ++d) free |= p->free_lo[d] || p->free_hi[d];
  if (!vel && free) {
    SWEEP_FN(el_adj_b_images)(p, e, off);
    SWEEP_FN(el_images)(p, e->f, off, 1);
  }
  const sweep_int ts = vel ? t : t - 1;
  if (ts < 0 || !p->n_src) return;
  const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
  SWEEP_R *gs = (SWEEP_R *)f->grad_src;
  const int model = f->store && amp && ts % p->store_every == 0;
  for (sweep_int k = 0; k < p->n_src; ++k) {
    const sweep_int j = f->src_idx[shot * p->n_src + k], F = j / ss, cell = j - F * ss;
    const sweep_int a = (shot * p->n_src + k) * p->nt + ts;
    SWEEP_FN(el_source_adjoint)(e, vel, F, off, cell, amp ? amp + a : NULL, gs ? gs + a : NULL,
                                model);
  }
}

/* The forward's points of line l (3D: plane z = l) of phase `phase` of step
 * t, for a fused step (cpu_phased.h): right after the line's rows, the
 * sources of the line's cells and, in phase V, the receivers on them (as
 * el_fwd_points does for every line, in the same order per cell).  The
 * free-surface images wait for the whole step (el_fuse_after). */
static void SWEEP_FN(el_line_points)(const sweep_acoustic_params *p,
                                     const sweep_elastic_fields *f,
                                     const SWEEP_FN(el_ctx_t) * e, int phase, sweep_int shot,
                                     sweep_int off, sweep_int t, sweep_int l) {
  const sweep_int ss = p->shot_stride, s0 = p->stride[0];
  if (f->src_amp) {
    const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
    for (sweep_int k = 0; k < p->n_src; ++k) {
      const sweep_int j = f->src_idx[shot * p->n_src + k], F = j / ss, cell = j - F * ss;
      if (cell / s0 == l)
        SWEEP_FN(el_source)(e, phase, F, off, cell, amp[(shot * p->n_src + k) * p->nt + t]);
    }
  }
  if (phase == 0 && f->rec) {
    SWEEP_R *rec = (SWEEP_R *)f->rec;
    for (sweep_int r = 0; r < p->n_rec; ++r) {
      const sweep_int j = f->rec_idx[shot * p->n_rec + r], F = j / ss, cell = j - F * ss;
      if (cell / s0 == l) rec[(shot * p->n_rec + r) * p->nt + t] = e->f[F][off + cell];
    }
  }
}

/* ---- Boundary saving (cpu_phased.h's replay and reconstruction) ---- */

/* The CPML replay's points of phase `phase` of step t: the sources, then the
 * band's fields of the phase loaded from band (the slot of step t: their
 * values at its end), then, after phase S, the free-surface images (which
 * may mirror band cells). */
static void SWEEP_FN(el_replay_points)(const sweep_acoustic_params *p,
                                       const sweep_elastic_fields *f,
                                       const SWEEP_FN(el_ctx_t) * e, int phase, sweep_int shot,
                                       sweep_int off, sweep_int t, const SWEEP_R *band) {
  SWEEP_FN(el_sources)(p, f, e, phase, shot, off, t, 1);
  SWEEP_FN(bs_copy)(p, e->f, phase ? EL_ND : 0, phase ? EL_NF : EL_ND, shot, off, f->band_idx,
                    p->n_band, (SWEEP_R *)band, 1);
  if (phase == 1) SWEEP_FN(el_images)(p, e->f, off, 0);
}

/* The reconstruction's points before undoing phase `phase` of step t: the
 * sources of S taken away, or (before V, once the stresses are those of
 * step t) the free-surface images refilled and the forces taken away. */
static void SWEEP_FN(el_rev_points)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                                    const SWEEP_FN(el_ctx_t) * e, int phase, sweep_int shot,
                                    sweep_int off, sweep_int t) {
  if (phase == 0) SWEEP_FN(el_images)(p, e->f, off, 0);
  SWEEP_FN(el_sources)(p, f, e, phase, shot, off, t, -1);
}

/* ---- The hooks of cpu_skeleton.h / cpu_phased.h (cpu_staggered_hooks.h) ---- */

#define SWEEP_STAG(name) SWEEP_FN(el_##name)
#define SWEEP_EQ_FORWARD SWEEP_FN(sweep_elastic_forward)
#define SWEEP_EQ_BACKWARD SWEEP_FN(sweep_elastic_backward)
#define SWEEP_STAG_FORWARD_NAME sweep_elastic_forward_
#define SWEEP_STAG_BACKWARD_NAME sweep_elastic_backward_
#define SWEEP_STAG_SNAP_VALUES EL_NF
#define SWEEP_STAG_SNAP_SPLIT EL_ND
#define SWEEP_STAG_GRAD_SLOT 0
#define SWEEP_STAG_BOUNDARY 1
/* 3D forward: one sweep per step (cpu_phased.h, planes in z), the points per
 * plane (el_line_points) and the images after the step; a lag of h planes
 * (phase V reads stresses h planes each way: normal ones forward, shear ones
 * backward; phase S the velocities alike).  The adjoint runs its phases
 * apart.  Bitwise equal to the phases apart (benchmarks/README.md). */
#if SWEEP_NDIM == 3
#define SWEEP_EQ_FUSE(p, f) ((void)(p), (void)(f), 1)
#define SWEEP_EQ_FUSE_LAG h
#define SWEEP_EQ_FUSE_POINTS(p, f, k, shot, off, t, l) \
  SWEEP_FN(el_line_points)(p, f, &stag_base, k, shot, off, t, l)
#define SWEEP_EQ_FUSE_AFTER(p, f, shot, off, t) SWEEP_FN(el_images)(p, stag_base.f, off, 0)
#endif
/* The adjoint's window of precomputed products (el_win_t): one per thread,
 * its lines computed ahead of each adjoint line. */
#define SWEEP_EQ_ADJ_STATE(f) \
  SWEEP_FN(el_win_t) el_win;   \
  SWEEP_FN(el_win_init)(p, &el_win)
#define SWEEP_EQ_ADJ_STATE_END() free(el_win.buf)
#define SWEEP_EQ_ADJ_SHOT(f, off) SWEEP_FN(el_ctx_t) stag_e = SWEEP_FN(el_shot)(&stag_base, off)
#define SWEEP_EQ_ADJ_TILE(p, shot, y0, k, t) SWEEP_FN(el_win_tile)(p, &el_win, shot, y0, SWEEP_TILE_Y, k, t)
#define SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y, k, st)                                   \
  ((void)(pa), (void)(pb),                                                              \
   SWEEP_FN(el_win_rows)(p, &el_win, &stag_e, SWEEP_NDIM == 3 ? (z) : (y), k),          \
   SWEEP_STAG(row)(p, &stag_e, NULL, st, SWEEP_SNAP_STRIDE(p), z, y, 3 - (k)))
#include "cpu_staggered_hooks.h"
