"""sweep.tm2d and sweep.maxwell3d: analytic solutions, exact gradients, bad inputs."""

import math
import warnings

import numpy as np
import pytest

import sweep
from sweep._callbacks import snapshots
from sweep.equations.maxwell import components as comp
from sweep.equations.maxwell.eager import EPS0, MU0
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import random_problem, ricker

torch = pytest.importorskip("torch")

MODELS = ("epsilon", "sigma", "mu")


def _problem(name, nt=24, n_src=2, n_rec=3, free_surface=False, seed=0, **kw):
    ndim = 2 if name == "tm2d" else 3
    p = random_problem(ndim, np.float64, equation=name, nt=nt, n_src=n_src, n_rec=n_rec,
                       free_surface=free_surface, seed=seed, **kw)  # fmt: skip
    models = [p.pop(k) for k in MODELS]
    return models, p


def _spectrum(w, nt, dt, pad=8):
    """The current's spectrum, with sample t at time (t + 1/2) dt."""
    n = pad * nt
    om = 2 * np.pi * np.fft.rfftfreq(n, dt)
    return np.fft.rfft(w, n) * np.exp(-0.5j * om * dt), om, n


def _wavenumber(om, epsr, sigma):
    return om * np.sqrt(MU0 * (EPS0 * epsr - 1j * sigma / om))


# -- physics ------------------------------------------------------------------------------


@pytest.mark.parametrize("impl", ["c", "eager"])
def test_tm2d_line_source_in_a_lossy_medium_matches_the_hankel_solution(impl):
    """E_y(w) = -w mu0 I(w) H0^(2)(kR) / 4 in absolute amplitude (epsr 10, 1 mS/m, 900 MHz)."""
    hankel2 = pytest.importorskip("scipy.special").hankel2
    n, dx, dt, nt, epsr, sig = 110, 5e-3, 1e-11, 650, 10.0, 1e-3
    ones = np.ones((n, n))
    w = ricker(9e8, nt, dt)
    offsets = [(20, 0), (0, 30), (40, 0), (24, 32)]  # 20, 30, 40 cells; one oblique
    rec = np.array([[[55 + a, 55 + b] for a, b in offsets]])
    out = sweep.tm2d(epsr * ones, sig * ones, ones, dx, dt, source_amplitudes=w[None, None],
                     source_locations=np.array([[[55, 55]]]), receiver_locations=rec,
                     accuracy=4, pml_width=20, impl=impl)  # fmt: skip
    current, om, pad = _spectrum(w, nt, dt)
    k = _wavenumber(om[1:], epsr, sig)
    for r, (a, b) in enumerate(offsets):
        e = np.zeros_like(current)
        e[1:] = -om[1:] * MU0 * current[1:] * hankel2(0, k * dx * math.hypot(a, b)) / 4
        ref = np.fft.irfft(e, pad)[:nt]
        got = out.receivers[0, r]
        amp = abs(np.abs(got).max() / np.abs(ref).max() - 1)
        misfit = np.linalg.norm(got - ref) / np.linalg.norm(ref)
        # Measured: amplitude 0.002-0.02 % along the axes, 0.11 % oblique; misfit 0.1-0.35 %.
        assert amp <= (5e-4 if a * b == 0 else 1.5e-3), (a, b, amp)
        assert misfit <= 5e-3, (a, b, misfit)
        assert np.argmax(np.abs(got)) == np.argmax(np.abs(ref))


def _dyadic(om, p, epsr, sig, v, i, j):
    """E_j of a dipole p along i at offset v (x, y, z): -i w mu0 G_ji p (this source sign)."""
    k = _wavenumber(om[1:], epsr, sig)
    r = np.linalg.norm(v)
    u = v / r
    kr = k * r
    a = 1 - 1j / kr - 1 / kr**2
    b = -1 + 3j / kr + 3 / kr**2
    g = (a * (i == j) + b * u[i] * u[j]) * np.exp(-1j * kr) / (4 * np.pi * r)
    e = np.zeros_like(p)
    e[1:] = -1j * om[1:] * MU0 * g * p[1:]
    return e


