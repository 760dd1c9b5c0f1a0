"""A small random LSRTM problem for the registry's contract tests."""

from __future__ import annotations

import numpy as np


def random_models(shape: tuple[int, ...], rng: np.random.Generator, dtype: type) -> dict:
    """Background ``vp`` of 1500-2000 m/s and a signed relative perturbation ``mp``."""
    vp = 1500.0 + 500.0 * rng.random(shape)
    mp = 0.1 * rng.standard_normal(shape)
    return {"vp": vp.astype(dtype), "mp": mp.astype(dtype)}
