/*
 * Maxwell's equations on the Yee grid (TM2D and 3D): one grid point of each
 * half step, forward and adjoint, and the coefficient gradients.  The single
 * definition of the arithmetic for the C/OpenMP kernels
 * (sweep_cy/maxwell_cpu_impl.h) and the CUDA ones (cuda/maxwell.cu); the discrete operator is
 * the eager reference's (sweep/equations/maxwell/eager.py, docs/maxwell.md).
 * The order is an argument (nh taps per side), as in elastic_stencil.h.
 *
 * Components are numbered by the kernel axis they point along: in 3D z = 0,
 * y = 1, x = 2; in TM2D the model axes z, x are kernel axes 1, 2 and y is
 * the unused axis 0 (so ey = E_0, hz = H_1, hx = H_2).  E_c is staggered
 * along axis c, H_c along the two others.  Field slots: H_c = c, E_c = 3 + c
 * (absent components NULL); coefficients (dt folded in, times the field's
 * live mask): ch_c = dt / (mu0 mu) at c, ca_c at 3 + c, cb_c at 6 + c;
 * memory variables m[field][axis] of each C-PML-stretched derivative.
 *
 * In kernel axes the curl is (curl F)_a = P d_b1 F_c1 - P d_b2 F_c2 with
 * b1 = c2 = (a + 2) % 3, b2 = c1 = (a + 1) % 3 and P = MX_PAR (the order z,
 * y, x reverses x, y, z in 3D; y, z, x keeps it in 2D), without the terms
 * along the unused axis in 2D.  Component a is read by the curls of the
 * other field's components (a + 2) % 3 (along (a + 1) % 3, sign +P) and
 * (a + 1) % 3 (along (a + 2) % 3, sign -P).
 *
 * Forward, step t (phase H then phase E):
 *   H: G = d_b E_c (forward differences), in the C-PML psi = Bh psi + Ah D,
 *      G = D + psi;  H_a -= ch_a C with C = curl E
 *   E: G = d_b H_c (backward differences, node profiles);
 *      E_a = ca_a E_a + cb_a C with C = curl H
 * Snapshot of a step (MX_SNAP values per cell): C of each H component
 * (phase H), then E_a before its update and C of each E component (phase E).
 *
 * Adjoint (adjoint fields in the same slots; each phase writes only its own
 * cell and reads neighbours' values that it does not write).  With
 * Gbar = -ch s Hbar at an H cell or cb s Ebar at an E cell (s the term's
 * sign), Dbar = Gbar + A (Gbar + P) in the C-PML, where P holds the adjoint
 * of the memory variable, and D^T the transposed difference:
 *   of E (at H cells): first P of the E derivatives this cell's H read,
 *     lagged by a step (Bh (P + Gbar) from the H adjoint of then), then
 *     Hbar += D^T Dbar of the E cells that read it.
 *   of H (at every cell): the coefficient gradients (ch from Hbar, complete
 *     now, and the snapshot; ca, cb from Ebar); P of the H derivatives that
 *     E read (B (P + Gbar)); then Ebar = ca Ebar + D^T Dbar of the H cells.
 */
#ifndef SWEEP_FN
#define SWEEP_FN(name) SWEEP_CAT3(name, _, SWEEP_SUFFIX)
#endif
#ifndef SWEEP_R
#define SWEEP_R SWEEP_REAL
#endif
#ifndef SWEEP_FIRST_AXIS
#define SWEEP_FIRST_AXIS (3 - SWEEP_NDIM)
#endif
/* The reach (taps per side of a staggered difference): a run-time value. */
#define SWEEP_H ((sweep_int)p->halo)

#include "staggered_stencil.h"

