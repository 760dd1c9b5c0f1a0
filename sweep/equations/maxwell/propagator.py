"""``sweep.tm2d`` and ``sweep.maxwell3d``: Maxwell's equations for ground-penetrating radar."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..._api import eager_vjp
from ..._grid import Geometry
from ..._setup import Call, Speeds, prepare
from ..._staggered_run import compiled_vjp, graph_ignored, run_compiled
from ..._validate import warn_undersampled
from . import components as comp
from .eager import EagerMaxwell, speeds_of

__all__ = ["MaxwellResult", "maxwell3d", "tm2d"]

PRECISIONS = ("default",)


@dataclass
class MaxwellResult:
    """Output of :func:`sweep.tm2d` and :func:`sweep.maxwell3d`.

    Attributes
    ----------
    receivers : array, shape (n_shots, n_receivers, nt)
        The electric field component of each receiver (V/m); sample ``t`` is
        time ``t dt``.
    wavefield : array, shape (n_shots, *model_shape)
        ``E_y`` at time ``nt dt`` on the model's cells (each value at its
        staggered position; TM2D: on the nodes).
    impl : str
        The implementation that ran, ``"c"`` or ``"eager"``.
    state : dict
        Final padded fields ``ey``, ``hx``, ``hz`` (3D: also ``ex``, ``ez``,
        ``hy``) and the C-PML memory variables ``m_<field>_<axis>``; a
        restart's ``initial_state``.
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
    """Wave speeds ``c0 / sqrt(epsilon mu)``: the fastest bounds dt and scales the C-PML."""
    fast, slow = speeds_of(models["epsilon"], models["mu"])
    return Speeds(cfl=fast, slowest=slow, damping=fast)


# The compiled gradient's memory keywords, at their defaults.
_MEMORY_DEFAULTS = {
    "memory": None,
    "storage_mode": "auto",
    "storage_compression": False,
    "model_gradient_sampling_interval": 1,
    "storage_bytes_limit_device": None,
    "storage_bytes_limit_host": None,
}


def _wavefields(ndim: int) -> tuple[str, ...]:
    """Return the state's fields (a restart's ``initial_state`` keys)."""
    return (*comp.fields(ndim), *(k for k, _, _ in comp.memory_variables(ndim)))


def _prepare(
    epsilon: Any,
    sigma: Any,
    mu: Any,
    *,
    equation: str,
    source_component: Any = "ey",
    receiver_component: Any = "ey",
    compute_precision: str = "default",
    python_backend: bool = False,
    experimental_cuda_graph: bool = False,
    **settings: Any,
) -> Call:
    """Validate every argument of :func:`tm2d` / :func:`maxwell3d` (before any compute)."""
    ndim = {"tm2d": 2, "maxwell3d": 3}[equation]
    if getattr(epsilon, "ndim", ndim) != ndim:
        other = "sweep.maxwell3d" if equation == "tm2d" else "sweep.tm2d"
        raise ValueError(
            f"sweep.{equation} takes {ndim}D models, got epsilon with shape "
            f"{tuple(epsilon.shape)}; use {other} for {5 - ndim}D"
        )
    if compute_precision not in PRECISIONS:
        raise ValueError(
            f"compute_precision must be 'default' (compute in the arrays' dtype), got "
            f"{compute_precision!r}; sweep has no reduced-precision path for sweep.{equation}: "
            "cast the models to float32 for single precision"
        )
    if not isinstance(python_backend, bool):
        raise TypeError(f"python_backend must be True or False, got {python_backend!r}")
    if python_backend:
        if settings.get("impl") == "c":
            raise ValueError("python_backend=True is impl='eager'; it contradicts impl='c'")
        settings["impl"] = "eager"
    call = prepare(
        {"epsilon": epsilon, "sigma": sigma, "mu": mu},
        {"epsilon": "at_least_one", "sigma": "nonnegative", "mu": "positive"},
        speeds, equation=equation, cfl_scheme="staggered", compiled=True,
        wavefields=_wavefields(ndim), **settings,
    )  # fmt: skip
    if call.amp is not None:
        warn_undersampled(call.amp, call.geom.dt)
    g = call.geom
    call.extra = {
        "source_component": comp.check_components(source_component, g.n_src, ndim, "source"),
        "receiver_component": comp.check_components(receiver_component, g.n_rec, ndim, "receiver"),
    }
    if not isinstance(experimental_cuda_graph, bool):
        raise TypeError(
            f"experimental_cuda_graph must be True or False, got {experimental_cuda_graph!r}"
        )
    if experimental_cuda_graph and call.impl != "c":
        graph_ignored(f"with impl={call.impl!r} (python_backend=True is the eager path)")
    call.cuda_graph = experimental_cuda_graph and call.impl == "c"
    return call


