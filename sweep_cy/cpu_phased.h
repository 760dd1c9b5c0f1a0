/*
 * The CPU time loops of an equation whose step is several half-step phases
 * (SWEEP_EQ_PHASES > 1: a velocity-stress or an E-H system), included by
 * cpu_skeleton.h in place of its one-stage drivers, whose helpers it shares
 * (shots split between threads, sub_problem, store slots and rows).
 *
 * A forward step runs, for each phase k = 0 .. SWEEP_EQ_PHASES - 1, the
 * work-shared rows of phase k, then per shot its points (sources, receivers),
 * then its ghost rows; the implicit barriers of `omp for` separate them, so
 * phase k + 1 reads neighbour rows of phase k.  The adjoint step runs the
 * phases backwards, k = SWEEP_EQ_PHASES - 1 .. 0, each as rows, points,
 * ghosts.  Every output element is written by one thread in a fixed order
 * (bitwise independent of the number of threads).  The reach SWEEP_H may be
 * a run-time value (p->halo).  No temporal blocking, but for the forward of
 * a plug-in that defines SWEEP_EQ_TBLOCK_POINTS (tb_forward): the fused 3D
 * forward, and the 2D forward where SWEEP_EQ_TBLOCK(p, f) says so.
 *
 * Fused steps, where the plug-in defines SWEEP_EQ_FUSE(p, f) and it is true
 * for a call (no boundary saving): one sweep per step instead of one per
 * phase.  The lines of the outermost updated axis (2D: rows in y; 3D:
 * planes in z) are cut into one strip per thread and shot; each strip runs
 * the first phase's line l, then the second phase's line l - (h - 1) (a
 * wavefront: the second phase at line j reads the first's lines j - h ..
 * j + h - 1, which read its own at lines j - h + 1 .. j + h, as every
 * staggered system of reach h), except for the second phase's lines within
 * the reach of a neighbour strip, done after a barrier.  The same cells get
 * the same arithmetic as unfused (bitwise equal results).  The contract of
 * SWEEP_EQ_FUSE: forward phase 0's points commute with phase 0's rows (they
 * run before them), the adjoint's points of phase 1 with the adjoint rows
 * of phase 0 (they run after them), and no ghost rows.  Or, where the
 * plug-in defines SWEEP_EQ_FUSE_POINTS (elastic), the forward's points run
 * per line right after the line's rows of their phase and
 * SWEEP_EQ_FUSE_AFTER once the step's sweep is done, and the adjoint runs
 * its phases apart.  SWEEP_EQ_FUSE_LAG (default h - 1) is the wavefront's
 * lag in lines.
 *
 * Boundary saving, where the plug-in defines SWEEP_EQ_BS_FIELDS (the state
 * is that many fields, phase 0 updating [0, SWEEP_EQ_BS_SPLIT), phase 1 the
 * rest; a snapshot has one value per field): the forward saves every field
 * of the band (band_idx: plain cells within a halo of the cells with C-PML
 * terms, whose stencils read them) at the end of each step into band_u; the
 * forward entry with replay_w set runs the CPML replay (bs_replay) and the
 * backward entry with replay_w set the reconstruction (bs_reverse), which
 * writes each step's snapshot into store for a following adjoint call.
 *
 * Hooks besides the skeleton's declarations (SWEEP_EQ_MODEL, *_STATE, *_SHOT,
 * SWEEP_EQ_SHIFT_SHOTS, SWEEP_EQ_GRAD, SWEEP_EQ_SNAP_VALUES, the rotations):
 *   SWEEP_EQ_SNAP_FIRST(k), SWEEP_EQ_SNAP_END(k)  the snapshot values that
 *       forward phase k's rows write (wr[x + v * SWEEP_WR_PITCH(p)]).
 *   SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y, k)  phase k of row (z, y).
 *   SWEEP_EQ_FWD_POINTS(p, f, k, shot, off, t)  after phase k's rows, per
 *       shot: its sources and receivers of step t.
 *   SWEEP_EQ_FWD_GHOSTS(p, k)  after phase k's points (its own omp for).
 *   SWEEP_EQ_FWD_POINTS0_EARLY(p, f)  (optional) true where forward phase
 *       0's points commute with phase 0's rows and phase 0 has no ghost
 *       rows: phase 0's points of step t + 1 then run right after phase
 *       1's of step t, in the same omp for (one barrier a step fewer).
 *   SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y, k, st)  the adjoint of phase k of
 *       row (z, y); st: the row's snapshot of step t (value v at
 *       st + v * SWEEP_SNAP_STRIDE(p)) or NULL (no gradient this step).
 *   SWEEP_EQ_ADJ_POINTS(p, f, k, shot, off, t), SWEEP_EQ_ADJ_GHOSTS(p, k, t)
 *       after the adjoint rows of phase k.
 *   SWEEP_EQ_ADJ_TILE(p, shot, y0, k, t), SWEEP_EQ_ADJ_STATE_END()  (optional)
 *       before a work item's adjoint rows of phase k (rows from y0 on), and
 *       at the end of a thread's adjoint (elastic 2D: its window of rows).
 *   SWEEP_EQ_FUSE(p, f)  (optional) whether the call may fuse its phases;
 *   SWEEP_EQ_FUSE_LAG, SWEEP_EQ_FUSE_POINTS(p, f, k, shot, off, t, l),
 *   SWEEP_EQ_FUSE_AFTER(p, f, shot, off, t)  (optional) see above.
 * Boundary saving's (with SWEEP_EQ_BS_FIELDS, SWEEP_EQ_BS_SPLIT):
 *   SWEEP_EQ_BS_PTRS  the fields of shot 0 (SWEEP_R *[]), in a call's scope.
 *   SWEEP_EQ_REPLAY_ROW(p, wr, z, y, k)  phase k of row (z, y) on its cells
 *       with C-PML terms only (snapshot values to wr as the forward's).
 *   SWEEP_EQ_REPLAY_POINTS(p, f, k, shot, off, t, band)  after them: the
 *       sources, the band's fields of phase k loaded from band (the slot of
 *       step t), then what the forward's points do besides (images).
 *   SWEEP_EQ_REV_ROW(p, wr, z, y, k)  phase k of row (z, y) undone on its
 *       plain cells (snapshot values to wr as the forward's).
 *   SWEEP_EQ_REV_POINTS(p, f, k, shot, off, t)  before them: phase k's
 *       sources taken away (k = 0: after the images are refilled).
 */