def _check_dyadic(n, nt, offsets, pml, limit):
    dx, dt, epsr, sig = 1e-2, 2e-11, 4.0, 1e-3
    shape = (n, n, n)
    ones = np.ones(shape)
    w = ricker(1e9, nt, dt)
    c = n // 2
    names = comp.electric(3)
    rec = np.array([[[c + a, c + b, c + d] for a, b, d in offsets for _ in names]])
    rec_comp = [x for _ in offsets for x in names]
    p, om, pad = _spectrum(w, nt, dt)
    worst = 0.0
    for sc in names:
        out = sweep.maxwell3d(epsr * ones, sig * ones, ones, dx, dt,
                              source_amplitudes=w[None, None],
                              source_locations=np.array([[[c, c, c]]]), source_component=sc,
                              receiver_locations=rec, receiver_component=rec_comp,
                              accuracy=4, pml_width=pml)  # fmt: skip
        for r, (a, b, d) in enumerate(offsets):
            v = np.array([d, b, a], dtype=float) * dx  # x, y, z
            for j, rc in enumerate(names):
                ii, jj = "xyz".index(sc[1]), "xyz".index(rc[1])
                ref = np.fft.irfft(_dyadic(om, p, epsr, sig, v, ii, jj), pad)[:nt]
                got = out.receivers[0, 3 * r + j]
                if np.abs(ref).max() < 1e-6 * np.abs(got).max():
                    continue  # a zero of the dyadic (e.g. ex at a point on the y axis)
                misfit = np.linalg.norm(got - ref) / np.linalg.norm(ref)
                worst = max(worst, misfit)
                assert misfit < limit, (sc, rc, (a, b, d), misfit)
                assert abs(int(np.argmax(np.abs(got))) - int(np.argmax(np.abs(ref)))) <= 2
    return worst


def test_3d_dipole_matches_the_dyadic_greens_function_oblique():
    """All 9 source x receiver components at one oblique offset (small grid)."""
    _check_dyadic(24, 200, [(4, 5, 6)], 8, 0.08)


@pytest.mark.slow
def test_3d_dipole_matches_the_dyadic_greens_function():
    """All 9 pairs at 10 cells on an axis, a diagonal and oblique (measured 0.6-6.9 %)."""
    _check_dyadic(30, 260, [(0, 0, 10), (0, 8, 8), (6, 7, 8), (10, 0, 0)], 10, 0.08)


def test_perfect_conductor_holds_tangential_e_and_mirrors():
    models, rest = _problem("tm2d", nt=30, free_surface=True)
    out = sweep.tm2d(*models, **rest)
    g = out.geometry
    h, lo = g.halo, g.lo(0)
    ey, hx = out.state["ey"], out.state["hx"]
    assert np.abs(ey).max() > 0
    assert np.all(ey[:, lo] == 0)  # tangential E on the surface row
    for k in range(1, h + 1):
        np.testing.assert_array_equal(ey[:, lo - k], -ey[:, lo + k])  # odd image
        np.testing.assert_array_equal(hx[:, lo - k], hx[:, lo + k - 1])  # even, half a cell


@pytest.mark.parametrize("face", [1, 2, 3])
def test_conductor_on_every_face_is_the_top_one_turned(face):
    """TM2D is symmetric under flips and the z <-> x transpose (ey is the same field)."""
    models, rest = _problem("tm2d", nt=40, free_surface=True)
    want = sweep.tm2d(*models, **rest).receivers
    shape = models[0].shape
    d, flip = divmod(face, 2)

    def turn(m):
        m = m[::-1] if flip else m
        return np.ascontiguousarray(m.T if d else m)

    def turn_loc(loc):
        loc = loc.copy()
        if flip:
            loc[..., 0] = shape[0] - 1 - loc[..., 0]
        return loc[..., ::-1].copy() if d else loc

    free = [False] * 4
    free[face] = True
    got = sweep.tm2d(*(turn(m) for m in models), **dict(
        rest, free_surface=tuple(free), source_locations=turn_loc(rest["source_locations"]),
        receiver_locations=turn_loc(rest["receiver_locations"]))).receivers  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())


# -- gradients ----------------------------------------------------------------------------


def _torch_vjp(fn, models, rest):
    t_rest = dict(rest, source_amplitudes=torch.from_numpy(rest["source_amplitudes"]))
    return sweep.vjp(fn, *(torch.from_numpy(m) for m in models), **t_rest)


