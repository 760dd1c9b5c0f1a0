"""Contracts every registered equation meets, run over the whole registry.

A new equation in ``sweep.equations.REGISTRY`` (with a ``problem``) is tested
here without new test code: gradients against central differences over the
whole model and over its edge cells alone, the adjoint dot-product test of
the source-to-receiver map, eager against compiled where both exist,
every gradient memory strategy against full storage (boundary saving where
the equation declares itself reversible), determinism, the adapters, and bad
inputs rejected before any compute.
"""

import math

import numpy as np
import pytest

import sweep
from sweep import equations
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import random_problem

torch = pytest.importorskip("torch")

NAMES = equations.names()
# (equation, impl) for every implementation each equation has.
IMPLS = [(n, i) for n in NAMES for i in ("eager", "c") if i == "eager" or equations.get(n).compiled]


def _ndim(name):
    """The dimension the single-dimension contracts use: 2D where the equation has it."""
    ndims = equations.get(name).ndims
    return 2 if 2 in ndims else ndims[0]


def _problem(name, ndim=None, **kw):
    ndim = _ndim(name) if ndim is None else ndim
    if ndim not in equations.get(name).ndims:
        pytest.skip(f"{name} is not defined in {ndim}D")
    return random_problem(ndim, np.float64, equation=name, nt=40, **kw)


def _split(name, problem):
    spec = equations.get(name)
    models = [problem[m] for m in spec.models]
    rest = {k: v for k, v in problem.items() if k not in spec.models}
    return spec, models, rest


def _tensors(problem):
    return {k: torch.from_numpy(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
            for k, v in problem.items()}  # fmt: skip


def _impl(spec):
    return "c" if spec.compiled else "eager"


def _objective(spec, models, rest, d, impl):
    out = spec.function(*models, **rest, impl=impl)
    return float(np.vdot(d, np.asarray(out.receivers)))


def _directions(spec, models, rng, mask=None):
    out = []
    for x, m in zip(models, spec.model_specs, strict=True):
        r = rng.uniform(-1.0, 1.0, x.shape)
        dx = r if m.constraint == "any" else x * r  # relative steps of positive models
        out.append(dx if mask is None else dx * mask)
    return out


def _gradients(spec, models, rest, d):
    t = _tensors(rest)
    out, pullback = sweep.vjp(spec.function, *(torch.from_numpy(m) for m in models), **t,
                              impl="eager")  # fmt: skip
    g = pullback(torch.from_numpy(d))
    return out, {k: v.numpy() for k, v in g.items()}


def _check_directional(spec, models, rest, d, dirs, impl="eager", h=1e-5):
    if impl == "c":
        _, pullback = sweep.vjp(spec.function, *models, **rest, impl="c")
        g = pullback(d)
    else:
        _, g = _gradients(spec, models, rest, d)
    plus = [m + h * dm for m, dm in zip(models, dirs, strict=True)]
    minus = [m - h * dm for m, dm in zip(models, dirs, strict=True)]
    fd = (_objective(spec, plus, rest, d, impl) - _objective(spec, minus, rest, d, impl)) / (2 * h)
    an = sum(float(np.vdot(g[n], dm)) for n, dm in zip(spec.models, dirs, strict=True))
    assert math.isclose(fd, an, rel_tol=1e-6), (fd, an)


@pytest.mark.parametrize(("name", "impl"), IMPLS)
@pytest.mark.parametrize("ndim", [2, 3])
def test_gradient_matches_central_differences(name, impl, ndim):
    problem = _problem(name, ndim, free_surface=(ndim == 2))
    spec, models, rest = _split(name, problem)
    rng = np.random.default_rng(1)
    n_rec = problem["receiver_locations"].shape[1]
    d = rng.standard_normal((2, n_rec, 40))
    _check_directional(spec, models, rest, d, _directions(spec, models, rng), impl)


def _edge_mask(shape):
    mask = np.zeros(shape)
    for d in range(len(shape)):
        sl = [slice(None)] * len(shape)
        for index in (0, -1):
            sl[d] = index
            mask[tuple(sl)] = 1.0
    return mask


@pytest.mark.parametrize(("name", "impl"), IMPLS)
@pytest.mark.parametrize("accuracy", [2, 8])
def test_gradient_at_edge_cells(name, impl, accuracy):
    """Perturbing only the edge cells (which the CPML repeats) with the acquisition beside them."""
    problem = _problem(name, accuracy=accuracy)
    shape = problem["source_locations"].shape
    model_shape = problem[equations.get(name).models[0]].shape
    ndim = len(model_shape)
    # Four corners one cell in (2D: all of them), two opposite ones per shot as sources.
    corners = np.array([[1 if (c >> d) & 1 == 0 else n - 2 for d, n in enumerate(model_shape)]
                        for c in (0, 2**ndim - 1, 1, 2**ndim - 2)])  # fmt: skip
    problem["source_locations"] = np.stack([corners[[0, 1]], corners[[2, 3]]])[: shape[0]]
    problem["receiver_locations"] = np.broadcast_to(corners, (shape[0], 4, ndim)).copy()
    spec, models, rest = _split(name, problem)
    rng = np.random.default_rng(2)
    d = rng.standard_normal((2, 4, 40))
    dirs = _directions(spec, models, rng, mask=_edge_mask(models[0].shape))
    _check_directional(spec, models, rest, d, dirs, impl)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("ndim", [2, 3])
def test_source_adjoint_dot_product(name, ndim):
    """Receivers are linear in the source amplitudes: <d, F a> = <F^T d, a>."""
    problem = _problem(name, ndim)
    spec, models, rest = _split(name, problem)
    impl = _impl(spec)
    rng = np.random.default_rng(3)
    out = spec.function(*models, **rest, impl=impl)
    d = rng.standard_normal(out.receivers.shape)
    if impl == "c":
        _, pullback = sweep.vjp(spec.function, *models, **rest, impl="c")
        g = pullback(d)["source_amplitudes"]
    else:
        _, g = _gradients(spec, models, rest, d)
        g = g["source_amplitudes"]
    lhs = float(np.vdot(d, np.asarray(out.receivers)))
    rhs = float(np.vdot(g, problem["source_amplitudes"]))
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs), (lhs, rhs)


