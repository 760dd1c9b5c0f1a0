"""Weighted point operators: source injection and receiver sampling as lists of terms.

A source or receiver of any kind is a set of terms, each a field, a cell of
that field (flat index into one shot's padded grid) and a weight.  A receiver
samples ``sum_terms weight * field[cell]``; a source adds ``weight * coef[cell]
* amplitude`` at each of its terms (``coef``: an optional model-dependent
scale on the padded grid, e.g. ``dt / (rho dV)`` of a force).  Interpolating
a staggered field onto a node, an average over a gauge length or a moment
tensor are new weights, not new code.  The injection is the transpose of the
sampling with the same terms, so adjoints follow.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ._xp import device_of, scatter_add

__all__ = [
    "KernelTerms",
    "PointTerms",
    "group_terms",
    "inject_terms",
    "kernel_terms",
    "node_terms",
    "sample_terms",
]


@dataclass(frozen=True)
class PointTerms:
    """Terms of one point operator on one field (host arrays of equal length).

    Attributes
    ----------
    field : str
        The state's field the terms act on.
    shot, column : ndarray of int64
        Shot and source/receiver index (within its shot) of each term.
    cell : ndarray of int64
        Flat index of the term's cell in one shot's padded field.
    weight : ndarray of float64
        Weight of each term.
    """

    field: str
    shot: np.ndarray
    column: np.ndarray
    cell: np.ndarray
    weight: np.ndarray


def group_terms(
    terms: Sequence[tuple[int, int, str, int, float]],
) -> list[PointTerms]:
    """Group ``(shot, column, field, cell, weight)`` tuples by field (in first-seen order)."""
    by_field: dict[str, list[tuple[int, int, int, float]]] = {}
    for shot, col, name, cell, w in terms:
        by_field.setdefault(name, []).append((shot, col, cell, w))
    out = []
    for name, rows in by_field.items():
        arr = np.array(rows, dtype=np.float64).reshape(-1, 4)
        out.append(
            PointTerms(
                name,
                arr[:, 0].astype(np.int64),
                arr[:, 1].astype(np.int64),
                arr[:, 2].astype(np.int64),
                arr[:, 3].copy(),
            )
        )
    return out


@dataclass
class DeviceTerms:
    """:class:`PointTerms` on an engine's device (:meth:`sweep._eager.EagerBase.point_terms`)."""

    field: str
    flat: Any  # shot * shot_stride + cell: index into the flattened field
    local: Any  # cell: index into a padded coefficient without the shot axis
    slot: Any  # shot * n_columns + column: index into the flattened amplitudes/samples
    weight: Any


