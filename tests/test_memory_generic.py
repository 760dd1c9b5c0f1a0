"""The memory strategies are equation-agnostic: a toy equation runs through them.

The toy is a damped 1D leapfrog with a relaxation variable, written here in
plain NumPy with its hand-derived adjoint.  Its forward state has three
fields (u^{t-1}, u^t, q^t), its model is a coefficient object of its own, and
it implements only :class:`sweep._stepper.Stepper`: it is not reversible, so
boundary saving must be refused.  Per step ``t``::

    W^t     = A u^t - q^t                 (A: 1D second difference, zero outside)
    u^{t+1} = c W^t + 2 u^t - d u^{t-1} + S^T amp^t
    q^{t+1} = a q^t + b u^t
    r^t     = R u^{t+1}                   (receiver samples)

and W^t is the snapshot: dJ/dc = sum_t lambda^{t+1} W^t, lambda^{t+1} = dJ/du^{t+1}.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from sweep import _memory
from sweep._memory_options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep._stepper import ForwardState, ReversibleStepper, Stepper
from sweep._storage import from_bf16, to_bf16

N, NT, SHOTS = 24, 30, 2
SRC = np.array([[5], [17]])
REC = np.array([[2, 11, 20], [3, 12, 21]])


@dataclass
class ToyCoeffs:
    c: np.ndarray  # per cell: the model the gradient is taken with respect to
    d: float = 0.98  # u^{t-1} weight (< 1: damped)
    a: float = 0.9  # relaxation of q
    b: float = 0.05  # coupling of u into q


def _lap(x: np.ndarray) -> np.ndarray:
    out = -2.0 * x
    out[:, 1:] += x[:, :-1]
    out[:, :-1] += x[:, 1:]
    return out


class ToyState(ForwardState):
    def __init__(self) -> None:
        self.u_prev, self.u, self.q = (np.zeros((SHOTS, N)) for _ in range(3))

    def parts(self) -> list[np.ndarray]:
        return [self.u_prev, self.u, self.q]


class ToyAdjoint:
    def __init__(self, model: bool, source: bool) -> None:
        # Sensitivities to the state (u^t, u^{t+1}, q^{t+1}) after step t.
        self.alpha, self.beta, self.gamma = (np.zeros((SHOTS, N)) for _ in range(3))
        self.grad = np.zeros((SHOTS, N)) if model else None
        self.grad_src = np.zeros((SHOTS, SRC.shape[1], NT)) if source else None


def _slot(t: int, t0: int, k: int) -> int | None:
    """Slot of step t in a snapshot buffer of the range starting at t0 (None: not stored)."""
    return None if t % k else (t - -(-t0 // k) * k) // k


class ToyStepper:
    name = "toy"
    reversible = False
    xp = np
    dtype = np.dtype(np.float64)
    nt = NT
    step_cells = SHOTS * N
    snapshot_shape = (SHOTS, N)
    state_bytes = live_state_bytes = 3 * SHOTS * N * 8
    model_gradient_bytes = SHOTS * N * 8

    def __init__(self) -> None:
        self.forward_calls = 0

    def snapshot_shape_for(self, compression: str | None) -> tuple[int, ...]:
        return self.snapshot_shape

    def working_bytes(self, *, gradient: bool) -> int:
        forward = self.state_bytes + N * 8 + SHOTS * REC.shape[1] * NT * 8
        return forward + (4 * SHOTS * N * 8 + SHOTS * SRC.shape[1] * NT * 8 if gradient else 0)

    def zeros(self, *shape: int) -> np.ndarray:
        return np.zeros(shape)

    def new_state(self) -> ToyState:
        return ToyState()

    def new_adjoint(self, *, model: bool, source: bool) -> ToyAdjoint:
        return ToyAdjoint(model, source)

    def new_receivers(self) -> np.ndarray:
        return np.zeros((SHOTS, REC.shape[1], NT))

    def forward_steps(
        self, state, coeffs, amp, t0, n, *, receivers=None, store=None, store_every=1
    ):
        self.forward_calls += 1
        shots = np.arange(SHOTS)[:, None]
        for t in range(t0, t0 + n):
            w = _lap(state.u) - state.q
            u_next = coeffs.c * w + 2.0 * state.u - coeffs.d * state.u_prev
            u_next[shots, SRC] += amp[:, :, t]
            q_next = coeffs.a * state.q + coeffs.b * state.u
            if receivers is not None:
                receivers[:, :, t] = u_next[shots, REC]
            if store is not None and (j := _slot(t, t0, store_every)) is not None:
                store[j] = w
            state.u_prev, state.u, state.q = state.u, u_next, q_next

    def adjoint_steps(self, adj, coeffs, amp, grad_rec, t_end, n, *, store=None, store_every=1):
        shots = np.arange(SHOTS)[:, None]
        t0 = t_end - n
        for t in range(t_end - 1, t0 - 1, -1):
            np.add.at(adj.beta, (shots, REC), grad_rec[:, :, t])
            beta = adj.beta
            if adj.grad_src is not None:
                adj.grad_src[:, :, t] = beta[shots, SRC]
            j = _slot(t, t0, store_every)
            if adj.grad is not None and store is not None and j is not None:
                adj.grad += beta * store[j]
            adj.alpha, adj.beta, adj.gamma = (
                -coeffs.d * beta,
                adj.alpha + _lap(coeffs.c * beta) + 2.0 * beta + coeffs.b * adj.gamma,
                -coeffs.c * beta + coeffs.a * adj.gamma,
            )

    def finish_gradient(self, adj: ToyAdjoint, coeffs: ToyCoeffs) -> np.ndarray:
        return adj.grad.sum(axis=0)

    def source_gradient(self, adj: ToyAdjoint) -> np.ndarray:
        return adj.grad_src


def _problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    coeffs = ToyCoeffs(c=rng.uniform(0.2, 0.4, N))
    amp = rng.standard_normal((SHOTS, SRC.shape[1], NT))
    d = rng.standard_normal((SHOTS, REC.shape[1], NT))
    return coeffs, amp, d


def _settings(memory=None, mode="auto", compression=False, interval=1, device=None):
    return _memory.check_settings(memory, mode, compression, interval, device, None)


def _run(stepper, coeffs, amp, d, settings):
    plan = _memory.plan(stepper, settings)
    receivers, _, tape = _memory.forward(stepper, coeffs, amp, plan, False)
    try:
        g, g_src = _memory.backward(stepper, tape, d, model=True, source=True, progress=False)
    finally:
        tape.close()
    return plan, receivers, g, g_src


@pytest.fixture(autouse=True)
def _short_calls(monkeypatch):
    """Calls of 7 steps: the strategies' pieces and chunks meet inside the run."""
    monkeypatch.setattr(_memory, "_CALL_CELLS", 1)
    monkeypatch.setattr(_memory, "_CALL_MIN_STEPS", 7)


