"""Fields of the elastic velocity-stress system and its source and receiver kinds.

Axes are named ``z, x`` (2D) or ``z, y, x`` (3D), in array order.  On the
staggered (Virieux) grid a field's index ``i`` along an axis is the position
``i`` or ``i + 1/2`` (staggered along that axis)::

    v_a     (velocity along a)       staggered along a
    s_aa    (normal stress)          on the nodes
    s_ab    (shear stress, a != b)   staggered along a and b

Shear stresses are named with their axes in alphabetical order (``sxz``,
``syz``, ``sxy``); the reversed spelling is accepted.

Every source and receiver kind is a weighted point operator
(:mod:`sweep._points`) at a node of the model grid: a staggered field is
interpolated onto the node (weights 1/2 along each staggered axis), and a
source spreads its amplitude with the same weights (the transpose).  The
strain-rate kinds of DAS (``exx``, ``exz``, ...) and fibre channels are rows
of weights too, over the velocities (:mod:`.das`): the staggered differences
of the update itself, interpolated onto the node, and averaged over a gauge.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._grid import Geometry
from ..._points import PointTerms
from ..._points import node_terms as _node_terms
from ..._staggered import check_point_kinds

AXES = {2: ("z", "x"), 3: ("z", "y", "x")}


def velocity(axis: str) -> str:
    """Name of the particle velocity along ``axis``."""
    return "v" + axis


def stress(a: str, b: str) -> str:
    """Name of the stress component ``s_ab`` (axes in alphabetical order)."""
    return "s" + "".join(sorted(a + b))


def strain(a: str, b: str) -> str:
    """Name of the strain-rate component ``e_ab`` (axes in alphabetical order)."""
    return "e" + "".join(sorted(a + b))


def fields(ndim: int) -> dict[str, frozenset[int]]:
    """Fields of the state in update order, each with the axes it is staggered along."""
    names = AXES[ndim]
    out = {velocity(a): frozenset({i}) for i, a in enumerate(names)}
    out.update({stress(a, a): frozenset() for a in names})
    for (i, a), (j, b) in itertools.combinations(enumerate(names), 2):
        out[stress(a, b)] = frozenset({i, j})
    return out


def velocities(ndim: int) -> tuple[str, ...]:
    """Velocity fields, by axis."""
    return tuple(velocity(a) for a in AXES[ndim])


def stresses(ndim: int) -> tuple[str, ...]:
    """Stress fields (normal ones first, by axis)."""
    return tuple(n for n in fields(ndim) if n.startswith("s"))


def memory_variables(ndim: int) -> list[tuple[str, str, int]]:
    """(name, field, axis) of the C-PML memory variable of every derivative in the update.

    Each velocity is differentiated along every axis (the strain rates); a
    stress ``s_ab`` along ``a`` and ``b`` (its terms of the divergences).
    The name is ``m_<field>_<axis>``.
    """
    out = []
    for name in fields(ndim):
        for d, a in enumerate(AXES[ndim]):
            if name.startswith("v") or a in name[1:]:
                out.append((f"m_{name}_{a}", name, d))
    return out


@dataclass(frozen=True)
class Kind:
    """A source or receiver kind: terms ``(field, weight)`` at a node, and what it means.

    Attributes
    ----------
    name : str
        The kind's name, e.g. ``"vz"``.
    terms : tuple of (str, float)
        Fields read (receivers) or written (sources) at the node, each
        interpolated onto the node from its staggered positions, with a weight.
        A source on a velocity is scaled by ``dt / (rho dV)`` at the
        velocity's cell (a force), one on a stress by ``dt / dV`` (see
        :class:`~sweep.equations.elastic.eager.EagerElastic`).
    units : str
        Amplitude units (documentation and ``sweep show``).
    """

    name: str
    terms: tuple[tuple[str, float], ...]
    units: str = ""


def source_kinds(ndim: int) -> dict[str, Kind]:
    """Source kinds of ``ndim`` dimensions."""
    force = "N" if ndim == 3 else "N/m (a line force)"
    moment = "N m/s" if ndim == 3 else "N/s (per metre of line)"
    out = {"f" + a: Kind("f" + a, ((velocity(a), 1.0),), force) for a in AXES[ndim]}
    # An explosion: an isotropic moment-rate tensor, -dt Mdot / dV on each normal stress.
    out["p"] = Kind("p", tuple((stress(a, a), -1.0) for a in AXES[ndim]), moment)
    return out


def receiver_kinds(ndim: int) -> dict[str, Kind]:
    """Receiver kinds of ``ndim`` dimensions."""
    names = AXES[ndim]
    out = {velocity(a): Kind(velocity(a), ((velocity(a), 1.0),), units="m/s") for a in names}
    out["p"] = Kind("p", tuple((stress(a, a), -1.0 / ndim) for a in names), units="Pa")
    for a, b in itertools.combinations_with_replacement(names, 2):
        n = stress(a, b)
        out[n] = Kind(n, ((n, 1.0),), units="Pa")
    # Strain rates: rows of weights over the velocities, built by .das (no terms here).
    for a, b in itertools.combinations_with_replacement(names, 2):
        n = strain(a, b)
        out[n] = Kind(n, (), units="1/s (quantity='strain': dimensionless)")
    return out


def is_strain(kind: str) -> bool:
    """Whether receiver kind ``kind`` is a strain rate (``e..``) or a fibre channel."""
    return kind.startswith("e") or kind == FIBRE


# The receiver kind of the columns a fibre adds (internal: not a user kind).
FIBRE = "fibre"


def _aliases(ndim: int) -> dict[str, str]:
    """Map reversed spellings of shear stresses and strain rates (``szx``) to their names."""
    return {
        p + b + a: p + "".join(sorted(a + b))
        for p in "se"
        for a, b in itertools.permutations(AXES[ndim], 2)
        if b > a
    }


def all_kinds(role: str) -> tuple[str, ...]:
    """Every kind of ``role`` (``"source"`` or ``"receiver"``) in 2D or 3D (for listings)."""
    table = source_kinds if role == "source" else receiver_kinds
    return tuple(dict.fromkeys([*table(3), *table(2)]))


def check_kinds(value: Any, count: int, ndim: int, role: str, default: str) -> tuple[str, ...]:
    """Validate ``source_kind`` / ``receiver_kind``: one kind per column.

    ``value`` is one string (every source/receiver) or a sequence of
    ``count`` strings.  Unknown kinds raise with the closest name; a kind of
    the other dimension (``"fy"`` in 2D) says so.
    """
    table = source_kinds(ndim) if role == "source" else receiver_kinds(ndim)
    other = source_kinds(5 - ndim) if role == "source" else receiver_kinds(5 - ndim)
    why = f"does not exist in {ndim}D (the axes are {', '.join(AXES[ndim])})"
    return check_point_kinds(
        value, count, f"{role}_kind", role, list(table), default, aliases=_aliases(ndim),
        elsewhere={k: why for k in other if k not in table},
    )  # fmt: skip


def stencil_taps(geom: Geometry, d: int, forward: bool) -> np.ndarray:
    """Taps ``m`` of a velocity's staggered difference along ``d`` at each padded index.

    A velocity is zero beyond a free surface (not an image), so a stencil
    that reaches there drops to the highest order whose taps stay on this
    side: order ``2 m`` with ``m`` the taps available (none, ``m = 0``, for the
    normal derivative on the surface row, which the surface condition
    replaces).  ``forward``: from the nodes to the half nodes.
    """
    h, n = geom.halo, geom.padded_shape[d]
    p = np.arange(n)
    m = np.full(n, geom.order // 2)
    if geom.free_surface[2 * d]:  # the first valid velocity index is h
        m = np.minimum(m, p - h + 1 if forward else p - h)
    if geom.free_surface[2 * d + 1]:  # the last: S (nodes) or S - 1 (half nodes)
        m = np.minimum(m, (n - 1 - h) - p)
    return np.maximum(m, 0)


def mirrored(geom: Geometry, name: str, d: int) -> bool:
    """Whether field ``name`` has odd mirror images beyond free surfaces of axis ``d``.

    The stress image: the normal stress across the surface and the shear
    stresses with a component along it (``s_dd``, ``s_db``).
    """
    return name.startswith("s") and AXES[geom.ndim][d] in name[1:]


def node_terms(
    geom: Geometry,
    loc: np.ndarray,
    kinds: Sequence[str],
    table: dict[str, Kind],
    valid: Callable[[str, int], np.ndarray],
) -> list[PointTerms]:
    """Weighted point operators of ``kinds`` at model nodes (:func:`sweep._points.node_terms`)."""
    terms = {k: table[k].terms for k in kinds}
    return _node_terms(geom, loc, kinds, terms, fields(geom.ndim), valid)
