/*
 * Building blocks of an equation's CPU row bodies, shared by every equation:
 * per-shot pointers, the CPML profiles, rows split into x segments with a
 * compile-time CPML mask each, in memory order, and one never-inlined
 * function per mask for the scalar rows.  Included by the equation's plug-in
 * (acoustic_cpu_impl.h) once per specialisation, after its stencil header and
 * with SWEEP_EQ_PARAMS / SWEEP_EQ_FIELDS defined (see cpu_skeleton.h).
 *
 * A CPML mask has bit d set where the row's cells need the CPML terms along
 * axis d (z: bit 0, y: bit 1, x: bit 2); a clear bit runs the plain stencil
 * along that axis.  Masks are compile-time constants in the row bodies, so
 * each combination compiles to its own branch-free (vectorisable) loop.
 */

/* Exchange a and b (of type T): the rotations of the time levels after a step. */
#define SWEEP_SWAP(T, a, b) \
  do {                      \
    T sweep_swap_ = (a);    \
    (a) = (b);              \
    (b) = sweep_swap_;      \
  } while (0)

/* Pointers of one shot, per axis; unused axes stay NULL. */
static inline void SWEEP_FN(shot_axes)(void *const *src, sweep_int off, SWEEP_R **dst) {
  for (int d = 0; d < 3; ++d) dst[d] = src[d] ? (SWEEP_R *)src[d] + off : NULL;
}

/* Pointer ptr (of SWEEP_R, or NULL) k elements on, for records of shots. */
#define SWEEP_OFF(ptr, k) ((ptr) ? (void *)((SWEEP_R *)(ptr) + (k)) : NULL)

/* The CPML profiles a and b per axis, typed. */
static inline void SWEEP_FN(pml_profiles)(const SWEEP_EQ_FIELDS *f, const SWEEP_R **pa,
                                          const SWEEP_R **pb) {
  for (int d = 0; d < 3; ++d) {
    pa[d] = (const SWEEP_R *)f->pml_a[d];
    pb[d] = (const SWEEP_R *)f->pml_b[d];
  }
}

/* Calls ROW(mask) with the outer-axis mask as a literal, so each CPML
 * combination is compiled (and vectorised) separately; z is bit 0, y bit 1
 * (x, bit 2, is added per row segment). */
#if SWEEP_NDIM == 3
#define SWEEP_MASK_SWITCH(mask, ROW) \
  switch (mask) {                   \
    case 0: ROW(0); break;          \
    case 1: ROW(1); break;          \
    case 2: ROW(2); break;          \
    default: ROW(3); break;         \
  }
#else
#define SWEEP_MASK_SWITCH(mask, ROW) \
  if (mask) {                        \
    ROW(2);                          \
  } else {                           \
    ROW(0);                          \
  }
#endif

/* The x segments of a row (x-CPML, plain middle, x-CPML) through ROW(x0, x1,
 * mask), in memory order so the row streams through once: with both x-CPML
 * edges first and the middle after, the 3D benchmark took 3.86-3.93 s
 * instead of 3.24-3.34 s (benchmarks/README.md).  Needs p, h and x_end in
 * scope. */
#define SWEEP_ROW_IN_ORDER(ROW, m, AHEAD)    \
  ROW(h, p->plain_lo[2], (m) | 4);           \
  AHEAD;                                     \
  ROW(p->plain_lo[2], p->plain_hi[2], m);    \
  ROW(p->plain_hi[2], x_end, (m) | 4)

/* Prefetches the cells [x0, x1) of a row of f (when not NULL) into cache,
 * for writing when rw (a compile-time constant at every call).  The row's
 * high x-CPML segment reads its auxiliary fields where the row's plain
 * middle did not: the hardware prefetcher, following the middle's
 * streams, leaves them to miss (~9 % of the 3D forward's samples sat on the
 * first loads of that segment).  Issued before the middle, which hides them.
 * 3D only: the 2D forward (order 8) measured no gain (0.154-0.160 s without,
 * 0.163-0.169 with; within noise). */
static inline __attribute__((always_inline)) void SWEEP_FN(prefetch_cells)(const SWEEP_R *f,
                                                                           sweep_int x0,
                                                                           sweep_int x1,
                                                                           const int rw) {
  if (!f) return;
  const sweep_int line = SWEEP_CACHE_LINE / (sweep_int)sizeof(SWEEP_R);
  for (sweep_int x = x0; x < x1 + line; x += line) {
    const SWEEP_R *const a = f + (x < x1 ? x : x1 - 1);
    if (rw) /* __builtin_prefetch takes its rw as a literal */
      __builtin_prefetch(a, 1, 3);
    else
      __builtin_prefetch(a, 0, 3);
  }
}

