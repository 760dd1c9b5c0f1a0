/*
 * Shared definitions for the CPU (C + OpenMP) and CUDA (NVRTC) kernels.
 *
 * This header is compiled twice: by the C compiler into sweep._C, and at run
 * time by CuPy/NVRTC as part of the CUDA sources.  It must therefore stay
 * valid C99 and CUDA C++, and must not include system headers (NVRTC has none).
 *
 * Specialisation is by macros defined before including the kernel headers:
 *   SWEEP_NDIM   2 or 3
 *   SWEEP_ORDER  2, 4, 6 or 8 (spatial accuracy)
 *   SWEEP_REAL   float or double
 *   SWEEP_SUFFIX token appended to every function name (e.g. 2d_o4_f32)
 */
#ifndef SWEEP_COMMON_H
#define SWEEP_COMMON_H

typedef long long sweep_int;

/* SWEEP_UNROLL fully unrolls the short loops over axes and stencil taps, so
 * that per-axis branches become compile-time constants (and CPU loops over x
 * vectorise without control flow). */
#ifdef __CUDACC__
#define SWEEP_HD __device__ __forceinline__
#define SWEEP_RESTRICT __restrict__
#define SWEEP_UNROLL _Pragma("unroll")
#else
#define SWEEP_HD static inline __attribute__((always_inline))
#define SWEEP_RESTRICT restrict
#define SWEEP_UNROLL _Pragma("GCC unroll 8")
#endif

/* SWEEP_FMA(x, y, z) = x * y + z, where the stencil may fuse it into one
 * rounding.  The CPU build defines it first (sweep_cy/cpu_fma.h:
 * fused for scalars and vector rows alike where the target has FMA, so both
 * round identically); CUDA fuses, like nvcc's own contraction. */
#ifndef SWEEP_FMA
#ifdef __CUDACC__
#define SWEEP_FMA(x, y, z) fma((x), (y), (z))
#else
#define SWEEP_FMA(x, y, z) ((x) * (y) + (z))
#endif
#endif

#define SWEEP_CAT_(a, b) a##b
#define SWEEP_CAT(a, b) SWEEP_CAT_(a, b)
#define SWEEP_CAT3(a, b, c) SWEEP_CAT(SWEEP_CAT(a, b), c)

/*
 * Scalars that describe one propagation call.  Axis order is (z, y, x) with x
 * contiguous; a 2D problem uses axes 1 and 2 and has shape[0] == 1.  Every
 * index is in the padded grid: [halo | pml_lo | model | pml_hi | halo].
 *
 * The Python mirror of this layout is sweep/_params.py; tests compare them.
 */
typedef struct sweep_acoustic_params {
  sweep_int n_shots;
  sweep_int n_src;        /* sources per shot */
  sweep_int n_rec;        /* receivers per shot */
  sweep_int nt;           /* length of the time axis of amplitude arrays */
  sweep_int halo;         /* stencil half width = order / 2 */
  sweep_int shot_stride;  /* elements of one padded field of one shot */
  sweep_int shape[3];     /* padded shape */
  sweep_int stride[3];    /* element strides of the padded shape */
  sweep_int plain_lo[3];  /* [plain_lo, plain_hi) needs no CPML terms */
  sweep_int plain_hi[3];
  sweep_int free_lo[3];   /* 1 when the low face is a free surface */
  sweep_int free_hi[3];
  sweep_int model_lo[3];  /* [model_lo, model_hi): the model cells (no CPML, no halo) */
  sweep_int model_hi[3];
  sweep_int store_lo[3];  /* [store_lo, store_hi): the cells whose W^t a gradient snapshot
                             holds: model and CPML (every cell whose v^2 dt^2 comes from the
                             model), the halo excluded */
  sweep_int store_hi[3];
  sweep_int store_every;  /* snapshot sampling interval k: steps t with t % k == 0 are stored */
  sweep_int n_band;       /* cells per shot in band_idx (boundary saving), else 0 */
  sweep_int n_rec_groups; /* entries of rec_groups (CUDA receiver injection) */
  sweep_int n_outer;      /* cells per shot in outer_idx (CPML replay), else 0 */
  sweep_int n_cpml;       /* entries of cpml_pos */
  sweep_int n_ring;       /* cells per shot in ring_code (CPML replay), else 0 */
  /* CPU temporal blocking of forward steps that store nothing (0 or 1: off):
   * block_steps steps per sweep along the outermost axis, in groups of
   * block_group planes; in 3D, tiles of block_tile rows in y. */
  sweep_int block_steps;
  sweep_int block_group;
  sweep_int block_tile;
  sweep_int slot_shots;   /* shots per slot of store/band_u/replay_u (the CPU splits
                             shots between threads; elsewhere n_shots) */
  sweep_int simd_rows;    /* CPU: 1 runs plain x ranges in explicit-vector rows
                             (acoustic_cpu_vec.h), 0 only the scalar point loops */
  double rdx[3];          /* 1 / grid spacing */
  double rdx2[3];         /* 1 / grid spacing^2 */
} sweep_acoustic_params;

