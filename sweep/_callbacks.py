"""Callbacks during propagation: ``forward_callback``, ``backward_callback``.

A propagator called with ``forward_callback=f`` calls ``f(state)`` with a
:class:`CallbackState` before every time step ``t`` that is a multiple of
``callback_frequency`` (``t = 0, k, 2k, ... < nt``); the state holds the
wavefields at time ``t`` (``u`` is ``u^t``, ``u_prev`` is ``u^{t-1}``).  With
``backward_callback=g``, the adjoint pass of a gradient calls ``g(state)`` at
the same steps, in reverse order, once the adjoint has reached step ``t``;
its state also holds the model gradient accumulated so far (the steps from
``t`` to ``nt - 1``).

The compiled time loop runs in chunks between callbacks: the memory
strategies' chunk boundaries are split at the callback steps (:func:`wrap`),
so every strategy calls them at the same steps, and a checkpointing
strategy's replays of the forward pass do not call the forward callback
again.  Wavefields are the propagator's own buffers: an in-place edit in a
callback changes the propagation from that step on (NumPy, CuPy and torch;
JAX arrays are immutable).  Such an edit is not part of what the gradient
differentiates.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ._grid import Geometry

__all__ = ["CallbackState", "Callbacks", "check_callbacks", "snapshots"]

VIEWS = ("inner", "pml", "full")


@dataclass
class CallbackState:
    """What a callback sees at one time step.

    Attributes
    ----------
    step : int
        The time step ``t`` (the wavefields are at time ``t * dt``).
    nt : int
        Time steps of the propagation.
    dt : float
        Time step.
    grid_spacing : tuple of float
        Cell size per axis.
    direction : str
        ``"forward"`` or ``"backward"``.
    """

    step: int
    nt: int
    dt: float
    grid_spacing: tuple[float, ...]
    direction: str
    geometry: Geometry = field(repr=False)
    wavefields: dict[str, Any] = field(repr=False)
    models: dict[str, Any] = field(repr=False)
    gradient: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)

    @property
    def wavefield_names(self) -> list[str]:
        """Names accepted by :meth:`get_wavefield`."""
        return list(self.wavefields)

    def get_wavefield(self, name: str, view: str = "inner") -> Any:
        """Return wavefield ``name`` of every shot, ``(n_shots, ...)``.

        ``view`` is ``"inner"`` (the model cells), ``"pml"`` (the model and
        its CPML) or ``"full"`` (the padded grid, halo included).  The result
        is a view of the propagator's buffer: editing it in place changes the
        propagation.
        """
        if name not in self.wavefields:
            names = self.wavefield_names
            raise KeyError(f"no wavefield {name!r} at this step; choose from {names}")
        return _view(self.geometry, self.wavefields[name], view, shot_axis=True)

    def get_model(self, name: str) -> Any:
        """Return model ``name`` as the propagator received it."""
        if name not in self.models:
            raise KeyError(f"no model {name!r}; choose from {list(self.models)}")
        return self.models[name]

    def get_gradient(self, name: str) -> Any:
        """Return the gradient of model ``name`` accumulated so far (backward only).

        The sum over the time steps the adjoint pass has processed (from
        :attr:`step` to ``nt - 1``), on the model grid; a new array.
        """
        if self.gradient is None:
            raise ValueError(
                "gradients exist in the backward pass only, and only when the model gradient "
                "is computed"
            )
        grads = self.gradient()
        if name not in grads:
            raise KeyError(f"no gradient {name!r}; choose from {list(grads)}")
        return grads[name]


def _view(geom: Geometry, x: Any, view: str, *, shot_axis: bool) -> Any:
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    lead = (slice(None),) if shot_axis else ()
    if view == "full":
        return x
    if view == "pml":
        return x[(*lead, *geom.store_slices())]
    return x[(*lead, *geom.model_slices())]


@dataclass(frozen=True)
class Callbacks:
    """A call's callbacks, validated (see :func:`check_callbacks`)."""

    forward: Callable[[CallbackState], Any] | None
    backward: Callable[[CallbackState], Any] | None
    frequency: int

    def steps(self, t0: int, t1: int) -> list[int]:
        """Return the callback steps in ``[t0, t1)``."""
        k = self.frequency
        first = -(-t0 // k) * k
        return list(range(first, t1, k))


def check_callbacks(
    forward_callback: Any, backward_callback: Any, callback_frequency: Any
) -> Callbacks | None:
    """Validate the callback keywords; None when there are no callbacks."""
    for name, cb in (("forward_callback", forward_callback),
                     ("backward_callback", backward_callback)):  # fmt: skip
        if cb is not None and not callable(cb):
            raise TypeError(f"{name} must be a callable taking a CallbackState, got {cb!r}")
    if (
        isinstance(callback_frequency, bool)
        or not isinstance(callback_frequency, numbers.Integral)
        or callback_frequency < 1
    ):
        raise ValueError(
            f"callback_frequency must be a positive integer (steps), got {callback_frequency!r}"
        )
    if forward_callback is None and backward_callback is None:
        return None
    return Callbacks(forward_callback, backward_callback, int(callback_frequency))


class _EventStepper:
    """A stepper whose calls stop at the callback steps and call the callback there.

    ``forward_steps`` (the forward pass) calls ``on_forward(t, state)`` before
    each callback step ``t``; ``adjoint_steps`` calls ``on_backward(t, adj)``
    when the adjoint reaches a callback step.  A call that spans several
    callback steps is split; its snapshot buffer (``store``) is sliced to
    each piece.  Calls with boundary-saving buffers are never split: the
    boundary-saving drivers put their chunk boundaries at the callback steps.
    """

    def __init__(
        self,
        engine: Any,
        callbacks: Callbacks,
        on_forward: Callable[[int, Any], None] | None,
        on_backward: Callable[[int, Any], None] | None,
    ) -> None:
        self._engine = engine
        self._cb = callbacks
        self._on_forward = on_forward
        self._on_backward = on_backward

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def forward_steps(self, state: Any, coeffs: Any, amp: Any, t0: int, n: int, **kw: Any) -> Any:
        if self._on_forward is None:
            return self._engine.forward_steps(state, coeffs, amp, t0, n, **kw)
        bounds = [t0, *(t for t in self._cb.steps(t0 + 1, t0 + n)), t0 + n]
        _check_unsplit(kw, bounds)
        for a, b in pairwise(bounds):
            if a % self._cb.frequency == 0:
                self._on_forward(a, state)
            self._engine.forward_steps(state, coeffs, amp, a, b - a, **_slice(kw, t0, a, b))
        return None

    def adjoint_steps(
        self, adj: Any, coeffs: Any, amp: Any, grad_rec: Any, t_end: int, n: int, **kw: Any
    ) -> Any:
        if self._on_backward is None:
            return self._engine.adjoint_steps(adj, coeffs, amp, grad_rec, t_end, n, **kw)
        t0 = t_end - n
        bounds = [t0, *(t for t in self._cb.steps(t0 + 1, t_end)), t_end]
        _check_unsplit(kw, bounds)
        for a, b in reversed(list(pairwise(bounds))):
            self._engine.adjoint_steps(adj, coeffs, amp, grad_rec, b, b - a, **_slice(kw, t0, a, b))
            if a % self._cb.frequency == 0:
                self._on_backward(a, adj)
        return None


_BOUNDARY_KEYS = ("band_u", "band_u_offset", "replay_w", "replay_u")


def _check_unsplit(kw: dict[str, Any], bounds: list[int]) -> None:
    if len(bounds) > 2 and any(kw.get(key) is not None for key in _BOUNDARY_KEYS):
        raise AssertionError("boundary-saving calls must end at the callback steps")


def _n_stored(t: int, k: int) -> int:
    return -(-t // k)


def _slice(kw: dict[str, Any], t0: int, a: int, b: int) -> dict[str, Any]:
    """Return the keywords of the piece [a, b) of a call that starts at t0."""
    store = kw.get("store")
    if store is None:
        return kw
    k = kw.get("store_every", 1)
    base = _n_stored(t0, k)
    return {**kw, "store": store[_n_stored(a, k) - base : _n_stored(b, k) - base]}


def wrap(
    engine: Any,
    callbacks: Callbacks | None,
    *,
    forward: Callable[[int, Any], None] | None = None,
    backward: Callable[[int, Any], None] | None = None,
) -> Any:
    """``engine``, or an event stepper calling ``forward``/``backward`` at the callback steps.

    With callbacks the stepper is wrapped even when this pass has none of its
    own, so that the boundary-saving drivers still put chunk boundaries at the
    callback steps (:func:`chunk_bounds`) for the other pass.
    """
    if callbacks is None:
        return engine
    return _EventStepper(engine, callbacks, forward, backward)


def forward_event(
    callbacks: Callbacks | None,
    geom: Geometry,
    models: dict[str, Any],
    fields: Callable[[Any], dict[str, Any]],
) -> Callable[[int, Any], None] | None:
    """Return a compiled forward pass's event for :func:`wrap`, or None without a callback.

    ``fields(state)`` gives the wavefields of a forward state by name, in the
    caller's array library.
    """
    if callbacks is None or callbacks.forward is None:
        return None
    g, cb = geom, callbacks.forward

    def event(t: int, state: Any) -> None:
        cb(CallbackState(t, g.nt, g.dt, g.spacing, "forward", g, fields(state), models))

    return event


def backward_event(
    callbacks: Callbacks | None,
    geom: Geometry,
    models: dict[str, Any],
    fields: Callable[[Any], dict[str, Any]],
    gradient: Callable[[Any], dict[str, Any]],
) -> Callable[[int, Any], None] | None:
    """Return a compiled adjoint pass's event for :func:`wrap`, or None without a callback.

    ``fields(adj)`` gives the adjoint wavefields by name, ``gradient(adj)``
    the model gradients accumulated so far (on the model grid).
    """
    if callbacks is None or callbacks.backward is None:
        return None
    g, cb = geom, callbacks.backward

    def event(t: int, adj: Any) -> None:
        cb(CallbackState(t, g.nt, g.dt, g.spacing, "backward", g, fields(adj), models,
                         lambda: gradient(adj)))  # fmt: skip

    return event


def chunk_bounds(engine: Any, nt: int) -> set[int]:
    """Return the callback steps of a wrapped stepper (empty for a plain one)."""
    if isinstance(engine, _EventStepper):
        return set(engine._cb.steps(0, nt))
    return set()


def snapshots(every: int = 1, name: str = "u", view: str = "inner") -> _Snapshots:
    """Make a forward callback that keeps copies of a wavefield every ``every`` calls.

    Pass it as ``forward_callback`` (with ``callback_frequency=k`` the copies
    are ``every * k`` steps apart); afterwards ``.steps`` lists the steps and
    ``.frames`` the copies, ``(n_shots, ...)`` each, e.g. for
    :func:`sweep.plot.plot_wavefield`.
    """
    if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 1:
        raise ValueError(f"every must be a positive integer, got {every!r}")
    if view not in VIEWS:
        raise ValueError(f"view must be one of {VIEWS}, got {view!r}")
    return _Snapshots(int(every), name, view)


class _Snapshots:
    def __init__(self, every: int, name: str, view: str) -> None:
        self.every, self.name, self.view = every, name, view
        self.steps: list[int] = []
        self.frames: list[Any] = []
        self._calls = 0

    def __call__(self, state: CallbackState) -> None:
        if self._calls % self.every == 0:
            x = state.get_wavefield(self.name, self.view)
            self.steps.append(state.step)
            self.frames.append(x.clone() if hasattr(x, "clone") else x.copy())
        self._calls += 1
