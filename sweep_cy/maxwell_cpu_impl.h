/*
 * Maxwell's equations' plug-in to the CPU time loops: two phases per step
 * (H then E; cpu_phased.h through cpu_skeleton.h), `omp simd` rows over the
 * point arithmetic of cuda/maxwell_stencil.h (GCC vectorises every row), one
 * never-inlined function per CPML mask for each of the four row kinds (see
 * MX_FN_), and the points and the images
 * behind perfect conductors of each phase.  The order is a run-time value:
 * the unit of (ndim, dtype) defines the entry points of every order.  The
 * arrays come in the record of the staggered systems, sweep_elastic_fields
 * (slots in maxwell_stencil.h).
 *
 * Sources and receivers are single cells of one E component each, index
 * field * shot_stride + cell (sweep/equations/maxwell/compiled.py expands
 * the point operators).  Forward: phase H's points record E^t (receiver
 * sample t) and fill the H images; phase E's add the sources (times cb of
 * the cell) and fill the E images.  Adjoint (of phase E first): after its
 * rows, the H adjoint on the images' halo cells, folded back onto their
 * cells; after the rows of the adjoint of phase H, the same for E, the
 * residuals of step t, then the source gradients of step t - 1 (whose
 * adjoint E is now complete).
 */
#include "maxwell_cpu.h"

#define SWEEP_EQ_PARAMS sweep_acoustic_params
#define SWEEP_EQ_FIELDS sweep_elastic_fields
#include "maxwell_stencil.h"
#include "cpu_rows.h"

typedef SWEEP_FN(maxwell_ctx) SWEEP_FN(mx_ctx_t);

/* Cells per vector of the rows (64-byte vectors with AVX-512). */
#define MX_VL (64 / (sweep_int)sizeof(SWEEP_R))

/* The pointers of a call and of a shot: mx_ctx, mx_shot (maxwell_stencil.h). */

/* ---- Rows: cells [x0, x1) of row base = (z, y), one function per mask ---- */

#define MX_ROW_PARAMS                                                                        \
  const SWEEP_FN(mx_ctx_t) * e, SWEEP_R *wrow, const SWEEP_R *st, sweep_int vs, sweep_int base, \
      sweep_int z, sweep_int y, sweep_int x0, sweep_int x1
#define MX_ROW_ARGS e, wrow, st, vs, base, z, y, x0, x1

/* The cells of one row kind: 0/1 forward H/E (snapshot values to wrow + x,
 * pitch apart, when wrow is not NULL), 2/3 the adjoints of E/H (st: the
 * row's snapshot, or NULL); taps of (nh, e->nh) as STAG_TAPS. */
static inline __attribute__((always_inline)) void SWEEP_FN(mx_cells)(MX_ROW_PARAMS,
                                                                     const int kind,
                                                                     const int mask,
                                                                     const int nh) {
  const sweep_int pitch = e->n[2];
  /* A private copy of the context and of the weights: the rows' stores
   * cannot alias them, so the loops keep the weights and 1 / dx in vector
   * registers (read through e, each cell reloaded and broadcast them). */
  SWEEP_FN(mx_ctx_t) l = *e;
  SWEEP_R w[STAG_MAX_H];
  for (int k = 0; k < STAG_MAX_H; ++k) w[k] = k < e->nh ? e->ws[k] : 0;
  l.ws = w;
#define MX_LOOP_(call) \
  _Pragma("omp simd") for (sweep_int x = x0; x < x1; ++x) { call; }
  if (kind == 0) {
    if (wrow) MX_LOOP_(SWEEP_FN(mx_fwd_h)(&l, base + x, z, y, x, mask, nh, wrow + x, pitch))
    else MX_LOOP_(SWEEP_FN(mx_fwd_h)(&l, base + x, z, y, x, mask, nh, NULL, pitch))
  } else if (kind == 1) {
    if (wrow) MX_LOOP_(SWEEP_FN(mx_fwd_e)(&l, base + x, z, y, x, mask, nh, wrow + x, pitch))
    else MX_LOOP_(SWEEP_FN(mx_fwd_e)(&l, base + x, z, y, x, mask, nh, NULL, pitch))
  } else if (kind == 2) {
    MX_LOOP_(SWEEP_FN(mx_adj_e)(&l, base + x, z, y, x, mask, nh))
  } else {
    if (st) MX_LOOP_(SWEEP_FN(mx_adj_h)(&l, base + x, z, y, x, mask, nh, st + x, vs))
    else MX_LOOP_(SWEEP_FN(mx_adj_h)(&l, base + x, z, y, x, mask, nh, NULL, vs))
  }
#undef MX_LOOP_
}

/* The rows of every kind, vectorised, one never-inlined function per kind
 * and mask (MX_FN_).  The C-PML rows take STAG_MAX_H taps of the run-time
 * order (nh 0), but for the 3D forward's orders 2 and 4 (MX_FWD_CPML_).  Their masks: in 2D each its own (2, 4, 6); in 3D masks 1
 * to 4 (the z and y strips' full rows, the x strips' segments of the other
 * rows) each its own, and the x-strip segments of the z and y strips (5 to
 * 7: 31 % of the x-strip segments at 100^3, CPML 10) the function of mask
 * 7, which stretches the derivatives along every axis: the profiles are
 * zero outside the C-PML of their axis (sweep._grid.cpml_profile), so a
 * stretch there adds exact zeros (psi = 0 psi + 0 D) and its memory
 * variable stays zero (the 3D forward's vector rows of orders 2 and 4 have
 * masks 5 and 6 of their own: MX_CPML56_).  Mask 7 for every x-strip segment cost the 3D forward
 * much (the other axes' memory variables, 16 cells of each per row, missed
 * the caches); per-mask functions of masks 5 and 6 too cost compile time.
 * The plain rows (mask 0), where the time goes: one function per kind for
 * order 4 (nh 2, the default; its taps a literal) and one of STAG_MAX_H
 * taps for the others; in 2D the forward's orders 2 and 6 as literals too
 * (no zero-weight taps). */
#define MX_FN_(kind, m, nh)                                                                   \
  static __attribute__((noinline)) void SWEEP_FN(mx_k##kind##_m##m##_##nh)(MX_ROW_PARAMS) { \
    SWEEP_FN(mx_cells)(MX_ROW_ARGS, kind, m, nh);                                           \
  }
#if SWEEP_NDIM == 2
#define MX_KIND(kind) \
  MX_FN_(kind, 0, 2) MX_FN_(kind, 0, 0) MX_FN_(kind, 2, 0) MX_FN_(kind, 4, 0) MX_FN_(kind, 6, 0)
#define MX_FN_MASK_(m) (m)
#else
#define MX_KIND(kind)                                                                   \
  MX_FN_(kind, 0, 2) MX_FN_(kind, 0, 0) MX_FN_(kind, 1, 0) MX_FN_(kind, 2, 0) MX_FN_(kind, 3, 0) \
  MX_FN_(kind, 4, 0) MX_FN_(kind, 7, 0)
#define MX_FN_MASK_(m) (m)
#endif
MX_KIND(0)
MX_KIND(1)
MX_KIND(2)
MX_KIND(3)
#if SWEEP_NDIM == 2
MX_FN_(0, 0, 1) MX_FN_(0, 0, 3) MX_FN_(1, 0, 1) MX_FN_(1, 0, 3)
/* The forward's C-PML rows of order 4 (nh 2, the default) with their taps a
 * literal: of STAG_MAX_H taps (half of them zero-weight) the x-CPML
 * segments cost ~4x a plain cell (tm2d o4 f32 440^2: 23 % of the samples
 * for 13 % of the cells). */
