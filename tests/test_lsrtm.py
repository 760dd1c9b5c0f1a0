"""sweep.lsrtm: the Jacobian of sweep.acoustic, and migration as its transpose."""

import numpy as np
import pytest

import sweep
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import edge_acquisition, random_problem

torch = pytest.importorskip("torch")


def _problem(ndim, **kw):
    problem = random_problem(ndim, np.float64, equation="lsrtm", nt=60, **kw)
    return problem.pop("vp"), problem.pop("mp"), problem


@pytest.mark.parametrize(("ndim", "free"), [(2, True), (2, False), (3, False)])
def test_born_data_is_the_jacobian_of_acoustic(ndim, free):
    vp, mp, problem = _problem(ndim, free_surface=free, accuracy=8 if ndim == 2 else 4)
    born = sweep.lsrtm(vp, mp, **problem)
    h = 1e-4
    plus = sweep.acoustic(vp * (1 + h * mp), **problem, impl="c").receivers
    minus = sweep.acoustic(vp * (1 - h * mp), **problem, impl="c").receivers
    fd = (plus - minus) / (2 * h)
    assert np.abs(fd - born.receivers).max() <= 1e-7 * np.abs(born.receivers).max()
    background = sweep.acoustic(vp, **problem, impl="c").receivers
    np.testing.assert_allclose(born.background_receivers, background, rtol=0,
                               atol=1e-12 * np.abs(background).max())  # fmt: skip


def test_born_data_is_linear_in_the_perturbation():
    vp, mp, problem = _problem(2)
    one = sweep.lsrtm(vp, mp, **problem).receivers
    three = sweep.lsrtm(vp, -3.0 * mp, **problem).receivers
    np.testing.assert_allclose(three, -3.0 * one, rtol=0, atol=1e-13 * np.abs(three).max())
    assert not np.any(sweep.lsrtm(vp, np.zeros_like(mp), **problem).receivers)


@pytest.mark.parametrize("ndim", [2, 3])
def test_migration_is_the_transpose_of_born(ndim):
    """<d, B mp> = <B^T d, mp>: the mp gradient is the migration image."""
    vp, mp, problem = _problem(ndim, free_surface=True)
    born = sweep.lsrtm(vp, mp, **problem).receivers
    d = np.random.default_rng(5).standard_normal(born.shape)
    t = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
         for k, v in problem.items()}  # fmt: skip
    _, pullback = sweep.vjp(sweep.lsrtm, torch.from_numpy(vp), torch.from_numpy(mp), **t)
    image = pullback(torch.from_numpy(d))["mp"].numpy()
    lhs, rhs = float(np.vdot(d, born)), float(np.vdot(image, mp))
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


