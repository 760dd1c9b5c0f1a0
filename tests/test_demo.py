"""The FWI demo (python -m sweep.demo) runs, writes its figure and fits the data."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sweep import demo


@pytest.fixture(autouse=True)
def _restore_omp_env(monkeypatch):
    # main() sets OMP_WAIT_POLICY when it is unset; undo that after each test.
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)


def test_demo_main_writes_png_and_reduces_misfit(tmp_path, capsys):
    out = tmp_path / "fwi.png"
    code = demo.main(["--out", str(out), "--iterations", "2", "--threads", "1"])
    assert code == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 10_000
    printed = capsys.readouterr().out
    misfits = [float(m) for m in re.findall(r"misfit (\d+\.\d+)", printed)]
    # The start (1.0), two iterations, and the final summary line.
    assert len(misfits) == 4
    assert misfits[0] == 1.0
    assert misfits[1] < misfits[0] and misfits[2] < misfits[1]
    assert misfits[2] < 0.9
    assert f"wrote {out}" in printed


def test_demo_quiet_prints_nothing(tmp_path, capsys):
    out = tmp_path / "quiet.png"
    assert demo.main(["--out", str(out), "--iterations", "0", "--quiet", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    assert out.exists()


def test_run_fwi_improves_model():
    config = demo.DemoConfig(
        shape=(40, 100),
        n_shots=3,
        receiver_spacing=3,
        record_time=0.6,
        iterations=4,
        freqs=(6.0, 9.0),
        n_threads=1,
    )
    result = demo.run_fwi(config, progress=False, log=None)
    assert result.v_inv.shape == config.shape
    assert demo.V_MIN <= result.v_inv.min() and result.v_inv.max() <= demo.V_MAX
    assert result.bands == [6.0] * 3 + [9.0] * 3
    assert result.iteration == [0, 1, 2, 2, 3, 4]
    misfit = np.asarray(result.misfit)
    # Misfit falls within each band; the model moves towards the true one.
    assert misfit[2] < 0.8 * misfit[0] and misfit[5] < misfit[3]
    assert result.model_error[-1] < result.model_error[0] == 1.0
    err_start = np.linalg.norm(result.v_init - result.v_true)
    err_end = np.linalg.norm(result.v_inv - result.v_true)
    assert err_end == pytest.approx(result.model_error[-1] * err_start)


def test_demo_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit):
        demo.main(["--iterations", "-1"])
    with pytest.raises(SystemExit):
        demo.main(["--threads", "0"])
    capsys.readouterr()


def test_demo_time_step_is_stable():
    from sweep import _validate

    config = demo.DemoConfig()
    dt = demo._stable_dt(config)
    limit = _validate.cfl_limit(demo.V_MAX, (config.spacing,) * 2, config.accuracy)
    assert 0.5 * limit < dt < limit