/* Before a forward row's plain middle, the high x-CPML segment's psi, zeta
 * and psi_new (3D; VRZ's rows, SWEEP_ROW_IN_ORDER's AHEAD): their window
 * reaches a vector (<= a line) below the segment.  Acoustic's forward rows
 * prefetch the next row's segments instead (prefetch_xcpml_row), which
 * made this a second prefetch of the same lines (branch a3dfwd). */
static inline __attribute__((always_inline)) void SWEEP_FN(prefetch_fwd_xcpml)(
    const SWEEP_EQ_PARAMS *p, SWEEP_R *const *psi, SWEEP_R *const *zeta,
    SWEEP_R *const *psi_new, sweep_int base) {
  if (SWEEP_NDIM != 3) return;
  const sweep_int xa = p->plain_hi[2] - SWEEP_CACHE_LINE / (sweep_int)sizeof(SWEEP_R);
  const sweep_int xb = p->shape[2];
  SWEEP_FN(prefetch_cells)(psi[2] + base, xa, xb, 0);
  SWEEP_FN(prefetch_cells)(zeta[2] + base, xa, xb, 0);
  SWEEP_FN(prefetch_cells)(psi_new[2] + base, xa, xb, 0);
}

/* The x-CPML segments of one row of f (row pointer, 3D): [h, plain_lo) and
 * [plain_hi, nx - h), each widened by reach cells into the plain middle,
 * prefetched (rw 1: for writing).  For the x memory variables of the next
 * row: touched by the x segments only, a line or two per row and array a row
 * pitch apart, which no hardware stream covered (as mx_row's forward,
 * maxwell_cpu_impl.h). */
static inline __attribute__((always_inline)) void SWEEP_FN(prefetch_xcpml_row)(
    const SWEEP_EQ_PARAMS *p, const SWEEP_R *f, sweep_int reach, const int rw) {
  const sweep_int h = p->halo, nx = p->shape[2];
  if (p->plain_lo[2] <= h && p->plain_hi[2] >= nx - h) return; /* no x-CPML */
  SWEEP_FN(prefetch_cells)(f, h - reach, p->plain_lo[2] + reach, rw);
  SWEEP_FN(prefetch_cells)(f, p->plain_hi[2] - reach, nx - h + reach, rw);
}

/* CPML mask of the outer axes (z, y) of a row. */
static inline int SWEEP_FN(row_mask)(const SWEEP_EQ_PARAMS *p, sweep_int z, sweep_int y) {
  int mask = 0;
  if (SWEEP_NDIM == 3 && (z < p->plain_lo[0] || z >= p->plain_hi[0])) mask |= 1;
  if (y < p->plain_lo[1] || y >= p->plain_hi[1]) mask |= 2;
  return mask;
}

/* Functions name##0 .. name##7 (each SWEEP_FN-suffixed; static, never
 * inlined), where name##m calls body(args..., m) with the mask m a literal:
 * params and args are parenthesised lists.  Inlined into the row loops, every
 * loop carried a compiler-vectorised copy of the scalar rows (with its
 * remainder loops) per x segment and mask, 12 in 3D, more code than the
 * vector rows themselves: 3D order 8 float32, 36.6 -> 9.1 s of CPU to
 * compile, the acoustic forward, blocked and adjoint loops 213, 213 and
 * 192 KB -> 52, 45 and 81 KB of code; run time unchanged (benchmark cases,
 * within 1-5 %, if anything faster).  Masks a dimension never uses are
 * never called, so not compiled. */
#define SWEEP_UNWRAP_(...) __VA_ARGS__
#define SWEEP_BY_MASK_ONE_(name, body, params, args, m)            \
  static __attribute__((noinline)) void SWEEP_FN(name##m) params { \
    SWEEP_FN(body)(SWEEP_UNWRAP_ args, m);                         \
  }
#define SWEEP_DEFINE_BY_MASK(name, body, params, args) \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 0)      \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 1)      \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 2)      \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 3)      \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 4)      \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 5)      \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 6)      \
  SWEEP_BY_MASK_ONE_(name, body, params, args, 7)

