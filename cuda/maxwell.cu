/*
 * CUDA kernels of Maxwell's equations on the Yee grid (TM2D and 3D).  The
 * per-point arithmetic, the pointers of a call, the point terms, which
 * components have images and the adjoint's gather at them are
 * maxwell_stencil.h, the code the CPU kernels run
 * (sweep_cy/maxwell_cpu_impl.h); the kernels' bodies and their launch order
 * are those of every staggered system (staggered_cuda.h,
 * sweep/_cuda_backend.py).  Phase 0 updates H, phase 1 E; the adjoint runs
 * the adjoint of E's phase then H's.  Images behind perfect conductors: H's
 * (set 0: even, half a cell out) and E's (set 1: odd).
 */
#include "sweep_common.h"
#include "maxwell_stencil.h"
#include "sweep_cuda.h"

#define STAG_CTX SWEEP_FN(maxwell_ctx)
#define STAG_CTX_INIT(p, f, e) SWEEP_FN(mx_ctx)(p, f, e)
#define STAG_SHOT(e, off) SWEEP_FN(mx_shot)(e, off)
#define STAG_SNAP_VALUES MX_SNAP
#define STAG_GRAD_SLOT MX_CA(0)
#define STAG_RECORD_PHASE 0
/* Sources drive E (phase 1); their gradients come once the adjoint E is complete (phase 0). */
#define STAG_SOURCE(e, k, F, off, cell, a) \
  ((k) == 1 ? SWEEP_FN(mx_source)(e, F, off, cell, a) : (void)0)
#define STAG_SOURCE_ADJ(e, k, F, off, cell, amp, gs, model) \
  ((k) == 0 ? SWEEP_FN(mx_source_adjoint)(e, F, off, cell, amp, gs, model) : (void)0)
#define STAG_RESIDUAL(F, k) ((k) == 0)

__device__ __forceinline__ void mx_cuda_fwd(const STAG_CTX *e, sweep_int i, const sweep_int *c,
                                            int mask, int phase, R *W, sweep_int vs) {
  if (phase)
    SWEEP_FN(mx_fwd_e)(e, i, c[0], c[1], c[2], mask, H, W, vs);
  else
    SWEEP_FN(mx_fwd_h)(e, i, c[0], c[1], c[2], mask, H, W, vs);
}

__device__ __forceinline__ void mx_cuda_adj(const STAG_CTX *e, sweep_int i, const sweep_int *c,
                                            int mask, int phase, const R *st, sweep_int vs) {
  if (phase)
    SWEEP_FN(mx_adj_e)(e, i, c[0], c[1], c[2], mask, H);
  else
    SWEEP_FN(mx_adj_h)(e, i, c[0], c[1], c[2], mask, H, st, vs);
}

/* Set 0: the H components (slots 0-2), set 1: the E ones (slots 3-5). */
__device__ __forceinline__ int mx_cuda_image(int set, int F, int d, R *sign) {
  const int is_e = F >= 3, a = F % 3;
  *sign = is_e ? -1 : 1;
  if (F >= 6 || is_e != set || !(is_e ? MX_HAS_E(a) : MX_HAS_H(a))) return 0;
  return SWEEP_FN(mx_mirrored)(a, d) ? (is_e ? 1 : 2) : 0;
}

#define STAG_FWD mx_cuda_fwd
#define STAG_ADJ mx_cuda_adj
#define STAG_IMAGE mx_cuda_image
#define STAG_HALO(p, e, q, c, set) SWEEP_FN(mx_halo_cell)(&(p), e, q, c, set)
#include "staggered_cuda.h"

STAG_KERNELS(maxwell)