/* Optional: per work item of the unfused adjoint, before its rows (shot,
 * first row y0, phase k, step t), and the end of a thread's adjoint. */
#ifndef SWEEP_EQ_ADJ_TILE
#define SWEEP_EQ_ADJ_TILE(p, shot, y0, k, t) ((void)0)
#endif
#ifndef SWEEP_EQ_ADJ_STATE_END
#define SWEEP_EQ_ADJ_STATE_END() ((void)0)
#endif

#ifdef SWEEP_EQ_BS_FIELDS
static void SWEEP_FN(bs_replay)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                sweep_int t0, sweep_int n_steps, int n_threads);
static void SWEEP_FN(bs_reverse)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                 sweep_int t_end, sweep_int n_steps, int n_threads);
#define SWEEP_BS_FIRST(k) ((k) ? SWEEP_EQ_BS_SPLIT : 0)
#define SWEEP_BS_END(k) ((k) ? SWEEP_EQ_BS_FIELDS : SWEEP_EQ_BS_SPLIT)
#define SWEEP_BS_SLOT(p, cells) ((cells) * SWEEP_EQ_BS_FIELDS * (p)->slot_shots)
#endif

/* Row (z, y) of forward phase k of the shot at off (its context in scope),
 * its snapshot values into the store's slot. */
#define SWEEP_PH_FWD_ROW_(z, y, k)                                                         \
  do {                                                                                     \
    const sweep_int srow_ = store && wrow ? SWEEP_FN(store_row)(p, z, y) : -1;             \
    SWEEP_R *wr_ = srow_ >= 0 ? wrow : NULL;                                               \
    SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr_, z, y, k);                                        \
    if (srow_ >= 0)                                                                        \
      for (int v_ = SWEEP_EQ_SNAP_FIRST(k); v_ < SWEEP_EQ_SNAP_END(k); ++v_)               \
        sweep_stream_copy(store + (v_ * p->slot_shots + shot) * mc + srow_,                \
                          wr_ + v_ * SWEEP_WR_PITCH(p) + slo2, sizeof(SWEEP_R) * s2);      \
  } while (0)
/* Row (z, y) of the adjoint of phase k, with the row's snapshot (if any). */
#define SWEEP_PH_ADJ_ROW_(z, y, k)                                                         \
  do {                                                                                     \
    const sweep_int srow_ = store ? SWEEP_FN(store_row)(p, z, y) : -1;                     \
    SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y, k, srow_ >= 0 ? store + shot * mc + srow_ : NULL); \
  } while (0)

#ifdef SWEEP_EQ_FUSE
/* The fused steps' lines: rows in y (2D) or planes in z (3D). */
#define SWEEP_FUSE_AXIS (SWEEP_NDIM == 3 ? 0 : 1)
/* Lines between the first phase's line and the second's in a wavefront:
 * h - 1 where the first phase at line i reads the second's lines i - h + 1
 * .. i + h (Maxwell); an equation whose phases both reach h lines each way
 * (elastic: normal and shear stresses staggered oppositely) defines it as h. */
