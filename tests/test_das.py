"""DAS receivers of sweep.elastic: strain rates, gauges, fibres, gradients, adapters, errors."""

import inspect
import math

import numpy as np
import pytest

import sweep
from sweep.das import Fibre, helical_response
from sweep.testing import ricker

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("ignore:only .* cells per wavelength:UserWarning")

MODELS = ("vp", "vs", "rho")


def _homogeneous(shape, vp=2000.0, vs=1100.0, rho=1800.0):
    return [np.full(shape, x) for x in (vp, vs, rho)]


def _run(models, h, dt, **kw):
    return sweep.elastic(*models, h, dt, **kw).receivers


def test_strain_integrates_to_hookes_law():
    """Strain of the DAS receivers, times the moduli, is the recorded stress (to round-off).

    The strain rates are the update's own differences and ``quantity="strain"``
    its own time integration, so in a homogeneous interior ``sxx = (lambda +
    2 mu) exx + lambda ezz`` holds exactly, sample by sample.
    """
    nz, nx, h, dt, nt = 30, 34, 5.0, 8e-4, 90
    models = _homogeneous((nz, nx))
    amp = 1e6 * ricker(25.0, nt, dt, 0.04)[None, None]
    loc = np.array([[[17, 24]] * 5])
    kw = dict(source_amplitudes=amp, source_locations=np.array([[[15, 10]]]), source_kind="p",
              receiver_locations=loc, pml_width=8)  # fmt: skip
    r = _run(models, h, dt, receiver_kind=["sxx", "szz", "exx", "ezz", "exz"], quantity="strain",
             **kw)[0]  # fmt: skip
    mu = 1800.0 * 1100.0**2
    lam = 1800.0 * 2000.0**2 - 2 * mu
    np.testing.assert_allclose(
        (lam + 2 * mu) * r[2] + lam * r[3], r[0], rtol=0, atol=1e-12 * abs(r[0]).max()
    )
    np.testing.assert_allclose(
        (lam + 2 * mu) * r[3] + lam * r[2], r[1], rtol=0, atol=1e-12 * abs(r[1]).max()
    )
    assert abs(r[0]).max() > 0 and r[2, 0] == 0.0
    # The strain is dt times the exclusive cumulative sum of the rate.
    rate = _run(models, h, dt, receiver_kind=["sxx", "szz", "exx", "ezz", "exz"], **kw)[0]
    np.testing.assert_allclose(r[2:, 1:], dt * np.cumsum(rate[2:, :-1], axis=-1), rtol=1e-12,
                               atol=1e-14 * abs(r[2:]).max())  # fmt: skip