def test_jax_gradients_match_torch():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    vp, mp, problem = _problem(2)
    d = np.random.default_rng(6).standard_normal(sweep.lsrtm(vp, mp, **problem).receivers.shape)
    t = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
         for k, v in problem.items()}  # fmt: skip
    _, pull_t = sweep.vjp(sweep.lsrtm, torch.from_numpy(vp), torch.from_numpy(mp), **t)
    want = pull_t(torch.from_numpy(d))
    j = {k: jnp.asarray(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
         for k, v in problem.items()}  # fmt: skip
    _, pull_j = sweep.vjp(sweep.lsrtm, jnp.asarray(vp), jnp.asarray(mp), **j)
    got = pull_j(jnp.asarray(d))
    for name in ("vp", "mp", "source_amplitudes"):
        w = want[name].numpy()
        np.testing.assert_allclose(np.asarray(got[name]), w, rtol=0, atol=1e-10 * np.abs(w).max())


# -- the compiled kernels (impl="c") ---------------------------------------------------------

FREE = {2: (True, False, False, True), 3: (True, False, False, False, False, True)}


@pytest.mark.parametrize(
    ("ndim", "order", "dtype", "free"),
    [
        (2, 2, np.float64, True),
        (2, 4, np.float32, False),
        (2, 6, np.float64, False),
        (2, 8, np.float64, True),
        (2, 8, np.float32, True),
        (3, 2, np.float32, True),
        (3, 4, np.float64, False),
        (3, 8, np.float64, True),
    ],
)
def test_compiled_matches_eager(ndim, order, dtype, free):
    """Born data, background data and final fields of impl="c" are the eager operator's."""
    problem = random_problem(ndim, dtype, equation="lsrtm", nt=40, accuracy=order,
                             free_surface=FREE[ndim] if free else False)  # fmt: skip
    vp, mp = problem.pop("vp"), problem.pop("mp")
    c = sweep.lsrtm(vp, mp, **problem, impl="c")
    e = sweep.lsrtm(vp, mp, **problem, impl="eager")
    assert c.impl == "c" and e.impl == "eager"
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for key in ("receivers", "background_receivers", "wavefield", "previous_wavefield",
                "background_wavefield"):  # fmt: skip
        want = getattr(e, key)
        assert getattr(c, key).dtype == want.dtype, key
        err = np.abs(getattr(c, key) - want).max()
        assert err <= tol * np.abs(want).max(), (key, err / np.abs(want).max())


@pytest.mark.parametrize(
    ("ndim", "order", "free"),
    [(2, 2, True), (2, 4, False), (2, 8, True), (3, 4, True), (3, 6, False)],
)
def test_compiled_gradients_match_eager_autodiff(ndim, order, free):
    """The hand-written adjoint gives torch's gradients of the eager operator (float64)."""
    vp, mp, problem = _problem(ndim, accuracy=order, free_surface=FREE[ndim] if free else False)
    out, pullback = sweep.vjp(sweep.lsrtm, vp, mp, **problem, impl="c")
    d = np.random.default_rng(7).standard_normal(out.receivers.shape)
    got = pullback(d)
    t = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
         for k, v in problem.items()}  # fmt: skip
    _, pull_e = sweep.vjp(sweep.lsrtm, torch.from_numpy(vp), torch.from_numpy(mp), **t,
                          impl="eager")  # fmt: skip
    want = pull_e(torch.from_numpy(d))
    for name in ("vp", "mp", "source_amplitudes"):
        w = want[name].numpy()
        assert got[name].shape == w.shape and got[name].dtype == w.dtype
        np.testing.assert_allclose(got[name], w, rtol=0, atol=1e-11 * np.abs(w).max(),
                                   err_msg=name)  # fmt: skip


@pytest.mark.parametrize("ndim", [2, 3])
def test_compiled_migration_is_the_transpose_of_born(ndim):
    """<d, B mp> = <B^T d, mp> with impl="c" on NumPy arrays."""
    vp, mp, problem = _problem(ndim, free_surface=FREE[ndim], accuracy=8)
    out, pullback = sweep.vjp(sweep.lsrtm, vp, mp, **problem, impl="c")
    d = np.random.default_rng(5).standard_normal(out.receivers.shape)
    image = pullback(d)["mp"]
    lhs, rhs = float(np.vdot(d, out.receivers)), float(np.vdot(image, mp))
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


BOUNDARY = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())
# name: (the plan's strategy and storage, the memory keywords)
STRATEGIES = {
    "cpu": (("full", "cpu"), {"storage_mode": "cpu"}),
    "disk": (("full", "disk"), {"storage_mode": "disk"}),
    "ckpt-chunk": (
        ("ckpt-chunk", None),
        {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=7))},
    ),
    "ckpt-recursive": (
        ("ckpt-recursive", None),
        {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3))},
    ),
}


def _gradients(vp, mp, problem, d, **memory):
    out, pullback = sweep.vjp(sweep.lsrtm, vp, mp, **problem, impl="c", **memory)
    return out, pullback(d)


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("interval", [1, 3])
def test_every_memory_strategy_gives_full_storages_gradient(ndim, interval, tmp_path, monkeypatch):
    """Full storage in host memory or on disk and both checkpointings: bitwise full storage."""
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    vp, mp, problem = _problem(ndim, free_surface=FREE[ndim])
    k = {"model_gradient_sampling_interval": interval}
    d = np.random.default_rng(8).standard_normal((2, 3, 60))
    out0, ref = _gradients(vp, mp, problem, d, storage_mode="device", **k)
    assert out0.memory_plan.strategy == "full" and out0.memory_plan.storage == "device"
    assert np.abs(ref["mp"]).max() > 0 and np.abs(ref["vp"]).max() > 0
    for name, ((strategy, storage), memory) in STRATEGIES.items():
        out, got = _gradients(vp, mp, problem, d, **memory, **k)
        assert out.memory_plan.strategy == strategy, name
        assert storage is None or out.memory_plan.storage == storage, name
        assert np.array_equal(out.receivers, out0.receivers), name
        assert np.array_equal(out.background_receivers, out0.background_receivers), name
        for key in ("vp", "mp", "source_amplitudes"):
            assert np.array_equal(got[key], ref[key]), (name, key)
    assert not list(tmp_path.iterdir())  # disk stores removed