def _check_components(name, src_comp, free_surface, nt=20, impl="c", **kw):
    """Each model's directional derivative against central differences, per receiver component.

    One receiver of every component per shot: the cotangent restricted to one
    component checks that source x receiver pair, with the forward runs shared.
    """
    fn = getattr(sweep, name)
    ndim = 2 if name == "tm2d" else 3
    rec_comp = list(comp.electric(ndim))
    models, rest = _problem(name, nt=nt, n_rec=len(rec_comp), free_surface=free_surface, **kw)
    if ndim == 3:
        rest.update(source_component=src_comp, receiver_component=rec_comp)
    rest["impl"] = impl
    rng = np.random.default_rng(5)
    out, pullback = _torch_vjp(fn, models, rest)
    d = rng.standard_normal(out.receivers.shape)
    dirs = [m * rng.uniform(-1.0, 1.0, m.shape) for m in models]
    diffs = []
    # sigma's effect over a few steps is tiny (sigma dt / eps0 ~ 1e-3): a larger relative
    # step keeps the difference above round-off (the data are nearly linear in it).
    for i, h in enumerate((1e-6, 1e-3, 1e-6)):
        step = [h * dm if j == i else 0.0 for j, dm in enumerate(dirs)]
        plus = fn(*(m + s for m, s in zip(models, step, strict=True)), **rest)
        minus = fn(*(m - s for m, s in zip(models, step, strict=True)), **rest)
        diffs.append((plus.receivers - minus.receivers) / (2 * h))
    for r, kind in enumerate(rec_comp):
        mask = np.zeros_like(d)
        mask[:, r] = d[:, r]
        g = pullback(torch.from_numpy(mask))
        for i, m in enumerate(MODELS):
            fd = float(np.vdot(mask, diffs[i]))
            an = float(np.vdot(g[m].numpy(), dirs[i]))
            assert math.isclose(fd, an, rel_tol=1e-6), (src_comp, kind, m, fd, an)
        lhs = float(np.vdot(mask, out.receivers.numpy()))
        rhs = float(np.vdot(g["source_amplitudes"].numpy(), rest["source_amplitudes"]))
        assert abs(lhs - rhs) <= 1e-12 * abs(lhs), (src_comp, kind, lhs, rhs)


@pytest.mark.parametrize("impl", ["c", "eager"])
@pytest.mark.parametrize("free_surface", [False, True])
def test_tm2d_gradients_and_dot_test(free_surface, impl):
    _check_components("tm2d", "ey", free_surface, impl=impl)


@pytest.mark.parametrize("impl", ["c", "eager"])
@pytest.mark.parametrize("src_comp", ["ex", "ey", "ez"])
def test_maxwell3d_gradients_every_component_pair(src_comp, impl):
    """Source x receiver: 3 x 3, with a perfectly conducting top (CPML on the other faces)."""
    _check_components("maxwell3d", src_comp, True, nt=12, impl=impl)


@pytest.mark.slow
@pytest.mark.parametrize("accuracy", [2, 6, 8])
@pytest.mark.parametrize("src_comp", ["ex", "ez"])
def test_maxwell3d_gradients_other_orders(src_comp, accuracy):
    _check_components("maxwell3d", src_comp, False, nt=12, accuracy=accuracy)


@pytest.mark.parametrize("impl", ["c", "eager"])
def test_tm2d_gradient_at_every_cell(impl):
    """Every model's gradient against central differences, cell by cell (edges included),
    on a tiny grid with a conducting top and the CPML on the other faces."""
    n = (7, 8)
    models, rest = _problem("tm2d", nt=24, n_src=1, n_rec=2, free_surface=True)
    models = [m[: n[0], : n[1]].copy() for m in models]
    rest.update(source_locations=np.array([[[1, 2]], [[5, 6]]]),
                receiver_locations=np.array([[[0, 7], [6, 0]]] * 2), pml_width=3,
                impl=impl)  # fmt: skip
    out, pullback = _torch_vjp(sweep.tm2d, models, rest)
    d = np.random.default_rng(6).standard_normal(out.receivers.shape)
    g = pullback(torch.from_numpy(d))
    for i, name in enumerate(MODELS):
        grad = g[name].numpy()
        for cell in np.ndindex(*n):
            h = 1e-6 * models[i][cell]
            plus = [m.copy() for m in models]
            minus = [m.copy() for m in models]
            plus[i][cell] += h
            minus[i][cell] -= h
            fd = float(np.vdot(d, sweep.tm2d(*plus, **rest).receivers
                                  - sweep.tm2d(*minus, **rest).receivers)) / (2 * h)  # fmt: skip
            scale = np.abs(grad).max()
            assert abs(fd - grad[cell]) <= 1e-6 * scale, (name, cell, fd, grad[cell])


