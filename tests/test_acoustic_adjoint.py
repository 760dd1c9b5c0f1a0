"""Correctness gates of the acoustic propagator: adjoint, Taylor, eager vs c, determinism."""

import numpy as np
import pytest

import sweep
from sweep.testing import random_problem

ORDERS = (2, 4, 6, 8)
NDIMS = (2, 3)


def _dot_test(problem, impl):
    """<F a, d> == <a, F^T d> for the linear map F: source amplitudes -> receivers."""
    rng = np.random.default_rng(1)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl=impl)
    d = rng.standard_normal(out.receivers.shape)
    grads = pullback(d)
    lhs = np.vdot(d, out.receivers)
    rhs = np.vdot(grads["source_amplitudes"], problem["source_amplitudes"])
    return abs(lhs - rhs) / abs(lhs)


@pytest.mark.parametrize("ndim", NDIMS)
@pytest.mark.parametrize("order", ORDERS)
def test_adjoint_dot_product_c(ndim, order):
    problem = random_problem(ndim, accuracy=order)
    assert _dot_test(problem, "c") < 1e-11


@pytest.mark.parametrize("ndim", NDIMS)
@pytest.mark.parametrize("order", (2, 8))
def test_adjoint_dot_product_c_free_surface(ndim, order):
    free = (True, False, False, True) if ndim == 2 else (True, False, False, False, False, True)
    problem = random_problem(ndim, accuracy=order, free_surface=free)
    assert _dot_test(problem, "c") < 1e-11


@pytest.mark.parametrize("ndim", NDIMS)
@pytest.mark.parametrize("order", ORDERS)
def test_adjoint_dot_product_eager(ndim, order):
    torch = pytest.importorskip("torch")
    problem = random_problem(ndim, accuracy=order, nt=30)
    problem = {
        k: torch.from_numpy(x) if k in ("v", "source_amplitudes") else x for k, x in problem.items()
    }
    rng = np.random.default_rng(1)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="eager")
    d = torch.from_numpy(rng.standard_normal(tuple(out.receivers.shape)))
    g = pullback(d)["source_amplitudes"]
    lhs = float((d * out.receivers).sum())
    rhs = float((g * problem["source_amplitudes"]).sum())
    assert abs(lhs - rhs) / abs(lhs) < 1e-11


def _taylor_remainders(problem, impl="c"):
    """|J(v + h dv) - J(v) - h <g, dv>| for h = h0 / 2^k; second order when g is right."""
    rng = np.random.default_rng(2)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl=impl)
    d = out.receivers.copy()  # J(v) = <d, F(v)> with d = F(v0): a well-conditioned slope
    g = pullback(d)["v"]
    # Every cell, the edge cells the CPML copies included.
    dv = rng.standard_normal(problem["v"].shape) * 5.0
    j0 = np.vdot(d, out.receivers)
    slope = np.vdot(g, dv)
    remainders = []
    for h in (1.0, 0.5, 0.25, 0.125):
        p = dict(problem, v=problem["v"] + h * dv)
        j = np.vdot(d, sweep.acoustic(**p, impl=impl).receivers)
        remainders.append(abs(j - j0 - h * slope))
    return np.array(remainders), abs(slope)


@pytest.mark.parametrize(("ndim", "order"), [(2, 2), (2, 4), (2, 8), (3, 4), (3, 8)])
@pytest.mark.parametrize("free_surface", [False, True])
def test_taylor_velocity_gradient(ndim, order, free_surface):
    problem = random_problem(ndim, accuracy=order, free_surface=free_surface)
    rem, slope = _taylor_remainders(problem)
    rates = np.log2(rem[:-1] / rem[1:])
    assert np.all(rates > 1.8), rates
    # With the gradient removed, what is left is small next to the first-order change.
    assert rem[-1] < 0.01 * 0.125 * slope


