"""Steppers for the compiled kernels (C/OpenMP on the host, CUDA via CuPy).

A stepper owns the wavefield buffers and the bookkeeping of swapped buffers;
the time loop itself runs inside the kernels, a chunk of steps per call.  Host
arrays go to ``sweep._C``, CuPy arrays to ``sweep._cuda_backend``; both take
the same parameter and pointer records (``sweep._params``), so this file is
the one driver for both devices.  :class:`CompiledStepper` is what every
equation's stepper shares (buffers in the kernels' layout, the constant
kernel inputs, the pointer record and the calls); an equation adds its field
table, its states and its gradient post-processing.

The memory strategies (``sweep._memory``) see a stepper only through the
interface of :mod:`sweep._stepper`: :meth:`CompiledStepper.forward_steps` /
:meth:`CompiledStepper.adjoint_steps` on the equation's states, state copies
for checkpoints, the sizes of what they keep and the equation's
post-processing of the gradient.  :class:`CompiledAcoustic` is the acoustic
:class:`~sweep._stepper.ReversibleStepper` (the snapshot a gradient step
needs is ``W`` of the model and CPML cells); the Born stepper is
``sweep.equations.lsrtm.compiled.CompiledLSRTM`` and the VRZ one
``sweep.equations.vrz.compiled.CompiledVRZ``.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import _blocking, _debug, _hostmem
from ._config import config
from ._grid import Geometry
from ._params import KERNEL_FIELDS, KERNEL_MEMBERS, MemberFacts
from ._stepper import ReversibleState
from ._xp import kernel_array

# Buffer-format characters of each kernel element type (native byte order).
_FORMATS = {np.dtype(np.float32): "f", np.dtype(np.float64): "d", np.dtype(np.int64): "lq"}


# planewise_fields: a slab's temporaries about this large, and at least this many
# planes (each slab computes one plane more than it keeps).
_SLAB_BYTES = 256 << 10
_SLAB_PLANES = 8


class _BoundaryLayouts(dict):
    """Buffer layouts whose boundary-saving entries are computed on the first lookup of one."""

    def __init__(self, layouts: dict[Any, Any], boundary: Callable[[], dict[Any, Any]]) -> None:
        super().__init__(layouts)
        self._boundary: Callable[[], dict[Any, Any]] | None = boundary

    def __missing__(self, key: Any) -> Any:
        if self._boundary is None:
            raise KeyError(key)
        extra, self._boundary = self._boundary(), None
        for k, v in extra.items():
            self.setdefault(k, v)  # what a subclass's _layouts set stays
        return self[key]


class _Fields:
    """Pointer record plus the arrays it points to (kept alive here).

    The one place a kernel pointer is taken: :meth:`set` checks that the
    array has the element type, shape and layout the kernels index it with
    (``sweep._C.kernel_address`` for host buffers, ``sweep._C.check_layout``
    for CuPy arrays), so a strided, broadcast, byte-swapped or read-only
    array raises instead of being misread.  Arrays from callers reach here
    through :func:`sweep._xp.kernel_array`, which gives them that layout.
    """

    def __init__(self, engine: CompiledStepper, *, adjoint: bool) -> None:
        self.rec = np.zeros((), dtype=engine.fields)
        # Every set(): (name, axis, array, offset), which also keeps the arrays alive.
        self.entries: list[tuple[str, int | None, Any, int]] = []
        self._engine = engine
        self.written = engine.members.writes[adjoint]

    def set(self, name: str, value: Any, axis: int | None = None, offset: int = 0) -> None:
        """Point field ``name`` (component ``axis``) at ``value`` plus ``offset`` bytes."""
        self.entries.append((name, axis, value, offset))
        address = self.address(name, value, axis) + offset if value is not None else 0
        if axis is None:
            self.rec[name] = address
        else:
            self.rec[name][axis] = address

    def array(self, name: str) -> Any:
        """Return the array field ``name`` points at last (None if unset)."""
        for entry in reversed(self.entries):
            if entry[0] == name:
                return entry[2]
        return None

    def address(self, name: str, value: Any, axis: int | None) -> int:
        """Return the address of ``value`` as field ``name`` after checking its layout."""
        from . import _C

        dtype = np.dtype(np.int64) if name in self._engine.members.index else self._engine.dtype
        if value.dtype != dtype:
            raise TypeError(
                f"sweep kernels: buffer {name!r} has dtype {value.dtype}, the kernels need "
                f"{dtype}; pass it through sweep._xp.kernel_array"
            )
        key = name if name not in ("pml_a", "pml_b") else (name, axis)
        shape, row = self._engine.buffer_layouts[key]
        if isinstance(value, np.ndarray):
            return int(_C.kernel_address(name, value, _FORMATS[dtype], dtype.itemsize, shape,
                                         row, name in self.written))  # fmt: skip
        # CuPy: the same layout rule (device memory is native, aligned, writeable).
        _C.check_layout(name, value.shape, value.strides, value.itemsize, shape, row)
        return int(value.data.ptr)


# Field slots of the acoustic kernels (see CompiledStepper.field): the forward
# state, the adjoint state and the boundary-saving reconstruction run in one
# kernel call.
_FWD_SLOT = 0  # u_prev, u, psi pairs, zeta: at most 11
_ADJ_SLOT = 11  # mu_prev, mu, P pairs, Z pairs, gradient: at most 15
_RECON_SLOT = 27  # recon u^{t+1}, u^t
_V2DT2_SLOT = 29


class FwdState(ReversibleState):
    """Forward wavefields at one time: u^{t-1}, u^t and the CPML memory variables.

    Checkpoints (``save``, ``save_into``, ``load``) copy :meth:`parts`
    (:class:`sweep._stepper.ForwardState`).
    """

    def __init__(self, engine: CompiledStepper, slot: int = _FWD_SLOT) -> None:
        """``slot``: the field slot of the first buffer (11 follow it)."""
        slot = itertools.count(slot)
        self.u_prev = engine.field(next(slot))
        self.u = engine.field(next(slot))
        # psi ping-pongs between two buffers; [0] is current.
        self.psi = {ax: [engine.field(next(slot)), engine.field(next(slot))] for ax in engine.axes}
        self.zeta = {ax: engine.field(next(slot)) for ax in engine.axes}
        self._strips = engine.cpml_strips

    def parts(self) -> list[Any]:
        """Return views of everything a checkpoint must hold.

        psi_d and zeta_d are zero (and never written non-zero) outside the
        cells that carry CPML terms along axis d, so only those strips count:
        a checkpoint is about 2.4 wavefields instead of 6 in 2D.
        """
        out = [self.u_prev, self.u]
        for ax in self.psi:
            for sl in self._strips[ax]:
                out.append(self.psi[ax][0][sl])
                out.append(self.zeta[ax][sl])
        return out

    def point(self, f: _Fields, suffix: str = "") -> None:
        """Point the forward kernels' slots of this wavefield (names ending ``suffix``) at it."""
        f.set(f"u{suffix}_prev", self.u_prev)
        f.set(f"u{suffix}", self.u)
        for ax in self.psi:
            f.set(f"psi{suffix}", self.psi[ax][0], ax)
            f.set(f"psi{suffix}_new", self.psi[ax][1], ax)
            f.set(f"zeta{suffix}", self.zeta[ax], ax)

    def set_from(self, given: dict[str, Any], convert: Any, suffix: str = "") -> None:
        """Set this wavefield from a result's ``state`` (keys ending ``suffix``): a restart.

        ``convert`` brings an array into the kernels' layout.  The CPML memory
        variables are copied on their strips only (they are zero elsewhere,
        which the kernels rely on).
        """
        self.u[...] = convert(given[f"u{suffix}"])
        self.u_prev[...] = convert(given[f"u{suffix}_prev"])
        for i, ax in enumerate(self.psi):
            psi, zeta = convert(given[f"psi{suffix}"][i]), convert(given[f"zeta{suffix}"][i])
            for sl in self._strips[ax]:
                self.psi[ax][0][sl] = psi[sl]
                self.zeta[ax][sl] = zeta[sl]

    def swap(self) -> None:
        """Swap the buffers as one forward step does (u^{t+1} over u^{t-1}, psi likewise)."""
        self.u_prev, self.u = self.u, self.u_prev
        for ax in self.psi:
            self.psi[ax].reverse()

    def outer_parts(self) -> list[Any]:
        """Return views of what a CPML replay starts from (see :mod:`sweep._memory`).

        u^{t-1} and u^t on the strips next to each face (the CPML, the band
        and the halo; corners appear once per axis) and the CPML memory
        variables, whose strips are the same.
        """
        out = []
        for field in (self.u_prev, self.u):
            for ax in self.psi:
                out.extend(field[sl] for sl in self._strips[ax])
        return out + self.parts()[2:]


