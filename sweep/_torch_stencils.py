"""The eager path's linear stencil taps on torch tensors, with hand-written VJPs.

Autodiff of a stencil written as shifted slices gives one zero-padded slice
per tap (``slice_backward``) summed into the gradient; under
``torch.compile`` inductor inlines those masked pads into every consumer and
recomputes them per element (the VRZ step's compiled backward: 2.2 MB of
C++, 8x the time of its forward).  Each operator here is linear in its field
(and in its weights), so its VJP is its transpose, written as the same kind
of tap sum over a zero-padded cotangent:

* the second difference ``D2`` (symmetric taps): ``D2^T g = D2(pad g)``;
* the first difference ``D1`` (antisymmetric taps): ``D1^T g = -D1(pad g)``;
* the weighted Laplacian ``L(f, E)`` of :mod:`sweep.equations.vrz.eager`
  (symmetric): ``L^T g = L(pad g, pad E)``, and in its edge weights a
  correlation, ``dE_k = (f_{+k} - f) (g - g_{+k})``.

Every function takes a field with a halo of ``h`` cells along ``axis`` and
returns it without that halo (as :meth:`sweep._eager.EagerBase._tap`).  They
are :class:`torch.autograd.Function` subclasses that dynamo traces, so the
compiled step's backward is the transposed stencil rather than autodiff's
pads; the backward passes are plain tap sums, differentiable again by autograd
(``create_graph=True``).  Values are those of the plain tap sums: the
forward passes run the same operations in the same order.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F


def _along(x: torch.Tensor, axis: int, start: int, stop: int) -> torch.Tensor:
    return x.narrow(axis, start, stop - start)


def _tap(f: torch.Tensor, axis: int, h: int, k: int) -> torch.Tensor:
    return _along(f, axis, h + k, f.shape[axis] - h + k)


def _pad_axis(x: torch.Tensor, axis: int, lo: int, hi: int) -> torch.Tensor:
    widths = [0, 0] * (x.ndim - axis)
    widths[-2], widths[-1] = lo, hi
    return F.pad(x, widths)


def d2_taps(f: torch.Tensor, axis: int, h: int, c: tuple[float, ...]) -> torch.Tensor:
    """``sum_k c_k (f_{+k} + f_{-k})`` (``c[0]`` the centre): the plain tap sum."""
    out = c[0] * _tap(f, axis, h, 0)
    for k, ck in enumerate(c[1:], start=1):
        out = out + ck * (_tap(f, axis, h, k) + _tap(f, axis, h, -k))
    return out


def d1_taps(f: torch.Tensor, axis: int, h: int, c: tuple[float, ...]) -> torch.Tensor:
    """``sum_k c_k (f_{+k} - f_{-k})`` (``c[0]`` the first neighbour's)."""
    out = None
    for k, ck in enumerate(c, start=1):
        term = ck * (_tap(f, axis, h, k) - _tap(f, axis, h, -k))
        out = term if out is None else out + term
    return out


def weighted_taps(f: torch.Tensor, edges: tuple, axis: int, h: int) -> torch.Tensor:
    """``sum_k E_k (f_{+k} - f) + E_k{-k} (f_{-k} - f)``: VRZ's weighted Laplacian."""
    f0 = _tap(f, axis, h, 0)
    out = None
    for k, e in enumerate(edges, start=1):
        term = _tap(e, axis, h, 0) * (_tap(f, axis, h, k) - f0) + _tap(e, axis, h, -k) * (
            _tap(f, axis, h, -k) - f0
        )
        out = term if out is None else out + term
    return out


class _D2(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, f: torch.Tensor, axis: int, h: int, c: tuple) -> torch.Tensor:
        ctx.axis, ctx.h, ctx.c = axis, h, c
        return d2_taps(f, axis, h, c)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple:
        h = ctx.h
        return d2_taps(_pad_axis(g, ctx.axis, 2 * h, 2 * h), ctx.axis, h, ctx.c), None, None, None


class _D1(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, f: torch.Tensor, axis: int, h: int, c: tuple) -> torch.Tensor:
        ctx.axis, ctx.h, ctx.c = axis, h, c
        return d1_taps(f, axis, h, c)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple:
        h = ctx.h
        gp = _pad_axis(g, ctx.axis, 2 * h, 2 * h)
        return -d1_taps(gp, ctx.axis, h, ctx.c), None, None, None


class _Weighted(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, f: torch.Tensor, axis: int, h: int, *edges: torch.Tensor) -> torch.Tensor:
        ctx.axis, ctx.h = axis, h
        ctx.save_for_backward(f, *edges)
        return weighted_taps(f, edges, axis, h)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple:
        f, *edges = ctx.saved_tensors
        axis, h = ctx.axis, ctx.h
        n = f.shape[axis]
        g_f = g_e = None
        if ctx.needs_input_grad[0]:
            padded = [_pad_axis(e, axis, h, h) for e in edges]
            g_f = weighted_taps(_pad_axis(g, axis, 2 * h, 2 * h), padded, axis, h)
        if any(ctx.needs_input_grad[3:]):
            # dE_k(m) = (f(m + k) - f(m)) (g(m) - g(m + k)), g zero-padded to f's
            # extent and both zero beyond it.
            fz = _pad_axis(f, axis, 0, h)
            gz = _pad_axis(g, axis, h, 2 * h)
            g0 = _along(gz, axis, 0, n)
            g_e = [
                ((_along(fz, axis, k, k + n) - f) * (g0 - _along(gz, axis, k, k + n))).sum_to_size(
                    e.shape
                )
                for k, e in enumerate(edges, start=1)
            ]
        else:
            g_e = [None] * len(edges)
        return g_f, None, None, *g_e


def d2(f: torch.Tensor, axis: int, h: int, c: tuple[float, ...]) -> torch.Tensor:
    """:func:`d2_taps` with its transpose as the VJP."""
    return _D2.apply(f, axis, h, c)


def d1(f: torch.Tensor, axis: int, h: int, c: tuple[float, ...]) -> torch.Tensor:
    """:func:`d1_taps` with its transpose as the VJP."""
    return _D1.apply(f, axis, h, c)


def weighted(f: torch.Tensor, edges: list, axis: int, h: int) -> torch.Tensor:
    """:func:`weighted_taps` with its transpose (in ``f``) and correlation (in ``edges``)."""
    return _Weighted.apply(f, axis, h, *edges)