def test_bf16_snapshots_and_sampling_stay_close_to_the_exact_gradient():
    """Lossy storage changes the model gradients a little, the source gradient not at all."""
    vp, mp, problem = _problem(2, free_surface=True)
    d = np.random.default_rng(9).standard_normal((2, 3, 60))
    _, exact = _gradients(vp, mp, problem, d)
    # Measured (relative L2): bf16 1.2e-3 (vp), 1.1e-3 (mp); every 2nd step 3.0e-2, 2.3e-2.
    for memory, tol in (({"storage_compression": "bf16"}, 5e-3),
                        ({"model_gradient_sampling_interval": 2}, 0.1)):  # fmt: skip
        _, got = _gradients(vp, mp, problem, d, **memory)
        for key in ("vp", "mp"):
            err = np.linalg.norm(got[key] - exact[key]) / np.linalg.norm(exact[key])
            assert 0 < err < tol, (memory, key, err)
        assert np.array_equal(got["source_amplitudes"], exact["source_amplitudes"])


@pytest.mark.parametrize("ndim", [2, 3])
def test_shots_split_between_threads_are_bitwise_one_thread(ndim):
    """Sub-problems of whole shots (the background traces and both snapshot values included)."""
    problem = random_problem(ndim, equation="lsrtm", n_shots=4, nt=40, free_surface=FREE[ndim])
    vp, mp = problem.pop("vp"), problem.pop("mp")
    d = np.random.default_rng(10).standard_normal((4, 3, 40))
    out1, ref = _gradients(vp, mp, problem, d, n_threads=1)
    for n_threads in (2, 3):  # 3: all threads share every step
        out, got = _gradients(vp, mp, problem, d, n_threads=n_threads)
        assert np.array_equal(out.receivers, out1.receivers)
        assert np.array_equal(out.background_receivers, out1.background_receivers)
        for key in ref:
            assert np.array_equal(got[key], ref[key]), (key, n_threads)


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("order", [2, 8])
@pytest.mark.parametrize("free", [False, True])
def test_boundary_saving_matches_full_storage(ndim, order, free):
    """Both fields run backwards in time: float64 agrees with full storage to round-off.

    Sources and receivers sit on the band (model cells next to the CPML); the
    source gradient does not depend on the forward field, so it is bitwise.
    """
    vp, mp, problem = _problem(ndim, free_surface=FREE[ndim] if free else False, accuracy=order)
    problem = edge_acquisition(problem, vp.shape)
    d = np.random.default_rng(12).standard_normal((2, 3, 60))
    out0, ref = _gradients(vp, mp, problem, d)
    out, got = _gradients(vp, mp, problem, d, memory=BOUNDARY)
    assert out.memory_plan.strategy == "boundary"
    assert np.array_equal(out.receivers, out0.receivers)
    assert np.array_equal(out.background_receivers, out0.background_receivers)
    for key in ("vp", "mp"):
        scale = np.abs(ref[key]).max()
        assert scale > 0
        np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-12 * scale, err_msg=key)
    assert np.array_equal(got["source_amplitudes"], ref["source_amplitudes"])