#ifndef SWEEP_EQ_FUSE_LAG
#define SWEEP_EQ_FUSE_LAG (h - 1)
#endif
/* ROW(z, y, k) on every row of line l. */
#define SWEEP_FUSE_LINE_(ROW, l, k)                                                        \
  do {                                                                                     \
    const sweep_int l_ = (l);                                                              \
    for (sweep_int z = SWEEP_NDIM == 3 ? l_ : 0; z < (SWEEP_NDIM == 3 ? l_ + 1 : 1); ++z)  \
      for (sweep_int y = SWEEP_NDIM == 3 ? h : l_;                                         \
           y < (SWEEP_NDIM == 3 ? p->shape[1] - h : l_ + 1); ++y)                          \
        ROW(z, y, k);                                                                      \
  } while (0)
/* Declares strip item's shot, its lines [a, b) and the second phase's lines
 * [ea, eb) of the wavefront (the others are within h of a neighbour strip). */
#define SWEEP_FUSE_ITEM_(item, n_strips)                                                   \
  const sweep_int shot = (item) / (n_strips), s_ = (item) % (n_strips);                    \
  const sweep_int lo_ = h, n_ = p->shape[SWEEP_FUSE_AXIS] - 2 * h;                         \
  const sweep_int a = lo_ + n_ * s_ / (n_strips), b = lo_ + n_ * (s_ + 1) / (n_strips);    \
  const sweep_int lag_ = SWEEP_EQ_FUSE_LAG;                                                \
  const sweep_int ea = s_ ? a + h : a, eb = s_ + 1 < (n_strips) ? b - lag_ : b;            \
  const sweep_int off = shot * ss
/* The wavefront of a strip: phase k0's line l, then phase k1's l - lag_; each
 * line's points PTS(l, k) (if any) right after it. */
#define SWEEP_FUSE_STRIP_(ROW, k0, k1, PTS)                                                \
  for (sweep_int l = a; l < b + lag_; ++l) {                                               \
    if (l < b) {                                                                           \
      SWEEP_FUSE_LINE_(ROW, l, k0);                                                        \
      PTS(l, k0);                                                                          \
    }                                                                                      \
    if (l - lag_ >= ea && l - lag_ < eb) {                                                 \
      SWEEP_FUSE_LINE_(ROW, l - lag_, k1);                                                 \
      PTS(l - lag_, k1);                                                                   \
    }                                                                                      \
  }
/* Phase k1's lines of the strip left out of its wavefront. */
#define SWEEP_FUSE_BORDERS_(ROW, k1, PTS)                                                  \
  for (sweep_int l = a; l < b; ++l)                                                        \
    if (l < ea || l >= eb) {                                                               \
      SWEEP_FUSE_LINE_(ROW, l, k1);                                                        \
      PTS(l, k1);                                                                          \
    }
#define SWEEP_FUSE_NO_POINTS_(l, k) ((void)0)
/* A fused step's sweep (the context SHOT_STATE(f, off) declares in scope):
 * every strip's wavefront, then, after the barrier, the lines it left out. */
#define SWEEP_FUSE_SWEEP_(SHOT_STATE, ROW, k0, k1, PTS)                                    \
  _Pragma("omp for schedule(static)")                                                      \
  for (sweep_int item = 0; item < n_strip_items; ++item) {                                 \
    SWEEP_FUSE_ITEM_(item, n_strips);                                                      \
    SHOT_STATE(f, off);                                                                    \
    SWEEP_FUSE_STRIP_(ROW, k0, k1, PTS)                                                    \
  }                                                                                        \
  _Pragma("omp for schedule(static)")                                                      \
  for (sweep_int item = 0; item < n_strip_items; ++item) {                                 \
    SWEEP_FUSE_ITEM_(item, n_strips);                                                      \
    SHOT_STATE(f, off);                                                                    \
    SWEEP_FUSE_BORDERS_(ROW, k1, PTS);                                                     \
  }
#ifdef SWEEP_EQ_FUSE_POINTS
/* The forward's points of line l of phase k (the plug-in's per-line points:
 * sources and receivers of the line's cells, after its row updates). */
#define SWEEP_FUSE_FWD_POINTS_(l, k) SWEEP_EQ_FUSE_POINTS(p, f, k, shot, off, t, l)
#endif
#endif

#if defined(SWEEP_EQ_FUSE) && defined(SWEEP_EQ_TBLOCK_POINTS) && SWEEP_NDIM == 3
/* Temporal blocking of the fused 3D forward (where the plug-in defines
 * SWEEP_EQ_TBLOCK_POINTS; a call that fuses and stores no snapshots): nb
 * steps per pass over the planes in z, a wavefront: pass iteration i runs,
 * for each step s of the pass, phase 0 (H) on plane i - s P and phase 1 (E)
 * on plane i - s P - Q, every thread its own rows in y of each plane, then a
 * barrier.  The phases read each other h planes either way (phase 0 at line
 * i reads phase 1's lines i - h + 1 .. i + h, phase 1 at j phase 0's j - h ..
 * j + h - 1), so Q = h and P = 2 h + 1 put every read of a plane (and every
 * overwrite of a plane that another reads) in an iteration after the one that
 * wrote (read) it: each read sees the time level of the unblocked sweep, the
 * same cells get the same arithmetic (bitwise equal results).  The points
 * (SWEEP_EQ_TBLOCK_POINTS(p, f, lists, shot, off, z, y, t, rec)): after a
 * row's phase 1 of step t, its sources of step t and, when rec, its receivers
 * of step t + 1 (E^{t+1}); a pass's first receivers before it (phase 0's
 * points of the step).  SWEEP_EQ_TBLOCK_PREP(p, f): the plug-in's lists of
 * the points by plane (malloc'd; NULL: not blocked, points off the updated
 * rows).  Passes never cross the call (a callback chunk).
 * SWEEP_EQ_TBLOCK_STEPS(p, h): steps per pass (1: not blocked). */