#define MX_ND SWEEP_NDIM
#define MX_A0 SWEEP_FIRST_AXIS
#define MX_PAR (MX_ND == 3 ? 1 : -1)
#define MX_HF(c) (c)
#define MX_EF(c) (3 + (c))
#define MX_CH(c) (c)
#define MX_CA(c) (3 + (c))
#define MX_CB(c) (6 + (c))
#define MX_HAS_E(c) (MX_ND == 3 || (c) == 0)
#define MX_HAS_H(c) (MX_ND == 3 || (c) != 0)
#define MX_NH (MX_ND == 3 ? 3 : 2)
#define MX_NE (MX_ND == 3 ? 3 : 1)
/* Snapshot values: C of H_c at MX_SH(c); E_c and its C at MX_SE(c), + 1. */
#define MX_SH(c) ((c) - (3 - MX_NH))
#define MX_SE(c) (MX_NH + 2 * (c))
#define MX_SNAP (MX_NH + 2 * MX_NE)
/* The cell's coordinates as scalars (cz, cy, cx) and the one along kernel
 * axis d (a constant once unrolled): as a local array in an `omp simd` loop
 * (one per lane) they kept the CPU's cell loops from vectorising. */
#define MX_COORDS sweep_int cz, sweep_int cy, sweep_int cx
#define MX_C(d) ((d) == 0 ? cz : (d) == 1 ? cy : cx)

/* The updates' arithmetic, type-generic (scalars in the point functions
 * below, vectors of cells in the CPU's TM2D rows, maxwell_cpu_impl.h): a
 * curl term's derivative D of sign s added to the curl acc (zero before
 * the first), phase H's new H from ch and the curl C, phase E's new E from
 * the old one, ca, cb and C. */
#define MX_CURL_TERM(acc, s, D) ((s) > 0 ? (acc) + (D) : (acc) - (D))
#define MX_H_NEW(h, ch, C) ((h) - (ch) * (C))
#define MX_E_NEW(old, ca, cb, C) ((ca) * (old) + (cb) * (C))

/* Pointers of one call (fields, memory variables and gradients offset to one
 * shot by the caller) and the facts of the grid. */
typedef struct SWEEP_FN(maxwell_ctx) {
  SWEEP_R *f[6];
  SWEEP_R *m[6][3];
  SWEEP_R *g[9];
  const SWEEP_R *c[9];
  const SWEEP_R *pa[3], *pb[3], *pah[3], *pbh[3];
  const SWEEP_R *ws; /* weights c_1 .. c_nh */
  sweep_int st[3], n[3];
  /* Per kernel axis, [flo, fhi): the updated cells whose profiles are all
   * zero (CPU only), where the forward's C-PML terms are exact no-ops. */
  sweep_int flo[3], fhi[3];
  SWEEP_R rdx[3];
  int nh;
} SWEEP_FN(maxwell_ctx);

/* The pointers of a call (fields, memory variables and gradients of shot 0):
 * the CPU's (sweep_cy/maxwell_cpu_impl.h) and each CUDA thread's. */
SWEEP_HD void SWEEP_FN(mx_ctx)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                               SWEEP_FN(maxwell_ctx) * e) {
  for (int k = 0; k < 6; ++k) {
    e->f[k] = (SWEEP_R *)f->field[k];
    for (int d = 0; d < 3; ++d) e->m[k][d] = (SWEEP_R *)f->psi[3 * k + d];
  }
  for (int k = 0; k < 9; ++k) {
    e->c[k] = (const SWEEP_R *)f->coef[k];
    e->g[k] = (SWEEP_R *)f->grad[k];
  }
  for (int d = 0; d < 3; ++d) {
    e->pa[d] = (const SWEEP_R *)f->pml_a[d];
    e->pb[d] = (const SWEEP_R *)f->pml_b[d];
    e->pah[d] = (const SWEEP_R *)f->pml_ah[d];
    e->pbh[d] = (const SWEEP_R *)f->pml_bh[d];
    e->st[d] = p->stride[d];
    e->n[d] = p->shape[d];
    e->rdx[d] = (SWEEP_R)p->rdx[d];
  }
  e->ws = (const SWEEP_R *)f->ws;
  e->nh = (int)p->halo;
#ifndef __CUDA_ARCH__
  /* The forward's C-PML cells along each axis: those where a profile (a or
   * b, nodes or half nodes) is nonzero, each face's CPML cells and, on a
   * high face, the half node just before them.  Outside them psi = b psi +
   * a D stays an exact zero and D + psi is D; plain_lo / plain_hi hold a
   * halo more on each side, which the adjoint needs (its stencils read P
   * there), the forward not (as el_ctx). */
  for (int d = 0; d < 3; ++d) {
    sweep_int lo = p->halo, hi = p->shape[d] - p->halo;
#define MX_LIVE_(i) \
  (e->pa[d][i] != 0 || e->pb[d][i] != 0 || e->pah[d][i] != 0 || e->pbh[d][i] != 0)
    if (d >= MX_A0) {
      while (lo < hi && MX_LIVE_(lo)) ++lo;
      while (hi > lo && MX_LIVE_(hi - 1)) --hi;
    }
#undef MX_LIVE_
    e->flo[d] = d >= MX_A0 ? lo : 0;
    e->fhi[d] = d >= MX_A0 ? hi : 1;
  }
#endif
}