def test_jax_gradients_equal_torch_gradients():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    models, rest = _problem("tm2d", nt=6, free_surface=True)
    out_t, pull_t = _torch_vjp(sweep.tm2d, models, rest)
    d = np.random.default_rng(7).standard_normal(out_t.receivers.shape)
    g_t = pull_t(torch.from_numpy(d))
    j_rest = dict(rest, source_amplitudes=jnp.asarray(rest["source_amplitudes"]))
    out_j, pull_j = sweep.vjp(sweep.tm2d, *(jnp.asarray(m) for m in models), **j_rest)
    g_j = pull_j(jnp.asarray(d))
    np.testing.assert_allclose(np.asarray(out_j.receivers), out_t.receivers.numpy(), rtol=1e-12,
                               atol=1e-12 * np.abs(out_t.receivers.numpy()).max())  # fmt: skip
    for k in (*MODELS, "source_amplitudes"):
        a, b = np.asarray(g_j[k]), g_t[k].numpy()
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11 * np.abs(b).max(), err_msg=k)


def test_prop_jax_matches():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    from sweep.propagator.jax import PropJax

    models, rest = _problem("tm2d", nt=20)
    want = sweep.tm2d(*models, **rest).receivers
    settings = {k: v for k, v in rest.items() if k != "source_amplitudes"}
    amp = jnp.asarray(rest["source_amplitudes"])
    got = PropJax("tm2d", **settings)(*(jnp.asarray(m) for m in models), source_amplitudes=amp)
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e-11 * np.abs(want).max())


# -- memory strategies, callbacks ---------------------------------------------------------


def test_boundary_saving_is_refused_with_the_alternatives():
    models, rest = _problem("tm2d")
    memory = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())
    with pytest.raises(ValueError, match=r"tm2d equation's does not \(with sigma > 0.*ckpt.*full"):
        sweep.tm2d(*models, **rest, memory=memory)
    with pytest.raises(ValueError, match=r"maxwell3d equation's does not"):
        sweep.vjp(sweep.maxwell3d, *_problem("maxwell3d")[0], **_problem("maxwell3d")[1],
                  memory=memory)  # fmt: skip
    assert not sweep.equations.get("tm2d").reversible
    # Checkpointing is the compiled path's; the eager one warns that autodiff ignores it.
    with pytest.warns(UserWarning, match="memory options"):
        sweep.tm2d(*models, **rest, memory=MemoryOptions(strategy="ckpt", ckpt=CkptOptions()),
                   impl="eager")  # fmt: skip


def test_callbacks_restart_and_snapshots():
    models, rest = _problem("tm2d", nt=20)
    seen = []

    def cb(state):
        seen.append((state.step, sorted(state.wavefields), np.abs(state.wavefields["ey"]).max()))

    full = sweep.tm2d(*models, **rest, forward_callback=cb, callback_frequency=5)
    assert [s for s, _, _ in seen] == [0, 5, 10, 15]
    assert seen[0][1] == ["ey", "hx", "hz"]
    assert seen[-1][2] > 0
    movie = snapshots(name="ey", view="inner")  # frames of the radargram's wavefield
    sweep.tm2d(*models, **rest, forward_callback=movie, callback_frequency=5)
    assert movie.steps == [0, 5, 10, 15]
    assert movie.frames[-1].shape == (2, *models[0].shape)
    assert 0 < np.abs(movie.frames[-1]).max() <= seen[-1][2]  # the model's part of the field
    with pytest.raises(ValueError, match="backward_callback"):
        sweep.tm2d(*models, **rest, backward_callback=lambda s: None, impl="eager")
    # Ten steps, then a restart from the state for the remaining ten.
    amp = rest["source_amplitudes"]
    first = sweep.tm2d(*models, **dict(rest, source_amplitudes=amp[..., :10].copy()))
    second = sweep.tm2d(*models, **dict(rest, source_amplitudes=amp[..., 10:].copy()),
                        initial_state=first.state)  # fmt: skip
    got = np.concatenate([first.receivers, second.receivers], axis=-1)
    np.testing.assert_allclose(got, full.receivers, rtol=0, atol=1e-13 * np.abs(got).max())


