"""Elastic impl="c" (the phased CPU kernels of cuda/elastic_stencil.h) against the eager path.

The eager Array-API code is the specification: the compiled forward must
give its receivers and final state to float64 round-off, and the compiled
adjoint its torch-autodiff gradients, for every source and receiver kind,
free surfaces on any face, 2D and 3D, every order.  The gradients against
central differences (every source kind x every receiver kind) are in
tests/test_elastic.py (parametrised by impl), the registry-wide contracts
(memory strategies, edge cells, estimates) in tests/test_equation_contracts.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import sweep
from sweep.propagator.options import CkptOptions, MemoryOptions

torch = pytest.importorskip("torch")
pytest.importorskip("sweep._C")


def _problem(ndim, order=4, nt=30, dtype=np.float64, free=(), src=("fz", "p"), rec=None):
    """Two shots, two sources and three receivers (one on the top row) on a small model."""
    rng = np.random.default_rng(0)
    shape = (18, 22) if ndim == 2 else (12, 10, 16)
    vp = 1800 + 300 * rng.random(shape)
    vs = vp / (1.8 + 0.3 * rng.random(shape))
    rho = 1000 + 500 * rng.random(shape)
    mid = [5] * (ndim - 2)
    src_loc = np.array([[[5 + s, *mid, 8], [9, *mid, 12 + s]] for s in range(2)])
    rec_loc = np.array([[[1, *mid, 3], [10, *mid, 10], [0, *mid, 11]] for _ in range(2)])
    faces = [False] * (2 * ndim)
    for f in free:
        faces[f] = True
    kw = dict(
        source_amplitudes=rng.standard_normal((2, 2, nt)).astype(dtype),
        source_locations=src_loc,
        receiver_locations=rec_loc,
        accuracy=order,
        pml_width=[4, 5] * ndim,
        free_surface=faces,
        source_kind=list(src),
        receiver_kind=list(rec or (["vz", "sxz", "p"] if ndim == 2 else ["vy", "syz", "sxy"])),
    )
    return [m.astype(dtype) for m in (vp, vs, rho)], 5.0, 0.0008, kw


def _run(impl, models, dx, dt, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coarse test grids: dispersion warnings
        return sweep.elastic(*models, dx, dt, impl=impl, **kw)


def _close(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    assert np.abs(a - b).max() <= rtol * max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize(
    ("ndim", "order", "free"),
    [(2, 2, ()), (2, 4, (0,)), (2, 6, (1, 2)), (2, 8, (0, 1, 2, 3)), (3, 4, (0, 3)), (3, 8, (5,))],
)
def test_forward_matches_eager(ndim, order, free):
    models, dx, dt, kw = _problem(ndim, order, free=free)
    e, c = _run("eager", models, dx, dt, kw), _run("c", models, dx, dt, kw)
    assert c.impl == "c"
    _close(c.receivers, e.receivers, 1e-12)
    assert set(c.state) == set(e.state)
    for key in e.state:  # every field and C-PML memory variable, padded
        _close(c.state[key], e.state[key], 1e-12)


def test_forward_matches_eager_float32():
    models, dx, dt, kw = _problem(2, 4, dtype=np.float32, free=(0,))
    e, c = _run("eager", models, dx, dt, kw), _run("c", models, dx, dt, kw)
    assert c.receivers.dtype == np.float32
    _close(c.receivers, e.receivers, 1e-4)


@pytest.mark.parametrize(("ndim", "free"), [(2, ()), (2, (0, 3)), (3, (0,))])
def test_gradients_match_eager_autodiff(ndim, free):
    models, dx, dt, kw = _problem(ndim, 4, nt=24, free=free, src=("p", "fx"),
                                  rec=["sxx", "vx", "szz"])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", **kw)
        d = np.random.default_rng(1).standard_normal(out.receivers.shape)
        got = pullback(d)
        tkw = dict(kw, source_amplitudes=torch.from_numpy(kw["source_amplitudes"]))
        _, pull = sweep.vjp(sweep.elastic, *(torch.from_numpy(m) for m in models), dx, dt,
                            impl="eager", **tkw)  # fmt: skip
        want = pull(torch.from_numpy(d))
    for key in ("vp", "vs", "rho", "source_amplitudes"):
        _close(got[key], want[key].numpy(), 1e-11)


def test_model_adjoint_dot_product():
    """<J dm, d> = <dm, J^T d> for every model (J dm by central differences of a small step),
    and the source dot test to float64 round-off."""
    models, dx, dt, kw = _problem(2, 4, nt=24, free=(0,))
    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", **kw)
        d = rng.standard_normal(out.receivers.shape)
        g = pullback(d)
        for i, name in enumerate(("vp", "vs", "rho")):
            dm = models[i] * rng.uniform(-1, 1, models[i].shape) * 1e-6
            plus = [m + dm if j == i else m for j, m in enumerate(models)]
            minus = [m - dm if j == i else m for j, m in enumerate(models)]
            fd = np.vdot(_run("c", plus, dx, dt, kw).receivers
                         - _run("c", minus, dx, dt, kw).receivers, d) / 2  # fmt: skip
            an = np.vdot(g[name], dm)
            assert abs(fd - an) <= 1e-7 * abs(an), (name, fd, an)
    lhs = np.vdot(out.receivers, d)
    rhs = np.vdot(kw["source_amplitudes"], g["source_amplitudes"])
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


def test_checkpointing_equals_full_storage_bitwise():
    models, dx, dt, kw = _problem(2, 6, nt=26, free=(0, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", **kw)
        d = np.random.default_rng(2).standard_normal(out.receivers.shape)
        ref = pullback(d)
        for mem in (
            MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=4)),
            MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=2)),
        ):
            out2, pb = sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", memory=mem, **kw)
            assert out2.memory_plan.strategy.startswith("ckpt")
            got = pb(d)
            for key in ref:
                assert np.array_equal(got[key], ref[key]), key


def test_threads_and_repeats_are_bitwise_equal():
    """One shot, so that two threads share its rows (not one shot each)."""
    models, dx, dt, kw = _problem(3, 4, nt=16, free=(0,))
    for key in ("source_amplitudes", "source_locations", "receiver_locations"):
        kw[key] = kw[key][:1]
    a = _run("c", models, dx, dt, dict(kw, n_threads=1))
    b = _run("c", models, dx, dt, dict(kw, n_threads=2))
    c = _run("c", models, dx, dt, dict(kw, n_threads=2))
    assert np.array_equal(a.receivers, b.receivers)
    assert np.array_equal(b.receivers, c.receivers)
    for key in a.state:
        assert np.array_equal(a.state[key], b.state[key]), key


def test_boundary_saving_is_refused():
    from sweep.propagator.options import BoundaryOptions

    models, dx, dt, kw = _problem(2, 4, nt=10)
    boundary = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())
    with pytest.raises(ValueError, match="elastic"):
        sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", memory=boundary, **kw)