@pytest.mark.parametrize("ndim", NDIMS)
@pytest.mark.parametrize("order", ORDERS)
def test_eager_matches_c_forward(ndim, order):
    problem = random_problem(ndim, accuracy=order, free_surface=True)
    rc = sweep.acoustic(**problem, impl="c")
    re = sweep.acoustic(**problem, impl="eager")
    scale = np.abs(re.receivers).max()
    np.testing.assert_allclose(rc.receivers, re.receivers, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(
        rc.wavefield, re.wavefield, rtol=0, atol=1e-12 * np.abs(re.wavefield).max()
    )


@pytest.mark.parametrize("ndim", NDIMS)
@pytest.mark.parametrize("order", ORDERS)
def test_eager_matches_c_gradient(ndim, order):
    torch = pytest.importorskip("torch")
    problem = random_problem(ndim, accuracy=order, nt=30, free_surface=True)
    rng = np.random.default_rng(3)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c")
    d = rng.standard_normal(out.receivers.shape)
    gc = pullback(d)
    tp = {
        k: torch.from_numpy(x) if k in ("v", "source_amplitudes") else x for k, x in problem.items()
    }
    _, pullback_e = sweep.vjp(sweep.acoustic, **tp, impl="eager")
    ge = pullback_e(torch.from_numpy(d))
    for key in ("v", "source_amplitudes"):
        ref = ge[key].numpy()
        np.testing.assert_allclose(gc[key], ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@pytest.mark.parametrize("ndim", NDIMS)
def test_float32_matches_float64(ndim):
    p64 = random_problem(ndim, accuracy=8)
    p32 = random_problem(ndim, np.float32, accuracy=8)
    r64 = sweep.acoustic(**p64).receivers
    r32 = sweep.acoustic(**p32).receivers
    assert r32.dtype == np.float32
    assert np.abs(r32 - r64).max() < 1e-5 * np.abs(r64).max()
    out, pullback = sweep.vjp(sweep.acoustic, **p32)
    g = pullback(np.ones_like(out.receivers))
    assert g["v"].dtype == np.float32 and g["source_amplitudes"].dtype == np.float32


@pytest.mark.parametrize("ndim", NDIMS)
def test_deterministic_and_thread_independent(ndim):
    problem = random_problem(ndim, np.float32, accuracy=8, free_surface=True)
    runs = [sweep.acoustic(**problem, n_threads=n).receivers for n in (2, 2, 1)]
    assert np.array_equal(runs[0], runs[1])
    assert np.array_equal(runs[0], runs[2])
    grads = []
    for n in (2, 2, 1):
        out, pullback = sweep.vjp(sweep.acoustic, **problem, n_threads=n)
        grads.append(pullback(np.ones_like(out.receivers)))
    for g in grads[1:]:
        assert np.array_equal(g["v"], grads[0]["v"])
        assert np.array_equal(g["source_amplitudes"], grads[0]["source_amplitudes"])


def test_gradient_sums_over_shots():
    """The gradient of a batch equals the sum of per-shot gradients."""
    problem = random_problem(2, accuracy=4, n_shots=3)
    rng = np.random.default_rng(4)
    out, pullback = sweep.vjp(sweep.acoustic, **problem)
    d = rng.standard_normal(out.receivers.shape)
    total = pullback(d)["v"]
    parts = 0.0
    for s in range(3):
        p = dict(problem)
        for key in ("source_amplitudes", "source_locations", "receiver_locations"):
            p[key] = problem[key][s : s + 1]
        _, pb = sweep.vjp(sweep.acoustic, **p)
        parts = parts + pb(d[s : s + 1])["v"]
    np.testing.assert_allclose(total, parts, rtol=1e-12, atol=1e-14 * np.abs(total).max())


def test_duplicate_sources_and_receivers_accumulate():
    problem = random_problem(2, accuracy=4, n_shots=1, n_src=1, n_rec=1)
    dup = dict(problem)
    dup["source_locations"] = np.repeat(problem["source_locations"], 2, axis=1)
    dup["source_amplitudes"] = np.repeat(problem["source_amplitudes"], 2, axis=1) / 2
    dup["receiver_locations"] = np.repeat(problem["receiver_locations"], 2, axis=1)
    r1 = sweep.acoustic(**problem).receivers
    r2 = sweep.acoustic(**dup).receivers
    np.testing.assert_allclose(r2[:, 0], r1[:, 0], rtol=1e-12, atol=1e-20)
    np.testing.assert_array_equal(r2[:, 0], r2[:, 1])
    assert _dot_test(dup, "c") < 1e-11
