/*
 * The CPU time loops every equation shares: the generic skeleton an
 * equation's plug-in (<equation>_cpu_impl.h) specialises with its fields and
 * row bodies.  One specialisation per translation unit (cpu_kernel.c.in:
 * SWEEP_NDIM, SWEEP_ORDER, SWEEP_REAL, SWEEP_REAL_BYTES, SWEEP_SUFFIX).
 *
 * The whole chunk of time steps runs inside one OpenMP parallel region.  Each
 * step is three work-shared phases separated by the implicit barriers of
 * `omp for`: (1) the stencil over rows of (shot, z, y), y tiles of
 * SWEEP_TILE_Y rows streaming through z, (2) sources and receivers per shot,
 * (3) free-surface ghost rows.  Every output element is written by one thread
 * in a fixed order, so results do not depend on the number of threads
 * (bitwise).  The skeleton owns the bookkeeping around the stencil: shots
 * split between threads (run_by_shot), the receiver step buffer, gradient
 * snapshots (store slots and rows, correlations paired over two steps,
 * source rows), boundary saving (band save, CPML replay, reconstruction),
 * free-surface ghosts and, for single-stage leapfrog equations, temporal
 * blocking (cpu_blocking.h).
 *
 * ---------------------------------------------------------------------------
 * Plugging an equation in (the recipe; acoustic_cpu_impl.h is the example)
 * ---------------------------------------------------------------------------
 * 1. Its point arithmetic in one stencil header shared with CUDA (like
 *    cuda/acoustic_stencil.h), type-generic through SWEEP_LD / SWEEP_ST so the
 *    vector rows run it on vectors.  It defines SWEEP_FN, SWEEP_R,
 *    SWEEP_FIRST_AXIS and SWEEP_H, the reach: cells per side that one step
 *    reads (the halo width; order / 2 for a leapfrog equation).
 * 2. Its rows: vector rows on cpu_vec.h (<equation>_cpu_vec.h), scalar rows
 *    with one function per CPML mask (SWEEP_DEFINE_BY_MASK, cpu_rows.h), and
 *    a full row that runs the x segments in memory order, each with its
 *    compile-time mask (SWEEP_MASK_SWITCH, SWEEP_ROW_IN_ORDER).
 * 3. sweep_cy/<equation>_cpu_impl.h: defines SWEEP_EQ_PARAMS / SWEEP_EQ_FIELDS,
 *    includes the stencil, cpu_rows.h and its rows, defines the hooks below
 *    and includes this header.  Then: the equation's name in the list of
 *    sweep_cy/meson.build, entry declarations and a dispatch over the
 *    specialisations (acoustic_cpu.h, acoustic_cpu.c).
 *
 * The hooks are macros, expanded in place (no function pointer in a loop):
 * the declaration hooks declare the equation's own locals, which its other
 * hooks then use by name; the skeleton passes everything of its own as
 * arguments and names no field of any equation.  They expand where the
 * acoustic code used to be written out, so the acoustic kernels compile to
 * the machine code they had before the split; keep an equation's state in
 * plain locals, as the acoustic does: gathered into a struct, the same
 * pointers changed the stack frame and registers of the whole loop.  The CPML
 * profiles a and b of each axis are the skeleton's (pa, pb, from the fields'
 * pml_a, pml_b), handed to the row hooks.  An index i addresses the
 * state pointers in scope (those of all shots, i including the shot's offset
 * off, except in the blocked forward, whose state is one shot's); j is a cell
 * of one shot's grid (the model arrays); the per-shot offset is off.
 *
 * Types and switches
 *   SWEEP_EQ_PARAMS   parameter record.  The skeleton reads the members of
 *                     sweep_acoustic_params (sweep_common.h) by those names:
 *                     shots, grid, plain / model / store ranges, free
 *                     surfaces, band and replay sizes, blocking, simd_rows.
 *   SWEEP_EQ_FIELDS   array record.  The skeleton reads its I/O members by
 *                     the names of sweep_acoustic_fields: pml_a, pml_b,
 *                     src_amp, src_idx, rec, rec_idx, store, grad_src,
 *                     band_idx, band_row, band_u, replay_w, replay_u,
 *                     outer_idx, outer_row, cpml_pos, ring_code.
 *   SWEEP_EQ_FORWARD, SWEEP_EQ_BACKWARD   names of the two entry points.
 *   SWEEP_EQ_SNAP_VALUES  values per cell of a gradient snapshot (default 1;
 *                     see SWEEP_SNAP_STRIDE and SWEEP_WR_PITCH below); boundary
 *                     saving's replay_w holds as many per cell.
 *   SWEEP_EQ_BAND_VALUES  state values per band cell that boundary saving
 *                     keeps in band_u (default 1; see SWEEP_BAND_SLOT).
 *   SWEEP_EQ_RING_VALUES  state values per ring cell that the CPML replay
 *                     keeps in replay_u (default 2 * SWEEP_EQ_BAND_VALUES:
 *                     per band value v, u as value v and psi along the
 *                     cell's axis as value SWEEP_EQ_BAND_VALUES + v).
 *   SWEEP_EQ_RECON_SNAPSHOT  0 (default): boundary saving's reconstruction
 *                     correlates as it goes (SWEEP_EQ_RECON_ROW and
 *                     SWEEP_EQ_RECON_CELL); 1: for an equation whose gradient
 *                     at a cell reads its neighbours' snapshot values, each
 *                     adjoint step first rebuilds its whole snapshot in slot 0
 *                     of f->store (a one-step buffer of the caller's): the
 *                     plain cells from the reconstruction
 *                     (SWEEP_EQ_RECON_SNAP_ROW), the band recomputed
 *                     (SWEEP_EQ_RECON_SNAP_BAND), the CPML from replay_w;
 *                     the step then correlates it as full storage does
 *                     (SWEEP_EQ_ADJ_CORRELATE).
 *   SWEEP_EQ_PAIRED_CORRELATION  1 (default): the adjoint may defer a step's
 *                     correlation to the next step (see the backward
 *                     driver); 0: every step correlates its own snapshots
 *                     (held is NULL and skip 0), for an equation whose
 *                     gradient at a row reads the state of neighbour rows.
 *   SWEEP_EQ_ROW_SCRATCH  values per cell of a per-thread scratch row,
 *                     eq_scratch (SWEEP_R *, shape[2] times that many
 *                     values, or NULL when out of memory), in scope of the
 *                     row hooks of both loops (default 0: none); for rows
 *                     that pass per-cell values from one sweep to the next.
 *   SWEEP_EQ_PHASES   half-step phases per time step (default 1).  More than
 *                     one selects the phased loops of cpu_phased.h (which
 *                     lists their hooks) in place of the drivers below.
 *   SWEEP_EQ_BLOCKING 1: forward steps that store nothing may be blocked in
 *                     time (cpu_blocking.h).  Only for one leapfrog stage per
 *                     step, of reach SWEEP_H, that writes step n + 1 over the
 *                     buffers of step n - 1; 0 otherwise (a staggered system
 *                     of two half steps needs phases in the blocking first).
 *   SWEEP_EQ_BLOCK_STORE 1: the storing forward (f->store) is blocked too,
 *                     each row's snapshot values (the row hook's wr) going
 *                     into their slot right after the row (default 0).
 *   SWEEP_EQ_BLOCK_ADJOINT 1: adjoint calls without boundary saving or free
 *                     surface are blocked too (default 0); the adjoint must
 *                     have the forward's shape (state of step t + 1 read
 *                     within SWEEP_H, own cells of step t + 2's buffers
 *                     written), and SWEEP_EQ_ADJ_BLOCK_STATE is defined.
 *
 * Declarations (each expands to declarations and statements)
 *   SWEEP_EQ_MODEL(f)          once per call, before the parallel region:
 *                              the model arrays (read-only, shared).
 *   SWEEP_EQ_FWD_STATE(f)      per thread: the state of the first step, all
 *                              shots (what rotates every step).
 *   SWEEP_EQ_ADJ_STATE(f)      the same for the adjoint (with the state a
 *                              boundary-saving reconstruction runs backwards).
 *   SWEEP_EQ_FWD_SHOT(f, off)  per work item: what the rows of the shot at
 *   SWEEP_EQ_ADJ_SHOT(f, off)  element offset off need (per-axis pointers).
 *   SWEEP_EQ_ADJ_BLOCK_STATE(f, odd, off)  blocked adjoint only: the model,
 *                              the adjoint state of one shot (offset by off)
 *                              after odd / even rotations and the gradient,
 *                              named as the adjoint hooks use them (their
 *                              off is then 0).
 *   SWEEP_EQ_BLOCK_STATE(f, odd, off)  blocked forward only: the model and
 *                              the state of one shot (offset by off) after
 *                              an odd (1) or even (0) number of rotations.
 *
 * Statements
 *   SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y)  forward step of row (z, y),
 *                              all x, each segment with its CPML mask; the
 *                              snapshot value W of each cell to wr[x] unless
 *                              wr is NULL (one value per cell: the store,
 *                              band and replay buffers hold one).
 *   SWEEP_EQ_FWD_EDGE_ROW(p, pa, pb, off, wr, z, y)  the same, only the
 *                              x-CPML segments (the CPML replay).
 *   SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y)  adjoint step of row (z, y).
 *   SWEEP_EQ_ADJ_CORRELATE(off, o, st, held, skip, n)  the model gradient of
 *                              the n cells at o (a cell of one shot's grid)
 *                              from this step's snapshot row st (or NULL;
 *                              skip: leave it to the next step) and held, a
 *                              deferred row of step t + 1 (or NULL).  Runs
 *                              before the row's adjoint step, so it can still
 *                              read the state that step overwrites.
 *   SWEEP_EQ_FWD_ROTATE(), SWEEP_EQ_ADJ_ROTATE()  the state after a step.
 *   SWEEP_EQ_FWD_GHOSTS(p), SWEEP_EQ_ADJ_GHOSTS(p, recon)  fill the ghost
 *                              rows of free surfaces (fill_ghosts) in the
 *                              fields that need them.
 *   SWEEP_EQ_SHIFT_SHOTS(f, fo, g)  sub_problem: g's arrays of shots (its
 *                              wavefields and gradients) advanced by fo
 *                              elements (SWEEP_OFF); the skeleton does the
 *                              I/O members.
 *
 * Sources, receivers and gradients (expressions on one cell)
 *   SWEEP_EQ_FWD_RECORD(i)     what receivers record, after the step's rows.
 *   SWEEP_EQ_FWD_RECORD_EXTRA(p, f, shot, off, t)  optional: records further
 *                              outputs of step t of the shot at off (into f's
 *                              arrays of slot_shots shots, unbuffered); runs
 *                              after the receivers when f->rec is set.  The
 *                              blocked forward calls, when defined,
 *   SWEEP_EQ_BLOCK_RECORD_EXTRA(p, f, shot, k, i, t)  instead, per receiver
 *                              k of the shot (state index i).
 *   SWEEP_EQ_FWD_SOURCE(i, j, a)  adds amplitude a to the new state.
 *   SWEEP_EQ_GRAD(f)           the model gradient output, NULL when not wanted
 *                              (the call then correlates no snapshot).
 *   SWEEP_EQ_ADJ_GRAD          the same, in the parallel region.
 *   SWEEP_EQ_ADJ_RESIDUAL(i, j, r)  adds the residual r of a receiver.
 *   SWEEP_EQ_ADJ_SOURCE_GRAD(i, j)  the gradient of a source amplitude (j: the
 *                              cell in one shot's grid, for the model arrays).
 *   SWEEP_EQ_ADJ_SOURCE_TERM(i, j, a)  the model gradient's term of a source of
 *                              amplitude a (sampled like the snapshots).
 *
 * Boundary saving (an equation without it: SWEEP_EQ_RECON(f) 0, the others
 * ((void)0))
 *   SWEEP_EQ_FWD_SAVED(off, v) the field whose band cells the forward saves
 *                              as band_u's value v (< SWEEP_EQ_BAND_VALUES),
 *                              of the shot at off.
 *   SWEEP_EQ_FWD_LOAD_BAND(i, v, x)  CPML replay: the saved value x into
 *                              cell i of state value v's field.
 *   SWEEP_EQ_FWD_RING(off, v, d)  CPML replay: the field whose ring cells
 *                              (the stored cells outside the model that a
 *                              band cell's stencil reads, each outside along
 *                              one axis d; SWEEP_RING_RUNS, CUDA's ring_code)
 *                              it keeps as replay_u's value v
 *                              (< SWEEP_EQ_RING_VALUES) at the start of each
 *                              step, after the band's load.
 *   SWEEP_EQ_RECON(f)          1 when this adjoint call reconstructs the
 *                              forward wavefield.
 *   SWEEP_EQ_RECON_ROW(p, off, base)  reconstruction (one step backwards)
 *                              and correlation of the plain x range of a row
 *                              plain in z and y (base: its first cell).
 *   SWEEP_EQ_RECON_SNAP_ROW(p, pa, pb, off, z, y, st, vs)  with
 *                              SWEEP_EQ_RECON_SNAPSHOT 1, in place of
 *                              SWEEP_EQ_RECON_ROW (a no-op then): one step
 *                              backwards of the plain x range of row (z, y),
 *                              plain in z and y, writing the snapshot value
 *                              v of its cell x to st[x - store_lo[2] + v * vs].
 *   SWEEP_EQ_RECON_LOAD_RING(i, v, d, x)  at the start of each adjoint step
 *                              t, the replay's value v of ring cell i (axis
 *                              d) at step t into the reconstruction, where
 *                              the band's hooks read it.
 *   SWEEP_EQ_RECON_BAND(p, off, base, z, y, x0, x1, mask)
 *                              SWEEP_EQ_RECON_SNAPSHOT 0: the correlation of
 *                              the band cells [x0, x1) of row (z, y) (base:
 *                              its first cell; mask: their CPML axes) with
 *                              their W^t, recomputed from the reconstruction
 *                              (plain cells), the band's u^t and the loaded
 *                              ring; after the row's adjoint step.  The
 *                              band's state of step t - 1 comes from band_u
 *                              (SWEEP_EQ_RECON_LOAD_BAND).
 *   SWEEP_EQ_RECON_SNAP_BAND(p, off, base, z, y, x0, x1, mask, st, vs)  with
 *                              SWEEP_EQ_RECON_SNAPSHOT 1, the same as
 *                              snapshot values, to st as
 *                              SWEEP_EQ_RECON_SNAP_ROW writes them.
 *   SWEEP_EQ_RECON_CELL(i, w, vs)  the model gradient at CPML cell i from
 *                              its snapshot of the CPML replay: its value v
 *                              is w[v * vs].  Expanded in an omp simd loop
 *                              over a run of consecutive cells
 *                              (SWEEP_CPML_RUNS): it must touch cell i only.
 *   SWEEP_EQ_RECON_SOURCE(i, j, a)  removes a source from the
 *                              reconstructed state.
 *   SWEEP_EQ_RECON_LOAD_BAND(i, v, x)  the saved band value x into state
 *                              value v's field of the reconstructed state.
 *
 * The next equations, in these terms.  VRZ (variable density,
 * vrz_cpu_impl.h): the acoustic state hooks, K and B in SWEEP_EQ_MODEL, 2 +
 * ndim values per cell of a forward row and a compact store record
 * (SWEEP_EQ_STORE_CELLS, SWEEP_EQ_FWD_STORE), and a gradient that reads neighbour rows
 * (SWEEP_EQ_PAIRED_CORRELATION 0; boundary saving then rebuilds each step's
 * snapshot, SWEEP_EQ_RECON_SNAPSHOT 1).  Born (LSRTM) is lsrtm_cpu_impl.h: both
 * fields in the state declarations and the rotations, the rows updating both,
 * two snapshot values, SWEEP_EQ_FWD_RECORD reading u1 and
 * SWEEP_EQ_FWD_RECORD_EXTRA the background u0; boundary saving keeps both
 * fields of the band (SWEEP_EQ_BAND_VALUES 2) and runs both backwards.  A
 * non-reversible update (conductivity) defines SWEEP_EQ_RECON(f) 0 and
 * declares itself not reversible.  Elastic, Maxwell: the second
 * half step of a row
 * reads neighbour rows of the first, so the two cannot share one row hook:
 * they declare SWEEP_EQ_PHASES > 1 and get the phased time loops of
 * cpu_phased.h (a work-shared row loop per phase, a barrier between
 * phases) in place of the drivers below; SWEEP_EQ_BLOCKING 0.
 *
 * What the skeleton still assumes of every equation: one CPML mask per x
 * segment and the plain / CPML split of the acoustic grid (plain_lo/hi), one
 * snapshot layout of boundary saving (values outermost, as in the store),
 * receivers and sources at single cells,
 * with pairing the snapshot pairing of a leapfrog adjoint (step t's adjoint
 * state still readable at step t - 1, see the backward driver), one stage
 * per step (the rows of a step run in one work-shared loop), and the
 * one-stage leapfrog of cpu_blocking.h where SWEEP_EQ_BLOCKING is 1.
 */

