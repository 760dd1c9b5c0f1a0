"""Run-time settings (sweep.config / SWEEP_* variables): each one, its variable, its effect."""

from __future__ import annotations

import json
import os
import sys
import types
from typing import ClassVar

import numpy as np
import pytest

import sweep
from sweep import _blocking, _compiled, _config, _cuda_backend, _hostmem, _memory, cli
from sweep.testing import random_problem

# name -> (variable text, its value, a keyword value, its value, a bad variable, a bad keyword)
CASES = {
    "n_threads": ("3", 3, 2, 2, "two", -1),
    "memory_fraction": ("0.5", 0.5, 0.25, 0.25, "1.5", 0),
    "memory_limit_host": ("2GiB", 2 << 30, "1.5 kB", 1500, "12 parsecs", -5),
    "memory_limit_device": ("1000", 1000, 4096, 4096, "lots", 2.5),
    "tmpdir": ("/scratch/x", "/scratch/x", "/tmp/y", "/tmp/y", None, 3),
    "store_cache": ("0", False, True, True, "maybe", "2"),
    "time_blocking": ("4,1,24", (4, 1, 24), (2, 2, 8), (2, 2, 8), "fast", "1,2"),
    "simd_rows": ("0", False, 1, True, "yes", 2),
    "cuda_cache": ("off", False, "yes", True, "sometimes", 5),
    "cuda_cache_dir": ("/shared/k", "/shared/k", "/tmp/k", "/tmp/k", None, 1.0),
    "fast_math": ("1", True, False, False, "fast", "very"),
    "debug": ("true", True, True, True, "verbose", 3),
    "debug_check_every": ("10", 10, 4, 4, "0", 0),
}


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    """No SWEEP_* variable of the outer environment and no keyword leaks in or out."""
    for s in _config.SETTINGS:
        monkeypatch.delenv(s.env, raising=False)
    saved = sweep.config.keywords()
    sweep.config.reset()
    yield
    sweep.config.reset()
    sweep.config(**saved)


def test_every_setting_has_a_case_and_a_sweep_variable():
    assert set(CASES) == {s.name for s in _config.SETTINGS}
    names = [s.env for s in _config.SETTINGS]
    assert all(n.startswith("SWEEP_") for n in names) and len(set(names)) == len(names)
    # The variables sweep read before the registry keep their names.
    for old in ("SWEEP_TMPDIR", "SWEEP_SIMD_ROWS", "SWEEP_TIME_BLOCKING", "SWEEP_STORE_CACHE"):
        assert old in names


@pytest.mark.parametrize("name", sorted(CASES))
def test_variable_keyword_default_and_precedence(name, monkeypatch):
    text, from_text, keyword, from_keyword, _, _ = CASES[name]
    setting = next(s for s in _config.SETTINGS if s.name == name)
    default = setting.default_value()
    assert sweep.config.get(name) == default and sweep.config.source(name) == "default"
    monkeypatch.setenv(setting.env, text)
    assert sweep.config.get(name) == from_text
    assert getattr(sweep.config, name) == from_text
    assert sweep.config.source(name) == setting.env
    with sweep.config(**{name: keyword}):  # a keyword wins over the variable
        assert sweep.config.get(name) == from_keyword
        assert sweep.config.source(name) == "sweep.config"
    assert sweep.config.get(name) == from_text  # restored on leaving the block
    sweep.config(**{name: keyword})
    assert sweep.config.get(name) == from_keyword
    sweep.config(**{name: None})  # None goes back to the variable
    assert sweep.config.get(name) == from_text


@pytest.mark.parametrize("name", sorted(CASES))
def test_invalid_values_are_clear_errors(name, monkeypatch):
    _, _, _, _, bad_text, bad_keyword = CASES[name]
    setting = next(s for s in _config.SETTINGS if s.name == name)
    with pytest.raises(ValueError, match=rf"sweep.config\({name}=.*expected"):
        sweep.config(**{name: bad_keyword})
    assert sweep.config.source(name) == "default"  # nothing was set
    if bad_text is not None:
        monkeypatch.setenv(setting.env, bad_text)
        with pytest.raises(ValueError, match=rf"{setting.env}=.*invalid: expected.*fix or unset"):
            sweep.config.get(name)
        row = next(r for r in sweep.config.describe() if r["name"] == name)
        assert row["source"].startswith("invalid:")  # diagnostics still list it


