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
 * a run-time value (p->halo).  No temporal blocking, no boundary saving.
 *
 * Hooks besides the skeleton's declarations (SWEEP_EQ_MODEL, *_STATE, *_SHOT,
 * SWEEP_EQ_SHIFT_SHOTS, SWEEP_EQ_GRAD, SWEEP_EQ_SNAP_VALUES, the rotations):
 *   SWEEP_EQ_SNAP_FIRST(k), SWEEP_EQ_SNAP_END(k)  the snapshot values that
 *       forward phase k's rows write (wr[x + v * SWEEP_WR_PITCH(p)]).
 *   SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y, k)  phase k of row (z, y).
 *   SWEEP_EQ_FWD_POINTS(p, f, k, shot, off, t)  after phase k's rows, per
 *       shot: its sources and receivers of step t.
 *   SWEEP_EQ_FWD_GHOSTS(p, k)  after phase k's points (its own omp for).
 *   SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y, k, st)  the adjoint of phase k of
 *       row (z, y); st: the row's snapshot of step t (value v at
 *       st + v * SWEEP_SNAP_STRIDE(p)) or NULL (no gradient this step).
 *   SWEEP_EQ_ADJ_POINTS(p, f, k, shot, off, t), SWEEP_EQ_ADJ_GHOSTS(p, k, t)
 *       after the adjoint rows of phase k.
 */

void SWEEP_EQ_FORWARD(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f, sweep_int t0,
                      sweep_int n_steps, int n_threads) {
  if (SWEEP_FN(split_by_shot)(p, n_threads)) {
    SWEEP_FN(run_by_shot)(SWEEP_EQ_FORWARD, p, f, t0, n_steps, n_threads);
    return;
  }
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int mc = SWEEP_FN(store_cells)(p);
  const sweep_int slo2 = p->store_lo[2], s2 = p->store_hi[2] - p->store_lo[2];
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
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
      for (int k = 0; k < SWEEP_EQ_PHASES; ++k) {
#pragma omp for schedule(static)
        for (sweep_int item = 0; item < n_items; ++item) {
          SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
          const sweep_int off = shot * ss;
          SWEEP_EQ_FWD_SHOT(f, off);
          for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z) {
            for (sweep_int y = y0; y < y1; ++y) {
              const sweep_int srow = store && wrow ? SWEEP_FN(store_row)(p, z, y) : -1;
              SWEEP_R *wr = srow >= 0 ? wrow : NULL;
              SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y, k);
              if (srow >= 0)
                for (int v = SWEEP_EQ_SNAP_FIRST(k); v < SWEEP_EQ_SNAP_END(k); ++v)
                  sweep_stream_copy(store + (v * p->slot_shots + shot) * mc + srow,
                                    wr + v * SWEEP_WR_PITCH(p) + slo2, sizeof(SWEEP_R) * s2);
            }
          }
        }
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          SWEEP_EQ_FWD_POINTS(p, f, k, shot, shot * ss, t);
        SWEEP_EQ_FWD_GHOSTS(p, k);
      }
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
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int t_begin = t_end - n_steps;
  const sweep_int mc = SWEEP_FN(store_cells)(p);
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
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
      for (int k = SWEEP_EQ_PHASES - 1; k >= 0; --k) {
#pragma omp for schedule(static)
        for (sweep_int item = 0; item < n_items; ++item) {
          SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
          const sweep_int off = shot * ss;
          SWEEP_EQ_ADJ_SHOT(f, off);
          for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z) {
            for (sweep_int y = y0; y < y1; ++y) {
              const sweep_int srow = store ? SWEEP_FN(store_row)(p, z, y) : -1;
              SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y, k,
                               srow >= 0 ? store + shot * mc + srow : NULL);
            }
          }
        }
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          SWEEP_EQ_ADJ_POINTS(p, f, k, shot, shot * ss, t);
        SWEEP_EQ_ADJ_GHOSTS(p, k, t);
      }
      SWEEP_EQ_ADJ_ROTATE();
    }
    sweep_restore_fp(fp_state);
  }
}