/* Snapshot values per cell and step (SWEEP_EQ_SNAP_VALUES, default 1): one
 * slot holds value v of shot s at (v * slot_shots + s) * store_cells, so the
 * correlate hook finds value v at st + v * SWEEP_SNAP_STRIDE(p); the forward
 * row hook writes value v of cell x to wr[x + v * SWEEP_WR_PITCH(p)]. */
#ifndef SWEEP_EQ_SNAP_VALUES
#define SWEEP_EQ_SNAP_VALUES 1
#endif
/* Half-step phases per time step (cpu_phased.h when more than one). */
#ifndef SWEEP_EQ_PHASES
#define SWEEP_EQ_PHASES 1
#endif
#ifndef SWEEP_EQ_PAIRED_CORRELATION
#define SWEEP_EQ_PAIRED_CORRELATION 1
#endif
#ifndef SWEEP_EQ_ROW_SCRATCH
#define SWEEP_EQ_ROW_SCRATCH 0
#endif
/* 1: a storing forward (f->store) may be blocked in time too, each step's
 * snapshot rows written from inside the wavefront (cpu_blocking.h). */
#ifndef SWEEP_EQ_BLOCK_STORE
#define SWEEP_EQ_BLOCK_STORE 0
#endif
/* 1: adjoint steps without boundary saving or free surface may be blocked in
 * time (cpu_blocking.h); the equation then defines
 * SWEEP_EQ_ADJ_BLOCK_STATE(f, odd, off), the adjoint's SWEEP_EQ_BLOCK_STATE
 * (with what its adjoint hooks name, for one shot at offset off). */