@pytest.mark.parametrize("name", [n for n in NAMES if equations.get(n).compiled])
def test_eager_matches_compiled(name):
    problem = _problem(name, 2, free_surface=True)
    spec, models, rest = _split(name, problem)
    a = spec.function(*models, **rest, impl="eager").receivers
    b = spec.function(*models, **rest, impl="c").receivers
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * np.abs(b).max())


# Every strategy of sweep._memory besides full storage in memory (the reference).
_REPLAYING = {
    "ckpt-chunk": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=5)),
    "ckpt-recursive": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3)),
}
_BOUNDARY = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())


@pytest.mark.parametrize("name", [n for n in NAMES if equations.get(n).compiled])
@pytest.mark.parametrize("ndim", [2, 3])
def test_every_memory_strategy_matches_full_storage(name, ndim, tmp_path, monkeypatch):
    """Replaying strategies and disk storage bitwise; boundary saving (reversible
    equations) to float64 round-off, with the source gradient bitwise; refused otherwise."""
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    problem = _problem(name, ndim, free_surface=True)
    spec, models, rest = _split(name, problem)
    out0, pullback = sweep.vjp(spec.function, *models, **rest, impl="c", storage_mode="device")
    d = np.random.default_rng(4).standard_normal(np.shape(out0.receivers))
    ref = pullback(d)
    runs = {"disk": {"storage_mode": "disk"}} | {k: {"memory": m} for k, m in _REPLAYING.items()}
    for what, memory in runs.items():
        out, pullback = sweep.vjp(spec.function, *models, **rest, impl="c", **memory)
        assert out.memory_plan.strategy == ("full" if what == "disk" else what)
        got = pullback(d)
        for key in spec.gradients:
            assert np.array_equal(got[key], ref[key]), (what, key)
    if not spec.reversible:
        with pytest.raises(ValueError, match=f"{name} equation"):
            sweep.vjp(spec.function, *models, **rest, impl="c", memory=_BOUNDARY)
        return
    out, pullback = sweep.vjp(spec.function, *models, **rest, impl="c", memory=_BOUNDARY)
    assert out.memory_plan.strategy == "boundary"
    assert np.array_equal(np.asarray(out.receivers), np.asarray(out0.receivers))
    got = pullback(d)
    for key in spec.models:
        scale = np.abs(ref[key]).max()
        assert scale > 0, key
        np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-12 * scale, err_msg=key)
    assert np.array_equal(got["source_amplitudes"], ref["source_amplitudes"])


@pytest.mark.parametrize("name", [n for n in NAMES if equations.get(n).compiled])
@pytest.mark.parametrize("strategy", ["full", "boundary", "ckpt_chunk"])
def test_estimate_memory_is_within_ten_percent_of_the_measured_peak(name, strategy):
    """sweep.estimate_memory(fn, ...) against tracemalloc's peak of the same gradient run."""
    import tracemalloc

    problem = random_problem(2, np.float32, equation=name, nt=300)
    spec, models, rest = _split(name, problem)
    models = [np.ascontiguousarray(np.tile(m, (3, 8))[:60, :200]) for m in models]  # larger
    if strategy == "boundary" and not spec.reversible:
        pytest.skip(f"{name} is not reversible")
    memory = {
        "full": {"storage_mode": "device"},
        "boundary": {"memory": _BOUNDARY},
        "ckpt_chunk": {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=10))},
    }[strategy]
    est = sweep.estimate_memory(spec.function, *models, **rest, impl="c", **memory)
    assert est.plan.strategy == strategy.replace("_", "-")
    assert est.peak == est.strategies[strategy]
    tracemalloc.start()
    try:
        out, pullback = sweep.vjp(spec.function, *models, **rest, impl="c", **memory)
        pullback(np.ones_like(out.receivers))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert abs(est.peak - peak) <= 0.1 * peak, (est.peak, peak)


