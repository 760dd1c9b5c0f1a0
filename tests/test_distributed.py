"""sweep.distributed: shot groups on Dask workers, misfits, and a torchrun job of two processes."""

from __future__ import annotations

import importlib.util
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import sweep
from sweep.distributed import (
    QUIET_DASK_CONFIG,
    NpyLoader,
    TorchContext,
    all_reduce,
    gradient,
    l2_misfit,
    local_client,
    misfit_from_jax,
    misfit_from_torch,
    shard,
    shot_groups,
)
from sweep.testing import random_problem

pytest.importorskip("sweep._C", reason="compiled kernels not built")

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "fwi_torchrun.py"


def _problem(n_shots=5, nt=40):
    problem = random_problem(2, np.float32, n_shots=n_shots, n_src=1, n_rec=4, nt=nt)
    v_true = problem.pop("v")
    observed = sweep.acoustic(v_true, **problem).receivers
    v = (v_true * 0.97).astype(np.float32)
    grid_spacing, dt = problem.pop("grid_spacing"), problem.pop("dt")
    return v, grid_spacing, dt, observed, problem


def _serial(v, grid_spacing, dt, observed, problem):
    out, pullback = sweep.vjp(sweep.acoustic, v, grid_spacing, dt, **problem)
    residual = out.receivers - observed
    return 0.5 * float(np.sum(residual.astype(np.float64) ** 2)), pullback(residual)


# -- without a cluster -----------------------------------------------------------------------
def test_shot_groups_and_shard():
    assert shot_groups(7, 3) == [slice(0, 3), slice(3, 5), slice(5, 7)]
    assert shot_groups(2, 5) == [slice(0, 1), slice(1, 2)]
    assert [list(shard(5, r, 2)) for r in range(2)] == [[0, 1, 2], [3, 4]]
    assert list(shard(1, 1, 2)) == []
    with pytest.raises(ValueError, match="n_groups must be a positive integer"):
        shot_groups(4, 0)
    with pytest.raises(ValueError, match="rank must be in"):
        shard(4, 2, 2)


def test_misfits_from_torch_and_jax_match_l2():
    rng = np.random.default_rng(0)
    p, o = (rng.standard_normal((2, 3, 8)).astype(np.float32) for _ in range(2))
    loss, res = l2_misfit(p, o)  # float32 data, as sweep records it (JAX's default too)
    for make, module in ((misfit_from_torch, "torch"), (misfit_from_jax, "jax.numpy")):
        lib = pytest.importorskip(module)
        got_loss, got_res = make(lambda a, b, lib=lib: 0.5 * ((a - b) ** 2).sum())(p, o)
        assert got_loss == pytest.approx(loss, rel=1e-6)
        assert got_res.dtype == np.float32
        np.testing.assert_allclose(got_res, res, rtol=1e-6)


class _FakeClient:
    def scatter(self, *a, **k):
        raise AssertionError("validation must come first")

    submit = scatter


def test_bad_arguments_are_clear_errors():
    v, h, dt, observed, problem = _problem(n_shots=2, nt=10)
    kw = dict(grid_spacing=h, dt=dt, observed=observed, **problem)
    with pytest.raises(TypeError, match=r"client must be a dask\.distributed\.Client"):
        gradient(sweep.acoustic, v, client=object(), **kw)
    with pytest.raises(TypeError, match="sweep propagator"):
        gradient(np.sum, v, client=_FakeClient(), **kw)
    bad = dict(kw, source_locations=problem["source_locations"][:1])
    with pytest.raises(ValueError, match=r"source_locations has .* shots .* observed has 2"):
        gradient(sweep.acoustic, v, client=_FakeClient(), **bad)
    with pytest.raises(ValueError, match="shots_per_group must be a positive integer"):
        gradient(sweep.acoustic, v, client=_FakeClient(), shots_per_group=0, **kw)
    with pytest.raises(ValueError, match="retries"):
        gradient(sweep.acoustic, v, client=_FakeClient(), retries=-1, **kw)
    with pytest.raises(ValueError, match=r"observed must be a NumPy array .* or a loader"):
        gradient(sweep.acoustic, v, client=_FakeClient(), **dict(kw, observed=observed[0]))
    # With a loader the shots are counted from the per-shot keywords, which must agree.
    loader = dict(kw, observed=NpyLoader("observed.npy"))
    loader["receiver_locations"] = problem["receiver_locations"][:1]
    with pytest.raises(ValueError, match=r"receiver_locations has .* but source_amplitudes has 2"):
        gradient(sweep.acoustic, v, client=_FakeClient(), **loader)
    no_shots = {k: x for k, x in loader.items() if k not in sweep.distributed.PER_SHOT_KEYWORDS}
    with pytest.raises(ValueError, match=r"observed is a loader.*give at least one of"):
        gradient(sweep.acoustic, v, client=_FakeClient(), **no_shots)