/*
 * Arrays of one call of the VRZ kernels (variable density, cuda/vrz_stencil.h),
 * sharing sweep_acoustic_params.  The members named as in
 * sweep_acoustic_fields (below) mean what they mean there (the members the
 * CPU skeleton reads, cpu_skeleton.h, must have those names).  Boundary
 * saving keeps the band's u (band_u), and the adjoint rebuilds each step's
 * snapshot in store (one slot) from recon_u, the band's u and the CPML
 * replay's (SWEEP_EQ_RECON_SNAPSHOT of the CPU skeleton).
 */
typedef struct sweep_vrz_fields {
  const void *kappa_dt2;  /* K = z vp dt^2 on the padded grid, zero where u is not updated */
  const void *buoyancy;   /* B = vp / z on the whole padded grid, halo included */
  void *u_prev;
  void *u;
  void *psi[3];
  void *psi_new[3];
  void *zeta[3];
  void *zeta_new[3];
  const void *pml_a[3];
  const void *pml_b[3];
  const void *src_amp;
  const sweep_int *src_idx;
  void *rec;
  const sweep_int *rec_idx;
  void *store;            /* W, u and psi of each axis on the store cells: 2 + ndim values
                             per cell (SWEEP_EQ_SNAP_VALUES) */
  void *grad_kappa_dt2;   /* (n_shots, shot_stride): sum mu W (the caller divides by K), or NULL */
  void *grad_buoyancy;    /* (n_shots, shot_stride): the gradient w.r.t. B, or NULL */
  void *grad_src;
  const sweep_int *band_idx;
  const sweep_int *band_row;
  void *band_u;
  void *replay_u;         /* the CPML replay's ring state (as sweep_acoustic_fields') */
  void *recon_u_next;     /* u run backwards (boundary saving's adjoint) */
  void *recon_u;
  void *replay_w;         /* the outer cells' 2 + ndim snapshot values */
  const sweep_int *outer_idx;
  const sweep_int *outer_row;
  const sweep_int *cpml_pos;
  const sweep_int *ring_code;
  const sweep_int *rec_groups;
  const sweep_int *rec_order;
} sweep_vrz_fields;

/*
 * Arrays of one call of the elastic kernels (cuda/elastic_stencil.h has the
 * indices of fields, coefficients and memory variables), sharing
 * sweep_acoustic_params (halo: the taps per side of the run-time order).
 * The forward and the adjoint use the same slots for their fields and
 * memory variables.  Members named as in sweep_acoustic_fields mean what
 * they mean there; sources and receivers are single-cell terms whose index
 * is field * shot_stride + cell.  No boundary saving: its members stay NULL.
 */
