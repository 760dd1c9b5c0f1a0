"""``sweep.elastic``: isotropic elastic propagation (velocity-stress, staggered grid)."""

from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ... import _memory, equations
from ..._api import eager_vjp
from ..._grid import Geometry
from ..._setup import Call, Speeds, prepare
from ..._staggered_run import compiled_vjp, run_compiled
from . import das, kinds
from .eager import EagerElastic

__all__ = ["ElasticResult", "elastic"]

# vs / vp above which the bulk modulus lambda + 2 mu / 3 would be negative.
MAX_VS_VP = math.sqrt(3.0) / 2.0


@dataclass
class ElasticResult:
    """Output of :func:`sweep.elastic`.

    Attributes
    ----------
    receivers : array, shape (n_shots, n_receivers, nt)
        Samples of each receiver's kind; sample ``t`` of a velocity or
        strain-rate kind is time ``(t + 1/2) dt``, of a stress kind (and
        ``"p"``, and strain) time ``t dt``.  A fibre's channels follow the
        receivers of ``receiver_locations``.
    wavefield : array, shape (n_shots, *model_shape)
        The vertical particle velocity ``vz`` at time ``(nt - 1/2) dt`` on the
        model's cells (each value at its staggered position ``i + 1/2``).
    impl : str
        The implementation that ran, ``"c"`` or ``"eager"``.
    state : dict
        Final padded fields: velocities ``vz``, ``vx`` (``vy``), stresses
        ``szz``, ``sxx``, ``sxz`` (...), and the C-PML memory variables
        ``m_<field>_<axis>``; a restart's ``initial_state``.
    memory_plan : MemoryPlan or None
        What a compiled gradient run kept for its adjoint pass; None otherwise.
    """

    receivers: Any
    wavefield: Any
    impl: str
    state: dict[str, Any] = field(repr=False)
    geometry: Geometry = field(repr=False)
    memory_plan: Any = None


def speeds(models: dict[str, np.ndarray], order: int) -> Speeds:
    """Wave speeds: P bounds the time step and scales the C-PML; the slowest is S (P in fluids)."""
    vp, vs = (np.asarray(models[k], dtype=np.float64) for k in ("vp", "vs"))
    slow = np.where(vs > 0, vs, vp)
    return Speeds(cfl=float(vp.max()), slowest=float(slow.min()), damping=float(vp.max()))


def _check_moduli(vp: Any, vs: Any) -> None:
    from ..._xp import is_concrete, to_host

    if not (is_concrete(vp) and is_concrete(vs)):
        return
    ratio = np.asarray(to_host(vs), dtype=np.float64) / np.asarray(to_host(vp), dtype=np.float64)
    if np.any(ratio >= MAX_VS_VP):
        i = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        raise ValueError(
            f"vs must be less than vp * sqrt(3) / 2 (= {MAX_VS_VP:.4f} vp) everywhere, so that "
            f"the bulk modulus lambda + 2 mu / 3 is positive; found vs / vp = "
            f"{float(ratio[i]):.4f} at index {tuple(int(x) for x in i)}. (Between vp / sqrt(2) "
            "and this limit lambda is negative, a negative Poisson ratio, which is allowed.)"
        )