# -- Dask: a LocalCluster of two worker processes on loopback -----------------------------------
@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    dask = pytest.importorskip("dask")
    # The active memory manager drops the extra replicas of data every 10 ms
    # instead of every 2 s: the race that made a dead worker lose the last copy
    # of scattered models (a cancelled call) then happens nearly every time.
    amm = {"distributed.scheduler.active-memory-manager.interval": "10ms"}
    with dask.config.set(amm):  # local_client: the quiet settings too, so they are tested
        client = local_client(
            2, host="127.0.0.1", dashboard_address=":0", silence_logs=logging.CRITICAL,
            set_as_default=False,  # any free port for the dashboard: never 8787
        )  # fmt: skip
    assert isinstance(client, distributed.Client)
    yield client
    client.close()  # and its cluster


def test_local_client_workers_run_quiet(client):
    """The workers started by local_client have QUIET_DASK_CONFIG, one thread each."""
    import dask

    assert client.nthreads() and set(client.nthreads().values()) == {1}
    got = client.run(lambda: {k: dask.config.get(k) for k in QUIET_DASK_CONFIG})
    assert all(values == QUIET_DASK_CONFIG for values in got.values()), got
    with pytest.raises(ValueError, match="threads_per_worker must be a positive integer"):
        local_client(2, 0)
    # Pinned (the default) when the 2 workers fill this process's cores: one core each.
    cores = sorted(os.sched_getaffinity(0))
    got = sorted(client.run(lambda: sorted(os.sched_getaffinity(0))).values())
    assert got == ([[c] for c in cores] if len(cores) == 2 else [cores, cores])
    if len(cores) != 2:
        with pytest.raises(ValueError, match="pin=True needs worker processes"):
            local_client(2, pin=True)
    with pytest.raises(ValueError, match="pin=True needs worker processes"):
        local_client(len(cores) + 1, pin=True)


def test_dask_gradient_equals_serial_and_repeats_bitwise(client):
    v, h, dt, observed, problem = _problem()
    loss_s, grads_s = _serial(v, h, dt, observed, problem)
    results = []
    for shots_per_group in (None, 1, 1):  # one group per worker; five groups (odd tree)
        kw = dict(grid_spacing=h, dt=dt, observed=observed, shots_per_group=shots_per_group)
        loss, grads = gradient(sweep.acoustic, v, client=client, **kw, **problem)
        assert loss == pytest.approx(loss_s, rel=1e-6)
        assert set(grads) == {"v", "source_amplitudes"}
        scale = np.abs(grads_s["v"]).max()
        np.testing.assert_allclose(grads["v"], grads_s["v"], rtol=0, atol=1e-5 * scale)
        np.testing.assert_allclose(
            grads["source_amplitudes"], grads_s["source_amplitudes"], rtol=1e-5, atol=1e-12
        )
        results.append((loss, grads))
    (l1, g1), (l2, g2) = results[1:]
    assert l1 == l2 and all(np.array_equal(g1[k], g2[k]) for k in g1)  # bitwise


