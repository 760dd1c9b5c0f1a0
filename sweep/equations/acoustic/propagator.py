"""Constant-density acoustic propagator: ``sweep.acoustic`` and its gradient."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import _memory
from ... import _validate as val
from ..._api import compiled_forward, compiled_pullback, eager_vjp, memory_estimate_of
from ..._callbacks import Callbacks, CallbackState
from ..._compiled import CompiledAcoustic
from ..._grid import Geometry
from ..._setup import prepare, velocity_speeds
from ..._xp import (
    is_numpy_array,
    kernel_array,
)
from .eager import EagerAcoustic

__all__ = ["AcousticResult", "acoustic"]


@dataclass
class AcousticResult:
    """Output of :func:`sweep.acoustic`.

    Attributes
    ----------
    receivers : array, shape (n_shots, n_receivers, nt)
        The wavefield sampled at the receivers; sample ``t`` is time ``t * dt``,
        on the same time axis as the source amplitudes.
    wavefield : array, shape (n_shots, *model_shape)
        The wavefield at time ``nt * dt`` on the model grid.
    previous_wavefield : array, shape (n_shots, *model_shape)
        The wavefield at time ``(nt - 1) * dt``.
    impl : str
        The implementation that ran, ``"c"`` or ``"eager"``.
    memory_plan : MemoryPlan or None
        What a gradient run (``sweep.vjp``, the adapters) kept for its adjoint
        pass: strategy, storage, bytes, and why it was chosen; None for
        forward-only and eager runs.
    state : dict
        Final padded fields (``u``, ``u_prev``, CPML ``psi``/``zeta`` per axis)
        for inspection.
    """

    receivers: Any
    wavefield: Any
    previous_wavefield: Any
    impl: str
    state: dict[str, Any] = field(repr=False)
    geometry: Geometry = field(repr=False)
    memory_plan: _memory.MemoryPlan | None = None


@dataclass
class _Call:
    geom: Geometry
    impl: str
    v: Any
    amp: Any
    n_threads: int
    progress: bool
    memory: _memory.MemorySettings
    callbacks: Callbacks | None = None
    initial_state: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # see sweep._setup.Call


def _prepare(
    v: Any,
    grid_spacing: float | Sequence[float],
    dt: float,
    source_amplitudes: Any,
    source_locations: Any,
    receiver_locations: Any,
    accuracy: int,
    pml_width: int | Sequence[int],
    free_surface: bool | Sequence[bool],
    pml_freq: float | None,
    max_vel: float | None,
    nt: int | None,
    impl: str | None,
    n_threads: int | None,
    progress: bool,
    forward_callback: Any = None,
    backward_callback: Any = None,
    callback_frequency: Any = 1,
    initial_state: Any = None,
    **memory_options: Any,
) -> _Call:
    """Validate every argument (before any compute) and build the geometry.

    ``memory_options`` are the memory keywords of :func:`acoustic` (see
    :func:`sweep._memory.check_settings`).
    """
    call = prepare(
        {"v": v},
        {"v": "positive"},
        velocity_speeds("v"),
        equation="acoustic",
        grid_spacing=grid_spacing,
        dt=dt,
        source_amplitudes=source_amplitudes,
        source_locations=source_locations,
        receiver_locations=receiver_locations,
        accuracy=accuracy,
        pml_width=pml_width,
        free_surface=free_surface,
        pml_freq=pml_freq,
        max_vel=max_vel,
        nt=nt,
        impl=impl,
        n_threads=n_threads,
        progress=progress,
        forward_callback=forward_callback,
        backward_callback=backward_callback,
        callback_frequency=callback_frequency,
        initial_state=initial_state,
        **memory_options,
    )
    return _Call(call.geom, call.impl, v, source_amplitudes, call.n_threads, call.progress,
                 call.memory, call.callbacks, call.initial_state)  # fmt: skip


def _model_view(geom: Geometry, padded: Any) -> Any:
    sl = (
        slice(None),
        *(slice(geom.lo(d), geom.lo(d) + n) for d, n in enumerate(geom.model_shape)),
    )
    return padded[sl]


def _result(call: _Call, receivers: Any, state: dict[str, Any]) -> AcousticResult:
    return AcousticResult(
        receivers=receivers,
        wavefield=_model_view(call.geom, state["u"]),
        previous_wavefield=_model_view(call.geom, state["u_prev"]),
        impl=call.impl,
        state=state,
        geometry=call.geom,
    )


def _run(call: _Call, *, gradient: bool) -> tuple[AcousticResult, Any]:
    geom = call.geom
    if call.impl == "eager":
        engine = EagerAcoustic.build(geom, call.v)
        receivers, state = engine.run(
            call.v, call.amp, call.progress, call.callbacks, call.initial_state
        )
        return _result(call, receivers, state), None
    # Every caller array reaches the kernels through kernel_array: C-contiguous,
    # aligned, native byte order (a copy only when the caller's array is not).
    v_k = kernel_array(call.v, val.dtype_name(call.v), name="v")
    xp = np if is_numpy_array(v_k) else __import__("cupy")
    engine = CompiledAcoustic(geom, xp, v_k.dtype, call.n_threads)
    amp_k = None if call.amp is None else engine.kernel_input(call.amp, name="source_amplitudes")
    v2dt2 = engine.kernel_v2dt2(geom.pad_v2dt2(v_k))
    memory = call.memory if gradient else None
    receivers, state, plan, tape = compiled_forward(
        engine, v2dt2, amp_k, memory, call.progress, call.v,
        callbacks=call.callbacks, models={"v": call.v}, initial_state=call.initial_state,
    )  # fmt: skip
    result = _result(call, receivers, state)
    result.memory_plan = plan
    return result, (engine, tape, v_k)


def acoustic(
    v: Any,
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
    forward_callback: Callable[[CallbackState], Any] | None = None,
    backward_callback: Callable[[CallbackState], Any] | None = None,
    callback_frequency: int = 1,
    initial_state: dict[str, Any] | None = None,
    memory: Any = None,
    storage_mode: str = "auto",
    storage_compression: bool | str = False,
    model_gradient_sampling_interval: int = 1,
    storage_bytes_limit_device: int | None = None,
    storage_bytes_limit_host: int | None = None,
) -> AcousticResult:
    """Propagate waves through a constant-density acoustic model.

    Solves ``lap u - u_tt / v^2 = f`` with second-order leapfrog time stepping,
    centred finite differences of order ``accuracy`` in space and C-PML
    absorbing boundaries.  Works on NumPy arrays (and CuPy, PyTorch or JAX
    arrays; gradients through those come from their adapters).

    Parameters
    ----------
    v : array, shape (nz, nx) or (nz, ny, nx)
        Velocity model (units of grid_spacing per second), float32 or float64.
    grid_spacing : float or sequence of float
        Cell size, one value for all axes or one per axis.
    dt : float
        Time step in seconds; must satisfy the CFL limit of ``accuracy``.
    source_amplitudes : array, shape (n_shots, n_sources, nt), optional
        Source time functions; same dtype and library as ``v``.  A source adds
        ``-v^2 dt^2 f`` to the wavefield at its cell each step (the sign
        convention of ``lap u - u_tt / v^2 = f``, as in Deepwave).
    source_locations : int array, shape (n_shots, n_sources, ndim), optional
        Grid indices of the sources, in the axis order of ``v``.
    receiver_locations : int array, shape (n_shots, n_receivers, ndim), optional
        Grid indices of the receivers (duplicates allowed).
    accuracy : {2, 4, 6, 8}
        Spatial order of accuracy.
    pml_width : int or sequence of int
        CPML cells added outside the model: one value for all faces or
        ``(lo_0, hi_0, lo_1, hi_1, ...)``.  Default 20.
    free_surface : bool or sequence of bool
        ``True`` makes the low face of the first axis (the top) a free surface
        (pressure zero on the first model row); a sequence selects faces in the
        order of ``pml_width``.  Free-surface faces have no CPML.
    pml_freq : float, optional
        Frequency (Hz) of the CPML frequency shift; default: the frequency with
        ten cells per wavelength in the slowest medium.
    max_vel : float, optional
        Velocity that scales the CPML damping; default: the model's maximum.
        The CPML profiles are constants of the gradient (the velocity the CPML
        copies from the edge cells is not: its derivative goes to those
        cells), so fix ``max_vel`` and ``pml_freq`` when comparing gradients
        with finite differences that perturb the model's extreme values.
    nt : int, optional
        Number of time steps; taken from ``source_amplitudes`` when given.
    impl : {None, "auto", "c", "eager"}
        ``"c"`` runs the compiled kernels, ``"eager"`` the Array-API code.
        ``None``/``"auto"`` (and ``"c"``) use the compiled kernels when
        ``sweep._C`` imports and fall back to ``"eager"`` with a
        ``UserWarning`` otherwise.
    n_threads : int, optional
        OpenMP threads for ``impl="c"`` on the CPU (default: all).
    progress : bool
        Show a tqdm progress bar.
    forward_callback : callable, optional
        ``f(state)`` with a :class:`~sweep._callbacks.CallbackState` before
        every ``callback_frequency``-th time step (``t = 0, k, 2k, ...``):
        ``state.get_wavefield("u", view="inner")`` (or ``"pml"``, ``"full"``),
        ``"u_prev"``, ``state.step``.  Wavefields are the propagator's
        buffers: in-place edits change the propagation.
    backward_callback : callable, optional
        ``g(state)`` at the same steps of a gradient's adjoint pass (in
        reverse; ``impl="c"``): ``state.get_wavefield("adjoint")`` (the
        kernels' ``v^2 dt^2 lambda``) and ``state.get_gradient("v")``, the
        gradient accumulated so far.
    callback_frequency : int
        Steps between callbacks (default 1).
    initial_state : dict, optional
        Start from this state instead of rest: a previous result's ``.state``
        (same grid, CPML and shots), so that a run can be continued; its
        time axis restarts at 0.  A constant of the gradient.
    memory : MemoryOptions, optional
        How a gradient run (``sweep.vjp(sweep.acoustic, ...)``, the adapters)
        keeps the forward wavefield for the adjoint pass:
        ``MemoryOptions(strategy="boundary", boundary=BoundaryOptions(...))``
        (boundary saving), ``MemoryOptions(strategy="ckpt", ckpt=CkptOptions(...))``
        (chunked or binomial checkpointing), ``MemoryOptions()`` (full storage)
        or ``MemoryOptions(strategy="auto")``.  Default (None with the storage
        keywords at their defaults): the fastest strategy that fits the byte
        budgets.  Forward-only calls ignore it.  See docs/memory.md.
    storage_mode : {"auto", "device", "cpu", "disk", "none"}
        Full storage: keep snapshots in device memory, host memory or a
        temporary file (``SWEEP_TMPDIR`` chooses the folder); ``"none"``: no
        model gradient; ``"auto"``: the fastest that fits the budgets.
    storage_compression : {False, "none", "bf16"}
        Store full-storage snapshots as bfloat16 (computation stays in the
        model's dtype).
    model_gradient_sampling_interval : int
        Correlate every k-th step only (gradient scaled by k); full storage
        and checkpointing.
    storage_bytes_limit_device, storage_bytes_limit_host : int, optional
        Byte budgets for ``"auto"`` choices; default 80 % of what is free.

    Returns
    -------
    AcousticResult
        ``.receivers`` holds the receiver data; the final wavefields are on it too.
    """
    call = _prepare(**locals())  # every parameter of this function, by name
    result, _ = _run(call, gradient=False)
    return result


def _acoustic_vjp(
    v: Any, grid_spacing: Any, dt: Any, **kwargs: Any
) -> tuple[AcousticResult, Callable[[Any], dict[str, Any]]]:
    """Forward pass plus a pullback mapping receiver cotangents to gradients."""
    # Same arguments and defaults as sweep.acoustic; unknown keywords raise TypeError.
    args = inspect.signature(acoustic).bind(v, grid_spacing, dt, **kwargs)
    args.apply_defaults()
    call = _prepare(**args.arguments)
    amp = args.arguments["source_amplitudes"]
    if call.impl == "eager":
        return _eager_vjp(call)
    result, (engine, tape, v_k) = _run(call, gradient=True)

    def gradients(g_v2dt2: Any) -> dict[str, Any]:
        return {"v": model_gradient(call.geom, g_v2dt2, v_k)}

    pullback = compiled_pullback(
        engine, tape, result.receivers, gradients,
        source=amp is not None, progress=call.progress, like=v,
        callbacks=call.callbacks, models={"v": call.v},
    )  # fmt: skip
    return result, pullback


def model_gradient(geom: Geometry, g_v2dt2: Any, v: Any) -> Any:
    """Velocity gradient on the model cells from the gradient w.r.t. padded v^2 dt^2.

    The CPML repeats the edge cells' velocities outward, so each CPML cell's
    share is added to the edge cell it copies (:meth:`Geometry.fold_to_model`);
    cells held at zero (halo, free-surface rows) have a zero gradient already.
    """
    return geom.fold_to_model(g_v2dt2) * (2.0 * geom.dt**2) * v


def _estimate_memory(*args: Any, **kwargs: Any) -> _memory.MemoryEstimate:
    """:func:`sweep.estimate_memory` of a :func:`sweep.acoustic` call."""
    return memory_estimate_of(acoustic, _prepare, CompiledAcoustic, args, kwargs, eager_states=1)


def _eager_vjp(call: _Call) -> tuple[AcousticResult, Callable[[Any], dict[str, Any]]]:
    """Gradients of the eager path come from the array library's autodiff."""
    engine = EagerAcoustic.build(call.geom, call.v)

    def run(models: tuple, amp: Any) -> tuple[Any, Any]:
        return engine.run(models[0], amp, call.progress, call.callbacks, call.initial_state)

    receivers, state, pullback = eager_vjp({"v": call.v}, call.amp, run, "acoustic", compiled=True)
    return _result(call, receivers, state), pullback


acoustic.__sweep_vjp__ = _acoustic_vjp  # type: ignore[attr-defined]
acoustic.__sweep_memory__ = _estimate_memory  # type: ignore[attr-defined]
