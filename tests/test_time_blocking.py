"""Temporal blocking of the CPU forward kernel gives bitwise the unblocked result."""

import numpy as np
import pytest

import sweep
from sweep import _blocking
from sweep._blocking import BlockingTuner, time_blocking
from sweep._compiled import CompiledAcoustic
from sweep._grid import Geometry
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import random_problem

pytest.importorskip("sweep._C", reason="compiled kernels not built")

# (steps, plane group, y tile): one step (off), short and long blocks, groups
# of several planes, tiles narrower than the skew allows (the kernel shortens
# the block), a block longer than the run and the 3D default.
BLOCKINGS = ["1,1,1", "2,1,5", "5,1,13", "4,3,7", "7,2,100", "3,5,4", "80,1,9", "8,1,64"]


# The acoustic stepper's facts that temporal blocking sizes itself by.
ACOUSTIC = {"cell_bytes": CompiledAcoustic.blocking_cell_bytes, "stages": CompiledAcoustic.stages}


def _forward(problem, blocking, monkeypatch, **kwargs):
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", blocking)
    out = sweep.acoustic(**problem, impl="c", **kwargs)
    state = [out.state["u"], out.state["u_prev"]]
    for key in ("psi", "zeta"):
        for value in out.state[key]:
            state.extend(value if isinstance(value, (list, tuple)) else [value])
    return [out.receivers, *(np.asarray(x) for x in state)]


@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 8))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_blocked_forward_is_bitwise_unblocked(ndim, order, dtype, monkeypatch):
    problem = random_problem(ndim, dtype, n_shots=3, n_src=3, n_rec=5, nt=37, accuracy=order)
    # Two sources in one cell: they must still be added in their given order.
    problem["source_locations"][:, 2] = problem["source_locations"][:, 0]
    reference = _forward(problem, "1,1,1", monkeypatch, n_threads=1)
    for blocking in BLOCKINGS[1:]:
        for n_threads in (1, 2, 3):
            out = _forward(problem, blocking, monkeypatch, n_threads=n_threads)
            for a, b in zip(reference, out, strict=True):
                assert np.array_equal(a, b), (blocking, n_threads)


@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_blocked_born_forward_is_bitwise_unblocked(ndim, dtype, monkeypatch):
    """LSRTM: both fields, the scattered and the background traces, the final state."""
    problem = random_problem(ndim, dtype, n_shots=3, n_src=3, n_rec=5, nt=37, accuracy=8,
                             equation="lsrtm")  # fmt: skip
    vp, mp = problem.pop("vp"), problem.pop("mp")

    def forward(blocking, n_threads):
        monkeypatch.setenv("SWEEP_TIME_BLOCKING", blocking)
        out = sweep.lsrtm(vp, mp, **problem, impl="c", n_threads=n_threads)
        return [out.receivers, out.background_receivers, *(np.asarray(x) for x in (
            out.wavefield, out.previous_wavefield, out.background_wavefield))]  # fmt: skip

    reference = forward("1,1,1", 1)
    assert np.abs(reference[0]).max() > 0 and np.abs(reference[1]).max() > 0
    for blocking in ("2,1,5", "4,3,7", "80,1,9", "8,1,64"):
        for n_threads in (1, 2):
            for a, b in zip(reference, forward(blocking, n_threads), strict=True):
                assert np.array_equal(a, b), (blocking, n_threads)


@pytest.mark.parametrize("n_threads", (2, 4))
def test_pipelined_tiles_are_bitwise_unblocked(n_threads, monkeypatch):
    """3D with threads at most the y tiles: each thread runs whole (block, tile) tasks,
    waiting only on its neighbours; many tiles and blocks, and more threads than
    cores, give a late neighbour every chance to show."""
    problem = random_problem(3, np.float32, n_shots=1, n_src=2, n_rec=7, nt=45, accuracy=4)
    problem["v"] = np.full((14, 30, 17), 2000.0, np.float32)
    problem["source_locations"] = np.array([[[7, 3, 8], [2, 28, 16]]])
    problem["receiver_locations"] = np.array([[[k % 14, 4 * k + 1, 16 - 2 * k] for k in range(7)]])
    problem["pml_width"] = 5
    reference = _forward(problem, "1,1,1", monkeypatch, n_threads=1)
    for blocking in ("3,1,7", "4,2,9", "2,1,4"):
        for _ in range(3):
            out = _forward(problem, blocking, monkeypatch, n_threads=n_threads)
            for a, b in zip(reference, out, strict=True):
                assert np.array_equal(a, b), blocking


