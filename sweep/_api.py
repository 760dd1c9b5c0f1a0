"""Pieces of a NumPy-level propagator that every equation shares.

An equation's public function validates its call with
:func:`sweep._setup.prepare`, runs its engine, and wraps the outputs in a
result; :func:`eager_vjp` gives the gradients of an eager run from the array
library's autodiff (PyTorch or JAX), whatever the equation's models are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _validate as val
from ._impl import IMPLS, binding_error, binding_fix
from ._xp import is_cupy_array, is_jax_array, is_torch_array

__all__ = ["check_cotangent", "eager_only_impl", "eager_vjp"]


def eager_only_impl(impl: str | None, equation: str) -> str:
    """Resolve ``impl`` for an equation that has no compiled kernels yet."""
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of None, 'auto', 'c' or 'eager', got {impl!r}")
    if impl == "c":
        raise ValueError(
            f"sweep.{equation} has no compiled kernels yet, so impl='c' is not available; "
            "use impl='eager' (or None, which chooses it)"
        )
    return "eager"


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
