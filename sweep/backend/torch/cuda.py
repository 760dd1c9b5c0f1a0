"""Whether PyTorch can see a CUDA device (a device choice, not a separate backend)."""

from __future__ import annotations

import importlib.util

__all__ = ["device_count", "is_available"]


def is_available() -> bool:
    """Return True when PyTorch is installed and ``torch.cuda.is_available()``.

    This imports torch (on first call) but answers only whether PyTorch sees
    CUDA; whether sweep's CUDA kernels can run also needs CuPy (see
    :func:`sweep.backend.torch.binding.diagnostics`).
    """
    if importlib.util.find_spec("torch") is None:
        return False
    try:
        import torch
    except (ImportError, OSError):  # installed but broken (e.g. missing shared libraries)
        return False
    return bool(torch.cuda.is_available())


def device_count() -> int:
    """Return the number of CUDA devices PyTorch sees (0 without PyTorch)."""
    if not is_available():
        return 0
    import torch

    return int(torch.cuda.device_count())
