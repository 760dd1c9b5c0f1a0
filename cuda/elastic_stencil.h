/*
 * Elastic velocity-stress (Virieux's staggered grid): one grid point of each
 * half step, forward and adjoint, and the model gradients.  The single
 * definition of the arithmetic for the C/OpenMP kernels
 * (sweep_cy/elastic_cpu_impl.h); the discrete operator is the eager
 * reference's (sweep/equations/elastic/eager.py, docs/elastic.md).  The
 * order is an argument of the point functions (nh taps per side, see
 * STAG_TAPS): a literal in the CPU's plain rows (unrolled), e->nh elsewhere,
 * so one specialisation per (ndim, dtype) serves every order.
 *
 * Indices (model axes a, b = 0 .. ND-1 in the order z, (y,) x; kernel axis
 * d = SWEEP_FIRST_AXIS + a): fields v_a = a, s_aa = ND + a, s_ab = 2 ND +
 * a + b - 1 (a < b); coefficients (dt folded in, times the field's live
 * mask) b_a = a, C_ij = ND + i ND + j, mu_ab = ND + ND^2 + a + b - 1;
 * memory variables m[field][d] of each C-PML-stretched derivative.
 *
 * Forward, step t (phase V then phase S):
 *   V: D = d_b s_ab (staggered difference, constant weights ws), in the
 *      C-PML  psi = B psi + A D,  D += psi;  v_a += b_a sum_b D_ab
 *   S: D_jb = d_b v_j with per-cell weights wv (lower orders next to a free
 *      surface), stretched alike;  s_aa += sum_j C_aj D_jj,
 *      s_ab += mu_ab (D_ab + D_ba)
 * The profiles (A, B) are at the derivative's position: the half nodes for a
 * forward difference (nodes to half nodes), the nodes for a backward one.
 * Snapshot of a step (SWEEP_EQ_SNAP_VALUES = number of fields): sum_b D_ab
 * per velocity (phase V), D_jj per normal stress and D_ab + D_ba per shear
 * stress (phase S): the factors of every coefficient's gradient.
 *
 * Adjoint (adjoint fields in the same slots; P[field][d] the adjoints of the
 * memory variables, P = B Q of the next step's Q = dL/dpsi'):
 *   A (of S):  v_j += -D^T dbar, dbar = (1 + A) gbar + A P at the stress
 *              cells, gbar = sum_i C_ij s_ii (normal) or mu_jb s_jb (shear);
 *              first P of the stress derivatives at this velocity cell
 *              (lagged: the update of phase V of step t + 1, from v of then).
 *   B (of V):  the gradients (b_a: v_a x snapshot; C_ij: s_ii x D_jj; mu_ab:
 *              s_ab x (D_ab + D_ba)), P of the velocity derivatives at this
 *              stress cell, then s_F += -D^T dbar with gbar = b_a v_a.
 * Each cell writes only itself and its own P, and reads neighbours' values
 * that its phase does not write, so rows run in any order.
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

#define EL_ND SWEEP_NDIM
#define EL_A0 SWEEP_FIRST_AXIS
#define EL_NP (EL_ND == 2 ? 1 : 3)
#define EL_NF (2 * EL_ND + EL_NP)
#define EL_NC (EL_ND + EL_ND * EL_ND + EL_NP)
#define EL_PAIR(a, b) ((a) + (b) - 1)
#define EL_S(a, b) ((a) == (b) ? EL_ND + (a) : 2 * EL_ND + EL_PAIR(a, b))
#define EL_CB(a) (a)
#define EL_CC(i, j) (EL_ND + (i) * EL_ND + (j))
#define EL_CMU(a, b) (EL_ND + EL_ND * EL_ND + EL_PAIR(a, b))
/* Coordinate of the cell along kernel axis d (a constant once unrolled): the
 * point functions take the coordinates as scalars, as a local array in an
 * `omp simd` loop (one lane each) kept the CPU's loops from vectorising. */
#define EL_C(d) ((d) == 0 ? cz : (d) == 1 ? cy : cx)
/* Element stride along kernel axis d: x's is 1 (the padded grids are
 * C-contiguous), a literal, so an x tap addresses as its field's pointer plus
 * a displacement rather than a pointer of its own (the 3D o8 rows' taps
 * outnumbered the registers: per-tap pointers reloaded from the stack). */
