"""Elastic impl="c" (the phased CPU kernels of cuda/elastic_stencil.h) against the eager path.

The eager Array-API code is the specification: the compiled forward must
give its receivers and final state to float64 round-off, and the compiled
adjoint its torch-autodiff gradients, for every source and receiver kind,
free surfaces on any face, 2D and 3D, every order.  The gradients against
central differences (every source kind x every receiver kind) are in
tests/test_elastic.py (parametrised by impl), the registry-wide contracts
(memory strategies, edge cells, estimates) in tests/test_equation_contracts.py,
boundary saving in tests/test_elastic_boundary.py.
"""

from __future__ import annotations

import inspect
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


# -- the chain rule from the kernels' coefficients to vp, vs, rho -----------------------------
def _chain_problem(ndim, free, water):
    """A compiled engine on a small model (every cell near an edge), vs = 0 where ``water``."""
    from sweep.equations.elastic.compiled import CompiledElastic
    from sweep.equations.elastic.propagator import _prepare

    _, dx, dt, kw = _problem(ndim, 4, nt=4, free=free)
    rng = np.random.default_rng(4)
    shape = (7, 6) if ndim == 2 else (5, 4, 6)
    vp = 1800 + 300 * rng.random(shape)
    vs = vp / (1.8 + 0.3 * rng.random(shape))
    if water:
        vs[:2] = 0.0  # a water layer on the top rows
        vs[-1, -2:] = 0.0  # and a fluid corner
    rho = 1000 + 500 * rng.random(shape)
    mid = [1] * (ndim - 2)
    kw = dict(kw, source_amplitudes=kw["source_amplitudes"][:1, :1],
              source_locations=np.array([[[3, *mid, 2]]]),
              receiver_locations=np.array([[[3, *mid, 3]]]), source_kind="fz",
              receiver_kind="vz", pml_width=2)  # fmt: skip
    args = inspect.signature(sweep.elastic).bind(vp, vs, rho, dx, dt, **kw)
    args.apply_defaults()
    call = _prepare(**args.arguments)
    engine = CompiledElastic(call.geom, np, np.dtype(np.float64), source_kind=("fz",),
                             receiver_kind=("vz",))  # fmt: skip
    g = tuple(rng.standard_normal(engine.geom.padded_shape) for _ in range(engine.n_coefficients))
    return engine, g, [vp, vs, rho]


def _torch_chain_rule(engine, g, models):
    """The reference: torch autodiff of the coefficient set-up."""
    from sweep.equations.elastic.compiled import coefficient_arrays
    from sweep.equations.elastic.eager import EagerElastic

    like = torch.zeros(engine.geom.model_shape, dtype=torch.float64)
    eager = EagerElastic.build(engine.geom, like, **engine.kinds)
    ms = [torch.tensor(m, requires_grad=True) for m in models]
    arrays = coefficient_arrays(eager, torch, *ms)
    total = sum((a * torch.from_numpy(x)).sum() for a, x in zip(arrays, g, strict=True))
    grads = torch.autograd.grad(total, ms, allow_unused=True)
    return [np.zeros(m.shape) if x is None else x.numpy() for m, x in zip(ms, grads, strict=True)]


CHAIN_CASES = [(2, (), False), (2, (0, 3), True), (2, (0, 1, 2, 3), True), (3, (0, 5), True)]


@pytest.mark.parametrize(("ndim", "free", "water"), CHAIN_CASES)
def test_chain_rule_matches_torch_autodiff(ndim, free, water):
    """The hand-written transpose of the coefficient set-up equals autodiff's, also on torch."""
    from sweep.equations.elastic.compiled import coefficient_arrays_transpose, model_gradients
    from sweep.equations.elastic.eager import EagerElastic

    engine, g, models = _chain_problem(ndim, free, water)
    got = model_gradients(engine, g, *models)
    want = _torch_chain_rule(engine, g, models)
    for name, w in zip(("vp", "vs", "rho"), want, strict=True):
        _close(got[name], w, 1e-13)
    # The same code on torch arrays.
    like = torch.zeros(engine.geom.model_shape, dtype=torch.float64)
    eager_t = EagerElastic.build(engine.geom, like, **engine.kinds)
    on_torch = coefficient_arrays_transpose(
        eager_t, tuple(torch.from_numpy(x) for x in g), *(torch.from_numpy(m) for m in models)
    )
    for x, w in zip(on_torch, want, strict=True):
        _close(x.numpy(), w, 1e-13)


