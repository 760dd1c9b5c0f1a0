/* The Maxwell coefficient fields on the host; see maxwell_coef.h. */
#pragma STDC FP_CONTRACT OFF
#include "maxwell_coef.h"

#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

static long long clampll(long long x, long long lo, long long hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

#define SWEEP_MX_COEF(T, SUF)                                                                    \
  /* A padded row (length n2 + 1: the last repeated, the next node of the last). */            \
  static void pad_row_##SUF(T *restrict dst, const T *restrict src, long long lo2, long long k2, \
                            long long n2) {                                                     \
    long long a = lo2 < n2 ? lo2 : n2;                                                          \
    for (long long l = 0; l < a; ++l) dst[l] = src[0];                                          \
    long long m = k2 < n2 - a ? k2 : n2 - a;                                                    \
    if (m > 0) memcpy(dst + a, src, (size_t)m * sizeof(T));                                     \
    for (long long l = a + (m > 0 ? m : 0); l < n2; ++l) dst[l] = src[k2 - 1];                  \
    dst[n2] = dst[n2 - 1];                                                                      \
  }                                                                                             \
                                                                                                \
  /* The staggered mean along the axes of stag, in increasing order (EagerStaggered._mean). */  \
  static const T *mean_row_##SUF(T *restrict out, T *const R[2][2], int stag, long long n2) {   \
    int ax[3], na = 0;                                                                          \
    for (int d = 0; d < 3; ++d)                                                                 \
      if (stag >> d & 1) ax[na++] = d;                                                          \
    const T h = (T)0.5;                                                                         \
    if (na == 0) return R[0][0];                                                                \
    int oa[3] = {ax[0] == 0, ax[0] == 1, ax[0] == 2};                                           \
    if (na == 1) {                                                                              \
      const T *restrict p0 = R[0][0], *restrict p1 = R[oa[0]][oa[1]] + oa[2];                   \
      for (long long l = 0; l < n2; ++l) out[l] = (p0[l] + p1[l]) * h;                          \
      return out;                                                                               \
    }                                                                                           \
    int ob[3] = {ax[1] == 0, ax[1] == 1, ax[1] == 2};                                           \
    const T *restrict p0 = R[0][0], *restrict p1 = R[oa[0]][oa[1]] + oa[2];                     \
    const T *restrict p2 = R[ob[0]][ob[1]] + ob[2];                                             \
    const T *restrict p3 = R[oa[0] + ob[0]][oa[1] + ob[1]] + oa[2] + ob[2];                     \
    for (long long l = 0; l < n2; ++l) {                                                        \
      T u = (p0[l] + p1[l]) * h;                                                                \
      T v = (p2[l] + p3[l]) * h;                                                                \
      out[l] = (u + v) * h;                                                                     \
    }                                                                                           \
    return out;                                                                                 \
  }                                                                                             \
                                                                                                \
  /* coef times its live mask: the other axes' factors, then the head axis's zero. */           \
  static void masked_##SUF(T *restrict dst, const T *restrict c, T mid, const T *restrict fl,   \
                           int dead, long long n2) {                                            \
    if (dead) {                                                                                 \
      for (long long l = 0; l < n2; ++l) dst[l] = c[l] * (mid * fl[l]) * (T)0;                  \
    } else {                                                                                    \
      for (long long l = 0; l < n2; ++l) dst[l] = c[l] * (mid * fl[l]);                         \
    }                                                                                           \
  }                                                                                             \
                                                                                                \
  static int coefficients_##SUF(const T *eps, const T *sig, const T *mu, const long long *lo,   \
                                const long long *k, const long long *n, long long s0,           \
                                long long s1, const sweep_mx_coef_out *outs, int n_outs,        \
                                int head_axis, T dt, T eps0, T mu0, int n_threads) {            \
    const long long n2 = n[2], rows = n[0] * n[1];                                              \
    const T *models[3] = {eps, sig, mu};                                                        \
    int failed = 0;                                                                             \
    _Pragma("omp parallel num_threads(n_threads) if (n_threads > 1) reduction(| : failed)") {   \
      SWEEP_MX_SAVE_FP                                                                          \
      T *buf = (T *)malloc((size_t)(12 * (n2 + 1) + 5 * n2) * sizeof(T));                       \
      if (!buf) failed = 1;                                                                     \
      T *R[3][2][2];                                                                            \
      T *tmp = buf + 12 * (n2 + 1);                                                             \
      for (int q = 0; q < 3 && buf; ++q)                                                        \
        for (int a = 0; a < 2; ++a)                                                             \
          for (int b = 0; b < 2; ++b) R[q][a][b] = buf + (q * 4 + a * 2 + b) * (n2 + 1);        \
      int need[3] = {0, 0, 0};                                                                  \
      for (int c = 0; c < n_outs; ++c) {                                                        \
        if (outs[c].electric) need[0] = need[1] = 1;                                            \
        else need[2] = 1;                                                                       \
      }                                                                                         \
      _Pragma("omp for schedule(static)") for (long long r = 0; r < rows; ++r) {                \
        if (!buf) continue;                                                                     \
        const long long i = r / n[1], j = r % n[1];                                             \
        for (int q = 0; q < 3; ++q) {                                                           \
          if (!need[q]) continue;                                                               \
          for (int a = 0; a < 2; ++a)                                                           \
            for (int b = 0; b < 2; ++b) {                                                       \
              long long ii = clampll(i + a, 0, n[0] - 1), jj = clampll(j + b, 0, n[1] - 1);     \
              long long mi = clampll(ii - lo[0], 0, k[0] - 1);                                  \
              long long mj = clampll(jj - lo[1], 0, k[1] - 1);                                  \
              pad_row_##SUF(R[q][a][b], models[q] + (mi * k[1] + mj) * k[2], lo[2], k[2], n2);  \
            }                                                                                   \
        }                                                                                       \
        for (int c = 0; c < n_outs; ++c) {                                                      \
          const sweep_mx_coef_out *o = &outs[c];                                                \
          const T *fh = (const T *)o->fh, *fm = (const T *)o->fm, *fl = (const T *)o->fl;       \
          const T mid = fm ? fm[j] : (T)1;                                                      \
          const int dead = (head_axis == 0 ? fh[i] : fh[j]) == (T)0;                            \
          const long long off = i * s0 + j * s1;                                                \
          T *ca = tmp, *cb = tmp + n2, *m0 = tmp + 2 * n2, *m1 = tmp + 3 * n2;                  \
          if (o->electric) {                                                                    \
            const T *restrict me = mean_row_##SUF(m0, R[0], o->stag, n2);                       \
            const T *restrict ms = mean_row_##SUF(m1, R[1], o->stag, n2);                       \
            for (long long l = 0; l < n2; ++l) {                                                \
              T e = me[l] * eps0;                                                               \
              T s = ms[l] * dt;                                                                 \
              s = s / (e * (T)2);                                                               \
              T s1 = s + (T)1;                                                                  \
              ca[l] = ((T)1 - s) / s1;                                                          \
              cb[l] = dt / (e * s1);                                                            \
            }                                                                                   \
            masked_##SUF((T *)o->out_a + off, ca, mid, fl, dead, n2);                           \
            masked_##SUF((T *)o->out_b + off, cb, mid, fl, dead, n2);                           \
          } else {                                                                              \
            const T *restrict mm = mean_row_##SUF(m0, R[2], o->stag, n2);                       \
            for (long long l = 0; l < n2; ++l) ca[l] = dt / (mm[l] * mu0);                      \
            masked_##SUF((T *)o->out_a + off, ca, mid, fl, dead, n2);                           \
          }                                                                                     \
        }                                                                                       \
      }                                                                                         \
      free(buf);                                                                                \
      SWEEP_MX_RESTORE_FP                                                                       \
    }                                                                                           \
    return failed ? -1 : 0;                                                                     \
  }

