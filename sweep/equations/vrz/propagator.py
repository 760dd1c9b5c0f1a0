"""``sweep.vrz``: variable-density acoustic propagation in velocity and impedance."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _memory
from ... import _validate as val
from ..._api import compiled_forward, compiled_pullback, eager_vjp, memory_estimate_of
from ..._fd import halo
from ..._setup import Call, Speeds, prepare
from ..._xp import is_numpy_array, kernel_array
from ..acoustic.propagator import AcousticResult
from .compiled import CompiledVRZ, model_gradients
from .eager import EagerVRZ

__all__ = ["VRZResult", "vrz"]


@dataclass
class VRZResult(AcousticResult):
    """Output of :func:`sweep.vrz`.

    Attributes
    ----------
    receivers : array, shape (n_shots, n_receivers, nt)
        Pressure at the receivers; sample ``t`` is time ``t * dt``.
    wavefield, previous_wavefield : array, shape (n_shots, *model_shape)
        Pressure at times ``nt * dt`` and ``(nt - 1) * dt`` on the model grid.
    impl : str
        The implementation that ran, ``"c"`` or ``"eager"``.
    memory_plan : MemoryPlan or None
        What a compiled gradient run kept for its adjoint pass (see
        :class:`sweep.AcousticResult`); None otherwise.
    state : dict
        Final padded fields (``u``, ``u_prev``, CPML ``psi``/``zeta`` per axis).
    """


def speeds(models: dict[str, np.ndarray], order: int) -> Speeds:
    """Wave speeds of a VRZ model.

    The update couples ``kappa`` of a cell with ``b`` of the cells its
    stencil reaches, so the CFL speed is ``sqrt(max kappa_i max_j b_j)`` over
    those neighbourhoods: ``vp`` itself where density is smooth, and never
    less.
    """
    vp, z = (np.asarray(models[k], dtype=np.float64) for k in ("vp", "z"))
    kappa, b = vp * z, window_max(vp / z, halo(order))
    return Speeds(
        cfl=float(np.sqrt(np.max(kappa * b))), slowest=float(vp.min()), damping=float(vp.max())
    )


def window_max(x: np.ndarray, reach: int) -> np.ndarray:
    """Return the max of ``x`` over the ``2 reach + 1`` cells centred on each, along every axis.

    Edge values repeat past the ends.  Per axis, windows of doubling width
    (``max(m[j], m[j + w])``: log2 passes instead of one pass per cell of the
    window; the model of a 128^3 call: ~80 -> ~25 ms).
    """
    width = 2 * reach + 1
    for d in range(x.ndim):
        pad = [(0, 0)] * x.ndim
        pad[d] = (reach, reach)
        m = np.pad(x, pad, mode="edge")  # m[j]: the max of the window starting at j
        lead = (slice(None),) * d
        span = 1
        while span < width:
            step = min(span, width - span)  # two windows of span cover span + step cells
            k = m.shape[d] - step
            m = np.maximum(m[(*lead, slice(0, k))], m[(*lead, slice(step, None))])
            span += step
        x = m
    return x


def _prepare(vp: Any, z: Any, **settings: Any) -> Call:
    """Validate every argument of :func:`vrz` (before any compute)."""
    return prepare(
        {"vp": vp, "z": z}, {"vp": "positive", "z": "positive"}, speeds, equation="vrz",
        **settings,
    )  # fmt: skip


def _result(call: Call, receivers: Any, state: dict[str, Any]) -> VRZResult:
    cells = (slice(None), *call.geom.model_slices())
    return VRZResult(
        receivers=receivers,
        wavefield=state["u"][cells],
        previous_wavefield=state["u_prev"][cells],
        impl=call.impl,
        state=state,
        geometry=call.geom,
    )


def _run_compiled(call: Call, *, gradient: bool) -> tuple[VRZResult, Any]:
    """Run the compiled kernels; with ``gradient``, keep what the adjoint needs.

    Returns the result and ``(engine, tape, vp, z)`` (models in the kernels'
    layout).
    """
    vp, z = call.models["vp"], call.models["z"]
    dtype = val.dtype_name(vp)
    vp_k = kernel_array(vp, dtype, name="vp")
    z_k = kernel_array(z, dtype, name="z")
    xp = np if is_numpy_array(vp_k) else __import__("cupy")
    engine = CompiledVRZ(call.geom, xp, vp_k.dtype, call.n_threads)
    amp = None if call.amp is None else engine.kernel_input(call.amp, name="source_amplitudes")
    coeffs = engine.kernel_coefficients(vp_k, z_k)
    memory = call.memory if gradient else None
    receivers, state, plan, tape = compiled_forward(
        engine, coeffs, amp, memory, call.progress, vp,
        callbacks=call.callbacks, models=call.models, initial_state=call.initial_state,
    )  # fmt: skip
    result = _result(call, receivers, state)
    result.memory_plan = plan
    return result, (engine, tape, vp_k, z_k)


def vrz(
    vp: Any,
    z: Any,
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
) -> VRZResult:
    """Propagate waves through a variable-density acoustic model (velocity and impedance).

    Solves ``p_tt / kappa - div(b grad p) = -b f`` for the pressure ``p``, with
    ``kappa = z vp`` (= rho vp^2) and ``b = vp / z`` (= 1 / rho): second-order
    leapfrog in time, a conservative variable-coefficient stencil of order
    ``accuracy`` in space (``sweep/equations/vrz/eager.py``), C-PML absorbing
    boundaries and an optional free surface.  With constant density it is
    :func:`sweep.acoustic` (a source adds ``-vp^2 dt^2 f`` at its cell each
    step, the same convention).  Gradients with respect to ``vp``, ``z`` and
    the source amplitudes come from :func:`sweep.vjp`: the compiled kernels'
    hand-written adjoint (``cuda/vrz_stencil.h``) for ``impl="c"``, the
    array library's autodiff for ``impl="eager"`` on torch or JAX arrays (the
    adapters ``PropTorch("vrz")``, ``PropJax("vrz")`` run either); they are
    exact derivatives of this discrete function at every cell, CPML
    included.

    Parameters
    ----------
    vp : array, shape (nz, nx) or (nz, ny, nx)
        P-wave velocity (grid_spacing units per second), float32 or float64.
    z : array, same shape
        Acoustic impedance ``rho * vp``, positive.
    grid_spacing, dt, source_amplitudes, source_locations, receiver_locations,
    accuracy, pml_width, free_surface, pml_freq, max_vel, nt, progress,
    forward_callback, callback_frequency, initial_state
        As in :func:`sweep.acoustic` (``max_vel`` and ``pml_freq`` refer to
        ``vp``).
    impl : {None, "auto", "c", "eager"}
        As in :func:`sweep.acoustic`: ``"c"`` (and the default) the compiled
        kernels, ``"eager"`` the Array-API code.
    n_threads, memory, storage_mode, storage_compression,
    model_gradient_sampling_interval, storage_bytes_limit_device,
    storage_bytes_limit_host
        As in :func:`sweep.acoustic`.  A snapshot of the compiled gradient
        holds ``2 + ndim`` values per cell and step (``W``, ``u`` and ``psi``
        of each axis), so full storage takes that many times the acoustic's;
        boundary saving keeps ``u`` and those values of the band and rebuilds
        each step's snapshot in the adjoint pass.

    Returns
    -------
    VRZResult
    """
    call = _prepare(**locals())  # every parameter of this function, by name
    if call.impl == "c":
        return _run_compiled(call, gradient=False)[0]
    engine = EagerVRZ.build(call.geom, vp)
    receivers, state = engine.run(
        vp, z, call.amp, call.progress, call.callbacks, call.initial_state
    )
    return _result(call, receivers, state)


def _vrz_vjp(
    vp: Any, z: Any, grid_spacing: Any, dt: Any, **kwargs: Any
) -> tuple[VRZResult, Callable[[Any], dict[str, Any]]]:
    """Forward pass plus a pullback to ``vp``, ``z`` and the source amplitudes."""
    args = inspect.signature(vrz).bind(vp, z, grid_spacing, dt, **kwargs)
    args.apply_defaults()
    call = _prepare(**args.arguments)
    if call.impl == "eager":
        engine = EagerVRZ.build(call.geom, vp)

        def run(models: tuple, amp: Any) -> tuple[Any, Any]:
            return engine.run(*models, amp, call.progress, call.callbacks, call.initial_state)

        receivers, state, pullback = eager_vjp(call.models, call.amp, run, "vrz", compiled=True)
        return _result(call, receivers, state), pullback
    result, (engine, tape, vp_k, z_k) = _run_compiled(call, gradient=True)

    def gradients(g: tuple[Any, Any]) -> dict[str, Any]:
        return model_gradients(call.geom, *g, vp_k, z_k)

    pullback = compiled_pullback(
        engine, tape, result.receivers, gradients,
        source=call.amp is not None, progress=call.progress, like=vp,
        callbacks=call.callbacks, models=call.models,
    )  # fmt: skip
    return result, pullback


def _estimate_memory(*args: Any, **kwargs: Any) -> _memory.MemoryEstimate:
    """:func:`sweep.estimate_memory` of a :func:`sweep.vrz` call."""
    # The eager VRZ step keeps other residuals than eager_memory counts.
    return memory_estimate_of(vrz, _prepare, CompiledVRZ, args, kwargs, eager_states=None)


vrz.__sweep_vjp__ = _vrz_vjp  # type: ignore[attr-defined]
vrz.__sweep_memory__ = _estimate_memory  # type: ignore[attr-defined]
