/*
 * Part of the CPU skeleton, included by cpu_skeleton.h where the equation
 * sets SWEEP_EQ_BLOCKING.  It assumes one leapfrog stage per step: a step
 * reads the state within SWEEP_H cells and writes the new state over that of
 * the step before; the lag between steps and the leaning y tiles below
 * follow from that.  An equation of two half steps per time step (velocity
 * then stress, H then E) needs phases here first.
 *
 * Temporal blocking of forward steps (the forward-only propagation and, where
 * the equation sets SWEEP_EQ_BLOCK_STORE, the storing forward of a gradient:
 * each stored step's snapshot rows go into their slot right after the row's
 * update, in the store's final layout).  One step streams every field through memory once, which
 * bounds large grids by DRAM bandwidth; here block_steps steps advance
 * together in one sweep along the outermost axis (z in 3D, y in 2D):
 *
 *   stage k: step s of the block updates plane group k - s * lag
 *
 * so each plane is read from memory once per block while the planes of the
 * wavefront stay in cache.  With lag = 1 + ceil(h / G) groups of G planes,
 * step s reads only planes step s - 1 finished in an earlier stage, and
 * overwrites (a leapfrog step writes step n + 1 into the buffers of step
 * n - 1: the acoustic u^{n-1}, psi^{n-1} share theirs with u^{n+1}, psi^{n+1})
 * only planes step s - 1 no longer reads.  In 3D the y axis is cut into
 * tiles that lean back by h rows per step (parallelograms) and run in
 * order, which keeps the wavefront of a tile small: a tile reads rows of
 * the previous, finished tile and overwrites only rows the next tile no
 * longer needs.  The updates in one stage are independent; an OpenMP
 * barrier separates stages (when the threads divide the shots, run_by_shot
 * has already given each thread single-shot calls, so there is none to
 * pay).  Each cell sees exactly the arithmetic of the unblocked loop
 * (sources are added right after their cell's update, in the same order), so
 * the results are bitwise identical.
 */
static sweep_blocking SWEEP_FN(blocking)(const SWEEP_EQ_PARAMS *p) {
  const sweep_int h = SWEEP_H;
  const int sa = SWEEP_NDIM == 3 ? 0 : 1; /* streaming axis */
  sweep_blocking b;
  b.steps = p->block_steps;
  b.q_lo = h;
  b.q_hi = p->shape[sa] - h;
  b.group = p->block_group > 0 ? p->block_group : 1;
  b.n_groups = (b.q_hi - b.q_lo + b.group - 1) / b.group;
  b.lag = 1 + (h + b.group - 1) / b.group;
  b.y_lo = h;
  b.y_hi = p->shape[1] - h;
  /* 3D: y tiles of `tile` rows; the first must keep a row at the last step. */
  b.tile = SWEEP_NDIM == 3 && p->block_tile > 0 ? p->block_tile : b.y_hi - b.y_lo;
  if (b.tile > b.y_hi - b.y_lo) b.tile = b.y_hi - b.y_lo;
  if (SWEEP_NDIM == 3 && b.tile <= (b.steps - 1) * h) b.steps = (b.tile - 1) / h + 1;
  b.n_ytiles = SWEEP_NDIM == 3 ? (b.y_hi - b.y_lo + b.tile - 1) / b.tile : 1;
  const sweep_int last_rows = b.y_hi - (b.y_lo + (b.n_ytiles - 1) * b.tile) + (b.steps - 1) * h;
  const sweep_int max_rows = SWEEP_NDIM == 3 ? (last_rows > b.tile ? last_rows : b.tile) : 1;
  b.chunk = SWEEP_NDIM == 3 ? 4 : 1;
  b.n_chunks = (max_rows + b.chunk - 1) / b.chunk;
  return b;
}

/* Writes row (z, y) of a snapshot record (dst: its row in the slot of one
 * shot) from the forward row's values wr, as the unblocked forward does. */