def _result(call: Call, receivers: Any, state: dict[str, Any]) -> MaxwellResult:
    cells = (slice(None), *call.geom.model_slices())
    return MaxwellResult(
        receivers=receivers,
        wavefield=state["ey"][cells],
        impl=call.impl,
        state=state,
        geometry=call.geom,
    )


_NAMES = ("epsilon", "sigma", "mu")


def _run_compiled(call: Call, *, gradient: bool) -> tuple[MaxwellResult, Any]:
    """Run the compiled forward pass (:func:`sweep._staggered_run.run_compiled`)."""
    from .compiled import CompiledMaxwell

    def engine(xp: Any, dtype: Any) -> CompiledMaxwell:
        return CompiledMaxwell(call.geom, xp, dtype, call.n_threads or 0, **call.extra)

    return run_compiled(call, _NAMES, engine, _result, gradient=gradient)


def _run(equation: str, arguments: dict[str, Any]) -> MaxwellResult:
    call = _prepare(**arguments, equation=equation)
    if call.impl == "c":
        return _run_compiled(call, gradient=False)[0]
    engine = EagerMaxwell.build(call.geom, arguments["epsilon"], **call.extra)
    receivers, state = engine.run(
        *call.models.values(), call.amp, call.progress, call.callbacks, call.initial_state
    )
    return _result(call, receivers, state)


def _vjp_of(fn: Callable[..., MaxwellResult]) -> Callable[..., Any]:
    """``fn.__sweep_vjp__``: forward pass plus a pullback to the models and the sources."""

    def vjp(
        epsilon: Any, sigma: Any, mu: Any, grid_spacing: Any, dt: Any, **kwargs: Any
    ) -> tuple[MaxwellResult, Callable[[Any], dict[str, Any]]]:
        args = inspect.signature(fn).bind(epsilon, sigma, mu, grid_spacing, dt, **kwargs)
        args.apply_defaults()
        call = _prepare(**args.arguments, equation=fn.__name__)
        if call.impl == "c":
            from .compiled import model_gradients

            forward = _run_compiled(call, gradient=True)
            return compiled_vjp(call, forward, _NAMES, model_gradients)
        engine = EagerMaxwell.build(call.geom, epsilon, **call.extra)

        def run(models: tuple, amp: Any) -> tuple[Any, Any]:
            return engine.run(*models, amp, call.progress, call.callbacks, call.initial_state)

        receivers, state, pullback = eager_vjp(
            call.models, call.amp, run, fn.__name__, compiled=True
        )
        return _result(call, receivers, state), pullback

    return vjp


