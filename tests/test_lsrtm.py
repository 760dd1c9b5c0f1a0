"""sweep.lsrtm: the Jacobian of sweep.acoustic, and migration as its transpose."""

import numpy as np
import pytest

import sweep
from sweep.testing import random_problem

torch = pytest.importorskip("torch")


def _problem(ndim, **kw):
    problem = random_problem(ndim, np.float64, equation="lsrtm", nt=60, **kw)
    return problem.pop("vp"), problem.pop("mp"), problem


@pytest.mark.parametrize(("ndim", "free"), [(2, True), (2, False), (3, False)])
def test_born_data_is_the_jacobian_of_acoustic(ndim, free):
    vp, mp, problem = _problem(ndim, free_surface=free, accuracy=8 if ndim == 2 else 4)
    born = sweep.lsrtm(vp, mp, **problem)
    h = 1e-4
    plus = sweep.acoustic(vp * (1 + h * mp), **problem, impl="c").receivers
    minus = sweep.acoustic(vp * (1 - h * mp), **problem, impl="c").receivers
    fd = (plus - minus) / (2 * h)
    assert np.abs(fd - born.receivers).max() <= 1e-7 * np.abs(born.receivers).max()
    background = sweep.acoustic(vp, **problem, impl="c").receivers
    np.testing.assert_allclose(born.background_receivers, background, rtol=0,
                               atol=1e-12 * np.abs(background).max())  # fmt: skip


def test_born_data_is_linear_in_the_perturbation():
    vp, mp, problem = _problem(2)
    one = sweep.lsrtm(vp, mp, **problem).receivers
    three = sweep.lsrtm(vp, -3.0 * mp, **problem).receivers
    np.testing.assert_allclose(three, -3.0 * one, rtol=0, atol=1e-13 * np.abs(three).max())
    assert not np.any(sweep.lsrtm(vp, np.zeros_like(mp), **problem).receivers)


@pytest.mark.parametrize("ndim", [2, 3])
def test_migration_is_the_transpose_of_born(ndim):
    """<d, B mp> = <B^T d, mp>: the mp gradient is the migration image."""
    vp, mp, problem = _problem(ndim, free_surface=True)
    born = sweep.lsrtm(vp, mp, **problem).receivers
    d = np.random.default_rng(5).standard_normal(born.shape)
    t = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
         for k, v in problem.items()}  # fmt: skip
    _, pullback = sweep.vjp(sweep.lsrtm, torch.from_numpy(vp), torch.from_numpy(mp), **t)
    image = pullback(torch.from_numpy(d))["mp"].numpy()
    lhs, rhs = float(np.vdot(d, born)), float(np.vdot(image, mp))
    assert abs(lhs - rhs) <= 1e-12 * abs(lhs)


def test_jax_gradients_match_torch():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    vp, mp, problem = _problem(2)
    d = np.random.default_rng(6).standard_normal(sweep.lsrtm(vp, mp, **problem).receivers.shape)
    t = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
         for k, v in problem.items()}  # fmt: skip
    _, pull_t = sweep.vjp(sweep.lsrtm, torch.from_numpy(vp), torch.from_numpy(mp), **t)
    want = pull_t(torch.from_numpy(d))
    j = {k: jnp.asarray(v) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
         for k, v in problem.items()}  # fmt: skip
    _, pull_j = sweep.vjp(sweep.lsrtm, jnp.asarray(vp), jnp.asarray(mp), **j)
    got = pull_j(jnp.asarray(d))
    for name in ("vp", "mp", "source_amplitudes"):
        w = want[name].numpy()
        np.testing.assert_allclose(np.asarray(got[name]), w, rtol=0, atol=1e-10 * np.abs(w).max())
