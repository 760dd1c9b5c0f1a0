"""The compiled runs of the staggered first-order systems (elastic, Maxwell).

Both step single-cell point terms (:class:`sweep._points.KernelTerms`: the
engine's ``sources`` and ``receivers``, and its ``record_columns`` /
``record_terms_transpose`` for what the receivers add after the kernels) in
place with hand-written adjoints; what differs is the engine, the model
names, the result and the chain rule from the kernels' coefficients to the
models, which the equation passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _callbacks, _memory
from . import _validate as val
from ._api import check_cotangent
from ._setup import Call
from ._warn import warn_user
from ._xp import from_kernel_array, kernel_array, to_host


def graph_ignored(why: str) -> None:
    """Warn that ``experimental_cuda_graph=True`` does not apply to this call, and why."""
    warn_user(
        f"experimental_cuda_graph=True is ignored {why}: CUDA graphs replay forward runs of "
        "the compiled kernels on CuPy arrays only"
    )


def run_compiled(
    call: Call,
    names: tuple[str, ...],
    make_engine: Callable[[Any, Any], Any],
    result: Callable[[Call, Any, dict[str, Any]], Any],
    *,
    gradient: bool,
) -> tuple[Any, Any]:
    """Run the compiled forward pass (with a tape for the adjoint when ``gradient``).

    ``make_engine(xp, dtype)`` builds the stepper (``xp``: NumPy, or CuPy
    for the CUDA kernels, as the models are), ``result(call, receivers,
    state)`` the equation's result.  Returns the result and ``(engine, tape,
    models)`` (models as NumPy arrays of the compute dtype, in ``names``'
    order).  The point terms' maps and the models' chain rule run on the host.
    """
    g = call.geom
    like = call.models[names[0]]
    dtype = val.dtype_name(like)
    models = [kernel_array(call.models[k], dtype, name=k) for k in names]
    xp = np if isinstance(models[0], np.ndarray) else __import__("cupy")
    engine = make_engine(xp, models[0].dtype)
    if xp is not np:  # CuPy models: the CUDA kernels (the coefficients are set up on the host)
        models = [to_host(m) for m in models]
    amp = None
    if call.amp is not None and g.n_src:
        a = kernel_array(call.amp, engine.dtype, name="source_amplitudes", xp=np)
        amp = engine.kernel_input(
            engine.sources.to_terms(a).astype(engine.dtype), name="source_amplitudes"
        )
    if call.cuda_graph:
        if gradient:
            graph_ignored("when gradients are requested")
        elif xp is np:
            graph_ignored("on the CPU (NumPy arrays)")
        else:
            engine.cuda_graph = True
    coeffs = engine.kernel_coefficients(*models)
    plan = _memory.plan(engine, call.memory) if gradient else None

    def restart(state: Any) -> None:
        state.load_from(call.initial_state)

    def fields(state: Any) -> dict[str, Any]:
        return engine.state_dict(state, like, memory=False, copy=False)  # edits count

    event = _callbacks.forward_event(call.callbacks, g, call.models or {}, fields)
    stepper = _callbacks.wrap(engine, call.callbacks, forward=event)
    initial = None if call.initial_state is None else restart
    rec_terms, final, tape = _memory.forward(stepper, coeffs, amp, plan, call.progress, initial)
    receivers = engine.kernel_input(
        engine.record_columns(to_host(rec_terms)).astype(engine.dtype), name="receivers"
    )
    # Without a gradient nothing steps the final state again: the result takes
    # its arrays (copies of the 3D benchmark's 27 took 0.35 s of a 2.6 s call).
    state = engine.state_dict(final, like, copy=gradient)
    out = result(call, from_kernel_array(receivers, like), state)
    out.memory_plan = plan
    return out, (engine, tape, models)


def compiled_vjp(
    call: Call,
    forward: tuple[Any, Any],
    names: tuple[str, ...],
    model_gradients: Callable[..., dict[str, Any]],
) -> tuple[Any, Callable[[Any], dict[str, Any]]]:
    """Return the forward result of :func:`run_compiled` and the pullback of its adjoint.

    ``model_gradients(engine, g_coefficients, *models)``: the chain rule from
    the kernels' coefficients (:meth:`finish_gradient`) to the models.
    """
    result, (engine, tape, models) = forward
    like, g = call.models[names[0]], call.geom
    shape, dtype = tuple(result.receivers.shape), val.dtype_name(result.receivers)
    source = call.amp is not None

    def on_device(x: Any) -> Any:
        """Return a host result on the engine's device, in the library of the caller's models."""
        return from_kernel_array(engine.kernel_input(x, name="gradient"), like)

    def pullback(d_receivers: Any) -> dict[str, Any]:
        check_cotangent(d_receivers, shape, dtype)
        d = kernel_array(d_receivers, engine.dtype, name="the receiver cotangent", xp=np)
        d_terms = engine.kernel_input(
            engine.record_terms_transpose(d).astype(engine.dtype), name="cotangent"
        )

        def fields(adj: Any) -> dict[str, Any]:
            return engine.state_dict(adj, like, memory=False, copy=False)

        def so_far(adj: Any) -> dict[str, Any]:
            k = tape.plan.interval
            g = tuple(x * k for x in engine.finish_gradient(adj, tape.coeffs))
            grads = model_gradients(engine, g, *models)
            return {name: on_device(x) for name, x in grads.items()}

        event = _callbacks.backward_event(call.callbacks, g, call.models, fields, so_far)
        stepper = _callbacks.wrap(engine, call.callbacks, backward=event)
        g_model, g_src = _memory.backward(
            stepper, tape, d_terms, model=True, source=source and g.n_src > 0,
            progress=call.progress,
        )  # fmt: skip
        grads = {} if g_model is None else dict(model_gradients(engine, g_model, *models))
        if source:
            if call.geom.n_src:
                g_amp = engine.sources.to_columns(to_host(g_src)).astype(engine.dtype)
            else:
                g_amp = np.zeros(tuple(call.amp.shape), dtype=engine.dtype)
            grads["source_amplitudes"] = g_amp
        return {name: on_device(x) for name, x in grads.items()}

    pullback.release = tape.close  # type: ignore[attr-defined]
    return result, pullback