#ifndef SWEEP_EQ_BLOCK_ADJOINT
#define SWEEP_EQ_BLOCK_ADJOINT 0
#endif
#ifndef SWEEP_EQ_RECON_SNAPSHOT
#define SWEEP_EQ_RECON_SNAPSHOT 0
#define SWEEP_EQ_RECON_SNAP_ROW(p, pa, pb, off, z, y, st, vs) ((void)(off), (void)(st))
#endif
#define SWEEP_SNAP_STRIDE(p) ((p)->slot_shots * SWEEP_FN(store_cells)(p))
/* The store's own layout, where it is not SWEEP_EQ_SNAP_VALUES values of
 * every stored cell (an equation with a compact snapshot, VRZ's): one slot
 * holds SWEEP_EQ_STORE_VALUES blocks of slot_shots records of
 * SWEEP_EQ_STORE_CELLS(p) elements, the one of shot s at s times that in its
 * block; the row of a record is at store_row of it.  The equation then
 * defines SWEEP_EQ_FWD_STORE(p, dst, wr, z, y, outer), which writes the row
 * (z, y) of the record (dst: its row) from the forward row's values wr, and
 * SWEEP_EQ_RECON_SNAP_CPML(p, st, m, j, n, rw, vs, ovs), which puts the CPML
 * replay's values of the n outer cells from j (value v at rw[v * ovs + j])
 * into the record st of boundary saving's one-step snapshot (m: the first
 * cell's index in store_row terms; vs: SWEEP_SNAP_STRIDE). */
#ifndef SWEEP_EQ_STORE_VALUES
#define SWEEP_EQ_STORE_VALUES SWEEP_EQ_SNAP_VALUES
#define SWEEP_EQ_STORE_CELLS(p) SWEEP_FN(store_cells)(p)
#define SWEEP_EQ_RECON_SNAP_CPML(p, st, m, j, n, rw, vs, ovs)   \
  for (int v = 0; v < SWEEP_EQ_SNAP_VALUES; ++v)                  \
    for (sweep_int x = 0; x < (n); ++x) (st)[v * (vs) + (m) + x] = (rw)[v * (ovs) + (j) + x]
#endif
#define SWEEP_WR_PITCH(p) ((p)->shape[2])
/* Boundary saving keeps per step SWEEP_EQ_BAND_VALUES state values of each
 * band cell (band_u); the CPML replay SWEEP_EQ_SNAP_VALUES snapshot values
 * of each outer cell (replay_w) and SWEEP_EQ_RING_VALUES state values of each
 * ring cell (replay_u), laid out as the store: value v of shot s and cell j
 * at (v * slot_shots + s) * cells + j of the step's slot. */
#ifndef SWEEP_EQ_BAND_VALUES
#define SWEEP_EQ_BAND_VALUES 1
#endif
#define SWEEP_BAND_SLOT(p, values, cells) ((values) * (p)->slot_shots * (cells))
/* The CPML replay keeps per step SWEEP_EQ_RING_VALUES state values of each
 * ring cell (replay_u, laid out as band_u): by default, per band value v, u
 * (value v) and psi along the cell's axis (value SWEEP_EQ_BAND_VALUES + v). */
#ifndef SWEEP_EQ_RING_VALUES
#define SWEEP_EQ_RING_VALUES (2 * SWEEP_EQ_BAND_VALUES)
#endif
#ifndef SWEEP_EQ_RECON_BAND
#define SWEEP_EQ_RECON_BAND(p, off, base, z, y, x0, x1, mask) ((void)(base))
#endif
#ifndef SWEEP_EQ_RECON_SNAP_BAND
#define SWEEP_EQ_RECON_SNAP_BAND(p, off, base, z, y, x0, x1, mask, st, vs) \
  ((void)(base), (void)(st))
#endif

/* Cells per shot of a gradient snapshot: [store_lo, store_hi), the model and
 * its CPML (every cell whose coefficients derive from the model). */
static inline sweep_int SWEEP_FN(store_cells)(const SWEEP_EQ_PARAMS *p) {
  return (p->store_hi[0] - p->store_lo[0]) * (p->store_hi[1] - p->store_lo[1]) *
         (p->store_hi[2] - p->store_lo[2]);
}

/* Offset of row (z, y) in a compact snapshot, or -1 when the row is outside
 * the stored cells. */
static inline sweep_int SWEEP_FN(store_row)(const SWEEP_EQ_PARAMS *p, sweep_int z,
                                            sweep_int y) {
  if (z < p->store_lo[0] || z >= p->store_hi[0] || y < p->store_lo[1] || y >= p->store_hi[1])
    return -1;
  const sweep_int m1 = p->store_hi[1] - p->store_lo[1], m2 = p->store_hi[2] - p->store_lo[2];
  return ((z - p->store_lo[0]) * m1 + (y - p->store_lo[1])) * m2;
}

/* Index in a compact snapshot of the cell at flat index i of one shot's
 * padded grid (a stored cell). */
static inline sweep_int SWEEP_FN(store_index)(const SWEEP_EQ_PARAMS *p, sweep_int i) {
  const sweep_int z = p->shape[0] > 1 ? i / p->stride[0] : 0;
  const sweep_int r = i - z * p->stride[0];
  return SWEEP_FN(store_row)(p, z, r / p->stride[1]) + r % p->stride[1] - p->store_lo[2];
}

/* Slot of step t in a snapshot chunk whose first step is t0, or -1 when t is
 * not a sampled step (t % store_every != 0). */
static inline sweep_int SWEEP_FN(store_slot)(const SWEEP_EQ_PARAMS *p, sweep_int t,
                                             sweep_int t0) {
  const sweep_int k = p->store_every > 0 ? p->store_every : 1;
  if (t % k) return -1;
  return t / k - (t0 + k - 1) / k;
}

/* The cells of row segment [lo, hi) outside the plain cells: [lo, *a) and
 * [*b, hi); all of it when the row is outside the plain cells in z or y
 * (outer).  On models narrower than a halo the plain range reaches past hi,
 * hence the clamp; the band and outer indices (sweep/_grid.py) count the
 * same cells. */
static inline void SWEEP_FN(row_ends)(const SWEEP_EQ_PARAMS *p, sweep_int hi, int outer,
                                      sweep_int *a, sweep_int *b) {
  *a = outer || p->plain_lo[2] > hi ? hi : p->plain_lo[2];
  *b = outer || p->plain_hi[2] < *a ? hi : p->plain_hi[2];
}

/* The band cells of row (z, y) (band_idx's cells of the row; none outside
 * the model rows) in runs of one CPML mask: BAND(x0, x1, mask) for each run
 * [x0, x1), mask the CPML axes of its cells as the forward's row segments
 * have them (x's bit outside [plain_lo, plain_hi), clamped to the model). */
#define SWEEP_BAND_RUNS(p, z, y, BAND)                                                           \
  do {                                                                                           \
    if ((z) >= (p)->model_lo[0] && (z) < (p)->model_hi[0] && (y) >= (p)->model_lo[1] &&         \
        (y) < (p)->model_hi[1]) {                                                                \
      const int m_ = SWEEP_FN(row_mask)(p, z, y);                                                \
      const sweep_int lo_ = (p)->model_lo[2], hi_ = (p)->model_hi[2];                            \
      const sweep_int a_ = (p)->plain_lo[2] < lo_ ? lo_ : (p)->plain_lo[2] > hi_ ? hi_ : (p)->plain_lo[2]; \
      const sweep_int b_ = (p)->plain_hi[2] < a_ ? a_ : (p)->plain_hi[2] > hi_ ? hi_ : (p)->plain_hi[2]; \
      if (lo_ < a_) BAND(lo_, a_, m_ | 4);                                                       \
      if (m_ && a_ < b_) BAND(a_, b_, m_);                                                       \
      if (b_ < hi_) BAND(b_, hi_, m_ | 4);                                                       \
    }                                                                                            \
  } while (0)