static inline void SWEEP_FN(store_write_row)(const SWEEP_EQ_PARAMS *p, SWEEP_R *dst,
                                             const SWEEP_R *wr, sweep_int z, sweep_int y) {
  const sweep_int slo2 = p->store_lo[2], s2 = p->store_hi[2] - p->store_lo[2];
#ifdef SWEEP_EQ_FWD_STORE
  SWEEP_EQ_FWD_STORE(p, dst, wr, z, y, SWEEP_FN(row_mask)(p, z, y));
  (void)slo2, (void)s2;
#else
  for (int v = 0; v < SWEEP_EQ_SNAP_VALUES; ++v)
    sweep_stream_copy(dst + v * SWEEP_SNAP_STRIDE(p), wr + v * SWEEP_WR_PITCH(p) + slo2,
                      sizeof(SWEEP_R) * s2);
#endif
}

/* Per-thread rows of snapshot values (W) for a storing blocked forward, one
 * of SWEEP_BLOCK_WROW(p) values per thread; NULL when the forward stores
 * nothing (or on out of memory: the caller then runs unblocked). */
#define SWEEP_BLOCK_WROW(p) ((p)->shape[2] * SWEEP_EQ_SNAP_VALUES)

/* Work item (shot, step s of the block starting at tb, y tile, stage k,
 * chunk c) of forward_blocked: the rows of one plane group, or nothing when
 * step s has no group in stage k. */
static inline void SWEEP_FN(blocked_item)(const SWEEP_EQ_PARAMS *p,
                                          const SWEEP_EQ_FIELDS *f, const sweep_blocking *b,
                                          const sweep_point *src, const sweep_point *rec,
                                          const SWEEP_R *const *pa, const SWEEP_R *const *pb,
                                          SWEEP_R *wrow, sweep_int t0, sweep_int tb,
                                          sweep_int shot, sweep_int s, sweep_int tile,
                                          sweep_int k, sweep_int c) {
  const sweep_int h = SWEEP_H;
  const sweep_int grp = k - s * b->lag;
  if (grp < 0 || grp >= b->n_groups) return;
  const sweep_int t = tb + s;
  /* Rows of this item: planes [q0, q1) x rows [ya, yb) (2D: the planes are rows). */
  const sweep_int q0 = b->q_lo + grp * b->group;
  const sweep_int q1 = q0 + b->group < b->q_hi ? q0 + b->group : b->q_hi;
  sweep_int ya = 0, yb = 1;
  if (SWEEP_NDIM == 3) {
    const sweep_int lo = tile == 0 ? b->y_lo : b->y_lo + tile * b->tile - s * h;
    const sweep_int hi =
        tile == b->n_ytiles - 1 ? b->y_hi : b->y_lo + (tile + 1) * b->tile - s * h;
    ya = lo + c * b->chunk;
    yb = ya + b->chunk < hi ? ya + b->chunk : hi;
    if (ya >= yb) return;
  }
  /* Buffers swap every step: the state of step t is that of t0 after t - t0
   * rotations, which only the parity of t - t0 tells apart. */
  const int odd = (int)((t - t0) & 1);
  const sweep_int off = shot * p->shot_stride;
  SWEEP_EQ_BLOCK_STATE(f, odd, off);
  /* A storing forward (wrow set): step t's snapshot rows go from the row's W
   * (wrow, this thread's) straight into their slot, as the unblocked loop
   * writes them. */
  const sweep_int slot = wrow ? SWEEP_FN(store_slot)(p, t, t0) : -1;
  SWEEP_R *store = slot >= 0 ? (SWEEP_R *)f->store +
                                   slot * SWEEP_EQ_STORE_VALUES * p->slot_shots *
                                       SWEEP_EQ_STORE_CELLS(p) +
                                   shot * SWEEP_EQ_STORE_CELLS(p)
                             : NULL;
  for (sweep_int q = q0; q < q1; ++q) {
    const sweep_int z = SWEEP_NDIM == 3 ? q : 0;
    const sweep_int r0 = SWEEP_NDIM == 3 ? ya : q, r1 = SWEEP_NDIM == 3 ? yb : q + 1;
    for (sweep_int y = r0; y < r1; ++y) {
      const sweep_int srow = store ? SWEEP_FN(store_row)(p, z, y) : -1;
      SWEEP_EQ_FWD_ROW(p, pa, pb, 0, srow >= 0 ? wrow : NULL, z, y);
      if (srow >= 0) SWEEP_FN(store_write_row)(p, store + srow, wrow, z, y);
    }
    /* Receivers record step t and sources add to step t + 1 in the rows just updated. */
    const sweep_int i0 = z * p->stride[0] + r0 * p->stride[1];
    const sweep_int i1 = z * p->stride[0] + r1 * p->stride[1];
    if (rec) {
      const sweep_point *rs = rec + shot * p->n_rec;
      SWEEP_R *out = (SWEEP_R *)f->rec;
      for (sweep_int j = sweep_points_lower(rs, p->n_rec, i0); j < p->n_rec && rs[j].idx < i1;
           ++j) {
        out[(shot * p->n_rec + rs[j].k) * p->nt + t] = SWEEP_EQ_FWD_RECORD(rs[j].idx);
#ifdef SWEEP_EQ_BLOCK_RECORD_EXTRA
        SWEEP_EQ_BLOCK_RECORD_EXTRA(p, f, shot, rs[j].k, rs[j].idx, t);
#endif
      }
    }
    if (src) {
      const sweep_point *sp = src + shot * p->n_src;
      const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
      for (sweep_int j = sweep_points_lower(sp, p->n_src, i0); j < p->n_src && sp[j].idx < i1; ++j)
        SWEEP_EQ_FWD_SOURCE(sp[j].idx, sp[j].idx, amp[(shot * p->n_src + sp[j].k) * p->nt + t]);
    }
  }
}

