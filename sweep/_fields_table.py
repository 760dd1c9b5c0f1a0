"""The kernels' records, declared once: the parameter struct and every fields struct.

Each compiled equation's kernels take two records: the scalars of one call
(``sweep_acoustic_params``, shared by every equation) and the pointers to its
arrays (its fields struct).  They are declared here, and only here; three
consumers are generated from this table:

* the C/CUDA header ``sweep_fields.h``: the meson build runs this file as a
  script (``sweep_cy/meson.build``), and the CUDA preamble of
  ``sweep._cuda_backend`` is the same text (:func:`c_header`), so NVRTC and
  the C compiler see one definition;
* the C unit ``sweep_kernels.c`` (:func:`c_kernels`): each equation's entry
  point on its dispatch table (``cpu_dispatch.h``), the table the Cython
  binding's one ``run`` looks equations up in, and the layout probe (every
  struct's size and member offsets as the C compiler lays them out);
* the NumPy structured dtypes that fill the records (``sweep._params``),
  which ``tests/test_params_layout.py`` compares with the probe.

The fields structs of the leapfrog (pressure) equations follow one pattern
(:func:`pressure_fields`): the equation's kernel coefficients, one set of
wavefield members per wavefield stepped together, and the members the
generic CPU skeleton and the memory strategies read, under fixed names
(``cpu_skeleton.h``).  The staggered first-order systems (elastic, Maxwell)
share one struct of arrays indexed by field, coefficient and memory variable
(:func:`staggered_fields`).  This module uses the standard library only, so
that the build can run it before anything is compiled.

Run ``python sweep/_fields_table.py sweep_fields.h sweep_kernels.c`` to
write both files.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass

# Member kinds: the C type of one element, and its NumPy type code.
_C_TYPES = {
    "int": "sweep_int",
    "real": "double",
    "in": "const void *",  # an array the kernels read
    "out": "void *",  # an array the kernels may write
    "index": "const sweep_int *",  # int64 indices
}
NUMPY_TYPES = {"int": "i8", "real": "f8", "in": "u8", "out": "u8", "index": "u8"}


@dataclass(frozen=True)
class Member:
    """One struct member: ``kind`` (a key of ``_C_TYPES``), array ``count`` (0: scalar).

    The facts the Python side checks a buffer against before it takes its
    address (``sweep._compiled._Fields``): ``layout`` ``"grid"`` (per-shot
    padded fields) or ``"model"`` (a padded model array shared by all
    shots), both with the row pitch of the kernels' layout, else dense; and
    which passes write it (``writes``: ``"fwd"``, ``"adj"``, ``"both"``; a
    buffer no pass writes may be read-only).
    """

    name: str
    kind: str
    count: int = 0
    doc: str = ""
    layout: str = ""
    writes: str = ""


@dataclass(frozen=True)
class Struct:
    """A C struct (``typedef struct name {...} name;``) and its comment."""

    name: str
    doc: str
    members: tuple[Member, ...]


def _m(
    name: str, kind: str, count: int = 0, doc: str = "", *, layout: str = "", writes: str = ""
) -> Member:
    return Member(name, kind, count, doc, layout, writes)


PARAMS = Struct(
    "sweep_acoustic_params",
    "Scalars that describe one propagation call, shared by every equation.  Axis "
    "order is (z, y, x) with x contiguous; a 2D problem uses axes 1 and 2 and has "
    "shape[0] == 1.  Every index is in the padded grid: "
    "[halo | pml_lo | model | pml_hi | halo].",
    (
        _m("n_shots", "int"),
        _m("n_src", "int", doc="sources per shot"),
        _m("n_rec", "int", doc="receivers per shot"),
        _m("nt", "int", doc="length of the time axis of amplitude arrays"),
        _m("halo", "int", doc="stencil half width = order / 2"),
        _m("shot_stride", "int", doc="elements of one padded field of one shot"),
        _m("shape", "int", 3, "padded shape"),
        _m("stride", "int", 3, "element strides of the padded shape"),
        _m("plain_lo", "int", 3, "[plain_lo, plain_hi) needs no CPML terms"),
        _m("plain_hi", "int", 3),
        _m("free_lo", "int", 3, "1 when the low face is a free surface"),
        _m("free_hi", "int", 3),
        _m("model_lo", "int", 3, "[model_lo, model_hi): the model cells (no CPML, no halo)"),
        _m("model_hi", "int", 3),
        _m(
            "store_lo",
            "int",
            3,
            "[store_lo, store_hi): the cells whose W^t a gradient snapshot holds: model and "
            "CPML (every cell whose coefficients come from the model), the halo excluded",
        ),
        _m("store_hi", "int", 3),
        _m("store_every", "int", doc="snapshot interval k: steps t with t % k == 0 are stored"),
        _m("n_band", "int", doc="cells per shot in band_idx (boundary saving), else 0"),
        _m("n_rec_groups", "int", doc="entries of rec_groups (CUDA receiver injection)"),
        _m("n_outer", "int", doc="cells per shot in outer_idx (CPML replay), else 0"),
        _m("n_cpml", "int", doc="entries of cpml_pos"),
        _m("n_ring", "int", doc="cells per shot in ring_code (CPML replay), else 0"),
        _m(
            "block_steps",
            "int",
            doc="CPU temporal blocking of forward steps that store nothing (0 or 1: off): "
            "block_steps steps per sweep along the outermost axis, in groups of block_group "
            "planes; in 3D, tiles of block_tile rows in y",
        ),
        _m("block_group", "int"),
        _m("block_tile", "int"),
        _m(
            "slot_shots",
            "int",
            doc="shots per slot of store/band_u/replay_u (the CPU splits shots between "
            "threads; elsewhere n_shots)",
        ),
        _m(
            "simd_rows",
            "int",
            doc="CPU: 1 runs plain x ranges in explicit-vector rows, 0 only the scalar point loops",
        ),
        _m(
            "store_layout",
            "int",
            doc="an equation's snapshot layout variant, 0 by default (VRZ on the CPU: 1 keeps W "
            "of every stored cell, for compressed stores; 0 only of the outer cells)",
        ),
        _m("rdx", "real", 3, "1 / grid spacing"),
        _m("rdx2", "real", 3, "1 / grid spacing^2"),
    ),
)

# Members of every fields struct that the CPU skeleton and the memory
# strategies read by name (sources, receivers, snapshots, boundary saving's
# band and CPML replay, the CUDA adjoint's receiver groups), in three runs
# between which an equation inserts its own members.
_POINTS = (
    _m("src_amp", "in", doc="(n_shots, n_src, nt)"),
    _m("src_idx", "index", doc="(n_shots, n_src) flat indices into a shot's field"),
    _m("rec", "out", doc="(n_shots, n_rec, nt): forward output / adjoint input", writes="fwd"),
    _m("rec_idx", "index"),
    _m(
        "store",
        "out",
        doc="the snapshot values of the store cells of each stored step "
        "(n_stored, [values,] n_shots, cells), slot 0 = the chunk's first stored step; "
        "or NULL",
        writes="fwd",
    ),
)
_BAND = (
    _m("grad_src", "out", doc="(n_shots, n_src, nt) or NULL", writes="adj"),
    _m(
        "band_idx",
        "index",
        doc="boundary saving: the band = model cells within a halo of the CPML (those "
        "the interior time reversal cannot recompute), (n_band,) flat indices per shot",
    ),
    _m(
        "band_row",
        "index",
        doc="(shape[0] * shape[1],) first band_idx entry of each row, or -1 (the CPU "
        "forward saves the band while it sweeps the row)",
    ),
    _m(
        "band_u",
        "out",
        doc="(n_steps, n_shots, n_band [x values]): the band's state",
        writes="fwd",
    ),
    _m(
        "replay_u",
        "out",
        doc="CPML replay: the ring's state at the start of each step (u^t and psi^t "
        "along the cell's axis); the adjoint recomputes the band's W^t from it",
        writes="fwd",
    ),
)
_REPLAY = (
    _m(
        "replay_w",
        "out",
        doc="CPML replay (boundary saving: the CPML cannot run backwards, so the adjoint "
        "re-runs it forward from a saved state, the band's u^t loaded from band_u): the "
        "forward's W^t of the outer cells (n_steps, n_shots, n_outer); the adjoint "
        "correlates its CPML entries (cpml_pos)",
        writes="fwd",
    ),
    _m("outer_idx", "index", doc="(n_outer,) store cells farther from the plain cells, ascending"),
    _m("outer_row", "index", doc="(shape[0] * shape[1],) first outer_idx entry of each row, or -1"),
    _m("cpml_pos", "index", doc="(n_cpml,) positions in outer_idx of the CPML cells"),
    _m(
        "ring_code",
        "index",
        doc="(n_ring,) stored cells outside the model within a halo of it along one axis "
        "d (the band's stencil reads them), as 4 * flat index + d",
    ),
    _m(
        "rec_groups",
        "index",
        doc="CUDA adjoint receiver injection, one thread per (shot, receiver cell): "
        "rec_groups[4 g .. 4 g + 3] = shot, cell, first, end into rec_order, which lists "
        "receivers (shot * n_rec + r) by cell in receiver order, so duplicates add in the "
        "CPU's order; unused by the CPU",
    ),
    _m("rec_order", "index"),
)


def pressure_fields(
    equation: str,
    doc: str,
    coefficients: dict[str, str],
    waves: tuple[str, ...],
    *,
    rebuilds_snapshot: bool = False,
) -> Struct:
    """Fields struct of a leapfrog (second-order pressure) equation.

    ``coefficients``: the kernel coefficient arrays (padded grid, shared by all
    shots), with their comments; each has a gradient output ``grad_<name>``.
    ``waves``: the suffixes of the wavefields stepped together, each with
    ``u{s}_prev``, ``u{s}``, CPML ``psi{s}``/``zeta{s}`` pairs per axis and,
    for boundary saving's adjoint, ``recon_u{s}_next``/``recon_u{s}``.
    ``rebuilds_snapshot``: boundary saving's adjoint rebuilds each step's
    snapshot in ``store`` (``SWEEP_EQ_RECON_SNAPSHOT`` of the CPU skeleton),
    so both passes write it.
    """
    members = [_m(name, "in", doc=text, layout="model") for name, text in coefficients.items()]
    for s in waves:
        members += [
            _m(f"u{s}_prev", "out", layout="grid", writes="both"),
            _m(f"u{s}", "out", layout="grid", writes="both"),
            _m(f"psi{s}", "out", 3, layout="grid", writes="both"),
            _m(f"psi{s}_new", "out", 3, layout="grid", writes="both"),
            _m(f"zeta{s}", "out", 3, layout="grid", writes="both"),
            _m(f"zeta{s}_new", "out", 3, layout="grid", writes="adj"),
        ]
    both = {"store"} if rebuilds_snapshot else set()
    points = [dataclasses.replace(m, writes="both") if m.name in both else m for m in _POINTS]
    members += [
        _m("pml_a", "in", 3, "CPML a and b profiles per axis, length shape[d]"),
        _m("pml_b", "in", 3),
        *points,
        *(
            _m(
                f"grad_{n}",
                "out",
                doc="(n_shots, shot_stride) or NULL",
                layout="grid",
                writes="adj",
            )
            for n in coefficients
        ),
        *_BAND,
    ]
    for s in waves:
        members += [
            _m(
                f"recon_u{s}_next",
                "out",
                doc="adjoint only: u^{t+1} on entry, receives u^{t-1}",
                layout="grid",
                writes="adj",
            ),
            _m(f"recon_u{s}", "out", doc="adjoint only: u^t", layout="grid", writes="adj"),
        ]
    members += _REPLAY
    return Struct(f"sweep_{equation}_fields", doc, tuple(members))


# The staggered systems' record holds the largest of them: 3D elastic's 9
# fields (v_a, s_aa, s_ab) and 15 coefficients (dt b_a, dt C_ij, dt mu_ab).
STAGGERED_FIELDS = 9
STAGGERED_COEFFICIENTS = 15


def staggered_fields() -> Struct:
    """Fields struct of the staggered first-order systems (elastic, Maxwell)."""
    n, c = STAGGERED_FIELDS, STAGGERED_COEFFICIENTS
    members = (
        _m("coef", "in", c, "coefficients on the padded grid, times the live mask", layout="model"),
        _m(
            "field",
            "out",
            n,
            "(n_shots, padded): the fields (elastic: v_a, s_aa, s_ab)",
            layout="grid",
            writes="both",
        ),
        _m(
            "psi",
            "out",
            3 * n,
            "[field][kernel axis]: C-PML memory variables, or NULL",
            layout="grid",
            writes="both",
        ),
        _m(
            "grad",
            "out",
            c,
            "(n_shots, padded) per coefficient, or NULL",
            layout="grid",
            writes="adj",
        ),
        _m("pml_a", "in", 3, "profiles at the nodes"),
        _m("pml_b", "in", 3),
        _m("pml_ah", "in", 3, "profiles at the half nodes"),
        _m("pml_bh", "in", 3),
        _m("wv", "in", 6, "[kernel axis][forward]: (halo, shape[d]) velocity weights"),
        _m("ws", "in", doc="(halo,): stress weights"),
        *_POINTS,
        *_BAND,
        *_REPLAY,
        _m(
            "ring_idx",
            "index",
            doc="boundary saving: (n_ring,) flat indices per shot of the ring, the cells "
            "with C-PML terms that plain cells read (their fields come from the CPML replay)",
        ),
    )
    doc = (
        "Arrays of one call of the staggered first-order systems (elastic: "
        "cuda/elastic_stencil.h, Maxwell: cuda/maxwell_stencil.h have the indices of "
        "fields, coefficients and memory variables); halo is the taps per side of the "
        "run-time order.  The forward and the adjoint use the same slots for their fields "
        "and memory variables.  Sources and receivers are single-cell terms whose index is "
        "field * shot_stride + cell.  Boundary saving (elastic; cpu_phased.h): band_idx, "
        "band_u, replay_w, outer_row, replay_u and ring_idx, with every field per cell "
        "(values outermost, as the store); the other members of boundary saving stay NULL."
    )
    return Struct("sweep_elastic_fields", doc, members)


FIELDS = {
    "acoustic": pressure_fields(
        "acoustic",
        "Arrays of one call of the acoustic kernels.  Every wavefield is (n_shots, *padded "
        "shape).  The forward pass reads/writes u_prev, u, psi, psi_new, zeta; the adjoint "
        "pass reuses the same slots for its adjoint fields (lambda in u, adjoint psi in psi, "
        "adjoint zeta in zeta) and also uses zeta_new.",
        {"v2dt2": "(v dt)^2 on the padded grid, shared by all shots"},
        ("",),
    ),
    "vrz": pressure_fields(
        "vrz",
        "Arrays of one call of the VRZ kernels (variable density, cuda/vrz_stencil.h).  "
        "Boundary saving keeps the band's u (band_u), and the adjoint rebuilds each step's "
        "snapshot in store (one slot) from recon_u, the band's u and the CPML replay's "
        "(SWEEP_EQ_RECON_SNAPSHOT of the CPU skeleton); store holds W, u and psi of each "
        "axis (2 + ndim values per cell).",
        {
            "kappa_dt2": "K = z vp dt^2 on the padded grid, zero where u is not updated "
            "(its gradient: sum mu W, the caller divides by K)",
            "buoyancy": "B = vp / z on the whole padded grid, halo included",
        },
        ("",),
        rebuilds_snapshot=True,
    ),
    "lsrtm": pressure_fields(
        "lsrtm",
        "Arrays of one call of the Born (LSRTM) kernels: two acoustic wavefields, each with "
        "its own CPML memory variables: the background u0 and the scattered u1 (the "
        "adjoint's G0 = mu0 + R mu1 and mu1 in the same slots; lsrtm_stencil.h).  rec: "
        "forward (2, slot_shots, n_rec, nt), the scattered then the background traces; "
        "adjoint: the scattered residuals.  Boundary saving keeps u0 and u1 of the band, "
        "runs both fields backwards in recon_u0* and recon_u1* and recomputes the band's "
        "W0, W1 from them and the replay's ring (u0, u1, psi0, psi1).",
        {
            "v2dt2": "K = (vp dt)^2, as acoustic's (gradient: sum G0 (W0 - f) + mu1 W1)",
            "dv2dt2": "dK = 2 K mp, the Born source's factor and the adjoint's scattering "
            "term (gradient: sum mu1 (W0 - f))",
        },
        ("0", "1"),
    ),
    "elastic": staggered_fields(),
}
# Each equation's kernels, by the name sweep._C.run and sweep._cuda_backend.run
# take, and the fields struct they read (Maxwell runs on the staggered record).
KERNELS = {
    "acoustic": "acoustic",
    "lsrtm": "lsrtm",
    "vrz": "vrz",
    "elastic": "elastic",
    "maxwell": "elastic",
}
STRUCTS = (PARAMS, *FIELDS.values())


def _comment(text: str, indent: str = "") -> list[str]:
    """``text`` as a C block comment wrapped to 90 columns."""
    if "*/" in text:
        raise ValueError(f"a comment of the fields table closes itself: {text!r}")
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(indent) + 3 + len(line) + 1 + len(w) > 90:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    if len(lines) == 1:
        return [f"{indent}/* {lines[0]} */"]
    return [f"{indent}/*", *(f"{indent} * {x}" for x in lines), f"{indent} */"]


def _declaration(m: Member) -> str:
    ctype = _C_TYPES[m.kind]
    sep = "" if ctype.endswith("*") else " "
    return f"{ctype}{sep}{m.name}{f'[{m.count}]' if m.count else ''};"


def _size(struct: Struct) -> int:
    """Bytes of ``struct`` (every member is 8 bytes wide)."""
    return 8 * sum(max(m.count, 1) for m in struct.members)


def c_header() -> str:
    """Return ``sweep_fields.h``: every struct, valid C99 and CUDA C++ (no system headers)."""
    out = [
        "/* Generated from sweep/_fields_table.py: do not edit. */",
        "#ifndef SWEEP_FIELDS_H",
        "#define SWEEP_FIELDS_H",
        "",
        "typedef long long sweep_int;",
    ]
    for s in STRUCTS:
        out += ["", *_comment(s.doc), f"typedef struct {s.name} {{"]
        for m in s.members:
            if m.doc:
                out += _comment(m.doc, "  ")
            out.append(f"  {_declaration(m)}")
        out.append(f"}} {s.name};")
    words = max(_size(s) for s in FIELDS.values()) // 8
    out += ["", "/* 8-byte words of the largest fields struct. */"]
    out += [f"#define SWEEP_FIELDS_MAX_WORDS {words}", "#endif"]
    return "\n".join(out) + "\n"


def c_kernels() -> str:
    """Return ``sweep_kernels.c``: the entry points, the equation table and the layout probe."""
    out = [
        "/* Generated from sweep/_fields_table.py: do not edit. */",
        "#include <stddef.h>",
        '#include "cpu_dispatch.h"',
        "",
        "/* Each equation's entry point over its kernels of every (ndim, order, dtype). */",
    ]
    out += [f"SWEEP_DISPATCH({eq}, sweep_{s}_fields)" for eq, s in KERNELS.items()]
    out += ["", "const sweep_kernel_entry sweep_kernels[] = {"]
    out += [
        f'    {{"{eq}", sizeof(sweep_{s}_fields), sweep_{eq}_run}},' for eq, s in KERNELS.items()
    ]
    out += ["};", f"const int sweep_n_kernels = {len(KERNELS)};", ""]
    out += ["/* Every struct's size (member NULL), then its members' offsets. */"]
    out.append("const sweep_layout_entry sweep_layout[] = {")
    n = 0
    for s in STRUCTS:
        out.append(f'    {{"{s.name}", NULL, sizeof({s.name})}},')
        out += [f'    {{"{s.name}", "{m.name}", offsetof({s.name}, {m.name})}},' for m in s.members]
        n += 1 + len(s.members)
    out += ["};", f"const int sweep_n_layout = {n};"]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """Write ``sweep_fields.h`` and ``sweep_kernels.c`` to the paths on the command line."""
    if len(argv) != 3:
        print(
            "usage: python sweep/_fields_table.py sweep_fields.h sweep_kernels.c", file=sys.stderr
        )
        return 2
    for path, text in zip(argv[1:], (c_header(), c_kernels()), strict=True):
        # An unchanged file keeps its time stamp, so ninja (restat) recompiles
        # nothing when only the Python facts of the table changed.
        try:
            with open(path, encoding="utf-8") as fh:
                if fh.read() == text:
                    continue
        except FileNotFoundError:
            pass
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
