"""Finite-difference coefficients: the only place they are defined.

Centred first- and second-derivative weights, and the staggered first
derivative of first-order systems (elastic velocity-stress), for accuracy
orders 2, 4, 6 and 8 are computed exactly (as fractions).  Three consumers
read them from here:

* the eager Array-API kernels (``sweep._eager``) at run time,
* the C kernels, through ``fd_coeffs.h`` which the meson build renders by
  running this file as a script,
* the CUDA kernels, whose run-time source preamble is the same header text.

Run ``python -m sweep._fd OUTPUT.h`` (or ``python sweep/_fd.py OUTPUT.h``) to
write the header.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from functools import cache
from math import factorial

ORDERS: tuple[int, ...] = (2, 4, 6, 8)


def halo(order: int) -> int:
    """Return the stencil half-width (cells on each side) for ``order``."""
    return order // 2


@cache
def first_derivative(order: int) -> tuple[Fraction, ...]:
    """Weights ``c_k`` (k = 1..order/2) of the centred first derivative.

    ``du/dx ~ sum_k c_k (u[i+k] - u[i-k]) / dx``.
    """
    m = _half(order)
    return tuple(
        Fraction((-1) ** (k + 1) * factorial(m) ** 2, k * factorial(m - k) * factorial(m + k))
        for k in range(1, m + 1)
    )


@cache
def second_derivative(order: int) -> tuple[Fraction, ...]:
    """Weights ``c_0, c_1, .., c_m`` of the centred second derivative.

    ``d2u/dx2 ~ (c_0 u[i] + sum_k c_k (u[i+k] + u[i-k])) / dx**2``.
    """
    m = _half(order)
    side = [
        Fraction(
            2 * (-1) ** (k + 1) * factorial(m) ** 2, k * k * factorial(m - k) * factorial(m + k)
        )
        for k in range(1, m + 1)
    ]
    return (-2 * sum(side, Fraction(0)), *side)


@cache
def staggered_first_derivative(order: int) -> tuple[Fraction, ...]:
    """Weights ``c_k`` (k = 1..order/2) of the staggered first derivative.

    ``du/dx (i + 1/2) ~ sum_k c_k (u[i+k] - u[i-k+1]) / dx``: the derivative
    half way between samples (Virieux's grid).  The weights make the stencil
    exact for polynomials up to degree ``order``: ``sum_k 2 c_k (k - 1/2)^p``
    is 1 for ``p = 1`` and 0 for odd ``p = 3 .. order - 1``; solved exactly.
    Order 4 gives the familiar 9/8, -1/24.
    """
    m = _half(order)
    half = Fraction(1, 2)
    rows = [[2 * (k - half) ** p for k in range(1, m + 1)] for p in range(1, 2 * m, 2)]
    rhs = [Fraction(int(p == 1)) for p in range(1, 2 * m, 2)]
    return tuple(_solve(rows, rhs))


def _solve(a: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Exact Gaussian elimination of a small non-singular system."""
    n = len(b)
    a = [[*row, rhs] for row, rhs in zip(a, b, strict=True)]
    for col in range(n):
        piv = next(r for r in range(col, n) if a[r][col] != 0)
        a[col], a[piv] = a[piv], a[col]
        for r in range(n):
            if r != col and a[r][col] != 0:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
    return [a[i][n] / a[i][i] for i in range(n)]


def staggered_spectral_radius(order: int) -> float:
    """Largest eigenvalue of ``-D+ D-`` (the staggered pair) on a unit grid.

    ``(2 sum_k |c_k|)^2``, reached at the Nyquist wavenumber: a staggered
    first-order system is stable while ``(v dt)^2 sum_d rho / dx_d^2 <= 4``,
    the leapfrog condition of :func:`second_derivative_spectral_radius`.
    """
    return float(2 * sum(abs(c) for c in staggered_first_derivative(order))) ** 2


def second_derivative_spectral_radius(order: int) -> float:
    """Largest eigenvalue of ``-d2/dx2`` on a unit grid (reached at the Nyquist wavenumber).

    Used for the CFL limit: leapfrog is stable while ``(v dt)^2 sum_d rho / dx_d^2 <= 4``.
    """
    c = second_derivative(order)
    return float(abs(c[0]) + 2 * sum(abs(x) for x in c[1:]))


def _half(order: int) -> int:
    if order not in ORDERS:
        raise ValueError(f"accuracy must be one of {ORDERS}, got {order!r}")
    return order // 2


def c_header() -> str:
    """Return the C/CUDA header text that defines the coefficients.

    It defines ``SWEEP_D1_<order>`` and ``SWEEP_D2_<order>`` initialiser lists
    (as doubles, rounded once from the exact fractions) for every order.
    """
    lines = [
        "/* Generated from sweep/_fd.py: do not edit. */",
        "#ifndef SWEEP_FD_COEFFS_H",
        "#define SWEEP_FD_COEFFS_H",
    ]
    for order in ORDERS:
        d1 = ", ".join(_c_double(x) for x in first_derivative(order))
        d2 = ", ".join(_c_double(x) for x in second_derivative(order))
        lines.append(f"#define SWEEP_D1_{order} {{{d1}}}")
        lines.append(f"#define SWEEP_D2_{order} {{{d2}}}")
    lines.append("#endif")
    return "\n".join(lines) + "\n"


def _c_double(x: Fraction) -> str:
    return repr(float(x))


def main(argv: list[str]) -> int:
    """Write the C header to the path given on the command line."""
    if len(argv) != 2:
        print("usage: python sweep/_fd.py OUTPUT.h", file=sys.stderr)
        return 2
    with open(argv[1], "w", encoding="utf-8") as fh:
        fh.write(c_header())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