#if SWEEP_EQ_BLOCK_ADJOINT
/*
 * The adjoint blocked the same way (steps t_end - 1 down to t_begin; step r
 * of the call is t = t_end - 1 - r).  An adjoint step has the forward's
 * shape: it reads the state of step t + 1 within SWEEP_H cells and writes its
 * own cells of the buffers of step t + 2, so the wavefront and its lag are
 * the forward's.  Per row, as the unblocked driver does it: the snapshot
 * correlation (paired as there: the schedule below replays its choice of
 * deferred steps), then the stencil; after the item's rows the source
 * gradients and terms and the residuals of the cells in them.  Each cell
 * sees the same operations in the same order, so the results are bitwise
 * the unblocked ones.
 */
typedef struct {
  const sweep_point *src, *rec;
  const unsigned char *src_rows; /* source_rows's flags (or NULL) */
  const SWEEP_R *store;          /* f->store, or NULL without correlation */
  const sweep_int *slot, *held;  /* per step r: slot of step t and of the held step (or -1) */
  const unsigned char *defer;    /* per step r: 1 when step t leaves its term to t - 1 */
  sweep_int t_end;
} SWEEP_FN(adj_sched);

static inline void SWEEP_FN(adj_blocked_item)(const SWEEP_EQ_PARAMS *p,
                                              const SWEEP_EQ_FIELDS *f, const sweep_blocking *b,
                                              const SWEEP_FN(adj_sched) *a,
                                              const SWEEP_R *const *pa, const SWEEP_R *const *pb,
                                              sweep_int tb, sweep_int shot, sweep_int s,
                                              sweep_int tile, sweep_int k, sweep_int c) {
  const sweep_int h = SWEEP_H;
  const sweep_int grp = k - s * b->lag;
  if (grp < 0 || grp >= b->n_groups) return;
  const sweep_int r = tb + s, t = a->t_end - 1 - r;
  const sweep_int q0 = b->q_lo + grp * b->group;
  const sweep_int q1 = q0 + b->group < b->q_hi ? q0 + b->group : b->q_hi;
  sweep_int ya = 0, yb = 1;
  if (SWEEP_NDIM == 3) {
    const sweep_int lo = tile == 0 ? b->y_lo : b->y_lo + tile * b->tile - s * h;
    const sweep_int hi =
        tile == b->n_ytiles - 1 ? b->y_hi : b->y_lo + (tile + 1) * b->tile - s * h;
    ya = lo + c * b->chunk;
    yb = ya + b->chunk < hi ? ya + b->chunk : hi;
    if (ya >= yb) return;
  }
  const int odd = (int)(r & 1);
  const sweep_int off = shot * p->shot_stride;
  SWEEP_EQ_ADJ_BLOCK_STATE(f, odd, off);
  const sweep_int mc = SWEEP_EQ_STORE_CELLS(p), slot_size = SWEEP_EQ_STORE_VALUES * p->slot_shots * mc;
  const SWEEP_R *store = a->slot[r] >= 0 ? a->store + a->slot[r] * slot_size + shot * mc : NULL;
  const SWEEP_R *held = a->held[r] >= 0 ? a->store + a->held[r] * slot_size + shot * mc : NULL;
  const int defer = a->defer[r];
  const sweep_int slo2 = p->store_lo[2], n_s2 = p->store_hi[2] - slo2;
  const sweep_int rows_per_shot = p->shape[0] * p->shape[1];
  for (sweep_int q = q0; q < q1; ++q) {
    const sweep_int z = SWEEP_NDIM == 3 ? q : 0;
    const sweep_int r0 = SWEEP_NDIM == 3 ? ya : q, r1 = SWEEP_NDIM == 3 ? yb : q + 1;
    for (sweep_int y = r0; y < r1; ++y) {
      const sweep_int base = z * p->stride[0] + y * p->stride[1];
      const sweep_int srow = store || held ? SWEEP_FN(store_row)(p, z, y) : -1;
      if (srow >= 0) {
        const int fixed = a->src_rows && a->src_rows[shot * rows_per_shot + z * p->shape[1] + y];
        SWEEP_EQ_ADJ_CORRELATE(0, base + slo2, store ? store + srow : NULL,
                               held && !fixed ? held + srow : NULL, defer && !fixed, n_s2);
      }
      SWEEP_EQ_ADJ_ROW(p, pa, pb, 0, z, y);
    }
    const sweep_int i0 = z * p->stride[0] + r0 * p->stride[1];
    const sweep_int i1 = z * p->stride[0] + r1 * p->stride[1];
    if (a->src) {
      const sweep_point *sp = a->src + shot * p->n_src;
      for (sweep_int j = sweep_points_lower(sp, p->n_src, i0); j < p->n_src && sp[j].idx < i1;
           ++j) {
        const sweep_int i = sp[j].idx, e = (shot * p->n_src + sp[j].k) * p->nt + t;
        if (f->grad_src) ((SWEEP_R *)f->grad_src)[e] = SWEEP_EQ_ADJ_SOURCE_GRAD(i, i);
        if (SWEEP_EQ_ADJ_GRAD && f->src_amp && t % p->store_every == 0)
          SWEEP_EQ_ADJ_SOURCE_TERM(i, i, ((const SWEEP_R *)f->src_amp)[e]);
      }
    }
    if (a->rec) {
      const sweep_point *rs = a->rec + shot * p->n_rec;
      const SWEEP_R *res = (const SWEEP_R *)f->rec;
      for (sweep_int j = sweep_points_lower(rs, p->n_rec, i0); j < p->n_rec && rs[j].idx < i1;
           ++j)
        SWEEP_EQ_ADJ_RESIDUAL(rs[j].idx, rs[j].idx, res[(shot * p->n_rec + rs[j].k) * p->nt + t]);
    }
  }
}
#define SWEEP_BLOCKED_ITEM_(adj, wrow, t0, tb, shot, s, tile, k, c)                            \
  do {                                                                                        \
    if (adj)                                                                                  \
      SWEEP_FN(adj_blocked_item)(p, f, &b, adj, pa, pb, tb, shot, s, tile, k, c);             \
    else                                                                                      \
      SWEEP_FN(blocked_item)(p, f, &b, src, rec, pa, pb, wrow, t0, tb, shot, s, tile, k, c);  \
  } while (0)