def test_plane_p_wave_along_a_slanted_fibre_matches_analytic():
    """A plane P wave (a sheet of vertical forces) read by a fibre at 30 degrees with a gauge.

    The sheet ``F(t)`` (N/m^2) radiates ``vz = F(t - |z|/vp) / (2 rho vp)``, so
    ``e_zz = -sign(z) F'(t - |z|/vp) / (2 rho vp^2)`` and nothing else; a
    fibre at angle ``theta`` to z reads ``cos^2(theta) e_zz``, and its gauge
    average over ``L`` is ``-cos(theta) (F(t - z1/vp) - F(t - z2/vp)) / (2 rho vp
    L)`` with ``z1, z2`` the depths of the gauge's ends below the sheet.  The
    ``"ezz"`` receiver with the same gauge is the vertical fibre (theta = 0).
    """
    nz, nx, h, dt, nt = 64, 200, 5.0, 1e-3, 230
    vp, rho = 2000.0, 1800.0
    models = _homogeneous((nz, nx), vp=vp, vs=1000.0, rho=rho)
    f, delay, z0 = 15.0, 1 / 15.0, 10
    force = ricker(f, nt, dt, delay)  # per node: a line force of F dx (N/m) in 2D
    amp = np.ascontiguousarray(np.broadcast_to(force * h, (1, nx, nt)))
    src = np.stack([np.full(nx, z0), np.arange(nx)], -1)[None]
    theta, gauge = math.radians(30.0), 20.0
    zc, xc = 40 * h, 100 * h
    d = 0.5 * gauge * np.array([math.cos(theta), math.sin(theta)])
    fibre = Fibre([[zc, xc] - 2 * d, [zc, xc] + 2 * d], channel_spacing=100.0, start=gauge)
    r = _run(models, h, dt, source_amplitudes=amp, source_locations=src,
             receiver_locations=np.array([[[40, 100], [40, 100]]]), receiver_kind=["ezz", "exx"],
             fibre=fibre, gauge_length=gauge, pml_width=20)[0]  # fmt: skip
    assert r.shape == (3, nt)
    t = (np.arange(nt) + 0.5) * dt  # strain rates are sampled at (t + 1/2) dt

    def sheet(tau):  # the Ricker wavelet F, analytic
        a = (math.pi * f * (tau - delay)) ** 2
        return (1 - 2 * a) * np.exp(-a)

    depth = zc - z0 * h

    def gauged(cos):  # the gauge average of cos^2 e_zz along a fibre at cos to z
        z1, z2 = depth - 0.5 * gauge * cos, depth + 0.5 * gauge * cos
        return -cos * (sheet(t - z1 / vp) - sheet(t - z2 / vp)) / (2 * rho * vp * gauge)

    def rel(a, b):
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))

    # "ezz" with a gauge: a vertical fibre.  Measured 2.4 % for both (dispersion).
    assert rel(r[0], gauged(1.0)) < 0.035, rel(r[0], gauged(1.0))
    assert rel(r[2], gauged(math.cos(theta))) < 0.035, rel(r[2], gauged(math.cos(theta)))
    assert np.abs(r[1]).max() < 1e-6 * np.abs(r[0]).max()  # no horizontal strain


def _point_problem(ndim, free_surface=False, nt=40):
    shape = (14, 16) if ndim == 2 else (10, 9, 11)
    rng = np.random.default_rng(3)
    vp = 1800.0 + 300.0 * rng.random(shape)
    models = [vp, vp / (1.8 + 0.3 * rng.random(shape)), 1500.0 + 300.0 * rng.random(shape)]
    dt = 5e-4
    amp = ricker(60.0, nt, dt, 0.02)[None, None] * np.array([1.0, -0.7])[None, :, None]
    src = np.array([[[4] + [5] * (ndim - 1), [7] + [4] * (ndim - 1)]])
    kw = dict(source_amplitudes=amp, source_locations=src, source_kind=["fz", "p"],
              pml_width=3, free_surface=free_surface, accuracy=4)  # fmt: skip
    return models, 5.0, dt, kw


def test_gauge_average_matches_its_definition():
    """A gauge is the average of the multilinear strain rate: trapezoids of point receivers."""
    models, h, dt, kw = _point_problem(2)
    z, x = 7, 8
    nodes = [[z, x + k] for k in range(-2, 3)] + [[z + k, x] for k in range(-2, 3)]
    point = _run(models, h, dt, receiver_locations=np.array([nodes]),
                 receiver_kind=["exx"] * 5 + ["ezz"] * 5, **kw)[0]  # fmt: skip
    # exx over 4 cells: the trapezoid rule on the nodes is exact for a piecewise-linear rate.
    gx = _run(models, h, dt, receiver_locations=np.array([[[z, x]]]), receiver_kind="exx",
              gauge_length=4 * h, **kw)[0, 0]  # fmt: skip
    e = point[:5]
    np.testing.assert_allclose(gx, (e[0] / 2 + e[1] + e[2] + e[3] + e[4] / 2) / 4, rtol=1e-12,
                               atol=1e-13 * abs(gx).max())  # fmt: skip
    # A vertical fibre, gauge 3 cells (ends mid-cell), channel on node (z, x).
    fibre = Fibre(
        [[(z - 2.5) * h, x * h], [(z + 2.5) * h, x * h]], channel_spacing=h, start=2.5 * h
    )
    gz = _run(models, h, dt, fibre=fibre, gauge_length=3 * h, **kw)[0, 0]
    e = point[5:]
    want = ((e[0] + 3 * e[1]) / 8 + (e[1] + 2 * e[2] + e[3]) / 2 + (3 * e[3] + e[4]) / 8) / 3
    np.testing.assert_allclose(gz, want, rtol=1e-12, atol=1e-13 * abs(gz).max())
    assert abs(gz - e[2]).max() > 1e-3 * abs(gz).max()  # the gauge does average


