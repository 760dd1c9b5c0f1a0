"""Maxwell impl="c" (the phased CPU kernels of cuda/maxwell_stencil.h) against the eager path.

The eager Array-API code is the specification: the compiled forward must
give its receivers and final state to round-off, and the compiled adjoint
its torch-autodiff gradients, for every source x receiver component, a
perfect conductor on any face, lossless and lossy media, TM2D and 3D, every
order.  The gradients against central differences are in
tests/test_maxwell.py (parametrised by impl), the registry-wide contracts in
tests/test_equation_contracts.py.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import sweep
from sweep.propagator.options import CkptOptions, MemoryOptions

torch = pytest.importorskip("torch")
pytest.importorskip("sweep._C")

MODELS = ("epsilon", "sigma", "mu")


def _problem(ndim, order=4, nt=24, dtype=np.float64, free=(), lossless=False, src=None, rec=None):
    """Two shots, two sources and three receivers (one on the top row) on a small model."""
    rng = np.random.default_rng(0)
    shape = (16, 18) if ndim == 2 else (10, 9, 12)
    epsilon = 1.5 + 2.5 * rng.random(shape)
    sigma = np.zeros(shape) if lossless else 1e-3 + 2e-2 * rng.random(shape)
    mu = 1.0 + 0.2 * rng.random(shape)
    mid = [4] * (ndim - 2)
    src_loc = np.array([[[4 + s, *mid, 6], [7, *mid, 9 + s]] for s in range(2)])
    rec_loc = np.array([[[0, *mid, 3], [8, *mid, 8], [2, *mid, 10]] for _ in range(2)])
    faces = [False] * (2 * ndim)
    for f in free:
        faces[f] = True
    t = (np.arange(nt) - 6.0) / 3.0
    wavelet = (1 - 2 * t**2) * np.exp(-(t**2))
    kw = dict(
        source_amplitudes=(wavelet * rng.uniform(0.5, 1.5, (2, 2, 1))).astype(dtype),
        source_locations=src_loc,
        receiver_locations=rec_loc,
        accuracy=order,
        pml_width=[3, 4] * ndim,
        free_surface=faces,
        max_vel=2.5e8,
        pml_freq=1e10,
    )
    if ndim == 3:
        kw.update(source_component=src or "ey", receiver_component=rec or ["ex", "ey", "ez"])
    return [m.astype(dtype) for m in (epsilon, sigma, mu)], 5e-3, 6e-12, kw


def _fn(ndim):
    return sweep.tm2d if ndim == 2 else sweep.maxwell3d


def _run(impl, ndim, models, dx, dt, kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coarse test grids: dispersion warnings
        return _fn(ndim)(*models, dx, dt, impl=impl, **kw)


def _close(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    assert np.abs(a - b).max() <= rtol * max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize(
    ("ndim", "order", "free", "lossless"),
    [(2, 2, (), False), (2, 4, (0,), True), (2, 6, (1, 2), False), (2, 8, (0, 1, 2, 3), False),
     (3, 2, (0, 3), True), (3, 4, (), False), (3, 6, (1, 4), False), (3, 8, (0, 5), False)],
)  # fmt: skip
def test_forward_matches_eager(ndim, order, free, lossless):
    models, dx, dt, kw = _problem(ndim, order, free=free, lossless=lossless)
    if ndim == 3:  # the three source components, one per source of each shot
        kw.update(source_component=["ex", "ez"] if order % 4 else ["ey", "ex"])
    e, c = _run("eager", ndim, models, dx, dt, kw), _run("c", ndim, models, dx, dt, kw)
    assert c.impl == "c"
    _close(c.receivers, e.receivers, 1e-12)
    assert set(c.state) == set(e.state)
    for key in e.state:  # every field and C-PML memory variable, padded
        _close(c.state[key], e.state[key], 1e-12)


@pytest.mark.parametrize("src", ["ex", "ey", "ez"])
def test_forward_every_component_pair_3d(src):
    """Source x receiver: each source component against the three receiver components."""
    models, dx, dt, kw = _problem(3, 4, nt=16, free=(0,), src=src)
    _close(_run("c", 3, models, dx, dt, kw).receivers,
           _run("eager", 3, models, dx, dt, kw).receivers, 1e-12)  # fmt: skip


@pytest.mark.parametrize("ndim", [2, 3])
def test_forward_matches_eager_float32(ndim):
    models, dx, dt, kw = _problem(ndim, 4, dtype=np.float32, free=(0,))
    e, c = _run("eager", ndim, models, dx, dt, kw), _run("c", ndim, models, dx, dt, kw)
    assert c.receivers.dtype == np.float32
    _close(c.receivers, e.receivers, 1e-5)


@pytest.mark.parametrize(
    ("ndim", "free", "src"), [(2, (), None), (2, (0, 3), None), (3, (0,), ["ex", "ez"])]
)
def test_gradients_match_eager_autodiff(ndim, free, src):
    models, dx, dt, kw = _problem(ndim, 4, nt=20, free=free, src=src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, pullback = sweep.vjp(_fn(ndim), *models, dx, dt, impl="c", **kw)
        d = np.random.default_rng(1).standard_normal(out.receivers.shape)
        got = pullback(d)
        tkw = dict(kw, source_amplitudes=torch.from_numpy(kw["source_amplitudes"]))
        _, pull = sweep.vjp(_fn(ndim), *(torch.from_numpy(m) for m in models), dx, dt,
                            impl="eager", **tkw)  # fmt: skip
        want = pull(torch.from_numpy(d))
    for key in (*MODELS, "source_amplitudes"):
        _close(got[key], want[key].numpy(), 1e-11)


def test_numpy_gradients_need_no_autodiff_library(monkeypatch):
    """The chain rule to epsilon, sigma and mu is NumPy: it runs with torch and jax hidden."""
    import builtins

    real_import = builtins.__import__

    def no_autodiff(name, *args, **kwargs):
        if name.split(".")[0] in ("torch", "jax"):
            raise ImportError(f"{name} hidden by the test")
        return real_import(name, *args, **kwargs)

    models, dx, dt, kw = _problem(2, 4, nt=12, free=(0,))
    monkeypatch.setattr(builtins, "__import__", no_autodiff)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, pullback = sweep.vjp(sweep.tm2d, *models, dx, dt, **kw)
        g = pullback(np.ones_like(out.receivers))
    assert out.impl == "c"
    assert all(np.abs(g[k]).max() > 0 for k in (*MODELS, "source_amplitudes"))


def test_model_adjoint_dot_product():
    """<J dm, d> = <dm, J^T d> for every model (J dm by central differences of a small step),
    and the source dot test to float64 round-off."""
    models, dx, dt, kw = _problem(2, 4, nt=24, free=(0,))
    rng = np.random.default_rng(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, pullback = sweep.vjp(sweep.tm2d, *models, dx, dt, impl="c", **kw)
        d = rng.standard_normal(out.receivers.shape)
        g = pullback(d)
        for i, name in enumerate(MODELS):
            # sigma's effect is small (sigma dt / eps0 ~ 1e-2): a larger relative step.
            dm = models[i] * rng.uniform(-1, 1, models[i].shape) * (1e-3 if i == 1 else 1e-6)
            plus = [m + dm if j == i else m for j, m in enumerate(models)]
            minus = [m - dm if j == i else m for j, m in enumerate(models)]
            fd = np.vdot(_run("c", 2, plus, dx, dt, kw).receivers
                         - _run("c", 2, minus, dx, dt, kw).receivers, d) / 2  # fmt: skip
            an = np.vdot(g[name], dm)
            assert abs(fd - an) <= 1e-7 * abs(an), (name, fd, an)
    lhs = np.vdot(out.receivers, d)
    rhs = np.vdot(kw["source_amplitudes"], g["source_amplitudes"])
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


@pytest.mark.parametrize("ndim", [2, 3])
def test_checkpointing_equals_full_storage_bitwise(ndim):
    models, dx, dt, kw = _problem(ndim, 6, nt=20, free=(0, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out, pullback = sweep.vjp(_fn(ndim), *models, dx, dt, impl="c", **kw)
        d = np.random.default_rng(2).standard_normal(out.receivers.shape)
        ref = pullback(d)
        for mem in (
            MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=4)),
            MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=2)),
        ):
            out2, pb = sweep.vjp(_fn(ndim), *models, dx, dt, impl="c", memory=mem, **kw)
            assert out2.memory_plan.strategy.startswith("ckpt")
            got = pb(d)
            for key in ref:
                assert np.array_equal(got[key], ref[key]), key


@pytest.mark.parametrize("ndim", [2, 3])
def test_threads_and_repeats_are_bitwise_equal(ndim):
    """One shot, so that two threads share its rows (not one shot each); forward and adjoint."""
    models, dx, dt, kw = _problem(ndim, 4, nt=14, free=(0,))
    for key in ("source_amplitudes", "source_locations", "receiver_locations"):
        kw[key] = kw[key][:1]
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in (1, 2, 2):
            out, pullback = sweep.vjp(_fn(ndim), *models, dx, dt, impl="c", n_threads=n, **kw)
            runs.append((out, pullback(np.ones_like(out.receivers))))
    for out, g in runs[1:]:
        assert np.array_equal(out.receivers, runs[0][0].receivers)
        for key in out.state:
            assert np.array_equal(out.state[key], runs[0][0].state[key]), key
        for key in g:
            assert np.array_equal(g[key], runs[0][1][key]), key


@pytest.mark.parametrize("ndim", [2, 3])
def test_compiled_setup_builds_no_eager_step_and_the_same_coefficients(ndim):
    """The compiled engine's eager engine skips the step's constants, not the coefficients'."""
    from sweep.equations.maxwell import compiled
    from sweep.equations.maxwell.eager import EagerMaxwell
    from sweep.equations.maxwell.propagator import _prepare

    models, dx, dt, kw = _problem(ndim, free=(0,))
    args = inspect.signature(_fn(ndim)).bind(*models, dx, dt, **kw)
    args.apply_defaults()
    call = _prepare(**args.arguments, equation=_fn(ndim).__name__)
    engine = compiled.CompiledMaxwell(call.geom, np, np.float64, **call.extra)
    assert not engine.eager.with_step and not hasattr(engine.eager, "src_terms")
    full = EagerMaxwell.build(call.geom, models[0], **call.extra)
    assert hasattr(full, "src_terms") and full.mirrors["ey"]  # the step's images
    lean = {
        k: c * math.prod(m)
        for k, (c, m) in compiled.coefficient_factors(engine.eager, *models).items()
    }
    ref = {k: c * math.prod(m) for k, (c, m) in compiled.coefficient_factors(full, *models).items()}
    assert lean.keys() == ref.keys()
    for k in ref:
        np.testing.assert_array_equal(lean[k], ref[k])


