"""sweep: differentiable wave-equation propagation.

Propagators take NumPy arrays (or CuPy, PyTorch and JAX arrays) and run either
the compiled kernels (``impl="c"``: C/OpenMP on the CPU, CUDA through CuPy) or
the eager Array-API code (``impl="eager"``).  ``sweep.vjp`` gives gradients.
"""

from __future__ import annotations

from . import backend, equations
from ._impl import binding_error
from ._vjp import vjp
from .acoustic import AcousticResult, acoustic, estimate_memory

__version__ = "0.1.0"

__all__ = [
    "AcousticResult",
    "__version__",
    "acoustic",
    "estimate_memory",
    "backend",
    "binding_available",
    "equations",
    "vjp",
]


def binding_available() -> bool:
    """Return True when the compiled kernels (``sweep._C``) import."""
    return binding_error() is None