class AdjState:
    """Adjoint wavefields and gradient accumulators.

    ``lam`` and ``lam_prev`` hold mu = v^2 dt^2 lambda, the variable the
    kernels carry (``cuda/acoustic_stencil.h``), so ``grad_v2dt2``
    accumulates sum_t mu^{t+1} W^t per shot, which
    :meth:`CompiledAcoustic.finish_gradient` divides by v^2 dt^2.  With
    boundary saving it also holds the forward wavefield being run backwards
    (:meth:`CompiledAcoustic.start_reconstruction`).
    """

    def __init__(
        self, engine: CompiledStepper, *, model: bool, source: bool, slot: int = _ADJ_SLOT
    ) -> None:
        """``slot``: the field slot of the first buffer (15 follow it)."""
        g = engine.geom
        slot = itertools.count(slot)
        self.lam_prev = engine.field(next(slot))
        self.lam = engine.field(next(slot))
        self.P = {ax: [engine.field(next(slot)), engine.field(next(slot))] for ax in engine.axes}
        self.Z = {ax: [engine.field(next(slot)), engine.field(next(slot))] for ax in engine.axes}
        self.grad_v2dt2 = engine.field(next(slot)) if model else None
        self.grad_src = engine.zeros(g.n_shots, g.n_src, g.nt) if source and g.n_src else None
        self.recon_next: Any = None  # u^{t+1}, then u^{t-1}
        self.recon: Any = None  # u^t

    def point(self, f: _Fields, suffix: str = "") -> None:
        """Point the adjoint kernels' slots of this wavefield (names ending ``suffix``) at it."""
        f.set(f"u{suffix}_prev", self.lam_prev)
        f.set(f"u{suffix}", self.lam)
        for ax in self.P:
            f.set(f"psi{suffix}", self.P[ax][0], ax)
            f.set(f"psi{suffix}_new", self.P[ax][1], ax)
            f.set(f"zeta{suffix}", self.Z[ax][0], ax)
            f.set(f"zeta{suffix}_new", self.Z[ax][1], ax)

    def swap(self) -> None:
        """Swap the buffers as one adjoint step does (the reconstruction's too)."""
        self.lam_prev, self.lam = self.lam, self.lam_prev
        for ax in self.P:
            self.P[ax].reverse()
            self.Z[ax].reverse()
        if self.recon is not None:
            self.recon_next, self.recon = self.recon, self.recon_next


def simd_rows() -> int:
    """1 when the CPU kernels run plain x ranges in explicit-vector rows.

    Those rows (``sweep_cy/acoustic_cpu_vec.h``) take the x taps of the
    stencil from registers instead of one unaligned load each, and give
    bitwise the result of the scalar loops, which ``SWEEP_SIMD_ROWS=0``
    selects (for tests and for comparing speed).
    """
    return int(config.get("simd_rows"))  # also sweep.config(simd_rows=...)


def _max_threads() -> int:
    from . import _C

    return int(_C.max_threads())