def test_boundary_saving_is_bitwise_under_time_blocking(monkeypatch):
    """Forward calls that save the band or replay the CPML are never blocked in time.

    With blocking forced, the traces and gradients are bitwise the unblocked
    ones (a blocked band save would leave the band, and so the gradients, wrong).
    """
    vp, mp, problem = _problem(2, free_surface=True, accuracy=8)
    problem = edge_acquisition(problem, vp.shape)
    d = np.random.default_rng(14).standard_normal((2, 3, 60))
    runs = {}
    for blocking in ("1,1,1", "4,1,8", "80,1,5"):
        monkeypatch.setenv("SWEEP_TIME_BLOCKING", blocking)
        runs[blocking] = _gradients(vp, mp, problem, d, memory=BOUNDARY)
    (out0, ref), *others = runs.values()
    assert out0.memory_plan.strategy == "boundary"
    for out, got in others:
        assert np.array_equal(out.receivers, out0.receivers)
        assert np.array_equal(out.background_receivers, out0.background_receivers)
        for key in ("vp", "mp", "source_amplitudes"):
            assert np.array_equal(got[key], ref[key]), key


def test_boundary_saving_float32_storage_places_and_threads(tmp_path, monkeypatch):
    """float32 round-off only, the strips in host memory or on disk, shots split by thread."""
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    problem = random_problem(2, np.float32, equation="lsrtm", accuracy=8, nt=80, n_shots=2,
                             free_surface=True)  # fmt: skip
    vp, mp = problem.pop("vp"), problem.pop("mp")
    problem = edge_acquisition(problem, vp.shape)
    d = np.random.default_rng(13).standard_normal((2, 3, 80)).astype(np.float32)
    _, ref = _gradients(vp, mp, problem, d)
    _, first = _gradients(vp, mp, problem, d, memory=BOUNDARY, n_threads=1)
    for storage in ("gpu", "cpu", "disk"):
        for n_threads in (1, 2, 3):  # 2: a shot per thread; 3: all threads share each step
            memory = MemoryOptions(strategy="boundary", boundary=BoundaryOptions(storage=storage))
            _, got = _gradients(vp, mp, problem, d, memory=memory, n_threads=n_threads)
            for key in ("vp", "mp"):
                rel = np.abs(got[key] - ref[key]).max() / np.abs(ref[key]).max()
                assert rel < 1e-4, (storage, key, rel)
                assert np.array_equal(got[key], first[key]), (storage, n_threads, key)
    assert not list(tmp_path.iterdir())


def test_boundary_saving_is_chosen_when_full_storage_does_not_fit():
    """The planner counts both fields' strips (less than the snapshots) and picks them."""
    vp, mp, problem = _problem(2)
    est = sweep.vjp(sweep.lsrtm, vp, mp, **problem, impl="c")[0].memory_plan.estimates
    assert 0 < est["boundary"] < est["full"]
    limit = (est["boundary"] + est["full"]) // 2
    limits = {"storage_bytes_limit_device": limit, "storage_bytes_limit_host": limit}
    out, _ = sweep.vjp(sweep.lsrtm, vp, mp, **problem, impl="c", **limits)
    assert out.memory_plan.strategy == "boundary"


@pytest.mark.parametrize("memory", [{}, STRATEGIES["ckpt-recursive"][1]], ids=["full", "ckpt"])
def test_compiled_callbacks_see_both_fields_and_change_nothing(memory):
    vp, mp, problem = _problem(2, free_surface=True)
    d = np.random.default_rng(11).standard_normal((2, 3, 60))
    out, ref = _gradients(vp, mp, problem, d, **memory)
    seen = {"forward": [], "backward": []}

    def record(state):
        names = sorted(state.wavefield_names)
        grads = state.get_gradient("mp") if state.direction == "backward" else None
        seen[state.direction].append((state.step, names, grads))

    out2, got = _gradients(vp, mp, problem, d, **memory, forward_callback=record,
                           backward_callback=record, callback_frequency=7)  # fmt: skip
    assert np.array_equal(out.receivers, out2.receivers)
    for key in ref:
        assert np.array_equal(got[key], ref[key]), key
    steps = list(range(0, 60, 7))
    assert [s[0] for s in seen["forward"]] == steps  # checkpoint replays do not call it again
    assert [s[0] for s in seen["backward"]] == steps[::-1]
    assert seen["forward"][0][1] == ["u0", "u0_prev", "u1", "u1_prev"]
    assert seen["backward"][0][1] == ["adjoint0", "adjoint0_prev", "adjoint1", "adjoint1_prev"]
    np.testing.assert_allclose(seen["backward"][-1][2], ref["mp"], rtol=1e-12, atol=0)
