"""Framework adapters: :class:`PropTorch` (PyTorch) and :class:`PropJax` (JAX).

The option blocks import without either framework; the adapters are imported
on first access (``sweep.propagator.PropTorch``) or explicitly
(``from sweep.propagator.torch import PropTorch``).
"""

from __future__ import annotations

import importlib
from typing import Any

from .options import BoundaryOptions, CkptOptions, CUDAOptions, EagerOptions, MemoryOptions

__all__ = [
    "BoundaryOptions",
    "CUDAOptions",
    "CkptOptions",
    "EagerOptions",
    "MemoryOptions",
    "PropJax",
    "PropTorch",
]

_LAZY = {"PropTorch": ".torch", "PropJax": ".jax"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