@pytest.mark.parametrize(("ndim", "free", "water"), CHAIN_CASES)
def test_chain_rule_on_immutable_jax_arrays(ndim, free, water):
    """The hand-written transpose on JAX arrays (no in-place updates) equals NumPy's."""
    jax = pytest.importorskip("jax")
    from sweep.equations.elastic.compiled import coefficient_arrays_transpose, model_gradients
    from sweep.equations.elastic.eager import EagerElastic

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    engine, g, models = _chain_problem(ndim, free, water)
    want = model_gradients(engine, g, *models)
    like = jnp.zeros(engine.geom.model_shape, dtype=jnp.float64)
    eager_j = EagerElastic.build(engine.geom, like, **engine.kinds)
    on_jax = coefficient_arrays_transpose(
        eager_j, tuple(jnp.asarray(x) for x in g), *(jnp.asarray(m) for m in models)
    )
    for x, name in zip(on_jax, ("vp", "vs", "rho"), strict=True):
        _close(np.asarray(x), want[name], 1e-13)


@pytest.mark.parametrize(("ndim", "free", "water"), CHAIN_CASES[1:])
def test_chain_rule_against_central_differences_at_every_cell(ndim, free, water):
    """Every model cell (edges, corners, fluid cells included) against central differences."""
    from sweep.equations.elastic.compiled import coefficient_arrays, model_gradients

    engine, g, models = _chain_problem(ndim, free, water)
    got = model_gradients(engine, g, *models)

    def value(ms):
        arrays = coefficient_arrays(engine.eager, np, *ms)
        return sum(float(np.vdot(a, x)) for a, x in zip(arrays, g, strict=True))

    for i, name in enumerate(("vp", "vs", "rho")):
        fd = np.zeros(models[i].shape)
        for cell in np.ndindex(models[i].shape):
            step = 1e-6 * models[i][cell] if models[i][cell] else 1e-3
            plus = [m.copy() for m in models]
            minus = [m.copy() for m in models]
            plus[i][cell] += step
            minus[i][cell] -= step
            fd[cell] = (value(plus) - value(minus)) / (2 * step)
        scale = np.abs(fd).max()
        assert np.abs(got[name] - fd).max() <= 1e-7 * scale, name
        if name == "vs" and water:
            assert np.all(got["vs"][models[1] == 0] == 0)  # mu = rho vs^2 is flat at vs = 0


