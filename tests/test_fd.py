"""The FD coefficients: exact on polynomials, and the C header matches them."""

from fractions import Fraction

import pytest

from sweep import _fd


@pytest.mark.parametrize("order", _fd.ORDERS)
def test_second_derivative_exact_on_polynomials(order):
    c = _fd.second_derivative(order)
    for degree in range(order + 2):
        # sum_k c_k ((x+k)^p + (x-k)^p) at x=0 equals p(p-1) x^(p-2) at x=0
        value = c[0] * (0**degree) + sum(
            ck * (Fraction(k) ** degree + Fraction(-k) ** degree) for k, ck in enumerate(c[1:], 1)
        )
        assert value == (2 if degree == 2 else 0)


@pytest.mark.parametrize("order", _fd.ORDERS)
def test_staggered_first_derivative_exact_on_polynomials(order):
    """sum_k c_k ((k - 1/2)^p - (1/2 - k)^p) is d(x^p)/dx at 0 up to degree ``order``."""
    c = _fd.staggered_first_derivative(order)
    half = Fraction(1, 2)
    for degree in range(order + 1):
        value = sum(ck * ((k - half) ** degree - (half - k) ** degree) for k, ck in enumerate(c, 1))
        assert value == (1 if degree == 1 else 0)
    # the next degree is not exact: the order is not higher than claimed
    degree = order + 1
    assert sum(ck * ((k - half) ** degree - (half - k) ** degree) for k, ck in enumerate(c, 1))


def test_staggered_known_weights_and_stability():
    assert _fd.staggered_first_derivative(2) == (1,)
    assert _fd.staggered_first_derivative(4) == (Fraction(9, 8), Fraction(-1, 24))
    # Levander (1988): 4th order, 2D, stable for vp dt / dx < 0.606
    limit = 2 / (2**0.5 * _fd.staggered_spectral_radius(4) ** 0.5)
    assert abs(limit - 0.6061) < 1e-4


@pytest.mark.parametrize("order", _fd.ORDERS)
def test_first_derivative_exact_on_polynomials(order):
    c = _fd.first_derivative(order)
    for degree in range(order + 1):
        value = sum(
            ck * (Fraction(k) ** degree - Fraction(-k) ** degree) for k, ck in enumerate(c, 1)
        )
        assert value == (1 if degree == 1 else 0)


def test_c_header_holds_the_same_doubles():
    header = _fd.c_header()
    for order in _fd.ORDERS:
        for name, coeffs in (
            ("D1", _fd.first_derivative(order)),
            ("D2", _fd.second_derivative(order)),
        ):
            line = next(x for x in header.splitlines() if f"SWEEP_{name}_{order} " in x)
            values = [float(s) for s in line.split("{")[1].rstrip("}").split(",")]
            assert values == [float(c) for c in coeffs]


def test_unsupported_order():
    with pytest.raises(ValueError, match="accuracy must be one of"):
        _fd.second_derivative(3)