typedef struct sweep_elastic_fields {
  const void *coef[15];   /* dt b_a, dt C_ij, dt mu_ab on the padded grid, times the live mask */
  void *field[9];         /* (n_shots, padded): v_a, s_aa, s_ab */
  void *psi[27];          /* [field][kernel axis]: C-PML memory variables, or NULL */
  void *grad[15];         /* (n_shots, padded) per coefficient, or NULL */
  const void *pml_a[3];   /* profiles at the nodes */
  const void *pml_b[3];
  const void *pml_ah[3];  /* profiles at the half nodes */
  const void *pml_bh[3];
  const void *wv[6];      /* [kernel axis][forward]: (halo, shape[d]) velocity weights */
  const void *ws;         /* (halo,): stress weights */
  const void *src_amp;
  const sweep_int *src_idx;
  void *rec;
  const sweep_int *rec_idx;
  void *store;            /* SWEEP_EQ_SNAP_VALUES = fields values per cell */
  void *grad_src;
  const sweep_int *band_idx;
  const sweep_int *band_row;
  void *band_u;
  void *replay_u;
  void *replay_w;
  const sweep_int *outer_idx;
  const sweep_int *outer_row;
  const sweep_int *cpml_pos;
  const sweep_int *ring_code;
  const sweep_int *rec_groups;
  const sweep_int *rec_order;
} sweep_elastic_fields;

/*
 * Arrays of one call.  Every wavefield is (n_shots, *padded shape).  The
 * forward pass reads/writes u_prev, u, psi, psi_new, zeta; the adjoint pass
 * reuses the same slots for its adjoint fields (lambda in u, adjoint psi in
 * psi, adjoint zeta in zeta) and also uses zeta_new.
 */
typedef struct sweep_acoustic_fields {
  const void *v2dt2;      /* (v dt)^2 on the padded grid, shared by all shots */
  void *u_prev;
  void *u;
  void *psi[3];
  void *psi_new[3];
  void *zeta[3];
  void *zeta_new[3];
  const void *pml_a[3];   /* CPML a and b profiles per axis, length shape[d] */
  const void *pml_b[3];
  const void *src_amp;    /* (n_shots, n_src, nt) */
  const sweep_int *src_idx; /* (n_shots, n_src) flat indices into a shot's field */
  void *rec;              /* (n_shots, n_rec, nt): forward output / adjoint input */
  const sweep_int *rec_idx;
  void *store;            /* W^t of the model cells of each stored step:
                             (n_stored, n_shots, model cells), slot 0 = first stored step
                             of the chunk; or NULL */
  void *grad_v2dt2;       /* (n_shots, shot_stride) or NULL */
  void *grad_src;         /* (n_shots, n_src, nt) or NULL */
  /* Boundary saving: band = model cells within a halo of the CPML (the model
   * cells the interior time reversal cannot recompute), flat indices per shot. */
  const sweep_int *band_idx; /* (n_band,) */
  const sweep_int *band_row; /* (shape[0] * shape[1],) first band_idx entry of each row, or -1
                                (CPU: the forward saves the band while it sweeps the row) */
  void *band_u;           /* (n_steps, n_shots, n_band): u^t on the band */
  void *replay_u;         /* CPML replay (below): (n_steps, 2, n_shots, n_ring), u^t and psi^t
                             along the cell's axis of the ring at the start of step t;
                             the adjoint recomputes the band's W^t from it */
  void *recon_u_next;     /* adjoint pass only: u^{t+1} on entry, receives u^{t-1} */
  void *recon_u;          /* adjoint pass only: u^t */
  /* CPML replay (boundary saving): the CPML cannot run backwards in time, so
   * the adjoint pass re-runs it forward over a segment of steps from a saved
   * state, with the band's u^t loaded from band_u each step (the band is the
   * CPML's inner boundary condition).  outer = store cells farther from the
   * plain cells: the CPML and the band.  Forward: replay_w receives W^t of the
   * outer cells (n_steps, n_shots, n_outer); adjoint: the CPML cells' entries
   * (cpml_pos) are correlated with mu^{t+1}. */
  void *replay_w;
  const sweep_int *outer_idx; /* (n_outer,) flat indices per shot, ascending */
  const sweep_int *outer_row; /* (shape[0] * shape[1],) first outer_idx entry of each row, or -1 */
  const sweep_int *cpml_pos;  /* (n_cpml,) positions in outer_idx of the CPML cells */
  const sweep_int *ring_code;  /* (n_ring,) the ring: stored cells outside the model within a
                                 halo of it along one axis d (the band's stencil reads them),
                                 as 4 * flat index + d */
  /* CUDA adjoint receiver injection, one thread per (shot, receiver cell):
   * rec_groups[4 g .. 4 g + 3] = shot, cell, first, end into rec_order, which
   * lists receivers (shot * n_rec + r) by cell, in receiver order, so
   * duplicates add in the same order as on the CPU.  Unused by the CPU. */
  const sweep_int *rec_groups;
  const sweep_int *rec_order;
} sweep_acoustic_fields;