@pytest.mark.parametrize("ndim", [2, 3])
def test_kernel_coefficients_overwrite_reused_fields_whole(ndim):
    """The kernels' coefficients are the products exactly, in fields whose old values are gone.

    They are written over reused mappings that are not zeroed first
    (``copy_field``): nothing of another call's values may survive, the
    rows' tails past the padded width included.
    """
    from sweep.equations.maxwell import compiled
    from sweep.equations.maxwell.propagator import _prepare

    models, dx, dt, kw = _problem(ndim, free=(0,))
    args = inspect.signature(_fn(ndim)).bind(*models, dx, dt, **kw)
    args.apply_defaults()
    call = _prepare(**args.arguments, equation=_fn(ndim).__name__)
    engine = compiled.CompiledMaxwell(call.geom, np, np.float64, **call.extra)
    for scale in (3.0, 1.0):  # the first call's fields come back dirty to the cache
        ms = [m * scale for m in models]
        got = engine.kernel_coefficients(*ms)
        want = {
            k: c * math.prod(m)  # the live mask's factors per axis
            for k, (c, m) in compiled.coefficient_factors(engine.eager, *ms).items()
        }
        assert got.keys() == want.keys()
        for k, x in got.items():
            np.testing.assert_array_equal(x, want[k])
            wide = np.lib.stride_tricks.as_strided(
                x, (*x.shape[:-1], x.strides[-2] // x.itemsize), x.strides
            )
            assert not wide[..., x.shape[-1] :].any()  # the rows' tails
        del got


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_coefficients_are_the_generic_expressions_bitwise(ndim, dtype):
    """NumPy's in-place coefficients equal the expressions every array library runs, bit for bit."""
    from sweep.equations.maxwell import compiled
    from sweep.equations.maxwell.propagator import _prepare

    models, dx, dt, kw = _problem(ndim, dtype=dtype)
    models[1][..., :3] = 0  # lossless cells too
    args = inspect.signature(_fn(ndim)).bind(*models, dx, dt, **kw)
    args.apply_defaults()
    call = _prepare(**args.arguments, equation=_fn(ndim).__name__)
    eager = compiled.CompiledMaxwell(call.geom, np, dtype, **call.extra).eager
    padded = [eager.pad_model(m) for m in models]
    before = [m.copy() for m in padded]
    fast = eager._coefficients_numpy(*padded)
    generic = eager._coefficients(*padded)
    for f, g in zip(fast, generic, strict=True):
        assert f.keys() == g.keys() and f
        for k in g:
            assert f[k].dtype == g[k].dtype and f[k].tobytes() == g[k].tobytes(), k
    for m, b in zip(padded, before, strict=True):  # the models are left as they were
        assert m.tobytes() == b.tobytes()


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("planes", [1, 2, 3, 1000])
def test_kernel_coefficients_on_slabs_of_planes_are_the_whole_grid_bitwise(
    ndim, planes, monkeypatch
):
    """Coefficients computed a slab of planes at a time equal the whole grid's products."""
    import sweep._compiled as compiled_core
    from sweep.equations.maxwell import compiled
    from sweep.equations.maxwell.propagator import _prepare

    monkeypatch.setattr(compiled_core, "_SLAB_BYTES", 0)
    monkeypatch.setattr(compiled_core, "_SLAB_PLANES", planes)
    monkeypatch.setattr(compiled, "_compiled_coefficients", lambda: None)  # NumPy's path
    models, dx, dt, kw = _problem(ndim, free=(0,), dtype=np.float32)
    args = inspect.signature(_fn(ndim)).bind(*models, dx, dt, **kw)
    args.apply_defaults()
    call = _prepare(**args.arguments, equation=_fn(ndim).__name__)
    engine = compiled.CompiledMaxwell(call.geom, np, np.float32, **call.extra)
    got = engine.kernel_coefficients(*models)
    want = {
        k: c * math.prod(m)
        for k, (c, m) in compiled.coefficient_factors(engine.eager, *models).items()
    }
    assert got.keys() == want.keys()
    for k, x in got.items():
        assert x.dtype == want[k].dtype and x.tobytes() == want[k].tobytes(), k


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("free", [(), (0, -1)])
def test_compiled_host_coefficients_are_numpys_bitwise(ndim, dtype, free, monkeypatch):
    """``sweep._C.maxwell_coefficients`` writes NumPy's coefficient fields bit for bit.

    Heterogeneous models with lossless (``sigma = 0``) regions and
    subnormal conductivities, on 1 and 2 threads, against the NumPy path
    (:meth:`EagerMaxwell._coefficients_numpy` on slabs of planes).
    """
    from sweep.equations.maxwell import compiled
    from sweep.equations.maxwell.propagator import _prepare

    if compiled._compiled_coefficients() is None:
        pytest.skip("sweep._C without maxwell_coefficients")
    models, dx, dt, kw = _problem(ndim, free=free, dtype=dtype)
    rng = np.random.default_rng(7)
    models[0] *= rng.uniform(0.5, 30.0, models[0].shape).astype(dtype)
    models[1][..., :3] = 0  # lossless columns and a lossless block
    models[1][: models[1].shape[0] // 2, 2:5] = 0
    models[1][-1, ...] = np.finfo(dtype).smallest_subnormal * 3
    models[1][0, ...] *= 1e4  # |ca| near 1 and ca < 0
    models[2] *= rng.uniform(0.8, 5.0, models[2].shape).astype(dtype)
    args = inspect.signature(_fn(ndim)).bind(*models, dx, dt, **kw)
    args.apply_defaults()
    call = _prepare(**args.arguments, equation=_fn(ndim).__name__)
    engine = compiled.CompiledMaxwell(call.geom, np, dtype, **call.extra)
    fast = compiled._compiled_coefficients
    monkeypatch.setattr(compiled, "_compiled_coefficients", lambda: None)
    want = {k: x.copy() for k, x in engine.kernel_coefficients(*models).items()}
    monkeypatch.setattr(compiled, "_compiled_coefficients", fast)
    for threads in (1, 2):
        engine.n_threads = threads
        assert compiled.host_coefficients(engine, models) is not None  # the C path runs
        got = engine.kernel_coefficients(*models)
        assert got.keys() == want.keys()
        for k, x in got.items():
            assert x.dtype == want[k].dtype and x.tobytes() == want[k].tobytes(), (threads, k)
            wide = np.lib.stride_tricks.as_strided(
                x, (*x.shape[:-1], x.strides[-2] // x.itemsize), x.strides
            )
            assert not wide[..., x.shape[-1] :].any()  # the rows' tails
        del got


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("planes", [1, 2, 5, 1000])
def test_pad_planes_are_the_padded_models_planes(ndim, planes):
    """``pad_planes`` writes all of ``pad_model(m)[planes]`` into its buffer, bit for bit."""
    from sweep.equations.maxwell import compiled
    from sweep.equations.maxwell.propagator import _prepare

    models, dx, dt, kw = _problem(ndim, free=(0,), dtype=np.float32)
    args = inspect.signature(_fn(ndim)).bind(*models, dx, dt, **kw)
    args.apply_defaults()
    call = _prepare(**args.arguments, equation=_fn(ndim).__name__)
    eager = compiled.CompiledMaxwell(call.geom, np, np.float32, **call.extra).eager
    m = models[0]
    whole = eager.pad_model(m)
    n0 = whole.shape[0]
    buf = np.full((planes + 1, *whole.shape[1:]), np.nan, np.float32)
    for k0 in range(0, n0, planes):
        sl = slice(k0, min(k0 + planes + 1, n0))
        assert eager.pad_planes(m, sl, buf).tobytes() == whole[sl].tobytes(), k0
