"""Pieces of a NumPy-level propagator that every equation shares.

An equation's public function validates its call with
:func:`sweep._setup.prepare`, runs its engine, and wraps the outputs in a
result; :func:`eager_vjp` gives the gradients of an eager run from the array
library's autodiff (PyTorch or JAX), whatever the equation's models are, and
:func:`compiled_forward` / :func:`compiled_pullback` run a compiled stepper
and its adjoint through the memory strategies.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _callbacks, _memory
from . import _validate as val
from ._eager_memory import eager_memory
from ._impl import binding_error, binding_fix
from ._xp import from_kernel_array, is_cupy_array, is_jax_array, is_torch_array

__all__ = [
    "check_cotangent",
    "compiled_forward",
    "compiled_pullback",
    "eager_vjp",
    "estimate_memory",
    "memory_estimate_of",
]


def check_cotangent(d: Any, shape: tuple[int, ...], dtype: str) -> None:
    """Check a receiver cotangent against the receivers' shape and dtype."""
    if tuple(d.shape) != shape:
        raise ValueError(
            f"the receiver cotangent must have the receivers' shape {shape}, got {tuple(d.shape)}"
        )
    if val.dtype_name(d) != dtype:
        raise TypeError(f"the receiver cotangent has dtype {val.dtype_name(d)}, expected {dtype}")


def eager_vjp(
    models: dict[str, Any],
    amp: Any,
    run: Callable[[tuple, Any], tuple[Any, Any]],
    equation: str,
    compiled: bool,
) -> tuple[Any, Any, Callable[[Any], dict[str, Any]]]:
    """Run an eager propagation under the array library's autodiff.

    Parameters
    ----------
    models : dict
        The model arrays by name (torch tensors or JAX arrays).
    amp : array or None
        Source amplitudes.
    run : callable
        ``run(models_tuple, amp) -> (receivers, aux)``: the forward pass;
        ``receivers`` is the differentiable output, ``aux`` anything else the
        caller needs (returned detached for torch).
    equation : str
        The propagator's name, for messages.
    compiled : bool
        Whether the equation has a compiled adjoint (for the NumPy message).

    Returns
    -------
    receivers, aux, pullback
        ``pullback(d_receivers)`` returns the gradients by model name and
        ``"source_amplitudes"`` (when there are sources).
    """
    names = list(models)
    lead = models[names[0]]
    if is_torch_array(lead):
        import torch

        inputs = [x.detach().requires_grad_(True) for x in models.values()]
        if amp is not None:
            inputs.append(amp.detach().requires_grad_(True))
        with torch.enable_grad():
            receivers, aux = run(
                tuple(inputs[: len(names)]), inputs[-1] if amp is not None else None
            )
        shape, dtype = tuple(receivers.shape), val.dtype_name(receivers)

        def pullback(d_receivers: Any) -> dict[str, Any]:
            check_cotangent(d_receivers, shape, dtype)
            grads = torch.autograd.grad(
                receivers, inputs, d_receivers, retain_graph=True, allow_unused=True
            )
            grads = [
                torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads, strict=True)
            ]
            out = dict(zip(names, grads[: len(names)], strict=True))
            if amp is not None:
                out["source_amplitudes"] = grads[-1]
            return out

        return receivers.detach(), _detach(aux), pullback
    if is_jax_array(lead):
        import jax

        def f(ms: tuple, amp_: Any) -> Any:
            return run(ms, amp_)

        receivers, vjp_fn, aux = jax.vjp(f, tuple(models.values()), amp, has_aux=True)
        shape, dtype = tuple(receivers.shape), val.dtype_name(receivers)

        def pullback(d_receivers: Any) -> dict[str, Any]:
            check_cotangent(d_receivers, shape, dtype)
            g_models, g_amp = vjp_fn(d_receivers)
            out = dict(zip(names, g_models, strict=True))
            if amp is not None:
                out["source_amplitudes"] = g_amp
            return out

        return receivers, aux, pullback
    lib = "CuPy" if is_cupy_array(lead) else "NumPy"
    if compiled:
        reason = binding_error()
        why = "" if reason is None else f" (sweep._C is not available: {reason}. {binding_fix()})"
        fix = f"use impl='c' (the compiled adjoint) or pass torch or JAX arrays{why}"
    else:
        fix = (
            f"sweep.{equation} has no compiled adjoint yet, so pass torch or JAX arrays "
            "(sweep.vjp differentiates them with their autodiff, or use "
            f"sweep.propagator.torch.PropTorch('{equation}', ...))"
        )
    raise ValueError(
        f"impl='eager' gets its gradients from the array library's autodiff, and {lib} has "
        f"none; {fix}"
    )


