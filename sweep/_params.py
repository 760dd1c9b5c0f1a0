"""NumPy mirror of the C structs in ``cuda/sweep_common.h``.

The CPU binding copies a record of :data:`ACOUSTIC_PARAMS` into the C struct
(it checks the size), and the CUDA kernels take it by value, so this is the one
Python description of the layout.  ``tests/test_params_layout.py`` compares it
field by field with the offsets the C compiler reports.
"""

from __future__ import annotations

import numpy as np

_I = np.int64
_F = np.float64

ACOUSTIC_PARAMS = np.dtype(
    [
        ("n_shots", _I),
        ("n_src", _I),
        ("n_rec", _I),
        ("nt", _I),
        ("halo", _I),
        ("shot_stride", _I),
        ("shape", _I, (3,)),
        ("stride", _I, (3,)),
        ("plain_lo", _I, (3,)),
        ("plain_hi", _I, (3,)),
        ("free_lo", _I, (3,)),
        ("free_hi", _I, (3,)),
        ("model_lo", _I, (3,)),
        ("model_hi", _I, (3,)),
        ("store_lo", _I, (3,)),
        ("store_hi", _I, (3,)),
        ("store_every", _I),
        ("n_band", _I),
        ("n_rec_groups", _I),
        ("n_outer", _I),
        ("n_cpml", _I),
        ("n_ring", _I),
        ("block_steps", _I),
        ("block_group", _I),
        ("block_tile", _I),
        ("slot_shots", _I),
        ("simd_rows", _I),
        ("rdx", _F, (3,)),
        ("rdx2", _F, (3,)),
    ],
    align=True,
)

_P = np.uint64  # device or host pointer

ACOUSTIC_FIELDS = np.dtype(
    [
        ("v2dt2", _P),
        ("u_prev", _P),
        ("u", _P),
        ("psi", _P, (3,)),
        ("psi_new", _P, (3,)),
        ("zeta", _P, (3,)),
        ("zeta_new", _P, (3,)),
        ("pml_a", _P, (3,)),
        ("pml_b", _P, (3,)),
        ("src_amp", _P),
        ("src_idx", _P),
        ("rec", _P),
        ("rec_idx", _P),
        ("store", _P),
        ("grad_v2dt2", _P),
        ("grad_src", _P),
        ("band_idx", _P),
        ("band_row", _P),
        ("band_u", _P),
        ("replay_u", _P),
        ("recon_u_next", _P),
        ("recon_u", _P),
        ("replay_w", _P),
        ("outer_idx", _P),
        ("outer_row", _P),
        ("cpml_pos", _P),
        ("ring_code", _P),
        ("rec_groups", _P),
        ("rec_order", _P),
    ],
    align=True,
)

# The Born (LSRTM) kernels' arrays (sweep_lsrtm_fields); they take ACOUSTIC_PARAMS.
LSRTM_FIELDS = np.dtype(
    [
        ("v2dt2", _P),
        ("dv2dt2", _P),
        ("u0_prev", _P),
        ("u0", _P),
        ("psi0", _P, (3,)),
        ("psi0_new", _P, (3,)),
        ("zeta0", _P, (3,)),
        ("zeta0_new", _P, (3,)),
        ("u1_prev", _P),
        ("u1", _P),
        ("psi1", _P, (3,)),
        ("psi1_new", _P, (3,)),
        ("zeta1", _P, (3,)),
        ("zeta1_new", _P, (3,)),
        ("pml_a", _P, (3,)),
        ("pml_b", _P, (3,)),
        ("src_amp", _P),
        ("src_idx", _P),
        ("rec", _P),
        ("rec_idx", _P),
        ("store", _P),
        ("grad_v2dt2", _P),
        ("grad_dv2dt2", _P),
        ("grad_src", _P),
        ("band_idx", _P),
        ("band_row", _P),
        ("band_u", _P),
        ("replay_u", _P),
        ("recon_u0_next", _P),
        ("recon_u0", _P),
        ("recon_u1_next", _P),
        ("recon_u1", _P),
        ("replay_w", _P),
        ("outer_idx", _P),
        ("outer_row", _P),
        ("cpml_pos", _P),
        ("ring_code", _P),
        ("rec_groups", _P),
        ("rec_order", _P),
    ],
    align=True,
)


# The VRZ kernels' arrays (sweep_vrz_fields): K = kappa_dt2 and the buoyancy
# B, their gradients, and acoustic's other members.
VRZ_FIELDS = np.dtype(
    [
        ("kappa_dt2", _P),
        ("buoyancy", _P),
        ("u_prev", _P),
        ("u", _P),
        ("psi", _P, (3,)),
        ("psi_new", _P, (3,)),
        ("zeta", _P, (3,)),
        ("zeta_new", _P, (3,)),
        ("pml_a", _P, (3,)),
        ("pml_b", _P, (3,)),
        ("src_amp", _P),
        ("src_idx", _P),
        ("rec", _P),
        ("rec_idx", _P),
        ("store", _P),
        ("grad_kappa_dt2", _P),
        ("grad_buoyancy", _P),
        ("grad_src", _P),
        ("band_idx", _P),
        ("band_row", _P),
        ("band_u", _P),
        ("replay_u", _P),
        ("recon_u_next", _P),
        ("recon_u", _P),
        ("replay_w", _P),
        ("outer_idx", _P),
        ("outer_row", _P),
        ("cpml_pos", _P),
        ("ring_code", _P),
        ("rec_groups", _P),
        ("rec_order", _P),
    ],
    align=True,
)

# The elastic kernels' arrays (sweep_elastic_fields; cuda/elastic_stencil.h has the indices).
ELASTIC_FIELDS = np.dtype(
    [
        ("coef", _P, (15,)),
        ("field", _P, (9,)),
        ("psi", _P, (27,)),
        ("grad", _P, (15,)),
        ("pml_a", _P, (3,)),
        ("pml_b", _P, (3,)),
        ("pml_ah", _P, (3,)),
        ("pml_bh", _P, (3,)),
        ("wv", _P, (6,)),
        ("ws", _P),
        ("src_amp", _P),
        ("src_idx", _P),
        ("rec", _P),
        ("rec_idx", _P),
        ("store", _P),
        ("grad_src", _P),
        ("band_idx", _P),
        ("band_row", _P),
        ("band_u", _P),
        ("replay_u", _P),
        ("replay_w", _P),
        ("outer_idx", _P),
        ("outer_row", _P),
        ("cpml_pos", _P),
        ("ring_code", _P),
        ("rec_groups", _P),
        ("rec_order", _P),
    ],
    align=True,
)
