"""Finite-difference coefficients: the only place they are defined.

Centred first- and second-derivative weights for accuracy orders 2, 4, 6 and 8
are computed exactly (as fractions) from their closed forms.  Three consumers
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