/* The same pointers offset to the shot at element offset off. */
SWEEP_HD SWEEP_FN(maxwell_ctx) SWEEP_FN(mx_shot)(const SWEEP_FN(maxwell_ctx) * base,
                                                 sweep_int off) {
  SWEEP_FN(maxwell_ctx) e = *base;
  for (int k = 0; k < 6; ++k) {
    if (e.f[k]) e.f[k] += off;
    for (int d = 0; d < 3; ++d)
      if (e.m[k][d]) e.m[k][d] += off;
  }
  for (int k = 0; k < 9; ++k)
    if (e.g[k]) e.g[k] += off;
  return e;
}

/* Whether component c of E or H has images across the free faces of
 * kernel axis d (it is tangential to them): odd for E, even for H, H
 * staggered along d (half a cell out). */
SWEEP_HD int SWEEP_FN(mx_mirrored)(int c, int d) { return c != d; }

/* Source term of amplitude a at cell of E component F - 3 (the shot at
 * element offset off; e of shot 0), in phase E. */
SWEEP_HD void SWEEP_FN(mx_source)(const SWEEP_FN(maxwell_ctx) * e, sweep_int F, sweep_int off,
                                  sweep_int cell, SWEEP_R a) {
  e->f[F][off + cell] = SWEEP_FMA(e->c[MX_CB(F - 3)][cell], a, e->f[F][off + cell]);
}

/* The adjoint of mx_source once the adjoint E is complete: its amplitude's
 * gradient into *gs (or not: NULL) and, when model, the source's term of
 * cb's gradient (amplitude *amp; sampled as the snapshots). */
SWEEP_HD void SWEEP_FN(mx_source_adjoint)(const SWEEP_FN(maxwell_ctx) * e, sweep_int F,
                                          sweep_int off, sweep_int cell, const SWEEP_R *amp,
                                          SWEEP_R *gs, int model) {
  const SWEEP_R lam = e->f[F][off + cell];
  if (gs) *gs = e->c[MX_CB(F - 3)][cell] * lam;
  if (model && e->g[MX_CB(F - 3)]) e->g[MX_CB(F - 3)][off + cell] += *amp * lam;
}

/* Curl term t (0, 1) of component a: the derivative axis b, the component
 * cc it differentiates, and its sign; 0 when the term does not exist. */
SWEEP_HD int SWEEP_FN(mx_term)(int a, int t, int *b, int *cc) {
  *b = t ? (a + 1) % 3 : (a + 2) % 3;
  *cc = t ? (a + 2) % 3 : (a + 1) % 3;
  return *b < MX_A0 ? 0 : (t ? -MX_PAR : MX_PAR);
}

/* Reader r (0, 1) of component a: the other field's component ar that reads
 * it, along axis b, with the sign of the term; 0 when there is none. */
SWEEP_HD int SWEEP_FN(mx_reader)(int a, int r, int *ar, int *b) {
  *ar = r ? (a + 1) % 3 : (a + 2) % 3;
  *b = r ? (a + 2) % 3 : (a + 1) % 3;
  return *b < MX_A0 ? 0 : (r ? -MX_PAR : MX_PAR);
}