@pytest.mark.parametrize("ndim", [2, 3])
def test_fibre_tangent_and_helical_weights(ndim):
    """A channel reads t^T E t (straight) and the helical average of the normal strains."""
    models, h, dt, kw = _point_problem(ndim)
    node = [5] * ndim
    names = ("ezz", "exx", "exz") if ndim == 2 else ("ezz", "eyy", "exx", "eyz", "exz", "exy")
    comp = _run(models, h, dt, receiver_locations=np.array([[node] * len(names)]),
                receiver_kind=list(names), **kw)[0]  # fmt: skip
    e = {n: comp[i] for i, n in enumerate(names)}
    t = np.array([0.8, 0.6] if ndim == 2 else [0.48, 0.6, 0.64])
    c = np.asarray(node, dtype=float) * h
    straight = Fibre([c - 5 * t, c + 5 * t], channel_spacing=10.0, start=5.0)
    ez = np.eye(ndim)[0] * 10.0
    along_z = Fibre([c - ez, c + ez],
                    channel_spacing=10.0, start=10.0, winding_angle=35.26438968)  # fmt: skip
    got = _run(models, h, dt, fibre=straight, **kw)[0, 0]
    axes = ("z", "x") if ndim == 2 else ("z", "y", "x")

    def comp_e(a, b):
        return e["e" + "".join(sorted(axes[a] + axes[b]))]

    want = sum(t[a] * t[b] * comp_e(a, b) for a in range(ndim) for b in range(ndim))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-13 * abs(want).max())
    helix = _run(models, h, dt, fibre=along_z, **kw)[0, 0]
    if ndim == 3:  # equal weights 1/3 of the three normal strains
        want = (e["ezz"] + e["eyy"] + e["exx"]) / 3
    else:  # plane strain: eyy = 0
        want = (e["ezz"] + e["exx"]) / 3
    np.testing.assert_allclose(helix, want, rtol=1e-7, atol=1e-8 * abs(want).max())


def test_helical_response_geometry():
    """The averaged helix against a numerical average of t^T E t over one turn."""
    rng = np.random.default_rng(0)
    e = rng.standard_normal((3, 3))
    e = e + e.T
    axis = np.array([0.0, 0.0, 1.0])  # the cable along x (index 2)
    for alpha in (0.0, 20.0, 35.2643897, 54.7356103, 90.0):
        a = math.radians(alpha)
        phi = np.linspace(0, 2 * np.pi, 721)[:-1]
        tangents = np.stack([math.cos(a) * -np.sin(phi), math.cos(a) * np.cos(phi),
                             np.full_like(phi, math.sin(a))], -1)  # fmt: skip
        numeric = np.mean(np.einsum("pi,ij,pj->p", tangents, e, tangents))
        w = helical_response(axis, alpha)
        assert abs(np.sum(w * e) - numeric) < 1e-12
    w = helical_response(axis, 54.7356103)
    assert math.isclose(w[2, 2] / w[0, 0], 4.0, rel_tol=1e-6)
    w = helical_response(axis, 35.2643897)
    np.testing.assert_allclose(np.diag(w), [1 / 3] * 3, rtol=1e-6)


