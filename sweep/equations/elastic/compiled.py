"""Elastic on the compiled kernels: the stepper, its point terms and the model gradients.

The kernels (``cuda/elastic_stencil.h``: C/OpenMP through ``sweep._C.run``,
CUDA through ``cuda/elastic.cu``)
step the velocity-stress fields in place, two phases per step, with the
order a run-time value.  Their coefficients are the eager reference's
(:meth:`EagerElastic.coefficients`: ``dt b_a``, ``dt C_ij``, ``dt mu_ab``)
times the live mask of the field each updates, so the two paths run the same
discrete operator.  Sources and receivers reach the kernels as single-cell
terms (:func:`point_terms`): every kind's weighted point operator
(:mod:`sweep._points`) is expanded here into one column per term, with the
field encoded in the index (``field * shot_stride + cell``); the amplitudes
of the terms are a weighted gather of the caller's columns and the receivers
a weighted sum of the terms, both differentiable by their transposes.  New
kinds (DAS strain rates) are new weights in :mod:`.kinds`, not kernel code.

A snapshot holds one value per field and cell (``sum_b D_ab`` per velocity,
``D_jj`` per normal stress, ``D_ab + D_ba`` per shear stress): the factors of
every coefficient's gradient.  Full storage, checkpointing and boundary
saving: without attenuation the velocity-stress update of a plain cell (no
C-PML terms) runs backwards (the two phases undone in reverse order, the
same sums subtracted), so the adjoint reconstructs the plain cells' fields
step by step from the final state, reading the fields of the ring (the
cells with C-PML terms within a halo of them) from a replay of the CPML
forward, which in turn reads the band (the plain cells within a halo of the
CPML's) saved every step (see :class:`CompiledElastic` and
``sweep_cy/cpu_phased.h``, ``cuda/staggered_cuda.h``).
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import _hostmem
from ..._compiled import CompiledStepper, _Fields
from ..._grid import Geometry
from ..._points import KernelTerms, kernel_terms
from ..._stepper import ForwardState
from ..._xp import to_host
from . import kinds
from .eager import EagerElastic


def memory_slots(ndim: int) -> list[tuple[str, int, int]]:
    """(state key, field index, kernel axis) of every C-PML memory variable."""
    names = list(kinds.fields(ndim))
    return [(key, names.index(field), 3 - ndim + d) for key, field, d in
            kinds.memory_variables(ndim)]  # fmt: skip


class ElasticState(ForwardState):
    """The fields (velocities, stresses) and C-PML memory variables of every shot.

    The forward state or, in the same slots, the adjoint's (the kernels
    update both in place, so nothing rotates).
    """

    def __init__(self, engine: CompiledElastic, slot: int = 0) -> None:
        nd = engine.geom.ndim
        self.xp = engine.xp
        self.fields = [engine.field(slot + k) for k in range(len(kinds.fields(nd)))]
        slot += len(self.fields)
        self.psi = {
            (k, ax): engine.field(slot + i) for i, (_, k, ax) in enumerate(memory_slots(nd))
        }
        self._engine = engine
        if self.xp is np:
            # Fresh host mappings are first touched by writes here (the
            # kernels read each page first: _hostmem.claim_fresh), the memory
            # variables on their axis's slabs only (the rest is never used).
            # 3D o8 forward, cold: benchmarks/README.md.
            _hostmem.write_fresh(
                self.fields,
                ((x, engine.cpml_strips[ax]) for (_, ax), x in self.psi.items()),
            )

    def parts(self) -> list[Any]:
        """Return views of every array of the state (a checkpoint holds them all)."""
        return [*self.fields, *self.psi.values()]

    def outer_parts(self) -> list[Any]:
        """Return views of what a CPML replay starts from (boundary saving).

        Every field on the strips of the cells with C-PML terms and the band
        next to them (:attr:`CompiledElastic.outer_strips`), and each memory
        variable on the strips of its axis (zero elsewhere).
        """
        e = self._engine
        out = [x[sl] for x in self.fields for ax in e.axes for sl in e.outer_strips[ax]]
        return out + [x[sl] for (_, ax), x in self.psi.items() for sl in e.cpml_strips[ax]]

    def load_from(self, given: dict[str, Any]) -> None:
        """Set this state from a result's ``state`` (a restart)."""
        from ..._xp import kernel_array

        nd = self._engine.geom.ndim
        for name, x in zip(kinds.fields(nd), self.fields, strict=True):
            x[...] = kernel_array(given[name], x.dtype, name=name, xp=self.xp)
        for key, k, ax in memory_slots(nd):
            x = self.psi[(k, ax)]
            x[...] = kernel_array(given[key], x.dtype, name=key, xp=self.xp)

    def point(self, f: _Fields) -> None:
        """Point the kernels' field and memory-variable slots at this state."""
        for k, x in enumerate(self.fields):
            f.set("field", x, k)
        for (k, ax), x in self.psi.items():
            f.set("psi", x, 3 * k + ax)