def test_the_toy_implements_exactly_the_stepper_protocol():
    members = {m for m in vars(Stepper) if not m.startswith("_")}
    assert all(hasattr(ToyStepper, m) for m in members)
    extras = {m for m in vars(ReversibleStepper) if not m.startswith("_")} - members
    assert extras and not any(hasattr(ToyStepper, m) for m in extras)


def _reference_gradient(coeffs, amp, d, interval=1, snapshot=lambda w: w):
    """sum over shots of interval * sum_{t % interval == 0} lambda^{t+1} W^t, in one sweep."""
    toy, shots = ToyStepper(), np.arange(SHOTS)[:, None]
    state, ws = toy.new_state(), []
    for t in range(NT):
        ws.append(_lap(state.u) - state.q)
        toy.forward_steps(state, coeffs, amp, t, 1)
    adj = toy.new_adjoint(model=False, source=False)
    grad = np.zeros((SHOTS, N))
    for t in reversed(range(NT)):
        beta = adj.beta.copy()
        np.add.at(beta, (shots, REC), d[:, :, t])
        if t % interval == 0:
            grad += beta * snapshot(ws[t])
        toy.adjoint_steps(adj, coeffs, amp, d, t + 1, 1)
    return interval * grad.sum(axis=0)


# name: (the plan's strategy, the memory keywords)
CASES = {
    "full-device": ("full", {"mode": "device"}),
    "full-cpu": ("full", {"mode": "cpu"}),
    "full-disk": ("full", {"mode": "disk"}),
    "ckpt-chunk": (
        "ckpt-chunk",
        {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=4))},
    ),
    "ckpt-recursive": (
        "ckpt-recursive",
        {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3))},
    ),
}