def _check_gradients(ndim, free_surface, nt, impl, **das_kw):
    """Directional derivatives (vp, vs, rho) vs central differences; the source dot test.

    ``impl="eager"``: torch autodiff; ``"c"``: the kernels' adjoint on NumPy arrays.
    """
    models, h, dt, kw = _point_problem(ndim, free_surface, nt)
    kw.update(das_kw, impl=impl)
    if impl == "eager":
        t_kw = dict(kw, source_amplitudes=torch.from_numpy(kw["source_amplitudes"]))
        t_models = (torch.from_numpy(m) for m in models)
        out, pullback = sweep.vjp(sweep.elastic, *t_models, h, dt, **t_kw)
    else:
        out, pullback = sweep.vjp(sweep.elastic, *models, h, dt, **kw)
    assert out.impl == impl
    rng = np.random.default_rng(1)
    d = rng.standard_normal(out.receivers.shape)
    g = pullback(torch.from_numpy(d) if impl == "eager" else d)
    g = {k: np.asarray(x) for k, x in g.items()}
    eps = 1e-6
    for i, name in enumerate(MODELS):
        dm = models[i] * rng.uniform(-1.0, 1.0, models[i].shape)
        plus = [m + eps * dm if j == i else m for j, m in enumerate(models)]
        minus = [m - eps * dm if j == i else m for j, m in enumerate(models)]
        fd = float(np.vdot(d, (_run(plus, h, dt, **kw) - _run(minus, h, dt, **kw)) / (2 * eps)))
        an = float(np.vdot(g[name], dm))
        assert math.isclose(fd, an, rel_tol=1e-6), (name, fd, an)
    lhs = float(np.vdot(d, np.asarray(out.receivers)))
    rhs = float(np.vdot(g["source_amplitudes"], kw["source_amplitudes"]))
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs), (lhs, rhs)


def _das_receivers(ndim):
    """Every strain kind at interior nodes (one a row below the top surface) and a fibre."""
    names = ("ezz", "exx", "exz") if ndim == 2 else ("ezz", "eyy", "exx", "eyz", "exz", "exy")
    locs = [[1] + [5] * (ndim - 1)] + [[5 + k % 3] + [6] * (ndim - 1) for k in range(len(names))]
    pts = [[1.0 * 5] + [15.0] * (ndim - 1), [40.0] + [30.0] + [20.0] * (ndim - 2)]
    return dict(receiver_locations=np.array([locs]), receiver_kind=["ezz", *names],
                fibre=Fibre(pts, channel_spacing=7.0))  # fmt: skip