class ElasticAdjoint(ElasticState):
    """Adjoint fields and memory variables, and the gradient accumulators asked for."""

    def __init__(self, engine: CompiledElastic, *, model: bool, source: bool) -> None:
        super().__init__(engine, slot=0)
        n = engine.n_coefficients
        self.grad = [engine.field(k) for k in range(n)] if model else None
        g = engine.geom
        self.grad_src = (
            engine.zeros(g.n_shots, engine.n_src_terms, g.nt) if source and g.n_src else None
        )
        # Boundary saving: the forward fields run backwards, and their snapshots.
        self.recon: list[Any] | None = None
        self.recon_store: Any = None


def point_terms(eager: EagerElastic, *, source: bool) -> KernelTerms:
    """Single-cell terms of every source or receiver, for the kernels (:class:`KernelTerms`).

    The eager path's rows (:meth:`EagerElastic.source_rows`,
    :meth:`EagerElastic.receiver_rows`: the DAS rows included), the field in
    the index as the kernels number them.  A source's weights include its
    scale: ``1 / dV`` of a force (the kernels multiply by ``dt b`` of the
    cell), ``dt / dV`` of a stress term, as the eager path.
    """
    g = eager.geom
    names = list(kinds.fields(g.ndim))
    if not source:
        return kernel_terms(g, eager.rec_rows, names, g.n_rec)
    dv = math.prod(g.spacing)
    return kernel_terms(g, eager.source_rows(), names, g.n_src,
                        lambda f: 1.0 / dv if f.startswith("v") else g.dt / dv)  # fmt: skip