def test_blocking_detects_a_wrong_wavefront(monkeypatch):
    """The comparison above is sensitive: a blocked run differs from a shorter one."""
    problem = random_problem(3, np.float64, nt=37, accuracy=8)
    a = _forward(problem, "4,1,7", monkeypatch)
    problem["nt"] = 36
    problem["source_amplitudes"] = problem["source_amplitudes"][..., :36]
    b = _forward(problem, "4,1,7", monkeypatch)
    assert not np.array_equal(a[1], b[1])


def test_free_surface_runs_unblocked(monkeypatch):
    problem = random_problem(2, np.float64, nt=30, free_surface=True)
    a = _forward(problem, "1,1,1", monkeypatch)
    b = _forward(problem, "6,2,1", monkeypatch)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


MEMORY = {
    "full": {},
    "sampled": {"model_gradient_sampling_interval": 3},
    "bf16": {"storage_compression": "bf16"},
    "chunks": {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="chunk", chunks=4))},
    "recursive": {
        "memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3))
    },
}


def _gradient(problem, blocking, monkeypatch, **kwargs):
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", blocking)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c", **kwargs)
    rng = np.random.default_rng(3)
    grads = pullback(rng.standard_normal(out.receivers.shape).astype(out.receivers.dtype))
    return [out.receivers, grads["v"], grads["source_amplitudes"]]


@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 8))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("memory", MEMORY)
def test_blocked_gradient_is_bitwise_unblocked(ndim, order, dtype, memory, monkeypatch):
    """The forward of a gradient stores each step's snapshot from inside the
    blocked wavefront and the adjoint correlates inside its own: receivers
    and both gradients bitwise the unblocked ones, with sampling, bf16
    staging and checkpointing's stores too."""
    problem = random_problem(ndim, dtype, n_shots=3, n_src=2, n_rec=5, nt=29, accuracy=order)
    kw = MEMORY[memory]
    reference = _gradient(problem, "1,1,1", monkeypatch, n_threads=1, **kw)
    assert np.abs(reference[1]).max() > 0
    for blocking in ("2,1,5", "4,3,7", "80,1,9"):
        for n_threads in (1, 2, 3):
            out = _gradient(problem, blocking, monkeypatch, n_threads=n_threads, **kw)
            for a, b in zip(reference, out, strict=True):
                assert np.array_equal(a, b), (blocking, n_threads)


# Equations with two models: the models' names.
TWO_MODELS = {"lsrtm": ("vp", "mp"), "vrz": ("vp", "z")}


@pytest.mark.parametrize("equation", TWO_MODELS)
@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("memory", ("full", "sampled", "chunks"))
def test_blocked_two_model_gradient_is_bitwise_unblocked(equation, ndim, dtype, memory,
                                                         monkeypatch):  # fmt: skip
    """LSRTM (two snapshot values, two adjoint fields) and VRZ (its compact
    record, gradients read from neighbour rows): snapshots stored from inside
    the blocked wavefront, both model gradients correlated inside its own."""
    problem = random_problem(ndim, dtype, n_shots=3, n_src=2, n_rec=5, nt=29, accuracy=8,
                             equation=equation)  # fmt: skip
    kw = MEMORY[memory]
    m0, m1 = TWO_MODELS[equation]

    def gradient(blocking, n_threads):
        monkeypatch.setenv("SWEEP_TIME_BLOCKING", blocking)
        out, pullback = sweep.vjp(getattr(sweep, equation), **problem, impl="c",
                                  n_threads=n_threads, **kw)  # fmt: skip
        rng = np.random.default_rng(3)
        grads = pullback(rng.standard_normal(out.receivers.shape).astype(out.receivers.dtype))
        return [out.receivers, grads[m0], grads[m1], grads["source_amplitudes"]]

    reference = gradient("1,1,1", 1)
    assert np.abs(reference[1]).max() > 0 and np.abs(reference[2]).max() > 0
    for blocking, n_threads in (("2,1,5", 1), ("4,3,7", 3), ("80,1,9", 2)):
        out = gradient(blocking, n_threads)
        for a, b in zip(reference, out, strict=True):
            assert np.array_equal(a, b), (blocking, n_threads)