class CompiledStepper:
    """What every compiled stepper shares, on host (NumPy) or device (CuPy) arrays.

    Buffers in the kernels' layout, the constant kernel inputs (CPML
    profiles, source and receiver indices, parameters), the pointer record
    and the calls of :meth:`forward_steps` and :meth:`adjoint_steps`.  An
    equation's subclass names its kernels (:attr:`name`: ``sweep._C.run`` and
    ``sweep._cuda_backend.run`` take the name; :attr:`fields` and
    :attr:`members`, the pointer record and its members' layouts and
    writers, come from its declaration in ``sweep._fields_table``) and
    defines its states, the sizes the memory strategies plan with,
    :meth:`finish_gradient` and the hooks at the end of the class.
    """

    name = ""
    reversible = False
    snapshot_values = 1  # values per cell of a snapshot (SWEEP_EQ_SNAP_VALUES)
    band_values = 1  # state values per band cell of boundary saving (SWEEP_EQ_BAND_VALUES)
    replay_sources = False  # whether the CPML replay injects the sources (replay_steps)
    waves = 1  # wavefields stepped together (FwdState / AdjState each)
    time_blocking = False  # calls may be blocked in time (gradients: SWEEP_EQ_BLOCK_* in C)
    # CuPy arrays: forward calls replay CUDA graphs (sweep._cuda_graph), set by the
    # propagators that offer it (experimental_cuda_graph=True).
    cuda_graph = False
    # Temporal blocking's facts (sweep._blocking), where it applies.
    blocking_cell_bytes = 12
    stages = 1
    # Adjoint calls' blocking where it differs from the forward's untuned one,
    # per dimension (sweep._blocking.adjoint_blocking; SWEEP_EQ_BLOCK_ADJOINT).
    adjoint_blocking: ClassVar[dict[int, tuple[int, int, int]]] = {}

    def __init__(self, geom: Geometry, xp: Any, dtype: Any, n_threads: int = 0) -> None:
        self.geom = geom
        self.xp = xp
        self.dtype = np.dtype(dtype)
        # Below ~64k cells per step, OpenMP's per-step barriers cost more than
        # the work they share (badly so on a loaded machine): run on one thread.
        small = geom.n_shots * geom.kernel_shot_stride < 65536
        self.n_threads = int(n_threads or (1 if small else config.get("n_threads")))
        self.axes = [3 - geom.ndim + d for d in range(geom.ndim)]

    @property
    def threads(self) -> int:
        """The kernels' OpenMP threads (``n_threads``, 0 resolved to all); the host helpers' too."""
        return self.n_threads or _max_threads()

    @property
    def fields(self) -> np.dtype:
        """The pointer record of this equation's kernels (``sweep._params.KERNEL_FIELDS``)."""
        return KERNEL_FIELDS[self.name]

    @property
    def members(self) -> MemberFacts:
        """Element type, layout and writers of the record's members (``sweep._params``)."""
        return KERNEL_MEMBERS[self.name]

    def _run(self, ndim: int, order: int, is_double: bool, adjoint: bool, params: np.ndarray,
             f: _Fields, t: int, n: int, n_threads: int) -> None:  # fmt: skip
        # Imported on first use, so planners can size a run without the kernels.
        if self.xp is np:
            from . import _C

            _C.run(self.name, ndim, order, is_double, adjoint, params, f.rec, t, n, n_threads)
            return
        from . import _cuda_backend

        if self.cuda_graph and not adjoint:
            _cuda_backend.run_graph(self.name, ndim, order, is_double, params, f, t, n)
        else:
            _cuda_backend.run(self.name, ndim, order, is_double, adjoint, params, f.rec, t, n)

    # -- facts the memory strategies use --------------------------------------
    @property
    def nt(self) -> int:
        """Time steps of the run."""
        return self.geom.nt

    @property
    def state_bytes(self) -> int:
        """Bytes of one checkpoint: per wavefield u^{t-1}, u^t and the CPML strips of psi, zeta."""
        g = self.geom
        cells = 2 * g.kernel_shot_stride + 2 * self._strip_cells  # psi and zeta on the strips
        return self.waves * g.n_shots * cells * self.dtype.itemsize

    @property
    def live_state_bytes(self) -> int:
        """Bytes of one forward state: per wavefield u^{t-1}, u^t, two psi and one zeta per axis."""
        return self.waves * (2 + 3 * self.geom.ndim) * self.field_bytes

    @property
    def step_cells(self) -> int:
        """Cell updates of one step over every shot, as the kernels lay them out."""
        return self.geom.n_shots * self.geom.kernel_shot_stride

    @property
    def snapshot_shape(self) -> tuple[int, ...]:
        """Shape of one step's gradient snapshot: its values of the model and CPML cells.

        ``(n_shots, *store_shape)`` for one value per cell (acoustic: W),
        ``(values, n_shots, *store_shape)`` for several (:attr:`snapshot_values`).
        """
        g = self.geom
        return self._with_values((g.n_shots, *g.store_shape), self.snapshot_values)

    def snapshot_shape_for(self, compression: str | None) -> tuple[int, ...]:
        """Shape of one step's snapshot in a full-storage store: :attr:`snapshot_shape`."""
        return self.snapshot_shape

    def _store_layout(self, f: _Fields) -> int:
        """Return the ``store_layout`` parameter for the snapshot buffer of ``f`` (default 0)."""
        return 0

    @staticmethod
    def _with_values(shape: tuple[int, ...], values: int) -> tuple[int, ...]:
        """Return ``shape`` for one value per cell, ``(values, *shape)`` for several."""
        return shape if values == 1 else (values, *shape)

    # -- boundary saving (reversible steppers; see sweep._stepper.ReversibleStepper) --
    @property
    def band_shape(self) -> tuple[int, ...]:
        """Shape of one step's band save of the state (``band_u``), every shot."""
        return self._with_values((self.geom.n_shots, len(self.geom.band_idx)), self.band_values)

    @property
    def ring_values(self) -> int:
        """State values per ring cell a CPML replay keeps: u and psi (the cell's axis) per wave."""
        return 2 * self.band_values

    @property
    def ring_shape(self) -> tuple[int, ...]:
        """Shape of one step of a CPML replay's ring state (``replay_u``), every shot."""
        g = self.geom
        return self._with_values((g.n_shots, len(g.ring_idx)), self.ring_values)

    @property
    def outer_shape(self) -> tuple[int, ...]:
        """Shape of one step of a CPML replay's output (the outer cells' snapshots, every shot)."""
        g = self.geom
        return self._with_values((g.n_shots, len(g.outer_idx)), self.snapshot_values)

    @property
    def outer_state_bytes(self) -> int:
        """Bytes of the state a CPML replay starts from (``outer_parts`` of the state).

        Per wavefield u^{t-1}, u^t, psi and zeta, each on the strips of every axis.
        """
        return self.waves * self.geom.n_shots * 4 * self._strip_cells * self.dtype.itemsize

    @property
    def reconstruction_bytes(self) -> int:
        """Bytes of the reconstructed u^{t+1} and u^t of every wavefield."""
        return 2 * self.waves * self.field_bytes

    @functools.cached_property
    def _strip_cells(self) -> int:
        """Cells per shot of one field's CPML strips, summed over the axes (kernels' layout)."""
        g = self.geom
        cells = 0
        for d, ax in enumerate(self.axes):
            for strip in self.cpml_strips[ax]:
                cells += (
                    g.kernel_shot_stride // g.layout_shape[d] * (strip[-1].stop - strip[-1].start)
                )
        return cells

    @property
    def field_bytes(self) -> int:
        """Bytes of one padded wavefield for every shot."""
        return self.geom.n_shots * self.geom.kernel_shot_stride * self.dtype.itemsize

    @property
    def cpml_strips(self) -> dict[int, list[tuple[slice, ...]]]:
        """Per axis, the index tuples of the two slabs where psi/zeta may be non-zero."""
        g = self.geom
        out = {}
        for d, ax in enumerate(self.axes):
            lo, hi = g.plain_range(d)
            pre = (slice(None),) * (d + 1)
            out[ax] = [(*pre, slice(0, lo)), (*pre, slice(hi, g.padded_shape[d]))]
        return out

    # -- buffers ---------------------------------------------------------------
    def zeros(self, *shape: int, slot: int | None = None, fill: bool = True) -> Any:
        """Return a zeroed array; ``slot`` places a host array at that field's page offset.

        ``fill=False``: a host array may hold old values (the caller writes it whole).
        """
        if self.xp is np:
            phase = None if slot is None else _hostmem.field_phase(slot, self._row_lead())
            return _hostmem.zeros(shape, self.dtype, phase=phase, fill=fill, threads=self.threads)
        return self.xp.zeros(shape, dtype=self.dtype)

    def _row_lead(self) -> int:
        """Bytes before the cell of a row that host fields put on a cache line.

        The CPU kernels update a row in vectors of up to 32 bytes (3D) or 64
        (2D), and a vector that straddles two cache lines costs two accesses.
        Rows are whole lines (:attr:`Geometry.layout_shape`), so one shift
        places the same cell of every row on a line boundary: x = halo in 3D
        (measured on AMD family 26, 3D 128^3 + CPML 20, order 8, one thread:
        9.90 -> 9.27 ms per step against fields as allocated), and in 2D the
        first cell of the plain middle, where the bulk of a row's vectors run
        (2D 300 x 1012 + CPML 20, order 4, 4 shots, 2 threads, Intel Xeon:
        0.53-0.56 -> 0.41 ns per cell update against rows that drift through
        the offsets; benchmarks/README.md).
        """
        g = self.geom
        first = g.plain_range(g.ndim - 1)[0] if g.ndim == 2 else g.halo
        return first * self.dtype.itemsize

    def _pitched(self, shape: tuple[int, ...], slot: int, fill: bool = True) -> Any:
        """Zeroed array of ``shape`` (last axis a padded row) in the kernels' row layout.

        A view of an array whose rows are :attr:`Geometry.layout_shape`'s
        length; its data pointer is the wider array's.  ``fill=False``: only
        the rows' tails past ``shape[-1]`` are zeroed (the caller writes the rest).
        """
        wide = self.zeros(*shape[:-1], self.geom.layout_shape[-1], slot=slot, fill=fill)
        if not fill:
            wide[..., shape[-1] :] = 0
        return wide[..., : shape[-1]]

    def field(self, slot: int) -> Any:
        """Return a zeroed padded wavefield of every shot, in the kernels' row layout.

        ``slot`` numbers the field among those one kernel call touches: host
        fields start at distinct offsets within a page (``_hostmem.field_phase``).
        """
        g = self.geom
        return self._pitched((g.n_shots, *g.padded_shape), slot)

    def copy_field(self, x: Any, slot: int) -> Any:
        """Return a copy of ``x`` in field slot ``slot``.

        See :meth:`field`.  Written in one pass, over a field that is not
        zeroed first (a set-up cost per call).
        """
        out = self._pitched(tuple(x.shape), slot, fill=False)
        out[...] = x
        return out

    def masked_field(self, x: np.ndarray, mask: tuple[np.ndarray, ...], slot: int) -> Any:
        """Return ``x`` (host) times a live mask in field slot ``slot`` on the engine's device.

        ``mask``: the mask's 0/1 factors per axis (broadcastable to ``x``),
        whose product is the mask.  The product is formed on the host and
        copied over; host engines write theirs straight into their fields
        (:meth:`planewise_fields`).
        """
        full = functools.reduce(np.multiply, mask, x)
        return self.copy_field(self.kernel_input(np.asarray(full), name="coefficients"), slot)

    def planewise_fields(
        self,
        compute: Callable[[list[np.ndarray], slice], dict[int, tuple[np.ndarray, tuple]]],
        models: list[np.ndarray],
        slot0: int,
        pad: Callable[[np.ndarray, slice, np.ndarray], np.ndarray],
    ) -> dict[int, np.ndarray]:
        """Return host fields of coefficients times their live masks, computed a slab at a time.

        ``models``: NumPy models (model shape), padded here a slab at a time
        into reused buffers by ``pad(model, planes, out)`` (the eager
        engine's :meth:`~sweep._eager.EagerBase.pad_planes`): no whole padded
        model, its pass and its fresh pages.  ``compute(slabs, planes)`` maps
        the padded models' ``planes`` (a slice of the first axis) to ``{k: (coefficient,
        mask)}`` (field slot ``slot0 + k``; the mask as its 0/1 factors per
        axis; one pair object under two keys is one field) with elementwise
        arithmetic and the next node along an axis only.  Each slab comes
        with the next plane too (whose own values are dropped), so the values
        are the whole grid's bit for bit, and the temporaries stay in the
        caches: each whole-grid temporary costs a pass through memory and its
        fresh pages' faults (3D Maxwell and elastic set-up,
        benchmarks/README.md).  A coefficient times the other axes' factors,
        then the first axis's dead planes times zero, is the coefficient
        times the mask bit for bit (a product with 1 is exact, with 0 a zero
        of the coefficient's sign either way).
        """
        _hostmem.settle_heap()  # the slabs' temporaries stay in the heap
        shape = tuple(self.geom.padded_shape)
        n0 = shape[0]
        step = max(_SLAB_PLANES, _SLAB_BYTES // max(math.prod(shape[1:]) * models[0].itemsize, 1))
        bufs = [np.empty((min(step + 1, n0), *shape[1:]), m.dtype) for m in models]
        fields: dict[int, np.ndarray] = {}
        alias: dict[int, int] = {}
        inner: dict[int, Any] = {}
        dead: dict[int, np.ndarray] = {}
        for k0 in range(0, n0, step):
            k1 = min(k0 + step, n0)
            planes = slice(k0, min(k1 + 1, n0))
            part = compute([pad(m, planes, b) for m, b in zip(models, bufs, strict=True)], planes)
            if not fields:
                first: dict[int, int] = {}
                for k, pair in part.items():
                    alias[k] = first.setdefault(id(pair), k)
                for k, (_, mask) in part.items():
                    if alias[k] == k:
                        head, *rest = mask
                        inner[k] = functools.reduce(np.multiply, rest) if rest else None
                        dead[k] = np.flatnonzero(np.asarray(head).reshape(-1) == 0)
                        fields[k] = self._pitched(shape, slot0 + k, fill=False)
            for k, out in fields.items():
                src, dst = part[k][0][: k1 - k0], out[k0:k1]
                if inner[k] is None:
                    dst[...] = src
                else:
                    np.multiply(src, inner[k], out=dst)
                cut = dead[k][(dead[k] >= k0) & (dead[k] < k1)] - k0
                if cut.size:
                    dst[cut] *= 0
        return {k: fields[alias[k]] for k in alias}

    @functools.cached_property
    def buffer_layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        """Per kernel field, the shape (-1: any extent) and row pitch (0: dense) it must have.

        Keys are the names of the pointer record (:attr:`fields`), and
        ``("pml_a", axis)`` / ``("pml_b", axis)`` for the per-axis profiles.
        """
        return self._layouts()

    def _layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        """Return :attr:`buffer_layouts` (reversible steppers add boundary saving's buffers)."""
        g = self.geom
        pitch = g.layout_shape[-1]
        grid = ((g.n_shots, *g.padded_shape), pitch)
        out: dict[Any, tuple[tuple[int, ...], int]] = {
            "src_amp": ((g.n_shots, g.n_src, g.nt), 0),
            "grad_src": ((g.n_shots, g.n_src, g.nt), 0),
            "src_idx": ((g.n_shots, g.n_src), 0),
            "rec": ((g.n_shots, g.n_rec, g.nt), 0),
            "rec_idx": ((g.n_shots, g.n_rec), 0),
            "store": ((-1, *self.snapshot_shape), 0),
            "rec_groups": ((-1, 4), 0),
            "rec_order": ((g.n_shots * g.n_rec,), 0),
        }
        out.update(dict.fromkeys(self.members.grid, grid))
        out.update(dict.fromkeys(self.members.model, (g.padded_shape, pitch)))
        for d, ax in enumerate(self.axes):
            out["pml_a", ax] = out["pml_b", ax] = ((g.padded_shape[d],), 0)
        if self.reversible:
            # Boundary saving's buffers: their cells are found on first use only
            # (elastic 3D 100^3: ~10 ms that a plain forward never needs).
            return _BoundaryLayouts(out, self._boundary_layouts)
        return out

    def _boundary_layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        """Return the layouts of boundary saving's buffers (reversible steppers)."""
        g = self.geom
        return {
            "band_u": ((-1, *self.band_shape), 0),
            "band_idx": ((len(g.band_idx),), 0),
            "band_row": ((len(g.band_row),), 0),
            "replay_w": ((-1, *self.outer_shape), 0),
            "outer_idx": ((len(g.outer_idx),), 0),
            "outer_row": ((len(g.outer_row),), 0),
            "cpml_pos": ((len(g.cpml_pos),), 0),
            "replay_u": ((-1, *self.ring_shape), 0),
            "ring_code": ((len(g.ring_code),), 0),
        }

    def kernel_input(self, x: Any, *, name: str, dtype: Any = None) -> Any:
        """``x`` on this engine's device in the kernels' layout (:func:`sweep._xp.kernel_array`).

        ``dtype`` defaults to the compute dtype.
        """
        return kernel_array(x, self.dtype if dtype is None else dtype, name=name, xp=self.xp)

    def new_receivers(self) -> Any:
        """Return zeroed receiver traces (n_shots, n_rec, nt)."""
        g = self.geom
        return self.zeros(g.n_shots, g.n_rec, g.nt)

    def source_gradient(self, adj: AdjState) -> Any:
        """Return the gradient with respect to the source amplitudes (zeros without sources)."""
        if adj.grad_src is not None:
            return adj.grad_src
        g = self.geom
        return self.zeros(g.n_shots, g.n_src, g.nt)

    @functools.cached_property
    def _constants(self) -> dict[str, Any]:
        """Arrays and parameters every kernel call passes, converted once per engine.

        A checkpointing schedule makes thousands of single-step calls; on a
        GPU each conversion here would be a host-to-device copy.
        """
        g, xp = self.geom, self.xp
        out: dict[str, Any] = {
            "params": g.params(),
            # float64 profiles, rounded to the compute dtype on purpose.
            "pml": [
                tuple(
                    self.kernel_input(x.astype(self.dtype), name="CPML profile")
                    for x in g.pml_profiles[d]
                )
                for d in range(g.ndim)
            ],
            "src_idx": None,
            "rec_idx": None,
            "rec_groups": None,
        }
        if g.n_src:
            idx = g.kernel_index(g.src_idx)
            out["src_idx"] = self.kernel_input(idx, name="source_locations", dtype=np.int64)
        if g.n_rec:
            idx = g.kernel_index(g.rec_idx)
            out["rec_idx"] = self.kernel_input(idx, name="receiver_locations", dtype=np.int64)
        if g.n_rec and self._cuda_receivers:
            out["rec_groups"] = self._rec_groups()
            out["params"]["n_rec_groups"] = out["rec_groups"][0].shape[0]
        if xp is np and self.time_blocking:
            steps, group, tile = _blocking.time_blocking(
                g, self.threads, cell_bytes=self.blocking_cell_bytes
            )
            out["params"]["block_steps"] = steps
            out["params"]["block_group"] = group
            out["params"]["block_tile"] = tile
            out["adjoint_blocking"] = _blocking.adjoint_blocking(
                g,
                self.threads,
                cell_bytes=self.blocking_cell_bytes,
                defaults=self.adjoint_blocking,
            )
        if xp is np:
            out["params"]["simd_rows"] = simd_rows()
        if _debug.enabled():  # host side of the CUDA kernels' SWEEP_DEBUG index checks
            for what, idx in (("source", out["src_idx"]), ("receiver", out["rec_idx"])):
                if idx is not None:
                    _debug.check_indices(out["params"], what, idx)
        return out

    def _common(self, f: _Fields, coeffs: Any, amp: Any, *, adjoint: bool) -> None:
        c = self._constants
        self._set_coefficients(f, coeffs, adjoint=adjoint)
        for axis, (a, b) in zip(self.axes, c["pml"], strict=True):
            f.set("pml_a", a, axis)
            f.set("pml_b", b, axis)
        if c["src_idx"] is not None and amp is not None:
            f.set("src_amp", amp)
            f.set("src_idx", c["src_idx"])
        if c["rec_idx"] is not None:
            f.set("rec_idx", c["rec_idx"])
        if c["rec_groups"] is not None:
            f.set("rec_groups", c["rec_groups"][0])
            f.set("rec_order", c["rec_groups"][1])

    @property
    def _cuda_receivers(self) -> bool:
        """Whether the kernels inject residuals by receiver cell (the CUDA kernels' groups)."""
        return self.xp is not np

    def _rec_groups(self, idx: Any = None, stride: int = 0) -> tuple[Any, Any]:
        """Receivers grouped by cell for the CUDA adjoint injection (see sweep_common.h).

        ``idx``: the receivers' kernel indices per shot (default: the
        geometry's), each below ``stride`` (default: a shot's cells).
        """
        g = self.geom
        if idx is None:
            idx, stride = g.kernel_index(g.rec_idx), g.kernel_shot_stride
        keys = np.arange(g.n_shots)[:, None] * stride + np.asarray(idx)
        keys = keys.ravel()
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        end = np.r_[first[1:], len(keys)]
        cell = sorted_keys[first]
        groups = np.stack([cell // stride, cell % stride, first, end], axis=1)
        return (
            self.kernel_input(groups, dtype=np.int64, name="receiver groups"),
            self.kernel_input(order, dtype=np.int64, name="receiver order"),
        )

    @functools.cached_property
    def _band_arrays(self) -> tuple[Any, ...]:
        g = self.geom
        return tuple(
            self.kernel_input(x, dtype=np.int64, name=name)
            for x, name in (
                (g.band_idx, "band indices"),
                (g.band_row, "band rows"),
                (g.outer_idx, "outer indices"),
                (g.outer_row, "outer rows"),
                (g.cpml_pos, "CPML positions"),
                (g.ring_code, "ring cells"),
            )
        )

    def _band(self, f: _Fields, replay_w: Any = None, replay_u: Any = None) -> None:
        f.set("band_idx", self._band_arrays[0])
        f.set("band_row", self._band_arrays[1])
        if replay_w is not None:
            f.set("replay_w", replay_w)
            f.set("outer_idx", self._band_arrays[2])
            f.set("outer_row", self._band_arrays[3])
            f.set("cpml_pos", self._band_arrays[4])
        if replay_u is not None:
            f.set("replay_u", replay_u)
            f.set("ring_code", self._band_arrays[5])

    def _params(self, store_every: int, band: bool) -> np.ndarray:
        p = self._constants["params"].copy()
        p["store_every"] = store_every
        p["n_band"] = len(self.geom.band_idx) if band else 0
        p["n_outer"] = len(self.geom.outer_idx) if band else 0
        p["n_cpml"] = len(self.geom.cpml_pos) if band else 0
        p["n_ring"] = len(self.geom.ring_idx) if band else 0
        return p

    # -- stepping ----------------------------------------------------------------
    def forward_steps(
        self,
        state: Any,
        coeffs: Any,
        amp: Any,
        t0: int,
        n: int,
        *,
        receivers: Any = None,
        store: Any = None,
        store_every: int = 1,
        band_u: Any = None,
    ) -> None:
        """Advance ``state`` by steps ``t0 .. t0+n-1``.

        ``receivers`` (n_shots, n_rec, nt) receives samples t0..t0+n-1.
        ``store`` receives the snapshot (acoustic: W of the model and CPML
        cells) of every step ``t`` with ``t % store_every == 0``, slot 0 being
        the first such step.  ``band_u`` (n, *band_shape) receives the band's
        state (acoustic: u^t; boundary saving, reversible steppers).
        """
        if n <= 0:
            return
        tuner = None
        if self.time_blocking and self.xp is np and store is None and band_u is None:
            tuner = _blocking.tuner_for(
                self.geom,
                self.dtype.name,
                self.threads,
                cell_bytes=self.blocking_cell_bytes,
                stages=self.stages,
            )
        out = {"receivers": receivers, "store": store, "store_every": store_every,
               "band_u": band_u}  # fmt: skip
        if tuner is None:
            self._forward_call(state, coeffs, amp, t0, n, out)
            self._check_finite(self._watched(state), "forward", t0, t0 + n - 1)
            return
        t, end = t0, t0 + n
        while t < end:
            blocking, k, _ = tuner.next_piece(end - t)
            start = time.perf_counter()
            self._forward_call(state, coeffs, amp, t, k, out, blocking)
            tuner.record(blocking, k, time.perf_counter() - start)
            t += k
        self._check_finite(self._watched(state), "forward", t0, t0 + n - 1)

    def _check_finite(self, field: Any, what: str, first: int, last: int) -> None:
        if _debug.enabled():  # debug mode: NaN/Inf after each call (see sweep._debug)
            _debug.check_finite(self.geom, field, what, (first, last))

    def _forward_call(self, state, coeffs, amp, t0: int, n: int, out: dict, blocking=None) -> None:
        """Run one kernel call of :meth:`forward_steps` (``out``: its output keywords).

        ``blocking`` (steps, group, tile), when given, replaces the untuned choice.
        """
        receivers, store, store_every = out["receivers"], out["store"], out["store_every"]
        band_u = out["band_u"]
        g = self.geom
        f = _Fields(self, adjoint=False)
        self._common(f, coeffs, amp, adjoint=False)
        f.set(
            "rec", self._receiver_record(receivers) if g.n_rec and receivers is not None else None
        )
        self._forward_state(f, state)
        f.set("store", store)
        if band_u is not None:
            self._band(f)
            f.set("band_u", band_u)
        params = self._params(store_every, band_u is not None)
        params["store_layout"] = self._store_layout(f)
        if blocking is not None:
            params["block_steps"], params["block_group"], params["block_tile"] = blocking
        self._run(g.ndim, g.order, self.dtype == np.float64, False, params, f, t0, n,
                  self.n_threads)  # fmt: skip
        self._swap_forward(state, n)

    def adjoint_steps(
        self,
        adj: Any,
        coeffs: Any,
        amp: Any,
        grad_rec: Any,
        t_end: int,
        n: int,
        *,
        store: Any = None,
        store_every: int = 1,
        band_u_offset: tuple[Any, int] | None = None,
        replay_w: Any = None,
        replay_u: Any = None,
    ) -> None:
        """Run adjoint steps ``t_end-1`` down to ``t_end-n``.

        ``store``: snapshots of this range as :meth:`forward_steps` wrote them.
        Boundary saving (reversible steppers, with the reconstruction
        started): ``band_u_offset = (array, offset_bytes)`` points at the slot
        of step t_end-n-1 (the offset may reach one slot before the array);
        ``replay_w`` and ``replay_u`` hold W of the outer cells and the ring's
        state for slots t_end-n .. t_end-1 (``replay_steps``).
        """
        if n <= 0:
            return
        g = self.geom
        f = _Fields(self, adjoint=True)
        self._common(f, coeffs, amp, adjoint=True)
        if g.n_rec:
            f.set("rec", self._receiver_record(grad_rec))
        self._adjoint_state(f, adj)
        f.set("grad_src", adj.grad_src)
        f.set("store", store)
        recon = self._reconstruction(f, adj, band_u_offset, replay_w, replay_u)
        params = self._params(store_every, recon)
        params["store_layout"] = self._store_layout(f)
        blocking = self._constants.get("adjoint_blocking")
        if blocking is not None:
            params["block_steps"], params["block_group"], params["block_tile"] = blocking
        self._run(g.ndim, g.order, self.dtype == np.float64, True, params, f, t_end, n,
                  self.n_threads)  # fmt: skip
        if n % 2:
            self._swap_adjoint(adj)
        self._check_finite(self._watched(adj), "adjoint", t_end - 1, t_end - n)

    # -- the equation's part ------------------------------------------------------
    def _set_coefficients(self, f: _Fields, coeffs: Any, *, adjoint: bool) -> None:
        """Point the model fields of ``f`` at ``coeffs``."""
        raise NotImplementedError

    def _receiver_record(self, x: Any) -> Any:
        """Return the receivers (forward) or their cotangent (adjoint) as ``rec`` takes them."""
        return x

    def new_state(self) -> Any:
        """Return zeroed forward wavefields (step 0)."""
        return FwdState(self)

    def new_adjoint(self, *, model: bool, source: bool) -> Any:
        """Return zeroed adjoint wavefields and the gradient accumulators asked for."""
        return AdjState(self, model=model, source=source)

    def _forward_state(self, f: _Fields, state: Any) -> None:
        """Point the forward kernels' wavefield slots at ``state`` (default: one wavefield)."""
        state.point(f)

    def _swap_forward(self, state: Any, n: int) -> None:
        """Swap ``state``'s buffers as ``n`` forward steps did."""
        if n % 2:
            state.swap()

    def _adjoint_state(self, f: _Fields, adj: Any) -> None:
        """Point the adjoint kernels' wavefield and gradient slots at ``adj``."""
        adj.point(f)
        f.set("grad_v2dt2", adj.grad_v2dt2)

    def _swap_adjoint(self, adj: Any) -> None:
        """Swap ``adj``'s buffers as an odd number of adjoint steps did."""
        adj.swap()

    def _reconstruction(self, f: _Fields, adj: Any, band_u_offset: Any, replay_w: Any,
                        replay_u: Any) -> bool:  # fmt: skip
        """Point ``f`` at boundary saving's buffers when ``adj`` reconstructs; whether it does."""
        recon = self._recon_fields(adj)
        if not recon:
            return False
        for name, value in recon.items():
            f.set(name, value)
        self._band(f, replay_w, replay_u)
        arr, offset = band_u_offset if band_u_offset is not None else (None, 0)
        f.set("band_u", arr, offset=offset)
        return True

    def _recon_fields(self, adj: Any) -> dict[str, Any]:
        """Return the reconstruction's kernel fields of ``adj`` (none: it does not reconstruct)."""
        return {}

    # -- boundary saving's stepping (reversible steppers) ---------------------------
    def replay_steps(
        self,
        state: Any,
        coeffs: Any,
        t0: int,
        n: int,
        *,
        band_u: Any,
        replay_w: Any,
        replay_u: Any = None,
        amp: Any = None,
    ) -> None:
        """Re-run the CPML forward over steps ``t0 .. t0+n-1`` (boundary saving).

        ``state`` holds the outer cells at step ``t0`` (its ``outer_parts``);
        each step first loads the band's state of step t from ``band_u``
        (slot 0: step ``t0``), the CPML's inner boundary, and ``replay_w``
        (n, *outer_shape) receives the snapshots of the outer cells, bitwise
        what the forward pass computed on the CPML cells, and ``replay_u``
        (n, *ring_shape), when given, the ring's state (u, and psi along the
        cell's axis, per wave) at the start of each step, from which the
        adjoint recomputes the band's snapshots.  Plain cells are not updated
        and the band's results are not meaningful.  ``amp``: the sources, for
        the steppers whose outer cells may hold some (:attr:`replay_sources`).
        """
        if n <= 0:
            return
        g = self.geom
        f = _Fields(self, adjoint=False)
        self._common(f, coeffs, amp if self.replay_sources else None, adjoint=False)
        self._forward_state(f, state)
        self._band(f, replay_w, replay_u)
        f.set("band_u", band_u)
        self._run(g.ndim, g.order, self.dtype == np.float64, False, self._params(1, True), f,
                  t0, n, self.n_threads)  # fmt: skip
        self._swap_forward(state, n)

    def _watched(self, state: Any) -> Any:
        """Return the field of a forward or adjoint state that debug mode checks for NaN/Inf."""
        return state.lam if isinstance(state, AdjState) else state.u


class CompiledAcoustic(CompiledStepper):
    """Runs the acoustic kernels on host (NumPy) or device (CuPy) arrays.

    The acoustic :class:`sweep._stepper.ReversibleStepper`: leapfrog runs
    backwards in time, so boundary saving applies.
    """

    name = "acoustic"
    reversible = True
    # Temporal blocking: a forward step streams u, u_prev and v^2 dt^2, counted
    # at float32 as the thresholds were tuned, in one sweep over the grid.
    time_blocking = True
    blocking_cell_bytes = 12
    stages = 1

    # -- facts the memory strategies use --------------------------------------
    @property
    def model_gradient_bytes(self) -> int:
        """Bytes of the per-shot gradient accumulator (``AdjState.grad_v2dt2``)."""
        return self.field_bytes

    def working_bytes(self, *, gradient: bool) -> int:
        """Arrays every run allocates besides the strategy's storage (for estimates).

        Forward: its state (kept on the result), padded v^2 dt^2 and receivers.
        Gradient: also the adjoint state, the per-shot gradient accumulator, the
        source-amplitude gradient and the model-size outputs.
        """
        g = self.geom
        item = self.dtype.itemsize
        fields = 2 + 3 * g.ndim  # u_prev, u, psi x2 and zeta per axis
        total = 3 * g.shot_stride * item  # v2dt2 and the padding temporaries
        total += g.n_shots * g.n_rec * g.nt * item
        if gradient:
            fields += 4 + 4 * g.ndim  # lam x2, v^2 dt^2 lam, P x2 and Z x2 per axis, gradient
            total += g.n_shots * g.n_src * g.nt * item + 4 * g.shot_stride * item
        return total + fields * self.field_bytes

    # -- buffers and states ------------------------------------------------------
    def kernel_v2dt2(self, v2dt2: Any) -> Any:
        """v^2 dt^2 on the padded grid in the kernels' row layout (see :meth:`field`)."""
        return self.copy_field(v2dt2, _V2DT2_SLOT)

    def start_reconstruction(self, adj: AdjState, final: FwdState) -> None:
        """Run the forward wavefield backwards alongside ``adj``, from u^{nt} and u^{nt-1}."""
        adj.recon_next = self.copy_field(final.u, _RECON_SLOT)  # u^{nt}
        adj.recon = self.copy_field(final.u_prev, _RECON_SLOT + 1)  # u^{nt-1}

    def finish_gradient(self, adj: AdjState, v2dt2: Any) -> Any:
        """Return the gradient with respect to the padded v^2 dt^2, summed over shots.

        The kernels accumulate sum mu W with mu = v^2 dt^2 lambda; cells with
        v^2 dt^2 = 0 (halo, free-surface rows) take no part and get zero.
        """
        xp = self.xp
        live = v2dt2 > 0
        grad = adj.grad_v2dt2.sum(axis=0)
        return xp.where(live, grad / xp.where(live, v2dt2, 1), 0).astype(grad.dtype)

    # -- the hooks of CompiledStepper -----------------------------------------------
    def _set_coefficients(self, f: _Fields, coeffs: Any, *, adjoint: bool) -> None:
        f.set("v2dt2", coeffs)

    def _recon_fields(self, adj: AdjState) -> dict[str, Any]:
        if adj.recon is None:
            return {}
        return {"recon_u_next": adj.recon_next, "recon_u": adj.recon}