#define EL_ST(e, d) ((d) == 2 ? (sweep_int)1 : (e)->st[d])

/* Pointers of one call (fields, memory variables and gradients offset to one
 * shot by the caller) and the facts of the grid. */
typedef struct SWEEP_FN(elastic_ctx) {
  SWEEP_R *f[9];
  SWEEP_R *m[9][3];
  SWEEP_R *g[15];
  const SWEEP_R *c[15];
  const SWEEP_R *pa[3], *pb[3], *pah[3], *pbh[3];
  const SWEEP_R *wv[3][2]; /* velocity weights, tap-major: wv[d][fw][(k - 1) n[d] + cell] */
  const SWEEP_R *ws;       /* stress weights c_1 .. c_nh */
  sweep_int st[3], n[3];
  /* Per kernel axis, [flo, fhi): the updated cells whose profiles are all
   * zero (CPU only), where the forward's C-PML terms are exact no-ops. */
  sweep_int flo[3], fhi[3];
  SWEEP_R rdx[3];
  int nh;
  /* The CPU adjoint only (sweep_cy/elastic_cpu_impl.h): the products its
   * stencils read, precomputed per line (not set by el_ctx). */
  const SWEEP_R *gb[9];
} SWEEP_FN(elastic_ctx);

/* The pointers of a call (fields, memory variables and gradients of shot 0):
 * the CPU's (sweep_cy/elastic_cpu_impl.h) and each CUDA thread's. */
