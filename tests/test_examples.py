"""The examples' smoke modes run, write their figures and improve their objective."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import sweep

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_gpr_inversion_quick(tmp_path):
    """examples/gpr_inversion.py --quick lowers the radargram misfit and moves both models."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("tqdm")
    pytest.importorskip("torch")
    out = tmp_path / "gpr.png"
    result = _load("gpr_inversion").main(["--quick", "--out", str(out), "--no-progress"])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["misfit"][-1] < 0.7 * result["misfit"][0]
    for name in ("epsilon", "sigma"):
        moved = abs(result[name] - result[f"{name}_start"]).max()
        assert moved > 0.01 * abs(result[f"{name}_start"]).max(), name


def test_das_fwi_quick(tmp_path):
    """examples/das_fwi.py --quick runs, writes its figure and lowers the misfit."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("tqdm")
    out = tmp_path / "das.png"
    result = _load("das_fwi").main(["--quick", "--out", str(out), "--no-progress"])
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result["misfit"][-1] < 0.7 * result["misfit"][0]


def test_cuda_graph_benchmark_survey_runs_and_needs_a_gpu(capsys):
    """examples/benchmark_maxwell3d_cuda_graph.py: its survey is a valid maxwell3d call
    (run here on the CPU, small), and without CuPy and a GPU the script says so."""
    module = _load("benchmark_maxwell3d_cuda_graph")
    positional, kw = module.survey((20, 16, 24), 40, np)
    out = sweep.maxwell3d(*positional, **kw)
    assert out.receivers.shape == (2, kw["receiver_locations"].shape[1], 40)
    assert np.abs(out.receivers).max() > 0
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert module.main(["--verify"]) == 2
        assert "needs CuPy and a CUDA GPU" in capsys.readouterr().err
