"""DAS: strain-rate receivers and fibres as weighted point operators over the velocities.

The strain rate is the symmetric velocity gradient ``e_ab = (d_a v_b + d_b
v_a) / 2`` (1/s).  At a node of the model grid it is built from the same
staggered differences as the stress update (order ``accuracy``, lowered
next to a free surface exactly as the update lowers them):

- ``e_aa`` at node ``i``: the backward difference of ``v_a`` (which lives at
  ``i + 1/2``), ``sum_k c_k (v_a[i+k-1] - v_a[i-k]) / h_a``, the very value
  the normal stresses are updated with;
- ``e_ab`` (``a != b``): the forward differences at the four shear-stress
  positions around the node, ``(i +- 1/2, j +- 1/2)``, averaged onto it
  (weight 1/4; a position beyond a free surface is the odd image of the one
  inside, as for the shear stresses, so ``e_ab`` vanishes on the surface).

Between nodes the strain rate is multilinear.  A receiver with tensor ``W``
reads ``sum_ab W_ab e_ab`` (a fibre along the unit tangent ``t`` has ``W =
t t^T``); a gauge length ``L`` averages it over the part of the path within
``L / 2`` of the channel, integrated exactly (two Gauss points on every
piece between grid planes and path vertices, where the multilinear strain
rate is a polynomial of degree at most 3 along the path).  Everything is a
row of ``(field, cell, weight)`` terms over the velocities
(:mod:`sweep._points`), sampled with the velocities at ``(t + 1/2) dt``, so
gradients flow through it and compiled kernels can take the same rows.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ... import _fd
from ..._grid import Geometry
from ..._points import PointTerms, group_terms
from ..._staggered import valid_axis
from . import kinds

__all__ = ["Fibre", "helical_response", "kind_terms", "fibre_terms", "check_receivers"]

# Gauss-Legendre nodes and weights on [0, 1] (exact to degree 3).
_GAUSS_T = (0.5 - 0.5 / math.sqrt(3.0), 0.5 + 0.5 / math.sqrt(3.0))
_TOL = 1e-9


def helical_response(axis: Sequence[float], winding_angle: float | None) -> np.ndarray:
    """Strain tensor weights ``W`` of a fibre along a cable with unit axis ``axis``.

    ``winding_angle`` (degrees) is the angle between the fibre and the plane
    perpendicular to the cable axis: 90 (or None) is a straight fibre along
    the axis, ``W = a a^T``.  A helix at angle ``alpha`` has the tangent
    ``sin(alpha) a + cos(alpha) (-sin(phi) n1 + cos(phi) n2)`` at azimuth
    ``phi``; averaged over whole turns (a gauge much longer than the pitch)
    its axial strain is

        ``sin^2(alpha) e_aa + cos^2(alpha) (e_11 + e_22) / 2``

    (the terms odd in ``phi`` and ``e_12`` average out).  At 35.26 degrees
    (``tan^2 alpha = 1/2``) the three normal strains have equal weights 1/3
    (the fibre reads a third of the volumetric strain); at 54.74 degrees
    (``tan^2 alpha = 2``) the axis has weight 2/3 and each transverse axis
    1/6, four times less.  In 2D (plane strain) the out-of-plane strain is
    zero, so only the in-plane normal ``n`` remains: ``W = sin^2 a a^T +
    cos^2 n n^T / 2``.  Strain transfer through the cable's materials is not
    modelled.
    """
    a = np.asarray(axis, dtype=np.float64)
    a = a / np.linalg.norm(a)
    along = np.outer(a, a)
    if winding_angle is None:
        return along
    alpha = math.radians(float(winding_angle))
    return math.sin(alpha) ** 2 * along + 0.5 * math.cos(alpha) ** 2 * (np.eye(a.size) - along)


@dataclass(frozen=True)
class Fibre:
    """A fibre along a polyline, with channels every ``channel_spacing`` metres.

    Parameters
    ----------
    points : sequence of sequence of float, shape (n_points, ndim)
        Vertices of the fibre (of its cable, for a helical winding) in metres,
        in the model's axis order (z, x) or (z, y, x), with node ``(0, 0)`` at
        the origin: node ``i`` along an axis is at ``i * grid_spacing``.
    channel_spacing : float
        Arc length between channels (metres, along the cable axis).
    start : float
        Arc length of the first channel from the first vertex (default 0).
    winding_angle : float or None
        Helically wound fibre: the angle in degrees between the fibre and the
        plane perpendicular to the cable (see :func:`helical_response`); None,
        a straight fibre (``e = t^T E t`` along the tangent ``t``).

    Each channel reads ``sum_ab W_ab e_ab`` at its position, ``W`` from the
    tangent of its segment (at a vertex: the segment it starts); with
    ``gauge_length`` (an argument of :func:`sweep.elastic`) the average over
    the gauge centred on the channel along the fibre, cut at the fibre's
    ends (an end channel averages over the part of its gauge on the fibre).
    """

    points: Any
    channel_spacing: float
    start: float = 0.0
    winding_angle: float | None = None

    def __post_init__(self) -> None:
        pts = np.asarray(self.points, dtype=np.float64)
        if pts.ndim != 2 or pts.shape[0] < 2 or pts.shape[1] not in (2, 3):
            raise ValueError(
                "Fibre points must have shape (n_points >= 2, ndim) with ndim 2 or 3 (metres, "
                f"the model's axis order), got shape {pts.shape}"
            )
        if not np.all(np.isfinite(pts)):
            raise ValueError("Fibre points must be finite")
        seg = np.linalg.norm(np.diff(pts, axis=0), axis=1)
        if np.any(seg <= 0):
            raise ValueError(
                f"Fibre points {int(np.argmin(seg))} and {int(np.argmin(seg)) + 1} coincide; "
                "every segment needs a positive length"
            )
        sp = self.channel_spacing
        if not (isinstance(sp, (int, float)) and math.isfinite(sp) and sp > 0):
            raise ValueError(f"channel_spacing must be a positive length in metres, got {sp!r}")
        if not (isinstance(self.start, (int, float)) and 0 <= self.start <= seg.sum()):
            raise ValueError(
                f"start must be an arc length in [0, {seg.sum():g}] (the fibre's length), "
                f"got {self.start!r}"
            )
        wa = self.winding_angle
        if wa is not None and not (isinstance(wa, (int, float)) and 0 <= wa <= 90):
            raise ValueError(f"winding_angle must be in [0, 90] degrees or None, got {wa!r}")
        # Tuples: hashable, and an exact repr (part of the adapters' cache keys).
        object.__setattr__(self, "points", tuple(tuple(float(x) for x in p) for p in pts))

    @property
    def ndim(self) -> int:
        """Dimensions of the fibre's coordinates."""
        return len(self.points[0])

    @cached_property
    def _cum(self) -> np.ndarray:
        pts = np.asarray(self.points)
        return np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(pts, axis=0), axis=1))])

    @property
    def length(self) -> float:
        """Arc length of the polyline (metres)."""
        return float(self._cum[-1])

    @cached_property
    def arc(self) -> np.ndarray:
        """Arc length of each channel (metres from the first vertex)."""
        n = math.floor((self.length - self.start) / self.channel_spacing + _TOL) + 1
        return self.start + self.channel_spacing * np.arange(n)

    @property
    def n_channels(self) -> int:
        """Number of channels."""
        return len(self.arc)

    def _segment(self, s: float) -> int:
        """Index of the segment holding arc length ``s`` (at a vertex: the one it starts)."""
        k = np.searchsorted(self._cum, s + _TOL * max(1.0, s), side="right") - 1
        return int(min(k, len(self._cum) - 2))

    def _tangent(self, k: int) -> np.ndarray:
        pts = np.asarray(self.points)
        d = pts[k + 1] - pts[k]
        return d / np.linalg.norm(d)

    def position(self, s: float) -> np.ndarray:
        """Coordinates (metres) of arc length ``s``."""
        k = self._segment(s)
        return np.asarray(self.points[k]) + (s - self._cum[k]) * self._tangent(k)

    @cached_property
    def positions(self) -> np.ndarray:
        """Channel coordinates (metres), shape ``(n_channels, ndim)``."""
        return np.asarray([self.position(s) for s in self.arc])

    @cached_property
    def tangents(self) -> np.ndarray:
        """Unit tangent of each channel's segment, shape ``(n_channels, ndim)``."""
        return np.asarray([self._tangent(self._segment(s)) for s in self.arc])

    def nodes(self, spacing: Sequence[float]) -> np.ndarray:
        """Nearest model node of each channel (int64, ``(n_channels, ndim)``)."""
        return np.rint(self.positions / np.asarray(spacing, dtype=np.float64)).astype(np.int64)

    def pieces(self, s0: float, s1: float, spacing: Sequence[float]) -> list[tuple]:
        """Quadrature of ``[s0, s1]`` along the fibre: (point in cells, weight in metres, W)."""
        pts, cum, h = np.asarray(self.points), self._cum, np.asarray(spacing, dtype=np.float64)
        out = []
        for k in range(len(pts) - 1):
            a, b = max(s0, cum[k]), min(s1, cum[k + 1])
            if b - a <= _TOL * max(1.0, self.length):
                continue
            t = self._tangent(k)
            w = helical_response(t, self.winding_angle)
            p0 = (pts[k] + (a - cum[k]) * t) / h  # in cells
            p1 = (pts[k] + (b - cum[k]) * t) / h
            out += _gauss_pieces(p0, p1, b - a, w)
        return out


