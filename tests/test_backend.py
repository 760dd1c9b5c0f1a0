"""Backend introspection: sweep.backend.{torch,jax}, CUDA visibility and binding diagnostics."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

import sweep
import sweep.backend
from sweep import _impl

EXPECTED_KEYS = {
    "binding_available",
    "binding_error",
    "binding_path",
    "openmp_enabled",
    "openmp_max_threads",
    "cupy_version",
    "cupy_cuda_devices",
    "cupy_error",
    "torch_cuda_available",
    "torch_cuda_devices",
    "sweep_version",
    "python_version",
    "platform",
    "numpy_version",
    "torch_version",
    "jax_version",
    "jaxlib_version",
}


def test_framework_availability_matches_installation():
    assert sweep.backend.torch.is_available() == (importlib.util.find_spec("torch") is not None)
    assert sweep.backend.jax.is_available() == (importlib.util.find_spec("jax") is not None)


def test_importing_sweep_and_backend_imports_no_framework():
    code = (
        "import sys, sweep, sweep.backend, sweep.equations, sweep.propagator, sweep.cli\n"
        "sweep.backend.torch.is_available(); sweep.backend.jax.is_available()\n"
        "sweep.backend.torch.binding.is_available()\n"
        "print('torch' in sys.modules, 'jax' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_torch_cuda_is_available():
    torch = pytest.importorskip("torch")
    assert sweep.backend.torch.cuda.is_available() == torch.cuda.is_available()
    assert sweep.backend.torch.cuda.device_count() == torch.cuda.device_count()


def test_binding_is_available_follows_import():
    assert sweep.backend.torch.binding.is_available() == sweep.binding_available()


def test_diagnostics_keys_and_consistency():
    info = sweep.backend.torch.binding.diagnostics()
    assert set(info) == EXPECTED_KEYS
    assert info["sweep_version"] == sweep.__version__
    assert info["binding_available"] == sweep.binding_available()
    if info["binding_available"]:
        assert info["binding_error"] is None
        assert isinstance(info["openmp_enabled"], bool)
        assert info["openmp_max_threads"] >= 1
        assert info["binding_path"]
    assert isinstance(info["cupy_cuda_devices"], int)
    if info["cupy_version"] is None:
        assert info["cupy_error"]


def test_diagnostics_when_binding_hidden(monkeypatch):
    monkeypatch.setattr(_impl, "binding_error", lambda: "ImportError: hidden for the test")
    assert sweep.backend.torch.binding.is_available() is False
    info = sweep.backend.torch.binding.diagnostics()
    assert info["binding_available"] is False
    assert info["binding_error"] == "ImportError: hidden for the test"
    assert info["openmp_enabled"] is None
    assert info["openmp_max_threads"] is None


def test_binding_error_when_module_blocked(monkeypatch):
    monkeypatch.delattr(sweep, "_C", raising=False)
    monkeypatch.setitem(sys.modules, "sweep._C", None)
    assert sweep.backend.torch.binding.is_available() is False
    reason = sweep.backend.torch.binding.diagnostics()["binding_error"]
    assert "sweep._C" in reason
