"""Backend introspection: which frameworks, devices and compiled kernels are usable.

>>> import sweep
>>> sweep.backend.torch.is_available()          # PyTorch importable
>>> sweep.backend.jax.is_available()            # JAX importable
>>> sweep.backend.torch.cuda.is_available()     # PyTorch sees a CUDA device
>>> sweep.backend.torch.binding.is_available()  # sweep._C imports
>>> sweep.backend.torch.binding.diagnostics()   # dict: why (not), threads, versions

Importing this package imports neither torch nor jax; only the functions that
need them (``torch.cuda.is_available``, ``binding.diagnostics``) do, when called.
"""

from __future__ import annotations

from . import jax, torch

__all__ = ["jax", "torch"]
