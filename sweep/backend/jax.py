"""JAX backend introspection (imports JAX only when asked about devices)."""

from __future__ import annotations

import importlib.util

__all__ = ["is_available"]


def is_available() -> bool:
    """Return True when JAX is installed (checked without importing it)."""
    return importlib.util.find_spec("jax") is not None
