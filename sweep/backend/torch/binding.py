"""The compiled binding ``sweep._C``: availability and diagnostics."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import platform
import sys
from typing import Any

__all__ = ["diagnostics", "is_available"]


def is_available() -> bool:
    """Return True when the compiled kernels (``sweep._C``) import."""
    from ... import _impl

    return _impl.binding_error() is None


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cupy() -> dict[str, Any]:
    out: dict[str, Any] = {"cupy_version": None, "cupy_cuda_devices": 0, "cupy_error": None}
    if importlib.util.find_spec("cupy") is None:
        out["cupy_error"] = "CuPy is not installed"
        return out
    try:
        import cupy

        out["cupy_version"] = cupy.__version__
        out["cupy_cuda_devices"] = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # CUDA driver or runtime missing: report, never raise
        out["cupy_error"] = f"{type(exc).__name__}: {exc}"
    return out


def diagnostics() -> dict[str, Any]:
    """Describe the compiled binding and the environment around it.

    Returns
    -------
    dict
        ``binding_available`` (bool), ``binding_error`` (why ``sweep._C`` does
        not import, or None), ``binding_path``, ``openmp_enabled``,
        ``openmp_max_threads``, ``cupy_version``, ``cupy_cuda_devices``,
        ``cupy_error``, ``torch_cuda_available``, ``torch_cuda_devices``,
        and the versions of sweep, Python, NumPy, PyTorch and JAX (None when
        not installed).
    """
    from ... import __version__, _impl
    from . import cuda

    error = _impl.binding_error()
    info: dict[str, Any] = {
        "binding_available": error is None,
        "binding_error": error,
        "binding_path": None,
        "openmp_enabled": None,
        "openmp_max_threads": None,
    }
    if error is None:
        from ... import _C

        info["binding_path"] = getattr(_C, "__file__", None)
        info["openmp_enabled"] = bool(_C.openmp_enabled())
        info["openmp_max_threads"] = int(_C.max_threads())
    info.update(_cupy())
    info["torch_cuda_available"] = cuda.is_available()
    info["torch_cuda_devices"] = cuda.device_count()
    info.update(
        {
            "sweep_version": __version__,
            "python_version": sys.version.split()[0],
            "platform": platform.platform(),
            "numpy_version": _version("numpy"),
            "torch_version": _version("torch"),
            "jax_version": _version("jax"),
            "jaxlib_version": _version("jaxlib"),
        }
    )
    return info