def test_dask_observed_loader_and_large_models_match_the_array_path(client, tmp_path, monkeypatch):
    """Data read on the workers (NpyLoader) and models sent as a task give the same bits."""
    v, h, dt, observed, problem = _problem(n_shots=4)
    kw = dict(grid_spacing=h, dt=dt, client=client, shots_per_group=2, **problem)
    loss, grads = gradient(sweep.acoustic, v, observed=observed, **kw)  # models inside the tasks
    np.save(tmp_path / "observed.npy", observed)
    loss_l, grads_l = gradient(
        sweep.acoustic, v, observed=NpyLoader(tmp_path / "observed.npy"), **kw
    )
    assert loss_l == loss and all(np.array_equal(grads[k], grads_l[k]) for k in grads)
    # Models above the inline limit go once, as a task the groups depend on.
    monkeypatch.setattr(sweep.distributed, "_INLINE_MODEL_BYTES", 0)
    loss_t, grads_t = gradient(sweep.acoustic, v, observed=observed, **kw)
    assert loss_t == loss and all(np.array_equal(grads[k], grads_t[k]) for k in grads)
    # A loader's wrong shape is named, with the shots it was asked for.
    with pytest.raises(ValueError, match=r"observed data of shots (0-1|2-3) have shape"):
        gradient(sweep.acoustic, v, observed=lambda g: observed[g][:, :-1], retries=0, **kw)
    with pytest.raises(RuntimeError, match=r"observed-data loader .* failed for shots (0-1|2-3)"):
        gradient(sweep.acoustic, v, observed=NpyLoader(tmp_path / "missing.npy"), retries=0, **kw)


# Misfits of the tests are local functions: pickle cannot send those by reference, so
# Dask sends them by value (cloudpickle); workers could not import this test module.
def _kill_first(*markers: str):
    """The L2 misfit, except that its first ``len(markers)`` calls kill the worker running it.

    Creating a marker is atomic (``O_EXCL``): with one marker exactly one call dies even
    when two groups reach the misfit at the same moment.
    """

    def misfit(predicted, observed):
        for marker in markers:
            try:
                os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                continue
            os._exit(1)  # the worker process dies mid-task
        return l2_misfit(predicted, observed)

    return misfit


