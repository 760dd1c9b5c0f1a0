/*
 * The host set-up of a compiled Maxwell call on the host (sweep/equations/
 * maxwell/compiled.py, kernel_coefficients): the kernels' coefficient
 * fields ca, cb (E) and ch (H) from the models, on the call's OpenMP
 * threads, one row at a time: the models' rows padded by edge repeat, the
 * staggered means, the formulas and the live masks, written straight into
 * the fields.  The same IEEE operations in the same order and precision as
 * EagerMaxwell._coefficients_numpy and CompiledStepper.planewise_fields
 * (no contraction: this unit is compiled with -ffp-contract=off; subnormals
 * kept), so the fields are NumPy's bit for bit.
 */
#ifndef SWEEP_MAXWELL_COEF_H
#define SWEEP_MAXWELL_COEF_H

/* One field component: E (ca into out_a, cb into out_b) or H (ch into out_a). */
typedef struct {
  int stag;             /* bit d: staggered along (3D-numbered) axis d */
  int electric;         /* 1: E (ca, cb), 0: H (ch) */
  void *out_a, *out_b;  /* fields of the padded shape, strides s0, s1 (elements), rows dense */
  const void *fh;       /* the live factor of the head axis (0 in 3D, 1 in 2D) */
  const void *fm;       /* the live factor of axis 1 in 3D (NULL in 2D) */
  const void *fl;       /* the live factor of the last axis */
} sweep_mx_coef_out;

/* Models eps, sig, mu: dense, shape k (3D-numbered; 2D: k[0] = 1), padded to
 * n with lo cells before (edge repeat).  head_axis: 0 (3D) or 1 (2D).  The
 * constants are rounded to the models' precision.  Returns 0, or -1 when out
 * of memory (nothing trustworthy written). */
int sweep_maxwell_coefficients(int is_double, const void *eps, const void *sig, const void *mu,
                               const long long lo[3], const long long k[3], const long long n[3],
                               long long s0, long long s1, const sweep_mx_coef_out *outs,
                               int n_outs, int head_axis, double dt, double eps0, double mu0,
                               int n_threads);

#endif