def test_pipelined_gradient_is_bitwise_unblocked(monkeypatch):
    """3D, one shot, threads at most the y tiles: the pipelined tasks store
    (forward) and correlate (adjoint)."""
    problem = random_problem(3, np.float32, n_shots=1, n_src=2, n_rec=7, nt=31, accuracy=4)
    problem["v"] = np.full((14, 30, 17), 2000.0, np.float32)
    problem["source_locations"] = np.array([[[7, 3, 8], [2, 28, 16]]])
    problem["receiver_locations"] = np.array([[[k % 14, 4 * k + 1, 16 - 2 * k] for k in range(7)]])
    problem["pml_width"] = 5
    reference = _gradient(problem, "1,1,1", monkeypatch, n_threads=1)
    for blocking in ("3,1,7", "4,2,9", "2,1,4"):
        for n_threads in (2, 4, 2):
            out = _gradient(problem, blocking, monkeypatch, n_threads=n_threads)
            for a, b in zip(reference, out, strict=True):
                assert np.array_equal(a, b), (blocking, n_threads)


def test_blocked_gradient_free_surface_and_boundary(monkeypatch):
    """A free surface, and boundary saving, keep their unblocked loops."""
    for kw in ({"free_surface": True}, {}):
        problem = random_problem(3, np.float64, nt=25, accuracy=4, **kw)
        mem = (
            {} if kw else {"memory": MemoryOptions(strategy="boundary", boundary=BoundaryOptions())}
        )
        a = _gradient(problem, "1,1,1", monkeypatch, **mem)
        b = _gradient(problem, "4,1,5", monkeypatch, n_threads=2, **mem)
        for x, y in zip(a, b, strict=True):
            assert np.array_equal(x, y)


def _geometry(shape, n_shots=1):
    ndim = len(shape)
    return Geometry(
        ndim=ndim,
        order=8,
        model_shape=shape,
        spacing=(10.0,) * ndim,
        dt=1e-3,
        nt=10,
        pml_width=(20,) * (2 * ndim),
        free_surface=(False,) * (2 * ndim),
        pml_freq=25.0,
        v_max=2000.0,
        src_loc=np.zeros((n_shots, 1, ndim), np.int64),
        rec_loc=np.zeros((n_shots, 1, ndim), np.int64),
    )


def test_blocking_choice(monkeypatch):
    def choice(shape, n_shots=1):
        return time_blocking(_geometry(shape, n_shots), 2, cell_bytes=ACOUSTIC["cell_bytes"])

    monkeypatch.delenv("SWEEP_TIME_BLOCKING", raising=False)
    assert choice((40, 40, 40))[0] == 1
    assert choice((160, 160, 160))[0] > 1
    # 2D steps fit in the cache: unblocked is as fast.
    assert choice((300, 1000), n_shots=4)[0] == 1
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", "3,2,9")
    assert choice((40, 40, 40)) == (3, 2, 9)
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", "fast")
    with pytest.raises(ValueError, match="SWEEP_TIME_BLOCKING"):
        choice((40, 40, 40))


def test_adjoint_blocking_choice(monkeypatch):
    """LSRTM's 2D adjoint is blocked where the forward's default is not; 3D and
    small grids keep the forward's choice, SWEEP_TIME_BLOCKING fixes both."""
    from sweep.equations.lsrtm.compiled import CompiledLSRTM

    def choice(shape, n_shots=1):
        return _blocking.adjoint_blocking(
            _geometry(shape, n_shots), 2, cell_bytes=CompiledLSRTM.blocking_cell_bytes,
            defaults=CompiledLSRTM.adjoint_blocking,
        )  # fmt: skip

    monkeypatch.delenv("SWEEP_TIME_BLOCKING", raising=False)
    assert choice((300, 1000), n_shots=4) == CompiledLSRTM.adjoint_blocking[2] != (1, 1, 1)
    assert choice((40, 40)) == (1, 1, 1)
    assert choice((160, 160, 160)) == _blocking.DEFAULTS[3]
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", "1,1,1")
    assert choice((300, 1000), n_shots=4) == (1, 1, 1)


def test_vrz_adjoint_blocking_choice(monkeypatch):
    """VRZ's 3D adjoint takes its own blocking (not the forward's default)."""
    from sweep.equations.vrz.compiled import CompiledVRZ

    def choice(shape):
        return _blocking.adjoint_blocking(
            _geometry(shape, 1), 2, cell_bytes=CompiledVRZ.blocking_cell_bytes,
            defaults=CompiledVRZ.adjoint_blocking,
        )  # fmt: skip

    monkeypatch.delenv("SWEEP_TIME_BLOCKING", raising=False)
    assert choice((160, 160, 160)) == CompiledVRZ.adjoint_blocking[3] != _blocking.DEFAULTS[3]
    assert choice((20, 20, 20)) == (1, 1, 1)
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", "8,1,48")
    assert choice((160, 160, 160)) == (8, 1, 48)