def _gauss_pieces(p0: np.ndarray, p1: np.ndarray, length: float, w: np.ndarray) -> list[tuple]:
    """Two Gauss points on each piece of the segment ``p0 -> p1`` (cells) between grid planes."""
    cuts = {0.0, 1.0}
    for d in range(len(p0)):
        lo, hi = sorted((p0[d], p1[d]))
        if hi - lo > _TOL:
            for k in range(math.floor(lo) + 1, math.ceil(hi)):
                cuts.add((k - p0[d]) / (p1[d] - p0[d]))
    cuts_s = sorted(cuts)
    out = []
    for u0, u1 in itertools.pairwise(cuts_s):
        if u1 - u0 <= _TOL:
            continue
        for g in _GAUSS_T:
            u = u0 + g * (u1 - u0)
            out.append((p0 + u * (p1 - p0), 0.5 * (u1 - u0) * length, w))
    return out


class _Rows:
    """Accumulates ``(shot, column, field, cell, weight)`` rows of strain-rate receivers."""

    def __init__(self, geom: Geometry) -> None:
        self.g = geom
        nd = geom.ndim
        self.axes = kinds.AXES[nd]
        self.taps = [
            {fw: kinds.stencil_taps(geom, d, fw) for fw in (True, False)} for d in range(nd)
        ]
        self.coef = {m: [float(c) for c in _fd.staggered_first_derivative(2 * m)]
                     for m in range(1, geom.order // 2 + 1)}  # fmt: skip
        self.acc: dict[tuple[int, int, str, int], float] = {}
        self.shear: dict[str, tuple[list, list]] = {}  # valid masks and mirrors, by stress

    def _add(self, key: tuple[int, int], name: str, idx: Sequence[int], w: float) -> None:
        cell = int(sum(i * s for i, s in zip(idx, self.g.strides, strict=True)))
        k = (*key, name, cell)
        self.acc[k] = self.acc.get(k, 0.0) + w

    def _diff(self, key: tuple, name: str, idx: list[int], d: int, fw: bool, w: float) -> None:
        """Add ``w`` times the staggered difference of ``name`` along ``d`` at ``idx``."""
        m = int(self.taps[d][fw][idx[d]])
        if m == 0:
            axis = self.axes[d]
            raise ValueError(
                f"a strain-rate receiver reads e_{axis}{axis} on the free-surface row of axis "
                f"{axis} (padded index {idx[d]}), where the surface condition replaces the "
                "normal derivative; place the receiver, fibre channel or gauge at least one node "
                "inside the surface"
            )
        s = 0 if fw else -1
        for k, c in enumerate(self.coef[m], start=1):
            for off, sign in ((k + s, 1.0), (-k + 1 + s, -1.0)):
                j = list(idx)
                j[d] += off
                self._add(key, name, j, sign * w * c / self.g.spacing[d])

    def node(self, key: tuple, node: list[int], w_tensor: np.ndarray, scale: float) -> None:
        """Add ``scale * sum_ab W_ab e_ab`` at padded ``node``."""
        g = self.g
        for i in range(g.ndim):
            for j in range(i, g.ndim):
                c = w_tensor[i, i] if i == j else w_tensor[i, j] + w_tensor[j, i]
                if abs(c) < 1e-15:
                    continue
                if i == j:
                    self._diff(key, kinds.velocity(self.axes[i]), node, i, False, scale * c)
                else:
                    self._shear(key, node, i, j, scale * c)

    def _shear(self, key: tuple, node: list[int], i: int, j: int, w: float) -> None:
        """``w e_ij`` at ``node``: the four shear positions around it, averaged."""
        name = kinds.stress(self.axes[i], self.axes[j])
        if name not in self.shear:
            g = self.g
            # Where the shear stress holds a value (its odd images included).
            valid = [valid_axis(g, d, True, False, kinds.mirrored(g, name, d)) for d in (i, j)]
            self.shear[name] = (valid, [g.ghost_mirror(d, half=True) for d in (i, j)])
        valid, mirrors = self.shear[name]
        spots = []
        for pi in (node[i] - 1, node[i]):
            for pj in (node[j] - 1, node[j]):
                if not (valid[0][pi] and valid[1][pj]):
                    continue
                sign, pos = 1.0, [pi, pj]
                for n, (mirror, ghost) in enumerate(mirrors):
                    if ghost[pos[n]]:  # the odd image of the position inside
                        sign, pos[n] = -sign, int(mirror[pos[n]])
                spots.append((sign, pos))
        for sign, (pi, pj) in spots:
            idx = list(node)
            idx[i], idx[j] = pi, pj
            ww = 0.5 * sign * w / len(spots)
            self._diff(key, kinds.velocity(self.axes[j]), idx, i, True, ww)
            self._diff(key, kinds.velocity(self.axes[i]), idx, j, True, ww)

    def point(self, key: tuple, x: np.ndarray, w_tensor: np.ndarray, scale: float) -> None:
        """Add ``scale * sum_ab W_ab e_ab`` at ``x`` (model cells, fractional): multilinear."""
        g = self.g
        per_axis = []
        for d in range(g.ndim):
            i0 = math.floor(x[d] + _TOL)
            f = x[d] - i0
            if f < _TOL:
                per_axis.append(((i0, 1.0),))
            else:
                per_axis.append(((i0, 1.0 - f), (i0 + 1, f)))
        for combo in np.ndindex(*(len(p) for p in per_axis)):
            w = math.prod(per_axis[d][c][1] for d, c in enumerate(combo))
            node = [per_axis[d][c][0] + g.lo(d) for d, c in enumerate(combo)]
            self.node(key, node, w_tensor, scale * w)

    def terms(self) -> list[PointTerms]:
        return group_terms([(*k, w) for k, w in self.acc.items()])


def _axis_tensor(ndim: int, i: int, j: int) -> np.ndarray:
    """``W`` with ``sum W_ab e_ab = e_ij``."""
    w = np.zeros((ndim, ndim))
    w[i, j] += 0.5
    w[j, i] += 0.5
    return w


def kind_terms(
    geom: Geometry, kind_list: Sequence[str], gauge_length: float | None
) -> list[PointTerms]:
    """Rows of the strain-rate kinds (``"exx"``, ...) among ``kind_list`` at ``geom.rec_loc``.

    ``gauge_length``: normal strain rates ``e_aa`` are averaged over
    ``[-L/2, L/2]`` along axis ``a`` (a straight fibre along ``a``).
    """
    axes = kinds.AXES[geom.ndim]
    rows = _Rows(geom)
    for col, kind in enumerate(kind_list):
        if not kind.startswith("e"):
            continue
        i, j = (axes.index(c) for c in kind[1:])
        w = _axis_tensor(geom.ndim, i, j)
        for shot in range(geom.rec_loc.shape[0]):
            x = geom.rec_loc[shot, col].astype(np.float64)
            if gauge_length is None:
                rows.point((shot, col), x, w, 1.0)
                continue
            half = 0.5 * gauge_length / geom.spacing[i]
            p0, p1 = x.copy(), x.copy()
            p0[i] -= half
            p1[i] += half
            for p, q, ww in _gauss_pieces(p0, p1, gauge_length, w):
                rows.point((shot, col), p, ww, q / gauge_length)
    return rows.terms()


def fibre_terms(
    geom: Geometry, fibre: Fibre, first_column: int, gauge_length: float | None
) -> list[PointTerms]:
    """Rows of ``fibre``'s channels, columns ``first_column`` onwards, every shot."""
    key = (geom.padded_shape, geom.halo, geom.order, geom.spacing, geom.free_surface,
           tuple(geom.lo(d) for d in range(geom.ndim)), fibre, gauge_length)  # fmt: skip
    if key not in _FIBRE_CACHE:  # adapters rebuild the plan every call: build rows once
        while len(_FIBRE_CACHE) >= 4:
            _FIBRE_CACHE.pop(next(iter(_FIBRE_CACHE)))
        _FIBRE_CACHE[key] = _fibre_rows(geom, fibre, gauge_length)
    n = geom.n_shots
    return [
        PointTerms(t.field, np.repeat(np.arange(n, dtype=np.int64), t.cell.size),
                   np.tile(t.column + first_column, n), np.tile(t.cell, n), np.tile(t.weight, n))
        for t in _FIBRE_CACHE[key]
    ]  # fmt: skip


_FIBRE_CACHE: dict[tuple, list[PointTerms]] = {}


def _fibre_rows(geom: Geometry, fibre: Fibre, gauge_length: float | None) -> list[PointTerms]:
    """Rows of one shot's channels (shot 0, columns from 0)."""
    rows = _Rows(geom)
    spacing = np.asarray(geom.spacing)
    for c, s in enumerate(fibre.arc):
        if gauge_length is None:
            w = helical_response(fibre.tangents[c], fibre.winding_angle)
            pieces, total = [(fibre.positions[c] / spacing, 1.0, w)], 1.0
        else:
            s0, s1 = max(0.0, s - gauge_length / 2), min(fibre.length, s + gauge_length / 2)
            pieces, total = fibre.pieces(s0, s1, spacing), s1 - s0
        for p, q, w in pieces:
            rows.point((0, c), p, w, q / total)
    return rows.terms()


def check_receivers(
    kind_list: Sequence[str],
    rec_loc: np.ndarray,
    model_shape: Sequence[int],
    spacing: Sequence[float],
    gauge_length: Any,
    fibre: Any,
) -> float | None:
    """Validate ``gauge_length`` and ``fibre`` against the receivers; return the gauge length."""
    ndim = len(model_shape)
    axes = kinds.AXES[ndim]
    strain = [k for k in kind_list if k.startswith("e")]
    if fibre is not None:
        if not isinstance(fibre, Fibre):
            raise TypeError(f"fibre must be a sweep.das.Fibre, got {type(fibre).__name__}")
        if fibre.ndim != ndim:
            raise ValueError(f"fibre has {fibre.ndim}D points but the model is {ndim}D")
        extent = (np.asarray(model_shape) - 1) * np.asarray(spacing)
        pts = np.asarray(fibre.points)
        bad = np.any((pts < -_TOL) | (pts > extent + _TOL), axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(
                f"fibre point {k} = {pts[k].tolist()} m lies outside the model, which spans "
                f"[0, {', '.join(f'{e:g}' for e in extent)}] m along ({', '.join(axes)}); "
                "channels and their gauges must lie inside it"
            )
    if gauge_length is None:
        return None
    if not (isinstance(gauge_length, (int, float)) and math.isfinite(gauge_length)):
        raise TypeError(f"gauge_length must be a length in metres or None, got {gauge_length!r}")
    if not strain and fibre is None:
        raise ValueError(
            "gauge_length averages strain-rate receivers (kinds 'e..' or a fibre), but there "
            "are none; drop gauge_length or add such receivers"
        )
    gl = float(gauge_length)
    shear = sorted({k for k in strain if k[1] != k[2]})
    if shear:
        raise ValueError(
            f"gauge_length averages along a fibre's direction, which the shear strain-rate "
            f"kind(s) {', '.join(repr(k) for k in shear)} do not have; use point values "
            "(gauge_length=None) or a sweep.das.Fibre at the fibre's angle"
        )
    for k in sorted(set(strain)):
        d = axes.index(k[1])
        if gl < spacing[d] * (1 - _TOL):
            raise ValueError(
                f"gauge_length {gl:g} m is shorter than one cell along {axes[d]} "
                f"({spacing[d]:g} m) for receiver kind {k!r}; use at least one cell"
            )
        cols = [c for c, kk in enumerate(kind_list) if kk == k]
        pos = rec_loc[:, cols, d].astype(np.float64) * spacing[d]
        lo, hi = pos - gl / 2, pos + gl / 2
        top = (model_shape[d] - 1) * spacing[d]
        if np.any(lo < -_TOL) or np.any(hi > top + _TOL):
            raise ValueError(
                f"the gauge ({gl:g} m) of a {k!r} receiver reaches outside the model along "
                f"{axes[d]} (receiver at {float(pos.ravel()[np.argmax((lo < 0) | (hi > top))]):g} "
                f"m, model [0, {top:g}] m); move it or shorten gauge_length"
            )
    if fibre is not None:
        if gl < min(spacing) * (1 - _TOL):
            raise ValueError(
                f"gauge_length {gl:g} m is shorter than one cell ({min(spacing):g} m); use at "
                "least one cell"
            )
        if gl > fibre.length * (1 + _TOL):
            raise ValueError(f"gauge_length {gl:g} m is longer than the fibre ({fibre.length:g} m)")
    return gl
