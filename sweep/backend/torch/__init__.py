"""PyTorch backend introspection; ``cuda`` and ``binding`` are submodules."""

from __future__ import annotations

import importlib.util

from . import binding, cuda

__all__ = ["binding", "cuda", "is_available"]


def is_available() -> bool:
    """Return True when PyTorch is installed (checked without importing it)."""
    return importlib.util.find_spec("torch") is not None