#else
typedef struct {
  int unused;
} SWEEP_FN(adj_sched);
#define SWEEP_BLOCKED_ITEM_(adj, wrow, t0, tb, shot, s, tile, k, c) \
  SWEEP_FN(blocked_item)(p, f, &b, src, rec, pa, pb, wrow, t0, tb, shot, s, tile, k, c)
#endif

/* Stages of a block of nb steps: the last step's last group runs in the last one. */
static inline sweep_int SWEEP_FN(stage_count)(const sweep_blocking *b, sweep_int nb) {
  return b->n_groups + (nb - 1) * b->lag;
}

/* Steps s of a block of nb steps with a plane group in stage k (0 <= k - s lag < n_groups). */
static inline void SWEEP_FN(stage_steps)(const sweep_blocking *b, sweep_int nb, sweep_int k,
                                         sweep_int *s_lo, sweep_int *s_hi) {
  *s_lo = k < b->n_groups ? 0 : (k - b->n_groups + b->lag) / b->lag;
  *s_hi = k / b->lag < nb - 1 ? k / b->lag : nb - 1;
}

/*
 * forward_blocked with a task per (block, y tile) instead of threads sharing
 * every stage: thread i runs tasks i, i + n_threads, ... in order (a block's
 * tiles, then the next block's), each task's stages on its own, so no
 * barrier separates stages.  A task waits only on what it reads or
 * overwrites (forward_blocked's comment gives the dependencies):
 *   - before stage k, the previous tile of its block has finished stage
 *     k - 1 (step s of stage k reads planes step s - 1 wrote up to stage k - 1
 *     and overwrites planes it read up to then);
 *   - before stage 0, the previous block's tiles up to `reach` tiles past its
 *     own are complete (its first step reads, and overwrites, rows the
 *     previous block's last steps computed or read that far up in y).
 * Tiles lean back by h rows per step, so a later step of the previous tile
 * never touches rows of this tile: the previous tile may run ahead freely.
 * Returns 0, having done nothing, when its progress counters get no memory.
 * 3D benchmark (128^3 + CPML 20, order 8, 1 shot, 2 threads), where the
 * shared stages spent 17 % of the time in OpenMP barriers: 6.06-6.34 ->
 * 5.50-5.65 ms per step (best of 6, interleaved; medians 6.8-7.0 -> 5.8-6.3).
 */
