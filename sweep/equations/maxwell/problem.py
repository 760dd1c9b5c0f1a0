"""A small random radar problem for the registry's contract tests."""

from __future__ import annotations

import numpy as np


def random_models(shape: tuple[int, ...], rng: np.random.Generator, dtype: type) -> dict:
    """``epsilon`` of 1.5-4, ``sigma`` of 1-10 mS/m, ``mu`` of 1-1.2."""
    epsilon = 1.5 + 2.5 * rng.random(shape)
    sigma = 1e-3 + 9e-3 * rng.random(shape)
    mu = 1.0 + 0.2 * rng.random(shape)
    return {
        "epsilon": epsilon.astype(dtype),
        "sigma": sigma.astype(dtype),
        "mu": mu.astype(dtype),
    }


def settings(ndim: int) -> dict:
    """Grid, time step, wavelet and C-PML scales of the problem (radar, not seismic, units).

    5 mm cells, an 8 ps step (the CFL limit is 9.6 ps at order 8 in 3D with
    ``epsilon mu >= 1.5``) and a 10 GHz Ricker wavelet (2.7 cells per
    wavelength in the slowest medium: coarse, but these problems test exact
    adjoints, not accuracy), so that 40 steps carry a signal; ``max_vel`` and
    ``pml_freq`` are fixed as the contract tests need.
    """
    return {
        "grid_spacing": 5e-3,
        "dt": 8e-12,
        "peak_freq": 1e10,
        "max_vel": 2.5e8,
        "pml_freq": 1e10,
    }