def test_gradient_without_torch_or_jax(tmp_path):
    """impl='c' gives the elastic gradient with NumPy alone: torch and JAX made unimportable.

    With a DAS receiver (gauge, strain) as well: the whole compiled path."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import importlib.abc, sys

        class Block(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] in ("torch", "jax", "jaxlib"):
                    raise ImportError(f"{name} is blocked")
                return None

        sys.meta_path.insert(0, Block())
        import warnings
        import numpy as np
        import sweep

        rng = np.random.default_rng(0)
        vp = 1800 + 300 * rng.random((16, 18))
        vs = vp / 1.9
        vs[:3] = 0.0
        rho = 1000 + 500 * rng.random((16, 18))
        kw = dict(source_amplitudes=rng.standard_normal((1, 1, 20)),
                  source_locations=np.array([[[6, 8]]]),
                  receiver_locations=np.array([[[9, 9], [10, 8]]]), receiver_kind=["vx", "exx"],
                  gauge_length=10.0, quantity="strain", pml_width=4,
                  free_surface=[True, False, False, False])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, pullback = sweep.vjp(sweep.elastic, vp, vs, rho, 5.0, 8e-4, impl="c", **kw)
            g = pullback(np.ones_like(out.receivers))
        assert out.impl == "c"
        assert all(np.isfinite(g[k]).all() and np.abs(g[k]).max() > 0 for k in ("vp", "vs", "rho"))
        assert not any(m.split(".")[0] in ("torch", "jax") for m in sys.modules), "imported"
        print("ok")
        """
    )
    path = tmp_path / "no_torch.py"
    path.write_text(script)
    run = subprocess.run([sys.executable, "-P", str(path)], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_harmonic_mean_on_numpy_is_the_generic_expression_bitwise(dtype):
    """NumPy's fast harmonic mean of mu equals the differentiable expression bit for bit.

    Zero corners (water) make the mean zero; the fast path forms it as
    ``(4 dt) / sum(1 / corner)`` times the corners' joint mask.
    """
    import math

    from sweep.equations.elastic.eager import _corner_numpy, _harmonic_numpy

    rng = np.random.default_rng(5)
    xs = [(rng.random((23, 31)) * 3e9).astype(dtype) for _ in range(4)]
    for x in xs:
        x[rng.random(x.shape) < 0.25] = 0
    dt = 7.3e-4

    def corner(x):  # as EagerElastic.coefficients writes it for every array library
        p = (x > 0).astype(x.dtype)
        return p, 1 / (x * p + (1 - p))

    generic = [corner(x) for x in xs]
    want = dt * math.prod(p for p, _ in generic) * 4 / sum(t for _, t in generic)
    fast = [_corner_numpy(x) for x in xs]
    for (_, a), (_, b) in zip(generic, fast, strict=True):
        assert a.tobytes() == b.tobytes()
    got = _harmonic_numpy(dt, fast)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    assert (got == 0).any() and (got > 0).any()


def test_staggered_shift_and_mean_on_numpy_are_take_bitwise():
    """NumPy's shift and mean along an axis (flat runs) equal ``take`` of the next node.

    C-ordered, Fortran-ordered and reversed views, every axis, unit extents.
    """
    from sweep._staggered import EagerStaggered

    engine = EagerStaggered.__new__(EagerStaggered)  # the two methods use no state
    rng = np.random.default_rng(2)
    for shape in [(7,), (5, 6), (4, 5, 6), (1, 3, 4), (3, 1, 5), (2, 3, 1)]:
        for dtype in (np.float32, np.float64):
            m = rng.random(shape).astype(dtype)
            for x in (m, np.asfortranarray(m), m[..., ::-1]):
                for d in range(m.ndim):
                    n = x.shape[d]
                    want = np.take(x, np.minimum(np.arange(n) + 1, n - 1), axis=d)
                    got = engine._shift(x, d)
                    assert got.tobytes() == want.tobytes()
                    assert engine._mean_next(x, d).tobytes() == (0.5 * (x + want)).tobytes()


@pytest.mark.parametrize(("ndim", "free"), [(2, (0, 1)), (3, (0, 1, 4)), (3, ())])
@pytest.mark.parametrize("planes", [1, 2, 3, 1000])
def test_kernel_coefficients_on_slabs_of_planes_are_the_whole_grid_bitwise(
    ndim, free, planes, monkeypatch
):
    """Coefficients a slab of planes at a time (free faces, water) equal the whole grid's.

    The kernels' fields against :func:`coefficient_arrays` (the whole grid,
    then the live masks): bit for bit, and a pair of equal moduli is one field.
    """
    import sweep._compiled as compiled_core
    from sweep.equations.elastic.compiled import coefficient_arrays

    monkeypatch.setattr(compiled_core, "_SLAB_BYTES", 0)
    monkeypatch.setattr(compiled_core, "_SLAB_PLANES", planes)
    engine, _, models = _chain_problem(ndim, free, water=True)
    got = engine.kernel_coefficients(*models)
    want = coefficient_arrays(engine.eager, np, *models)
    assert len(got) == len(want) == engine.n_coefficients
    for x, w in zip(got, want, strict=True):
        assert x.dtype == w.dtype and x.tobytes() == w.tobytes()
    assert len({id(x) for x in got}) == len({id(w) for w in want})
