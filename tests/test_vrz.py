"""sweep.vrz against sweep.acoustic and against the physics of a density contrast."""

import numpy as np
import pytest

import sweep
from sweep.testing import random_problem, ricker


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("accuracy", [2, 4, 6, 8])
def test_constant_density_is_acoustic(ndim, accuracy):
    """With z proportional to vp, VRZ is the acoustic equation (CPML and free surface too)."""
    problem = random_problem(ndim, np.float64, accuracy=accuracy, free_surface=True, nt=80)
    v = problem.pop("v")
    want = sweep.acoustic(v, **problem, impl="c")
    got = sweep.vrz(v, 1700.0 * v, **problem)
    scale = np.abs(want.receivers).max()
    np.testing.assert_allclose(got.receivers, want.receivers, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(got.wavefield, want.wavefield, rtol=0,
                               atol=1e-12 * np.abs(want.wavefield).max())  # fmt: skip


def _density_run(rho, source, kw):
    vp = np.full(rho.shape, 2000.0)
    return sweep.vrz(vp, vp * rho, 5.0, 5e-4, source_locations=np.array([[source]]), **kw)


def test_density_contrast_reflects_with_the_impedance_coefficient():
    """Equal velocities, rho1 over rho2: the reflection is R times the mirror source's field.

    R = (rho2 - rho1) / (rho2 + rho1) at every angle (0-50 degrees here; the error
    is second order in the grid spacing: about 1 % at 16 cells per wavelength,
    4 % at 8, measured).  The interface lies
    midway between the last rho1 row and the first rho2 row, so the mirror
    image of a source at row zs is at row 2 * zi - 1 - zs.
    """
    nz, nx, zi, zs, xs = 130, 150, 75, 45, 40
    rho1, rho2 = 1000.0, 2500.0
    r = (rho2 - rho1) / (rho2 + rho1)
    xr = np.arange(xs, nx - 30, 8)
    nt = 800
    kw = dict(
        source_amplitudes=ricker(12.5, nt, 5e-4)[None, None],
        receiver_locations=np.array([[[zs, x] for x in xr]]),
        accuracy=8,
        pml_width=20,
        max_vel=2000.0,
        pml_freq=12.5,
    )
    layered = np.where(np.arange(nz)[:, None] >= zi, rho2, rho1) * np.ones((1, nx))
    total = _density_run(layered, [zs, xs], kw).receivers[0]
    direct = _density_run(np.full((nz, nx), rho1), [zs, xs], kw).receivers[0]
    image = _density_run(np.full((nz, nx), rho1), [2 * zi - 1 - zs, xs], kw).receivers[0]
    reflected = total - direct
    angles = np.degrees(np.arctan2(xr - xs, 2 * (zi - 0.5 - zs)))
    assert angles.max() > 45
    for i in range(len(xr)):
        err = np.linalg.norm(reflected[i] - r * image[i]) / np.linalg.norm(r * image[i])
        assert err < 0.015, (angles[i], err)
