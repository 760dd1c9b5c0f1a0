"""A small random elastic problem for the registry's contract tests."""

from __future__ import annotations

import numpy as np


def random_models(shape: tuple[int, ...], rng: np.random.Generator, dtype: type) -> dict:
    """``vp`` of 1500-2000 m/s, ``vs = vp / (1.7 to 2.2)``, ``rho`` of 1000-1600 kg/m^3."""
    vp = 1500.0 + 500.0 * rng.random(shape)
    vs = vp / (1.7 + 0.5 * rng.random(shape))
    rho = 1000.0 + 600.0 * rng.random(shape)
    return {"vp": vp.astype(dtype), "vs": vs.astype(dtype), "rho": rho.astype(dtype)}