def _detach(x: Any) -> Any:
    """``x`` with every torch tensor in it (dicts, lists, tuples) detached."""
    if is_torch_array(x):
        return x.detach()
    if isinstance(x, dict):
        return {k: _detach(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_detach(v) for v in x)
    return x


def compiled_forward(
    engine: Any,
    coeffs: Any,
    amp: Any,
    memory: _memory.MemorySettings | None,
    progress: bool,
    like: Any,
    *,
    callbacks: _callbacks.Callbacks | None = None,
    models: dict[str, Any] | None = None,
    initial_state: dict[str, Any] | None = None,
) -> tuple[Any, dict[str, Any], _memory.MemoryPlan | None, _memory.Tape | None]:
    """Run the forward pass of a compiled stepper of one wavefield.

    Parameters
    ----------
    engine : sweep._compiled.CompiledStepper
        The stepper, whose states have ``u_prev``, ``u`` and per axis
        ``psi`` (a ping-pong pair) and ``zeta`` (:class:`sweep._compiled.FwdState`).
    coeffs, amp
        The model and the source amplitudes in the stepper's layout.
    memory : MemorySettings or None
        The call's memory settings for a gradient run (the plan's strategy
        keeps what the adjoint needs), None for a forward-only run.
    progress : bool
        Show a progress bar.
    like : array
        The caller's model: outputs come back in its library.
    callbacks, models
        The call's callbacks (:mod:`sweep._callbacks`; the forward one sees
        ``u`` and ``u_prev``) and the models they are shown.
    initial_state : dict or None
        A result's ``state`` to restart from (:meth:`FwdState.set_from`).

    Returns
    -------
    receivers, state, plan, tape
        ``state`` holds the final padded ``u_prev``, ``u``, ``psi`` and
        ``zeta``; ``plan`` and ``tape`` are None for a forward-only run.
    """

    def back(x: Any) -> Any:
        return from_kernel_array(x, like)

    def fields(state: Any) -> dict[str, Any]:
        return {"u": back(state.u), "u_prev": back(state.u_prev)}

    def restart(state: Any) -> None:
        state.set_from(initial_state, lambda x: engine.kernel_input(x, name="initial_state"))

    plan = None if memory is None else _memory.plan(engine, memory)
    event = _callbacks.forward_event(callbacks, engine.geom, models or {}, fields)
    stepper = _callbacks.wrap(engine, callbacks, forward=event)
    initial = None if initial_state is None else restart
    receivers, final, tape = _memory.forward(stepper, coeffs, amp, plan, progress, initial)
    state = {
        "u_prev": back(final.u_prev),
        "u": back(final.u),
        "psi": [back(final.psi[ax][0]) for ax in engine.axes],
        "zeta": [back(final.zeta[ax]) for ax in engine.axes],
    }
    return back(receivers), state, plan, tape


def compiled_pullback(
    engine: Any,
    tape: _memory.Tape,
    receivers: Any,
    model_gradients: Callable[[Any], dict[str, Any]],
    *,
    source: bool,
    progress: bool,
    like: Any,
    callbacks: _callbacks.Callbacks | None = None,
    models: dict[str, Any] | None = None,
) -> Callable[[Any], dict[str, Any]]:
    """Return the pullback of a compiled forward pass (:func:`compiled_forward` with a tape).

    ``model_gradients(g)`` maps the stepper's
    :meth:`~sweep._stepper.Stepper.finish_gradient` to the gradients by model
    name (in the kernels' arrays); ``source``: whether there are source
    amplitudes to differentiate.  The backward callback (``callbacks``)
    sees the kernels' adjoint variable (mu = K lambda) at steps t + 1
    (``adjoint``) and t + 2 (``adjoint_prev``) and the model gradients so
    far.  The pullback holds the receivers' shape and dtype only, not the
    result (adapters return the receivers as their output, whose autograd
    node holds the pullback: a reference cycle that would keep the stored
    wavefield alive until a cyclic garbage collection); its ``release()``
    frees the tape now.
    """
    shape, dtype = tuple(receivers.shape), val.dtype_name(receivers)

    def fields(adj: Any) -> dict[str, Any]:
        return {"adjoint": from_kernel_array(adj.lam, like),
                "adjoint_prev": from_kernel_array(adj.lam_prev, like)}  # fmt: skip

    def so_far(adj: Any) -> dict[str, Any]:
        g = engine.finish_gradient(adj, tape.coeffs)
        k = tape.plan.interval
        g = tuple(x * k for x in g) if isinstance(g, tuple) else g * k
        return {name: from_kernel_array(x, like) for name, x in model_gradients(g).items()}

    def pullback(d_receivers: Any) -> dict[str, Any]:
        check_cotangent(d_receivers, shape, dtype)
        d_k = engine.kernel_input(d_receivers, name="the receiver cotangent")
        event = _callbacks.backward_event(callbacks, engine.geom, models or {}, fields, so_far)
        stepper = _callbacks.wrap(engine, callbacks, backward=event)
        g_model, g_src = _memory.backward(
            stepper, tape, d_k, model=True, source=source, progress=progress
        )
        grads = {} if g_model is None else dict(model_gradients(g_model))
        if source:
            grads["source_amplitudes"] = g_src
        return {name: from_kernel_array(g, like) for name, g in grads.items()}

    pullback.release = tape.close  # type: ignore[attr-defined]
    return pullback


def estimate_memory(*args: Any, **kwargs: Any) -> _memory.MemoryEstimate:
    """Estimate the memory of a gradient run without running it.

    ``sweep.estimate_memory(sweep.vrz, vp, z, dx, dt, **keywords)`` takes a
    propagator and exactly its arguments (validated the same way);
    ``sweep.estimate_memory(v, dx, dt, **keywords)`` is the acoustic's.  It
    reports, for the compiled implementation, the estimated peak bytes of a
    forward + adjoint run under each memory strategy, the storage each keeps,
    and the plan the call's own memory keywords would choose; and for the
    eager implementation (gradients from PyTorch or JAX), the peak with and
    without checkpointing.

    Returns
    -------
    MemoryEstimate
        ``.peak`` (bytes under the chosen plan), ``.plan``, ``.strategies``
        (peak bytes per strategy), ``.storage`` and ``.forward_peak`` of the
        compiled implementation; ``.eager`` (an
        :class:`~sweep._eager_memory.EagerMemoryEstimate`: ``.ckpt``, the
        checkpointed peak of ``PropTorch``'s default, ``.plain``, the peak
        keeping the whole graph, ``.ckpt_chunks`` and ``.forward``), or None
        for an equation whose eager residuals are not modelled (VRZ).
    """
    if args and callable(args[0]):
        fn, args = args[0], args[1:]
        estimate = getattr(fn, "__sweep_memory__", None)
        if estimate is None:
            name = getattr(fn, "__name__", repr(fn))
            raise TypeError(
                f"{name} has no memory estimate: estimate_memory takes a sweep propagator with "
                "compiled kernels (sweep.acoustic, sweep.vrz, sweep.lsrtm) and its arguments"
            )
        return estimate(*args, **kwargs)
    from .equations.acoustic import acoustic

    return acoustic.__sweep_memory__(*args, **kwargs)  # type: ignore[attr-defined]


def memory_estimate_of(
    fn: Callable[..., Any],
    prepare: Callable[..., Any],
    stepper: Callable[..., Any],
    args: tuple,
    kwargs: dict[str, Any],
    *,
    eager_states: int | None,
) -> _memory.MemoryEstimate:
    """Estimate the memory of one call of the propagator ``fn``.

    ``prepare`` validates ``fn``'s bound arguments and returns the call (its
    ``geom`` and ``memory``); ``stepper(geom, xp, dtype)`` is the equation's
    compiled stepper, whose sizes the memory planner reads; ``eager_states``
    the coupled wavefields of an eager step (:func:`sweep._eager_memory.eager_memory`),
    or None where the eager path's residuals are not modelled.
    """
    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    call = prepare(**bound.arguments)
    first = next(iter(bound.arguments.values()))  # the first model: its dtype and library
    dtype = np.dtype(val.dtype_name(first))
    xp = __import__("cupy") if is_cupy_array(first) else np
    estimate = _memory.memory_estimate(stepper(call.geom, xp, dtype), call.memory)
    if eager_states is not None:
        estimate.eager = eager_memory(call.geom, dtype.itemsize, states=eager_states)
    return estimate