/* The curl at component a of cell i (coordinates cz, cy, cx): of E at H_a
 * (at_e 0), of H at E_a (at_e 1), each derivative C-PML stretched where
 * mask has its axis; taps of (nh, e->nh) as STAG_TAPS. */
SWEEP_HD SWEEP_R SWEEP_FN(mx_curl)(const SWEEP_FN(maxwell_ctx) * e, int a, sweep_int i,
                                   MX_COORDS, const int mask, const int nh, const int at_e) {
  SWEEP_R acc = 0;
  SWEEP_UNROLL
  for (int t = 0; t < 2; ++t) {
    int b, cc;
    const int s = SWEEP_FN(mx_term)(a, t, &b, &cc);
    if (!s) continue;
    const int F = at_e ? MX_HF(cc) : MX_EF(cc), fw = !at_e;
    SWEEP_R D = SWEEP_FN(stag_diff)(e->f[F] + i, e->st[b], fw, e->ws, 1, nh, e->nh) * e->rdx[b];
    if (mask & (1 << b))
      D = SWEEP_FN(stag_stretch)(e->m[F][b] + i, fw ? e->pah[b] : e->pa[b],
                                 fw ? e->pbh[b] : e->pb[b], MX_C(b), D);
    acc = MX_CURL_TERM(acc, s, D);
  }
  return acc;
}

/* Phase H at cell i; W (or NULL) receives the snapshot values. */
SWEEP_HD void SWEEP_FN(mx_fwd_h)(const SWEEP_FN(maxwell_ctx) * e, sweep_int i, MX_COORDS,
                                 const int mask, const int nh, SWEEP_R *W, sweep_int pitch) {
  SWEEP_UNROLL
  for (int a = 0; a < 3; ++a) {
    if (!MX_HAS_H(a)) continue;
    const SWEEP_R C = SWEEP_FN(mx_curl)(e, a, i, cz, cy, cx, mask, nh, 0);
    e->f[MX_HF(a)][i] = MX_H_NEW(e->f[MX_HF(a)][i], e->c[MX_CH(a)][i], C);
    if (W) W[MX_SH(a) * pitch] = C;
  }
}

/* Phase E at cell i. */
SWEEP_HD void SWEEP_FN(mx_fwd_e)(const SWEEP_FN(maxwell_ctx) * e, sweep_int i, MX_COORDS,
                                 const int mask, const int nh, SWEEP_R *W, sweep_int pitch) {
  SWEEP_UNROLL
  for (int a = 0; a < 3; ++a) {
    if (!MX_HAS_E(a)) continue;
    const SWEEP_R C = SWEEP_FN(mx_curl)(e, a, i, cz, cy, cx, mask, nh, 1);
    const SWEEP_R old = e->f[MX_EF(a)][i];
    e->f[MX_EF(a)][i] = MX_E_NEW(old, e->c[MX_CA(a)][i], e->c[MX_CB(a)][i], C);
    if (W) {
      W[MX_SE(a) * pitch] = old;
      W[(MX_SE(a) + 1) * pitch] = C;
    }
  }
}

/* Gbar of reader component ar at cell p: what its update makes of its
 * adjoint (H readers: -ch s Hbar; E readers: cb s Ebar). */
SWEEP_HD SWEEP_R SWEEP_FN(mx_gbar)(const SWEEP_FN(maxwell_ctx) * e, sweep_int p, int ar, int s,
                                   const int reader_e) {
  const SWEEP_R g = reader_e ? e->c[MX_CB(ar)][p] * e->f[MX_EF(ar)][p]
                             : -(e->c[MX_CH(ar)][p] * e->f[MX_HF(ar)][p]);
  return s > 0 ? g : -g;
}

/* Tap k of D^T Dbar at component a of cell q (of E when at_e, else of H)
 * for reader ar along axis b (sign s), added to sum: the two reader cells
 * whose difference takes this cell, + at q - k - o, - at q + k - 1 - o.
 * cb: the cell's coordinate along b; w: the tap's weight; edge: skip taps
 * outside the grid (halo cells). */