def _prepare(
    vp: Any,
    vs: Any,
    rho: Any,
    *,
    source_kind: Any = "fz",
    receiver_kind: Any = "vz",
    gauge_length: Any = None,
    quantity: Any = "rate",
    fibre: Any = None,
    **settings: Any,
) -> Call:
    """Validate every argument of :func:`elastic` (before any compute)."""
    ndim = getattr(vp, "ndim", None)
    call = prepare(
        {"vp": vp, "vs": vs, "rho": rho},
        {"vp": "positive", "vs": "nonnegative", "rho": "positive"},
        speeds, equation="elastic", cfl_scheme="staggered", compiled=True,
        wavefields=_wavefields(ndim) if ndim in (2, 3) else (), **settings,
    )  # fmt: skip
    _check_moduli(vp, vs)
    g = call.geom
    rec_kinds = kinds.check_kinds(receiver_kind, g.n_rec, g.ndim, "receiver", "vz")
    if quantity not in QUANTITIES:
        close = difflib.get_close_matches(str(quantity), QUANTITIES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"quantity must be 'rate' (strain rate, 1/s) or 'strain' (its time integral) for "
            f"the strain receivers, got {quantity!r}{hint}"
        )
    if quantity == "strain" and fibre is None and not any(map(kinds.is_strain, rec_kinds)):
        raise ValueError(
            "quantity='strain' integrates strain-rate receivers (kinds 'e..' or a fibre), but "
            "there are none; drop quantity or add such receivers"
        )
    gauge = das.check_receivers(rec_kinds, g.rec_loc, g.model_shape, g.spacing, gauge_length, fibre)
    if fibre is not None:  # the channels are receiver columns after receiver_locations
        nodes = np.broadcast_to(fibre.nodes(g.spacing), (g.n_shots, fibre.n_channels, g.ndim))
        call.geom = g = replace(g, rec_loc=np.concatenate([g.rec_loc, nodes], axis=1))
        rec_kinds = (*rec_kinds, *(kinds.FIBRE,) * fibre.n_channels)
    if call.impl == "c":
        call.impl = equations.get("elastic").impl_for(
            settings.get("impl"),
            {"receiver_kind": rec_kinds, "gauge_length": gauge_length, "quantity": quantity,
             "fibre": fibre},
        ) or "c"  # fmt: skip
    call.extra = {
        "source_kind": kinds.check_kinds(source_kind, g.n_src, g.ndim, "source", "fz"),
        "receiver_kind": rec_kinds,
        "gauge_length": gauge,
        "quantity": quantity,
        "fibre": fibre,
    }
    return call


QUANTITIES = ("rate", "strain")


def _wavefields(ndim: int) -> tuple[str, ...]:
    """Return the state's fields (a restart's ``initial_state`` keys)."""
    return (*kinds.fields(ndim), *(k for k, _, _ in kinds.memory_variables(ndim)))


def _result(call: Call, receivers: Any, state: dict[str, Any]) -> ElasticResult:
    cells = (slice(None), *call.geom.model_slices())
    return ElasticResult(
        receivers=receivers,
        wavefield=state["vz"][cells],
        impl=call.impl,
        state=state,
        geometry=call.geom,
    )