class CompiledElastic(CompiledStepper):
    """Runs the elastic kernels on host (NumPy) or device (CuPy) arrays.

    ``coeffs`` is the list of padded coefficient arrays in the kernels'
    layout and order (:meth:`kernel_coefficients`).
    """

    name = "elastic"
    reversible = True
    replay_sources = True  # sources may sit in the band or the model cells with C-PML terms
    # Snapshots one reconstruction call writes at most: steps and bytes (a few
    # steps amortise the call; more only add memory).
    recon_steps = 8
    recon_buffer_bytes = 32 << 20

    def __init__(self, geom: Geometry, xp: Any, dtype: Any, n_threads: int = 0,
                 **options: Any) -> None:  # fmt: skip
        """``options``: the call's source and receiver settings (``Call.extra``: kinds, DAS)."""
        super().__init__(geom, xp, dtype, n_threads)
        nd = geom.ndim
        like = np.zeros(geom.model_shape, dtype=self.dtype)
        self.eager = EagerElastic.build(geom, like, **options)
        self.n_fields = len(kinds.fields(nd))
        self.n_coefficients = nd + nd * nd + (1 if nd == 2 else 3)
        self.sources = point_terms(self.eager, source=True)
        self.receivers = point_terms(self.eager, source=False)
        self.src_idx, self.rec_idx = self.sources.idx, self.receivers.idx
        self.kinds = dict(options)
        self.n_src_terms = self.sources.n_terms if geom.n_src else 0
        self.n_rec_terms = self.receivers.n_terms if geom.n_rec else 0

    def record_columns(self, terms: np.ndarray) -> np.ndarray:
        """Receiver data ``(n_shots, n_rec, nt)`` from the recorded terms (strain where asked)."""
        return self.eager.finish_records(self.receivers.to_columns(terms))

    def record_terms_transpose(self, cot: np.ndarray) -> np.ndarray:
        """Return the transpose of :meth:`record_columns` applied to ``cot`` (per term)."""
        return self.receivers.to_terms(self.eager.finish_records_transpose(cot))

    @functools.cached_property
    def eager64(self) -> EagerElastic:
        """The eager set-up in float64 NumPy (the gradients' chain rule runs in it)."""
        if self.dtype == np.float64:
            return self.eager
        like = np.zeros(self.geom.model_shape, dtype=np.float64)
        return EagerElastic.build(self.geom, like, **self.kinds)

    # -- facts the memory strategies use --------------------------------------
    @property
    def snapshot_values(self) -> int:  # type: ignore[override]
        """Values per cell of a snapshot: one per field."""
        return self.n_fields

    @property
    def state_bytes(self) -> int:
        """Bytes of one checkpoint: every field and memory variable."""
        return (self.n_fields + len(memory_slots(self.geom.ndim))) * self.field_bytes

    @property
    def live_state_bytes(self) -> int:
        """Bytes of one forward state (as a checkpoint)."""
        return self.state_bytes

    @property
    def model_gradient_bytes(self) -> int:
        """Bytes of the per-shot gradient accumulators (one per coefficient)."""
        return self.n_coefficients * self.field_bytes

    def working_bytes(self, *, gradient: bool) -> int:
        """Arrays every run allocates besides the strategy's storage (for estimates)."""
        g = self.geom
        item = self.dtype.itemsize
        total = self.state_bytes + self.n_coefficients * g.kernel_shot_stride * item
        total += g.n_shots * (self.n_rec_terms + g.n_rec) * g.nt * item
        if gradient:
            total += self.state_bytes + self.model_gradient_bytes
            total += g.n_shots * (self.n_src_terms + g.n_src) * g.nt * item
        return total

    # -- boundary saving -------------------------------------------------------------
    @functools.cached_property
    def _bs_cells(self) -> dict[str, np.ndarray]:
        """The cells of boundary saving, flat indices of a shot in the kernels' layout.

        ``band``: plain cells (no C-PML terms) within a halo, along an axis,
        of a stored cell with C-PML terms: the CPML replay's inner boundary,
        saved every step.  ``ring``: stored cells with C-PML terms within a
        halo of a plain cell: the reconstruction's boundary, from the replay.
        """
        g = self.geom
        stored = np.zeros(g.layout_shape, dtype=bool)
        stored[g.store_slices()] = True
        plain = np.zeros(g.layout_shape, dtype=bool)
        plain[tuple(slice(*g.plain_range(d)) for d in range(g.ndim))] = True
        outer = stored & ~plain

        def near(mask: np.ndarray) -> np.ndarray:
            out = np.zeros_like(mask)
            for d in range(g.ndim):
                n = mask.shape[d]
                for k in range(1, g.halo + 1):
                    if k >= n:
                        break
                    lo = [slice(None)] * g.ndim
                    hi = [slice(None)] * g.ndim
                    lo[d], hi[d] = slice(0, n - k), slice(k, n)
                    out[tuple(lo)] |= mask[tuple(hi)]
                    out[tuple(hi)] |= mask[tuple(lo)]
            return out

        return {
            "band": np.flatnonzero(plain & near(outer)).astype(np.int64),
            "ring": np.flatnonzero(outer & near(plain)).astype(np.int64),
        }

    @property
    def band_values(self) -> int:  # type: ignore[override]
        """State values per band cell: every field."""
        return self.n_fields

    @property
    def ring_values(self) -> int:
        """State values per ring cell: every field."""
        return self.n_fields

    @property
    def band_shape(self) -> tuple[int, ...]:
        """Shape of one step's band save: (fields, shots, band cells)."""
        return (self.n_fields, self.geom.n_shots, len(self._bs_cells["band"]))

    @property
    def ring_shape(self) -> tuple[int, ...]:
        """Shape of one step of the replay's ring fields: (fields, shots, ring cells)."""
        return (self.n_fields, self.geom.n_shots, len(self._bs_cells["ring"]))

    @functools.cached_property
    def outer_strips(self) -> dict[int, list[tuple[slice, ...]]]:
        """Per axis, the slabs of the cells with C-PML terms of that axis and its band."""
        g = self.geom
        out = {}
        for d, ax in enumerate(self.axes):
            lo, hi = g.plain_range(d)
            pre = (slice(None),) * (d + 1)
            n = g.padded_shape[d]
            out[ax] = [(*pre, slice(0, min(lo + g.halo, n))), (*pre, slice(max(hi - g.halo, 0), n))]
        return out

    @property
    def outer_state_bytes(self) -> int:
        """Bytes of :meth:`ElasticState.outer_parts`."""
        g = self.geom
        cells = 0
        for d, ax in enumerate(self.axes):
            per = math.prod(g.padded_shape) // g.padded_shape[d]
            for sl in self.outer_strips[ax]:
                cells += self.n_fields * per * (sl[-1].stop - sl[-1].start)
            for sl in self.cpml_strips[ax]:
                n_psi = sum(1 for _, _, a in memory_slots(g.ndim) if a == ax)
                cells += n_psi * per * (sl[-1].stop - sl[-1].start)
        return g.n_shots * cells * self.dtype.itemsize

    @property
    def _snapshot_bytes(self) -> int:
        return math.prod(self.snapshot_shape) * self.dtype.itemsize

    def _recon_steps(self) -> int:
        """Return the steps per reconstruction call."""
        by_bytes = self.recon_buffer_bytes // self._snapshot_bytes
        return max(1, min(self.geom.nt, self.recon_steps, by_bytes))

    @property
    def reconstruction_bytes(self) -> int:
        """Bytes of the fields run backwards and of the snapshots of one reconstruction call."""
        return self.n_fields * self.field_bytes + self._recon_steps() * self._snapshot_bytes

    def start_reconstruction(self, adj: ElasticAdjoint, final: ElasticState) -> None:
        """Run the forward fields backwards alongside ``adj``, from the final state."""
        adj.recon = [self.copy_field(x, 60 + k) for k, x in enumerate(final.fields)]
        adj.recon_store = self.zeros(self._recon_steps(), *self.snapshot_shape)

    def _band(self, f: _Fields, replay_w: Any = None, replay_u: Any = None) -> None:
        c = self._bs_constants
        f.set("band_idx", c["band"])
        if replay_w is not None:
            f.set("replay_w", replay_w)
            f.set("outer_row", c["outer_row"])
            f.set("outer_idx", c["outer_idx"])  # the CUDA reconstruction's
        if replay_u is not None:
            f.set("replay_u", replay_u)
            f.set("ring_idx", c["ring"])

    @functools.cached_property
    def _bs_constants(self) -> dict[str, Any]:
        g, cells = self.geom, self._bs_cells
        return {
            "band": self.kernel_input(cells["band"], dtype=np.int64, name="band indices"),
            "ring": self.kernel_input(cells["ring"], dtype=np.int64, name="ring indices"),
            "outer_row": self.kernel_input(g.outer_row, dtype=np.int64, name="outer rows"),
            "outer_idx": self.kernel_input(g.outer_idx, dtype=np.int64, name="outer cells"),
        }

    def _params(self, store_every: int, band: bool) -> np.ndarray:
        p = self._constants["params"].copy()
        p["store_every"] = store_every
        # Boundary saving's cells only when it runs (Maxwell's steps never do).
        cells = self._bs_cells if band else {"band": (), "ring": ()}
        p["n_band"] = len(cells["band"])
        p["n_outer"] = len(self.geom.outer_idx) if band else 0
        p["n_cpml"] = 0
        p["n_ring"] = len(cells["ring"])
        return p

    def adjoint_steps(
        self,
        adj: ElasticAdjoint,
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
        """Run adjoint steps ``t_end-1`` down to ``t_end-n`` (as ``CompiledStepper``'s).

        With the reconstruction started (boundary saving), each piece of
        steps first runs the forward fields backwards over it, which writes
        the piece's snapshots (the plain cells' from the fields undone, the
        others' from ``replay_w``), then the adjoint steps read them.  The
        band's saved fields (``band_u_offset``) are not read: the ring's
        from the replay (``replay_u``) bound the reconstruction.
        """
        if getattr(adj, "recon", None) is None:  # also Maxwell's adjoint (no boundary saving)
            super().adjoint_steps(adj, coeffs, amp, grad_rec, t_end, n, store=store,
                                  store_every=store_every)  # fmt: skip
            return
        t0, hi = t_end - n, t_end
        while hi > t0:
            lo = max(t0, hi - adj.recon_store.shape[0])
            buf = adj.recon_store[: hi - lo]
            self._reconstruct(adj.recon, coeffs, amp, hi, hi - lo, buf,
                              replay_w[lo - t0 : hi - t0], replay_u[lo - t0 : hi - t0])  # fmt: skip
            super().adjoint_steps(adj, coeffs, amp, grad_rec, hi, hi - lo, store=buf)
            hi = lo

    def _reconstruct(self, recon: list[Any], coeffs: Any, amp: Any, t_end: int, n: int,
                     store: Any, replay_w: Any, replay_u: Any) -> None:  # fmt: skip
        """Undo steps ``t_end-1 .. t_end-n`` on the plain cells of ``recon``.

        Their snapshots go to ``store``; ``replay_w``, ``replay_u``: the CPML
        replay's slots of the same steps.
        """
        g = self.geom
        f = _Fields(self, adjoint=True)
        self._common(f, coeffs, amp, adjoint=True)
        for k, x in enumerate(recon):
            f.set("field", x, k)
        f.set("store", store)
        self._band(f, replay_w, replay_u)
        self._run(g.ndim, g.order, self.dtype == np.float64, True, self._params(1, True), f,
                  t_end, n, self.n_threads)  # fmt: skip

    # -- buffers and states ------------------------------------------------------
    def _layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        g = self.geom
        out = super()._layouts()
        out.update({
            "src_amp": ((g.n_shots, self.n_src_terms, g.nt), 0),
            "grad_src": ((g.n_shots, self.n_src_terms, g.nt), 0),
            "src_idx": ((g.n_shots, self.n_src_terms), 0),
            "rec": ((g.n_shots, self.n_rec_terms, g.nt), 0),
            "rec_idx": ((g.n_shots, self.n_rec_terms), 0),
            "rec_order": ((g.n_shots * self.n_rec_terms,), 0),
            "pml_ah": ((-1,), 0),
            "pml_bh": ((-1,), 0),
            "wv": ((g.halo, -1), 0),
            "ws": ((g.halo,), 0),
        })  # fmt: skip
        return out

    def _boundary_layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        cells = self._bs_cells  # boundary saving's cells (found in ~1 ms at 480^2)
        return super()._boundary_layouts() | {
            "band_idx": ((len(cells["band"]),), 0),
            "ring_idx": ((len(cells["ring"]),), 0),
            "outer_row": ((len(self.geom.outer_row),), 0),
        }

    def new_state(self) -> ElasticState:
        """Return zeroed fields and memory variables (step 0)."""
        return ElasticState(self)

    def new_adjoint(self, *, model: bool, source: bool) -> ElasticAdjoint:
        """Return zeroed adjoint fields and the gradient accumulators asked for."""
        return ElasticAdjoint(self, model=model, source=source)

    def new_receivers(self) -> Any:
        """Return zeroed receiver terms (n_shots, n_terms, nt)."""
        g = self.geom
        return self.zeros(g.n_shots, self.n_rec_terms, g.nt)

    def source_gradient(self, adj: ElasticAdjoint) -> Any:
        """Return the gradient with respect to the source terms' amplitudes."""
        if adj.grad_src is not None:
            return adj.grad_src
        g = self.geom
        return self.zeros(g.n_shots, self.n_src_terms, g.nt)

    def kernel_coefficients(self, vp: Any, vs: Any, rho: Any) -> list[Any]:
        """Return the kernels' coefficients (on this engine's device) from NumPy models.

        The coefficients (:func:`coefficient_factors`) are computed on the host.
        """
        eager = self.eager
        if self.xp is np:  # on slabs of planes, straight into the fields

            def compute(padded: list[np.ndarray], planes: slice) -> dict[int, tuple]:
                c = eager.coefficients_padded(*padded, planes, sources=False)
                return dict(enumerate(_pair_factors(eager, c)))

            models = [np.asarray(m) for m in (vp, vs, rho)]
            fields = self.planewise_fields(compute, models, 40, eager.pad_planes)
            return [fields[k] for k in range(len(fields))]
        factors = coefficient_factors(eager, vp, vs, rho)
        copies: dict[int, Any] = {}  # a pair repeated (equal moduli) is written once
        for k, f in enumerate(factors):
            if id(f) not in copies:
                copies[id(f)] = self.masked_field(*f, 40 + k)
        return [copies[id(f)] for f in factors]

    def state_dict(
        self, state: ElasticState, like: Any, memory: bool = True, copy: bool = True
    ) -> dict[str, Any]:
        """Return the padded fields (and memory variables) of ``state`` in ``like``'s library.

        ``copy=False``: the state's own arrays, views of the kernels' buffers
        (callbacks: an in-place edit changes the propagation; the result of a
        forward without gradient: nothing steps that state any more).
        """
        from ..._xp import from_kernel_array

        nd = self.geom.ndim
        xp = self.xp
        own = xp.array if copy else (lambda x: x)
        out = {name: from_kernel_array(own(x), like)
               for name, x in zip(kinds.fields(nd), state.fields, strict=True)}  # fmt: skip
        if memory:
            for key, k, ax in memory_slots(nd):
                out[key] = from_kernel_array(own(state.psi[(k, ax)]), like)
        return out

    def finish_gradient(self, adj: ElasticAdjoint, coeffs: Any) -> tuple[Any, ...]:
        """Return the gradients with respect to the kernels' coefficients, summed over shots."""
        if self.xp is not np:
            return tuple(self.xp.ascontiguousarray(x.sum(axis=0)) for x in adj.grad)
        # The same sums into reused mappings (_hostmem.scratch: no fresh pages per call).
        return tuple(np.sum(x, axis=0, out=_hostmem.scratch(x.shape[1:], x.dtype))
                     for x in adj.grad)  # fmt: skip

    # -- the hooks of CompiledStepper -----------------------------------------------
    @property
    def _constants(self) -> dict[str, Any]:  # type: ignore[override]
        """Arrays and parameters every kernel call passes (the point terms' counts and indices)."""
        return self._elastic_constants

    @functools.cached_property
    def _elastic_constants(self) -> dict[str, Any]:
        weights = velocity_weights(self.eager, self.dtype)
        wv = [[self.kernel_input(w, name="weights") for w in per] for per in weights]
        return {**self._staggered_constants(), "wv": wv}

    def _staggered_constants(self) -> dict[str, Any]:
        """Arrays of the kernels' record every staggered system sets alike (Maxwell too)."""
        g, dt = self.geom, self.dtype
        p = g.params()
        p["n_src"], p["n_rec"] = self.n_src_terms, self.n_rec_terms

        def profiles(per_axis: Any) -> list[tuple[Any, Any]]:
            return [
                (self.kernel_input(a.astype(dt), name="CPML profile"),
                 self.kernel_input(b.astype(dt), name="CPML profile"))
                for a, b in per_axis
            ]  # fmt: skip

        def index(x: np.ndarray, n: int, name: str) -> Any:
            return self.kernel_input(x, name=name, dtype=np.int64) if n else None

        rec_groups = None
        if g.n_rec and self._cuda_receivers:
            # Indices field * shot_stride + cell, below the record's 9 field slots.
            rec_groups = self._rec_groups(self.rec_idx, 9 * g.kernel_shot_stride)
            p["n_rec_groups"] = rec_groups[0].shape[0]
        return {
            "params": p,
            "pml": profiles(g.pml_profiles),
            "pml_half": profiles(g.pml_profiles_half),
            "ws": self.kernel_input(np.array(self.eager.cs[: g.halo], dtype=dt), name="ws"),
            "src_idx": index(self.src_idx, g.n_src, "source_locations"),
            "rec_idx": index(self.rec_idx, g.n_rec, "receiver_locations"),
            "rec_groups": rec_groups,
        }

    def _set_coefficients(self, f: _Fields, coeffs: list[Any], *, adjoint: bool) -> None:
        c = self._constants
        for k, x in enumerate(coeffs):
            f.set("coef", x, k)
        for ax, (a, b) in zip(self.axes, c["pml_half"], strict=True):
            f.set("pml_ah", a, ax)
            f.set("pml_bh", b, ax)
        for ax, per in zip(self.axes, c["wv"], strict=True):
            for fw, w in enumerate(per):
                f.set("wv", w, 2 * ax + fw)
        f.set("ws", c["ws"])

    def _forward_state(self, f: _Fields, state: ElasticState) -> None:
        state.point(f)

    def _swap_forward(self, state: Any, n: int) -> None:
        pass  # in place

    def _adjoint_state(self, f: _Fields, adj: ElasticAdjoint) -> None:
        adj.point(f)
        if adj.grad is not None:
            for k, x in enumerate(adj.grad):
                f.set("grad", x, k)

    def _swap_adjoint(self, adj: Any) -> None:
        pass  # in place

    def _watched(self, state: Any) -> Any:
        return state.fields[0]


def velocity_weights(eager: EagerElastic, dtype: Any) -> list[list[np.ndarray]]:
    """Per model axis, the (backward, forward) weights of the velocities' differences.

    Arrays (halo, padded length) in tap-major order: the constant staggered
    weights, and next to a free surface the eager path's lower orders.
    """
    g = eager.geom
    out = []
    for d in range(g.ndim):
        per = []
        for fw in (False, True):
            w = np.repeat(np.array(eager.cs)[:, None], g.padded_shape[d], axis=1)
            rows = eager.surface_weights[d][fw]
            if rows is not None:
                h = g.halo
                for k, row in enumerate(rows):
                    w[k, h : g.padded_shape[d] - h] = np.asarray(row).reshape(-1)
            per.append(np.ascontiguousarray(w, dtype=dtype))
        out.append(per)
    return out


def coefficient_arrays(eager: EagerElastic, xp: Any, vp: Any, vs: Any, rho: Any) -> list[Any]:
    """Return the kernels' coefficients: the eager path's times the live mask of each field.

    In the kernels' order: ``dt b_a`` per velocity, ``dt C_ij`` (row-major),
    ``dt mu_ab`` per shear stress; padded, without a shot axis.  ``xp`` is
    the models' array library (NumPy, or torch for the chain rule of the
    gradients).
    """
    factors = coefficient_factors(eager, vp, vs, rho)
    products: dict[int, Any] = {}
    for f in factors:
        if id(f) not in products:
            products[id(f)] = functools.reduce(operator.mul, f[1], f[0])
    return [products[id(f)] for f in factors]


def coefficient_factors(eager: EagerElastic, vp: Any, vs: Any, rho: Any) -> list[tuple[Any, Any]]:
    """Return the kernels' coefficients as factors: (the eager path's, its field's live mask).

    In :func:`coefficient_arrays`' order; a live mask is given as its 0/1
    factors per axis (:attr:`~sweep._staggered.EagerStaggered.live_factors`),
    and a kernel coefficient is the product of them all.  Equal moduli with
    equal live masks are one pair object (the same values): the kernels read
    2 arrays of ``C_ij`` without a free surface, not 9.
    """
    return _pair_factors(eager, eager.coefficients(vp, vs, rho))


def _pair_factors(eager: EagerElastic, c: dict[str, Any]) -> list[tuple[Any, Any]]:
    """:func:`coefficient_factors` of the coefficients ``c`` (:meth:`EagerElastic.coefficients`)."""
    nd = eager.geom.ndim
    names = list(kinds.fields(nd))
    axes = kinds.AXES[nd]

    def live(name: str) -> tuple[Any, ...]:
        return eager.live_factors[name]

    out = [(c["b"][kinds.velocity(a)], live(kinds.velocity(a))) for a in axes]
    normal = _equal_live(eager, names[nd : 2 * nd])
    pairs: dict[tuple[int, str], tuple[Any, Any]] = {}
    for i in range(nd):
        for j in range(nd):
            key = (id(c["C"][(i, j)]), normal[i])
            if key not in pairs:
                pairs[key] = (c["C"][(i, j)], live(names[nd + i]))
            out.append(pairs[key])
    for i in range(nd):
        for j in range(i + 1, nd):
            s = kinds.stress(axes[i], axes[j])
            out.append((c["mu"][s], live(s)))
    return out


def _equal_live(eager: EagerElastic, names: list[str]) -> list[str]:
    """Per field of ``names``, the first of ``names`` whose live mask is equal to its own."""
    cache = eager.__dict__.setdefault("_equal_live", {})
    key = tuple(names)
    if key not in cache:
        xp = eager.xp
        out: list[str] = []
        for name in names:
            mine = eager.live_factors[name]
            same = (
                n for n in out
                if all(bool(xp.all(a == b))
                       for a, b in zip(eager.live_factors[n], mine, strict=True))
            )  # fmt: skip
            out.append(next(same, name))
        cache[key] = out
    return cache[key]


def coefficient_arrays_transpose(
    eager: EagerElastic, g: tuple[Any, ...], vp: Any, vs: Any, rho: Any,
    multiply: Callable[[Any, Any], Any] | None = None,
) -> tuple[Any, Any, Any]:  # fmt: skip
    """Apply the transposed Jacobian of :func:`coefficient_arrays` to its cotangents ``g``.

    Returns the cotangents of ``vp``, ``vs``, ``rho``: the live masks, then
    :meth:`EagerElastic.coefficients_transpose` (hand-written, any Array-API
    library, no autodiff).  ``multiply(x, mask)``, if given, returns ``x *
    mask`` (a new array: ``coefficients_transpose`` may write into it).
    """
    nd = eager.geom.ndim
    names = list(kinds.fields(nd))
    axes = kinds.AXES[nd]
    it = iter(g)

    def live(name: str) -> Any:
        if multiply is not None:
            return multiply(next(it), eager.field_live[name][0])
        return next(it) * eager.field_live[name][0]

    cot: dict[str, dict[Any, Any]] = {"b": {}, "C": {}, "mu": {}}
    for a in axes:
        cot["b"][kinds.velocity(a)] = live(kinds.velocity(a))
    for i in range(nd):
        for j in range(nd):
            cot["C"][(i, j)] = live(names[nd + i])
    for i in range(nd):
        for j in range(i + 1, nd):
            s = kinds.stress(axes[i], axes[j])
            cot["mu"][s] = live(s)
    return eager.coefficients_transpose(vp, vs, rho, cot)


def model_gradients(
    engine: CompiledElastic, g: tuple[Any, ...], vp: Any, vs: Any, rho: Any
) -> dict[str, Any]:
    """Gradients with respect to ``vp``, ``vs`` and ``rho`` from those w.r.t. the coefficients.

    The chain rule of :func:`coefficient_arrays` (the eager path's averaging,
    the free-surface moduli, the repetition into the CPML and the halo) by
    its hand-written transpose (:func:`coefficient_arrays_transpose`), in
    float64 on the host: NumPy only, no autodiff library needed.
    """
    eager = engine.eager64
    # Times the float64 live masks, float32 cotangents become float64 (exactly
    # as if converted first): no float64 copy of each (14 MB apiece at 3D 120^3).
    as64 = [np.asarray(to_host(x)) for x in g]
    models = [np.asarray(to_host(m), dtype=np.float64) for m in (vp, vs, rho)]
    grads = coefficient_arrays_transpose(eager, tuple(as64), *models, multiply=_multiply_reused)
    return {name: np.asarray(x).astype(engine.dtype)
            for name, x in zip(("vp", "vs", "rho"), grads, strict=True)}  # fmt: skip


def _multiply_reused(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Return ``x * mask`` (NumPy's promotion) in a reused mapping (:func:`_hostmem.scratch`).

    The chain rule's 15 (3D) float64 products, 17 MB each at 3D 128^3: fresh,
    each faulted in its pages again on every call.
    """
    out = _hostmem.scratch(np.broadcast_shapes(x.shape, mask.shape), np.result_type(x, mask))
    return np.multiply(x, mask, out=out)