/* NumPy keeps subnormals: so do these threads, whatever mode a kernel left. */
#if defined(__SSE2__)
#define SWEEP_MX_SAVE_FP                     \
  const unsigned int fp_state = _mm_getcsr(); \
  _mm_setcsr(fp_state & ~0x8040u);
#define SWEEP_MX_RESTORE_FP _mm_setcsr(fp_state);
#else
#define SWEEP_MX_SAVE_FP
#define SWEEP_MX_RESTORE_FP
#endif

SWEEP_MX_COEF(float, f32)
SWEEP_MX_COEF(double, f64)

int sweep_maxwell_coefficients(int is_double, const void *eps, const void *sig, const void *mu,
                               const long long lo[3], const long long k[3], const long long n[3],
                               long long s0, long long s1, const sweep_mx_coef_out *outs,
                               int n_outs, int head_axis, double dt, double eps0, double mu0,
                               int n_threads) {
  if (n_threads < 1) n_threads = 1;
  if (n[0] < 1 || n[1] < 1 || n[2] < 1 || k[0] < 1 || k[1] < 1 || k[2] < 1) return 0;
  if (is_double)
    return coefficients_f64((const double *)eps, (const double *)sig, (const double *)mu, lo, k,
                            n, s0, s1, outs, n_outs, head_axis, dt, eps0, mu0, n_threads);
  return coefficients_f32((const float *)eps, (const float *)sig, (const float *)mu, lo, k, n, s0,
                          s1, outs, n_outs, head_axis, (float)dt, (float)eps0, (float)mu0,
                          n_threads);
}