@pytest.mark.parametrize("accuracy", [2, 4])
def test_maxwell3d_forward_blocked_in_time_is_bitwise_unblocked(accuracy):
    """The 3D forward's passes of several steps (and callback chunks) change no bit."""
    # 4 shots on 3 threads: the threads share every shot's planes (past the
    # small-problem cut to one thread).
    models, rest = _problem("maxwell3d", nt=23, accuracy=accuracy, n_shots=4)
    rest = dict(rest, impl="c", n_threads=3)
    with sweep.config(time_blocking="1,1,1"):
        ref = sweep.maxwell3d(*models, **rest)
    for steps in ("2,1,1", "5,1,1", "auto"):
        with sweep.config(time_blocking=steps):
            for extra in ({}, {"forward_callback": lambda s: None, "callback_frequency": 7}):
                out = sweep.maxwell3d(*models, **rest, **extra)
                assert out.receivers.tobytes() == ref.receivers.tobytes()
                for k, v in ref.state.items():
                    assert np.asarray(out.state[k]).tobytes() == np.asarray(v).tobytes(), k


@pytest.mark.parametrize("accuracy", [2, 4, 8])
def test_tm2d_forward_blocked_in_time_is_bitwise_unblocked(accuracy):
    """TM2D's chunks of several steps, pipelined over the threads, change no bit."""
    models, rest = _problem("tm2d", nt=23, accuracy=accuracy, n_shots=3, n_src=4, n_rec=5)
    # A model three times as tall, points in rows all along it (in several
    # chunks' windows, on the first and last rows, two on one cell).
    models = [np.concatenate([m, m[::-1], m]) for m in models]
    src = np.array([[[1, 3], [30, 7], [63, 20], [30, 7]]] * 3)
    src += np.array([[[0, 0]], [[2, 1]], [[1, 2]]])
    rec = np.array([[[0, 2], [15, 5], [33, 9], [50, 11], [65, 25]]] * 3)
    rest = dict(rest, impl="c", source_locations=src, receiver_locations=rec)
    for dtype in (np.float64, np.float32):
        ms = [m.astype(dtype) for m in models]
        amp = rest["source_amplitudes"].astype(dtype)
        for n_shots, threads in ((1, 1), (1, 2), (3, 2), (2, 2)):
            kw = dict(rest, n_threads=threads, source_amplitudes=amp[:n_shots],
                      source_locations=src[:n_shots], receiver_locations=rec[:n_shots])  # fmt: skip
            with sweep.config(time_blocking="1,1,1"):
                ref = sweep.tm2d(*ms, **kw)
            # steps, rows per group (1: 2 h + 1); "auto": the rule's steps
            chunked = {"forward_callback": lambda s: None, "callback_frequency": 7}
            for steps in ("2,1,1", "3,4,1", "5,1,1", "4,7,1", "auto"):
                with sweep.config(time_blocking=steps):
                    for extra in ({}, chunked):
                        out = sweep.tm2d(*ms, **kw, **extra)
                        assert out.receivers.tobytes() == ref.receivers.tobytes()
                        for k, v in ref.state.items():
                            assert np.asarray(out.state[k]).tobytes() == np.asarray(v).tobytes(), k


def test_float32_runs_close_to_float64():
    models, rest = _problem("maxwell3d", nt=16)
    want = sweep.maxwell3d(*models, **rest).receivers
    r32 = dict(rest, source_amplitudes=rest["source_amplitudes"].astype(np.float32))
    got = sweep.maxwell3d(*(m.astype(np.float32) for m in models), **r32).receivers
    assert got.dtype == np.float32
    assert np.linalg.norm(got - want) <= 1e-5 * np.linalg.norm(want)


# -- options and bad inputs ---------------------------------------------------------------