#define SWEEP_TB_ROWS_(z, k)                                                               \
  for (sweep_int y = y0; y < y1; ++y) SWEEP_EQ_FWD_ROW(p, pa, pb, off, NULL, z, y, k)
static void SWEEP_FN(tb_forward)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                 sweep_int t0, sweep_int n_steps, int n_threads, sweep_int T,
                                 void *lists) {
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int Q = h, P = 2 * h + 1, lo = h, hi = p->shape[0] - h;
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_EQ_FWD_STATE(f);
    const int tid = sweep_thread_num(), nth = sweep_num_threads();
    const sweep_int ny = p->shape[1] - 2 * h;
    const sweep_int y0 = h + ny * tid / nth, y1 = h + ny * (tid + 1) / nth;
    for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
      const sweep_int off = shot * ss;
      SWEEP_EQ_FWD_SHOT(f, off);
      for (sweep_int tb = t0; tb < t0 + n_steps; tb += T) {
        const sweep_int nb = t0 + n_steps - tb < T ? t0 + n_steps - tb : T;
#pragma omp single
        SWEEP_EQ_FWD_POINTS(p, f, 0, shot, off, tb);
        for (sweep_int i = lo; i < hi + Q + (nb - 1) * P; ++i) {
          for (sweep_int s = 0; s < nb; ++s) {
            const sweep_int zh = i - s * P, ze = zh - Q;
            if (zh < lo) break;
            if (zh < hi) SWEEP_TB_ROWS_(zh, 0);
            if (ze >= lo && ze < hi)
              for (sweep_int y = y0; y < y1; ++y) {
                SWEEP_EQ_FWD_ROW(p, pa, pb, off, NULL, ze, y, 1);
                SWEEP_EQ_TBLOCK_POINTS(p, f, lists, shot, off, ze, y, tb + s, s + 1 < nb);
              }
          }
          if (nth > 1) {
#pragma omp barrier
          }
        }
      }
    }
    sweep_restore_fp(fp_state);
  }
  free(lists);
}
#undef SWEEP_TB_ROWS_
#endif

#if defined(SWEEP_EQ_TBLOCK_POINTS) && SWEEP_NDIM == 2
/* Temporal blocking of the 2D forward (where the plug-in defines
 * SWEEP_EQ_TBLOCK_POINTS and SWEEP_EQ_TBLOCK(p, f) is true for a call that
 * stores no snapshots): chunks of T steps, each a wavefront over the rows
 * in y run by one thread, chunk c (of every shot's chunks in order) on
 * thread c % n_threads.  The rows go in groups of G (from lo = h): iteration
 * i of a chunk runs, for each step s, phase 0 (H) on group i - s Pg and
 * phase 1 (E) on the same rows less Q = h, each row's points after its
 * phase 1, in order on one thread; Pg G >= P = 2 h + 1 rows as tb_forward
 * (3D) above, so every read sees the time level of the unblocked sweep.  A
 * chunk reads rows of the chunk before it (another thread) up to h rows
 * past its phase 0 rows and overwrites rows that chunk's last step reads:
 * it runs iteration i once the chunk before has finished the iteration
 * whose last phase 1 rows reach h rows past them (progress counters, no
 * barrier).  The cells get the same arithmetic as unblocked (bitwise equal
 * results).  Points: the call's first receivers before its first chunk of
 * the shot, then after a row's phase 1 of step t its sources of step t and
 * its receivers of step t + 1 (up to the call's last step).  G: G > 1,
 * else 2 h + 1 (one row per group, G = 1, ran 8-15 % slower than unblocked
 * on one thread: a row's neighbours in y no longer came from the L1).
 * Returns 0 (nothing run) without memory. */
#define SWEEP_TB2_ROWS_(r0, k, PTS)                                                        \
  for (sweep_int y = (r0) > lo ? (r0) : lo, ye_ = (r0) + G < hi ? (r0) + G : hi; y < ye_; ++y) { \
    SWEEP_EQ_FWD_ROW(p, pa, pb, off, NULL, 0, y, k);                                       \
    PTS;                                                                                   \
  }
