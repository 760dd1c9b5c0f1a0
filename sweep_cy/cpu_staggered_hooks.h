/*
 * The hooks of cpu_skeleton.h / cpu_phased.h that every staggered
 * first-order system (elastic, Maxwell) fills alike, and its entry points:
 * two in-place phases, no temporal blocking, one context per call
 * (stag_base) and per shot (stag_e), rows and point terms through the
 * plug-in's functions, the run-time order behind one entry per order.
 *
 * The plug-in defines, before including this header:
 *   SWEEP_STAG(name)          its function name, e.g. SWEEP_FN(el_##name);
 *                             it provides ctx_t, ctx, shot, row, fwd_points,
 *                             adj_points
 *   SWEEP_EQ_FORWARD,         the skeleton's kernels, e.g.
 *   SWEEP_EQ_BACKWARD         SWEEP_FN(sweep_elastic_forward)
 *   SWEEP_STAG_FORWARD_NAME,  the entry points' stem, e.g. sweep_elastic_forward_
 *   SWEEP_STAG_BACKWARD_NAME
 *   SWEEP_STAG_SNAP_VALUES    snapshot values per cell
 *   SWEEP_STAG_SNAP_SPLIT     of which phase 0 (the first phase) writes the first
 *   SWEEP_STAG_GRAD_SLOT      the gradient slot the skeleton tests for "model wanted"
 */
#define SWEEP_EQ_PHASES 2
#define SWEEP_EQ_BLOCKING 0
#define SWEEP_EQ_SNAP_VALUES SWEEP_STAG_SNAP_VALUES
#define SWEEP_EQ_SNAP_FIRST(k) ((k) ? SWEEP_STAG_SNAP_SPLIT : 0)
#define SWEEP_EQ_SNAP_END(k) ((k) ? SWEEP_STAG_SNAP_VALUES : SWEEP_STAG_SNAP_SPLIT)
#define SWEEP_EQ_MODEL(f)         \
  SWEEP_STAG(ctx_t) stag_base;    \
  SWEEP_STAG(ctx)(p, f, &stag_base)
#define SWEEP_EQ_SHIFT_SHOTS(f, fo, g)                                                   \
  do {                                                                                   \
    for (int k_ = 0; k_ < 9; ++k_) (g)->field[k_] = SWEEP_OFF((f)->field[k_], fo);      \
    for (int k_ = 0; k_ < 27; ++k_) (g)->psi[k_] = SWEEP_OFF((f)->psi[k_], fo);         \
    for (int k_ = 0; k_ < 15; ++k_) (g)->grad[k_] = SWEEP_OFF((f)->grad[k_], fo);       \
  } while (0)
#define SWEEP_EQ_GRAD(f) ((f)->grad[SWEEP_STAG_GRAD_SLOT])
#define SWEEP_EQ_FWD_STATE(f) ((void)0)
#ifndef SWEEP_EQ_ADJ_STATE
#define SWEEP_EQ_ADJ_STATE(f) ((void)0)
#endif
#define SWEEP_EQ_FWD_SHOT(f, off) const SWEEP_STAG(ctx_t) stag_e = SWEEP_STAG(shot)(&stag_base, off)
#ifndef SWEEP_EQ_ADJ_SHOT
#define SWEEP_EQ_ADJ_SHOT(f, off) SWEEP_EQ_FWD_SHOT(f, off)
#endif
#define SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y, k) \
  ((void)(pa), (void)(pb), SWEEP_STAG(row)(p, &stag_e, wr, NULL, 0, z, y, k))
#ifndef SWEEP_EQ_ADJ_ROW
#define SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y, k, st) \
  ((void)(pa), (void)(pb), SWEEP_STAG(row)(p, &stag_e, NULL, st, SWEEP_SNAP_STRIDE(p), z, y, 3 - (k)))
#endif
#define SWEEP_EQ_FWD_POINTS(p, f, k, shot, off, t) \
  SWEEP_STAG(fwd_points)(p, f, &stag_base, k, shot, off, t)
#define SWEEP_EQ_ADJ_POINTS(p, f, k, shot, off, t) \
  SWEEP_STAG(adj_points)(p, f, &stag_base, k, shot, off, t)
#define SWEEP_EQ_FWD_GHOSTS(p, k) ((void)0)
#define SWEEP_EQ_ADJ_GHOSTS(p, k, t) ((void)0)
#ifdef SWEEP_STAG_BOUNDARY
/* Boundary saving (cpu_phased.h): the state is the snapshot's fields, row
 * kinds 4 + k (replay) and 6 + k (reconstruction), el_replay_points and
 * el_rev_points of the plug-in. */
#define SWEEP_EQ_BS_FIELDS SWEEP_STAG_SNAP_VALUES
#define SWEEP_EQ_BS_SPLIT SWEEP_STAG_SNAP_SPLIT
#define SWEEP_EQ_BS_PTRS (stag_base.f)
#define SWEEP_EQ_REPLAY_ROW(p, wr, z, y, k) SWEEP_STAG(row)(p, &stag_e, wr, NULL, 0, z, y, 4 + (k))
#define SWEEP_EQ_REV_ROW(p, wr, z, y, k) SWEEP_STAG(row)(p, &stag_e, wr, NULL, 0, z, y, 6 + (k))
#define SWEEP_EQ_REPLAY_POINTS(p, f, k, shot, off, t, band) \
  SWEEP_STAG(replay_points)(p, f, &stag_base, k, shot, off, t, band)
#define SWEEP_EQ_REV_POINTS(p, f, k, shot, off, t) \
  SWEEP_STAG(rev_points)(p, f, &stag_base, k, shot, off, t)
#endif
#define SWEEP_EQ_FWD_ROTATE() ((void)0)
#define SWEEP_EQ_ADJ_ROTATE() ((void)0)

#include "cpu_skeleton.h"

/* The entry points of every order (the dispatch table's names), one
 * run-time-order kernel each way. */
#define SWEEP_STAG_ENTRY_(o, tag)                                                               \
  void SWEEP_CAT(SWEEP_CAT(SWEEP_CAT(SWEEP_STAG_FORWARD_NAME, SWEEP_NDIM), SWEEP_CAT(d_o, o)),  \
                 tag)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,            \
                      sweep_int t, sweep_int n, int nt) {                                       \
    SWEEP_EQ_FORWARD(p, f, t, n, nt);                                                           \
  }                                                                                             \
  void SWEEP_CAT(SWEEP_CAT(SWEEP_CAT(SWEEP_STAG_BACKWARD_NAME, SWEEP_NDIM), SWEEP_CAT(d_o, o)), \
                 tag)(const sweep_acoustic_params *p, const sweep_elastic_fields *f,            \
                      sweep_int t, sweep_int n, int nt) {                                       \
    SWEEP_EQ_BACKWARD(p, f, t, n, nt);                                                          \
  }
#if SWEEP_REAL_BYTES == 4
#define SWEEP_STAG_TAG _f32
#else
#define SWEEP_STAG_TAG _f64
#endif
SWEEP_STAG_ENTRY_(2, SWEEP_STAG_TAG)
SWEEP_STAG_ENTRY_(4, SWEEP_STAG_TAG)
SWEEP_STAG_ENTRY_(6, SWEEP_STAG_TAG)
SWEEP_STAG_ENTRY_(8, SWEEP_STAG_TAG)
#undef SWEEP_STAG_ENTRY_
#undef SWEEP_STAG_TAG
