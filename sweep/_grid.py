"""Padded grid, C-PML profiles and source/receiver indexing.

Every wavefield lives on a padded grid.  Along each axis::

    [ halo | CPML (lo) | model | CPML (hi) | halo ]

``halo = order // 2`` cells are never updated: they hold zeros (so stencils
near the edge read zeros), or, behind a free surface, the odd mirror image of
the wavefield.  A free-surface face has no CPML; the surface is the first
(or last) model row along that axis, where the wavefield is held at zero.

The model is extended into the CPML by repeating its edge values, and that
extension is part of the function the gradient differentiates: every cell
whose v^2 dt^2 comes from the model (the model and its CPML, the halo
excluded: :meth:`Geometry.store_slices`) enters the correlation, and
:meth:`Geometry.fold_to_model` adds the CPML's share onto the edge cells it
copies (the transpose of :meth:`Geometry.pad`).  The CPML profiles (from
``max_vel`` and ``pml_freq``) are constants of the gradient.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from . import _fd
from ._params import ACOUSTIC_PARAMS

# Row length granularity of kernel fields, in elements (64 bytes of float32).
ROW_ALIGN = 16


@dataclass(frozen=True, eq=False)
class Geometry:
    """Static description of one propagation call (no model values)."""

    ndim: int
    order: int
    model_shape: tuple[int, ...]
    spacing: tuple[float, ...]
    dt: float
    nt: int
    pml_width: tuple[int, ...]  # (lo_0, hi_0, lo_1, hi_1, ...)
    free_surface: tuple[bool, ...]  # same order as pml_width
    pml_freq: float
    v_max: float
    src_loc: np.ndarray  # (n_shots, n_src, ndim) int64, model coordinates
    rec_loc: np.ndarray  # (n_shots, n_rec, ndim)

    @property
    def halo(self) -> int:
        """Stencil half width."""
        return _fd.halo(self.order)

    @property
    def n_shots(self) -> int:
        """Number of shots."""
        return int(self.src_loc.shape[0])

    @property
    def n_src(self) -> int:
        """Sources per shot."""
        return int(self.src_loc.shape[1])

    @property
    def n_rec(self) -> int:
        """Receivers per shot."""
        return int(self.rec_loc.shape[1])

    def lo(self, d: int) -> int:
        """First model index along axis ``d`` in padded coordinates."""
        return self.halo + self.pml_width[2 * d]

    @cached_property
    def padded_shape(self) -> tuple[int, ...]:
        """Shape of one shot's padded field."""
        h = self.halo
        return tuple(
            n + self.pml_width[2 * d] + self.pml_width[2 * d + 1] + 2 * h
            for d, n in enumerate(self.model_shape)
        )

    @cached_property
    def layout_shape(self) -> tuple[int, ...]:
        """Shape of one shot's field in the compiled kernels' memory.

        :attr:`padded_shape` with each row (the last axis) lengthened to a
        multiple of ``ROW_ALIGN`` elements, so that rows are whole 64-byte
        lines and every row's cells sit at the same offsets within lines: with
        rows of 1044 floats (the 2D benchmark), the 64-byte vectors of three
        rows in four straddled two lines.  The kernels index through
        :attr:`strides` and never touch the extra cells.
        """
        *outer, n = self.padded_shape
        return (*outer, -(-n // ROW_ALIGN) * ROW_ALIGN)

    @property
    def kernel_shot_stride(self) -> int:
        """Elements in one shot's field in the kernels' layout (:attr:`layout_shape`)."""
        return math.prod(self.layout_shape)

    def kernel_index(self, idx: np.ndarray) -> np.ndarray:
        """Flat indices into one shot's padded field, moved to :attr:`layout_shape`."""
        n_x, pitch = self.padded_shape[-1], self.layout_shape[-1]
        return idx // n_x * pitch + idx % n_x

    @cached_property
    def strides(self) -> tuple[int, ...]:
        """Element strides of the padded shape (C order)."""
        out, acc = [], 1
        for n in reversed(self.padded_shape):
            out.append(acc)
            acc *= n
        return tuple(reversed(out))

    @property
    def shot_stride(self) -> int:
        """Elements in one shot's padded field."""
        return math.prod(self.padded_shape)

    def flat_index(self, loc: np.ndarray) -> np.ndarray:
        """Flat padded indices of model-coordinate locations ``(..., ndim)``."""
        idx = np.zeros(loc.shape[:-1], dtype=np.int64)
        for d in range(self.ndim):
            idx += (loc[..., d].astype(np.int64) + self.lo(d)) * self.strides[d]
        return idx

    @cached_property
    def src_idx(self) -> np.ndarray:
        """(n_shots, n_src) flat source indices."""
        return np.ascontiguousarray(self.flat_index(self.src_loc))

    @cached_property
    def rec_idx(self) -> np.ndarray:
        """(n_shots, n_rec) flat receiver indices."""
        return np.ascontiguousarray(self.flat_index(self.rec_loc))

    def axis_map(self, d: int) -> np.ndarray:
        """Model index copied into each padded cell along axis ``d`` (edge repeat)."""
        n_pad = self.padded_shape[d]
        return np.clip(np.arange(n_pad) - self.lo(d), 0, self.model_shape[d] - 1)

    def mirrored_axis_map(self, d: int) -> np.ndarray:
        """:meth:`axis_map` with free-surface ghosts copying their mirror cells (even mirror)."""
        idx = self.axis_map(d)
        mirror, ghost = self.ghost_mirror(d)
        return np.where(ghost, idx[mirror], idx)

    def axis_live(self, d: int) -> np.ndarray:
        """Return a mask: True where the wavefield along axis ``d`` is updated."""
        h, n_pad = self.halo, self.padded_shape[d]
        live = np.zeros(n_pad, dtype=bool)
        live[h : n_pad - h] = True
        if self.free_surface[2 * d]:
            live[h] = False
        if self.free_surface[2 * d + 1]:
            live[n_pad - 1 - h] = False
        return live

    def ghost_mirror(self, d: int, half: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(mirror index, ghost mask) along axis ``d`` for free-surface ghosts.

        The surface is the outermost model cell ``S`` of a free face; a ghost
        at position ``S - k`` mirrors ``S + k``.  ``half``: the field is
        staggered along ``d`` (index ``i`` is position ``i + 1/2``), so its
        ghosts are the positions beyond the surface (on the high face the
        index ``S`` itself), each mirroring the position as far inside.
        """
        h, n_pad = self.halo, self.padded_shape[d]
        mirror = np.arange(n_pad)
        ghost = np.zeros(n_pad, dtype=bool)
        shift = int(half)
        if self.free_surface[2 * d]:
            g = np.arange(h)
            mirror[g] = 2 * h - g - shift
            ghost[g] = True
        if self.free_surface[2 * d + 1]:
            g = np.arange(n_pad - h - shift, n_pad)
            mirror[g] = 2 * (n_pad - 1 - h) - g - shift
            ghost[g] = True
        return mirror, ghost

    @cached_property
    def pml_profiles(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """(a, b) C-PML profiles per axis, float64, length ``padded_shape[d]``."""
        return self._profiles(0.0)

    @cached_property
    def pml_profiles_half(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """:attr:`pml_profiles` at the half nodes ``i + 1/2`` (fields staggered along the axis)."""
        return self._profiles(0.5)

    def _profiles(self, offset: float) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        return tuple(
            cpml_profile(
                self.padded_shape[d],
                self.halo,
                self.pml_width[2 * d],
                self.pml_width[2 * d + 1],
                self.spacing[d],
                self.dt,
                self.v_max,
                self.pml_freq,
                offset,
            )
            for d in range(self.ndim)
        )

    def cpml_strips(self, d: int) -> list[tuple[int, int]]:
        """(first cell, cells) of the slabs along axis ``d`` with CPML terms of axis ``d``.

        Each slab is a face's CPML cells plus the halo of model cells next to
        it, where the first difference of psi still reaches; psi and zeta of
        axis ``d`` are zero outside them.  Padded coordinates; faces whose
        slabs would touch share one slab.
        """
        h, n_pad = self.halo, self.padded_shape[d]
        w_lo, w_hi = self.pml_width[2 * d], self.pml_width[2 * d + 1]
        slabs = []
        if w_lo:
            slabs.append([h, min(h + w_lo + h, n_pad - h)])
        if w_hi:
            lo = max(n_pad - 2 * h - w_hi, h)
            if slabs and lo <= slabs[-1][1]:
                slabs[-1][1] = n_pad - h
            else:
                slabs.append([lo, n_pad - h])
        return [(lo, hi - lo) for lo, hi in slabs]

    def plain_range(self, d: int) -> tuple[int, int]:
        """Cells along axis ``d`` farther than a halo from any CPML cell.

        Empty on a model narrower than a halo; it then starts at the high halo,
        not beyond it: the kernels run a row's CPML segment up to the start of
        its plain range, which must not pass the last updated cell (a
        2-cell-wide model with a CPML on one x face only wrote two halo cells'
        W past the end of each snapshot row).
        """
        h, n_pad = self.halo, self.padded_shape[d]
        w_lo, w_hi = self.pml_width[2 * d], self.pml_width[2 * d + 1]
        lo = min(h + w_lo + (h if w_lo else 0), n_pad - h)
        hi = n_pad - h - w_hi - (h if w_hi else 0)
        return lo, max(lo, hi)

    def params(self) -> np.ndarray:
        """Return the C parameter record (see ``cuda/sweep_common.h``)."""
        p = np.zeros((), dtype=ACOUSTIC_PARAMS)
        off = 3 - self.ndim
        p["n_shots"] = self.n_shots
        p["n_src"] = self.n_src
        p["n_rec"] = self.n_rec
        p["nt"] = self.nt
        p["halo"] = self.halo
        p["shot_stride"] = self.kernel_shot_stride
        shape = [1, 1, 1]
        p["plain_lo"] = [0, 0, 0]
        p["plain_hi"] = [1, 1, 1]
        for d in range(self.ndim):
            shape[off + d] = self.padded_shape[d]
            p["plain_lo"][off + d], p["plain_hi"][off + d] = self.plain_range(d)
            p["free_lo"][off + d] = int(self.free_surface[2 * d])
            p["free_hi"][off + d] = int(self.free_surface[2 * d + 1])
            p["rdx"][off + d] = 1.0 / self.spacing[d]
            p["rdx2"][off + d] = 1.0 / self.spacing[d] ** 2
        p["shape"] = shape
        pitch = self.layout_shape[-1]
        p["stride"] = [shape[1] * pitch, pitch, 1]
        p["model_lo"] = [0, 0, 0]
        p["model_hi"] = [1, 1, 1]
        for d in range(self.ndim):
            p["model_lo"][off + d] = self.lo(d)
            p["model_hi"][off + d] = self.lo(d) + self.model_shape[d]
        p["store_lo"] = [0, 0, 0]
        p["store_hi"] = [1, 1, 1]
        for d in range(self.ndim):
            p["store_lo"][off + d] = self.halo
            p["store_hi"][off + d] = self.padded_shape[d] - self.halo
        p["store_every"] = 1
        p["n_band"] = 0
        p["n_ring"] = 0
        p["slot_shots"] = self.n_shots
        return p

    @property
    def model_cells(self) -> int:
        """Cells of one shot's model (the compact snapshot size)."""
        return math.prod(self.model_shape)

    def model_slices(self) -> tuple[slice, ...]:
        """Slices of the model cells in a padded field (without the shot axis)."""
        return tuple(slice(self.lo(d), self.lo(d) + n) for d, n in enumerate(self.model_shape))

    def store_slices(self) -> tuple[slice, ...]:
        """Slices of the cells a gradient snapshot holds: the model and its CPML.

        Every cell whose v^2 dt^2 derives from the model (the halo excluded).
        """
        h = self.halo
        return tuple(slice(h, n - h) for n in self.padded_shape)

    @property
    def store_shape(self) -> tuple[int, ...]:
        """Shape of one shot's gradient snapshot (:meth:`store_slices`)."""
        return tuple(n - 2 * self.halo for n in self.padded_shape)

    def fold_to_model(self, g: object) -> object:
        """Sum a gradient on padded cells onto the model cells whose values they copy.

        The transpose of :meth:`pad` (edge repetition): each CPML cell adds
        its share to the edge cell it repeats.  ``g`` has the padded shape
        (NumPy or CuPy); the result has :attr:`model_shape`.
        """
        xp = _array_module(g)
        for d, n in enumerate(self.model_shape):
            lo = self.lo(d)
            first = _along(g, d, 0, lo + 1).sum(axis=d, keepdims=True)
            last = _along(g, d, lo + n - 1, self.padded_shape[d]).sum(axis=d, keepdims=True)
            if n == 1:
                g = first + last - _along(g, d, lo, lo + 1)
            else:
                g = xp.concatenate([first, _along(g, d, lo + 1, lo + n - 1), last], axis=d)
        return g

    @cached_property
    def band_idx(self) -> np.ndarray:
        """Flat indices (kernels' layout) of the band: model cells within a halo of the CPML.

        Boundary saving keeps u of these cells every step (their W is
        recomputed from it, the plain cells' u and the ring's,
        :attr:`ring_idx`); the rest of the model (the plain cells) is
        recomputed backwards in time.
        """
        band = np.zeros(self.layout_shape, dtype=bool)
        band[self.model_slices()] = True
        band[tuple(slice(*self.plain_range(d)) for d in range(self.ndim))] = False
        return np.flatnonzero(band).astype(np.int64)

    @cached_property
    def band_row(self) -> np.ndarray:
        """First position in :attr:`band_idx` of each padded row's band cells.

        One entry per row (z, y) of a shot's padded field; -1 when the row has
        no band cells.
        """
        return _row_starts(self.band_idx, self.layout_shape[-1], self.kernel_shot_stride)

    @cached_property
    def ring_idx(self) -> np.ndarray:
        """Flat indices (kernels' layout) of the ring: the CPML cells a band cell's stencil reads.

        Stored non-model cells within a halo of the model along one axis and
        inside it along the others (the star stencil's reach from the band),
        ascending.  The CPML replay keeps their state each step so that the
        boundary-saving adjoint recomputes the band's snapshots instead of
        storing them.  Free-surface ghosts are not stored cells (the ghost
        hooks refill them).
        """
        ring = np.zeros(self.layout_shape, dtype=bool)
        model = self.model_slices()
        h = self.halo
        for d in range(self.ndim):
            lo, hi = model[d].start, model[d].stop
            n_pad = self.padded_shape[d]
            for a, b in ((max(h, lo - h), lo), (hi, min(hi + h, n_pad - h))):
                sl = list(model)
                sl[d] = slice(a, b)
                ring[tuple(sl)] = True
        return np.flatnonzero(ring).astype(np.int64)

    @cached_property
    def ring_code(self) -> np.ndarray:
        """:attr:`ring_idx` with each cell's axis: ``4 * index + axis`` (padded axis numbers).

        The axis (along which the cell lies outside the model) says which
        psi its band neighbours read; the kernels take it from here instead
        of dividing the index every step.
        """
        idx = self.ring_idx
        coords = np.unravel_index(idx, self.layout_shape)
        axis = np.zeros(len(idx), dtype=np.int64)
        for d in range(self.ndim):
            lo, hi = self.lo(d), self.lo(d) + self.model_shape[d]
            axis[(coords[d] < lo) | (coords[d] >= hi)] = 3 - self.ndim + d
        return 4 * idx + axis

    @cached_property
    def outer_idx(self) -> np.ndarray:
        """Flat indices (kernels' layout) of the stored cells that are not plain.

        The CPML and the band: what the boundary-saving adjoint replays
        forward from a saved state (:mod:`sweep._memory`), ascending.
        """
        outer = np.zeros(self.layout_shape, dtype=bool)
        outer[self.store_slices()] = True
        outer[tuple(slice(*self.plain_range(d)) for d in range(self.ndim))] = False
        return np.flatnonzero(outer).astype(np.int64)

    @cached_property
    def outer_row(self) -> np.ndarray:
        """First position in :attr:`outer_idx` of each padded row (-1: none)."""
        return _row_starts(self.outer_idx, self.layout_shape[-1], self.kernel_shot_stride)

    @cached_property
    def cpml_pos(self) -> np.ndarray:
        """Positions in :attr:`outer_idx` of the CPML cells (stored, not model)."""
        model = np.zeros(self.layout_shape, dtype=bool)
        model[self.model_slices()] = True
        return np.flatnonzero(~model.reshape(-1)[self.outer_idx]).astype(np.int64)

    def pad_v2dt2(self, v: np.ndarray) -> np.ndarray:
        """(v dt)^2 on the padded grid for the compiled kernels (host or CuPy array).

        Halo cells are zero except free-surface ghosts, which hold the even
        mirror so that the adjoint's ``v^2 dt^2 lambda`` ghosts are odd mirrors.
        The surface rows are zero: the wavefield is held at zero there.
        """
        return self._zero_held_cells(_array_module(v), (self.pad(v) * self.dt) ** 2)

    def pad_coefficient(self, m: np.ndarray) -> np.ndarray:
        """Return a model coefficient on the padded grid, laid out as :meth:`pad_v2dt2`.

        Repeated into the CPML, zero in the halo and on the surface rows
        (where v^2 dt^2 is), the even mirror in free-surface ghosts.
        """
        return self._zero_held_cells(_array_module(m), self.pad(m))

    def _zero_held_cells(self, xp: object, out: np.ndarray) -> np.ndarray:
        """Return ``out`` (padded) zero where the wavefield is held at zero, ghosts mirrored."""
        for d in range(self.ndim):
            live = xp.asarray(self.axis_live(d).astype(out.dtype))
            out = out * live.reshape(_axis_shape(self.ndim, d))
        for d in range(self.ndim):
            mirror, ghost = self.ghost_mirror(d)
            if ghost.any():
                sl = [slice(None)] * self.ndim
                sl[d] = xp.asarray(np.nonzero(ghost)[0])
                src = [slice(None)] * self.ndim
                src[d] = xp.asarray(mirror[ghost])
                out[tuple(sl)] = out[tuple(src)]
        return xp.ascontiguousarray(out)

    def pad(self, v: np.ndarray, *, mirrored: bool = False) -> np.ndarray:
        """Extend model values onto the padded grid by repeating edge values.

        ``mirrored``: free-surface ghosts take their mirror cells' values
        (:meth:`mirrored_axis_map`) instead of the edge's.
        """
        xp = _array_module(v)
        axis_map = self.mirrored_axis_map if mirrored else self.axis_map
        return v[tuple(xp.asarray(i) for i in np.ix_(*[axis_map(d) for d in range(self.ndim)]))]

    def live(self) -> np.ndarray:
        """Return 1.0 where the wavefield is updated and 0.0 elsewhere, on the padded grid."""
        # The outer product of the axes' masks: the first product is full-size.
        out = self.axis_live(0).astype(np.float64).reshape(_axis_shape(self.ndim, 0))
        for d in range(1, self.ndim):
            out = out * self.axis_live(d).reshape(_axis_shape(self.ndim, d))
        return out


def _along(x: object, axis: int, a: int, b: int) -> object:
    """``x[a:b]`` along ``axis``."""
    sl = [slice(None)] * x.ndim
    sl[axis] = slice(a, b)
    return x[tuple(sl)]


def _row_starts(idx: np.ndarray, n_x: int, shot_stride: int) -> np.ndarray:
    """First position in ascending flat indices ``idx`` of each row (-1: none)."""
    rows = idx // n_x
    out = np.full(shot_stride // n_x, -1, dtype=np.int64)
    first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]) if len(rows) else rows
    out[rows[first]] = first
    return out


def _array_module(x: object) -> object:
    if isinstance(x, np.ndarray):
        return np
    import cupy

    return cupy


def _axis_shape(ndim: int, d: int) -> tuple[int, ...]:
    shape = [1] * ndim
    shape[d] = -1
    return tuple(shape)


def reflection_target(width: int) -> float:
    """Theoretical CPML reflection coefficient used for a CPML of ``width`` cells."""
    if width <= 1:
        return 1e-2
    return 10.0 ** (-(math.log10(width) - 1) / math.log10(2) - 3)


def cpml_profile(
    n_pad: int,
    halo: int,
    w_lo: int,
    w_hi: int,
    dx: float,
    dt: float,
    v_max: float,
    freq: float,
    offset: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """C-PML ``a`` and ``b`` profiles along one axis (zero outside the CPML).

    Damping ``d(r) = d0 r^2`` with ``r`` the normalised depth into the CPML,
    ``d0 = 3 v_max ln(1/R) / (2 L)``, frequency shift
    ``alpha(r) = pi freq (1 - r)``, ``b = exp(-(d + alpha) dt)`` and
    ``a = d (b - 1) / (d + alpha)``.  ``offset = 0.5`` evaluates the profiles
    half a cell along the axis, at the nodes of fields staggered along it:
    ``r`` is the same linear function of position (0 at the outermost model
    cell, 1 at the outermost CPML cell, clipped to 1 beyond it).
    """
    a = np.zeros(n_pad)
    b = np.zeros(n_pad)
    x = np.arange(n_pad) + offset
    faces = []
    if w_lo:
        pos = np.flatnonzero((x >= halo) & (x < halo + w_lo))
        faces.append((w_lo, pos, (halo + w_lo - x[pos]) / w_lo))
    if w_hi:
        start = n_pad - halo - w_hi
        pos = np.flatnonzero((x > start - 1) & (x <= n_pad - halo - 1 + offset))
        faces.append((w_hi, pos, np.minimum((x[pos] - start + 1) / w_hi, 1.0)))
    for width, pos, r in faces:
        d0 = 3.0 * v_max * math.log(1.0 / reflection_target(width)) / (2.0 * width * dx)
        damp = d0 * r**2
        alpha = math.pi * freq * (1.0 - r)
        b[pos] = np.exp(-(damp + alpha) * dt)
        a[pos] = damp * (b[pos] - 1.0) / np.maximum(damp + alpha, 1e-300)
    return a, b