SWEEP_HD SWEEP_R SWEEP_FN(mx_gather_tap)(const SWEEP_FN(maxwell_ctx) * e, int a, sweep_int q,
                                         sweep_int cb, int ar, int b, int s, const int at_e,
                                         const int cpml, const int edge, int k, SWEEP_R w,
                                         SWEEP_R sum) {
  /* E read by H's forward differences, H by E's backward ones. */
  const int fw = at_e;
  const sweep_int o = fw ? 0 : -1, st = e->st[b];
  const SWEEP_R *A = fw ? e->pah[b] : e->pa[b];
  const SWEEP_R *P = e->m[at_e ? MX_EF(a) : MX_HF(a)][b];
  const sweep_int o1 = -k - o, o2 = k - 1 - o;
  const int in1 = !edge || (cb + o1 >= 0 && cb + o1 < e->n[b]);
  const int in2 = !edge || (cb + o2 >= 0 && cb + o2 < e->n[b]);
  SWEEP_R d1 = in1 ? SWEEP_FN(mx_gbar)(e, q + o1 * st, ar, s, !at_e) : 0;
  SWEEP_R d2 = in2 ? SWEEP_FN(mx_gbar)(e, q + o2 * st, ar, s, !at_e) : 0;
  if (cpml) {
    if (in1) d1 = SWEEP_FMA(A[cb + o1], d1 + P[q + o1 * st], d1);
    if (in2) d2 = SWEEP_FMA(A[cb + o2], d2 + P[q + o2 * st], d2);
  }
  return SWEEP_FMA(w, d1 - d2, sum);
}

/* D^T Dbar at component a of cell q (of E when at_e, else of H): the sum
 * over the other field's cells that read it; taps of (nh, e->nh) as
 * STAG_TAPS.  edge: skip taps outside the grid (halo cells; every axis in
 * its C-PML form, the run-time reach). */
SWEEP_HD SWEEP_R SWEEP_FN(mx_gather)(const SWEEP_FN(maxwell_ctx) * e, int a, sweep_int q,
                                     MX_COORDS, const int mask, const int nh, const int at_e,
                                     const int edge) {
  SWEEP_R acc = 0;
  SWEEP_UNROLL
  for (int r = 0; r < 2; ++r) {
    int ar, b;
    const int s = SWEEP_FN(mx_reader)(a, r, &ar, &b);
    if (!s || !(at_e ? MX_HAS_H(ar) : MX_HAS_E(ar))) continue;
    const int cpml = edge || (mask & (1 << b));
    SWEEP_R sum = 0;
    if (!edge && nh >= 0) {
      /* A constant count of taps, unrolled by hand (as el_adj_a): the cell
       * loop around it vectorises. */
      SWEEP_UNROLL
      for (int t = 1; t <= STAG_MAX_H; ++t)
        if (t <= STAG_TAPS(nh, e->nh)) {
          const int k = STAG_TAP(nh, e->nh, t);
          sum = SWEEP_FN(mx_gather_tap)(e, a, q, MX_C(b), ar, b, s, at_e, cpml, 0, k,
                                        STAG_TAP_W(nh, e->nh, t, e->ws[k - 1]), sum);
        }
    } else {
      for (int k = 1; k <= e->nh; ++k)
        sum = SWEEP_FN(mx_gather_tap)(e, a, q, MX_C(b), ar, b, s, at_e, cpml, edge, k,
                                      e->ws[k - 1], sum);
    }
    acc = SWEEP_FMA(sum, e->rdx[b], acc);
  }
  return acc;
}

/* P = B (P + Gbar) of the derivatives that component a's update at cell q
 * read (at_e: E_a's, of H; else H_a's, of E). */