/* The ring (sweep/_grid.py's ring_idx: stored cells outside the model
 * within a halo of it along one axis d and inside it along the others) as
 * strips: RING(base, x0, x1, d) for each run [x0, x1) of row base (its
 * first cell), in ascending flat order, so the k-th cell of the runs is
 * ring cell k.  Rows outside the model in z or y are whole model-width runs,
 * model rows two runs of at most a halo at the x ends: copied as strips,
 * not gathered cell by cell through an index. */
#define SWEEP_RING_RUNS(p, RING)                                                                 \
  do {                                                                                           \
    sweep_int rlo_[3], rhi_[3];                                                                  \
    for (int d_ = 0; d_ < 3; ++d_) {                                                             \
      const sweep_int a_ = (p)->model_lo[d_] - SWEEP_H, b_ = (p)->model_hi[d_] + SWEEP_H;        \
      rlo_[d_] = a_ > (p)->store_lo[d_] ? a_ : (p)->store_lo[d_];                                \
      rhi_[d_] = b_ < (p)->store_hi[d_] ? b_ : (p)->store_hi[d_];                                \
    }                                                                                            \
    const sweep_int mlo_ = (p)->model_lo[2], mhi_ = (p)->model_hi[2];                           \
    for (sweep_int z_ = rlo_[0]; z_ < rhi_[0]; ++z_)                                             \
      for (sweep_int y_ = rlo_[1]; y_ < rhi_[1]; ++y_) {                                         \
        const int oz_ = z_ < (p)->model_lo[0] || z_ >= (p)->model_hi[0];                         \
        const int oy_ = y_ < (p)->model_lo[1] || y_ >= (p)->model_hi[1];                         \
        const sweep_int rb_ = z_ * (p)->stride[0] + y_ * (p)->stride[1];                         \
        if (oz_ && oy_) continue;                                                                \
        if (oz_ || oy_) {                                                                        \
          { RING(rb_, mlo_, mhi_, oz_ ? 0 : 1); }                                                \
        } else {                                                                                 \
          if (rlo_[2] < mlo_) { RING(rb_, rlo_[2], mlo_, 2); }                                   \
          if (mhi_ < rhi_[2]) { RING(rb_, mhi_, rhi_[2], 2); }                                   \
        }                                                                                        \
      }                                                                                          \
  } while (0)

/* Calls BAND(base, x0, x1) for the band cells of each model row (base: its
 * first cell) in band_idx order: strips, as SWEEP_RING_RUNS. */
#define SWEEP_BAND_STRIPS(p, BAND)                                                               \
  do {                                                                                           \
    for (sweep_int z_ = (p)->model_lo[0]; z_ < (p)->model_hi[0]; ++z_)                          \
      for (sweep_int y_ = (p)->model_lo[1]; y_ < (p)->model_hi[1]; ++y_) {                       \
        const sweep_int sb_ = z_ * (p)->stride[0] + y_ * (p)->stride[1];                         \
        const sweep_int slo_ = (p)->model_lo[2], shi_ = (p)->model_hi[2];                        \
        sweep_int sa_, sc_;                                                                      \
        SWEEP_FN(row_ends)(p, shi_, SWEEP_FN(row_mask)(p, z_, y_), &sa_, &sc_);                  \
        if (sa_ > slo_) { BAND(sb_, slo_, sa_); }                                                \
        if (sc_ < shi_) { BAND(sb_, sc_ > slo_ ? sc_ : slo_, shi_); }                            \
      }                                                                                          \
  } while (0)

/* Copies the snapshot values (W) of the outer cells of row (z, y) from wr to
 * dst, in outer_idx order (value v: from wr + v * SWEEP_WR_PITCH(p) to
 * dst + v * vs). */
static inline void SWEEP_FN(copy_outer_row)(const SWEEP_EQ_PARAMS *p, SWEEP_R *dst,
                                            const SWEEP_R *wr, int outer, sweep_int vs) {
  const sweep_int lo = p->store_lo[2], hi = p->store_hi[2];
  sweep_int a, b;
  SWEEP_FN(row_ends)(p, hi, outer, &a, &b);
  for (int v = 0; v < SWEEP_EQ_SNAP_VALUES; ++v) {
    SWEEP_R *d = dst + v * vs;
    const SWEEP_R *w = wr + v * SWEEP_WR_PITCH(p);
    sweep_int k = 0;
    for (sweep_int x = lo; x < a; ++x, ++k) d[k] = w[x];
    for (sweep_int x = b; x < hi; ++x, ++k) d[k] = w[x];
  }
}

/* Work items are (shot, tile of SWEEP_TILE_Y rows in y); each streams through
 * z so the planes a 3D stencil reads stay in cache. */
#define SWEEP_TILE_Y 8
#define SWEEP_N_TILES(p) (((p)->shape[1] - 2 * SWEEP_H + SWEEP_TILE_Y - 1) / SWEEP_TILE_Y)
/* Declares the shot and the rows [y0, y1) of work item `item` (p and h in scope). */
#define SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1)                                      \
  const sweep_int shot = (item) / (n_tiles);                                              \
  const sweep_int y0 = h + ((item) % (n_tiles)) * SWEEP_TILE_Y;                           \
  const sweep_int y1 = y0 + SWEEP_TILE_Y < p->shape[1] - h ? y0 + SWEEP_TILE_Y : p->shape[1] - h
#define SWEEP_Z_BEGIN (SWEEP_NDIM == 3 ? SWEEP_H : 0)
#define SWEEP_Z_END(p) (SWEEP_NDIM == 3 ? (p)->shape[0] - SWEEP_H : 1)

/* Odd mirror of a field into the ghost rows of every free surface (the
 * equation's ghost hooks say which fields). */
static __attribute__((unused)) void SWEEP_FN(fill_ghosts)(const SWEEP_EQ_PARAMS *p, SWEEP_R *field) {
  const sweep_int h = SWEEP_H;
  for (int d = 3 - SWEEP_NDIM; d < 3; ++d) {
    for (int side = 0; side < 2; ++side) {
      if (!(side ? p->free_hi[d] : p->free_lo[d])) continue;
      /* The surface is the row next to the ghosts; ghost g mirrors surface +- (surface - g). */
      const sweep_int surface = side ? p->shape[d] - 1 - h : h;
      const sweep_int g0 = side ? p->shape[d] - h : 0;
      const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
      const sweep_int n1 = p->shape[e1], n2 = p->shape[e2];
      const sweep_int n_items = p->n_shots * h * n1;
#pragma omp for schedule(static)
      for (sweep_int item = 0; item < n_items; ++item) {
        const sweep_int shot = item / (h * n1);
        const sweep_int g = g0 + (item / n1) % h;
        const sweep_int j1 = item % n1;
        const sweep_int mirror = 2 * surface - g;
        SWEEP_R *f = field + shot * p->shot_stride + j1 * p->stride[e1];
        for (sweep_int j2 = 0; j2 < n2; ++j2) {
          const sweep_int o = j2 * p->stride[e2];
          f[o + g * p->stride[d]] = -f[o + mirror * p->stride[d]];
        }
      }
    }
  }
}

static inline int SWEEP_FN(has_free_surface)(const SWEEP_EQ_PARAMS *p) {
  for (int d = 0; d < 3; ++d)
    if (p->free_lo[d] || p->free_hi[d]) return 1;
  return 0;
}

#if SWEEP_EQ_BLOCKING
#include "cpu_blocking.h"
#endif

/*
 * Receiver data are (shot, receiver, step): one step's receivers are a cache
 * line (and often a page) apart.  The unblocked loops keep the last
 * SWEEP_REC_STEPS steps in a (shot, step, receiver) buffer instead and move
 * them as runs of steps (2D 300 x 1000, 5,000 receivers per shot: 209-215 ->
 * 175-191 us per step).  NULL (direct access) when there are no receivers or no memory.
 */
#define SWEEP_REC_STEPS 32
static __attribute__((unused)) SWEEP_R *SWEEP_FN(receiver_buffer)(const SWEEP_EQ_PARAMS *p,
                                          const SWEEP_EQ_FIELDS *f) {
  if (!f->rec || p->n_rec <= 0) return NULL;
  return (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->n_shots * SWEEP_REC_STEPS * p->n_rec);
}

/*
 * Boundary saving's CPML cells (cpml_pos: positions in outer_idx) as runs of
 * cells consecutive both in one row of the field and in outer_idx, so their
 * per-step loops run over strips (and vectorise) instead of going cell by
 * cell through the two index arrays.  cpml_run: the run from entry q (its
 * first cell *i0, position *j0); returns its length.
 */
