"""Physics of the acoustic propagator: analytic Green's functions and CPML absorption."""

import numpy as np
import pytest

import sweep
from sweep.testing import greens_2d, greens_3d, relative_error, ricker

# Relative L2 error of the direct arrival against the analytic solution, per order.
GREENS_2D_TOL = {2: 4e-2, 4: 1e-3, 6: 1.5e-3, 8: 1.5e-3}
GREENS_3D_TOL = {2: 6e-2, 4: 2e-3, 6: 2e-3, 8: 2e-3}


@pytest.mark.parametrize("order", (2, 4, 6, 8))
def test_greens_function_2d(order):
    v0, dx, dt, nt, n = 1500.0, 5.0, 5e-4, 500, 160
    amp = ricker(10.0, nt, dt)[None, None]
    centre = n // 2
    offsets = (20, 30, 40)
    rec = np.array([[[centre, centre + o] for o in offsets]])
    res = sweep.acoustic(
        np.full((n, n), v0),
        dx,
        dt,
        source_amplitudes=amp,
        source_locations=np.array([[[centre, centre]]]),
        receiver_locations=rec,
        accuracy=order,
        pml_width=20,
    )
    for i, o in enumerate(offsets):
        ref = greens_2d(amp[0, 0], dt, o * dx, v0, dx * dx)
        assert relative_error(res.receivers[0, i], ref) < GREENS_2D_TOL[order]


@pytest.mark.parametrize("order", (2, 4, 8))
def test_greens_function_3d(order):
    v0, dx, dt, nt, n = 1500.0, 5.0, 5e-4, 360, 50
    amp = ricker(15.0, nt, dt)[None, None]
    c = n // 2
    offsets = (8, 12, 16)
    rec = np.array([[[c, c, c + o] for o in offsets]])
    res = sweep.acoustic(
        np.full((n, n, n), v0),
        dx,
        dt,
        source_amplitudes=amp,
        source_locations=np.array([[[c, c, c]]]),
        receiver_locations=rec,
        accuracy=order,
        pml_width=10,
    )
    for i, o in enumerate(offsets):
        ref = greens_3d(amp[0, 0], dt, o * dx, v0, dx**3)
        assert relative_error(res.receivers[0, i], ref) < GREENS_3D_TOL[order]


def _boundary_error(order, width, n_threads=None):
    """Max difference to a domain large enough that no boundary is seen."""
    v0, dx, dt, nt, n, far = 2000.0, 5.0, 5e-4, 700, 60, 100
    amp = ricker(12.0, nt, dt)[None, None]
    src = np.array([[[n // 2, n // 2]]])
    rec = np.array([[[n // 2, 5], [5, 5], [n // 2, n // 2 + 10]]])
    kw = {"source_amplitudes": amp, "accuracy": order, "pml_width": width}
    small = sweep.acoustic(
        np.full((n, n), v0), dx, dt, source_locations=src, receiver_locations=rec, **kw
    ).receivers
    big = sweep.acoustic(
        np.full((n + 2 * far,) * 2, v0),
        dx,
        dt,
        source_locations=src + far,
        receiver_locations=rec + far,
        **kw,
    ).receivers
    return np.abs(small - big).max() / np.abs(big).max()


@pytest.mark.parametrize("order", (2, 4, 8))
def test_cpml_reflections_are_small(order):
    """Measured here: 3.4e-3 / 1.9e-3 / 1.7e-3 (orders 2/4/8) for 20 cells."""
    err20 = _boundary_error(order, 20)
    assert err20 < 5e-3
    assert _boundary_error(order, 40) < 0.25 * err20
    assert _boundary_error(order, 0) > 0.5  # without CPML the edge reflects everything


def test_free_surface_reflects_with_opposite_polarity():
    """A pressure-free surface is a mirror with reflection coefficient -1."""
    v0, dx, dt, nt = 1500.0, 5.0, 5e-4, 700
    amp = ricker(12.0, nt, dt)[None, None]
    depth = 30
    kw = {"source_amplitudes": amp, "accuracy": 8, "pml_width": 20}
    src = np.array([[[depth, 100]]])
    rec = np.array([[[depth, 100]]])
    with_fs = sweep.acoustic(
        np.full((150, 200), v0),
        dx,
        dt,
        source_locations=src,
        receiver_locations=rec,
        free_surface=True,
        **kw,
    ).receivers[0, 0]
    without = sweep.acoustic(
        np.full((150, 200), v0), dx, dt, source_locations=src, receiver_locations=rec, **kw
    ).receivers[0, 0]
    reflected = with_fs - without
    # Image source at distance 2 * depth cells with negated amplitude.
    ref = -greens_2d(amp[0, 0], dt, 2 * depth * dx, v0, dx * dx)
    assert relative_error(reflected, ref) < 2e-2