def tm2d(
    epsilon: Any,
    sigma: Any,
    mu: Any,
    grid_spacing: float | Sequence[float],
    dt: float,
    *,
    source_amplitudes: Any = None,
    source_locations: Any = None,
    receiver_locations: Any = None,
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
    compute_precision: str = "default",
) -> MaxwellResult:
    """Propagate a TM-mode radar wave in 2D: ``E_y``, ``H_x``, ``H_z`` on the Yee grid.

    Solves ``mu0 mu dH/dt = -curl E`` and ``eps0 epsilon dE/dt + sigma E =
    curl H - J`` with nothing varying along y (axes z, x in array order): a
    leapfrog of H (half steps) and E (whole steps), staggered differences of
    order ``accuracy``, the loss term semi-implicit, C-PML on every face that
    is not a perfect conductor (``docs/maxwell.md`` has the grid, the
    conventions and the units).  Gradients with respect to ``epsilon``,
    ``sigma``, ``mu`` and the source amplitudes come from :func:`sweep.vjp`
    (the compiled kernels' exact adjoint, NumPy arrays included; torch or
    JAX autodiff of this discrete function with ``impl="eager"``) or the
    adapters ``PropTorch("tm2d")`` and ``PropJax("tm2d")``.

    Parameters
    ----------
    epsilon, sigma, mu : array, shape (nz, nx)
        Relative permittivity (>= 1), conductivity (S/m, >= 0) and relative
        permeability (> 0) on the grid nodes, float32 or float64.
    grid_spacing : float or sequence of float
        Cell size in metres (one value or one per axis).
    dt : float
        Time step in seconds; it must satisfy the CFL limit of the staggered
        scheme, ``c dt sqrt(sum 1/dx^2) sum |c_k| < 1`` with ``c = c0 /
        sqrt(min epsilon min mu)``.
    source_amplitudes : array, shape (n_shots, n_sources, nt)
        The current (A) of a line source along y through its cell; sample
        ``t`` is the current at time ``(t + 1/2) dt``.
    source_locations, receiver_locations : int array, shape (n_shots, n, 2)
        Nodes of the model grid (z, x).  Receivers record ``E_y`` (V/m) at
        time ``t dt``.
    accuracy : int
        Order of the staggered differences: 2, 4, 6 or 8.
    pml_width, pml_freq, max_vel, nt, progress, forward_callback,
    backward_callback, callback_frequency, initial_state
        As in :func:`sweep.acoustic` (``max_vel`` in m/s, default the fastest
        ``c0 / sqrt(epsilon mu)``); a callback sees the padded ``ey``, ``hx``
        and ``hz`` (snapshots for movies of the radargram).
    free_surface : bool or sequence of bool
        Faces that are perfect electric conductors (tangential E zero on the
        outermost row of nodes) instead of C-PML; the default, every face
        radiating through its C-PML, models an open top with an air layer in
        the model.
    impl : {None, "auto", "c", "eager"}
        ``"c"`` (and the default) the compiled kernels: C/OpenMP on host
        (NumPy) arrays, CUDA on CuPy arrays; ``"eager"`` the Array-API code
        (any array library, autodiff).
    n_threads : int, optional
        OpenMP threads of the compiled kernels (default: sweep.config's).
    memory, storage_mode, storage_compression, model_gradient_sampling_interval,
    storage_bytes_limit_device, storage_bytes_limit_host
        The compiled gradient's memory keywords: full storage or
        checkpointing (boundary saving is refused: a lossy update does not
        run backwards in time).  A snapshot holds, per cell, the curl at each
        H component and each E component with the curl there (4 values in
        TM2D, 9 in 3D).
    compute_precision : str
        ``"default"``: compute in the arrays' dtype (the only choice).

    Returns
    -------
    MaxwellResult
    """
    return _run("tm2d", dict(locals()))


