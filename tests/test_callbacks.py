"""forward_callback / backward_callback: when they run, what they see, and that they change
nothing unless they edit a wavefield (then the propagation follows the edit)."""

import numpy as np
import pytest

import sweep
from sweep import equations
from sweep._callbacks import snapshots
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import random_problem

STRATEGIES = {
    "full": {},
    "full-disk": {"storage_mode": "disk"},
    "interval-2": {"model_gradient_sampling_interval": 2},
    "boundary": {"memory": MemoryOptions(strategy="boundary", boundary=BoundaryOptions())},
    "ckpt-chunk": {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=3))},
    "ckpt-recursive": {
        "memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3))
    },
}
NT = 31


def _problem(name="acoustic", ndim=None):
    if ndim is None:  # 2D where the equation has it
        ndims = equations.get(name).ndims
        ndim = 2 if 2 in ndims else ndims[0]
    return random_problem(ndim, np.float64, nt=NT, equation=name, free_surface=True)


class _Recorder:
    def __init__(self, name="u"):
        self.name = name
        self.steps = []
        self.fields = []
        self.grads = []

    def __call__(self, state):
        self.steps.append(state.step)
        self.fields.append(np.array(state.get_wavefield(self.name, "full")))
        if state.direction == "backward":
            self.grads.append(np.array(state.get_gradient("v")))


@pytest.mark.parametrize("strategy", list(STRATEGIES))
def test_compiled_callbacks_change_nothing_and_run_once_per_step(strategy):
    problem = _problem()
    out, pullback = sweep.vjp(sweep.acoustic, **problem, **STRATEGIES[strategy])
    want = pullback(out.receivers)
    fwd, bwd = _Recorder(), _Recorder("adjoint")
    out2, pullback2 = sweep.vjp(sweep.acoustic, **problem, **STRATEGIES[strategy],
                                forward_callback=fwd, backward_callback=bwd,
                                callback_frequency=4)  # fmt: skip
    got = pullback2(out2.receivers)
    assert np.array_equal(out.receivers, out2.receivers)
    assert np.array_equal(want["v"], got["v"])
    assert np.array_equal(want["source_amplitudes"], got["source_amplitudes"])
    assert fwd.steps == list(range(0, NT, 4))  # checkpoint replays do not call it again
    assert bwd.steps == list(range(0, NT, 4))[::-1]
    np.testing.assert_allclose(bwd.grads[-1], want["v"], rtol=1e-12, atol=0)


IMPLS = [(n, i) for n in equations.names() for i in ("c", "eager")
         if i == "eager" or equations.get(n).compiled]  # fmt: skip


@pytest.mark.parametrize(("name", "impl"), IMPLS)
def test_forward_callback_sees_the_wavefield_at_its_step(name, impl):
    spec = equations.get(name)
    problem = _problem(name)
    field = {"lsrtm": "u1", "elastic": "vz", "tm2d": "ey", "maxwell3d": "ey"}.get(name, "u")
    rec = _Recorder(field)
    spec.function(**problem, impl=impl, forward_callback=rec, callback_frequency=9)
    assert rec.steps == [0, 9, 18, 27]
    assert not np.any(rec.fields[0])
    for t, seen in zip(rec.steps[1:], rec.fields[1:], strict=True):
        short = dict(problem, source_amplitudes=problem["source_amplitudes"][..., :t])
        state = spec.function(**short, impl=impl).state
        np.testing.assert_allclose(seen, np.asarray(state[field]), rtol=0,
                                   atol=1e-13 * np.abs(seen).max())  # fmt: skip


@pytest.mark.parametrize("name", [n for n in equations.names() if equations.get(n).compiled])
def test_in_place_edits_are_propagated(name):
    """Halving the model cells' wavefields at step 15 changes what follows, the same way in
    the compiled and the eager implementation, for every equation."""
    spec = equations.get(name)
    problem = _problem(name)
    base = spec.function(**problem, impl="c").receivers

    def halve(state):
        if state.step == 15:
            for field in state.wavefield_names:
                state.get_wavefield(field, "inner")[...] *= 0.5

    got = {
        impl: spec.function(**problem, impl=impl, forward_callback=halve, callback_frequency=5)
        for impl in ("c", "eager")
    }
    scale = np.abs(base).max()
    assert np.array_equal(got["c"].receivers[..., :15], base[..., :15])
    assert np.abs(got["c"].receivers[..., 16:] - base[..., 16:]).max() > 1e-3 * scale
    np.testing.assert_allclose(got["eager"].receivers, got["c"].receivers, rtol=0,
                               atol=1e-12 * scale)  # fmt: skip