def elastic(
    vp: Any,
    vs: Any,
    rho: Any,
    grid_spacing: float | Sequence[float],
    dt: float,
    *,
    source_amplitudes: Any = None,
    source_locations: Any = None,
    source_kind: str | Sequence[str] = "fz",
    receiver_locations: Any = None,
    receiver_kind: str | Sequence[str] = "vz",
    gauge_length: float | None = None,
    quantity: str = "rate",
    fibre: das.Fibre | None = None,
    accuracy: int = 4,
    pml_width: int | Sequence[int] = 20,
    free_surface: bool | Sequence[bool] = False,
    pml_freq: float | None = None,
    max_vel: float | None = None,
    nt: int | None = None,
    impl: str | None = None,
    n_threads: int | None = None,
    progress: bool = False,
    forward_callback: Any = None,
    backward_callback: Any = None,
    callback_frequency: int = 1,
    initial_state: dict[str, Any] | None = None,
    memory: Any = None,
    storage_mode: str = "auto",
    storage_compression: bool | str = False,
    model_gradient_sampling_interval: int = 1,
    storage_bytes_limit_device: int | None = None,
    storage_bytes_limit_host: int | None = None,
) -> ElasticResult:
    """Propagate waves through an isotropic elastic model (velocity-stress, staggered grid).

    Solves ``rho dv/dt = div(sigma) + f`` and ``dsigma/dt = lambda div(v) I +
    mu (grad v + grad v^T) - Mdot`` on Virieux's staggered grid: leapfrog of
    velocities (half steps) and stresses (whole steps), staggered first
    differences of order ``accuracy``, C-PML on every face that is not a free
    surface, and a free surface by the stress image (``docs/elastic.md`` has
    the grid, the averaging of the parameters and the conventions).  Fluid
    regions (``vs = 0``) need no special treatment.  Gradients with respect
    to ``vp``, ``vs``, ``rho`` and the source amplitudes come from
    :func:`sweep.vjp` (``impl="c"``: the kernels' hand-written adjoint, NumPy
    arrays suffice; ``impl="eager"``: torch or JAX autodiff of this discrete
    function) or the adapters ``PropTorch("elastic")`` and ``PropJax("elastic")``.

    Parameters
    ----------
    vp, vs, rho : array, shape (nz, nx) or (nz, ny, nx)
        P and S velocities (grid_spacing units per second) and density
        (kg/m^3 when lengths are metres), float32 or float64, on the grid
        nodes.  ``vp > 0``, ``vs >= 0``, ``rho > 0`` and ``vs < vp sqrt(3)/2``
        (a positive bulk modulus).
    grid_spacing, dt
        As in :func:`sweep.acoustic`; the time step must satisfy the CFL
        limit of the staggered scheme, ``vp dt sqrt(sum 1/dx^2) sum |c_k| < 1``.
    source_amplitudes : array, shape (n_shots, n_sources, nt)
        Sample ``t`` of a force is applied at time ``t dt``, of a ``"p"``
        source at ``(t + 1/2) dt``.
    source_locations, receiver_locations : int array, shape (n_shots, n, ndim)
        Nodes of the model grid (axis order z, (y,) x); staggered fields are
        interpolated onto them.
    source_kind : str or sequence of str
        One kind for every source, or one per source: ``"fz"``, ``"fx"``
        (``"fy"`` in 3D), a point force in N (N/m in 2D: a line force); ``"p"``,
        an explosion: the isotropic moment rate in N m/s (N/s in 2D), added as
        ``-dt Mdot / dV`` to every normal stress (in a fluid, ``Mdot`` is the
        bulk modulus times the injected volume rate).
    receiver_kind : str or sequence of str
        One kind for every receiver, or one per receiver: ``"vz"``, ``"vx"``
        (``"vy"``) in m/s; ``"p"``, the pressure ``-mean(s_aa)`` in Pa; the
        stresses ``"szz"``, ``"sxx"``, ``"sxz"`` (3D also ``"syy"``,
        ``"syz"``, ``"sxy"``) in Pa; the strain rates (DAS) ``"ezz"``,
        ``"exx"``, ``"exz"`` (3D also ``"eyy"``, ``"eyz"``, ``"exy"``), the
        symmetric velocity gradient ``e_ab = (d_a v_b + d_b v_a) / 2`` in 1/s
        (``docs/elastic.md``, section DAS).
    gauge_length : float or None
        Metres.  None: point strain rates.  Otherwise the normal strain rates
        ``"e<a><a>"`` and the fibre's channels are averaged over the gauge
        centred on each receiver along the fibre (for ``"exx"``, along x);
        at least one cell, at most the fibre's length.
    quantity : {"rate", "strain"}
        ``"strain"``: the strain receivers (kinds ``e..`` and the fibre's
        channels) record strain instead, ``dt`` times the cumulative sum of
        the strain rate (sample ``t`` is time ``t dt``, sample 0 is 0).
    fibre : sweep.das.Fibre or None
        A fibre whose channels are appended to the receivers (columns after
        those of ``receiver_locations``, the same for every shot); each
        reads its axial (or helical) strain rate.
    accuracy, pml_width, free_surface, pml_freq, max_vel, nt, progress,
    forward_callback, callback_frequency, initial_state
        As in :func:`sweep.acoustic` (``max_vel`` and ``pml_freq`` refer to
        ``vp``; a free face's outermost row of nodes is the surface).
    impl : {None, "auto", "c", "eager"}
        As in :func:`sweep.acoustic`: ``"c"`` (and the default) the compiled
        kernels (``cuda/elastic_stencil.h``, with a hand-written adjoint: C/OpenMP
        on NumPy arrays, CUDA on CuPy arrays), ``"eager"`` the Array-API code.
    n_threads, backward_callback, memory, storage_mode, storage_compression,
    model_gradient_sampling_interval, storage_bytes_limit_device,
    storage_bytes_limit_host
        As in :func:`sweep.acoustic` (compiled path).  A snapshot of the
        compiled gradient holds one value per field and cell (5 in 2D, 9 in
        3D); full storage, checkpointing and boundary saving.

    Returns
    -------
    ElasticResult
    """
    call = _prepare(**locals())  # every parameter of this function, by name
    if call.impl == "c":
        return _run_compiled(call, gradient=False)[0]
    engine = EagerElastic.build(call.geom, vp, **call.extra)
    receivers, state = engine.run(
        vp, vs, rho, call.amp, call.progress, call.callbacks, call.initial_state
    )
    return _result(call, receivers, state)