/* One never-inlined function SWEEP_FN(name)(params..., mask) for every mask,
 * the mask a run-time argument, calling body(args..., mask) with loop
 * unswitching off, so the body compiles once and not once per mask: for rows
 * that seldom run (segments shorter than a vector, cells next to an edge),
 * where per-mask copies were most of a unit's code and compile time. */
/* A function of rows that run seldom (the boundary-saving band's thin
 * strips, SWEEP_DEFINE_ANY_MASK's rows), compiled once: not inlined at each
 * call site and its loops not unswitched per CPML mask (which multiplied the
 * 3D units' compile time). */
#define SWEEP_ONCE_FN static __attribute__((noinline, optimize("no-unswitch-loops")))

#define SWEEP_DEFINE_ANY_MASK(name, body, params, args)                           \
  SWEEP_ONCE_FN void SWEEP_FN(name)(SWEEP_UNWRAP_ params, const int mask) {      \
    SWEEP_FN(body)(SWEEP_UNWRAP_ args, mask);                                    \
  }

/* Calls name##mask(args...) of a compile-time mask (the switch folds away). */
#define SWEEP_CALL_BY_MASK(name, mask, args)            \
  switch (mask) {                                     \
    case 0: SWEEP_FN(name##0) args; break;            \
    case 1: SWEEP_FN(name##1) args; break;            \
    case 2: SWEEP_FN(name##2) args; break;            \
    case 3: SWEEP_FN(name##3) args; break;            \
    case 4: SWEEP_FN(name##4) args; break;            \
    case 5: SWEEP_FN(name##5) args; break;            \
    case 6: SWEEP_FN(name##6) args; break;            \
    default: SWEEP_FN(name##7) args; break;           \
  }

/* Images beyond the free faces of kernel axis d of one shot's field u
 * (staggered systems): forward (adjoint 0), each image cell g takes sign
 * times its mirror cell m; adjoint (1), m takes sign times g, which becomes
 * zero.  half: u is staggered along d (its images start half a cell out,
 * on the high face at index n - h - 1). */
static inline void SWEEP_FN(mirror_axis)(const SWEEP_EQ_PARAMS *p, SWEEP_R *u, int d, int half,
                                         int sign, int adjoint) {
  const sweep_int h = p->halo, n = p->shape[d];
  const int e1 = d == 0 ? 1 : 0, e2 = d == 2 ? 1 : 2;
  for (int side = 0; side < 2; ++side) {
    if (!(side ? p->free_hi[d] : p->free_lo[d])) continue;
    const sweep_int g0 = side ? n - h - half : 0, g1 = side ? n : h;
    for (sweep_int g = g0; g < g1; ++g) {
      const sweep_int m = side ? 2 * (n - 1 - h) - g - half : 2 * h - g - half;
      for (sweep_int j1 = 0; j1 < p->shape[e1]; ++j1) {
        SWEEP_R *r = u + j1 * p->stride[e1];
        for (sweep_int j2 = 0; j2 < p->shape[e2]; ++j2) {
          const sweep_int o = j2 * p->stride[e2];
          if (adjoint) {
            r[o + m * p->stride[d]] += sign * r[o + g * p->stride[d]];
            r[o + g * p->stride[d]] = 0;
          } else {
            r[o + g * p->stride[d]] = sign * r[o + m * p->stride[d]];
          }
        }
      }
    }
  }
}

/* Copies fields [F0, F1) of the shot at element offset off at the cells idx[0 .. n)
 * between the grid (fields[F] + off + idx[r]) and a compact slot (value F of
 * shot `shot` at slot + (F * slot_shots + shot) * n + r): to_grid 0 saves,
 * 1 loads.  Boundary saving of the phased systems (cpu_phased.h). */
static inline void SWEEP_FN(bs_copy)(const SWEEP_EQ_PARAMS *p, SWEEP_R *const *fields, int F0,
                                     int F1, sweep_int shot, sweep_int off, const sweep_int *idx,
                                     sweep_int n, SWEEP_R *slot, int to_grid) {
  if (!slot || !n) return;
  for (int F = F0; F < F1; ++F) {
    SWEEP_R *g = fields[F] + off, *c = slot + (F * p->slot_shots + shot) * n;
    if (to_grid)
      for (sweep_int r = 0; r < n; ++r) g[idx[r]] = c[r];
    else
      for (sweep_int r = 0; r < n; ++r) c[r] = g[idx[r]];
  }
}
