"""``sweep.lsrtm``: Born modelling and its adjoint (least-squares migration)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import _callbacks, _memory
from ... import _validate as val
from ..._api import check_cotangent, eager_vjp, memory_estimate_of
from ..._setup import Call, prepare, velocity_speeds
from ..._xp import from_kernel_array, is_numpy_array, kernel_array
from ..acoustic.propagator import AcousticResult, model_gradient
from .compiled import CompiledLSRTM
from .eager import EagerLSRTM

__all__ = ["LSRTMResult", "lsrtm"]


@dataclass
class LSRTMResult(AcousticResult):
    """Output of :func:`sweep.lsrtm`.

    Attributes
    ----------
    receivers : array, shape (n_shots, n_receivers, nt)
        The scattered (Born) field at the receivers: the Jacobian of
        :func:`sweep.acoustic` at ``vp`` applied to ``vp * mp``.
    background_receivers : array, shape (n_shots, n_receivers, nt)
        The background field at the receivers (what :func:`sweep.acoustic`
        records in ``vp``).
    wavefield, previous_wavefield : array, shape (n_shots, *model_shape)
        The scattered field at times ``nt * dt`` and ``(nt - 1) * dt``.
    background_wavefield : array, shape (n_shots, *model_shape)
        The background field at time ``nt * dt``.
    impl : str
        The implementation that ran, ``"c"`` or ``"eager"``.
    memory_plan : MemoryPlan or None
        What a gradient run kept for its adjoint pass (``impl="c"``); None
        for forward-only and eager runs.
    state : dict
        Final padded fields: ``u0``/``u0_prev`` (background), ``u1``/``u1_prev``
        (scattered) and their CPML ``psi0``/``zeta0``, ``psi1``/``zeta1``.
    """

    background_receivers: Any = None
    background_wavefield: Any = None


_WAVEFIELDS = ("u0", "u0_prev", "psi0", "zeta0", "u1", "u1_prev", "psi1", "zeta1")


def _prepare(vp: Any, mp: Any, **settings: Any) -> Call:
    """Validate every argument of :func:`lsrtm` (before any compute)."""
    return prepare(
        {"vp": vp, "mp": mp}, {"vp": "positive", "mp": "any"}, velocity_speeds("vp"),
        equation="lsrtm", wavefields=_WAVEFIELDS, **settings,
    )  # fmt: skip


def _result(call: Call, receivers: Any, background: Any, state: dict[str, Any]) -> LSRTMResult:
    view = (slice(None), *call.geom.model_slices())
    return LSRTMResult(
        receivers=receivers,
        wavefield=state["u1"][view],
        previous_wavefield=state["u1_prev"][view],
        impl=call.impl,
        state=state,
        geometry=call.geom,
        background_receivers=background,
        background_wavefield=state["u0"][view],
    )


def _run(call: Call, *, gradient: bool) -> tuple[LSRTMResult, Any]:
    """Run the forward pass; with ``gradient``, keep the tape of the memory plan (``impl="c"``)."""
    geom = call.geom
    vp, mp = call.models["vp"], call.models["mp"]
    if call.impl == "eager":
        engine = EagerLSRTM.build(geom, vp)
        receivers, background, state = engine.run(
            vp, mp, call.amp, call.progress, call.callbacks, call.initial_state
        )
        return _result(call, receivers, background, state), None
    # Every caller array reaches the kernels through kernel_array (see sweep.acoustic).
    dtype = val.dtype_name(vp)
    vp_k = kernel_array(vp, dtype, name="vp")
    mp_k = kernel_array(mp, dtype, name="mp")
    xp = np if is_numpy_array(vp_k) else __import__("cupy")
    engine = CompiledLSRTM(geom, xp, vp_k.dtype, call.n_threads)
    amp_k = None if call.amp is None else engine.kernel_input(call.amp, name="source_amplitudes")
    coeffs = engine.kernel_coefficients(vp_k, mp_k)
    plan = _memory.plan(engine, call.memory) if gradient else None

    def back(x: Any) -> Any:
        return from_kernel_array(x, vp)

    def fields(state: Any) -> dict[str, Any]:  # as the eager path names them
        out = {}
        for s, wave in (("0", state.background), ("1", state.scattered)):
            out[f"u{s}"], out[f"u{s}_prev"] = back(wave.u), back(wave.u_prev)
        return out

    def restart(state: Any) -> None:
        def convert(x: Any) -> Any:
            return engine.kernel_input(x, name="initial_state")

        state.background.set_from(call.initial_state, convert, "0")
        state.scattered.set_from(call.initial_state, convert, "1")

    event = _callbacks.forward_event(call.callbacks, geom, call.models, fields)
    stepper = _callbacks.wrap(engine, call.callbacks, forward=event)
    initial = None if call.initial_state is None else restart
    traces, final, tape = _memory.forward(stepper, coeffs, amp_k, plan, call.progress, initial)
    state = {}
    for s, wave in (("0", final.background), ("1", final.scattered)):
        state[f"u{s}_prev"] = back(wave.u_prev)
        state[f"u{s}"] = back(wave.u)
        state[f"psi{s}"] = [back(wave.psi[ax][0]) for ax in engine.axes]
        state[f"zeta{s}"] = [back(wave.zeta[ax]) for ax in engine.axes]
    result = _result(call, back(traces[0]), back(traces[1]), state)
    result.memory_plan = plan
    return result, (engine, tape, vp_k)


def lsrtm(
    vp: Any,
    mp: Any,
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
) -> LSRTMResult:
    """Born (linearised acoustic) modelling: the data of a relative velocity perturbation.

    Propagates the background field of :func:`sweep.acoustic` in ``vp`` and
    the field it scatters off the perturbation ``delta vp = vp * mp``; the
    receivers record the scattered field, which is exactly the Jacobian of
    :func:`sweep.acoustic` at ``vp`` applied to ``vp * mp`` (the CPML repeats
    both models outward, as the acoustic propagator does).  The adjoint,
    through :func:`sweep.vjp` on torch or JAX arrays or the adapters
    (``PropTorch("lsrtm")``, ``PropJax("lsrtm")``), maps scattered-data
    residuals to the migration image (the ``mp`` gradient) and to the exact
    ``vp`` gradient of the Born data.

    Parameters
    ----------
    vp : array, shape (nz, nx) or (nz, ny, nx)
        Background velocity, float32 or float64, positive.
    mp : array, same shape
        Relative velocity perturbation ``delta vp / vp`` (any sign, finite).
    grid_spacing, dt, source_amplitudes, source_locations, receiver_locations,
    accuracy, pml_width, free_surface, pml_freq, max_vel, nt, progress,
    forward_callback, callback_frequency, initial_state
        As in :func:`sweep.acoustic` (``max_vel`` and ``pml_freq`` refer to
        ``vp``; fix them when comparing with finite differences of
        :func:`sweep.acoustic`).  Callbacks see ``u0``, ``u0_prev`` (the
        background) and ``u1``, ``u1_prev`` (the scattered field).
    backward_callback : callable, optional
        As in :func:`sweep.acoustic` (``impl="c"``): the adjoint wavefields
        are ``adjoint0``, ``adjoint1`` (the kernels' ``K lambda`` of the
        background and the scattered field) and their ``_prev``; the
        gradients ``vp`` and ``mp``.
    impl : {None, "auto", "c", "eager"}
        As in :func:`sweep.acoustic`: ``"c"`` runs the compiled kernels (with
        their hand-written adjoint, so :func:`sweep.vjp` differentiates NumPy
        and CuPy arrays), ``"eager"`` the Array-API code.
    n_threads, memory, storage_mode, storage_compression,
    model_gradient_sampling_interval, storage_bytes_limit_device,
    storage_bytes_limit_host
        As in :func:`sweep.acoustic` (``impl="c"``).  A gradient step keeps
        two snapshot values per cell (the background's and the scattered
        field's ``W``), twice the acoustic storage; boundary saving keeps
        both fields and both ``W`` of the band and runs both fields
        backwards in time.

    Returns
    -------
    LSRTMResult
        ``.receivers`` (scattered) and ``.background_receivers``.
    """
    call = _prepare(**locals())  # every parameter of this function, by name
    result, _ = _run(call, gradient=False)
    return result


def _lsrtm_vjp(
    vp: Any, mp: Any, grid_spacing: Any, dt: Any, **kwargs: Any
) -> tuple[LSRTMResult, Callable[[Any], dict[str, Any]]]:
    """Forward pass plus a pullback of the scattered receivers to ``vp``, ``mp`` and sources."""
    args = inspect.signature(lsrtm).bind(vp, mp, grid_spacing, dt, **kwargs)
    args.apply_defaults()
    call = _prepare(**args.arguments)
    if call.impl == "eager":
        return _eager_vjp(call)
    result, (engine, tape, vp_k) = _run(call, gradient=True)
    geom, amp = call.geom, call.amp
    # The pullback must not hold the result (see sweep.acoustic).
    shape, dtype = tuple(result.receivers.shape), val.dtype_name(result.receivers)

    def model_gradients(g_k: Any, g_mp: Any) -> dict[str, Any]:
        # K = (vp dt)^2 repeated into the CPML; dK = 2 K mp is in g_k already.
        return {"vp": from_kernel_array(model_gradient(geom, g_k, vp_k), vp),
                "mp": from_kernel_array(geom.fold_to_model(g_mp), vp)}  # fmt: skip

    def fields(adj: Any) -> dict[str, Any]:  # mu = K lambda at t + 1 and t + 2
        # The kernels carry G0 = mu0 + R mu1 for the background (lsrtm_stencil.h).
        ratio, g0, mu1 = tape.coeffs.ratio, adj.background, adj.scattered
        return {
            "adjoint0": from_kernel_array(g0.lam - ratio * mu1.lam, vp),
            "adjoint0_prev": from_kernel_array(g0.lam_prev - ratio * mu1.lam_prev, vp),
            "adjoint1": from_kernel_array(mu1.lam, vp),
            "adjoint1_prev": from_kernel_array(mu1.lam_prev, vp),
        }

    def so_far(adj: Any) -> dict[str, Any]:
        if adj.background.grad_v2dt2 is None:
            return {}
        g_k, g_mp = engine.finish_gradient(adj, tape.coeffs)
        return model_gradients(g_k * tape.plan.interval, g_mp * tape.plan.interval)

    def pullback(d_receivers: Any) -> dict[str, Any]:
        check_cotangent(d_receivers, shape, dtype)
        d_k = engine.kernel_input(d_receivers, name="the receiver cotangent")
        event = _callbacks.backward_event(call.callbacks, geom, call.models, fields, so_far)
        stepper = _callbacks.wrap(engine, call.callbacks, backward=event)
        g_model, g_src = _memory.backward(
            stepper, tape, d_k, model=True, source=amp is not None, progress=call.progress
        )
        grads = {} if g_model is None else model_gradients(*g_model)
        if amp is not None:
            grads["source_amplitudes"] = from_kernel_array(g_src, vp)
        return grads

    pullback.release = tape.close  # type: ignore[attr-defined]
    return result, pullback


def _eager_vjp(call: Call) -> tuple[LSRTMResult, Callable[[Any], dict[str, Any]]]:
    """Gradients of the eager path come from the array library's autodiff."""
    engine = EagerLSRTM.build(call.geom, call.models["vp"])

    def run(models: tuple, amp: Any) -> tuple[Any, Any]:
        scattered, background, state = engine.run(
            *models, amp, call.progress, call.callbacks, call.initial_state
        )
        return scattered, (background, state)

    receivers, (background, state), pullback = eager_vjp(
        call.models, call.amp, run, "lsrtm", compiled=True
    )
    return _result(call, receivers, background, state), pullback


def _estimate_memory(*args: Any, **kwargs: Any) -> _memory.MemoryEstimate:
    """:func:`sweep.estimate_memory` of a :func:`sweep.lsrtm` call."""
    return memory_estimate_of(lsrtm, _prepare, CompiledLSRTM, args, kwargs, eager_states=2)


lsrtm.__sweep_vjp__ = _lsrtm_vjp  # type: ignore[attr-defined]
lsrtm.__sweep_memory__ = _estimate_memory  # type: ignore[attr-defined]