static int SWEEP_FN(tb_forward)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                sweep_int t0, sweep_int n_steps, int n_threads, sweep_int T,
                                sweep_int G, void *lists) {
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int Q = h, lo = h, hi = p->shape[1] - h;
  if (G <= 1) G = 2 * h + 1;
  const sweep_int Pg = (2 * h + 1 + G - 1) / G;
  const sweep_int n_chunks = (n_steps + T - 1) / T, n_all = p->n_shots * n_chunks;
  /* A chunk of nb steps runs iterations [0, n_it(nb)); the next chunk's
   * iteration i waits for the previous one's i + lead (its last phase 1
   * rows h past the rows of phase 0's group i). */
#define SWEEP_TB2_ITS_(nb) ((hi - lo + Q + G - 1) / G + ((nb) - 1) * Pg)
  const sweep_int full_its = SWEEP_TB2_ITS_(T), lead = (T - 1) * Pg + (h + Q + G - 1) / G + 2;
  const sweep_int span = full_its + 1; /* progress of chunk c: c * span + iterations done */
  sweep_progress *done = n_threads > 1 ? sweep_progress_new(n_threads) : NULL;
  if (n_threads > 1 && !done) {
    free(lists);
    return 0;
  }
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_EQ_FWD_STATE(f);
    const int tid = sweep_thread_num(), nth = sweep_num_threads();
    for (sweep_int c = tid; c < n_all; c += nth) {
      const sweep_int shot = c / n_chunks, k = c % n_chunks, tb = t0 + k * T;
      const sweep_int nb = t0 + n_steps - tb < T ? t0 + n_steps - tb : T;
      const sweep_int off = shot * ss, n_it = SWEEP_TB2_ITS_(nb);
      /* The chunk before (of the same shot), on the thread before. */
      sweep_progress *prev = nth > 1 && k ? &done[(tid + nth - 1) % nth] : NULL;
      SWEEP_EQ_FWD_SHOT(f, off);
      if (!k) SWEEP_EQ_FWD_POINTS(p, f, 0, shot, off, tb);
      for (sweep_int i = 0; i < n_it; ++i) {
        if (prev) {
          const sweep_int need = i + lead < full_its ? i + lead : full_its;
          sweep_wait(prev, (c - 1) * span + need);
        }
        for (sweep_int s = 0; s < nb; ++s) {
          const sweep_int rh = lo + (i - s * Pg) * G, re = rh - Q;
          if (rh + G <= lo) break;
          if (rh < hi) SWEEP_TB2_ROWS_(rh, 0, (void)0);
          if (re < hi)
            SWEEP_TB2_ROWS_(re, 1,
                            SWEEP_EQ_TBLOCK_POINTS(p, f, lists, shot, off, 0, y, tb + s,
                                                   tb + s + 1 < t0 + n_steps));
        }
        if (done) sweep_publish(&done[tid], c * span + i + 1);
      }
    }
    sweep_restore_fp(fp_state);
  }
  free(done);
  free(lists);
  return 1;
}
#undef SWEEP_TB2_ITS_
#undef SWEEP_TB2_ROWS_
#endif