def test_tuner_schedule_and_choice():
    """Warm-up untimed, candidates in order then reversed, pieces split across calls."""
    cands = [(8, 1, 48), (4, 1, 24), (1, 1, 1)]
    tuner = BlockingTuner(cands, (8, 1, 48), trial_steps=4, rounds=2)
    speed = {(8, 1, 48): 3.0, (4, 1, 24): 1.0, (1, 1, 1): 2.0}  # seconds per step
    seen = []
    calls = [3, 5, 2, 7, 11, 9, 100]
    for n in calls:
        left = n
        while left:
            blocking, k, timed = tuner.next_piece(left)
            assert 0 < k <= left
            seen.append((blocking, k, timed))
            if timed:
                tuner.record(blocking, k, k * speed[blocking])
            else:
                tuner.record(blocking, k, 0.0)
            left -= k
    assert tuner.done and tuner.best == (4, 1, 24)
    assert tuner.rates == {c: [speed[c], speed[c]] for c in cands}
    # Warm-up first and untimed; then 4 steps of each candidate per round.
    order = [b for b, _, t in seen if t]
    assert seen[0] == ((8, 1, 48), 3, False) and seen[1][2] is False
    steps_per = {}
    for b, k, t in seen:
        if t:
            steps_per[b] = steps_per.get(b, 0) + k
    assert steps_per == {c: 8 for c in cands}
    firsts = [b for i, b in enumerate(order) if i == 0 or order[i - 1] != b]
    # Round 2 runs in reverse, so its first candidate continues round 1's last.
    assert firsts == cands + cands[::-1][1:]
    assert seen[-1] == ((4, 1, 24), seen[-1][1], False)


def test_tuner_ignores_a_stale_record():
    tuner = BlockingTuner([(2, 1, 8), (1, 1, 1)], (2, 1, 8), trial_steps=2, rounds=1)
    blocking, k, _ = tuner.next_piece(10)
    tuner.record((1, 1, 1), k, 1.0)  # not the schedule's entry: dropped
    assert tuner.next_piece(10) == (blocking, k, False)


@pytest.mark.parametrize("ndim", (2, 3))
def test_tuned_forward_is_bitwise_fixed(ndim, monkeypatch):
    """A forward large enough to tune runs its trials on real steps, split
    into odd-length pieces (buffer swaps between pieces), with the result of
    a fixed blocking; the next run of that size uses the tuned choice."""
    monkeypatch.setattr(_blocking, "_TUNERS", {})
    monkeypatch.setattr(_blocking, "TRIAL_STEPS", 3)
    problem = random_problem(ndim, np.float32, n_shots=1, n_src=2, n_rec=4, nt=41, accuracy=2)
    shape = (80, 80, 80) if ndim == 3 else (700, 1000)
    problem["v"] = np.full(shape, 1500.0, np.float32)
    problem["pml_width"] = 5
    src = [[40, 40, 40], [10, 70, 33]]
    rec = [[k * 20 % 80, 5 + k, 79 - k] for k in range(4)]
    problem["source_locations"] = np.array([[p[:ndim] for p in src]])
    problem["receiver_locations"] = np.array([[p[-ndim:] for p in rec]])
    reference = _forward(problem, "1,1,1", monkeypatch, n_threads=2)
    monkeypatch.delenv("SWEEP_TIME_BLOCKING")
    out = sweep.acoustic(**problem, impl="c", n_threads=2)
    (tuner,) = _blocking._TUNERS.values()
    assert tuner.done  # 1 + 2 * (3 or 5) entries of 3 steps <= 41
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", "auto")
    for _ in range(2):
        state = _forward(problem, "auto", monkeypatch, n_threads=2)
        for a, b in zip(reference, state, strict=True):
            assert np.array_equal(a, b)
    assert np.array_equal(out.receivers, reference[0])
    assert len(_blocking._TUNERS) == 1


def test_fixed_blocking_turns_tuning_off(monkeypatch):
    monkeypatch.setattr(_blocking, "_TUNERS", {})
    geom = _geometry((160, 160, 160))
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", "4,1,24")
    assert _blocking.tuner_for(geom, "float32", 2, **ACOUSTIC) is None
    monkeypatch.setenv("SWEEP_TIME_BLOCKING", "auto")
    assert _blocking.tuner_for(geom, "float32", 2, **ACOUSTIC) is not None
    assert _blocking.tuner_for(_geometry((40, 40, 40)), "float32", 2, **ACOUSTIC) is None