SWEEP_HD void SWEEP_FN(el_ctx)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,
                               SWEEP_FN(elastic_ctx) * e) {
  for (int k = 0; k < 9; ++k) {
    e->f[k] = (SWEEP_R *)f->field[k];
    for (int d = 0; d < 3; ++d) e->m[k][d] = (SWEEP_R *)f->psi[3 * k + d];
  }
  for (int k = 0; k < 15; ++k) {
    e->c[k] = (const SWEEP_R *)f->coef[k];
    e->g[k] = (SWEEP_R *)f->grad[k];
  }
  for (int d = 0; d < 3; ++d) {
    e->pa[d] = (const SWEEP_R *)f->pml_a[d];
    e->pb[d] = (const SWEEP_R *)f->pml_b[d];
    e->pah[d] = (const SWEEP_R *)f->pml_ah[d];
    e->pbh[d] = (const SWEEP_R *)f->pml_bh[d];
    e->wv[d][0] = (const SWEEP_R *)f->wv[2 * d];
    e->wv[d][1] = (const SWEEP_R *)f->wv[2 * d + 1];
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
   * halo more on each side, which the adjoint and boundary saving need (the
   * adjoint's stencils read P there), the forward not. */
  for (int d = 0; d < 3; ++d) {
    sweep_int lo = p->halo, hi = p->shape[d] - p->halo;
#define EL_LIVE_(i) \
  (e->pa[d][i] != 0 || e->pb[d][i] != 0 || e->pah[d][i] != 0 || e->pbh[d][i] != 0)
    if (d >= EL_A0) {
      while (lo < hi && EL_LIVE_(lo)) ++lo;
      while (hi > lo && EL_LIVE_(hi - 1)) --hi;
    }
#undef EL_LIVE_
    e->flo[d] = d >= EL_A0 ? lo : 0;
    e->fhi[d] = d >= EL_A0 ? hi : 1;
  }
#endif
}

/* The same pointers offset to the shot at element offset off. */
SWEEP_HD SWEEP_FN(elastic_ctx) SWEEP_FN(el_shot)(const SWEEP_FN(elastic_ctx) * base,
                                                 sweep_int off) {
  SWEEP_FN(elastic_ctx) e = *base;
  for (int k = 0; k < EL_NF; ++k) {
    e.f[k] += off;
    for (int d = 0; d < 3; ++d)
      if (e.m[k][d]) e.m[k][d] += off;
  }
  for (int k = 0; k < EL_NC; ++k)
    if (e.g[k]) e.g[k] += off;
  return e;
}

/* Whether stress field F has odd images across free surfaces of model axis
 * b (it has a component along b), and whether it is staggered along b: 0
 * no image, 1 an image on the nodes, 2 one half a cell out. */
SWEEP_HD int SWEEP_FN(el_mirrored)(int F, int b) {
  if (F < EL_ND) return 0;
  if (F < 2 * EL_ND) return F - EL_ND == b;
  for (int a = 0; a < EL_ND; ++a)
    for (int c = a + 1; c < EL_ND; ++c)
      if (EL_S(a, c) == F) return a == b || c == b ? 2 : 0;
  return 0;
}

/* Source term of amplitude a at cell of field F (the shot at element
 * offset off; e of shot 0): phase 0 the forces (times b of the cell),
 * phase 1 the stresses. */
SWEEP_HD void SWEEP_FN(el_source)(const SWEEP_FN(elastic_ctx) * e, int phase, sweep_int F,
                                  sweep_int off, sweep_int cell, SWEEP_R a) {
  if (phase == 0 && F < EL_ND) e->f[F][off + cell] += e->c[EL_CB(F)][cell] * a;
  if (phase == 1 && F >= EL_ND) e->f[F][off + cell] += a;
}

/* The adjoint of el_source in phase vel (1: the forces) once the adjoint
 * field is complete: its amplitude's gradient into *gs (or not: NULL) and,
 * when model, the force's term of b's gradient (amplitude *amp; sampled as
 * the snapshots). */
SWEEP_HD void SWEEP_FN(el_source_adjoint)(const SWEEP_FN(elastic_ctx) * e, int vel, sweep_int F,
                                          sweep_int off, sweep_int cell, const SWEEP_R *amp,
                                          SWEEP_R *gs, int model) {
  if ((F < EL_ND) != vel) return;
  const SWEEP_R lam = e->f[F][off + cell];
  if (vel) {
    if (gs) *gs = e->c[EL_CB(F)][cell] * lam;
    if (model && e->g[EL_CB(F)]) e->g[EL_CB(F)][off + cell] += *amp * lam;
  } else if (gs) {
    *gs = lam;
  }
}

/* Phase V at cell i (coordinates cz, cy, cx): the velocities; W (or NULL) receives
 * the snapshot values sum_b D_ab at W[a * pitch].  neg (a literal): undo the
 * update instead (boundary saving's reconstruction: the same sum, subtracted). */
SWEEP_HD void SWEEP_FN(el_step_v)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                  sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                  const int nh, SWEEP_R *W, sweep_int pitch, const int neg) {
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_R acc = 0;
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, F = EL_S(a, b), fw = a == b;
      SWEEP_R D = SWEEP_FN(stag_diff)(e->f[F] + i, EL_ST(e, d), fw, e->ws, 1, nh, e->nh) * e->rdx[d];
      if (mask & (1 << d))
        D = SWEEP_FN(stag_stretch)(e->m[F][d] + i, fw ? e->pah[d] : e->pa[d],
                                   fw ? e->pbh[d] : e->pb[d], EL_C(d), D);
      acc += D;
    }
    const SWEEP_R c = e->c[EL_CB(a)][i];
    e->f[a][i] = SWEEP_FMA(neg ? -c : c, acc, e->f[a][i]);
    if (W) W[a * pitch] = acc;
  }
}

SWEEP_HD void SWEEP_FN(el_fwd_v)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                 sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                 const int nh, SWEEP_R *W, sweep_int pitch) {
  SWEEP_FN(el_step_v)(e, i, cz, cy, cx, mask, nh, W, pitch, 0);
}

/* Phase S at cell i: the stresses; W receives D_jj (values ND + j) and
 * D_ab + D_ba (values 2 ND + pair); neg as el_step_v. */
