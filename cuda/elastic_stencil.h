/*
 * Elastic velocity-stress (Virieux's staggered grid): one grid point of each
 * half step, forward and adjoint, and the model gradients.  The single
 * definition of the arithmetic for the C/OpenMP kernels
 * (sweep_cy/elastic_cpu_impl.h); the discrete operator is the eager
 * reference's (sweep/equations/elastic/eager.py, docs/elastic.md).  The
 * order is an argument of the point functions (nh taps per side): a literal
 * in the CPU's plain rows (unrolled), e->nh elsewhere, so one specialisation
 * per (ndim, dtype) serves every order.
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
  SWEEP_R rdx[3];
  int nh;
} SWEEP_FN(elastic_ctx);

/* Staggered difference at f (unscaled): forward (nodes to half nodes)
 * sum_k w_k (f[k] - f[1 - k]), backward sum_k w_k (f[k - 1] - f[-k]), s the
 * stride along the axis, w_k = w[(k - 1) ws]. */
SWEEP_HD SWEEP_R SWEEP_FN(el_diff)(const SWEEP_R *f, sweep_int s, int fw, const SWEEP_R *w,
                                   sweep_int ws, int nh) {
  const sweep_int o = fw ? 0 : -1;
  SWEEP_R acc = 0;
  for (int k = 1; k <= nh; ++k)
    acc = SWEEP_FMA(w[(k - 1) * ws], f[(k + o) * s] - f[(1 - k + o) * s], acc);
  return acc;
}

/* The C-PML stretch of derivative D at cell i (memory variable m, profiles at
 * coordinate cd): psi = B psi + A D, returns D + psi. */
SWEEP_HD SWEEP_R SWEEP_FN(el_stretch)(SWEEP_R *m, const SWEEP_R *A, const SWEEP_R *B,
                                      sweep_int cd, SWEEP_R D) {
  const SWEEP_R psi = SWEEP_FMA(B[cd], *m, A[cd] * D);
  *m = psi;
  return D + psi;
}

/* Phase V at cell i (coordinates c): the velocities; W (or NULL) receives
 * the snapshot values sum_b D_ab at W[a * pitch]. */
SWEEP_HD void SWEEP_FN(el_fwd_v)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                 const sweep_int *c, const int mask, const int nh, SWEEP_R *W,
                                 sweep_int pitch) {
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_R acc = 0;
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, F = EL_S(a, b), fw = a == b;
      SWEEP_R D = SWEEP_FN(el_diff)(e->f[F] + i, e->st[d], fw, e->ws, 1, nh) * e->rdx[d];
      if (mask & (1 << d))
        D = SWEEP_FN(el_stretch)(e->m[F][d] + i, fw ? e->pah[d] : e->pa[d],
                                 fw ? e->pbh[d] : e->pb[d], c[d], D);
      acc += D;
    }
    e->f[a][i] = SWEEP_FMA(e->c[EL_CB(a)][i], acc, e->f[a][i]);
    if (W) W[a * pitch] = acc;
  }
}

/* Phase S at cell i: the stresses; W receives D_jj (values ND + j) and
 * D_ab + D_ba (values 2 ND + pair). */
SWEEP_HD void SWEEP_FN(el_fwd_s)(const SWEEP_FN(elastic_ctx) * e, sweep_int i,
                                 const sweep_int *c, const int mask, const int nh, SWEEP_R *W,
                                 sweep_int pitch) {
  SWEEP_R D[3][3];
  SWEEP_UNROLL
  for (int j = 0; j < EL_ND; ++j) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, fw = j != b;
      SWEEP_R x = SWEEP_FN(el_diff)(e->f[j] + i, e->st[d], fw, e->wv[d][fw] + c[d], e->n[d],
                                    nh) * e->rdx[d];
      if (mask & (1 << d))
        x = SWEEP_FN(el_stretch)(e->m[j][d] + i, fw ? e->pah[d] : e->pa[d],
                                 fw ? e->pbh[d] : e->pb[d], c[d], x);
      D[j][b] = x;
    }
  }
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_R acc = e->c[EL_CC(a, 0)][i] * D[0][0];
    SWEEP_UNROLL
    for (int j = 1; j < EL_ND; ++j) acc = SWEEP_FMA(e->c[EL_CC(a, j)][i], D[j][j], acc);
    e->f[EL_ND + a][i] += acc;
    if (W) W[(EL_ND + a) * pitch] = D[a][a];
  }
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_UNROLL
    for (int b = a + 1; b < EL_ND; ++b) {
      const SWEEP_R sum = D[a][b] + D[b][a];
      e->f[EL_S(a, b)][i] = SWEEP_FMA(e->c[EL_CMU(a, b)][i], sum, e->f[EL_S(a, b)][i]);
      if (W) W[(2 * EL_ND + EL_PAIR(a, b)) * pitch] = sum;
    }
  }
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