def test_impl_choices_and_backend_flags():
    models, rest = _problem("maxwell3d", nt=8)
    a = sweep.maxwell3d(*models, **rest)
    assert a.impl == "c"  # the compiled kernels by default
    b = sweep.maxwell3d(*models, **rest, python_backend=True)
    assert b.impl == "eager"
    np.testing.assert_allclose(b.receivers, a.receivers, rtol=0,
                               atol=1e-12 * np.abs(a.receivers).max())  # fmt: skip
    with pytest.raises(ValueError, match="contradicts impl='c'"):
        sweep.maxwell3d(*models, **rest, impl="c", python_backend=True)
    with pytest.warns(UserWarning, match="cuda_graph=True is ignored on the CPU") as w1:
        c = sweep.maxwell3d(*models, **rest, experimental_cuda_graph=True)
    np.testing.assert_array_equal(a.receivers, c.receivers)
    with pytest.warns(UserWarning, match="ignored when gradients are requested") as w2:
        sweep.vjp(sweep.maxwell3d, *models, **rest, experimental_cuda_graph=True)
    with pytest.warns(UserWarning, match=r"ignored with impl='eager' \(python_backend=True") as w3:
        sweep.maxwell3d(*models, **rest, python_backend=True, experimental_cuda_graph=True)
    # raised at three depths in sweep, each names this file (the caller's line)
    assert {w.filename for w in [*w1, *w2, *w3]} == {__file__}
    with pytest.raises(TypeError, match="experimental_cuda_graph must be True or False"):
        sweep.maxwell3d(*models, **rest, experimental_cuda_graph=1)
    with pytest.raises(ValueError, match="compute_precision must be 'default'"):
        sweep.maxwell3d(*models, **rest, compute_precision="fp16")
    models2, rest2 = _problem("tm2d", nt=8)
    with pytest.raises(ValueError, match="compute_precision must be 'default'"):
        sweep.tm2d(*models2, **rest2, compute_precision="half")
    with pytest.raises(ValueError, match=r"takes 2D models.*use sweep.maxwell3d"):
        sweep.tm2d(*models, **rest)


def test_bad_inputs_are_rejected_before_compute():
    models, rest = _problem("maxwell3d", nt=8)
    eps, sig, mu = models
    with pytest.raises(ValueError, match=r"epsilon must be >= 1 everywhere"):
        sweep.maxwell3d(0.5 * eps, sig, mu, **rest)
    with pytest.raises(ValueError, match=r"mu must be positive"):
        sweep.maxwell3d(eps, sig, 0 * mu, **rest)
    with pytest.raises(ValueError, match=r"sigma must be >= 0"):
        sweep.maxwell3d(eps, -sig, mu, **rest)
    bad = sig.copy()
    bad[1, 1, 1] = np.inf
    with pytest.raises(ValueError, match=r"sigma contains NaN or infinite"):
        sweep.maxwell3d(eps, bad, mu, **rest)
    with pytest.raises(ValueError, match=r"unknown source_component 'eyy'; did you mean 'ey'"):
        sweep.maxwell3d(*models, **rest, source_component="eyy")
    with pytest.raises(ValueError, match=r"unknown receiver_component 'hz'"):
        sweep.maxwell3d(*models, **rest, receiver_component="hz")
    with pytest.raises(ValueError, match=r"receiver_component has 2 entries but there are 3"):
        sweep.maxwell3d(*models, **rest, receiver_component=["ex", "ey"])
    # The CFL limit of the staggered scheme, with the stable dt in the message.
    with pytest.raises(ValueError, match=r"CFL.*use dt <= "):
        sweep.maxwell3d(*models, **dict(rest, dt=2e-11))
    # A source sampled too coarsely for its spectrum: a warning.
    models, rest = _problem("maxwell3d", nt=40)  # the whole wavelet
    w = rest["source_amplitudes"].copy()
    w[..., ::2] = 0.0  # energy up to the Nyquist frequency
    with pytest.warns(UserWarning, match="undersamples the source spectrum"):
        sweep.maxwell3d(*models, **dict(rest, source_amplitudes=w))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "only .* cells per wavelength")
        sweep.maxwell3d(*models, **rest)  # a smooth wavelet does not warn
        short = dict(rest, source_amplitudes=rest["source_amplitudes"][..., :12].copy())
        sweep.maxwell3d(*models, **short)  # nor one cut short (its spectrum is the cut's)