def inject_terms(
    xp: Any, state: dict[str, Any], terms: list[DeviceTerms], amp_t: Any,
    coef: dict[str, Any] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Return ``state`` with the sources added: ``field[cell] += w coef[cell] amp``.

    ``amp_t`` has shape ``(n_shots, n_sources)``; ``coef`` maps a field to its
    padded scale (fields absent from it: 1).
    """
    if amp_t is None:
        return state
    state = dict(state)
    amp = xp.reshape(amp_t, (-1,))
    for t in terms:
        vals = t.weight * xp.take(amp, t.slot)
        c = None if coef is None else coef.get(t.field)
        if c is not None:
            vals = vals * xp.take(xp.reshape(c, (-1,)), t.local)
        u = state[t.field]
        state[t.field] = xp.reshape(scatter_add(xp.reshape(u, (-1,)), t.flat, vals), u.shape)
    return state


def sample_terms(
    xp: Any, state: dict[str, Any], terms: list[DeviceTerms], n_shots: int, n_columns: int
) -> Any:
    """Receiver samples ``(n_shots, n_columns)``: ``sum_terms w field[cell]`` per receiver."""
    out = None
    for t in terms:
        u = state[t.field]
        vals = t.weight * xp.take(xp.reshape(u, (-1,)), t.flat)
        zero = xp.zeros((n_shots * n_columns,), dtype=u.dtype, device=device_of(u))
        part = scatter_add(zero, t.slot, vals)
        out = part if out is None else out + part
    if out is None:  # no terms at all: zero samples
        return xp.zeros((n_shots, n_columns))
    return xp.reshape(out, (n_shots, n_columns))


def node_terms(
    geom: Any,
    loc: np.ndarray,
    kinds: Sequence[str],
    terms: dict[str, Sequence[tuple[str, float]]],
    staggering: dict[str, frozenset[int]],
    valid: Callable[[str, int], np.ndarray],
) -> list[PointTerms]:
    """Weighted point operators of ``kinds`` (one per column) at model nodes ``loc``.

    ``loc`` has shape ``(n_shots, n_columns, ndim)``; ``terms[kind]`` lists the
    ``(field, weight)`` pairs of a kind, ``staggering[field]`` the axes a field
    is staggered along (a :class:`sweep._grid.Geometry` places the grid).  A
    field staggered along an axis is interpolated onto the node from the cells
    at ``i - 1/2`` and ``i + 1/2`` (indices ``i - 1`` and ``i``, weight 1/2
    each); cells where the field holds no value (``valid(field, axis)`` is 0:
    the halo, fields beyond a free surface) are dropped and the remaining
    weights of that field renormalised.
    """
    rows = []
    strides = geom.strides
    held: dict[tuple[str, int], list] = {}  # valid() once per field and axis, not per point

    def holds(name: str, d: int, i: int) -> bool:
        if (name, d) not in held:
            held[name, d] = np.asarray(valid(name, d)).tolist()
        return bool(held[name, d][i])

    lo = [geom.lo(d) for d in range(geom.ndim)]
    nodes = np.asarray(loc).tolist()  # Python ints: no NumPy scalar per coordinate
    for shot in range(loc.shape[0]):
        for col, kind in enumerate(kinds):
            node = [int(nodes[shot][col][d]) + lo[d] for d in range(geom.ndim)]
            for name, w in terms[kind]:
                offsets = [(-1, 0) if d in staggering[name] else (0,) for d in range(geom.ndim)]
                cells = []
                for off in itertools.product(*offsets):
                    idx = [node[d] + off[d] for d in range(geom.ndim)]
                    if all(holds(name, d, idx[d]) for d in range(geom.ndim)):
                        cells.append(sum(i * s for i, s in zip(idx, strides, strict=True)))
                for cell in cells:
                    rows.append((shot, col, name, cell, w / len(cells)))
    return group_terms(rows)


@dataclass(frozen=True)
class KernelTerms:
    """Point operators as compiled kernels take them: distinct single-cell terms per shot.

    A kernel records (or injects) one value per term and step; the columns
    (receivers, sources) are a sparse weighted map of the terms, applied on
    the host: a receiver is ``sum_k W[c, k] term_k``, a term's amplitude
    ``sum_c W[c, k] amp_c`` (a multi-cell operator, such as a gauge-length
    average or a fibre channel, is many terms; terms that several columns
    share are recorded once).

    Attributes
    ----------
    idx : ndarray of int64, shape (n_shots, n_terms)
        ``field * kernel_shot_stride + cell`` (the kernels' layout), distinct
        within a shot; a shot with fewer terms repeats its first one, with
        no weight.
    n_columns : int
        Sources or receivers per shot.
    shot, column, term, weight : ndarray
        The nonzero entries of the weight matrix ``W[shot, column, term]``.
    """

    idx: np.ndarray
    n_columns: int
    shot: np.ndarray
    column: np.ndarray
    term: np.ndarray
    weight: np.ndarray

    @property
    def n_terms(self) -> int:
        """Terms per shot (the kernels' record and amplitude rows)."""
        return int(self.idx.shape[1])

    def to_columns(self, x: np.ndarray) -> np.ndarray:
        """``(n_shots, n_terms, nt)`` -> ``(n_shots, n_columns, nt)``: ``sum_k W[c, k] x[k]``."""
        return _weighted_sums(x, self._by_column, self.n_columns, self.weight.dtype)

    def to_terms(self, x: np.ndarray) -> np.ndarray:
        """``(n_shots, n_columns, nt)`` -> ``(n_shots, n_terms, nt)``: the transpose."""
        return _weighted_sums(x, self._by_term, self.n_terms, self.weight.dtype)

    @cached_property
    def _by_column(self) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        return _sum_groups(self.shot, self.column, self.term, self.weight, self.n_columns,
                           self.n_terms)  # fmt: skip

    @cached_property
    def _by_term(self) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
        return _sum_groups(self.shot, self.term, self.column, self.weight, self.n_terms,
                           self.n_columns)  # fmt: skip


def _sum_groups(
    shot: np.ndarray, out: np.ndarray, inp: np.ndarray, weight: np.ndarray, n_out: int, n_in: int
) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Group the entries into sums per output row ``shot * n_out + out``, slot by slot.

    Returns the rows (most entries first) and, per slot ``j``, the input row
    ``shot * n_in + inp`` and the weight of the ``j``-th entry of each row
    that has more than ``j`` entries (a prefix of the rows).  Entries keep
    their order within a row.
    """
    key = shot * n_out + out
    order = np.argsort(key, kind="stable")
    key, src, w = key[order], (shot * n_in + inp)[order], weight[order]
    rows, first, count = np.unique(key, return_index=True, return_counts=True)
    by = np.argsort(-count, kind="stable")
    rows, first, count = rows[by], first[by], count[by]
    slots = []
    for j in range(int(count.max()) if count.size else 0):
        n = int(np.count_nonzero(count > j))
        slots.append((src[first[:n] + j], w[first[:n] + j]))
    return rows, slots


def _weighted_sums(
    x: np.ndarray, groups: tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]], n_out: int,
    wdt: Any,
) -> np.ndarray:  # fmt: skip
    """Rows ``sum w x[shot, inp]`` of :func:`_sum_groups`' groups, shape (n_shots, n_out, nt).

    Each slot is one gathered product per row (in order, so each row sums
    its entries as a running sum); in time blocks, which stay in cache: a
    whole record at once (or ``np.add.reduceat`` over the entries) took
    20x longer (300 two-term receivers, 2 shots, nt 1500: ~2 ms).
    """
    rows, slots = groups
    nt = x.shape[-1]
    flat = x.reshape(-1, nt)
    out = np.zeros((x.shape[0] * n_out, nt), dtype=np.result_type(x.dtype, wdt))
    block = 256  # time samples per pass
    for t0 in range(0, nt if rows.size else 0, block):
        acc = np.zeros((rows.size, min(block, nt - t0)), dtype=out.dtype)
        for src, w in slots:
            acc[: src.size] += w[:, None] * flat[src, t0 : t0 + block]
        out[rows, t0 : t0 + block] = acc
    return out.reshape(x.shape[0], n_out, nt)


def kernel_terms(
    geom: Any,
    groups: Sequence[PointTerms],
    field_order: Sequence[str],
    n_columns: int,
    scale: Callable[[str], float] | None = None,
) -> KernelTerms:
    """Collect point operators into :class:`KernelTerms` for a compiled kernel.

    ``groups``: the terms of every column (cells numbered in one shot's
    padded grid); ``field_order``: the kernel's field numbering;
    ``scale(field)``: a constant folded into the weights of a field's terms
    (1 when None).  Terms on the same field and cell of a shot merge.
    """
    stride = geom.kernel_shot_stride
    n_shots = geom.n_shots
    keys, shots, cols, weights = [], [], [], []
    for t in groups:
        f = list(field_order).index(t.field)
        keys.append(f * stride + geom.kernel_index(np.asarray(t.cell, dtype=np.int64)))
        shots.append(np.asarray(t.shot, dtype=np.int64))
        cols.append(np.asarray(t.column, dtype=np.int64))
        weights.append(
            np.asarray(t.weight, dtype=np.float64) * (1.0 if scale is None else scale(t.field))
        )
    key = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    shot = np.concatenate(shots) if shots else np.zeros(0, dtype=np.int64)
    col = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    weight = np.concatenate(weights) if weights else np.zeros(0)
    # Distinct (field, cell) per shot, numbered in ascending order (memory order).
    term = np.zeros(key.shape, dtype=np.int64)
    per_shot = []
    for s in range(n_shots):
        mine = shot == s
        cells, inverse = np.unique(key[mine], return_inverse=True)
        term[mine] = inverse
        per_shot.append(cells)
    n_terms = max([len(c) for c in per_shot] + [1])
    idx = np.zeros((n_shots, n_terms), dtype=np.int64)
    for s, cells in enumerate(per_shot):
        if len(cells):
            idx[s, : len(cells)] = cells
            idx[s, len(cells) :] = cells[0]
    # Merge entries of the same (shot, column, term); drop zeros.
    flat = (shot * n_columns + col) * n_terms + term
    uniq, inverse = np.unique(flat, return_inverse=True)
    merged = np.zeros(len(uniq))
    np.add.at(merged, inverse, weight)
    keep = merged != 0
    uniq, merged = uniq[keep], merged[keep]
    return KernelTerms(
        idx=idx,
        n_columns=n_columns,
        shot=uniq // (n_columns * n_terms),
        column=uniq // n_terms % n_columns,
        term=uniq % n_terms,
        weight=merged,
    )