void SWEEP_EQ_FORWARD(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f, sweep_int t0,
                      sweep_int n_steps, int n_threads) {
  if (SWEEP_FN(split_by_shot)(p, n_threads)) {
    SWEEP_FN(run_by_shot)(SWEEP_EQ_FORWARD, p, f, t0, n_steps, n_threads);
    return;
  }
#ifdef SWEEP_EQ_BS_FIELDS
  if (f->replay_w) {
    SWEEP_FN(bs_replay)(p, f, t0, n_steps, n_threads);
    return;
  }
#endif
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int mc = SWEEP_FN(store_cells)(p);
  const sweep_int slo2 = p->store_lo[2], s2 = p->store_hi[2] - p->store_lo[2];
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#ifdef SWEEP_EQ_FUSE
  const int fuse = SWEEP_EQ_FUSE(p, f)
#ifdef SWEEP_EQ_BS_FIELDS
                   && !f->band_u
#endif
      ;
#else
  const int fuse = 0;
#endif
#if defined(SWEEP_EQ_FUSE) && defined(SWEEP_EQ_TBLOCK_POINTS) && SWEEP_NDIM == 3
  if (fuse && !f->store) {
    const sweep_int T = SWEEP_EQ_TBLOCK_STEPS(p, h);
    void *lists = T > 1 ? SWEEP_EQ_TBLOCK_PREP(p, f) : NULL;
    if (lists) {
      SWEEP_FN(tb_forward)(p, f, t0, n_steps, n_threads, T, lists);
      return;
    }
  }
#elif defined(SWEEP_EQ_TBLOCK_POINTS) && SWEEP_NDIM == 2
  if (SWEEP_EQ_TBLOCK(p, f) && !f->store
#ifdef SWEEP_EQ_BS_FIELDS
      && !f->band_u
#endif
  ) {
    const sweep_int T = SWEEP_EQ_TBLOCK_STEPS(p, h);
    void *lists = T > 1 ? SWEEP_EQ_TBLOCK_PREP(p, f) : NULL;
    if (lists && SWEEP_FN(tb_forward)(p, f, t0, n_steps, n_threads, T, p->block_group, lists))
      return;
  }
#endif
  /* Phase 0's points of step t + 1 right after phase 1's of step t, in
   * their omp for (one barrier a step fewer), where the plug-in says they
   * commute with phase 0's rows and no ghost rows come between. */
#ifdef SWEEP_EQ_FWD_POINTS0_EARLY
  const int early = SWEEP_EQ_FWD_POINTS0_EARLY(p, f);
#else
  const int early = 0;
#endif
  const sweep_int n_strips = n_threads, n_strip_items = p->n_shots * n_strips;
  (void)n_strip_items;
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_EQ_FWD_STATE(f);
    SWEEP_R *wrow =
        f->store ? (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->shape[2] * SWEEP_EQ_SNAP_VALUES) : NULL;
    for (sweep_int t = t0; t < t0 + n_steps; ++t) {
      const sweep_int slot = f->store ? SWEEP_FN(store_slot)(p, t, t0) : -1;
      SWEEP_R *store =
          slot >= 0 ? (SWEEP_R *)f->store + slot * SWEEP_EQ_SNAP_VALUES * p->slot_shots * mc
                    : NULL;
#ifdef SWEEP_EQ_FUSE
      if (fuse) {
#ifdef SWEEP_EQ_FUSE_POINTS
        SWEEP_FUSE_SWEEP_(SWEEP_EQ_FWD_SHOT, SWEEP_PH_FWD_ROW_, 0, 1, SWEEP_FUSE_FWD_POINTS_)
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          SWEEP_EQ_FUSE_AFTER(p, f, shot, shot * ss, t);
#else
        if (!early || t == t0) {
#pragma omp for schedule(static)
          for (sweep_int shot = 0; shot < p->n_shots; ++shot)
            SWEEP_EQ_FWD_POINTS(p, f, 0, shot, shot * ss, t);
        }
        SWEEP_FUSE_SWEEP_(SWEEP_EQ_FWD_SHOT, SWEEP_PH_FWD_ROW_, 0, 1, SWEEP_FUSE_NO_POINTS_)
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
          SWEEP_EQ_FWD_POINTS(p, f, 1, shot, shot * ss, t);
          if (early && t + 1 < t0 + n_steps) SWEEP_EQ_FWD_POINTS(p, f, 0, shot, shot * ss, t + 1);
        }
#endif
      }
#endif
      if (!fuse)
        for (int k = 0; k < SWEEP_EQ_PHASES; ++k) {
#pragma omp for schedule(static)
        for (sweep_int item = 0; item < n_items; ++item) {
          SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
          const sweep_int off = shot * ss;
          SWEEP_EQ_FWD_SHOT(f, off);
          for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z)
            for (sweep_int y = y0; y < y1; ++y) SWEEP_PH_FWD_ROW_(z, y, k);
        }
        if (k || !early || t == t0) {
#pragma omp for schedule(static)
          for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
            SWEEP_EQ_FWD_POINTS(p, f, k, shot, shot * ss, t);
            if (k == SWEEP_EQ_PHASES - 1 && early && t + 1 < t0 + n_steps)
              SWEEP_EQ_FWD_POINTS(p, f, 0, shot, shot * ss, t + 1);
          }
        }
        SWEEP_EQ_FWD_GHOSTS(p, k);
      }
#ifdef SWEEP_EQ_BS_FIELDS
      if (f->band_u && p->n_band) {
        SWEEP_R *bu = (SWEEP_R *)f->band_u + (t - t0) * SWEEP_BS_SLOT(p, p->n_band);
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          SWEEP_FN(bs_copy)(p, SWEEP_EQ_BS_PTRS, 0, SWEEP_EQ_BS_FIELDS, shot, shot * ss,
                            f->band_idx, p->n_band, bu, 0);
      }
#endif
      SWEEP_EQ_FWD_ROTATE();
    }
    if (wrow) sweep_stream_fence();
    free(wrow);
    sweep_restore_fp(fp_state);
  }
}

/* Adjoint steps t_end - 1 down to t_end - n_steps, the phases of each in
 * reverse; the model gradient from the snapshots in f->store (full storage
 * and checkpointing). */