static int SWEEP_FN(forward_pipelined)(const SWEEP_EQ_PARAMS *p,
                                       const SWEEP_EQ_FIELDS *f, const sweep_blocking *bp,
                                       const sweep_point *src, const sweep_point *rec,
                                       SWEEP_R *wrows, const SWEEP_FN(adj_sched) *adj,
                                       sweep_int t0, sweep_int n_steps, int n_threads) {
  const sweep_blocking b = *bp;
  const sweep_int T = b.steps, nty = b.n_ytiles;
  const sweep_int n_tasks = (n_steps + T - 1) / T * nty;
  const sweep_int full_stages = SWEEP_FN(stage_count)(&b, T);
  const sweep_int reach = (T * SWEEP_H + b.tile - 1) / b.tile;
  sweep_progress *done = sweep_progress_new(n_tasks);
  if (!done) return 0;
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    const int tid = sweep_thread_num(), nth = sweep_num_threads();
    SWEEP_R *wrow = wrows ? wrows + tid * SWEEP_BLOCK_WROW(p) : NULL;
    for (sweep_int j = tid; j < n_tasks; j += nth) {
      const sweep_int blk = j / nty, tile = j % nty, tb = t0 + blk * T;
      const sweep_int nb = t0 + n_steps - tb < T ? t0 + n_steps - tb : T;
      const sweep_int n_stages = SWEEP_FN(stage_count)(&b, nb);
      if (blk > 0) {
        const sweep_int last = tile + reach < nty - 1 ? tile + reach : nty - 1;
        for (sweep_int t = 0; t <= last; ++t) sweep_wait(&done[(blk - 1) * nty + t], full_stages);
      }
      for (sweep_int k = 0; k < n_stages; ++k) {
        if (tile > 0) sweep_wait(&done[j - 1], k);
        sweep_int s_lo, s_hi;
        SWEEP_FN(stage_steps)(&b, nb, k, &s_lo, &s_hi);
        for (sweep_int shot = 0; shot < p->n_shots; ++shot)
          for (sweep_int s = s_lo; s <= s_hi; ++s)
            for (sweep_int c = 0; c < b.n_chunks; ++c)
              SWEEP_BLOCKED_ITEM_(adj, wrow, t0, tb, shot, s, tile, k, c);
        sweep_publish(&done[j], k + 1);
      }
    }
    if (wrow) sweep_stream_fence();
    sweep_restore_fp(fp_state);
  }
  free(done);
  return 1;
}

