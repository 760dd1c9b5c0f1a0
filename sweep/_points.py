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
from typing import Any

import numpy as np

from ._xp import device_of, scatter_add

__all__ = ["PointTerms", "group_terms", "inject_terms", "node_terms", "sample_terms"]


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
    for shot in range(loc.shape[0]):
        for col, kind in enumerate(kinds):
            node = [int(loc[shot, col, d]) + geom.lo(d) for d in range(geom.ndim)]
            for name, w in terms[kind]:
                offsets = [(-1, 0) if d in staggering[name] else (0,) for d in range(geom.ndim)]
                cells = []
                for off in itertools.product(*offsets):
                    idx = [node[d] + off[d] for d in range(geom.ndim)]
                    if all(valid(name, d)[idx[d]] for d in range(geom.ndim)):
                        cells.append(sum(i * s for i, s in zip(idx, strides, strict=True)))
                for cell in cells:
                    rows.append((shot, col, name, cell, w / len(cells)))
    return group_terms(rows)