static inline sweep_int SWEEP_FN(cpml_run)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                           sweep_int q, sweep_int *i0, sweep_int *j0) {
  const sweep_int j = f->cpml_pos[q], i = f->outer_idx[j], row = i / p->stride[1];
  sweep_int n = 1;
  while (q + n < p->n_cpml && f->cpml_pos[q + n] == j + n && f->outer_idx[j + n] == i + n &&
         (i + n) / p->stride[1] == row)
    ++n;
  *i0 = i;
  *j0 = j;
  return n;
}

/* Every run, as (i0, j0, n) triples (*n_runs of them); NULL when there are
 * none or no memory (SWEEP_CPML_RUNS then finds them as it goes). */
static __attribute__((unused)) sweep_int *SWEEP_FN(cpml_runs)(const SWEEP_EQ_PARAMS *p,
                                                               const SWEEP_EQ_FIELDS *f,
                                                               sweep_int *n_runs) {
  *n_runs = 0;
  if (!f->replay_w || !f->cpml_pos || p->n_cpml <= 0) return NULL;
  sweep_int n = 0, i0, j0;
  for (sweep_int q = 0; q < p->n_cpml; ++n) q += SWEEP_FN(cpml_run)(p, f, q, &i0, &j0);
  sweep_int *r = (sweep_int *)malloc(sizeof(sweep_int) * 3 * n);
  if (!r) return NULL;
  for (sweep_int q = 0, k = 0; k < n; ++k) {
    r[3 * k + 2] = SWEEP_FN(cpml_run)(p, f, q, r + 3 * k, r + 3 * k + 1);
    q += r[3 * k + 2];
  }
  *n_runs = n;
  return r;
}

/* Calls RUN(i0, j0, n) for each run of CPML cells, from the table runs
 * (n_runs entries) or, when it is NULL, found as it goes. */
#define SWEEP_CPML_RUNS(p, f, runs, n_runs, RUN)                                        \
  for (sweep_int r_ = 0, q_ = 0; (runs) ? r_ < (n_runs) : q_ < (p)->n_cpml; ++r_) {      \
    sweep_int i0_, j0_, n_;                                                              \
    if (runs) {                                                                          \
      i0_ = (runs)[3 * r_];                                                              \
      j0_ = (runs)[3 * r_ + 1];                                                          \
      n_ = (runs)[3 * r_ + 2];                                                           \
    } else {                                                                             \
      n_ = SWEEP_FN(cpml_run)(p, f, q_, &i0_, &j0_);                                     \
      q_ += n_;                                                                          \
    }                                                                                    \
    RUN(i0_, j0_, n_)                                                                    \
  }

/*
 * Shots are independent, so when the threads divide them evenly (one thread
 * included) each thread runs whole shots, one single-shot call each
 * (sub_problem: the same call restricted to shots [shot0, shot0 + n)), with
 * no barrier per step and the working set of one shot.  Measured on 2
 * threads, 2D 300 x 1000, 4 shots, full storage gradient: 1.01-1.05 s ->
 * 0.92-0.98 s against all threads sharing every step.
 */
static inline int SWEEP_FN(split_by_shot)(const SWEEP_EQ_PARAMS *p, int n_threads) {
  return p->n_shots > 1 && p->n_shots % n_threads == 0;
}

static void SWEEP_FN(sub_problem)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                  sweep_int shot0, sweep_int n, SWEEP_EQ_PARAMS *q,
                                  SWEEP_EQ_FIELDS *g) {
  *q = *p;
  *g = *f;
  q->n_shots = n;
  const sweep_int fo = shot0 * p->shot_stride;
  SWEEP_EQ_SHIFT_SHOTS(f, fo, g);
  g->src_amp = SWEEP_OFF(f->src_amp, shot0 * p->n_src * p->nt);
  g->grad_src = SWEEP_OFF(f->grad_src, shot0 * p->n_src * p->nt);
  g->rec = SWEEP_OFF(f->rec, shot0 * p->n_rec * p->nt);
  g->store = SWEEP_OFF(f->store, shot0 * SWEEP_EQ_STORE_CELLS(p));
  g->band_u = SWEEP_OFF(f->band_u, shot0 * p->n_band);
  g->replay_w = SWEEP_OFF(f->replay_w, shot0 * p->n_outer);
  g->replay_u = SWEEP_OFF(f->replay_u, shot0 * p->n_ring);
  g->src_idx = f->src_idx ? f->src_idx + shot0 * p->n_src : NULL;
  g->rec_idx = f->rec_idx ? f->rec_idx + shot0 * p->n_rec : NULL;
}

typedef void (*SWEEP_FN(run_fn))(const SWEEP_EQ_PARAMS *, const SWEEP_EQ_FIELDS *,
                                 sweep_int, sweep_int, int);

static void SWEEP_FN(run_by_shot)(SWEEP_FN(run_fn) run, const SWEEP_EQ_PARAMS *p,
                                  const SWEEP_EQ_FIELDS *f, sweep_int t, sweep_int n_steps,
                                  int n_threads) {
#pragma omp parallel for num_threads(n_threads) schedule(static)
  for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
    SWEEP_EQ_PARAMS q;
    SWEEP_EQ_FIELDS g;
    SWEEP_FN(sub_problem)(p, f, shot, 1, &q, &g);
    run(&q, &g, t, n_steps, 1);
  }
}