def test_unknown_setting_suggests():
    with pytest.raises(TypeError, match=r"unknown setting 'fastmath'.*'fast_math'"):
        sweep.config(fastmath=True)
    with pytest.raises(AttributeError, match=r"no setting 'debugg'.*'debug'"):
        _ = sweep.config.debugg


def test_a_failed_call_sets_nothing():
    with pytest.raises(ValueError, match="n_threads"):
        sweep.config(debug=True, n_threads=-2)
    assert sweep.config.keywords() == {}


# -- the settings reach the code ---------------------------------------------------------
def _acoustic_engine(monkeypatch, problem):
    seen = {}
    original = _compiled.CompiledAcoustic.__init__

    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        seen["engine"] = self

    monkeypatch.setattr(_compiled.CompiledAcoustic, "__init__", init)
    sweep.acoustic(**problem, impl="c")
    return seen["engine"]


def test_n_threads_is_the_default_thread_count(monkeypatch):
    pytest.importorskip("sweep._C")
    problem = random_problem(2, np.float32, n_shots=1, nt=3)
    problem["v"] = np.full((300, 300), 2000.0, np.float32)  # large enough for threads
    assert _acoustic_engine(monkeypatch, problem).n_threads == 0  # all cores
    monkeypatch.setenv("SWEEP_NUM_THREADS", "3")
    assert _acoustic_engine(monkeypatch, problem).n_threads == 3
    with sweep.config(n_threads=2):
        assert _acoustic_engine(monkeypatch, problem).n_threads == 2
        problem["n_threads"] = 1  # the call's own value wins
        assert _acoustic_engine(monkeypatch, problem).n_threads == 1


def test_memory_budgets_reach_the_planner(monkeypatch):
    problem = random_problem(2, np.float32, nt=50)
    free = sweep.estimate_memory(**problem).plan
    assert free.strategy == "full" and free.storage == "device"
    with sweep.config(memory_limit_host=1000):
        tight = sweep.estimate_memory(**problem).plan
    assert (tight.strategy, tight.storage) != ("full", "device")
    assert "1000" in tight.reason
    monkeypatch.setenv("SWEEP_MEMORY_FRACTION", "1e-12")
    assert (sweep.estimate_memory(**problem).plan.storage) != "device"
    # The call's own limit still wins over both.
    problem["storage_bytes_limit_host"] = 1 << 40
    assert sweep.estimate_memory(**problem).plan.storage == "device"


def test_device_budget_and_fraction(monkeypatch):
    fake_xp = types.SimpleNamespace()
    monkeypatch.setattr(_memory, "_device_available", lambda xp: 1000)
    monkeypatch.setattr(_memory, "_host_available", lambda: 10_000)
    s = _memory.MemorySettings()
    assert _memory.default_limits(fake_xp, s) == (800, 8000)
    with sweep.config(memory_fraction=0.5):
        assert _memory.default_limits(fake_xp, s) == (500, 5000)
    monkeypatch.setenv("SWEEP_MEMORY_LIMIT_DEVICE", "123")
    monkeypatch.setenv("SWEEP_MEMORY_LIMIT_HOST", "456")
    assert _memory.default_limits(fake_xp, s) == (123, 456)
    assert _memory.default_limits(np, s) == (456, 456)  # host arrays: host budget
    s = _memory.MemorySettings(limit_device=7, limit_host=9)
    assert _memory.default_limits(fake_xp, s) == (7, 9)


def test_tmpdir_store_cache_time_blocking_simd_rows(tmp_path):
    from sweep._storage import SnapshotStore

    with sweep.config(tmpdir=tmp_path):
        with SnapshotStore(2, (3, 4), np.float32, mode="disk") as store:
            assert any(p.name.startswith("sweep-") for p in tmp_path.iterdir())
            del store
    assert _hostmem._cache_enabled()
    with sweep.config(store_cache=False):
        assert not _hostmem._cache_enabled()
    assert _blocking.fixed() is None
    with sweep.config(time_blocking="3,2,9"):
        assert _blocking.fixed() == (3, 2, 9)
    with sweep.config(time_blocking="auto"):
        assert _blocking.fixed() is None
    assert _compiled.simd_rows() == 1
    with sweep.config(simd_rows=False):
        assert _compiled.simd_rows() == 0