static void SWEEP_FN(forward_blocked)(const SWEEP_EQ_PARAMS *p,
                                      const SWEEP_EQ_FIELDS *f, const sweep_point *src,
                                      const sweep_point *rec, SWEEP_R *wrows,
                                      const SWEEP_FN(adj_sched) *adj, sweep_int t0,
                                      sweep_int n_steps, int n_threads) {
  const sweep_blocking b = SWEEP_FN(blocking)(p);
  /* Pipelined when every thread can have a tile (and its counters fit in memory). */
  if (SWEEP_NDIM == 3 && n_threads <= b.n_ytiles &&
      SWEEP_FN(forward_pipelined)(p, f, &b, src, rec, wrows, adj, t0, n_steps, n_threads))
    return;
  const sweep_int T = b.steps;
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_R *wrow = wrows ? wrows + sweep_thread_num() * SWEEP_BLOCK_WROW(p) : NULL;
    /* A team of one (every call of run_by_shot, cpu_skeleton.h) needs no
     * barrier between stages, and libgomp's costs a futex call even then:
     * 2D order 2, one thread, 2 steps in groups of one row, ~300 ns per
     * stage (benchmarks/README.md, issue 19). */
    const int solo = sweep_num_threads() == 1;
    for (sweep_int tb = t0; tb < t0 + n_steps; tb += T) {
      const sweep_int nb = t0 + n_steps - tb < T ? t0 + n_steps - tb : T;
      const sweep_int n_stages = SWEEP_FN(stage_count)(&b, nb);
      for (sweep_int tile = 0; tile < b.n_ytiles; ++tile) {
        for (sweep_int k = 0; k < n_stages; ++k) {
          /* Only the steps s with a plane group in stage k (0 <= k - s lag <
           * n_groups) share the stage out: while the wavefront fills and
           * drains, a split over every step left one thread idle. */
          sweep_int s_lo, s_hi;
          SWEEP_FN(stage_steps)(&b, nb, k, &s_lo, &s_hi);
          const sweep_int ns = s_hi - s_lo + 1;
          const sweep_int n_items = p->n_shots * ns * b.n_chunks;
#pragma omp for schedule(static) nowait
          for (sweep_int item = 0; item < n_items; ++item) {
            const sweep_int c = item % b.n_chunks, s = s_lo + (item / b.n_chunks) % ns;
            SWEEP_BLOCKED_ITEM_(adj, wrow, t0, tb, item / (b.n_chunks * ns), s, tile, k, c);
          }
          if (!solo) {
#pragma omp barrier
          }
        }
      }
    }
    if (wrow) sweep_stream_fence();
    sweep_restore_fp(fp_state);
  }
}
#undef SWEEP_BLOCKED_ITEM_