void SWEEP_EQ_BACKWARD(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f, sweep_int t_end,
                       sweep_int n_steps, int n_threads) {
  if (SWEEP_FN(split_by_shot)(p, n_threads)) {
    SWEEP_FN(run_by_shot)(SWEEP_EQ_BACKWARD, p, f, t_end, n_steps, n_threads);
    return;
  }
#ifdef SWEEP_EQ_BS_FIELDS
  if (f->replay_w) {
    SWEEP_FN(bs_reverse)(p, f, t_end, n_steps, n_threads);
    return;
  }
#endif
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int t_begin = t_end - n_steps;
  const sweep_int mc = SWEEP_FN(store_cells)(p);
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#if defined(SWEEP_EQ_FUSE) && !defined(SWEEP_EQ_FUSE_POINTS)
  const int fuse = SWEEP_EQ_FUSE(p, f);
#else
  const int fuse = 0; /* per-line points: the forward only */
#endif
  const sweep_int n_strips = n_threads, n_strip_items = p->n_shots * n_strips;
  (void)n_strip_items;
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_EQ_ADJ_STATE(f);
    for (sweep_int t = t_end - 1; t >= t_begin; --t) {
      const sweep_int slot = f->store && SWEEP_EQ_GRAD(f) ? SWEEP_FN(store_slot)(p, t, t_begin) : -1;
      const SWEEP_R *store =
          slot >= 0
              ? (const SWEEP_R *)f->store + slot * SWEEP_EQ_SNAP_VALUES * p->slot_shots * mc
              : NULL;
#ifdef SWEEP_EQ_FUSE
      if (fuse) {
        SWEEP_FUSE_SWEEP_(SWEEP_EQ_ADJ_SHOT, SWEEP_PH_ADJ_ROW_, 1, 0, SWEEP_FUSE_NO_POINTS_)
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
          SWEEP_EQ_ADJ_POINTS(p, f, 1, shot, shot * ss, t);
          SWEEP_EQ_ADJ_POINTS(p, f, 0, shot, shot * ss, t);
        }
      }
#endif
      if (!fuse)
        for (int k = SWEEP_EQ_PHASES - 1; k >= 0; --k) {
#pragma omp for schedule(static)
        for (sweep_int item = 0; item < n_items; ++item) {
          SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
          const sweep_int off = shot * ss;
          SWEEP_EQ_ADJ_SHOT(f, off);
          SWEEP_EQ_ADJ_TILE(p, shot, y0, k, t);
          for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z)
            for (sweep_int y = y0; y < y1; ++y) SWEEP_PH_ADJ_ROW_(z, y, k);
        }
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          SWEEP_EQ_ADJ_POINTS(p, f, k, shot, shot * ss, t);
        SWEEP_EQ_ADJ_GHOSTS(p, k, t);
      }
      SWEEP_EQ_ADJ_ROTATE();
    }
    SWEEP_EQ_ADJ_STATE_END();
    sweep_restore_fp(fp_state);
  }
}

#ifdef SWEEP_EQ_BS_FIELDS
/* Copies snapshot values [v0, v1) of the outer cells of row (z, y) (the
 * stored cells with C-PML terms, geom.outer_idx's order: outer_row[row] is
 * the row's first) between the row buffer wr (value v of cell x at
 * wr[x + v * SWEEP_WR_PITCH(p)]) and the compact slot o (value v of the
 * shot at o + (v * slot_shots + shot) * n_outer): to_row 0 saves, 1 loads. */
static inline void SWEEP_FN(bs_outer_row)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                          SWEEP_R *wr, SWEEP_R *o, sweep_int shot,
                                          sweep_int z, sweep_int y, int v0, int v1,
                                          int to_row) {
  const sweep_int first = f->outer_row[z * p->shape[1] + y];
  if (first < 0) return;
  const sweep_int lo = p->store_lo[2], hi = p->store_hi[2];
  sweep_int a, b;
  SWEEP_FN(row_ends)(p, hi, SWEEP_FN(row_mask)(p, z, y), &a, &b);
  for (int v = v0; v < v1; ++v) {
    SWEEP_R *c = o + (v * p->slot_shots + shot) * p->n_outer + first;
    SWEEP_R *w = wr + v * SWEEP_WR_PITCH(p);
    sweep_int k = 0;
    for (sweep_int x = lo; x < a; ++x, ++k) {
      if (to_row) w[x] = c[k]; else c[k] = w[x];
    }
    for (sweep_int x = b; x < hi; ++x, ++k) {
      if (to_row) w[x] = c[k]; else c[k] = w[x];
    }
  }
}

/* The CPML replay of steps t0 .. t0 + n_steps - 1 from the outer cells'
 * state (the cells with C-PML terms and the band): per step the ring's
 * stresses (ring_idx: cells with C-PML terms that plain cells read) into
 * replay_u, phase 0 on the C-PML cells, its points (the band's phase-0
 * fields loaded from band_u), the ring's velocities into replay_u, phase 1
 * likewise; the outer cells' snapshot values into replay_w.  Each slot of
 * replay_u holds the ring's fields that the reconstruction of the step
 * reads: velocities at its end, stresses at its start. */