SWEEP_HD void SWEEP_FN(el_step_s)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                  sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                  const int nh, SWEEP_R *W, sweep_int pitch, const int neg) {
  SWEEP_R D[3][3];
  SWEEP_UNROLL
  for (int j = 0; j < EL_ND; ++j) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, fw = j != b;
      SWEEP_R x = SWEEP_FN(stag_diff)(e->f[j] + i, EL_ST(e, d), fw, e->wv[d][fw] + EL_C(d), e->n[d],
                                    nh, e->nh) * e->rdx[d];
      if (mask & (1 << d))
        x = SWEEP_FN(stag_stretch)(e->m[j][d] + i, fw ? e->pah[d] : e->pa[d],
                                 fw ? e->pbh[d] : e->pb[d], EL_C(d), x);
      D[j][b] = x;
    }
  }
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_R acc = e->c[EL_CC(a, 0)][i] * D[0][0];
    SWEEP_UNROLL
    for (int j = 1; j < EL_ND; ++j) acc = SWEEP_FMA(e->c[EL_CC(a, j)][i], D[j][j], acc);
    if (neg)
      e->f[EL_ND + a][i] -= acc;
    else
      e->f[EL_ND + a][i] += acc;
    if (W) W[(EL_ND + a) * pitch] = D[a][a];
  }
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      if (a >= b) continue; /* constant bounds: see el_adj_b */
      const SWEEP_R sum = D[a][b] + D[b][a], c = e->c[EL_CMU(a, b)][i];
      e->f[EL_S(a, b)][i] = SWEEP_FMA(neg ? -c : c, sum, e->f[EL_S(a, b)][i]);
      if (W) W[(2 * EL_ND + EL_PAIR(a, b)) * pitch] = sum;
    }
  }
}

SWEEP_HD void SWEEP_FN(el_fwd_s)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                 sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                 const int nh, SWEEP_R *W, sweep_int pitch) {
  SWEEP_FN(el_step_s)(e, i, cz, cy, cx, mask, nh, W, pitch, 0);
}

/* Boundary saving's reconstruction: phase V or S undone at a plain cell. */
SWEEP_HD void SWEEP_FN(el_rev_v)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                 sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                 const int nh, SWEEP_R *W, sweep_int pitch) {
  SWEEP_FN(el_step_v)(e, i, cz, cy, cx, mask, nh, W, pitch, 1);
}

SWEEP_HD void SWEEP_FN(el_rev_s)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                 sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                 const int nh, SWEEP_R *W, sweep_int pitch) {
  SWEEP_FN(el_step_s)(e, i, cz, cy, cx, mask, nh, W, pitch, 1);
}

/* gbar of the derivative of v_j along b at cell p: what its stress cells'
 * adjoints make of it. */
SWEEP_HD SWEEP_R SWEEP_FN(el_gbar_v)(const SWEEP_FN(elastic_ctx) * e, sweep_int p, int j, int b) {
  if (j != b) return e->c[EL_CMU(j, b)][p] * e->f[EL_S(j, b)][p];
  SWEEP_R g = e->c[EL_CC(0, j)][p] * e->f[EL_ND][p];
  SWEEP_UNROLL
  for (int i = 1; i < EL_ND; ++i) g = SWEEP_FMA(e->c[EL_CC(i, j)][p], e->f[EL_ND + i][p], g);
  return g;
}

/* The products the adjoint's taps read at cell p: gbar of v_j along b
 * (phase A) and b_a v_a (phase B), computed here or, with pre (a
 * compile-time constant; the CPU adjoint, elastic_cpu_impl.h), read from
 * the rows the caller precomputed them into (e->gb: gbar of normal stress j
 * at gb[j], of shear pair (j, b) at gb[ND + pair]; b_a v_a at gb[a]): the
 * same expressions either way, so the same bits. */
SWEEP_HD SWEEP_R SWEEP_FN(el_gbar_at)(const SWEEP_FN(elastic_ctx) * e, sweep_int p, int j, int b,
                                      const int pre) {
  return pre ? e->gb[j == b ? j : EL_ND + EL_PAIR(j, b)][p] : SWEEP_FN(el_gbar_v)(e, p, j, b);
}

SWEEP_HD SWEEP_R SWEEP_FN(el_bv_at)(const SWEEP_FN(elastic_ctx) * e, sweep_int p, int a,
                                    const int pre) {
  return pre ? e->gb[a][p] : e->c[EL_CB(a)][p] * e->f[a][p];
}

/* Tap t of adjoint phase A's sum for v_j along axis b (kernel axis d) at
 * velocity cell q: sum plus the two stress cells whose difference read v_j
 * (+ at q - k - o, - at q + k - 1 - o). */
