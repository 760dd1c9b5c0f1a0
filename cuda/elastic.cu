/*
 * CUDA kernels of the elastic velocity-stress system (Virieux's staggered
 * grid).  The per-point arithmetic, the pointers of a call, the point terms
 * and which stresses have images are elastic_stencil.h, the code the CPU
 * kernels run (sweep_cy/elastic_cpu_impl.h); the kernels' bodies and their
 * launch order are those of every staggered system (staggered_cuda.h,
 * sweep/_cuda_backend.py).  Phase 0 updates the velocities, phase 1 the
 * stresses; the adjoint runs phase 1's adjoint (A) then phase 0's (B).
 * Images: the stresses' (set 1, after phase S), odd across free surfaces.
 */
#include "sweep_common.h"
#include "elastic_stencil.h"
#include "sweep_cuda.h"

#define STAG_CTX SWEEP_FN(elastic_ctx)
#define STAG_CTX_INIT(p, f, e) SWEEP_FN(el_ctx)(p, f, e)
#define STAG_SHOT(e, off) SWEEP_FN(el_shot)(e, off)
#define STAG_SNAP_VALUES EL_NF
#define STAG_GRAD_SLOT 0
#define STAG_RECORD_PHASE 0
#define STAG_SOURCE(e, k, F, off, cell, a) SWEEP_FN(el_source)(e, k, F, off, cell, a)
#define STAG_SOURCE_ADJ(e, k, F, off, cell, amp, gs, model) \
  SWEEP_FN(el_source_adjoint)(e, k, F, off, cell, amp, gs, model)
/* Adjoint phase 1 (A) completes the velocities' adjoints, phase 0 (B) the stresses'. */
#define STAG_RESIDUAL(F, k) (((F) < EL_ND) == ((k) == 1))

__device__ __forceinline__ void el_cuda_fwd(const STAG_CTX *e, sweep_int i, const sweep_int *c,
                                            int mask, int phase, R *W, sweep_int vs) {
  if (phase)
    SWEEP_FN(el_fwd_s)(e, i, c[0], c[1], c[2], mask, H, W, vs);
  else
    SWEEP_FN(el_fwd_v)(e, i, c[0], c[1], c[2], mask, H, W, vs);
}

__device__ __forceinline__ void el_cuda_adj(const STAG_CTX *e, sweep_int i, const sweep_int *c,
                                            int mask, int phase, const R *st, sweep_int vs) {
  if (phase)
    SWEEP_FN(el_adj_a)(e, i, c[0], c[1], c[2], mask, H, 0);
  else
    SWEEP_FN(el_adj_b)(e, i, c[0], c[1], c[2], mask, H, st, vs, 0);
}

/* Set 1 (the stresses, imaged after phase S): el_mirrored along model axis d - first. */
__device__ __forceinline__ int el_cuda_image(int set, int F, int d, R *sign) {
  *sign = -1;
  return set == 1 && F < EL_NF ? SWEEP_FN(el_mirrored)(F, d - EL_A0) : 0;
}

/* Adjoint phase B at an image cell of the stresses (the sum the forward phase V read). */
__device__ __forceinline__ void el_cuda_halo(const STAG_CTX *e, sweep_int q, const sweep_int *c,
                                             int set) {
  if (set == 1) SWEEP_FN(el_adj_b_halo)(e, q, c[0], c[1], c[2]);
}

/* Boundary saving's reconstruction: phase k undone at plain cell i. */
__device__ __forceinline__ void el_cuda_rev(const STAG_CTX *e, sweep_int i, const sweep_int *c,
                                            int phase, R *W, sweep_int vs) {
  if (phase)
    SWEEP_FN(el_rev_s)(e, i, c[0], c[1], c[2], 0, H, W, vs);
  else
    SWEEP_FN(el_rev_v)(e, i, c[0], c[1], c[2], 0, H, W, vs);
}

#define STAG_BOUNDARY 1
#define STAG_BS_SPLIT EL_ND
#define STAG_REVERSE el_cuda_rev
#define STAG_FWD el_cuda_fwd
#define STAG_ADJ el_cuda_adj
#define STAG_IMAGE el_cuda_image
#define STAG_HALO(p, e, q, c, set) el_cuda_halo(e, q, c, set)
#include "staggered_cuda.h"

STAG_KERNELS(elastic)
STAG_BS_KERNELS(elastic)
