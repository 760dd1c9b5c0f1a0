/*
 * Dispatch from (ndim, order, dtype, direction) to one equation's CPU kernels,
 * one translation unit per (ndim, order, dtype) rendered from cpu_kernel.c.in.
 * SWEEP_DISPATCH(eq, fields_t) defines the entry point
 *
 *   int sweep_<eq>_run(int ndim, int order, int is_double, int adjoint,
 *                      const sweep_acoustic_params *p, const void *f,
 *                      sweep_int t, sweep_int n_steps, int n_threads);
 *
 * (f: the equation's fields_t) over the entry points
 * sweep_<eq>_forward_<suffix> / _backward_<suffix> that the equation's plug-in
 * defines (cpu_skeleton.h's SWEEP_EQ_FORWARD / SWEEP_EQ_BACKWARD): n_steps
 * forward steps from time t (adjoint == 0), or n_steps adjoint steps ending at
 * time t, exclusive (adjoint == 1).  Returns 0, or -1 for an unsupported
 * ndim/order.  Every equation's entry has this one signature, so the Cython
 * binding runs them all through one table: sweep_kernels.c, generated from
 * sweep/_fields_table.py, instantiates SWEEP_DISPATCH for each equation and
 * lists its name, fields struct size and entry point (sweep_kernels), and the
 * layout probe of every struct (sweep_layout).  The binding calls an entry
 * with the GIL released.
 */
#ifndef SWEEP_CPU_DISPATCH_H
#define SWEEP_CPU_DISPATCH_H
#include <stddef.h>
#include "sweep_common.h"

int sweep_max_threads(void);
int sweep_openmp_enabled(void);

typedef int (*sweep_run_fn)(int ndim, int order, int is_double, int adjoint,
                            const sweep_acoustic_params *p, const void *f, sweep_int t,
                            sweep_int n_steps, int n_threads);
typedef struct sweep_kernel_entry {
  const char *name;   /* the equation's name in sweep._C.run */
  size_t fields_size; /* sizeof its fields struct */
  sweep_run_fn run;
} sweep_kernel_entry;
typedef struct sweep_layout_entry {
  const char *struct_name;
  const char *member; /* NULL: value is sizeof(struct) */
  long long value;    /* else offsetof(struct, member) */
} sweep_layout_entry;
extern const sweep_kernel_entry sweep_kernels[];
extern const int sweep_n_kernels;
extern const sweep_layout_entry sweep_layout[];
extern const int sweep_n_layout;

#define SWEEP_DISPATCH_DECLARE_(eq, fields_t, nd, o, t)                                          \
  void sweep_##eq##_forward_##nd##d_o##o##_##t(const sweep_acoustic_params *, const fields_t *, \
                                               sweep_int, sweep_int, int);                      \
  void sweep_##eq##_backward_##nd##d_o##o##_##t(const sweep_acoustic_params *, const fields_t *,\
                                                sweep_int, sweep_int, int);
#define SWEEP_DISPATCH_DECLARE_ALL_(eq, fields_t, nd, t)                                     \
  SWEEP_DISPATCH_DECLARE_(eq, fields_t, nd, 2, t) SWEEP_DISPATCH_DECLARE_(eq, fields_t, nd, 4, t) \
  SWEEP_DISPATCH_DECLARE_(eq, fields_t, nd, 6, t) SWEEP_DISPATCH_DECLARE_(eq, fields_t, nd, 8, t)
#define SWEEP_DISPATCH_ENTRY_(eq, nd, o, t) \
  {sweep_##eq##_forward_##nd##d_o##o##_##t, sweep_##eq##_backward_##nd##d_o##o##_##t}
#define SWEEP_DISPATCH_ENTRIES_(eq, nd, t)                                      \
  SWEEP_DISPATCH_ENTRY_(eq, nd, 2, t), SWEEP_DISPATCH_ENTRY_(eq, nd, 4, t),    \
      SWEEP_DISPATCH_ENTRY_(eq, nd, 6, t), SWEEP_DISPATCH_ENTRY_(eq, nd, 8, t)

#define SWEEP_DISPATCH(eq, fields_t)                                                         \
  SWEEP_DISPATCH_DECLARE_ALL_(eq, fields_t, 2, f32)                                          \
  SWEEP_DISPATCH_DECLARE_ALL_(eq, fields_t, 2, f64)                                          \
  SWEEP_DISPATCH_DECLARE_ALL_(eq, fields_t, 3, f32)                                          \
  SWEEP_DISPATCH_DECLARE_ALL_(eq, fields_t, 3, f64)                                          \
  typedef void (*sweep_##eq##_fn)(const sweep_acoustic_params *, const fields_t *, sweep_int, \
                                  sweep_int, int);                                           \
  /* [ndim - 2][dtype][order / 2 - 1][forward, backward] */                                  \
  static const sweep_##eq##_fn sweep_##eq##_table[2][2][4][2] = {                            \
      {{SWEEP_DISPATCH_ENTRIES_(eq, 2, f32)}, {SWEEP_DISPATCH_ENTRIES_(eq, 2, f64)}},        \
      {{SWEEP_DISPATCH_ENTRIES_(eq, 3, f32)}, {SWEEP_DISPATCH_ENTRIES_(eq, 3, f64)}},        \
  };                                                                                         \
  static int sweep_##eq##_run(int ndim, int order, int is_double, int adjoint,               \
                              const sweep_acoustic_params *p, const void *f, sweep_int t,    \
                              sweep_int n_steps, int n_threads) {                            \
    if (ndim < 2 || ndim > 3 || order < 2 || order > 8 || order % 2) return -1;              \
    if (n_threads <= 0) n_threads = sweep_max_threads();                                     \
    sweep_##eq##_table[ndim - 2][is_double ? 1 : 0][order / 2 - 1][adjoint ? 1 : 0](         \
        p, (const fields_t *)f, t, n_steps, n_threads);                                      \
    return 0;                                                                                \
  }

#endif