#if SWEEP_EQ_PHASES > 1
#include "cpu_phased.h"
#else
void SWEEP_EQ_FORWARD(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f, sweep_int t0,
                      sweep_int n_steps, int n_threads) {
  if (SWEEP_FN(split_by_shot)(p, n_threads)) {
    SWEEP_FN(run_by_shot)(SWEEP_EQ_FORWARD, p, f, t0, n_steps, n_threads);
    return;
  }
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int mc = SWEEP_EQ_STORE_CELLS(p);
  const sweep_int mlo2 = p->model_lo[2];
  const sweep_int slo2 = p->store_lo[2], s2 = p->store_hi[2] - p->store_lo[2];
  /* CPML replay: band_u is an input (loaded into the state each step), W of
   * the outer cells goes to replay_w and the ring's state to replay_u;
   * otherwise band_u receives the band's state. */
  const int replay = f->replay_w != NULL;
  const sweep_int n_band = f->band_idx ? p->n_band : 0;
  const sweep_int n_save = replay ? 0 : n_band;
  const sweep_int n_ring = replay && f->replay_u && f->ring_code ? p->n_ring : 0;
  const int free_surface = SWEEP_FN(has_free_surface)(p);
#if SWEEP_EQ_BLOCKING
  if (p->block_steps > 1 && (!f->store || SWEEP_EQ_BLOCK_STORE) && !n_band && !replay &&
      !free_surface) {
    sweep_point *src = f->src_amp ? sweep_sorted_points(f->src_idx, p->n_shots, p->n_src) : NULL;
    sweep_point *rec = f->rec ? sweep_sorted_points(f->rec_idx, p->n_shots, p->n_rec) : NULL;
    /* A storing forward: each thread's row of W (cpu_blocking.h). */
    SWEEP_R *wrows = f->store ? (SWEEP_R *)malloc(sizeof(SWEEP_R) * n_threads *
                                                  SWEEP_BLOCK_WROW(p))
                              : NULL;
    const int ok = (src || !f->src_amp || p->n_src == 0) && (rec || !f->rec || p->n_rec == 0) &&
                   (wrows || !f->store);
    if (ok) SWEEP_FN(forward_blocked)(p, f, src, rec, wrows, NULL, t0, n_steps, n_threads);
    free(src);
    free(rec);
    free(wrows);
    if (ok) return;
  }
#endif
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
  SWEEP_R *rbuf = SWEEP_FN(receiver_buffer)(p, f);
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_EQ_FWD_STATE(f);
#if SWEEP_EQ_ROW_SCRATCH
    SWEEP_R *eq_scratch =
        (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->shape[2] * SWEEP_EQ_ROW_SCRATCH);
#endif
    /* The snapshot values (W^n) of one row, copied into the compact snapshot
     * (model cells only) and/or the replay's outer cells. */
    SWEEP_R *wrow = f->store || replay
                        ? (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->shape[2] * SWEEP_EQ_SNAP_VALUES)
                        : NULL;
    for (sweep_int t = t0; t < t0 + n_steps; ++t) {
      const sweep_int slot = f->store ? SWEEP_FN(store_slot)(p, t, t0) : -1;
      SWEEP_R *store =
          slot >= 0 ? (SWEEP_R *)f->store + slot * SWEEP_EQ_STORE_VALUES * p->slot_shots * mc
                    : NULL;
      SWEEP_R *bu = n_band ? (SWEEP_R *)f->band_u +
                                 (t - t0) * SWEEP_BAND_SLOT(p, SWEEP_EQ_BAND_VALUES, n_band)
                           : NULL;
      SWEEP_R *rw = replay ? (SWEEP_R *)f->replay_w +
                                 (t - t0) * SWEEP_BAND_SLOT(p, SWEEP_EQ_SNAP_VALUES, p->n_outer)
                           : NULL;
      if (replay) {
        /* The band's state at t, saved by the forward pass: the inner
         * boundary of the CPML.  The ring's state at t (u and psi along
         * the cell's axis, per wave) goes to replay_u: with the band's and
         * the plain cells' u it gives the band's snapshot in the adjoint. */
        SWEEP_R *rs = n_ring ? (SWEEP_R *)f->replay_u +
                                   (t - t0) * SWEEP_BAND_SLOT(p, SWEEP_EQ_RING_VALUES, n_ring)
                             : NULL;
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
          sweep_int k = 0;
#define SWEEP_LOAD_BAND_(b, x0, x1)                                               \
  for (int v = 0; v < SWEEP_EQ_BAND_VALUES; ++v) {                                \
    const SWEEP_R *src_ = bu + (v * p->slot_shots + shot) * n_band + k - (x0);    \
    for (sweep_int x = (x0); x < (x1); ++x)                                       \
      SWEEP_EQ_FWD_LOAD_BAND(shot * ss + (b) + x, v, src_[x]);                    \
  }                                                                               \
  k += (x1) - (x0);
          if (n_band) SWEEP_BAND_STRIPS(p, SWEEP_LOAD_BAND_);
#undef SWEEP_LOAD_BAND_
          k = 0;
#define SWEEP_SAVE_RING_(b, x0, x1, d)                                                   \
  for (int v = 0; v < SWEEP_EQ_RING_VALUES; ++v)                                         \
    memcpy(rs + (v * p->slot_shots + shot) * n_ring + k,                                 \
           SWEEP_EQ_FWD_RING(shot * ss, v, d) + (b) + (x0), sizeof(SWEEP_R) * ((x1) - (x0))); \
  k += (x1) - (x0);
          if (n_ring) SWEEP_RING_RUNS(p, SWEEP_SAVE_RING_);
#undef SWEEP_SAVE_RING_
        }
      }
#pragma omp for schedule(static)
      for (sweep_int item = 0; item < n_items; ++item) {
        SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
        const sweep_int off = shot * ss;
        SWEEP_EQ_FWD_SHOT(f, off);
        for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z) {
          for (sweep_int y = y0; y < y1; ++y) {
            const int outer = SWEEP_FN(row_mask)(p, z, y);
            const sweep_int srow = store ? SWEEP_FN(store_row)(p, z, y) : -1;
            const sweep_int brow = n_save ? f->band_row[z * p->shape[1] + y] : -1;
            const sweep_int orow = replay ? f->outer_row[z * p->shape[1] + y] : -1;
            SWEEP_R *wr = srow >= 0 || orow >= 0 ? wrow : NULL;
            if (replay && !outer) {
              if (orow >= 0) SWEEP_EQ_FWD_EDGE_ROW(p, pa, pb, off, wr, z, y);
            } else {
              SWEEP_EQ_FWD_ROW(p, pa, pb, off, wr, z, y);
            }
            if (orow >= 0)
              SWEEP_FN(copy_outer_row)(p, rw + shot * p->n_outer + orow, wr, outer,
                                       p->slot_shots * p->n_outer);
#ifdef SWEEP_EQ_FWD_STORE
            if (srow >= 0) SWEEP_EQ_FWD_STORE(p, store + shot * mc + srow, wr, z, y, outer);
            (void)slo2, (void)s2;
#elif SWEEP_EQ_SNAP_VALUES == 1
            if (srow >= 0)
              sweep_stream_copy(store + shot * mc + srow, wr + slo2, sizeof(SWEEP_R) * s2);
#else
            if (srow >= 0)
              for (int v_ = 0; v_ < SWEEP_EQ_SNAP_VALUES; ++v_)
                sweep_stream_copy(store + (v_ * p->slot_shots + shot) * mc + srow,
                                  wr + v_ * SWEEP_WR_PITCH(p) + slo2, sizeof(SWEEP_R) * s2);
#endif
            if (brow >= 0) {
              /* Band cells of this row, in band_idx order: the whole model row,
               * or its ends when the row is plain in z and y. */
              const sweep_int mhi2 = p->model_hi[2], row = z * p->stride[0] + y * p->stride[1];
              const sweep_int vs = p->slot_shots * n_band;
              sweep_int a, b;
              SWEEP_FN(row_ends)(p, mhi2, outer, &a, &b);
              for (int v = 0; v < SWEEP_EQ_BAND_VALUES; ++v) {
                SWEEP_R *bu_s = bu + v * vs + shot * n_band + brow;
                const SWEEP_R *state_row = SWEEP_EQ_FWD_SAVED(off, v) + row;
                sweep_int k = 0;
                for (sweep_int x = mlo2; x < a; ++x, ++k) bu_s[k] = state_row[x];
                for (sweep_int x = b; x < mhi2; ++x, ++k) bu_s[k] = state_row[x];
              }
            }
          }
        }
      }
      /* Receivers record step t; sources add to step t + 1 (SWEEP_EQ_FWD_SOURCE). */
#pragma omp for schedule(static)
      for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
        const sweep_int off = shot * ss;
        if (f->rec) {
          SWEEP_R *rec = (SWEEP_R *)f->rec;
          const sweep_int *ri = f->rec_idx + shot * p->n_rec;
          if (rbuf) {
            /* Steps gather in a (step, receiver) buffer and reach the
             * (receiver, step) output a run of steps at a time. */
            const sweep_int j = (t - t0) % SWEEP_REC_STEPS;
            SWEEP_R *b = rbuf + shot * SWEEP_REC_STEPS * p->n_rec;
            for (sweep_int r = 0; r < p->n_rec; ++r)
              b[j * p->n_rec + r] = SWEEP_EQ_FWD_RECORD(off + ri[r]);
            if (j == SWEEP_REC_STEPS - 1 || t == t0 + n_steps - 1)
              for (sweep_int r = 0; r < p->n_rec; ++r) {
                SWEEP_R *o = rec + (shot * p->n_rec + r) * p->nt + t - j;
                for (sweep_int k = 0; k <= j; ++k) o[k] = b[k * p->n_rec + r];
              }
          } else {
            for (sweep_int r = 0; r < p->n_rec; ++r)
              rec[(shot * p->n_rec + r) * p->nt + t] = SWEEP_EQ_FWD_RECORD(off + ri[r]);
          }
#ifdef SWEEP_EQ_FWD_RECORD_EXTRA
          SWEEP_EQ_FWD_RECORD_EXTRA(p, f, shot, off, t);
#endif
        }
        if (f->src_amp) {
          const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
          for (sweep_int k = 0; k < p->n_src; ++k) {
            const sweep_int i = off + f->src_idx[shot * p->n_src + k];
            SWEEP_EQ_FWD_SOURCE(i, i - off, amp[(shot * p->n_src + k) * p->nt + t]);
          }
        }
      }
      if (free_surface) SWEEP_EQ_FWD_GHOSTS(p);
      SWEEP_EQ_FWD_ROTATE();
    }
    if (wrow) sweep_stream_fence();
    free(wrow);
#if SWEEP_EQ_ROW_SCRATCH
    free(eq_scratch);
#endif
    sweep_restore_fp(fp_state);
  }
  free(rbuf);
}

/* Flags per (shot, z, y) row: 1 where the row holds a source whose term
 * enters the model gradient, whose correlation then must not be deferred
 * (see the backward driver).  NULL when no row has one; *ok is 0 when
 * memory is short (the caller then defers nothing). */
static unsigned char *SWEEP_FN(source_rows)(const SWEEP_EQ_PARAMS *p,
                                            const SWEEP_EQ_FIELDS *f, int *ok) {
  *ok = 1;
  if (!f->src_amp || p->n_src <= 0) return NULL;
  const sweep_int rows = p->shape[0] * p->shape[1];
  unsigned char *m = (unsigned char *)calloc((size_t)(p->n_shots * rows), 1);
  if (!m) {
    *ok = 0;
    return NULL;
  }
  for (sweep_int s = 0; s < p->n_shots; ++s)
    for (sweep_int k = 0; k < p->n_src; ++k)
      m[s * rows + f->src_idx[s * p->n_src + k] / p->stride[1]] = 1;
  return m;
}

#if SWEEP_EQ_BLOCKING && SWEEP_EQ_BLOCK_ADJOINT
/* The adjoint blocked in time (cpu_blocking.h), full storage's and
 * checkpointing's correlations fused: the deferred steps of the unblocked
 * driver below replayed into a per-step schedule first.  Returns 0, having
 * done nothing, when memory is short. */