@pytest.mark.parametrize("interval", [1, 2])
def test_every_strategy_gives_full_storages_gradient_bitwise(interval, tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    coeffs, amp, d = _problem()
    toy = ToyStepper()
    _, rec_ref, g_ref, src_ref = _run(toy, coeffs, amp, d, _settings(interval=interval))
    expected = _reference_gradient(coeffs, amp, d, interval)
    np.testing.assert_allclose(g_ref, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())
    for name, (strategy, kw) in CASES.items():
        plan, rec, g, g_src = _run(toy, coeffs, amp, d, _settings(interval=interval, **kw))
        assert plan.strategy == strategy, name
        np.testing.assert_array_equal(rec, rec_ref, err_msg=name)
        np.testing.assert_array_equal(g, g_ref, err_msg=name)
        np.testing.assert_array_equal(g_src, src_ref, err_msg=name)
    assert not list(tmp_path.iterdir())  # disk stores removed


def test_bf16_snapshots_give_the_rounded_snapshots_gradient():
    coeffs, amp, d = _problem(1)
    _, _, g, _ = _run(ToyStepper(), coeffs, amp, d, _settings(compression="bf16"))
    rounded = _reference_gradient(
        coeffs, amp, d, snapshot=lambda w: from_bf16(to_bf16(w), np.float64)
    )
    np.testing.assert_allclose(g, rounded, rtol=1e-12, atol=1e-12 * np.abs(rounded).max())
    exact = _reference_gradient(coeffs, amp, d)
    assert np.abs(g - exact).max() < 1e-2 * np.abs(exact).max()


def test_dot_product_and_finite_differences():
    """The hand-written adjoint is the forward pass's transpose, and its model gradient is."""
    coeffs, amp, d = _problem(2)
    toy = ToyStepper()
    _, rec, g, g_src = _run(toy, coeffs, amp, d, _settings())
    # The receivers are linear in the source amplitudes: <F amp, d> = <amp, F^T d>.
    lhs, rhs = np.vdot(rec, d), np.vdot(amp, g_src)
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)

    def misfit(c):
        out, _, _ = _memory.forward(toy, ToyCoeffs(c=c), amp, None, False)
        return np.vdot(out, d)

    dc = np.random.default_rng(3).standard_normal(N)
    h = 1e-6
    fd = (misfit(coeffs.c + h * dc) - misfit(coeffs.c - h * dc)) / (2 * h)
    assert abs(fd - np.vdot(g, dc)) <= 1e-7 * abs(fd)


def test_boundary_saving_is_refused_for_an_equation_that_is_not_reversible():
    toy = ToyStepper()
    boundary = _settings(MemoryOptions(strategy="boundary", boundary=BoundaryOptions()))
    with pytest.raises(ValueError, match="the toy equation") as err:
        _memory.plan(toy, boundary)
    assert "checkpointing" in str(err.value) and "full storage" in str(err.value)
    assert toy.forward_calls == 0
    # Whatever the budget, the automatic choice never picks it.
    full = _memory.full_bytes(toy, 1, None)
    for budget in (10 * full, full - 1, 4 * toy.state_bytes, toy.state_bytes, 0):
        settings = _settings(device=budget)
        assert _memory.plan(toy, settings).strategy != "boundary"
        est = _memory.memory_estimate(toy, settings)
        assert "boundary" not in est.strategies and "boundary" not in est.storage
