"""``sweep.lsrtm``: Born modelling and its adjoint (least-squares migration)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..._api import eager_only_impl, eager_vjp
from ..._setup import Call, prepare, velocity_speeds
from ...acoustic import AcousticResult
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
        The implementation that ran (``"eager"``).
    state : dict
        Final padded fields: ``u0``/``u0_prev`` (background), ``u1``/``u1_prev``
        (scattered) and their CPML ``psi0``/``zeta0``, ``psi1``/``zeta1``.
    """

    background_receivers: Any = None
    background_wavefield: Any = None


_WAVEFIELDS = ("u0", "u0_prev", "psi0", "zeta0", "u1", "u1_prev", "psi1", "zeta1")


def _prepare(vp: Any, mp: Any, **settings: Any) -> Call:
    """Validate every argument of :func:`lsrtm` (before any compute)."""
    settings["impl"] = eager_only_impl(settings["impl"], "lsrtm")
    return prepare(
        {"vp": vp, "mp": mp}, {"vp": "positive", "mp": "any"}, velocity_speeds("vp"),
        equation="lsrtm", wavefields=_WAVEFIELDS, **settings,
    )  # fmt: skip


def _result(
    call: Call, engine: EagerLSRTM, receivers: Any, background: Any, state: dict[str, Any]
) -> LSRTMResult:
    return LSRTMResult(
        receivers=receivers,
        wavefield=engine.model_view(state["u1"]),
        previous_wavefield=engine.model_view(state["u1_prev"]),
        impl=call.impl,
        state=state,
        geometry=call.geom,
        background_receivers=background,
        background_wavefield=engine.model_view(state["u0"]),
    )


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
        :func:`sweep.acoustic`).
    impl : {None, "auto", "eager"}
        LSRTM runs the eager Array-API code; ``"c"`` raises until its compiled
        kernels exist.
    n_threads, memory, storage_mode, storage_compression,
    model_gradient_sampling_interval, storage_bytes_limit_device,
    storage_bytes_limit_host
        Accepted for a uniform signature; they configure compiled kernels,
        which LSRTM does not have yet (non-default memory options warn).

    Returns
    -------
    LSRTMResult
        ``.receivers`` (scattered) and ``.background_receivers``.
    """
    call = _prepare(**locals())  # every parameter of this function, by name
    engine = EagerLSRTM.build(call.geom, vp)
    receivers, background, state = engine.run(
        vp, mp, call.amp, call.progress, call.callbacks, call.initial_state
    )
    return _result(call, engine, receivers, background, state)


def _lsrtm_vjp(
    vp: Any, mp: Any, grid_spacing: Any, dt: Any, **kwargs: Any
) -> tuple[LSRTMResult, Callable[[Any], dict[str, Any]]]:
    """Forward pass plus a pullback of the scattered receivers to ``vp``, ``mp`` and sources."""
    args = inspect.signature(lsrtm).bind(vp, mp, grid_spacing, dt, **kwargs)
    args.apply_defaults()
    call = _prepare(**args.arguments)
    engine = EagerLSRTM.build(call.geom, vp)

    def run(models: tuple, amp: Any) -> tuple[Any, Any]:
        scattered, background, state = engine.run(
            *models, amp, call.progress, call.callbacks, call.initial_state
        )
        return scattered, (background, state)

    receivers, (background, state), pullback = eager_vjp(
        call.models, call.amp, run, "lsrtm", compiled=False
    )
    return _result(call, engine, receivers, background, state), pullback


lsrtm.__sweep_vjp__ = _lsrtm_vjp  # type: ignore[attr-defined]