def _elastic_vjp(
    vp: Any, vs: Any, rho: Any, grid_spacing: Any, dt: Any, **kwargs: Any
) -> tuple[ElasticResult, Callable[[Any], dict[str, Any]]]:
    """Forward pass plus a pullback to ``vp``, ``vs``, ``rho`` and the source amplitudes."""
    args = inspect.signature(elastic).bind(vp, vs, rho, grid_spacing, dt, **kwargs)
    args.apply_defaults()
    call = _prepare(**args.arguments)
    if call.impl == "c":
        return _compiled_vjp(call)
    engine = EagerElastic.build(call.geom, vp, **call.extra)

    def run(models: tuple, amp: Any) -> tuple[Any, Any]:
        return engine.run(*models, amp, call.progress, call.callbacks, call.initial_state)

    receivers, state, pullback = eager_vjp(call.models, call.amp, run, "elastic", compiled=True)
    return _result(call, receivers, state), pullback


_NAMES = ("vp", "vs", "rho")


def _run_compiled(call: Call, *, gradient: bool) -> tuple[ElasticResult, Any]:
    """Run the compiled forward pass (:func:`sweep._staggered_run.run_compiled`)."""
    from .compiled import CompiledElastic

    def engine(xp: Any, dtype: Any) -> CompiledElastic:
        return CompiledElastic(call.geom, xp, dtype, call.n_threads or 0, **call.extra)

    return run_compiled(call, _NAMES, engine, _result, gradient=gradient)


def _compiled_vjp(call: Call) -> tuple[ElasticResult, Callable[[Any], dict[str, Any]]]:
    """Run the compiled forward pass; return it and the pullback of the hand-written adjoint."""
    from .compiled import model_gradients

    forward = _run_compiled(call, gradient=True)
    return compiled_vjp(call, forward, _NAMES, model_gradients)


def _estimate_memory(*args: Any, **kwargs: Any) -> _memory.MemoryEstimate:
    """:func:`sweep.estimate_memory` of a :func:`sweep.elastic` call."""
    from ..._api import memory_estimate_of
    from .compiled import CompiledElastic

    def stepper(geom: Geometry, xp: Any, dtype: Any) -> CompiledElastic:
        bound = inspect.signature(elastic).bind(*args, **kwargs)
        bound.apply_defaults()
        call = _prepare(**bound.arguments)
        return CompiledElastic(geom, xp, dtype, **call.extra)

    return memory_estimate_of(elastic, _prepare, stepper, args, kwargs, eager_states=6)


elastic.__sweep_vjp__ = _elastic_vjp  # type: ignore[attr-defined]
elastic.__sweep_memory__ = _estimate_memory  # type: ignore[attr-defined]