SWEEP_HD SWEEP_R SWEEP_FN(el_adj_a_tap)(const SWEEP_FN(elastic_ctx) * e, sweep_int q,
                                        sweep_int cz, sweep_int cy, sweep_int cx, int j, int b,
                                        const int cpml, const int nh, int t, SWEEP_R sum,
                                        const int pre) {
  const int d = EL_A0 + b, fw = j != b;
  const sweep_int o = fw ? 0 : -1, s = EL_ST(e, d), nw = e->n[d];
  const SWEEP_R *w = e->wv[d][fw] + EL_C(d);
  const SWEEP_R *A = fw ? e->pah[d] : e->pa[d];
  const SWEEP_R *P = e->m[j][d];
  const int k = STAG_TAP(nh, e->nh, t);
  const sweep_int o1 = -k - o, o2 = k - 1 - o;
  SWEEP_R d1 = SWEEP_FN(el_gbar_at)(e, q + o1 * s, j, b, pre);
  SWEEP_R d2 = SWEEP_FN(el_gbar_at)(e, q + o2 * s, j, b, pre);
  if (cpml) {
    const SWEEP_R a1 = A[EL_C(d) + o1], a2 = A[EL_C(d) + o2];
    d1 = SWEEP_FMA(a1, d1 + P[q + o1 * s], d1);
    d2 = SWEEP_FMA(a2, d2 + P[q + o2 * s], d2);
  }
  sum = SWEEP_FMA(STAG_TAP_W(nh, e->nh, t, w[(k - 1) * nw + o1]), d1, sum);
  return SWEEP_FMA(STAG_TAP_W(nh, e->nh, t, -w[(k - 1) * nw + o2]), d2, sum);
}

/* Adjoint phase A (of S) at velocity cell q. */
SWEEP_HD void SWEEP_FN(el_adj_a)(const SWEEP_FN(elastic_ctx) * e, sweep_int q,
                                 sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                 const int nh, const int pre) {
  SWEEP_UNROLL
  for (int j = 0; j < EL_ND; ++j) {
    /* The lagged P of the stress derivatives that v_j's update read. */
    const SWEEP_R gv = e->c[EL_CB(j)][q] * e->f[j][q];
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, fw = j == b;
      if (mask & (1 << d)) {
        SWEEP_R *m = e->m[EL_S(j, b)][d] + q;
        *m = (fw ? e->pbh[d] : e->pb[d])[EL_C(d)] * (*m + gv);
      }
    }
    SWEEP_R acc = 0;
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, cpml = mask & (1 << d);
      SWEEP_R sum = 0;
      if (nh >= 0) {
        /* A constant count of taps, unrolled by hand: GCC kept the loop of
         * STAG_MAX_H taps rolled here (and the C-PML rows' cells scalar). */
        SWEEP_UNROLL
        for (int t = 1; t <= STAG_MAX_H; ++t)
          if (t <= STAG_TAPS(nh, e->nh))
            sum = SWEEP_FN(el_adj_a_tap)(e, q, cz, cy, cx, j, b, cpml, nh, t, sum, pre);
      } else {
        for (int t = 1; t <= e->nh; ++t)
          sum = SWEEP_FN(el_adj_a_tap)(e, q, cz, cy, cx, j, b, cpml, nh, t, sum, pre);
      }
      acc = SWEEP_FMA(sum, e->rdx[d], acc);
    }
    e->f[j][q] += acc;
  }
}

/* dbar of the derivative of stress F along b read by v_a at cell p. */
SWEEP_HD SWEEP_R SWEEP_FN(el_dbar_s)(const SWEEP_FN(elastic_ctx) * e, sweep_int p, int a, int F,
                                     int d, const SWEEP_R *A, sweep_int cd, int cpml,
                                     const int pre) {
  const SWEEP_R gv = SWEEP_FN(el_bv_at)(e, p, a, pre);
  return cpml ? SWEEP_FMA(A[cd], gv + e->m[F][d][p], gv) : gv;
}

/* Adjoint phase B (of V) at stress cell q; st (or NULL): the snapshot of
 * the step at this cell, value v at st[v * vs]. */