MX_FN_(0, 2, 2) MX_FN_(0, 4, 2) MX_FN_(0, 6, 2) MX_FN_(1, 2, 2) MX_FN_(1, 4, 2) MX_FN_(1, 6, 2)
#define MX_FWD_LITERAL_(kind, args)          \
  if (e->nh == 1) {                          \
    SWEEP_FN(mx_k##kind##_m0_1) args;        \
  } else if (e->nh == 3) {                   \
    SWEEP_FN(mx_k##kind##_m0_3) args;        \
  } else
#else
/* 3D forward: the C-PML functions of orders 2 and 4 take their taps as
 * literals too (nh 1, 2), and order 2's plain rows: the functions of
 * STAG_MAX_H taps ran order 4's C-PML rows with twice its taps and order 2's
 * every row with four times (zero-weight taps, the same values).  mx3d-o4:
 * the x-segment functions ran at 2 (mask 4) to 3.1 (mask 7) times a plain
 * cell's cost. */
#define MX_FWD_CPML_(kind) \
  MX_FN_(kind, 0, 1) MX_FN_(kind, 1, 1) MX_FN_(kind, 2, 1) MX_FN_(kind, 3, 1) MX_FN_(kind, 4, 1) \
  MX_FN_(kind, 7, 1) MX_FN_(kind, 1, 2) MX_FN_(kind, 2, 2) MX_FN_(kind, 3, 2) MX_FN_(kind, 4, 2) \
  MX_FN_(kind, 7, 2)
MX_FWD_CPML_(0)
MX_FWD_CPML_(1)
#undef MX_FWD_CPML_
#define MX_FWD_LITERAL_(kind, args)   \
  if (e->nh == 1) {                   \
    SWEEP_FN(mx_k##kind##_m0_1) args; \
  } else
#endif
/* The plain rows' literal orders besides 4 (nh 2), by kind. */
#define MX_LITERAL_0(args) MX_FWD_LITERAL_(0, args)
#define MX_LITERAL_1(args) MX_FWD_LITERAL_(1, args)
#define MX_LITERAL_2(args)
#define MX_LITERAL_3(args)
#undef MX_KIND
#undef MX_FN_

#if defined(__GNUC__) && !defined(__clang__)
/* ---- Forward rows, explicit vectors (TM2D and 3D) ----
 *
 * The compiler's vectorisation of mx_fwd_h / mx_fwd_e loads each x tap of
 * the difference along x as its own unaligned vector (three of the four at
 * order 4 straddle two cache lines): 12 vector loads per phase H vector and
 * 11 per phase E one, against acoustic's 7 per step, whose x taps come from
 * a window of three vectors (cpu_vec.h).  Here the same: the field read
 * along x (Ey in phase H, Hz in phase E) slides through prev / cur / next,
 * one new load per vector, and its x taps are shuffles; the z taps and the
 * updated fields are loads at the cell (aligned where the row is).  The
 * arithmetic is maxwell_stencil.h's (STAG_DIFF_SUM, MX_CURL_TERM, MX_H_NEW,
 * MX_E_NEW) in the same order, so every lane rounds as mx_fwd_h / mx_fwd_e
 * round the cell.  The cells past the last whole vector run the scalar
 * row functions.  3D the same with a window per field read along x (Ey
 * and Ez in phase H, Hy and Hz in phase E) and the y and z taps loads a
 * stride apart. */
#if defined(__AVX512F__)
#define MX_VB_ 64
#elif defined(__AVX__)
#define MX_VB_ 32
#else
#define MX_VB_ 16
#endif
#define MX_VN (MX_VB_ / SWEEP_REAL_BYTES)
/* Software prefetch distance of the vector rows (mx_vcells), cells (0: none). */
#ifndef MX_PF_DIST
#define MX_PF_DIST 128
#endif
#if MX_VB_ / SWEEP_REAL_BYTES >= STAG_MAX_H
#define MX_HAVE_VEC 1
typedef SWEEP_R SWEEP_FN(mx_vec) __attribute__((vector_size(MX_VB_)));
typedef SWEEP_R SWEEP_FN(mx_uvec) __attribute__((vector_size(MX_VB_), aligned(SWEEP_REAL_BYTES)));
#if SWEEP_REAL_BYTES == 4
typedef int SWEEP_FN(mx_lanes) __attribute__((vector_size(MX_VB_)));
#else
typedef long long SWEEP_FN(mx_lanes) __attribute__((vector_size(MX_VB_)));
#endif
#if MX_VB_ / SWEEP_REAL_BYTES == 16
#define MX_IOTA_ {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
#elif MX_VB_ / SWEEP_REAL_BYTES == 8
#define MX_IOTA_ {0, 1, 2, 3, 4, 5, 6, 7}
#else
#define MX_IOTA_ {0, 1, 2, 3}
#endif
#define MX_VLD_(ptr) (*(const SWEEP_FN(mx_uvec) *)(ptr))
#define MX_VST_(ptr, v) (*(SWEEP_FN(mx_uvec) *)(ptr) = (v))
/* Cells [x + j, x + j + VN) from the window (prev, cur, next) at x; j a
 * compile-time constant in [-VN, VN]. */
#define MX_VTAP_(j)                                                                      \
  ((j) == 0  ? cur                                                                       \
   : (j) > 0 ? __builtin_shuffle(cur, next, (SWEEP_FN(mx_lanes))MX_IOTA_ + (int)(j))           \
             : __builtin_shuffle(prev, cur, (SWEEP_FN(mx_lanes))MX_IOTA_ + (int)(MX_VN + (j))))

/* 3D with AVX-512: the cells past the last whole vector of a row without
 * an x profile and without snapshot values (mx_vcells' tail) as one more
 * vector, its stores masked to the row's cells (k: the lanes stored); the
 * lanes past the row compute on the cells after it and are dropped.  The
 * scalar remainder of mx3d-o4's plain middles (4 cells of 68) took 5 % of
 * the samples. */
#if SWEEP_NDIM == 3 && defined(__AVX512F__) && SWEEP_REAL_BYTES == 4
#define MX_VTAIL_ 1
#define MX_VSTK_(ptr, v, k) _mm512_mask_storeu_ps((ptr), (__mmask16)(k), (__m512)(v))
#elif SWEEP_NDIM == 3 && defined(__AVX512F__)
#define MX_VTAIL_ 1
#define MX_VSTK_(ptr, v, k) _mm512_mask_storeu_pd((ptr), (__mmask8)(k), (__m512d)(v))
#else
#define MX_VTAIL_ 0
#define MX_VSTK_(ptr, v, k) MX_VST_(ptr, v)
#endif

/* Component a's (0, 1) term along x (mx_term's t = a) differentiates the
 * other field's component 1 - a: whether kind's row updates a, and that
 * field's row. */
#define MX_XW_(kind, a) ((kind) ? MX_HAS_E(a) : MX_HAS_H(a))
#define MX_XF_(kind, a) (f[(kind) ? MX_HF(1 - (a)) : MX_EF(1 - (a))] + base)

/* The whole vectors of cells [x0, x1) of kind 0 (phase H) or 1 (phase E)'s
 * row of mask m (0: plain; else the C-PML stretch along the axes of its
 * bits, 1 z, 2 y, 4 x, as mx_curl's stag_stretch), taps a literal nh;
 * returns the first cell left over. */
static inline __attribute__((always_inline)) sweep_int SWEEP_FN(mx_vcells)(MX_ROW_PARAMS,
                                                                          const int kind,
                                                                          const int nh,
                                                                          const int mask) {
  typedef SWEEP_FN(mx_vec) V;
  (void)st;
  (void)vs;
  const sweep_int pitch = e->n[2], sz = e->st[1];
  const sweep_int sb[2] = {MX_ND == 3 ? e->st[0] : 0, sz};
  /* Memory: the window reads a vector before x0 and past x1 - 1, inside the
   * rows before and after (every row updated lies inside the halo). */
  if (x1 - x0 < MX_VN || sz < MX_VN) return x0;
  SWEEP_R w[STAG_MAX_H];
  for (int k = 0; k < STAG_MAX_H; ++k) w[k] = k < e->nh ? e->ws[k] : 0;
  const SWEEP_R rdx[3] = {MX_ND == 3 ? e->rdx[0] : 0, e->rdx[1], e->rdx[2]};
  SWEEP_R *f[6];
  const SWEEP_R *c[9];
  for (int k = 0; k < 6; ++k) f[k] = e->f[k];
  for (int k = 0; k < 9; ++k) c[k] = e->c[k];
  /* The C-PML profiles (phase H's derivatives forward: the half nodes'):
   * along z one value for the plane, along y one for the row, along x one
   * per cell. */
  const SWEEP_R *pxa = (mask & 4) ? (kind ? e->pa[2] : e->pah[2]) : NULL;
  const SWEEP_R *pxb = (mask & 4) ? (kind ? e->pb[2] : e->pbh[2]) : NULL;
  const SWEEP_R pya = (mask & 2) ? (kind ? e->pa[1] : e->pah[1])[y] : 0;
  const SWEEP_R pyb = (mask & 2) ? (kind ? e->pb[1] : e->pbh[1])[y] : 0;
  const SWEEP_R pza = (mask & 1) ? (kind ? e->pa[0] : e->pah[0])[z] : 0;
  const SWEEP_R pzb = (mask & 1) ? (kind ? e->pb[0] : e->pbh[0])[z] : 0;
  SWEEP_R *mp[6][3] = {{0}};
  if (mask)
    for (int k = 0; k < 6; ++k)
      for (int d = MX_A0; d < 3; ++d) mp[k][d] = e->m[k][d];
  /* The fields read along x, a window each (MX_XW_): in TM2D Ey in phase
   * H, Hz in phase E; in 3D Ey, Ez and Hy, Hz. */
  const SWEEP_R *rx0 = MX_XW_(kind, 0) ? MX_XF_(kind, 0) : NULL;
  const SWEEP_R *rx1 = MX_XW_(kind, 1) ? MX_XF_(kind, 1) : NULL;
  V prev0 = {0}, cur0 = {0}, next0 = {0}, prev1 = {0}, cur1 = {0}, next1 = {0};
  if (MX_XW_(kind, 0)) prev0 = MX_VLD_(rx0 + x0 - MX_VN), cur0 = MX_VLD_(rx0 + x0);
  if (MX_XW_(kind, 1)) prev1 = MX_VLD_(rx1 + x0 - MX_VN), cur1 = MX_VLD_(rx1 + x0);
  sweep_int x = x0;
  /* A masked tail (MX_VTAIL_): not on the x profiles' segments (their
   * arrays end with the row) nor into wrow (its last value ends there). */
  const int vt = MX_VTAIL_ && !(mask & 4);
  const int tail = vt && !wrow;
#define MX_W_(k) w[(k) - 1]
  for (; tail ? x < x1 : x + MX_VN <= x1; x += MX_VN) {
    if (MX_XW_(kind, 0)) next0 = MX_VLD_(rx0 + x + MX_VN);
    if (MX_XW_(kind, 1)) next1 = MX_VLD_(rx1 + x + MX_VN);
    const sweep_int i = base + x;
    const unsigned k = x + MX_VN <= x1 ? (1u << MX_VN) - 1 : (1u << (x1 - x)) - 1;
    (void)k;
#if MX_PF_DIST > 0
    {
      /* Every stream of the row MX_PF_DIST cells ahead: the updated field
       * (for writing), the coefficients, the other field's row (own plane,
       * next row in y for phase H) and in 3D its plane in z (z + 1 for H,
       * z - 1 for E); TM2D's absent components skipped (o4 f64 kernels
       * 0.056-0.059 -> 0.051 s, f32 and o8 f64 unchanged). */
      const sweep_int j = i + MX_PF_DIST, dz = MX_ND == 3 ? (kind ? -sb[0] : sb[0]) : 0;
      SWEEP_UNROLL
      for (int a = 0; a < 3; ++a) {
        const int upd = kind ? MX_HAS_E(a) : MX_HAS_H(a);
        if (upd) __builtin_prefetch(f[kind ? MX_EF(a) : MX_HF(a)] + j, 1, 3);
        if (kind ? MX_HAS_H(a) : MX_HAS_E(a)) {
          const SWEEP_R *o = f[kind ? MX_HF(a) : MX_EF(a)] + j;
          __builtin_prefetch(o, 0, 3);
          if (MX_ND == 3) __builtin_prefetch(o + dz, 0, 3);
          if (!kind) __builtin_prefetch(o + sz, 0, 3);
        }
        if (!upd) continue;
        if (kind) {
          __builtin_prefetch(c[MX_CA(a)] + j, 0, 3);
          __builtin_prefetch(c[MX_CB(a)] + j, 0, 3);
        } else {
          __builtin_prefetch(c[MX_CH(a)] + j, 0, 3);
        }
        /* 3D: the memory variables of the z and y stretches (masks 1-3, 5-7),
         * for writing: the y strips' are ten rows a plane, too short a run
         * for the hardware streams (mask 2's rows cost 1.4x a plain row). */
        if (MX_ND == 3 && (mask & 3)) {
          SWEEP_UNROLL
          for (int t = 0; t < 2; ++t) {
            int b, cc;
            if (!SWEEP_FN(mx_term)(a, t, &b, &cc) || b == 2 || !(mask & (1 << b))) continue;
            __builtin_prefetch(mp[kind ? MX_HF(cc) : MX_EF(cc)][b] + j, 1, 3);
          }
        }
      }
    }
#endif
#define MX_VPUT_(ptr, v)      \
  do {                        \
    if (vt)                   \
      MX_VSTK_(ptr, v, k);    \
    else                      \
      MX_VST_(ptr, v);        \
  } while (0)
    SWEEP_UNROLL
    for (int a = 0; a < 3; ++a) {
      if (kind ? !MX_HAS_E(a) : !MX_HAS_H(a)) continue;
      V C = {0};
      SWEEP_UNROLL
      for (int t = 0; t < 2; ++t) {
        int b, cc;
        const int s = SWEEP_FN(mx_term)(a, t, &b, &cc);
        if (!s) continue;
        V sum = {0};
        if (b == 2) {
          const V prev = a ? prev1 : prev0, cur = a ? cur1 : cur0, next = a ? next1 : next0;
          STAG_DIFF_SUM(sum, MX_VTAP_, MX_W_, !kind, nh, nh)
        } else {
          const SWEEP_R *fp = f[kind ? MX_HF(cc) : MX_EF(cc)] + i;
          const sweep_int sz = sb[b];
#define MX_ZTAP_(j) MX_VLD_(fp + (j) * sz)
          STAG_DIFF_SUM(sum, MX_ZTAP_, MX_W_, !kind, nh, nh)
#undef MX_ZTAP_
        }
        V D = sum * rdx[b];
        if (mask & (1 << b)) {
          SWEEP_R *m = mp[kind ? MX_HF(cc) : MX_EF(cc)][b] + i;
          const V A = b == 2 ? MX_VLD_(pxa + x) : (V){0} + (b ? pya : pza);
          const V B = b == 2 ? MX_VLD_(pxb + x) : (V){0} + (b ? pyb : pzb);
          const V psi = SWEEP_FMA(B, MX_VLD_(m), A * D);
          MX_VPUT_(m, psi);
          D = D + psi;
        }
        C = MX_CURL_TERM(C, s, D);
      }
      if (kind == 0) {
        SWEEP_R *hp = f[MX_HF(a)] + i;
        MX_VPUT_(hp, MX_H_NEW(MX_VLD_(hp), MX_VLD_(c[MX_CH(a)] + i), C));
        if (wrow) MX_VST_(wrow + x + MX_SH(a) * pitch, C);
      } else {
        SWEEP_R *ep = f[MX_EF(a)] + i;
        const V old = MX_VLD_(ep);
        MX_VPUT_(ep, MX_E_NEW(old, MX_VLD_(c[MX_CA(a)] + i), MX_VLD_(c[MX_CB(a)] + i), C));
        if (wrow) {
          MX_VST_(wrow + x + MX_SE(a) * pitch, old);
          MX_VST_(wrow + x + (MX_SE(a) + 1) * pitch, C);
        }
      }
    }
    prev0 = cur0, cur0 = next0;
    prev1 = cur1, cur1 = next1;
  }
#undef MX_VPUT_
#undef MX_W_
  return x;
}
#undef MX_XW_
#undef MX_XF_
#undef MX_VTAIL_
#undef MX_VSTK_

/* The vector rows of kind (0, 1), literal nh and mask, then the cells left
 * over by the scalar row function fn: mx_v<kind>_<nh> the plain rows,
 * mx_v<kind>_m<m>_<nh> the C-PML rows of mask m (in TM2D the x-CPML
 * segments, masks 4 and 6, and the y-CPML rows' middles, mask 2; in 3D
 * masks 1 to 4 and 7, of orders 2 and 4 only, MX_FWD_CPML_'s). */
#define MX_VROW_(name, kind, nh, mask, fn)                                   \
  static __attribute__((noinline)) void SWEEP_FN(name)(MX_ROW_PARAMS) {      \
    const sweep_int xv = SWEEP_FN(mx_vcells)(MX_ROW_ARGS, kind, nh, mask);   \
    if (xv < x1) SWEEP_FN(fn)(e, wrow, st, vs, base, z, y, xv, x1);          \
  }
#define MX_VFN_(kind, nh, fn) MX_VROW_(mx_v##kind##_##nh, kind, nh, 0, fn)
#define MX_VFNM_(kind, m, nh, fn) MX_VROW_(mx_v##kind##_m##m##_##nh, kind, nh, m, fn)
#if SWEEP_NDIM == 2
#define MX_VFNM_ORDERS_(kind, m)                                                        \
  MX_VFNM_(kind, m, 1, mx_k##kind##_m##m##_0) MX_VFNM_(kind, m, 3, mx_k##kind##_m##m##_0) \
  MX_VFNM_(kind, m, 4, mx_k##kind##_m##m##_0)
MX_VFNM_ORDERS_(0, 2)
MX_VFNM_ORDERS_(0, 4)
MX_VFNM_ORDERS_(0, 6)
MX_VFNM_ORDERS_(1, 2)
MX_VFNM_ORDERS_(1, 4)
MX_VFNM_ORDERS_(1, 6)
#undef MX_VFNM_ORDERS_
#undef MX_VFNM_
MX_VFN_(0, 1, mx_k0_m0_1)
MX_VFN_(0, 2, mx_k0_m0_2)
MX_VFN_(0, 3, mx_k0_m0_3)
MX_VFN_(0, 4, mx_k0_m0_0)
MX_VFN_(1, 1, mx_k1_m0_1)
MX_VFN_(1, 2, mx_k1_m0_2)
MX_VFN_(1, 3, mx_k1_m0_3)
MX_VFN_(1, 4, mx_k1_m0_0)
/* TM2D's forward rows of order 4 (nh 2) with x-CPML segments, each in one
 * call (mx_row): the segments [x0, xa) and [xb, x1) (mask m | 4) and the
 * middle [xa, xb) (mask m: 0 a plain row, 2 a y-CPML row) as vector rows,
 * each one's cells left over by the literal scalar rows.  Before, a row was
 * three calls: the segments the literal scalar rows mx_k*_m{4,6}_2 (GCC's
 * `omp simd` of 24 cells, its prologue copying the context), the middle
 * mx_v*_2 or mx_k*_m2_2.  The same arithmetic per cell (bitwise): tm2d-fwd-
 * o4-f64 (440^2), the rows' perf samples 7-12 % fewer, the call 0-4 %
 * faster (benchmarks/README.md, tm2dk). */
#define MX_VWROW_(kind, m, mx)                                                              \
  static __attribute__((noinline)) void SWEEP_FN(mx_vw##kind##_m##m)(MX_ROW_PARAMS,        \
                                                                      sweep_int xa,         \
                                                                      sweep_int xb) {       \
    sweep_int xv = SWEEP_FN(mx_vcells)(e, wrow, st, vs, base, z, y, x0, xa, kind, 2, mx);   \
    if (xv < xa) SWEEP_FN(mx_k##kind##_m##mx##_2)(e, wrow, st, vs, base, z, y, xv, xa);     \
    xv = SWEEP_FN(mx_vcells)(e, wrow, st, vs, base, z, y, xa, xb, kind, 2, m);              \
    if (xv < xb) SWEEP_FN(mx_k##kind##_m##m##_2)(e, wrow, st, vs, base, z, y, xv, xb);      \
    xv = SWEEP_FN(mx_vcells)(e, wrow, st, vs, base, z, y, xb, x1, kind, 2, mx);             \
    if (xv < x1) SWEEP_FN(mx_k##kind##_m##mx##_2)(e, wrow, st, vs, base, z, y, xv, x1);     \
  }
MX_VWROW_(0, 0, 4)
MX_VWROW_(0, 2, 6)
MX_VWROW_(1, 0, 4)
MX_VWROW_(1, 2, 6)
#undef MX_VWROW_
#define MX_HAVE_VWROW 1
#else
#define MX_VFNM_ORDERS_(kind, m) \
  MX_VFNM_(kind, m, 1, mx_k##kind##_m##m##_1) MX_VFNM_(kind, m, 2, mx_k##kind##_m##m##_2)
/* Masks 5 and 6 (the x segments of the z-strip and y-strip rows): vector
 * rows of their own axes; the cells left over run mask 7's scalar function
 * (mx_row passes them the scratch row for the third axis). */
#define MX_VFNM_ORDERS7_(kind, m) \
  MX_VFNM_(kind, m, 1, mx_k##kind##_m7_1) MX_VFNM_(kind, m, 2, mx_k##kind##_m7_2)
#define MX_VFNM_MASKS_(kind)                                                               \
  MX_VFN_(kind, 1, mx_k##kind##_m0_1) MX_VFN_(kind, 2, mx_k##kind##_m0_2)                  \
  MX_VFNM_ORDERS_(kind, 1) MX_VFNM_ORDERS_(kind, 2) MX_VFNM_ORDERS_(kind, 3)               \
  MX_VFNM_ORDERS_(kind, 4) MX_VFNM_ORDERS_(kind, 7) MX_VFNM_ORDERS7_(kind, 5)             \
  MX_VFNM_ORDERS7_(kind, 6)
MX_VFNM_MASKS_(0)
MX_VFNM_MASKS_(1)
#undef MX_VFNM_MASKS_
#undef MX_VFNM_ORDERS7_
#undef MX_VFNM_ORDERS_
#undef MX_VFNM_
#endif
#undef MX_VFN_
#undef MX_VROW_
#endif
#endif

/* Cells [x0, x1) of kind's row with mask m (a literal: the switch folds). */
#define MX_CALL_(kind, m, args)                                \
  do {                                                         \
    switch (MX_FN_MASK_(m)) {                                  \
      case 0:                                                  \
        MX_VEC_##kind(args)                                    \
        if (e->nh == 2) {                                      \
          SWEEP_FN(mx_k##kind##_m0_2) args;                    \
        } else MX_LITERAL_##kind(args) {                       \
          SWEEP_FN(mx_k##kind##_m0_0) args;                    \
        }                                                      \
        break;                                                 \
      MX_CASES_(kind, args)                                    \
    }                                                          \
  } while (0)
/* The forward's plain rows: the vector rows of their order (TM2D every
 * order, 3D orders 2 and 4), one MX_VEC_NH_ per order that has them. */
#define MX_VEC_NH_(kind, n, args)      \
  if (e->nh == (n)) {                  \
    SWEEP_FN(mx_v##kind##_##n) args;   \
    break;                             \
  }
#if defined(MX_HAVE_VEC) && SWEEP_NDIM == 3
#define MX_VEC_FWD_(kind, args) MX_VEC_NH_(kind, 2, args) MX_VEC_NH_(kind, 1, args)
#elif defined(MX_HAVE_VEC)
#define MX_VEC_FWD_(kind, args)                                            \
  MX_VEC_NH_(kind, 2, args) MX_VEC_NH_(kind, 4, args) MX_VEC_NH_(kind, 1, args) \
  MX_VEC_NH_(kind, 3, args)
#endif
#if defined(MX_HAVE_VEC)
#define MX_VEC_0(args) MX_VEC_FWD_(0, args)
#define MX_VEC_1(args) MX_VEC_FWD_(1, args)
#else
#define MX_VEC_0(args)
#define MX_VEC_1(args)
#endif
#define MX_VEC_2(args)
#define MX_VEC_3(args)
#if SWEEP_NDIM == 2
#define MX_CASES_(kind, args)                                             \
  case 2: MX_CPML_##kind(2, args); break;                                 \
  case 4: MX_CPML_##kind(4, args); break;                                 \
  default: MX_CPML_##kind(6, args); break;
/* The C-PML function of mask m: the forward's vector rows of its order
 * (every order), else (no vectors) those of a literal order 4. */
#if defined(MX_HAVE_VEC)
#define MX_CPML_FWD_(kind, m, args)         \
  do {                                      \
    if (e->nh == 2)                         \
      SWEEP_FN(mx_k##kind##_m##m##_2) args; \
    else if (e->nh == 4)                    \
      SWEEP_FN(mx_v##kind##_m##m##_4) args; \
    else if (e->nh == 1)                    \
      SWEEP_FN(mx_v##kind##_m##m##_1) args; \
    else if (e->nh == 3)                    \
      SWEEP_FN(mx_v##kind##_m##m##_3) args; \
    else                                    \
      SWEEP_FN(mx_k##kind##_m##m##_0) args; \
  } while (0)
#else
#define MX_CPML_FWD_(kind, m, args)         \
  do {                                      \
    if (e->nh == 2)                         \
      SWEEP_FN(mx_k##kind##_m##m##_2) args; \
    else                                    \
      SWEEP_FN(mx_k##kind##_m##m##_0) args; \
  } while (0)
#endif
#else
#define MX_CASES_(kind, args)                                             \
  case 1: MX_CPML_##kind(1, args); break;                                 \
  case 2: MX_CPML_##kind(2, args); break;                                 \
  case 3: MX_CPML_##kind(3, args); break;                                 \
  case 4: MX_CPML_##kind(4, args); break;                                 \
  case 5: MX_CPML56_##kind(5, args); break;                               \
  case 6: MX_CPML56_##kind(6, args); break;                               \
  default: MX_CPML_##kind(7, args); break;
/* The C-PML function of mask m: the forward's of a literal order 2 or 4,
 * vector rows (MX_V3_ v) where there are. */
#if defined(MX_HAVE_VEC)
#define MX_V3_ v
#else
#define MX_V3_ k
#endif
#define MX_CPML_NAME_(v, kind, m, nh) SWEEP_FN(mx_##v##kind##_m##m##_##nh)
#define MX_CPML_FN_(v, kind, m, nh) MX_CPML_NAME_(v, kind, m, nh)
/* Mask m's rows of order 2 or 4 (v: vector or literal scalar rows), other
 * orders mask mo's run-time-order function. */
#define MX_CPML_ORDERS_(v, kind, m, mo, args) \
  do {                                        \
    if (e->nh == 2)                           \
      MX_CPML_FN_(v, kind, m, 2) args;        \
    else if (e->nh == 1)                      \
      MX_CPML_FN_(v, kind, m, 1) args;        \
    else                                      \
      SWEEP_FN(mx_k##kind##_m##mo##_0) args;  \
  } while (0)
#define MX_CPML_FWD_(kind, m, args) MX_CPML_ORDERS_(MX_V3_, kind, m, m, args)
#endif
/* The forward's kinds (0, 1) per order above; the adjoint's run the run-time order. */
#define MX_CPML_0(m, args) MX_CPML_FWD_(0, m, args)
#define MX_CPML_1(m, args) MX_CPML_FWD_(1, m, args)
#define MX_CPML_2(m, args) SWEEP_FN(mx_k2_m##m##_0) args
#define MX_CPML_3(m, args) SWEEP_FN(mx_k3_m##m##_0) args
#if SWEEP_NDIM == 3
/* Masks 5 and 6 (one strip axis and x): the forward's vector rows of orders
 * 2 and 4 stretch those two axes only; else mask 7's function (the third
 * axis's profiles are zero there: exact zeros added, the same values). */
#if defined(MX_HAVE_VEC)
#define MX_CPML56_FWD_(kind, m, args) MX_CPML_ORDERS_(v, kind, m, 7, args)
#else
#define MX_CPML56_FWD_(kind, m, args) MX_CPML_FWD_(kind, 7, args)
#endif
#define MX_CPML56_0(m, args) MX_CPML56_FWD_(0, m, args)
#define MX_CPML56_1(m, args) MX_CPML56_FWD_(1, m, args)
#define MX_CPML56_2(m, args) MX_CPML_2(7, args)
#define MX_CPML56_3(m, args) MX_CPML_3(7, args)
#endif

/* Row (z, y) of one shot in one row kind (see mx_cells).  Inlined: not
 * inlined, TM2D's forward took 8 % longer (o4 f32, 440^2). */
static inline __attribute__((always_inline)) void SWEEP_FN(mx_row)(
    const sweep_acoustic_params *p, const SWEEP_FN(mx_ctx_t) * e, SWEEP_R *wr,
    const SWEEP_R *st, sweep_int vs, sweep_int z, sweep_int y, const int kind) {
  const sweep_int h = p->halo, x_end = p->shape[2] - h;
  const sweep_int base = z * p->stride[0] + y * p->stride[1];
  const SWEEP_R *sx = st ? st - p->store_lo[2] : NULL;
  /* The forward's kinds (0, 1) run the C-PML terms on the cells of nonzero
   * profiles only (mx_ctx's flo, fhi: a halo less per face than plain_lo,
   * plain_hi, which the adjoint keeps).  Bitwise the same (psi stays an
   * exact zero there). */
  const int fwd = kind < 2;
  const sweep_int *plo = fwd ? e->flo : p->plain_lo, *phi = fwd ? e->fhi : p->plain_hi;
  const int oz = SWEEP_NDIM == 3 && (z < plo[0] || z >= phi[0]), oy = y < plo[1] || y >= phi[1];
  const int outer = oz | (oy << 1);
  /* The x-CPML segments rounded up to whole vectors (of MX_VL cells): their
   * scalar remainders, with all their pointers, cost as much as the vectors
   * (TM2D order 4: the x strips took 30 % of the forward's samples for 8 %
   * of its cells).  The cells they take from the plain middle get the
   * C-PML form with zero profiles: the same values. */
  sweep_int x_lo = plo[2], x_hi = phi[2];
  if (x_lo > h) x_lo = h + (x_lo - h + MX_VL - 1) / MX_VL * MX_VL;
  if (x_hi < x_end) x_hi = x_end - (x_end - x_hi + MX_VL - 1) / MX_VL * MX_VL;
  if (x_lo > x_hi) x_lo = plo[2], x_hi = phi[2]; /* a narrow model */
#define MX_ROW(x0, x1, m)                                            \
  if ((x0) < (x1)) {                                                 \
    if (kind == 0)                                                   \
      MX_CALL_(0, m, (e, wr, sx, vs, base, z, y, x0, x1));           \
    else if (kind == 1)                                              \
      MX_CALL_(1, m, (e, wr, sx, vs, base, z, y, x0, x1));           \
    else if (kind == 2)                                              \
      MX_CALL_(2, m, (e, wr, sx, vs, base, z, y, x0, x1));           \
    else                                                             \
      MX_CALL_(3, m, (e, wr, sx, vs, base, z, y, x0, x1));           \
  }
#define MX_SEGMENTS(m)      \
  MX_ROW(h, x_lo, (m) | 4);   \
  MX_ROW(x_lo, x_hi, m);      \
  MX_ROW(x_hi, x_end, (m) | 4)
#if SWEEP_NDIM == 3
  /* The forward's x memory variables of the next row's x-CPML segments,
   * prefetched for writing: touched only there (a line or two per row and
   * array, a row pitch apart), no hardware stream covered them, and their
   * misses took most of the x segments' time (mx3d-o4, main: the x-segment
   * functions 58 % of the samples, the plain middle 10 %). */
  if (fwd && x_lo < x_hi) {
    const sweep_int nb = base + p->stride[1];
    for (int F = kind ? 0 : 3; F < (kind ? 3 : 6); ++F) {
      const SWEEP_R *m = e->m[F][2];
      if (!m) continue;
      SWEEP_FN(prefetch_cells)(m + nb, h, x_lo, 1);
      SWEEP_FN(prefetch_cells)(m + nb, x_hi, x_end, 1);
    }
  }
  /* A forward row in the strips of one of z, y only (all but the corner
   * rows of a 3D outer region): its middle runs the function of its axis
   * (mask 1, 2), but its x segments mask 7's, whose terms of the other axis
   * read and write an exact zero (that axis's profiles are zero on the
   * row).  Their memory variables go to a zeroed scratch row (in L1)
   * instead of their full-grid arrays: the same functions and arithmetic,
   * the memory traffic of two axes' C-PML terms, not three's (as el_row).
   * The forward's vector rows of orders 2 and 4 have masks 5 and 6 of their
   * own (MX_CPML56_), which never touch the third axis: where the x
   * segments are whole vectors (no cells left to mask 7's scalar function)
   * the row needs no scratch row. */
#if defined(MX_HAVE_VEC)
  const int whole = (e->nh == 1 || e->nh == 2) && p->stride[1] >= MX_VN &&
                    (x_lo == h || (x_lo - h >= MX_VN && (x_lo - h) % MX_VN == 0)) &&
                    (x_hi == x_end || (x_end - x_hi >= MX_VN && (x_end - x_hi) % MX_VN == 0));
#else
  const int whole = 0;
#endif
  if (fwd && outer && oz != oy && !whole) {
    SWEEP_R buf[p->shape[2] + MX_VL] __attribute__((aligned(64)));
    memset(buf, 0, sizeof(buf));
    SWEEP_R *zero = buf + MX_VL - h % MX_VL - base; /* x = h on a vector */
    SWEEP_FN(mx_ctx_t) own = *e;
    for (int F = 0; F < 6; ++F)
      if (own.m[F][oz]) own.m[F][oz] = zero;
    {
      const SWEEP_FN(mx_ctx_t) *const e = &own;
      SWEEP_MASK_SWITCH(outer, MX_SEGMENTS)
    }
    return;
  }
#endif
#ifdef MX_HAVE_VWROW
  /* TM2D order 4 with x-CPML segments: the whole row in one call. */
  if (fwd && e->nh == 2 && h < x_lo && x_lo < x_hi && x_hi < x_end) {
    if (kind == 0) {
      if (outer)
        SWEEP_FN(mx_vw0_m2)(e, wr, sx, vs, base, z, y, h, x_end, x_lo, x_hi);
      else
        SWEEP_FN(mx_vw0_m0)(e, wr, sx, vs, base, z, y, h, x_end, x_lo, x_hi);
    } else {
      if (outer)
        SWEEP_FN(mx_vw1_m2)(e, wr, sx, vs, base, z, y, h, x_end, x_lo, x_hi);
      else
        SWEEP_FN(mx_vw1_m0)(e, wr, sx, vs, base, z, y, h, x_end, x_lo, x_hi);
    }
    return;
  }
#endif
  SWEEP_MASK_SWITCH(outer, MX_SEGMENTS)
#undef MX_ROW
#undef MX_SEGMENTS
}

/* ---- Images behind perfect conductors ---- */

/* The images of E (is_e) or H of the shot at off (axes in order forward,
 * reversed adjoint). */
static void SWEEP_FN(mx_images)(const sweep_acoustic_params *p, SWEEP_R *const *fields,
                                sweep_int off, int is_e, int adjoint) {
  for (int c = 0; c < 3; ++c) {
    if (!(is_e ? MX_HAS_E(c) : MX_HAS_H(c))) continue;
    SWEEP_R *u = fields[is_e ? MX_EF(c) : MX_HF(c)] + off;
    for (int i = 0; i < MX_ND; ++i) {
      const int d = adjoint ? 2 - i : MX_A0 + i;
      if (!(p->free_lo[d] || p->free_hi[d]) || !SWEEP_FN(mx_mirrored)(c, d)) continue;
      SWEEP_FN(mirror_axis)(p, u, d, !is_e, is_e ? -1 : 1, adjoint);
    }
  }
}

/* The adjoint's gather at the image cells of E (is_e) or H in the halo of
 * the shot at off: the forward read them, the rows cover the interior only. */
static void SWEEP_FN(mx_halo_gather)(const sweep_acoustic_params *p,
                                     const SWEEP_FN(mx_ctx_t) * base, sweep_int off, int is_e) {
  const sweep_int h = p->halo;
  const SWEEP_FN(mx_ctx_t) e = SWEEP_FN(mx_shot)(base, off);
  for (sweep_int z = 0; z < p->shape[0]; ++z)
    for (sweep_int y = 0; y < p->shape[1]; ++y)
      for (sweep_int x = 0; x < p->shape[2]; ++x) {
        const sweep_int c[3] = {z, y, x};
        int halo = 0;
        for (int d = MX_A0; d < 3; ++d) halo |= c[d] < h || c[d] >= p->shape[d] - h;
        if (!halo) {
          x = p->shape[2] - h - 1; /* skip the interior */
          continue;
        }
        SWEEP_FN(mx_halo_cell)(p, &e, z * p->stride[0] + y * p->stride[1] + x, c, is_e);
      }
}

static int SWEEP_FN(mx_free)(const sweep_acoustic_params *p) {
  int free = 0;
  for (int d = 0; d < 3; ++d) free |= p->free_lo[d] || p->free_hi[d];
  return free;
}

/* ---- Points of one shot ---- */

static void SWEEP_FN(mx_fwd_points)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                                    const SWEEP_FN(mx_ctx_t) * e, int phase, sweep_int shot,
                                    sweep_int off, sweep_int t) {
  const sweep_int ss = p->shot_stride;
  if (phase == 0 && f->rec) {
    SWEEP_R *rec = (SWEEP_R *)f->rec;
    for (sweep_int r = 0; r < p->n_rec; ++r) {
      const sweep_int j = f->rec_idx[shot * p->n_rec + r], F = j / ss;
      rec[(shot * p->n_rec + r) * p->nt + t] = e->f[F][off + j - F * ss];
    }
  }
  if (phase == 1 && f->src_amp) {
    const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
    for (sweep_int k = 0; k < p->n_src; ++k) {
      const sweep_int j = f->src_idx[shot * p->n_src + k], F = j / ss, cell = j - F * ss;
      SWEEP_FN(mx_source)(e, F, off, cell, amp[(shot * p->n_src + k) * p->nt + t]);
    }
  }
  SWEEP_FN(mx_images)(p, e->f, off, phase, 0);
}

static void SWEEP_FN(mx_adj_points)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                                    const SWEEP_FN(mx_ctx_t) * e, int phase, sweep_int shot,
                                    sweep_int off, sweep_int t) {
  const sweep_int ss = p->shot_stride;
  const int free = SWEEP_FN(mx_free)(p);
  /* phase 1: after the adjoint of phase E, H's images; phase 0: E's. */
  if (free) {
    SWEEP_FN(mx_halo_gather)(p, e, off, !phase);
    if (phase) SWEEP_FN(mx_images)(p, e->f, off, 0, 1);
  }
  if (phase) return;
  if (f->rec) {
    const SWEEP_R *res = (const SWEEP_R *)f->rec;
    for (sweep_int r = 0; r < p->n_rec; ++r) {
      const sweep_int j = f->rec_idx[shot * p->n_rec + r], F = j / ss;
      e->f[F][off + j - F * ss] += res[(shot * p->n_rec + r) * p->nt + t];
    }
  }
  if (free) SWEEP_FN(mx_images)(p, e->f, off, 1, 1);
  const sweep_int ts = t - 1;
  if (ts < 0 || !p->n_src) return;
  const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
  SWEEP_R *gs = (SWEEP_R *)f->grad_src;
  const int model = f->store && amp && ts % p->store_every == 0;
  for (sweep_int k = 0; k < p->n_src; ++k) {
    const sweep_int j = f->src_idx[shot * p->n_src + k], F = j / ss, cell = j - F * ss;
    const sweep_int a = (shot * p->n_src + k) * p->nt + ts;
    SWEEP_FN(mx_source_adjoint)(e, F, off, cell, amp ? amp + a : NULL, gs ? gs + a : NULL,
                                model);
  }
}

/* ---- Temporal blocking of the forward (cpu_phased.h's tb_forward) ---- */

/* The lines of the blocked sweep: planes in z (3D), rows in y (2D). */
#define MX_TB_AXIS (SWEEP_NDIM == 3 ? 0 : 1)

/* The points of every shot sorted by line (stable: a cell's sources add in
 * the order of the fused step): n + 1 starts per shot (shape[MX_TB_AXIS] +
 * 1 each), then the point numbers, for the sources and then the receivers.
 * NULL (the forward then runs unblocked) where a point lies off the rows
 * that the sweep updates (in a halo), or when memory runs out. */
static void *SWEEP_FN(mx_tb_prep)(const sweep_acoustic_params *p,
                                  const sweep_elastic_fields *f) {
  const sweep_int nz = p->shape[MX_TB_AXIS], ns = p->n_shots, ss = p->shot_stride;
  const sweep_int ls = p->stride[MX_TB_AXIS];
  const sweep_int n_src = f->src_amp ? p->n_src : 0, n_rec = f->rec ? p->n_rec : 0;
  sweep_int *l = (sweep_int *)calloc((size_t)(2 * ns * (nz + 1) + ns * (n_src + n_rec)) + 1,
                                     sizeof(sweep_int));
  sweep_int *fill = (sweep_int *)malloc(sizeof(sweep_int) * (size_t)(nz + 1));
  if (!l || !fill) {
    free(l);
    free(fill);
    return NULL;
  }
  sweep_int *start = l, *idx = l + 2 * ns * (nz + 1);
  for (int kind = 0; kind < 2; ++kind) {
    const sweep_int n = kind ? n_rec : n_src;
    const sweep_int *loc = kind ? f->rec_idx : f->src_idx;
    for (sweep_int shot = 0; shot < ns; ++shot) {
      sweep_int *st = start + (kind * ns + shot) * (nz + 1);
      sweep_int *ix = idx + (kind ? ns * n_src : 0) + shot * n;
      for (sweep_int k = 0; k < n; ++k) {
        const sweep_int c = loc[shot * n + k] % ss, z = c / ls, h = p->halo;
        const sweep_int y = SWEEP_NDIM == 3 ? c % p->stride[0] / p->stride[1] : h;
        if (z < h || z >= nz - h || y < h || y >= p->shape[1] - h) {
          free(l);
          free(fill);
          return NULL;
        }
        ++st[z + 1];
      }
      for (sweep_int z = 0; z < nz; ++z) st[z + 1] += st[z];
      memcpy(fill, st, sizeof(sweep_int) * (size_t)(nz + 1));
      for (sweep_int k = 0; k < n; ++k) {
        const sweep_int j = loc[shot * n + k];
        ix[fill[(j % ss) / ls]++] = k;
      }
    }
  }
  free(fill);
  return l;
}

/* After phase E of row (z, y) of step t: the row's sources of step t, then
 * (rec) its receivers of step t + 1, in the order of mx_fwd_points. */
static inline void SWEEP_FN(mx_tb_points)(const sweep_acoustic_params *p,
                                          const sweep_elastic_fields *f,
                                          const SWEEP_FN(mx_ctx_t) * e, const sweep_int *l,
                                          sweep_int shot, sweep_int off, sweep_int z,
                                          sweep_int y, sweep_int t, int rec) {
  const sweep_int nz = p->shape[MX_TB_AXIS], ns = p->n_shots, ss = p->shot_stride;
  const sweep_int line = SWEEP_NDIM == 3 ? z : y;
  const sweep_int n_src = f->src_amp ? p->n_src : 0, n_rec = f->rec ? p->n_rec : 0;
  const sweep_int *st = l + shot * (nz + 1) + line, *ix = l + 2 * ns * (nz + 1) + shot * n_src;
  for (sweep_int q = st[0]; q < st[1]; ++q) {
    const sweep_int k = ix[q], j = f->src_idx[shot * n_src + k], F = j / ss, cell = j - F * ss;
    if (SWEEP_NDIM == 3 && cell % p->stride[0] / p->stride[1] != y) continue;
    const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
    SWEEP_FN(mx_source)(e, F, off, cell, amp[(shot * n_src + k) * p->nt + t]);
  }
  if (!rec) return;
  st = l + (ns + shot) * (nz + 1) + line;
  ix = l + 2 * ns * (nz + 1) + ns * n_src + shot * n_rec;
  SWEEP_R *out = (SWEEP_R *)f->rec;
  for (sweep_int q = st[0]; q < st[1]; ++q) {
    const sweep_int r = ix[q], j = f->rec_idx[shot * n_rec + r], F = j / ss, cell = j - F * ss;
    if (SWEEP_NDIM == 3 && cell % p->stride[0] / p->stride[1] != y) continue;
    out[(shot * n_rec + r) * p->nt + t + 1] = e->f[F][off + cell];
  }
}

#if SWEEP_NDIM == 3
/* Steps per pass: p->block_steps when given (the time_blocking setting's
 * steps; 1: not blocked), else as many as keep the pass's window of planes
 * (Q + (T - 1) P + 1 updated, h more each side) of the 6 fields and 9
 * coefficients within SWEEP_MX_TB_BYTES (mx3d-o4, 104^2 planes: T = 5 .. 8
 * the same, 0.52 s against 0.56 s at T = 4; T >= 12 slower), at most 8. */
#ifndef SWEEP_MX_TB_BYTES
#define SWEEP_MX_TB_BYTES (20 << 20)
#endif
static sweep_int SWEEP_FN(mx_tb_steps)(const sweep_acoustic_params *p, sweep_int h) {
  if (p->block_steps > 0) return p->block_steps;
  const double plane = (double)p->shape[1] * p->shape[2] * sizeof(SWEEP_R) * 15;
  const double w = SWEEP_MX_TB_BYTES / plane - 3 * h - 1;
  const sweep_int T = w > 0 ? 1 + (sweep_int)(w / (2 * h + 1)) : 1;
  return T > 8 ? 8 : T;
}
#else
/* TM2D: steps per chunk (cpu_phased.h's 2D tb_forward): p->block_steps
 * when given (1: not blocked); else 12 where a shot's eight arrays exceed
 * SWEEP_MX_TB2_BYTES (past the 32 MB L3 the unblocked steps stream from
 * memory), else none.  Measured (2 threads, AMD EPYC, kernels, unblocked ->
 * blocked, benchmarks/README.md "TM2D forward: temporal blocking"): 1000^2
 * + CPML 20 (69 MB at float64), T = 4 / 8 / 12: o4 f64 0.266 -> 0.193 /
 * 0.158 / 0.147 s, o8 f64 0.316 -> 0.247 / 0.214 / 0.208, o4 f32 0.084 ->
 * 0.091 / 0.079 / 0.080, o8 f32 0.110 -> 0.124 / 0.105 / 0.105; T = 12:
 * 800^2 o4 f64 (43 MB) 0.181 -> 0.092, f32 (23 MB) 0.055 -> 0.049; 600^2
 * o4 f64 (26 MB) 0.068 -> 0.052, f32 (13 MB) 0.024 -> 0.025; 500^2 o4 f64
 * (19 MB) and 440^2 (15 MB) the same or slower.  Within the L3 (440^2) T =
 * 4 ran 5-12 % faster in some processes and 15-20 % slower in others (per
 * process, every case of it), unblocked steady; not kept. */
#ifndef SWEEP_MX_TB2_BYTES
#define SWEEP_MX_TB2_BYTES (20 << 20)
#endif
static sweep_int SWEEP_FN(mx_tb_steps)(const sweep_acoustic_params *p, sweep_int h) {
  (void)h;
  if (p->block_steps > 0) return p->block_steps;
  return 8.0 * sizeof(SWEEP_R) * p->shape[1] * p->shape[2] > SWEEP_MX_TB2_BYTES ? 12 : 1;
}
/* Without free faces (the images of phase H's points are read by phase E's
 * rows of other lines). */
#define SWEEP_EQ_TBLOCK(p, f) ((void)(f), !SWEEP_FN(mx_free)(p))
#endif
#define SWEEP_EQ_TBLOCK_PREP(p, f) SWEEP_FN(mx_tb_prep)(p, f)
#define SWEEP_EQ_TBLOCK_STEPS(p, h) SWEEP_FN(mx_tb_steps)(p, h)
#define SWEEP_EQ_TBLOCK_POINTS(p, f, l, shot, off, z, y, t, rec) \
  SWEEP_FN(mx_tb_points)(p, f, &stag_base, (const sweep_int *)(l), shot, off, z, y, t, rec)

/* ---- The hooks of cpu_skeleton.h / cpu_phased.h (cpu_staggered_hooks.h) ---- */

#define SWEEP_STAG(name) SWEEP_FN(mx_##name)
#define SWEEP_EQ_FORWARD SWEEP_FN(sweep_maxwell_forward)
#define SWEEP_EQ_BACKWARD SWEEP_FN(sweep_maxwell_backward)
#define SWEEP_STAG_FORWARD_NAME sweep_maxwell_forward_
#define SWEEP_STAG_BACKWARD_NAME sweep_maxwell_backward_
#define SWEEP_STAG_SNAP_VALUES MX_SNAP
#define SWEEP_STAG_SNAP_SPLIT MX_NH
#define SWEEP_STAG_GRAD_SLOT MX_CA(0)
/* 3D: one sweep per step (cpu_phased.h, planes in z) unless the points
 * fill images behind perfect conductors (phase H's points, read by phase
 * E's rows): 100^3 + CPML 10, order 4, 2 threads, AMD EPYC, forward 1.02
 * -> 0.82 s (float32), 1.41 -> 1.27 s (float64), gradient 64^3 1.27 ->
 * 1.12 s.  In 2D only order 4 in float32, and a shot's eight arrays
 * within SWEEP_MX_FUSE_2D_BYTES: with the vector rows (TM2D, quiet A/B of
 * two builds) 440^2's kernels took 26.6 ms fused against 28.9-31.7 per
 * phase (0.307-0.326 against 0.370-0.380 ns per cell-step), 300^2 the same,
 * 700^2 (17.5 MB) 0.347-0.387 against 0.324-0.337; 440^2 order 8 41.4-41.6
 * against 40.2 ms, order 4 float64 59.2-59.9 against 53.8-57.5, order 8
 * float64 76.6 against 68.1-68.7 (the fused rows stream both phases'
 * arrays at once). */
#ifndef SWEEP_MX_FUSE_2D_BYTES
#define SWEEP_MX_FUSE_2D_BYTES (12 << 20)
#endif
#if SWEEP_NDIM == 3
#define SWEEP_EQ_FUSE(p, f) ((void)(f), !SWEEP_FN(mx_free)(p))
#else
#define SWEEP_EQ_FUSE(p, f)                                                         \
  ((void)(f), SWEEP_REAL_BYTES == 4 && (p)->halo == 2 &&                            \
                  8.0 * SWEEP_REAL_BYTES * (p)->shot_stride <= SWEEP_MX_FUSE_2D_BYTES && \
                  !SWEEP_FN(mx_free)(p))
#endif
/* Phase H's points (the receivers; images only with free faces) read E
 * only: without free faces they run after the previous step's sources, in
 * their omp for (one barrier a step fewer). */
#define SWEEP_EQ_FWD_POINTS0_EARLY(p, f) ((void)(f), !SWEEP_FN(mx_free)(p))
#include "cpu_staggered_hooks.h"
