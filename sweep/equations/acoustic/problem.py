"""A small random acoustic problem for the registry's contract tests."""

from __future__ import annotations

import numpy as np


def random_models(shape: tuple[int, ...], rng: np.random.Generator, dtype: type) -> dict:
    """Return a velocity ``v`` of 1500-2000 m/s."""
    return {"v": (1500.0 + 500.0 * rng.random(shape)).astype(dtype)}