def maxwell3d(
    epsilon: Any,
    sigma: Any,
    mu: Any,
    grid_spacing: float | Sequence[float],
    dt: float,
    *,
    source_amplitudes: Any = None,
    source_locations: Any = None,
    source_component: str | Sequence[str] = "ey",
    receiver_locations: Any = None,
    receiver_component: str | Sequence[str] = "ey",
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
    compute_precision: str = "default",
    python_backend: bool = False,
    experimental_cuda_graph: bool = False,
) -> MaxwellResult:
    """Propagate radar waves in 3D: E and H on the Yee grid.

    The 3D form of :func:`tm2d` (axes z, y, x in array order): ``E_c`` at
    the middle of the cell edges along c, ``H_c`` at the middle of the faces
    normal to c (``docs/maxwell.md``).

    Parameters
    ----------
    epsilon, sigma, mu : array, shape (nz, ny, nx)
        Relative permittivity (>= 1), conductivity (S/m, >= 0) and relative
        permeability (> 0) on the grid nodes.
    grid_spacing, dt, accuracy, pml_width, free_surface, pml_freq, max_vel, nt,
    impl, n_threads, progress, forward_callback, backward_callback, callback_frequency,
    initial_state, memory, storage_mode, storage_compression,
    model_gradient_sampling_interval, storage_bytes_limit_device,
    storage_bytes_limit_host, compute_precision
        As in :func:`tm2d`.
    source_amplitudes : array, shape (n_shots, n_sources, nt)
        The current moment (A m) of a point dipole at a node; sample ``t`` is
        time ``(t + 1/2) dt``.  A component staggered along its axis is
        spread onto the two edges around the node (half each).
    source_locations, receiver_locations : int array, shape (n_shots, n, 3)
        Nodes of the model grid (z, y, x).
    source_component, receiver_component : str or sequence of str
        ``"ex"``, ``"ey"`` or ``"ez"``: one for all sources / receivers or
        one per source / receiver.  Receivers record that component of E
        (V/m, the mean of the two edges around the node) at time ``t dt``.
    python_backend : bool
        True is ``impl="eager"``.
    experimental_cuda_graph : bool
        Replay the forward loop as CUDA graphs, one per chunk between
        callbacks (the whole forward without a ``forward_callback``),
        captured on first use and reused by later calls of the same shapes,
        order, dtype and options on the device.  CuPy arrays and the compiled
        kernels only: ignored with a warning on the CPU, for gradients and
        with ``python_backend=True``.  Keeps a copy of the run's arrays on the
        device (``sweep.release_cached_memory()`` frees it).

    Returns
    -------
    MaxwellResult
    """
    return _run("maxwell3d", dict(locals()))


def _memory_of(fn: Callable[..., MaxwellResult]) -> Callable[..., Any]:
    """``fn.__sweep_memory__``: :func:`sweep.estimate_memory` of a call of ``fn``."""
    from ..._api import memory_estimate_of

    equation = fn.__name__

    def prepare_call(**arguments: Any) -> Call:
        return _prepare(**arguments, equation=equation)

    def estimate(*args: Any, **kwargs: Any) -> Any:
        from .compiled import CompiledMaxwell

        def stepper(geom: Geometry, xp: Any, dtype: Any) -> CompiledMaxwell:
            bound = inspect.signature(fn).bind(*args, **kwargs)
            bound.apply_defaults()
            call = prepare_call(**bound.arguments)
            return CompiledMaxwell(geom, xp, dtype, **call.extra)

        # The eager step couples E, H and the memory variables of one phase.
        states = 3 if equation == "tm2d" else 6
        return memory_estimate_of(fn, prepare_call, stepper, args, kwargs, eager_states=states)

    return estimate


tm2d.__sweep_vjp__ = _vjp_of(tm2d)  # type: ignore[attr-defined]
maxwell3d.__sweep_vjp__ = _vjp_of(maxwell3d)  # type: ignore[attr-defined]
tm2d.__sweep_memory__ = _memory_of(tm2d)  # type: ignore[attr-defined]
maxwell3d.__sweep_memory__ = _memory_of(maxwell3d)  # type: ignore[attr-defined]


def prepare_tm2d(epsilon: Any, sigma: Any, mu: Any, **settings: Any) -> Call:
    """Validate :func:`tm2d`'s arguments (the registry's eager plan uses it)."""
    return _prepare(epsilon, sigma, mu, equation="tm2d", **settings)


def prepare_maxwell3d(epsilon: Any, sigma: Any, mu: Any, **settings: Any) -> Call:
    """Validate :func:`maxwell3d`'s arguments (the registry's eager plan uses it)."""
    return _prepare(epsilon, sigma, mu, equation="maxwell3d", **settings)