/*
 * Arrays of one call of the Born (LSRTM) kernels, sharing sweep_acoustic_params.
 * Two acoustic wavefields, each with its own CPML memory variables: the
 * background u0 and the scattered u1 (the adjoint's G0 = mu0 + R mu1 and mu1
 * in the same slots, with zeta*_new as acoustic's; lsrtm_stencil.h).  The
 * members the CPU skeleton reads (cpu_skeleton.h) have the names of
 * sweep_acoustic_fields.  Boundary saving
 * keeps u0 and u1 of the band (band_u), runs both fields backwards in
 * recon_u0* and recon_u1* and recomputes the band's W0, W1 from them and the
 * replay's ring (replay_u: u0, u1, psi0, psi1).
 */
typedef struct sweep_lsrtm_fields {
  const void *v2dt2;        /* K = (vp dt)^2 on the padded grid, as acoustic's v2dt2 */
  const void *dv2dt2;       /* dK = 2 K mp, the Born source's factor (and the
                               adjoint's scattering term) */
  void *u0_prev;
  void *u0;
  void *psi0[3];
  void *psi0_new[3];
  void *zeta0[3];
  void *zeta0_new[3];
  void *u1_prev;
  void *u1;
  void *psi1[3];
  void *psi1_new[3];
  void *zeta1[3];
  void *zeta1_new[3];
  const void *pml_a[3];
  const void *pml_b[3];
  const void *src_amp;
  const sweep_int *src_idx;
  void *rec;                /* forward: (2, slot_shots, n_rec, nt), the scattered then the
                               background traces; adjoint: the scattered residuals */
  const sweep_int *rec_idx;
  void *store;              /* W0^t and W1^t of the store cells: SWEEP_EQ_SNAP_VALUES 2 */
  void *grad_v2dt2;         /* (n_shots, shot_stride): sum G0 (W0 - f) + mu1 W1, or NULL */
  void *grad_dv2dt2;        /* (n_shots, shot_stride): sum mu1 (W0 - f), or NULL */
  void *grad_src;
  const sweep_int *band_idx;
  const sweep_int *band_row;
  void *band_u;             /* boundary saving: u0^t, u1^t of the band (SWEEP_EQ_BAND_VALUES 2) */
  void *replay_u;           /* the CPML replay's ring state: u0, u1, psi0, psi1 */
  void *recon_u0_next;      /* the forward fields run backwards (boundary saving's adjoint) */
  void *recon_u0;
  void *recon_u1_next;
  void *recon_u1;
  void *replay_w;
  const sweep_int *outer_idx;
  const sweep_int *outer_row;
  const sweep_int *cpml_pos;
  const sweep_int *ring_code;
  const sweep_int *rec_groups;
  const sweep_int *rec_order;
} sweep_lsrtm_fields;

#endif /* SWEEP_COMMON_H */