SWEEP_HD void SWEEP_FN(el_adj_b)(const SWEEP_FN(elastic_ctx) * e, sweep_int q,
                                 sweep_int cz, sweep_int cy, sweep_int cx, const int mask,
                                 const int nh, const SWEEP_R *st, sweep_int vs, const int pre) {
  if (st) {
    /* Constant loop bounds (b from 0, a < b tested), which GCC unrolls
     * before it vectorises the cell loop; b from a + 1 it did not. */
    SWEEP_UNROLL
    for (int a = 0; a < EL_ND; ++a) {
      e->g[EL_CB(a)][q] = SWEEP_FMA(e->f[a][q], st[a * vs], e->g[EL_CB(a)][q]);
      SWEEP_UNROLL
      for (int j = 0; j < EL_ND; ++j)
        e->g[EL_CC(a, j)][q] =
            SWEEP_FMA(e->f[EL_ND + a][q], st[(EL_ND + j) * vs], e->g[EL_CC(a, j)][q]);
      SWEEP_UNROLL
      for (int b = 0; b < EL_ND; ++b)
        if (a < b)
          e->g[EL_CMU(a, b)][q] = SWEEP_FMA(e->f[EL_S(a, b)][q],
                                            st[(2 * EL_ND + EL_PAIR(a, b)) * vs],
                                            e->g[EL_CMU(a, b)][q]);
    }
  }
  /* P of the velocity derivatives that this cell's stresses read, from the
   * stresses' adjoints before this phase adds to them. */
  SWEEP_UNROLL
  for (int j = 0; j < EL_ND; ++j) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, fw = j != b;
      if (mask & (1 << d)) {
        SWEEP_R *m = e->m[j][d] + q;
        *m = (fw ? e->pbh[d] : e->pb[d])[EL_C(d)] * (*m + SWEEP_FN(el_gbar_v)(e, q, j, b));
      }
    }
  }
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, F = EL_S(a, b), fw = a == b;
      const sweep_int o = fw ? 0 : -1, s = EL_ST(e, d);
      const SWEEP_R *A = fw ? e->pah[d] : e->pa[d];
      const int cpml = mask & (1 << d);
      SWEEP_R sum = 0;
      for (int t = 1; t <= STAG_TAPS(nh, e->nh); ++t) {
        const int k = STAG_TAP(nh, e->nh, t);
        const sweep_int o1 = -k - o, o2 = k - 1 - o;
        const SWEEP_R d1 =
            SWEEP_FN(el_dbar_s)(e, q + o1 * s, a, F, d, A, EL_C(d) + o1, cpml, pre);
        const SWEEP_R d2 =
            SWEEP_FN(el_dbar_s)(e, q + o2 * s, a, F, d, A, EL_C(d) + o2, cpml, pre);
        sum = SWEEP_FMA(STAG_TAP_W(nh, e->nh, t, e->ws[k - 1]), d1 - d2, sum);
      }
      e->f[F][q] = SWEEP_FMA(sum, e->rdx[d], e->f[F][q]);
    }
  }
}

/* Adjoint phase B's sum into the stresses at a halo cell q of a free face
 * (the odd images the forward phase V read, which the adjoint then folds
 * back onto their cells): taps outside the grid are skipped (the velocities
 * there, and b, are zero), and every axis takes its C-PML form (A = 0 where
 * there is none gives the plain one exactly). */
SWEEP_HD void SWEEP_FN(el_adj_b_halo)(const SWEEP_FN(elastic_ctx) * e, sweep_int q,
                                      sweep_int cz, sweep_int cy, sweep_int cx) {
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, F = EL_S(a, b), fw = a == b;
      const sweep_int o = fw ? 0 : -1, s = EL_ST(e, d);
      const SWEEP_R *A = fw ? e->pah[d] : e->pa[d];
      SWEEP_R sum = 0;
      for (int k = 1; k <= e->nh; ++k) {
        const sweep_int o1 = -k - o, o2 = k - 1 - o;
        const int in1 = EL_C(d) + o1 >= 0 && EL_C(d) + o1 < e->n[d];
        const int in2 = EL_C(d) + o2 >= 0 && EL_C(d) + o2 < e->n[d];
        const SWEEP_R d1 =
            in1 ? SWEEP_FN(el_dbar_s)(e, q + o1 * s, a, F, d, A, EL_C(d) + o1, 1, 0) : 0;
        const SWEEP_R d2 =
            in2 ? SWEEP_FN(el_dbar_s)(e, q + o2 * s, a, F, d, A, EL_C(d) + o2, 1, 0) : 0;
        sum = SWEEP_FMA(e->ws[k - 1], d1 - d2, sum);
      }
      e->f[F][q] = SWEEP_FMA(sum, e->rdx[d], e->f[F][q]);
    }
  }
}