@pytest.mark.parametrize("name", [n for n in NAMES if equations.get(n).reversible])
@pytest.mark.parametrize("shape", [(7, 9), (7, 30), (30, 7)])
def test_boundary_saving_on_models_narrower_than_two_halos(name, shape):
    """With accuracy 8 every cell of a 7-cell axis is in the band (no plain cells there)."""
    problem = _problem(name, 2, accuracy=8)
    spec = equations.get(name)
    rng = np.random.default_rng(5)
    big = equations._load(spec.problem)(shape, rng, np.float64) if spec.problem else None
    for m in spec.models:
        problem[m] = big[m] if big else 1500.0 + 500.0 * rng.random(shape)
    problem["source_locations"] = np.array([[[3, 3]], [[4, 5]]])
    problem["source_amplitudes"] = problem["source_amplitudes"][:, :1]
    problem["receiver_locations"] = np.array([[[2, 2], [5, 6]]] * 2)
    spec, models, rest = _split(name, problem)
    out, pullback = sweep.vjp(spec.function, *models, **rest, impl="c")
    d = rng.standard_normal(np.shape(out.receivers))
    ref = pullback(d)
    _, pullback = sweep.vjp(spec.function, *models, **rest, impl="c", memory=_BOUNDARY)
    got = pullback(d)
    for key in spec.models:
        np.testing.assert_allclose(got[key], ref[key], rtol=0,
                                   atol=1e-12 * np.abs(ref[key]).max(), err_msg=key)  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_deterministic(name):
    problem = _problem(name)
    spec, models, rest = _split(name, problem)
    a = spec.function(*models, **rest)
    b = spec.function(*models, **rest)
    assert np.array_equal(np.asarray(a.receivers), np.asarray(b.receivers))
    assert np.array_equal(np.asarray(a.wavefield), np.asarray(b.wavefield))


@pytest.mark.parametrize("name", NAMES)
def test_prop_torch_matches_function(name):
    from sweep.propagator.torch import PropTorch

    problem = _problem(name)
    spec, models, rest = _split(name, problem)
    want = spec.function(*models, **rest).receivers
    settings = {k: v for k, v in rest.items() if k != "source_amplitudes"}
    prop = PropTorch(name, **settings)
    got = prop(*(torch.from_numpy(m) for m in models),
               source_amplitudes=torch.from_numpy(rest["source_amplitudes"]))  # fmt: skip
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=0, atol=1e-11 * np.abs(want).max())


@pytest.mark.parametrize("name", NAMES)
def test_float32_matches_float64(name):
    problem = _problem(name)
    spec, models, rest = _split(name, problem)
    want = spec.function(*models, **rest).receivers
    p32 = {k: v.astype(np.float32) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
           for k, v in problem.items()}  # fmt: skip
    spec, models32, rest32 = _split(name, p32)
    got = spec.function(*models32, **rest32).receivers
    assert np.linalg.norm(got - want) <= 1e-4 * np.linalg.norm(want)


# -- bad inputs: every model, before any compute -------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_bad_model_values_name_the_model(name):
    problem = _problem(name)
    spec, models, rest = _split(name, problem)
    for i, m in enumerate(spec.model_specs):
        bad = [x.copy() for x in models]
        bad[i][3, 4] = np.nan
        with pytest.raises(ValueError, match=rf"{m.name} contains NaN"):
            spec.function(*bad, **rest)
        bad[i][3, 4] = -1.0
        if m.constraint == "any":
            spec.function(*bad, **rest)  # a signed model accepts negative values
        else:
            with pytest.raises(ValueError, match=rf"{m.name} must be"):
                spec.function(*bad, **rest)


@pytest.mark.parametrize("name", [n for n in NAMES if len(equations.get(n).models) > 1])
def test_models_must_share_shape_dtype_and_library(name):
    problem = _problem(name)
    spec, models, rest = _split(name, problem)
    other = spec.models[1]
    with pytest.raises(ValueError, match=rf"{other} has shape"):
        spec.function(models[0], models[1][:-1], *models[2:], **rest)
    with pytest.raises(TypeError, match=rf"{other} is float32"):
        spec.function(models[0], models[1].astype(np.float32), *models[2:], **rest)
    with pytest.raises(TypeError, match=rf"{other} is a torch"):
        spec.function(models[0], torch.from_numpy(models[1]), *models[2:], **rest)


@pytest.mark.parametrize("name", NAMES)
def test_cfl_violation_is_rejected(name):
    problem = _problem(name)
    spec, models, rest = _split(name, problem)
    with pytest.raises(ValueError, match="CFL"):
        spec.function(*models, **{**rest, "dt": 5e-3})


@pytest.mark.parametrize("name", [n for n in NAMES if not equations.get(n).compiled])
def test_missing_compiled_kernels_are_explicit(name):
    problem = _problem(name)
    spec, models, rest = _split(name, problem)
    with pytest.raises(ValueError, match="no compiled kernels"):
        spec.function(*models, **rest, impl="c")
    with pytest.raises(ValueError, match="NumPy has none"):
        sweep.vjp(spec.function, *models, **rest)