static int SWEEP_FN(backward_blocked)(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f,
                                      const unsigned char *src_rows, int pairing,
                                      sweep_int t_end, sweep_int n_steps, int n_threads) {
  const sweep_int t_begin = t_end - n_steps;
  const int correlate = f->store && SWEEP_EQ_GRAD(f);
  sweep_int *slot = (sweep_int *)malloc(sizeof(sweep_int) * 2 * n_steps);
  unsigned char *defer = (unsigned char *)malloc(n_steps);
  sweep_point *src = f->src_amp || f->grad_src
                         ? sweep_sorted_points(f->src_idx, p->n_shots, p->n_src)
                         : NULL;
  sweep_point *rec = f->rec ? sweep_sorted_points(f->rec_idx, p->n_shots, p->n_rec) : NULL;
  int ok = slot && defer && (src || !(f->src_amp || f->grad_src) || p->n_src == 0) &&
           (rec || !f->rec || p->n_rec == 0);
  if (ok) {
    sweep_int *held = slot + n_steps;
    sweep_int deferred = -1; /* the slot of step t + 1 when it deferred */
    for (sweep_int r = 0; r < n_steps; ++r) {
      const sweep_int t = t_end - 1 - r;
      slot[r] = correlate ? SWEEP_FN(store_slot)(p, t, t_begin) : -1;
      held[r] = deferred;
      const int d = pairing && slot[r] >= 0 && deferred < 0 && t > t_begin &&
                    SWEEP_FN(store_slot)(p, t - 1, t_begin) >= 0;
      defer[r] = (unsigned char)d;
      deferred = d ? slot[r] : -1;
    }
    const SWEEP_FN(adj_sched) a = {src, rec, src_rows, (const SWEEP_R *)f->store, slot, held,
                                   defer, t_end};
    SWEEP_FN(forward_blocked)(p, f, NULL, NULL, NULL, &a, 0, n_steps, n_threads);
  }
  free(slot);
  free(defer);
  free(src);
  free(rec);
  return ok;
}
#endif

/*
 * Adjoint steps t_end - 1 down to t_end - n_steps.  The model gradient comes
 * from the compact snapshots in f->store (full storage and checkpointing) or,
 * when SWEEP_EQ_RECON (boundary saving), from the forward wavefield run
 * backwards on the plain cells, W^t of the band recomputed from it, the
 * band's saved u^t and the ring's state of the segment's replay
 * (f->replay_u), and, for the CPML cells, W^t of the replay (f->replay_w).
 * replay_u and replay_w slot 0 is step t_begin; band_u slot 0 is step
 * t_begin - 1.
 */
void SWEEP_EQ_BACKWARD(const SWEEP_EQ_PARAMS *p, const SWEEP_EQ_FIELDS *f, sweep_int t_end,
                       sweep_int n_steps, int n_threads) {
  if (SWEEP_FN(split_by_shot)(p, n_threads)) {
    SWEEP_FN(run_by_shot)(SWEEP_EQ_BACKWARD, p, f, t_end, n_steps, n_threads);
    return;
  }
  const sweep_int h = SWEEP_H, ss = p->shot_stride;
  const sweep_int n_tiles = SWEEP_N_TILES(p), n_items = p->n_shots * n_tiles;
  const sweep_int t_begin = t_end - n_steps;
  const sweep_int mc = SWEEP_EQ_STORE_CELLS(p);
  const sweep_int slo2 = p->store_lo[2];
  const int recon = SWEEP_EQ_RECON(f);
  /* The reconstruction rebuilds each step's snapshot in slot 0 of f->store. */
  const int recon_snap = SWEEP_EQ_RECON_SNAPSHOT && recon && f->store;
  const sweep_int n_band = recon && f->band_idx ? p->n_band : 0;
  const sweep_int n_ring = recon && f->replay_u && f->ring_code ? p->n_ring : 0;
  /* The band's snapshots are recomputed from the ring's replayed state. */
  const int band_recon = n_band && f->replay_u;
  const int free_surface = SWEEP_FN(has_free_surface)(p);
  SWEEP_EQ_MODEL(f);
  const SWEEP_R *pa[3], *pb[3];
  SWEEP_FN(pml_profiles)(f, pa, pb);
  SWEEP_R *rbuf = SWEEP_FN(receiver_buffer)(p, f);
  /*
   * Snapshot correlations in pairs: step t's term (the acoustic mu^{t+1} W^t)
   * is left to step t - 1, which adds it and its own in one pass over the
   * gradient row (SWEEP_EQ_ADJ_CORRELATE: a leapfrog equation still holds
   * step t's adjoint state, the acoustic mu^{t+1} in mu_prev, until the
   * stencil of step t - 1 overwrites the row), so the gradient is read and
   * written every other step.  Each cell receives the same additions in the
   * same order, so the result does not depend on the pairing (strategies
   * that split the steps into other calls stay bitwise equal).  Rows holding
   * a source are never deferred: its gradient term, added after the step's
   * rows, must follow that step's correlation.
   */
  const sweep_int rows_per_shot = p->shape[0] * p->shape[1];
  int pairing = 0; /* set by source_rows: 1 unless its flags got no memory */
  unsigned char *src_rows = SWEEP_EQ_PAIRED_CORRELATION && f->store && SWEEP_EQ_GRAD(f) && !recon
                               ? SWEEP_FN(source_rows)(p, f, &pairing)
                               : NULL;
  const sweep_int n_s2 = p->store_hi[2] - slo2;
  sweep_int n_cpml_runs = 0;
  sweep_int *cpml_runs = recon ? SWEEP_FN(cpml_runs)(p, f, &n_cpml_runs) : NULL;
#if SWEEP_EQ_BLOCKING && SWEEP_EQ_BLOCK_ADJOINT
  if (p->block_steps > 1 && !recon && !free_surface &&
      SWEEP_FN(backward_blocked)(p, f, src_rows, pairing, t_end, n_steps, n_threads)) {
    free(rbuf);
    free(src_rows);
    free(cpml_runs);
    return;
  }
#endif
#pragma omp parallel num_threads(n_threads)
  {
    const unsigned int fp_state = sweep_flush_denormals();
    SWEEP_EQ_ADJ_STATE(f);
#if SWEEP_EQ_ROW_SCRATCH
    SWEEP_R *eq_scratch =
        (SWEEP_R *)malloc(sizeof(SWEEP_R) * p->shape[2] * SWEEP_EQ_ROW_SCRATCH);
#endif
    const SWEEP_R *deferred = NULL;
    for (sweep_int t = t_end - 1; t >= t_begin; --t) {
      const sweep_int slot = recon_snap ? 0
                             : f->store && SWEEP_EQ_ADJ_GRAD ? SWEEP_FN(store_slot)(p, t, t_begin)
                                                             : -1;
      if (n_ring) {
        /* The ring's state at t from the replay, where the band's stencil
         * reads it (SWEEP_EQ_RECON_LOAD_RING). */
        const SWEEP_R *rs = (const SWEEP_R *)f->replay_u +
                            (t - t_begin) * SWEEP_BAND_SLOT(p, SWEEP_EQ_RING_VALUES, n_ring);
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
          sweep_int k = 0;
#define SWEEP_LOAD_RING_(b, x0, x1, d)                                            \
  for (int v = 0; v < SWEEP_EQ_RING_VALUES; ++v) {                                \
    const SWEEP_R *src_ = rs + (v * p->slot_shots + shot) * n_ring + k - (x0);    \
    for (sweep_int x = (x0); x < (x1); ++x)                                       \
      SWEEP_EQ_RECON_LOAD_RING(shot * ss + (b) + x, v, d, src_[x]);               \
  }                                                                               \
  k += (x1) - (x0);
          SWEEP_RING_RUNS(p, SWEEP_LOAD_RING_);
#undef SWEEP_LOAD_RING_
        }
      }
      if (recon_snap) {
        /* This step's snapshot, rebuilt before any row correlates it: the
         * plain cells from the reconstruction (which steps them back), the
         * band's from the reconstruction, its saved u and the ring, the
         * CPML's from the replay. */
        SWEEP_R *rsnap = (SWEEP_R *)f->store;
        const sweep_int vs = SWEEP_SNAP_STRIDE(p);
#pragma omp for schedule(static)
        for (sweep_int item = 0; item < n_items; ++item) {
          SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
          for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z)
            for (sweep_int y = y0; y < y1; ++y) {
              SWEEP_R *st = rsnap + shot * mc + SWEEP_FN(store_row)(p, z, y);
              if (!SWEEP_FN(row_mask)(p, z, y))
                SWEEP_EQ_RECON_SNAP_ROW(p, pa, pb, shot * ss, z, y, st, vs);
              if (band_recon) {
                const sweep_int row = z * p->stride[0] + y * p->stride[1];
#define SWEEP_SNAP_BAND_(x0, x1, m) \
  SWEEP_EQ_RECON_SNAP_BAND(p, shot * ss, row, z, y, x0, x1, m, st, vs)
                SWEEP_BAND_RUNS(p, z, y, SWEEP_SNAP_BAND_);
#undef SWEEP_SNAP_BAND_
              }
            }
        }
#pragma omp for schedule(static)
        for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
          const sweep_int ovs = p->slot_shots * p->n_outer;
          const SWEEP_R *rw = f->replay_w ? (const SWEEP_R *)f->replay_w +
                                  (t - t_begin) * SWEEP_BAND_SLOT(p, SWEEP_EQ_SNAP_VALUES, p->n_outer) +
                                  shot * p->n_outer
                                          : NULL;
          SWEEP_R *st = rsnap + shot * mc;
          /* A run's cells are consecutive in one row of the store too. */
#define SWEEP_SNAP_CPML_(i0, j0, n)                                 \
  {                                                                 \
    const sweep_int m_ = SWEEP_FN(store_index)(p, i0);              \
    SWEEP_EQ_RECON_SNAP_CPML(p, st, m_, j0, n, rw, vs, ovs);        \
  }
          if (f->replay_w) SWEEP_CPML_RUNS(p, f, cpml_runs, n_cpml_runs, SWEEP_SNAP_CPML_);
#undef SWEEP_SNAP_CPML_
        }
      }
      const SWEEP_R *store =
          slot >= 0
              ? (const SWEEP_R *)f->store + slot * SWEEP_EQ_STORE_VALUES * p->slot_shots * mc
              : NULL;
      /* held: the snapshots of step t + 1, whose correlation this step does. */
      const SWEEP_R *held = deferred;
      const int defer = pairing && store && !held && t > t_begin &&
                        SWEEP_FN(store_slot)(p, t - 1, t_begin) >= 0;
      deferred = defer ? store : NULL;