# -- CUDA compile options and the kernel cache (a stand-in CuPy records the compile) ------
class _FakeModule:
    compiled: ClassVar[list[dict]] = []

    def __init__(self, code, options):
        self.code, self.options = code, options

    def compile(self):
        _FakeModule.compiled.append(
            {
                "code": self.code,
                "options": self.options,
                "dir": os.environ.get("CUPY_CACHE_DIR"),
                "in_memory": os.environ.get("CUPY_CACHE_IN_MEMORY"),
            }
        )


class _FakeDevice:
    def __init__(self, i=0):
        self.id = i

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture
def fake_cupy(monkeypatch):
    cuda = types.SimpleNamespace(
        Device=_FakeDevice,
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 2),
    )
    fake = types.SimpleNamespace(RawModule=_FakeModule, cuda=cuda)
    monkeypatch.setitem(sys.modules, "cupy", fake)
    _FakeModule.compiled = []
    _cuda_backend._module.cache_clear()
    yield _FakeModule.compiled
    _cuda_backend._module.cache_clear()


def _compile_one():
    _cuda_backend._module(2, 4, "<f4", 0, _cuda_backend.kernel_settings())
    return _FakeModule.compiled[-1]


def test_cuda_cache_fast_math_and_debug_reach_the_compile(fake_cupy, tmp_path, monkeypatch):
    monkeypatch.setenv("CUPY_CACHE_DIR", "/users/own/cupy")
    first = _compile_one()
    assert first["dir"] == os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sweep", "cuda"
    )
    assert first["in_memory"] == "0"
    assert "--use_fast_math" not in first["options"]
    assert "#define SWEEP_DEBUG 1" not in first["code"]
    assert os.environ["CUPY_CACHE_DIR"] == "/users/own/cupy"  # only around sweep's compile
    assert "CUPY_CACHE_IN_MEMORY" not in os.environ
    _compile_one()
    assert len(fake_cupy) == 1  # compiled once per process and settings
    monkeypatch.setenv("SWEEP_CUDA_CACHE_DIR", str(tmp_path))
    with sweep.config(fast_math=True, debug=True):
        second = _compile_one()
    assert second["dir"] == str(tmp_path)
    assert "--use_fast_math" in second["options"]
    assert second["code"].startswith("#define SWEEP_DEBUG 1\n")
    with sweep.config(cuda_cache=False):  # a cold start: CuPy compiles in memory only
        assert _compile_one()["in_memory"] == "1"


def test_precompile_compiles_every_specialisation(fake_cupy, tmp_path, capsys):
    with sweep.config(cuda_cache_dir=tmp_path):
        assert cli.main(["precompile"]) == 0
    assert f"compiled 160 CUDA kernel modules into {tmp_path}" in capsys.readouterr().out
    assert len(fake_cupy) == 160  # 5 equations x 2 devices x 2 dims x 4 orders x 2 dtypes
    assert {c["dir"] for c in fake_cupy} == {str(tmp_path)}
    with sweep.config(cuda_cache=False):
        assert cli.main(["precompile"]) == 2
    assert "cache is off" in capsys.readouterr().err


def test_precompile_without_cupy_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "cupy", None)
    assert cli.main(["precompile"]) == 2
    assert "needs CuPy" in capsys.readouterr().err


# -- diagnostics ------------------------------------------------------------------------------
def test_diagnostics_lists_every_setting_and_its_source(monkeypatch, capsys):
    monkeypatch.setenv("SWEEP_NUM_THREADS", "5")
    sweep.config(fast_math=True)
    assert cli.main(["diagnostics"]) == 0
    out = capsys.readouterr().out
    table = out.split("Run-time settings")[1].splitlines()
    rows = {line.split()[0]: line.split() for line in table[3:] if line.strip()}
    assert set(rows) == {s.name for s in _config.SETTINGS}
    assert rows["n_threads"][1:] == ["5", "SWEEP_NUM_THREADS", "SWEEP_NUM_THREADS"]
    assert rows["fast_math"][1:] == ["True", "sweep.config", "SWEEP_FAST_MATH"]
    assert rows["debug"][1:] == ["False", "default", "SWEEP_DEBUG"]
    assert cli.main(["diagnostics", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    by_name = {s["name"]: s for s in info["settings"]}
    assert by_name["n_threads"]["value"] == 5
    assert by_name["n_threads"]["source"] == "SWEEP_NUM_THREADS"
    monkeypatch.setenv("SWEEP_DEBUG", "loud")  # an invalid variable is shown, not raised
    assert cli.main(["diagnostics"]) == 0
    assert "invalid: environment variable SWEEP_DEBUG='loud'" in capsys.readouterr().out