static void SWEEP_FN(bs_replay)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                sweep_int t0, sweep_int n_steps, int n_threads) {
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  SWEEP_EQ_MODEL(f);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_R *wrow = (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->shape[2] * SWEEP_EQ_BS_FIELDS);
    for (sweep_int t = t0; t < t0 + n_steps; ++t) {
      const sweep_int i = t - t0;
      SWEEP_R *bu = (SWEEP_R *)f->band_u + i * SWEEP_BS_SLOT(p, p->n_band);
      SWEEP_R *ru = f->replay_u ? (SWEEP_R *)f->replay_u + i * SWEEP_BS_SLOT(p, p->n_ring) : NULL;
      SWEEP_R *rw = (SWEEP_R *)f->replay_w + i * SWEEP_BS_SLOT(p, p->n_outer);
#pragma omp for schedule(static)
      for (sweep_int shot = 0; shot < p->n_shots; ++shot)
        SWEEP_FN(bs_copy)(p, SWEEP_EQ_BS_PTRS, SWEEP_EQ_BS_SPLIT, SWEEP_EQ_BS_FIELDS, shot,
                          shot * ss, f->ring_idx, p->n_ring, ru, 0);
      for (int k = 0; k < SWEEP_EQ_PHASES; ++k) {
#pragma omp for schedule(static)
        for (sweep_int item = 0; item < n_items; ++item) {
          SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
          const sweep_int off = shot * ss;
          SWEEP_EQ_FWD_SHOT(f, off);
          for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z)
            for (sweep_int y = y0; y < y1; ++y) {
              SWEEP_EQ_REPLAY_ROW(p, wrow, z, y, k);
              if (SWEEP_FN(store_row)(p, z, y) >= 0)
                SWEEP_FN(bs_outer_row)(p, f, wrow, rw, shot, z, y, SWEEP_BS_FIRST(k),
                                       SWEEP_BS_END(k), 0);
            }
        }
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
          SWEEP_EQ_REPLAY_POINTS(p, f, k, shot, shot * ss, t, bu);
          if (k == 0)
            SWEEP_FN(bs_copy)(p, SWEEP_EQ_BS_PTRS, 0, SWEEP_EQ_BS_SPLIT, shot, shot * ss,
                              f->ring_idx, p->n_ring, ru, 0);
        }
      }
    }
    free(wrow);
    sweep_restore_fp(fp_state);
  }
}

/* The reconstruction: steps t_end - 1 down to t_end - n_steps undone on the
 * plain cells of the fields (their ring cells loaded from replay_u, slot 0:
 * step t_end - n_steps), each step's snapshot into store slot t - (t_end -
 * n_steps): the plain cells' values from the undone phases, the outer
 * cells' from replay_w. */
static void SWEEP_FN(bs_reverse)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                 sweep_int t_end, sweep_int n_steps, int n_threads) {
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int t_begin = t_end - n_steps, mc = SWEEP_FN(store_cells)(p);
  SWEEP_EQ_MODEL(f);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_R *wrow = (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->shape[2] * SWEEP_EQ_BS_FIELDS);
    for (sweep_int t = t_end - 1; t >= t_begin; --t) {
      const sweep_int i = t - t_begin;
      SWEEP_R *ru = (SWEEP_R *)f->replay_u + i * SWEEP_BS_SLOT(p, p->n_ring);
      SWEEP_R *rw = (SWEEP_R *)f->replay_w + i * SWEEP_BS_SLOT(p, p->n_outer);
      SWEEP_R *store = (SWEEP_R *)f->store + i * SWEEP_BS_SLOT(p, mc);
      for (int k = SWEEP_EQ_PHASES - 1; k >= 0; --k) {
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
          /* Phase 1 reads the fields of phase 0 at the step's end, phase 0
           * those of phase 1 at its start. */
          SWEEP_FN(bs_copy)(p, SWEEP_EQ_BS_PTRS, SWEEP_BS_FIRST(1 - k), SWEEP_BS_END(1 - k), shot,
                            shot * ss, f->ring_idx, p->n_ring, ru, 1);
          SWEEP_EQ_REV_POINTS(p, f, k, shot, shot * ss, t);
        }
#pragma omp for schedule(static)
        for (sweep_int item = 0; item < n_items; ++item) {
          SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
          const sweep_int off = shot * ss;
          SWEEP_EQ_FWD_SHOT(f, off);
          for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z)
            for (sweep_int y = y0; y < y1; ++y) {
              const sweep_int srow = SWEEP_FN(store_row)(p, z, y);
              if (srow < 0) continue;
              if (!SWEEP_FN(row_mask)(p, z, y)) SWEEP_EQ_REV_ROW(p, wrow, z, y, k);
              SWEEP_FN(bs_outer_row)(p, f, wrow, rw, shot, z, y, SWEEP_BS_FIRST(k),
                                     SWEEP_BS_END(k), 1);
              /* The row's values: its plain cells' from this phase, the others' from the
               * replay. */
              const sweep_int lo = p->store_lo[2];
              for (int v = SWEEP_BS_FIRST(k); v < SWEEP_BS_END(k); ++v)
                memcpy(store + (v * p->slot_shots + shot) * mc + srow,
                       wrow + v * SWEEP_WR_PITCH(p) + lo, sizeof(SWEEP_R) * (p->store_hi[2] - lo));
            }
        }
      }
    }
    free(wrow);
    sweep_restore_fp(fp_state);
  }
}
#endif
