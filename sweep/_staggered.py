"""First-order systems on a staggered grid: the pieces every such equation shares.

A first-order system (elastic velocity-stress, Maxwell's E-H) updates several
fields in half-step phases; each field lives at the nodes ``i`` or the half
nodes ``i + 1/2`` of each axis (staggered along it).  This module gives:

* :class:`EagerStaggered`, an :class:`~sweep._eager.EagerBase` with the
  staggered first difference, the C-PML stretching of each derivative with its
  own memory variable (profiles at the derivative's own nodes), the masks of
  the cells each field updates, the images of fields beyond free faces, and
  the state of fields plus memory variables;
* :func:`live_axis` / :func:`valid_axis`, where a field is updated / holds a
  value along one axis;
* :func:`check_point_kinds`, the validation of per-column source and receiver
  kinds (components).

An equation declares its fields (:meth:`EagerStaggered.staggering`), its
memory variables, which fields a free face holds at zero and how the others
are imaged beyond it; the phases and coefficients are its own.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _fd
from ._eager import EagerBase, _along
from ._grid import Geometry
from ._points import sample_terms
from ._xp import take_transpose

__all__ = ["EagerStaggered", "check_point_kinds", "live_axis", "valid_axis"]


def live_axis(geom: Geometry, d: int, staggered: bool, held: bool) -> np.ndarray:
    """1.0 where a field is updated along axis ``d`` (padded), else 0.0.

    Not the halo, and for a field staggered along ``d`` not the last index
    before the high halo either (position ``n - h - 1/2``, outside the last
    node), so that both ends of the axis are mirror images of each other;
    ``held``: the field is held at zero on the surface row of a free face of
    axis ``d`` (elastic: the normal stress; Maxwell: tangential E).
    """
    h, n = geom.halo, geom.padded_shape[d]
    live = np.zeros(n)
    live[h : n - h] = 1.0
    if geom.free_surface[2 * d] and held:
        live[h] = 0.0
    if staggered or (geom.free_surface[2 * d + 1] and held):
        live[n - 1 - h] = 0.0
    return live


def valid_axis(geom: Geometry, d: int, staggered: bool, held: bool, mirrored: bool) -> np.ndarray:
    """1.0 where a field holds a value along axis ``d`` (receivers may read it), else 0.0.

    The cells it updates (:func:`live_axis`), its held surface rows, and its
    images beyond free faces when ``mirrored``; not the zero halo.
    """
    live = live_axis(geom, d, staggered, held)
    extra = np.zeros(geom.padded_shape[d], dtype=bool)
    if mirrored:
        extra |= geom.ghost_mirror(d, half=staggered)[1]
    h, n = geom.halo, geom.padded_shape[d]
    if held:
        extra[h] |= geom.free_surface[2 * d]
        extra[n - 1 - h] |= geom.free_surface[2 * d + 1]
    return np.maximum(live, extra)


def check_point_kinds(
    value: Any,
    count: int,
    arg: str,
    role: str,
    table: Sequence[str],
    default: str,
    aliases: dict[str, str] | None = None,
    elsewhere: dict[str, str] | None = None,
) -> tuple[str, ...]:
    """Validate a per-column kind argument: one name for all columns or one per column.

    Parameters
    ----------
    value : str, sequence of str or None
        The argument (None: ``default``).
    count : int
        Columns (sources or receivers per shot).
    arg, role : str
        The argument's name and what a column is (``"source"``), for messages.
    table : sequence of str
        The valid names.
    aliases : dict, optional
        Other spellings mapped to valid names.
    elsewhere : dict, optional
        Names that are not valid here, each with the sentence saying why
        (e.g. a kind of the other dimension).

    Raises
    ------
    ValueError
        For an unknown name (with the closest valid one), a name of
        ``elsewhere``, or a sequence of the wrong length.
    """
    if value is None:
        value = default
    if isinstance(value, str):
        names = [value] * count
    elif isinstance(value, Sequence) and all(isinstance(k, str) for k in value):
        names = list(value)
        if len(names) != count:
            raise ValueError(
                f"{arg} has {len(names)} entries but there are {count} {role}s per shot; "
                f"give one for all or one per {role}"
            )
    else:
        raise TypeError(f"{arg} must be a string or a sequence of strings, got {value!r}")
    choices = ", ".join(repr(c) for c in table)
    out = []
    for k in names:
        k = (aliases or {}).get(k, k)
        if k in table:
            out.append(k)
            continue
        if elsewhere and k in elsewhere:
            raise ValueError(f"{arg} {k!r} {elsewhere[k]}; choose from {choices}")
        close = difflib.get_close_matches(k, list(table), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown {arg} {k!r}{hint} (choose from {choices})")
    return tuple(out)


def _at(d: int, sl: slice) -> tuple[slice, ...]:
    """Return the index of ``sl`` along axis ``d`` (every earlier axis whole)."""
    return (*(slice(None),) * d, sl)


def _next_views(
    m: np.ndarray, out: np.ndarray, d: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[slice, ...]]:
    """Return views for a map of each node and the next along axis ``d`` into ``out`` (C order).

    (``m``'s nodes, their next ones, ``out``'s same nodes, the index of the
    last node along ``d``).  Where ``m`` is C-ordered the views are one run
    over the flat arrays (short rows cost NumPy a loop each), which also
    covers the last nodes along ``d`` with wrong values: the caller writes
    those (``last``) after.
    """
    last = _at(d, slice(m.shape[d] - 1, None))
    if m.flags.c_contiguous:
        b = math.prod(m.shape[d + 1 :])
        flat = m.reshape(-1)
        return flat[: m.size - b], flat[b:], out.reshape(-1)[: m.size - b], last
    head = _at(d, slice(None, -1))
    return m[head], m[_at(d, slice(1, None))], out[head], last


class _LiveMasks(dict):
    """Per field, its live mask (1, *padded shape): formed from its axes' factors on first use.

    The outer product, in the engine's dtype, is one full-size array per field
    (each fresh one costs its page faults); a compiled forward never needs it
    (it multiplies its coefficients by the factors, :attr:`EagerStaggered.live_factors`).
    """

    def __init__(self, factors: dict[str, tuple[Any, ...]]) -> None:
        super().__init__()
        self._factors = factors

    def __missing__(self, name: str) -> Any:
        mask = None
        for live in self._factors[name]:
            mask = live if mask is None else mask * live
        self[name] = mask[None]
        return self[name]


class EagerStaggered(EagerBase):
    """Fields on a staggered grid, C-PML-stretched staggered differences, images, state.

    A subclass declares :meth:`staggering` (fields in update order, each with
    the axes it is staggered along), :meth:`memory_keys` (one memory variable
    per stretched derivative), :meth:`held` and :meth:`mirror_sign` (the free
    faces), its ``phases`` and ``coefficients``, and sets ``rec_terms`` (the
    receivers' point terms) in :meth:`_setup_points`.
    """

    # -- the equation's declarations ------------------------------------------------
    def staggering(self) -> dict[str, frozenset[int]]:
        """Fields of the state in update order, each with the axes it is staggered along."""
        raise NotImplementedError

    def memory_keys(self) -> list[tuple[str, str, int]]:
        """(memory variable, field, axis) of every C-PML-stretched derivative."""
        raise NotImplementedError

    def held(self, name: str, d: int) -> bool:
        """Whether ``name`` is held at zero on the surface row of a free face of axis ``d``."""
        return False

    def mirror_sign(self, name: str, d: int) -> float:
        """Sign of field ``name``'s images beyond a free face of axis ``d`` (0: no images)."""
        return 0.0

    def _setup_points(self) -> None:
        """Set the sources' and receivers' point terms (``rec_terms``)."""
        raise NotImplementedError

    # -- constants ------------------------------------------------------------------
    def _axis_shape(self, d: int) -> list[int]:
        shape = [1] * (self.geom.ndim + 1)
        shape[d + 1] = -1
        return shape

    def _setup(self) -> None:
        super()._setup()
        g, xp = self.geom, self.xp
        nd = g.ndim
        self.stag = self.staggering()
        self.cs = [float(c) for c in _fd.staggered_first_derivative(g.order)]
        h = g.halo
        inner = [slice(h, n - h) for n in g.padded_shape]
        # CPML profiles on the interior, at the nodes (backward differences)
        # and the half nodes (forward differences), broadcast along axis d.
        self.prof = []
        for d in range(nd if self.with_step else 0):
            per = {}
            for forward, profiles in ((False, g.pml_profiles), (True, g.pml_profiles_half)):
                a, b = profiles[d]
                per[forward] = tuple(
                    self._asarray(p[inner[d]].reshape(self._axis_shape(d))) for p in (a, b)
                )
            self.prof.append(per)
        # Where each field is updated (product of per-axis masks), and its images.
        self.live_factors = {}
        self.mirrors = {}
        for name, stag in self.stag.items():
            self.live_factors[name] = tuple(
                self._asarray(
                    live_axis(g, d, d in stag, self.held(name, d)).reshape(self._axis_shape(d)[1:])
                )
                for d in range(nd)
            )
            mirrors = []
            for d in range(nd if self.with_step else 0):
                sign = self.mirror_sign(name, d)
                mirror, ghost = g.ghost_mirror(d, half=d in stag)
                if ghost.any() and sign:
                    signed = sign * self._asarray(ghost.reshape(self._axis_shape(d)))
                    mirrors.append((d, self._asarray(mirror, xp.int64), signed))
            self.mirrors[name] = mirrors
        self.field_live = _LiveMasks(self.live_factors)
        # Index maps of the next node along each axis (edge repeated), for averages.
        self.next = [
            self._asarray(np.minimum(np.arange(n) + 1, n - 1), xp.int64) for n in g.padded_shape
        ]
        if self.with_step:
            self._setup_points()

    def valid(self, name: str, d: int) -> np.ndarray:
        """Where field ``name`` holds a value along axis ``d`` (:func:`valid_axis`)."""
        stag = d in self.stag[name]
        return valid_axis(self.geom, d, stag, self.held(name, d), bool(self.mirror_sign(name, d)))

    def _shift(self, m: Any, d: int) -> Any:
        """``m`` at the next node along axis ``d`` (edge repeated); ``m`` has no shot axis."""
        if not isinstance(m, np.ndarray):
            return self.xp.take(m, self.next[d], axis=d)
        # The same copy as take (faster), the last node along d repeated.
        out = np.empty_like(m, order="C")
        _, nxt, dst, last = _next_views(m, out, d)
        dst[...] = nxt
        out[last] = m[last]
        return out

    def _mean_next(self, m: Any, d: int) -> Any:
        """``0.5 (m + _shift(m, d))``: the mean of each node and the next along axis ``d``."""
        if not isinstance(m, np.ndarray):
            return 0.5 * (m + self._shift(m, d))
        # The same sums and products, without the shifted copy and two temporaries.
        out = np.empty_like(m, order="C")
        head, nxt, dst, last = _next_views(m, out, d)
        np.add(head, nxt, out=dst)
        np.add(m[last], m[last], out=out[last])
        out *= 0.5
        return out

    def _shift_transpose(self, g: Any, d: int) -> Any:
        """Apply the transpose of :meth:`_shift` to ``g``."""
        return take_transpose(self.xp, g, self.next[d], self.geom.padded_shape[d], d)

    # -- state ----------------------------------------------------------------------
    def initial_state(self) -> dict[str, Any]:
        """Zero fields (padded) and C-PML memory variables (interior)."""
        g = self.geom
        state = {name: self.field() for name in self.stag}
        inner = (g.n_shots, *(n - 2 * g.halo for n in g.padded_shape))
        state.update({key: self.zeros(inner) for key, _, _ in self.memory_keys()})
        return state

    def final_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """Return ``state`` with every array on the padded grid."""
        keys = {k for k, _, _ in self.memory_keys()}
        return {k: self._pad(x) if k in keys else x for k, x in state.items()}

    def load_state(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Return the state of step 0 from a result's ``state`` (a restart)."""
        keys = {k for k, _, _ in self.memory_keys()}
        return {
            k: self._interior(fields[k]) + 0 if k in keys else self.xp.asarray(fields[k], copy=True)
            for k in self.initial_state()
        }

    def callback_fields(self, state: dict[str, Any]) -> dict[str, Any]:
        """Return the wavefields a callback sees: the fields, padded (no memory variables)."""
        return {k: state[k] for k in self.stag}

    def sample(self, state: dict[str, Any]) -> Any:
        """Receiver samples (n_shots, n_rec) from the point terms ``rec_terms``."""
        g = self.geom
        if not g.n_rec:
            return None
        return sample_terms(self.xp, state, self.rec_terms, g.n_shots, g.n_rec)

    # -- differences ----------------------------------------------------------------
    def _dstag(self, f: Any, axis: int, forward: bool, weights: list | None = None) -> Any:
        """Staggered first difference along ``axis`` (unscaled), on the interior.

        ``forward``: from the nodes to the half nodes, ``sum_k c_k (f[i+k] -
        f[i-k+1])``; else from the half nodes to the nodes, ``sum_k c_k
        (f[i+k-1] - f[i-k])``.  ``f`` has a halo along ``axis`` only.
        ``weights``: per-cell weights ``c_k`` along the axis (one array per
        ``k``) in place of the constant ones.
        """
        h, n = self.geom.halo, f.shape[axis]
        s = 0 if forward else -1
        out = None
        for k, c in enumerate(self.cs if weights is None else weights, start=1):
            term = c * (_along(f, axis, h + k + s, n - h + k + s)
                        - _along(f, axis, h - k + 1 + s, n - h - k + 1 + s))  # fmt: skip
            out = term if out is None else out + term
        return out

    def _stretch(
        self, f: Any, name: str, d: int, psi: Any, weights: list | None = None
    ) -> tuple[Any, Any]:
        """C-PML-stretched derivative of field ``name`` along axis ``d``: (``D f + psi'``, psi').

        ``psi' = b psi + a D f`` with the profiles at the derivative's own
        nodes (half nodes for a forward difference).
        """
        forward = d not in self.stag[name]
        df = self._dstag(self._interior(f, keep=d + 1), d + 1, forward, weights) * self.rdx[d]
        a, b = self.prof[d][forward]
        psi = b * psi + a * df
        return df + psi, psi

    def _finish(self, state: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
        """Hold the cells that are never updated at zero, then fill the images."""
        for name in names:
            u = state[name] * self.field_live[name]
            for d, mirror, ghost in self.mirrors[name]:
                # ghost carries the image's sign: u_ghost = sign * u_mirror.
                u = u + ghost * self.xp.take(u, mirror, axis=d + 1)
            state[name] = u
        return state
