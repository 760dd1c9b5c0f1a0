"""Maxwell on the compiled kernels: the stepper, its point terms and the model gradients.

The kernels (``cuda/maxwell_stencil.h``: C/OpenMP through ``sweep._C.run``,
CUDA through ``cuda/maxwell.cu``)
step E and H in place, two phases per step (H then E), with the order a
run-time value, on the staggered systems' record of elastic
(``sweep_elastic_fields`` of :mod:`sweep._fields_table`).  Their
coefficients are the eager reference's (:meth:`EagerMaxwell.coefficients`:
``ch = dt / (mu0 mu)``, and the semi-implicit ``ca``, ``cb``) times the
live mask of the field each updates, so the two paths run the same
discrete operator.  Components are
numbered by the kernel axis they point along (:func:`kernel_axis`); sources
and receivers reach the kernels as single-cell terms
(:func:`sweep._points.kernel_terms`).

A snapshot holds, per cell, the curl at each H component, then each E
component before its update and the curl there: the factors of every
coefficient's gradient.  The chain rule from the coefficients to
``epsilon``, ``sigma`` and ``mu`` (:func:`model_gradients`) is written out
with NumPy (no autodiff library needed).  Full storage and checkpointing;
with ``sigma > 0`` the step is not reversible (no boundary saving).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ... import _blocking, _hostmem
from ..._compiled import CompiledStepper, _Fields
from ..._grid import Geometry
from ..._impl import compiled_function
from ..._stepper import ForwardState
from ..._xp import take_transpose, to_host
from ..elastic.compiled import CompiledElastic
from . import components as comp
from .eager import EPS0, MU0, EagerMaxwell


def kernel_axis(component: str, ndim: int) -> int:
    """Kernel axis a component points along: z, y, x = 0, 1, 2 in 3D; y, z, x in TM2D.

    In TM2D the model axes z, x are kernel axes 1, 2 and the invariant y is
    the unused axis 0 (``cuda/maxwell_stencil.h``).
    """
    axes = comp.AXES[ndim]
    return 3 - ndim + axes.index(component) if component in axes else 0


def field_slot(name: str, ndim: int) -> int:
    """Slot of field ``name`` (``"hx"``, ``"ey"``, ...) in the kernels' record.

    H_c at c, E_c at 3 + c (c: :func:`kernel_axis`).
    """
    return (3 if name[0] == "e" else 0) + kernel_axis(name[1], ndim)


def memory_slots(ndim: int) -> list[tuple[str, int, int]]:
    """(state key, field slot, kernel axis) of every C-PML memory variable."""
    return [(key, field_slot(f, ndim), 3 - ndim + d) for key, f, d in
            comp.memory_variables(ndim)]  # fmt: skip


def coefficient_slots(ndim: int) -> dict[tuple[str, str], int]:
    """Slot of every coefficient, keyed (``"ch"``, h) / (``"ca"``, e) / (``"cb"``, e)."""
    out = {("ch", h): kernel_axis(h[1], ndim) for h in comp.magnetic(ndim)}
    for e in comp.electric(ndim):
        out["ca", e] = 3 + kernel_axis(e[1], ndim)
        out["cb", e] = 6 + kernel_axis(e[1], ndim)
    return out


class MaxwellState(ForwardState):
    """E, H and the C-PML memory variables of every shot (or, in the same slots, the adjoint's)."""

    def __init__(self, engine: CompiledMaxwell) -> None:
        nd = engine.geom.ndim
        self.ndim = nd
        self.xp = engine.xp
        names = list(comp.fields(nd))
        self.fields = {name: engine.field(k) for k, name in enumerate(names)}
        self.psi = {
            (k, ax): engine.field(len(names) + i) for i, (_, k, ax) in enumerate(memory_slots(nd))
        }
        if self.xp is np:
            # Fresh host mappings are first touched by writes here (the
            # kernels read each page first: _hostmem.claim_fresh), the memory
            # variables on their axis's slabs only (as ElasticState).
            _hostmem.write_fresh(
                self.fields.values(),
                ((x, engine.cpml_strips[ax]) for (_, ax), x in self.psi.items()),
            )

    def parts(self) -> list[Any]:
        """Return views of every array of the state (a checkpoint holds them all)."""
        return [*self.fields.values(), *self.psi.values()]

    def load_from(self, given: dict[str, Any]) -> None:
        """Set this state from a result's ``state`` (a restart)."""
        from ..._xp import kernel_array

        for name, x in self.fields.items():
            x[...] = kernel_array(given[name], x.dtype, name=name, xp=self.xp)
        for key, k, ax in memory_slots(self.ndim):
            x = self.psi[(k, ax)]
            x[...] = kernel_array(given[key], x.dtype, name=key, xp=self.xp)

    def point(self, f: _Fields) -> None:
        """Point the kernels' field and memory-variable slots at this state."""
        for name, x in self.fields.items():
            f.set("field", x, field_slot(name, self.ndim))
        for (k, ax), x in self.psi.items():
            f.set("psi", x, 3 * k + ax)


class MaxwellAdjoint(MaxwellState):
    """Adjoint fields and memory variables, and the gradient accumulators asked for."""

    def __init__(self, engine: CompiledMaxwell, *, model: bool, source: bool) -> None:
        super().__init__(engine)
        slots = sorted(coefficient_slots(self.ndim).values())
        self.grad = {k: engine.field(40 + i) for i, k in enumerate(slots)} if model else None
        g = engine.geom
        self.grad_src = (
            engine.zeros(g.n_shots, engine.n_src_terms, g.nt) if source and g.n_src else None
        )


class CompiledMaxwell(CompiledElastic):
    """Runs the Maxwell kernels on host (NumPy) or device (CuPy) arrays.

    ``coeffs`` is the dict (slot: padded array) of the kernels' coefficients
    (:meth:`kernel_coefficients`).  What it shares with elastic (buffer
    layouts, receivers, sizes) comes from :class:`CompiledElastic`.
    """

    name = "maxwell"
    reversible = False

    def __init__(self, geom: Geometry, xp: Any, dtype: Any, n_threads: int = 0, *,
                 source_component: tuple[str, ...],
                 receiver_component: tuple[str, ...]) -> None:  # fmt: skip
        CompiledStepper.__init__(self, geom, xp, dtype, n_threads)
        nd = geom.ndim
        like = np.zeros(geom.model_shape, dtype=self.dtype)
        self.components = {
            "source_component": source_component,
            "receiver_component": receiver_component,
        }
        # The eager engine's models, coefficients and masks (not its step).
        self.eager = EagerMaxwell.build(geom, like, with_step=False, **self.components)
        self.n_fields = len(comp.fields(nd))
        self.n_coefficients = len(coefficient_slots(nd))
        # The kernels' field numbering (H_c at c, E_c at 3 + c; unused slots unnamed).
        order = [""] * 6
        for name in comp.fields(nd):
            order[field_slot(name, nd)] = name
        dv = math.prod(geom.spacing)
        table = {c: ((c, -1.0),) for c in comp.electric(nd)}  # the current enters as -J
        rec_table = {c: ((c, 1.0),) for c in comp.electric(nd)}
        from ..._points import kernel_terms, node_terms

        def terms(loc: np.ndarray, names: tuple[str, ...], tab: dict, scale: float) -> Any:
            groups = node_terms(geom, loc, names, tab, self.eager.stag, self.eager.valid)
            return kernel_terms(geom, groups, order, loc.shape[1], lambda _: scale)

        # A source's weight carries 1 / dV; the kernels multiply by cb of the cell.
        self.sources = terms(geom.src_loc, source_component, table, 1.0 / dv)
        self.receivers = terms(geom.rec_loc, receiver_component, rec_table, 1.0)
        self.src_idx, self.rec_idx = self.sources.idx, self.receivers.idx
        self.n_src_terms = self.sources.n_terms if geom.n_src else 0
        self.n_rec_terms = self.receivers.n_terms if geom.n_rec else 0

    def record_columns(self, terms: np.ndarray) -> np.ndarray:
        """Receiver data ``(n_shots, n_rec, nt)`` from the recorded terms."""
        return self.receivers.to_columns(terms)

    def record_terms_transpose(self, cot: np.ndarray) -> np.ndarray:
        """Return the transpose of :meth:`record_columns` applied to ``cot`` (per term)."""
        return self.receivers.to_terms(cot)

    # -- facts the memory strategies use --------------------------------------
    @property
    def snapshot_values(self) -> int:  # type: ignore[override]
        """Values per cell of a snapshot: the curl per H component, E and its curl per E one."""
        nd = self.geom.ndim
        return len(comp.magnetic(nd)) + 2 * len(comp.electric(nd))

    @property
    def state_bytes(self) -> int:
        """Bytes of one checkpoint: every field and memory variable."""
        return (self.n_fields + len(memory_slots(self.geom.ndim))) * self.field_bytes

    # -- buffers and states ------------------------------------------------------
    def new_state(self) -> MaxwellState:
        """Return zeroed fields and memory variables (step 0)."""
        return MaxwellState(self)

    def new_adjoint(self, *, model: bool, source: bool) -> MaxwellAdjoint:  # type: ignore[override]
        """Return zeroed adjoint fields and the gradient accumulators asked for."""
        return MaxwellAdjoint(self, model=model, source=source)

    def kernel_coefficients(self, epsilon: Any, sigma: Any, mu: Any) -> dict[int, Any]:  # type: ignore[override]
        """Return the kernels' coefficients (slot: padded array on this engine's device).

        Computed on the host from NumPy models.
        """
        eager = self.eager
        if self.xp is np:
            models = [np.asarray(m) for m in (epsilon, sigma, mu)]
            fields = host_coefficients(self, models)
            if fields is not None:  # in C, on the kernels' threads
                return fields
            # On slabs of planes, straight into the fields.

            def compute(padded: list[np.ndarray], planes: slice) -> dict[int, tuple]:
                c = dict(zip(("ca", "cb", "ch"), eager._coefficients_numpy(*padded), strict=True))
                return _slot_factors(eager, c)

            return self.planewise_fields(compute, models, 20, eager.pad_planes)
        factors = coefficient_factors(eager, epsilon, sigma, mu)
        return {k: self.masked_field(c, m, 20 + k) for k, (c, m) in factors.items()}

    def state_dict(  # type: ignore[override]
        self, state: MaxwellState, like: Any, memory: bool = True, copy: bool = True
    ) -> dict[str, Any]:
        """Return the padded fields (and memory variables) of ``state`` in ``like``'s library.

        ``copy=False``: the state's own arrays (see the elastic engine's).
        """
        from ..._xp import from_kernel_array

        xp = self.xp
        own = xp.array if copy else (lambda x: x)
        out = {name: from_kernel_array(own(x), like) for name, x in state.fields.items()}
        if memory:
            for key, k, ax in memory_slots(self.geom.ndim):
                out[key] = from_kernel_array(own(state.psi[(k, ax)]), like)
        return out

    def finish_gradient(self, adj: MaxwellAdjoint, coeffs: Any) -> tuple[Any, ...]:  # type: ignore[override]
        """Return the gradients with respect to the kernels' coefficients, summed over shots.

        In slot order (:func:`coefficient_slots`).
        """
        return tuple(self.xp.ascontiguousarray(adj.grad[k].sum(axis=0)) for k in sorted(adj.grad))

    # -- the hooks of CompiledStepper -----------------------------------------------
    def _params(self, store_every: int, band: bool) -> np.ndarray:
        p = super()._params(store_every, band)
        # The forward's temporal blocking (3D passes, TM2D chunks) picks its
        # steps in C; SWEEP_TIME_BLOCKING / sweep.config(time_blocking=...)
        # fixes them (its first number; 1: off), in 2D also the rows per group
        # (its second; 1: the default, 2 h + 1).
        chosen = _blocking.fixed()
        if chosen is not None and self.xp is np:
            p["block_steps"] = chosen[0]
            p["block_group"] = chosen[1] if self.geom.ndim == 2 else 0
        return p

    @functools.cached_property
    def _elastic_constants(self) -> dict[str, Any]:
        # No per-cell velocity weights: Maxwell's free faces are images.
        return self._staggered_constants()

    def _set_coefficients(self, f: _Fields, coeffs: dict[int, Any], *, adjoint: bool) -> None:
        c = self._constants
        for k, x in coeffs.items():
            f.set("coef", x, k)
        for ax, (a, b) in zip(self.axes, c["pml_half"], strict=True):
            f.set("pml_ah", a, ax)
            f.set("pml_bh", b, ax)
        f.set("ws", c["ws"])

    def _adjoint_state(self, f: _Fields, adj: MaxwellAdjoint) -> None:  # type: ignore[override]
        adj.point(f)
        if adj.grad is not None:
            for k, x in adj.grad.items():
                f.set("grad", x, k)

    def _watched(self, state: Any) -> Any:
        return state.fields["ey"]


def _compiled_coefficients() -> Any:
    """``sweep._C.maxwell_coefficients``, or None without the compiled kernels (or an old build)."""
    return compiled_function("maxwell_coefficients")


def host_coefficients(engine: CompiledMaxwell, models: list[np.ndarray]) -> dict[int, Any] | None:
    """Return the host coefficient fields computed by ``sweep._C.maxwell_coefficients``.

    Those of :meth:`CompiledMaxwell.kernel_coefficients`' NumPy path bit for
    bit (:meth:`EagerMaxwell._coefficients_numpy` times the live masks, as
    :meth:`~sweep._compiled.CompiledStepper.planewise_fields` applies them):
    the same operations in the same order and precision, a row at a time on
    the kernels' OpenMP threads (``sweep_cy/maxwell_coef.h``).  None where
    the kernels lack it or the models are not of the engine's real dtype
    and the model shape (the NumPy path then takes them).
    """
    compute = _compiled_coefficients()
    eager, g = engine.eager, engine.geom
    dtype = np.dtype(engine.dtype)
    dt = g.dt
    shape = tuple(g.padded_shape)
    if (
        compute is None
        or dtype not in (np.float32, np.float64)
        or type(dt) is not float  # a NumPy scalar would change NumPy's precision
        or any(m.dtype != dtype or m.shape != tuple(g.model_shape) for m in models)
    ):
        return None
    nd = g.ndim
    pad = 3 - nd  # 3D-numbered axes: TM2D's are 1, 2
    models = [np.ascontiguousarray(m) for m in models]
    slots = coefficient_slots(nd)
    fields: dict[int, np.ndarray] = {}
    outs, keep = [], []
    strides = None
    for name, stag in eager.stag.items():
        kinds = ("ca", "cb") if name[0] == "e" else ("ch",)
        own = []
        for kind in kinds:
            k = slots[kind, name]
            fields[k] = out = engine._pitched(shape, 20 + k, fill=False)
            st = tuple(x // out.itemsize for x in out.strides)
            if out.strides[-1] != out.itemsize or (strides is not None and st != strides):
                return None
            strides = st
            own.append(out.ctypes.data)
        live = eager.live_factors[name]
        factors = [np.ascontiguousarray(f.reshape(-1), dtype=dtype) for f in live]
        keep += factors
        addr = [f.ctypes.data for f in factors]
        outs.append((
            sum(1 << (d + pad) for d in stag), int(name[0] == "e"), own[0],
            own[1] if len(own) > 1 else 0, addr[0], addr[1] if nd == 3 else 0, addr[-1],
        ))  # fmt: skip
    assert strides is not None
    s = (0, *strides) if nd == 2 else strides
    lo = [0] * pad + [g.lo(d) for d in range(nd)]
    k = [1] * pad + list(g.model_shape)
    n = [1] * pad + list(shape)
    eps, sig, mu = models
    compute(int(dtype == np.float64), eps.ctypes.data, sig.ctypes.data, mu.ctypes.data, lo, k, n,
            s[0], s[1], outs, 0 if nd == 3 else 1, dt, EPS0, MU0, engine.threads)  # fmt: skip
    return fields


def coefficient_factors(
    eager: EagerMaxwell, epsilon: Any, sigma: Any, mu: Any
) -> dict[int, tuple[Any, Any]]:
    """Return the kernels' coefficients as factors: the eager path's and its field's live mask.

    Keyed by slot (:func:`coefficient_slots`); padded, without a shot axis;
    the live mask as its 0/1 factors per axis
    (:attr:`~sweep._staggered.EagerStaggered.live_factors`), and a kernel
    coefficient the product of them all.
    """
    return _slot_factors(eager, eager.coefficients(epsilon, sigma, mu, sources=False))


def _slot_factors(eager: EagerMaxwell, c: dict[str, Any]) -> dict[int, tuple[Any, Any]]:
    """:func:`coefficient_factors` of the coefficients ``c`` (:meth:`EagerMaxwell.coefficients`)."""
    return {k: (c[kind][name], eager.live_factors[name])
            for (kind, name), k in coefficient_slots(eager.geom.ndim).items()}  # fmt: skip


def model_gradients(
    engine: CompiledMaxwell, g_coef: tuple[Any, ...], epsilon: Any, sigma: Any, mu: Any
) -> dict[str, Any]:
    """Gradients with respect to ``epsilon``, ``sigma`` and ``mu`` from those of the coefficients.

    The chain rule of :func:`coefficient_factors` written out (the live masks,
    ``ch = dt / (mu0 mu_bar)``, the semi-implicit ``ca``, ``cb`` of
    ``eps_bar`` and ``sigma_bar``, the means over the nodes around each
    staggered position, the repetition into the C-PML and the halo), in
    float64 with NumPy.
    """
    eager = engine.eager
    g, nd = eager.geom, eager.geom.ndim
    dt = g.dt
    maps = [np.asarray(eager.maps[d]) for d in range(nd)]
    nxt = [np.asarray(eager.next[d]) for d in range(nd)]
    models = [eager.pad_model(np.asarray(m, dtype=np.float64), maps) for m in (epsilon, sigma, mu)]
    pe, ps, pm = models
    acc = [np.zeros_like(pe) for _ in range(3)]

    def mean(m: Any, axes: frozenset[int]) -> Any:
        for d in sorted(axes):
            m = 0.5 * (m + np.take(m, nxt[d], axis=d))
        return m

    def mean_adjoint(x: Any, axes: frozenset[int]) -> Any:
        for d in sorted(axes, reverse=True):
            x = 0.5 * (x + take_transpose(np, x, nxt[d], x.shape[d], d))
        return x

    slots = coefficient_slots(nd)
    grads = dict(zip(sorted(slots.values()), (to_host(x) for x in g_coef), strict=True))
    for name, stag in eager.stag.items():
        live = np.asarray(eager.field_live[name][0], dtype=np.float64)
        if name[0] == "h":
            gch = np.asarray(grads[slots["ch", name]], dtype=np.float64) * live
            mbar = mean(pm, stag)
            acc[2] += mean_adjoint(gch * (-dt / (MU0 * mbar * mbar)), stag)
            continue
        gca = np.asarray(grads[slots["ca", name]], dtype=np.float64) * live
        gcb = np.asarray(grads[slots["cb", name]], dtype=np.float64) * live
        e = EPS0 * mean(pe, stag)
        s = mean(ps, stag) * dt / (2 * e)
        cb = dt / (e * (1 + s))
        gs = gca * (-2.0 / (1 + s) ** 2) - gcb * cb / (1 + s)
        ge = -(gcb * cb + gs * s) / e
        acc[0] += mean_adjoint(ge * EPS0, stag)
        acc[1] += mean_adjoint(gs * dt / (2 * e), stag)
    out = {}
    for key, x, m in zip(("epsilon", "sigma", "mu"), acc, (epsilon, sigma, mu), strict=True):
        for d in range(nd):
            x = take_transpose(np, x, maps[d], np.asarray(m).shape[d], d)
        out[key] = x.astype(engine.dtype)
    return out