#pragma omp for schedule(static)
      for (sweep_int item = 0; item < n_items; ++item) {
        SWEEP_TILE_ITEM(item, n_tiles, shot, y0, y1);
        const sweep_int off = shot * ss;
        SWEEP_EQ_ADJ_SHOT(f, off);
        for (sweep_int z = SWEEP_Z_BEGIN; z < SWEEP_Z_END(p); ++z) {
          for (sweep_int y = y0; y < y1; ++y) {
            const sweep_int base = z * p->stride[0] + y * p->stride[1];
            const sweep_int srow = store || held ? SWEEP_FN(store_row)(p, z, y) : -1;
            if (srow >= 0) {
              /* Before the stencil, which overwrites the row of the state it reads. */
              const int fixed = src_rows && src_rows[shot * rows_per_shot + z * p->shape[1] + y];
              const sweep_int o = base + slo2;
              SWEEP_EQ_ADJ_CORRELATE(off, o, store ? store + shot * mc + srow : NULL,
                                     held && !fixed ? held + shot * mc + srow : NULL,
                                     defer && !fixed, n_s2);
            }
            SWEEP_EQ_ADJ_ROW(p, pa, pb, off, z, y);
            /* z and y plain (no outer mask): [plain_lo, plain_hi) of x is plain. */
            if (recon && !SWEEP_FN(row_mask)(p, z, y)) SWEEP_EQ_RECON_ROW(p, off, base);
            if (band_recon && !recon_snap) {
              /* The band cells of the row: W^t from the reconstruction, the
               * band's u^t and the ring, correlated as the plain cells'. */
#define SWEEP_RECON_BAND_(x0, x1, m) SWEEP_EQ_RECON_BAND(p, off, base, z, y, x0, x1, m)
              SWEEP_BAND_RUNS(p, z, y, SWEEP_RECON_BAND_);
#undef SWEEP_RECON_BAND_
            }
          }
        }
      }
      /* Source terms read the adjoint state of step t + 1; residuals of step t
       * go into that of step t (SWEEP_EQ_ADJ_RESIDUAL). */
#pragma omp for schedule(static)
      for (sweep_int shot = 0; shot < p->n_shots; ++shot) {
        const sweep_int off = shot * ss;
        for (sweep_int k = 0; k < p->n_src; ++k) {
          const sweep_int j = f->src_idx[shot * p->n_src + k];
          const sweep_int a = (shot * p->n_src + k) * p->nt + t;
          if (f->grad_src) ((SWEEP_R *)f->grad_src)[a] = SWEEP_EQ_ADJ_SOURCE_GRAD(off + j, j);
          /* With sampling (store_every k > 1) the caller scales the gradient by k,
           * so the source term is sampled like the snapshots. */
          if (SWEEP_EQ_ADJ_GRAD && f->src_amp && t % p->store_every == 0)
            SWEEP_EQ_ADJ_SOURCE_TERM(off + j, j, ((const SWEEP_R *)f->src_amp)[a]);
        }
        if (f->rec) {
          const SWEEP_R *res = (const SWEEP_R *)f->rec;
          const sweep_int *ri = f->rec_idx + shot * p->n_rec;
          if (rbuf) {
            /* The residuals of a run of steps, read once per run into a
             * (step, receiver) buffer. */
            const sweep_int j = (t_end - 1 - t) % SWEEP_REC_STEPS;
            SWEEP_R *b = rbuf + shot * SWEEP_REC_STEPS * p->n_rec;
            if (j == 0) {
              const sweep_int n = t - t_begin + 1 < SWEEP_REC_STEPS ? t - t_begin + 1 : SWEEP_REC_STEPS;
              for (sweep_int r = 0; r < p->n_rec; ++r) {
                const SWEEP_R *o = res + (shot * p->n_rec + r) * p->nt + t;
                for (sweep_int k = 0; k < n; ++k) b[k * p->n_rec + r] = o[-k];
              }
            }
            for (sweep_int r = 0; r < p->n_rec; ++r)
              SWEEP_EQ_ADJ_RESIDUAL(off + ri[r], ri[r], b[j * p->n_rec + r]);
          } else {
            for (sweep_int r = 0; r < p->n_rec; ++r)
              SWEEP_EQ_ADJ_RESIDUAL(off + ri[r], ri[r], res[(shot * p->n_rec + r) * p->nt + t]);
          }
        }
        if (recon) {
          /* Band cells: the state of step t - 1 is restored from the save
           * (below; their W^t was recomputed with the rows). */
          const sweep_int vs = p->slot_shots * n_band;
          if (f->replay_w) {
            /* CPML cells: W^t from the replay of this segment. */
            const SWEEP_R *rw = (const SWEEP_R *)f->replay_w +
                                (t - t_begin) * SWEEP_BAND_SLOT(p, SWEEP_EQ_SNAP_VALUES, p->n_outer) +
                                shot * p->n_outer;
#define SWEEP_RECON_CELLS_(i0, j0, n)                                   \
  _Pragma("omp simd") for (sweep_int x = 0; x < (n); ++x)               \
      SWEEP_EQ_RECON_CELL(off + (i0) + x, rw + (j0) + x, p->slot_shots * p->n_outer);
            SWEEP_CPML_RUNS(p, f, cpml_runs, n_cpml_runs, SWEEP_RECON_CELLS_);
#undef SWEEP_RECON_CELLS_
          }
          if (f->src_amp) {
            const SWEEP_R *amp = (const SWEEP_R *)f->src_amp;
            for (sweep_int k = 0; k < p->n_src; ++k) {
              const sweep_int j = f->src_idx[shot * p->n_src + k];
              SWEEP_EQ_RECON_SOURCE(off + j, j, amp[(shot * p->n_src + k) * p->nt + t]);
            }
          }
          if (t > 0 && n_band) {
            const SWEEP_R *bu = (const SWEEP_R *)f->band_u +
                                (t - t_begin) * SWEEP_BAND_SLOT(p, SWEEP_EQ_BAND_VALUES, n_band) +
                                shot * n_band;
            sweep_int k = 0;
#define SWEEP_LOAD_BAND_(b, x0, x1)                                   \
  for (int v = 0; v < SWEEP_EQ_BAND_VALUES; ++v) {                    \
    const SWEEP_R *src_ = bu + v * vs + k - (x0);                     \
    for (sweep_int x = (x0); x < (x1); ++x)                           \
      SWEEP_EQ_RECON_LOAD_BAND(off + (b) + x, v, src_[x]);            \
  }                                                                   \
  k += (x1) - (x0);
            SWEEP_BAND_STRIPS(p, SWEEP_LOAD_BAND_);
#undef SWEEP_LOAD_BAND_
          }
        }
      }
      if (free_surface) SWEEP_EQ_ADJ_GHOSTS(p, recon);
      SWEEP_EQ_ADJ_ROTATE();
    }
#if SWEEP_EQ_ROW_SCRATCH
    free(eq_scratch);
#endif
    sweep_restore_fp(fp_state);
  }
  free(rbuf);
  free(src_rows);
  free(cpml_runs);
}
#endif /* SWEEP_EQ_PHASES */