def test_views_and_snapshots():
    problem = _problem()
    snap = snapshots(every=2, view="pml")
    out = sweep.acoustic(**problem, forward_callback=snap, callback_frequency=5)
    assert snap.steps == [0, 10, 20, 30]
    geom = out.geometry
    assert snap.frames[0].shape == (2, *geom.store_shape)
    inner = snapshots(view="inner")
    sweep.acoustic(**problem, forward_callback=inner, callback_frequency=NT - 1)
    assert inner.frames[1].shape == (2, *problem["v"].shape)


def test_bad_callback_arguments():
    problem = _problem()
    with pytest.raises(TypeError, match="forward_callback must be a callable"):
        sweep.acoustic(**problem, forward_callback=3)
    with pytest.raises(ValueError, match="callback_frequency must be a positive integer"):
        sweep.acoustic(**problem, forward_callback=print, callback_frequency=0)
    with pytest.raises(ValueError, match="backward_callback runs in the compiled adjoint"):
        sweep.acoustic(**problem, backward_callback=print, impl="eager")
    with pytest.raises(ValueError, match="view must be one of"):
        sweep.acoustic(**problem, forward_callback=lambda s: s.get_wavefield("u", "middle"))
    with pytest.raises(ValueError, match="gradients exist in the backward pass only"):
        sweep.acoustic(**problem, forward_callback=lambda s: s.get_gradient("v"))


def test_adapters_eager_loop_rejects_callbacks():
    torch = pytest.importorskip("torch")
    from sweep.propagator.torch import PropTorch

    problem = _problem()
    v = torch.from_numpy(problem.pop("v"))
    amp = torch.from_numpy(problem.pop("source_amplitudes"))
    prop = PropTorch("acoustic", **problem, impl="eager", forward_callback=print)
    with pytest.raises(ValueError, match="not supported by the adapters' eager time loop"):
        prop(v, source_amplitudes=amp)


@pytest.mark.parametrize(("name", "impl"), IMPLS)
def test_restart_from_a_returned_state_continues_the_run(name, impl):
    """nt steps equal nt1 steps, then nt - nt1 more from the returned state."""
    problem = _problem(name)
    spec = equations.get(name)
    amp = problem["source_amplitudes"]
    whole = spec.function(**problem, impl=impl)
    first = spec.function(**dict(problem, source_amplitudes=amp[..., :13]), impl=impl)
    rest = spec.function(**dict(problem, source_amplitudes=amp[..., 13:]), impl=impl,
                         initial_state=first.state)  # fmt: skip
    joined = np.concatenate([first.receivers, rest.receivers], axis=-1)
    scale = np.abs(whole.receivers).max()
    np.testing.assert_allclose(joined, whole.receivers, rtol=0, atol=1e-13 * scale)
    np.testing.assert_allclose(rest.wavefield, whole.wavefield, rtol=0,
                               atol=1e-13 * np.abs(whole.wavefield).max())  # fmt: skip


def test_restart_state_is_checked():
    problem = _problem()
    state = sweep.acoustic(**problem).state
    with pytest.raises(ValueError, match=r"initial_state lacks \['u_prev', 'psi', 'zeta'\]"):
        sweep.acoustic(**problem, initial_state={"u": state["u"]})
    with pytest.raises(ValueError, match="padded shape"):
        sweep.acoustic(**dict(problem, pml_width=6), initial_state=state)
    with pytest.raises(TypeError, match="float32"):
        p32 = dict(problem, v=problem["v"].astype(np.float32),
                   source_amplitudes=problem["source_amplitudes"].astype(np.float32))  # fmt: skip
        sweep.acoustic(**p32, initial_state=state)