SWEEP_HD void SWEEP_FN(mx_adj_psi)(const SWEEP_FN(maxwell_ctx) * e, int a, sweep_int q,
                                   MX_COORDS, const int mask, const int at_e) {
  SWEEP_UNROLL
  for (int t = 0; t < 2; ++t) {
    int b, cc;
    const int s = SWEEP_FN(mx_term)(a, t, &b, &cc);
    if (!s || !(mask & (1 << b))) continue;
    SWEEP_R *m = e->m[at_e ? MX_HF(cc) : MX_EF(cc)][b] + q;
    const SWEEP_R *B = at_e ? e->pb[b] : e->pbh[b];
    *m = B[MX_C(b)] * (*m + SWEEP_FN(mx_gbar)(e, q, a, s, at_e));
  }
}

/* Adjoint of phase E at cell q (H components). */
SWEEP_HD void SWEEP_FN(mx_adj_e)(const SWEEP_FN(maxwell_ctx) * e, sweep_int q, MX_COORDS,
                                 const int mask, const int nh) {
  SWEEP_UNROLL
  for (int a = 0; a < 3; ++a) {
    if (!MX_HAS_H(a)) continue;
    SWEEP_FN(mx_adj_psi)(e, a, q, cz, cy, cx, mask, 0);
    e->f[MX_HF(a)][q] += SWEEP_FN(mx_gather)(e, a, q, cz, cy, cx, mask, nh, 0, 0);
  }
}

/* Adjoint of phase H at cell q (E components, and every gradient); st (or
 * NULL): the snapshot of the step at this cell, value v at st[v * vs] (then
 * every coefficient's gradient is allocated: a model gradient has them
 * all). */
SWEEP_HD void SWEEP_FN(mx_adj_h)(const SWEEP_FN(maxwell_ctx) * e, sweep_int q, MX_COORDS,
                                 const int mask, const int nh, const SWEEP_R *st, sweep_int vs) {
  if (st) {
    SWEEP_UNROLL
    for (int a = 0; a < 3; ++a) {
      if (MX_HAS_H(a)) e->g[MX_CH(a)][q] -= e->f[MX_HF(a)][q] * st[MX_SH(a) * vs];
      if (!MX_HAS_E(a)) continue;
      const SWEEP_R lam = e->f[MX_EF(a)][q];
      e->g[MX_CA(a)][q] = SWEEP_FMA(lam, st[MX_SE(a) * vs], e->g[MX_CA(a)][q]);
      e->g[MX_CB(a)][q] = SWEEP_FMA(lam, st[(MX_SE(a) + 1) * vs], e->g[MX_CB(a)][q]);
    }
  }
  SWEEP_UNROLL
  for (int a = 0; a < 3; ++a) {
    if (!MX_HAS_E(a)) continue;
    SWEEP_FN(mx_adj_psi)(e, a, q, cz, cy, cx, mask, 1);
    const SWEEP_R g = SWEEP_FN(mx_gather)(e, a, q, cz, cy, cx, mask, nh, 1, 0);
    e->f[MX_EF(a)][q] = SWEEP_FMA(e->c[MX_CA(a)][q], e->f[MX_EF(a)][q], g);
  }
}

/* The adjoint's gather at halo cell q (coordinates c) of the shot of e, of
 * E (is_e) or H: the components with an image there (beyond a free face
 * they are mirrored across), which the forward read. */
SWEEP_HD void SWEEP_FN(mx_halo_cell)(const sweep_acoustic_params *p,
                                     const SWEEP_FN(maxwell_ctx) * e, sweep_int q,
                                     const sweep_int *c, int is_e) {
  const sweep_int h = p->halo;
  for (int a = 0; a < 3; ++a) {
    if (!(is_e ? MX_HAS_E(a) : MX_HAS_H(a))) continue;
    int ghost = 0;
    for (int d = MX_A0; d < 3; ++d)
      ghost |= SWEEP_FN(mx_mirrored)(a, d) &&
               ((p->free_lo[d] && c[d] < h) || (p->free_hi[d] && c[d] >= p->shape[d] - h));
    if (!ghost) continue;
    SWEEP_R *u = e->f[is_e ? MX_EF(a) : MX_HF(a)];
    u[q] += SWEEP_FN(mx_gather)(e, a, q, c[0], c[1], c[2], 7, -1, is_e, 1);
  }
}
