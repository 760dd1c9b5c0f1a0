"""NumPy dtypes of the kernels' records, built from ``sweep._fields_table``.

The table declares the C structs once (the build renders ``sweep_fields.h``
from it); these are the same records as NumPy structured dtypes, which the
Python side fills and hands to ``sweep._C.run`` (it copies them into the C
structs, checking the sizes) or to the CUDA kernels (by value).
``tests/test_params_layout.py`` compares every dtype field by field with the
offsets the C compiler reports.
"""

from __future__ import annotations

import numpy as np

from ._fields_table import FIELDS, KERNELS, NUMPY_TYPES, PARAMS, Struct


def record_dtype(struct: Struct) -> np.dtype:
    """Return the aligned NumPy dtype of ``struct`` (pointers as ``uint64``)."""
    return np.dtype(
        [
            (m.name, NUMPY_TYPES[m.kind], (m.count,)) if m.count else (m.name, NUMPY_TYPES[m.kind])
            for m in struct.members
        ],
        align=True,
    )


ACOUSTIC_PARAMS = record_dtype(PARAMS)
# Each fields struct by its C name, and each equation's kernels' record.
STRUCT_DTYPES = {PARAMS.name: ACOUSTIC_PARAMS} | {s.name: record_dtype(s) for s in FIELDS.values()}
KERNEL_FIELDS = {eq: STRUCT_DTYPES[FIELDS[s].name] for eq, s in KERNELS.items()}


class MemberFacts:
    """What ``sweep._compiled`` checks a buffer against, per member name of one record."""

    def __init__(self, struct: Struct) -> None:
        ms = struct.members
        self.index = frozenset(m.name for m in ms if m.kind == "index")  # int64 arrays
        self.grid = frozenset(m.name for m in ms if m.layout == "grid")  # per-shot padded
        self.model = frozenset(m.name for m in ms if m.layout == "model")  # padded, shared
        # Per direction (adjoint?), the buffers the kernels write (the rest may be read-only).
        self.writes = {
            False: frozenset(m.name for m in ms if m.writes in ("fwd", "both")),
            True: frozenset(m.name for m in ms if m.writes in ("adj", "both")),
        }


KERNEL_MEMBERS = {eq: MemberFacts(FIELDS[s]) for eq, s in KERNELS.items()}