/* Adjoint phase A (of S) at velocity cell q. */
SWEEP_HD void SWEEP_FN(el_adj_a)(const SWEEP_FN(elastic_ctx) * e, sweep_int q,
                                 const sweep_int *c, const int mask, const int nh) {
  SWEEP_UNROLL
  for (int j = 0; j < EL_ND; ++j) {
    /* The lagged P of the stress derivatives that v_j's update read. */
    const SWEEP_R gv = e->c[EL_CB(j)][q] * e->f[j][q];
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, fw = j == b;
      if (mask & (1 << d)) {
        SWEEP_R *m = e->m[EL_S(j, b)][d] + q;
        *m = (fw ? e->pbh[d] : e->pb[d])[c[d]] * (*m + gv);
      }
    }
    SWEEP_R acc = 0;
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, fw = j != b;
      const sweep_int o = fw ? 0 : -1, s = e->st[d], nw = e->n[d];
      const SWEEP_R *w = e->wv[d][fw] + c[d];
      const SWEEP_R *A = fw ? e->pah[d] : e->pa[d];
      const SWEEP_R *P = e->m[j][d];
      const int cpml = mask & (1 << d);
      SWEEP_R sum = 0;
      for (int k = 1; k <= nh; ++k) {
        /* The stress cells whose difference reads v_j at q: + at q - k - o, - at q + k - 1 - o. */
        const sweep_int o1 = -k - o, o2 = k - 1 - o;
        SWEEP_R d1 = SWEEP_FN(el_gbar_v)(e, q + o1 * s, j, b);
        SWEEP_R d2 = SWEEP_FN(el_gbar_v)(e, q + o2 * s, j, b);
        if (cpml) {
          const SWEEP_R a1 = A[c[d] + o1], a2 = A[c[d] + o2];
          d1 = SWEEP_FMA(a1, d1 + P[q + o1 * s], d1);
          d2 = SWEEP_FMA(a2, d2 + P[q + o2 * s], d2);
        }
        sum = SWEEP_FMA(w[(k - 1) * nw + o1], d1, sum);
        sum = SWEEP_FMA(-w[(k - 1) * nw + o2], d2, sum);
      }
      acc = SWEEP_FMA(sum, e->rdx[d], acc);
    }
    e->f[j][q] += acc;
  }
}

/* dbar of the derivative of stress F along b read by v_a at cell p. */
SWEEP_HD SWEEP_R SWEEP_FN(el_dbar_s)(const SWEEP_FN(elastic_ctx) * e, sweep_int p, int a, int F,
                                     int d, const SWEEP_R *A, sweep_int cd, int cpml) {
  const SWEEP_R gv = e->c[EL_CB(a)][p] * e->f[a][p];
  return cpml ? SWEEP_FMA(A[cd], gv + e->m[F][d][p], gv) : gv;
}

/* Adjoint phase B (of V) at stress cell q; st (or NULL): the snapshot of
 * the step at this cell, value v at st[v * vs]. */
SWEEP_HD void SWEEP_FN(el_adj_b)(const SWEEP_FN(elastic_ctx) * e, sweep_int q,
                                 const sweep_int *c, const int mask, const int nh,
                                 const SWEEP_R *st, sweep_int vs) {
  if (st) {
    SWEEP_UNROLL
    for (int a = 0; a < EL_ND; ++a) {
      e->g[EL_CB(a)][q] = SWEEP_FMA(e->f[a][q], st[a * vs], e->g[EL_CB(a)][q]);
      SWEEP_UNROLL
      for (int j = 0; j < EL_ND; ++j)
        e->g[EL_CC(a, j)][q] =
            SWEEP_FMA(e->f[EL_ND + a][q], st[(EL_ND + j) * vs], e->g[EL_CC(a, j)][q]);
      SWEEP_UNROLL
      for (int b = a + 1; b < EL_ND; ++b)
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
        *m = (fw ? e->pbh[d] : e->pb[d])[c[d]] * (*m + SWEEP_FN(el_gbar_v)(e, q, j, b));
      }
    }
  }
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, F = EL_S(a, b), fw = a == b;
      const sweep_int o = fw ? 0 : -1, s = e->st[d];
      const SWEEP_R *A = fw ? e->pah[d] : e->pa[d];
      const int cpml = mask & (1 << d);
      SWEEP_R sum = 0;
      for (int k = 1; k <= nh; ++k) {
        const sweep_int o1 = -k - o, o2 = k - 1 - o;
        const SWEEP_R d1 = SWEEP_FN(el_dbar_s)(e, q + o1 * s, a, F, d, A, c[d] + o1, cpml);
        const SWEEP_R d2 = SWEEP_FN(el_dbar_s)(e, q + o2 * s, a, F, d, A, c[d] + o2, cpml);
        sum = SWEEP_FMA(e->ws[k - 1], d1 - d2, sum);
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
                                      const sweep_int *c) {
  SWEEP_UNROLL
  for (int a = 0; a < EL_ND; ++a) {
    SWEEP_UNROLL
    for (int b = 0; b < EL_ND; ++b) {
      const int d = EL_A0 + b, F = EL_S(a, b), fw = a == b;
      const sweep_int o = fw ? 0 : -1, s = e->st[d];
      const SWEEP_R *A = fw ? e->pah[d] : e->pa[d];
      SWEEP_R sum = 0;
      for (int k = 1; k <= e->nh; ++k) {
        const sweep_int o1 = -k - o, o2 = k - 1 - o;
        const int in1 = c[d] + o1 >= 0 && c[d] + o1 < e->n[d];
        const int in2 = c[d] + o2 >= 0 && c[d] + o2 < e->n[d];
        const SWEEP_R d1 = in1 ? SWEEP_FN(el_dbar_s)(e, q + o1 * s, a, F, d, A, c[d] + o1, 1) : 0;
        const SWEEP_R d2 = in2 ? SWEEP_FN(el_dbar_s)(e, q + o2 * s, a, F, d, A, c[d] + o2, 1) : 0;
        sum = SWEEP_FMA(e->ws[k - 1], d1 - d2, sum);
      }
      e->f[F][q] = SWEEP_FMA(sum, e->rdx[d], e->f[F][q]);
    }
  }
}
