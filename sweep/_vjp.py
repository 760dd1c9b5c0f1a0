"""``sweep.vjp``: forward pass plus pullback for any sweep propagator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def vjp(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Callable[[Any], dict]]:
    """Run propagator ``fn`` and return ``(result, pullback)``.

    ``pullback(d_receivers)`` maps a cotangent of ``result.receivers`` (same
    shape and dtype) to a dict of gradients keyed by argument name, e.g.
    ``{"v": ..., "source_amplitudes": ...}``.  With ``impl="c"`` (the default
    when the compiled binding is present) this is the hand-written discrete
    adjoint and needs nothing beyond NumPy; with ``impl="eager"`` the gradient
    comes from torch or JAX autodiff, so the arrays must be theirs.

    Examples
    --------
    >>> out, pullback = sweep.vjp(sweep.acoustic, v, 5.0, 1e-3, source_amplitudes=amp,
    ...                           source_locations=src, receiver_locations=rec)
    >>> grads = pullback(out.receivers - observed)
    """
    impl = getattr(fn, "__sweep_vjp__", None)
    if impl is None:
        raise TypeError(f"{getattr(fn, '__name__', fn)!r} is not a sweep propagator")
    return impl(*args, **kwargs)
