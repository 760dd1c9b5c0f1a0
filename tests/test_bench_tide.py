"""benchmarks/bench_tide.py without TIDE: arguments, sweep's worker and the trace comparison."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_tide.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_tide", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_help_and_bad_arguments(bench, capsys, tmp_path):
    """--help describes the peers; unknown cases, modes and a missing TIDE interpreter are named."""
    with pytest.raises(SystemExit) as e:
        bench.main(["--help"])
    assert e.value.code == 0
    assert "--tide-python" in capsys.readouterr().out
    for argv, word in (
        (["--cases", "tm2d-o5"], "tm2d-o5"),
        (["--modes", "adjoint"], "adjoint"),
        (["--tide-python", str(tmp_path / "none")], "does not exist"),
    ):
        with pytest.raises(SystemExit) as e:
            bench.main(argv)
        assert e.value.code == 2
        assert word in capsys.readouterr().err


@pytest.mark.parametrize("case,mode", [("tm2d-o4", "fwd"), ("mx3d-o2", "grad")])
def test_sweep_worker_quick(bench, case, mode, tmp_path):
    """sweep's side of a measurement runs at the smoke sizes and saves (shots, receivers, nt)."""
    pytest.importorskip("torch")
    save = tmp_path / "rec.npy"
    r = bench.worker("sweep", case, mode, 1, 1, True, str(save))
    p = bench._problem(case, mode, True)
    assert r["best_s"] > 0 and r["cells"] == p["cells"]
    rec = np.load(save)
    assert rec.shape == (p["src"].shape[0], p["rec"].shape[1], p["nt"])
    assert np.isfinite(rec).all() and np.abs(rec).max() > 0


def test_compare_finds_lag_and_scale(bench):
    """A delayed, scaled copy correlates to 1 at its lag; TIDE's time-first layout is moved."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 50))
    b = np.zeros_like(a)
    b[..., 2:] = -0.5 * a[..., :-2]
    got = bench.compare(a, -b)
    assert got["lag"] == 2 and got["corr"] == pytest.approx(1.0)
    assert got["amp_ratio"] == pytest.approx(0.5)
    p = {"src": np.zeros((2, 1, 2)), "rec": np.zeros((2, 3, 2)), "nt": 50}
    assert np.array_equal(bench._receivers(np.moveaxis(a, -1, 0), p), a)
    with pytest.raises(ValueError, match="expected"):
        bench._receivers(a[..., :10], p)