def _within(seconds: float, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, failing the test (not hanging it) after ``seconds``.

    A daemon thread: a call that never returns cannot keep pytest from exiting.
    """
    outcome: dict = {}

    def call():
        try:
            outcome["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the test's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} did not return within {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_dask_a_dead_worker_changes_nothing(client, tmp_path):
    v, h, dt, observed, problem = _problem(n_shots=4)
    kw = dict(grid_spacing=h, dt=dt, observed=observed, client=client, shots_per_group=2)
    loss, grads = gradient(sweep.acoustic, v, **kw, **problem)
    marker = tmp_path / "killed"
    misfit = _kill_first(str(marker))
    loss_k, grads_k = _within(120, gradient, sweep.acoustic, v, misfit=misfit, **kw, **problem)
    assert marker.exists()  # a worker did die
    assert loss_k == loss and all(np.array_equal(grads[k], grads_k[k]) for k in grads)
    client.wait_for_workers(2, timeout=60)
    # The restarted worker is pinned again (the plugin runs on every new worker).  The
    # dead worker may still be listed for a moment, and the new one not yet set up: poll.
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) == 2:
        deadline = time.monotonic() + 60
        while True:
            got = sorted(client.run(lambda: sorted(os.sched_getaffinity(0))).values())
            if got == [[c] for c in cores] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert got == [[c] for c in cores]


@pytest.mark.parametrize("models_as", ["inline", "task"])
def test_dask_every_worker_dead_at_once_changes_nothing(client, tmp_path, monkeypatch, models_as):
    """Both groups' workers die (the first two misfit calls); the restarted workers finish.

    Tasks tied to a worker's address, even loosely, wait forever once every such
    worker is gone (Dask does not hand them to workers that join later).  "task":
    the models travel as a task (large models do), copied to every worker, and are
    lost with the workers: Dask computes them again.
    """
    if models_as == "task":
        monkeypatch.setattr(sweep.distributed, "_INLINE_MODEL_BYTES", 0)
    v, h, dt, observed, problem = _problem(n_shots=4)
    kw = dict(grid_spacing=h, dt=dt, observed=observed, client=client, shots_per_group=2)
    client.wait_for_workers(2, timeout=60)
    loss, grads = gradient(sweep.acoustic, v, **kw, **problem)
    markers = [str(tmp_path / f"killed{i}") for i in range(2)]
    misfit = _kill_first(*markers)
    loss_k, grads_k = _within(120, gradient, sweep.acoustic, v, misfit=misfit, **kw, **problem)
    assert all(os.path.exists(m) for m in markers)  # two workers died
    assert loss_k == loss and all(np.array_equal(grads[k], grads_k[k]) for k in grads)
    client.wait_for_workers(2, timeout=60)


def _weighting():
    def weighted(predicted, observed):
        """A NumPy misfit of the user's own: receivers weighted 1, 2, 3, ..."""
        w = np.arange(1, predicted.shape[1] + 1, dtype=np.float64)[None, :, None]
        r = predicted - observed
        return 0.5 * float(np.sum(w * r.astype(np.float64) ** 2)), (w * r).astype(predicted.dtype)

    return weighted


def test_dask_custom_misfit_progress_and_settings(client, capfd):
    v, h, dt, observed, problem = _problem(n_shots=3)
    out, pullback = sweep.vjp(sweep.acoustic, v, h, dt, **problem)
    weighted = _weighting()
    loss_s, residual = weighted(out.receivers, observed)
    grads_s = pullback(residual)
    loss, grads = gradient(sweep.acoustic, v, grid_spacing=h, dt=dt, observed=observed,
                           client=client, misfit=weighted, progress=True, **problem)  # fmt: skip
    assert loss == pytest.approx(loss_s, rel=1e-6)
    scale = np.abs(grads_s["v"]).max()
    np.testing.assert_allclose(grads["v"], grads_s["v"], rtol=0, atol=1e-5 * scale)
    assert "sweep shot groups" in capfd.readouterr().err
    # sweep.config keywords of this process apply on the workers: debug mode finds the
    # overflow that a source of 3e38 causes, inside the worker's task.
    problem["source_amplitudes"][1, 0, 3] = 3e38
    with sweep.config(debug=True), pytest.raises(FloatingPointError, match="after time step 3"):
        gradient(sweep.acoustic, v, grid_spacing=h, dt=dt, observed=observed, client=client,
                 retries=0, **problem)  # fmt: skip


# -- torch.distributed --------------------------------------------------------------------------
def test_all_reduce_single_process_is_a_no_op():
    torch = pytest.importorskip("torch")
    ctx = TorchContext(0, 1, 0, torch.device("cpu"), None)
    x = torch.ones(3)
    all_reduce(x, ctx)
    assert torch.equal(x, torch.ones(3))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_two_processes_match_one(tmp_path, monkeypatch, capsys):
    """The example FWI under torchrun (2 processes, gloo on loopback) against one process."""
    pytest.importorskip("torch")
    args = ["--iterations", "2", "--shots", "4", "--shape", "30", "60", "--no-progress"]
    # One process: the script's main() here (no torchrun variables: no process group).
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    spec = importlib.util.spec_from_file_location("fwi_torchrun_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the coarse example grid's dispersion warning
        assert example.main([*args, "--out", str(tmp_path / "one.npz")]) == 0
    assert "ranks 1" in capsys.readouterr().out
    # Two processes under torchrun, gloo on loopback, bounded in time.
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    two = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--master_addr=127.0.0.1", f"--master_port={_free_port()}", str(EXAMPLE), *args,
           "--out", str(tmp_path / "two.npz")]  # fmt: skip
    proc = subprocess.run(two, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ranks 2" in proc.stdout and "identical on every rank: True" in proc.stdout
    a, b = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    assert b["misfits"][0] == pytest.approx(a["misfits"][0], rel=1e-6)
    assert a["misfits"][1] < a["misfits"][0] and b["misfits"][1] < b["misfits"][0]
    # The gradient summed over two ranks' shots is the one process's to round-off.
    # (Adam's steps are about lr * sign(gradient), so the models may differ where a
    # gradient is at round-off level; they are not compared.)
    scale = np.abs(a["gradient"]).max()
    np.testing.assert_allclose(b["gradient"], a["gradient"], rtol=0, atol=1e-5 * scale)
