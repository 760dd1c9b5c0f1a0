"""Debug mode: NaN/Inf checks between kernel calls, index checks, residual validation."""

from __future__ import annotations

import numpy as np
import pytest

import sweep
from sweep import _debug, _grid
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import random_problem

pytest.importorskip("sweep._C", reason="compiled kernels not built")


@pytest.fixture(autouse=True)
def _no_outer_settings(monkeypatch):
    for name in ("SWEEP_DEBUG", "SWEEP_DEBUG_CHECK_EVERY"):
        monkeypatch.delenv(name, raising=False)
    saved = sweep.config.keywords()
    sweep.config.reset()
    yield
    sweep.config.reset()
    sweep.config(**saved)


def _blowing_up(nt=30):
    """One shot whose source overflows float32 at step 3 (validated inputs, all finite)."""
    problem = random_problem(2, np.float32, n_shots=1, n_src=1, n_rec=3, nt=nt)
    problem["source_amplitudes"][:] = 0
    problem["source_amplitudes"][0, 0, 3] = 3e38  # times v^2 dt^2 > 1: infinite
    return problem


def test_off_by_default_and_the_run_is_unchecked():
    out = sweep.acoustic(**_blowing_up(), impl="c")
    assert not np.isfinite(out.receivers).all()  # nobody complained


@pytest.mark.parametrize("how", ("keyword", "variable"))
def test_forward_nan_names_step_and_cell(how, monkeypatch):
    problem = _blowing_up()
    src = tuple(int(x) for x in problem["source_locations"][0, 0])
    if how == "keyword":
        sweep.config(debug=True)
    else:
        monkeypatch.setenv("SWEEP_DEBUG", "1")
    with pytest.raises(FloatingPointError) as info:
        sweep.acoustic(**problem, impl="c")
    message = str(info.value)
    assert "forward wavefield holds -inf after time step 3," in message
    assert f"shot 0, model cell {src}" in message


def test_check_every_k_steps_gives_the_range(monkeypatch):
    monkeypatch.setenv("SWEEP_DEBUG", "yes")
    monkeypatch.setenv("SWEEP_DEBUG_CHECK_EVERY", "5")
    with pytest.raises(FloatingPointError, match="checked after steps 0 to 4"):
        sweep.acoustic(**_blowing_up(), impl="c")


@pytest.mark.parametrize(
    ("memory", "found"),
    [
        (None, "after time step 20, first"),
        (MemoryOptions(strategy="boundary", boundary=BoundaryOptions()),
         "after time step 20, first"),
        (MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=4)),
         "after time step 20, first"),
        # Checkpoint chunks are replayed whole: the check runs after each.
        (MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=3)),
         "after time step 20 .checked after steps 29 to 20"),
    ],
)  # fmt: skip
def test_adjoint_nan_is_found(memory, found):
    problem = random_problem(2, np.float32, n_shots=2, nt=30)
    sweep.config(debug=True)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c", memory=memory)
    residual = np.zeros_like(out.receivers)
    residual[1, 0, 20] = 3e38  # finite, but not once injected
    with pytest.raises(FloatingPointError, match=rf"adjoint wavefield holds .*{found}"):
        pullback(residual)
    residual[1, 0, 20] = np.nan
    with pytest.raises(ValueError, match=r"residual .* holds nan at shot 1, receiver 0, sample 20"):
        pullback(residual)


def test_debug_results_are_those_of_a_plain_run():
    """The checks only read: chunked runs in debug mode give bitwise the same gradient."""
    problem = random_problem(3, np.float32, n_shots=2, nt=25, free_surface=True, accuracy=8)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c")
    d = np.random.default_rng(1).standard_normal(out.receivers.shape).astype(np.float32)
    ref = pullback(d)
    with sweep.config(debug=True, debug_check_every=3):
        out2, pullback2 = sweep.vjp(sweep.acoustic, **problem, impl="c")
        got = pullback2(d)
    assert np.array_equal(out.receivers, out2.receivers)
    for key in ref:
        assert np.array_equal(ref[key], got[key]), key


def test_kernel_indices_are_checked_in_debug_mode(monkeypatch):
    """A layout bug that moves an index into the row padding is caught before any step."""
    problem = random_problem(2, np.float32, n_shots=2, nt=10)
    original = _grid.Geometry.kernel_index

    def shifted(self, idx):
        out = original(self, idx).copy()
        if out.shape[-1] == 3:  # the receivers: the last one into its row's padding
            pitch = self.layout_shape[-1]
            out[-1, -1] = out[-1, -1] // pitch * pitch + self.padded_shape[-1]
        return out

    monkeypatch.setattr(_grid.Geometry, "kernel_index", shifted)
    sweep.acoustic(**problem, impl="c")  # unchecked: wrong data, no error
    sweep.config(debug=True)
    with pytest.raises(IndexError, match=r"sweep debug: receiver 2 of shot 1 has kernel index"):
        sweep.acoustic(**problem, impl="c")


def test_check_indices_accepts_model_cells_only():
    problem = random_problem(3, np.float32, n_shots=1)
    geom = _grid.Geometry(
        ndim=3, order=4, model_shape=(12, 13, 14), spacing=(10.0,) * 3, dt=1e-3, nt=5,
        pml_width=(5,) * 6, free_surface=(False,) * 6, pml_freq=10.0, v_max=2000.0,
        src_loc=problem["source_locations"], rec_loc=problem["receiver_locations"],
    )  # fmt: skip
    p = geom.params()
    corners = np.array([[[0, 0, 0], [11, 12, 13]]])
    _debug.check_indices(p, "source", geom.kernel_index(geom.flat_index(corners)))
    for bad in ([-1, 0, 0], [0, 13, 0], [0, 0, 14]):
        idx = geom.kernel_index(geom.flat_index(np.array([[bad]])))
        with pytest.raises(IndexError, match="source 0 of shot 0"):
            _debug.check_indices(p, "source", idx)