IMPLS = ["eager", "c"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("free_surface", [False, True])
def test_gradients_through_das_2d(free_surface, impl):
    kw = _das_receivers(2)
    _check_gradients(2, free_surface, 30, impl, **kw)
    # Gauges and strain (the normal kinds and the fibre).
    kw.update(receiver_locations=np.array([[[1, 5], [5, 6], [6, 6]]]),
              receiver_kind=["exx", "ezz", "exx"], gauge_length=5.0, quantity="strain")  # fmt: skip
    _check_gradients(2, free_surface, 30, impl, **kw)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("free_surface", [False, True])
def test_gradients_through_das_3d(free_surface, impl):
    kw = _das_receivers(3)
    kw.update(gauge_length=5.0, quantity="strain")
    kw["receiver_locations"] = np.array([[[1, 5, 5], [5, 4, 6], [6, 6, 4]]])
    kw["receiver_kind"] = ["exx", "ezz", "eyy"]
    _check_gradients(3, free_surface, 16, impl, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("free_surface", [False, True])
def test_gradients_through_das_3d_every_kind(free_surface, impl):
    _check_gradients(3, free_surface, 16, impl, **_das_receivers(3))


def test_adapters_agree():
    """PropTorch and PropJax, eager and compiled: the same DAS data and gradients."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from sweep.propagator.jax import PropJax
    from sweep.propagator.torch import PropTorch

    models, h, dt, kw = _point_problem(2, True, 24)
    amp = kw.pop("source_amplitudes")
    kw.update(_das_receivers(2), gauge_length=5.0, quantity="strain", max_vel=2100.0,
              pml_freq=30.0)  # fmt: skip
    kw["receiver_kind"] = ["exx", "ezz", "exx", "exz"]
    kw["receiver_locations"] = kw["receiver_locations"][:, :4]
    kw["gauge_length"] = None
    want = sweep.elastic(*models, h, dt, source_amplitudes=amp, impl="eager", **kw).receivers
    settings = dict(grid_spacing=h, dt=dt, **kw)
    src, rec = settings.pop("source_locations"), settings.pop("receiver_locations")
    ref = None
    for impl in ("eager", "c"):
        pt = PropTorch("elastic", source_locations=src, receiver_locations=rec, impl=impl,
                       **settings)  # fmt: skip
        assert pt.impl == impl
        tm = [torch.from_numpy(m).requires_grad_() for m in models]
        got_t = pt(*tm, source_amplitudes=torch.from_numpy(amp))
        np.testing.assert_allclose(
            got_t.detach().numpy(), want, rtol=1e-10, atol=1e-12 * abs(want).max()
        )
        (got_t**2).sum().backward()
        ref = [m.grad.numpy() for m in tm] if ref is None else ref  # torch autodiff, eager
        with jax.enable_x64(True):
            pj = PropJax("elastic", source_locations=src, receiver_locations=rec, impl=impl,
                         **settings)  # fmt: skip

            def loss(*ms, pj=pj):
                return jnp.sum(pj(*ms, source_amplitudes=jnp.asarray(amp)) ** 2)

            got_j = pj(*(jnp.asarray(m) for m in models), source_amplitudes=jnp.asarray(amp))
            grads = jax.grad(loss, argnums=(0, 1, 2))(*(jnp.asarray(m) for m in models))
        np.testing.assert_allclose(
            np.asarray(got_j), want, rtol=1e-10, atol=1e-12 * abs(want).max()
        )
        for k in range(3):
            for g in (tm[k].grad.numpy(), np.asarray(grads[k])):
                np.testing.assert_allclose(g, ref[k], rtol=1e-8, atol=1e-10 * abs(ref[k]).max())


def test_bad_input():
    models, h, dt, kw = _point_problem(2, free_surface=True)
    rec = dict(receiver_locations=np.array([[[5, 5]]]))

    def raises(match, **extra):
        with pytest.raises((ValueError, TypeError), match=match):
            sweep.elastic(*models, h, dt, **{**kw, **rec, **extra})

    raises("did you mean 'exx'", receiver_kind="exxx")
    raises("does not exist in 2D", receiver_kind="eyy")
    raises("shorter than one cell", receiver_kind="exx", gauge_length=2.0)
    raises("reaches outside the model", receiver_kind="exx", gauge_length=60.0)
    raises("shear strain-rate", receiver_kind="exz", gauge_length=10.0)
    raises("no.*strain|there are none", receiver_kind="vz", gauge_length=10.0)
    raises("did you mean 'strain'", receiver_kind="exx", quantity="strian")
    raises("there are none", receiver_kind="p", quantity="strain")
    raises("free-surface row", receiver_locations=np.array([[[0, 5]]]), receiver_kind="ezz")
    fib = Fibre([[10.0, 10.0], [10.0, 40.0]], channel_spacing=5.0)
    raises("longer than the fibre", receiver_kind="vz", fibre=fib, gauge_length=35.0)
    raises("outside the model", receiver_kind="vz", fibre=Fibre([[10.0, 10.0], [10.0, 400.0]], 5.0))
    raises(
        "3D points", receiver_kind="vz", fibre=Fibre([[10.0, 10.0, 1.0], [10.0, 40.0, 1.0]], 5.0)
    )
    with pytest.raises(ValueError, match="coincide"):
        Fibre([[1.0, 1.0], [1.0, 1.0]], 5.0)
    with pytest.raises(ValueError, match="channel_spacing"):
        Fibre([[1.0, 1.0], [1.0, 2.0]], 0.0)
    # The reversed spelling of a shear strain rate is accepted.
    a = sweep.elastic(*models, h, dt, **kw, **rec, receiver_kind="ezx").receivers
    b = sweep.elastic(*models, h, dt, **kw, **rec, receiver_kind="exz").receivers
    np.testing.assert_array_equal(a, b)


def test_plot_das_gather():
    pytest.importorskip("matplotlib")
    from sweep.plot import plot_das_gather

    fibre = Fibre([[10.0, 5.0], [60.0, 5.0]], channel_spacing=10.0, start=5.0)
    data = np.random.default_rng(0).standard_normal((fibre.n_channels, 30))
    ax = plot_das_gather(data, 1e-3, fibre)
    assert ax.get_xlabel() == "distance along fibre (m)"
    lo, hi = ax.get_xlim()
    assert lo == pytest.approx(0.0) and hi == pytest.approx(50.0)  # channels at 5..45 m
    with pytest.raises(ValueError, match="channels but the fibre has"):
        plot_das_gather(data[:2], 1e-3, fibre)
    ax.figure.clf()


COMPILED_CASES = [
    # ndim, free surface, gauge, quantity, winding angle of the fibre
    (2, False, None, "rate", None),
    (2, True, 5.0, "strain", 35.26438968),
    (3, True, None, "rate", 54.73561032),
    (3, False, 5.0, "strain", None),
]


@pytest.mark.parametrize(("ndim", "free_surface", "gauge", "quantity", "winding"), COMPILED_CASES)
def test_compiled_matches_eager(ndim, free_surface, gauge, quantity, winding):
    """impl='c' records the DAS rows (every kind, gauges, strain, fibres) as the eager path."""
    models, h, dt, kw = _point_problem(ndim, free_surface, nt=30)
    names = ("ezz", "exx", "exz") if ndim == 2 else ("ezz", "eyy", "exx", "eyz", "exz", "exy")
    if gauge is not None:
        names = tuple(n for n in names if n[1] == n[2])  # a gauge takes the normal kinds only
    top = 1 if gauge is None else 2  # a gauge along z must not reach the surface row
    locs = [[top] + [5] * (ndim - 1)]
    locs += [[5 + k % 3] + [6] * (ndim - 1) for k in range(len(names))]
    locs += [[6] + [4] * (ndim - 1), [4] * ndim]  # and two plain kinds among them
    pts = [[5.0] + [15.0] * (ndim - 1), [40.0] + [30.0] + [20.0] * (ndim - 2)]
    kw.update(receiver_locations=np.array([locs]), receiver_kind=["ezz", *names, "vz", "p"],
              fibre=Fibre(pts, channel_spacing=7.0, winding_angle=winding),
              gauge_length=gauge, quantity=quantity)  # fmt: skip
    e = sweep.elastic(*models, h, dt, impl="eager", **kw)
    c = sweep.elastic(*models, h, dt, **kw)
    assert c.impl == "c"  # the default for DAS receivers too
    scale = np.abs(e.receivers).max(axis=-1, keepdims=True)
    assert np.all(scale > 0)
    np.testing.assert_allclose(c.receivers, e.receivers, rtol=0, atol=1e-12 * scale.max())
    # Every column to round-off of its own size.
    assert np.all(np.abs(c.receivers - e.receivers) <= 1e-11 * scale)
    for key in e.state:
        tol = 1e-12 * max(np.abs(e.state[key]).max(), 1e-300)
        np.testing.assert_allclose(c.state[key], e.state[key], rtol=0, atol=tol)


def test_compiled_terms_merge_shared_cells():
    """Overlapping gauges of a fibre share cells: the kernels record each cell once."""
    from sweep.equations.elastic.compiled import CompiledElastic
    from sweep.equations.elastic.propagator import _prepare

    models, h, dt, kw = _point_problem(2, nt=4)
    fibre = Fibre([[5.0, 15.0], [55.0, 15.0]], channel_spacing=5.0)
    args = inspect.signature(sweep.elastic).bind(*models, h, dt, fibre=fibre, gauge_length=20.0,
                                                 **kw)  # fmt: skip
    args.apply_defaults()
    call = _prepare(**args.arguments)
    engine = CompiledElastic(call.geom, np, np.dtype(np.float64), **call.extra)
    rec = engine.receivers
    assert rec.n_terms == len(np.unique(rec.idx[0]))
    assert rec.n_terms < len(rec.weight)  # channels share terms
    x = np.random.default_rng(0).standard_normal((1, rec.n_terms, 3))
    y = np.random.default_rng(1).standard_normal((1, rec.n_columns, 3))
    assert math.isclose(np.vdot(rec.to_columns(x), y), np.vdot(x, rec.to_terms(y)), rel_tol=1e-13)
