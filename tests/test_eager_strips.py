"""The eager path keeps the CPML memory variables in strips along their own axis."""

import numpy as np
import pytest

import sweep
from sweep.testing import random_problem

CASES = [
    # (ndim, order, pml_width, free_surface, model shape)
    (2, 8, 5, False, None),
    (2, 4, [0, 7, 3, 0], False, None),
    (2, 8, [6, 2, 0, 9], (True, False, False, False), None),
    (2, 8, [4, 4, 5, 3], False, (3, 2)),  # strips of each axis merge into one
    (3, 4, [3, 0, 0, 4, 2, 5], False, None),
    (3, 8, 4, False, (2, 9, 3)),
]


@pytest.mark.parametrize(("ndim", "order", "pml", "free", "shape"), CASES)
def test_eager_strips_match_c(ndim, order, pml, free, shape):
    problem = random_problem(ndim, accuracy=order, nt=40, free_surface=free)
    if shape is not None:
        rng = np.random.default_rng(5)
        problem["v"] = 1500.0 + 500.0 * rng.random(shape)
        for key in ("source_locations", "receiver_locations"):
            problem[key] = np.minimum(problem[key], np.array(shape) - 1)
    problem["pml_width"] = pml
    rc = sweep.acoustic(**problem, impl="c")
    re = sweep.acoustic(**problem, impl="eager")
    scale = np.abs(re.receivers).max()
    np.testing.assert_allclose(rc.receivers, re.receivers, rtol=0, atol=1e-12 * scale)
    for key in ("u", "u_prev"):
        ref = re.state[key]
        np.testing.assert_allclose(rc.state[key], ref, rtol=0, atol=1e-12 * np.abs(ref).max())
    for key in ("psi", "zeta"):
        assert len(re.state[key]) == ndim
        for c_field, e_field in zip(rc.state[key], re.state[key], strict=True):
            assert c_field.shape == e_field.shape
            tol = 1e-12 * max(np.abs(c_field).max(), 1e-300)
            np.testing.assert_allclose(c_field, e_field, rtol=0, atol=tol)


@pytest.mark.parametrize(("ndim", "order", "pml", "free", "shape"), CASES)
def test_cpml_strips_cover_the_cpml_terms(ndim, order, pml, free, shape):
    problem = random_problem(ndim, accuracy=order, nt=8, free_surface=free)
    if shape is not None:
        problem["v"] = np.full(shape, 1800.0)
        for key in ("source_locations", "receiver_locations"):
            problem[key] = np.minimum(problem[key], np.array(shape) - 1)
    problem["pml_width"] = pml
    geom = sweep.acoustic(**problem, impl="eager").geometry
    h = geom.halo
    for d in range(ndim):
        a, _ = geom.pml_profiles[d]
        covered = np.zeros(geom.padded_shape[d], dtype=bool)
        last = 0
        for s0, n in geom.cpml_strips(d):
            assert s0 >= last and n > 0
            covered[s0 : s0 + n] = True
            last = s0 + n
        assert last <= geom.padded_shape[d] - h
        # Every cell whose psi is non-zero, or whose psi derivative reaches one, is in a strip.
        needs = np.convolve(a != 0, np.ones(2 * h + 1), mode="same") > 0
        needs[:h] = needs[len(needs) - h :] = False
        assert not (needs & ~covered).any()


@pytest.mark.parametrize("library", ["numpy", "torch", "jax"])
def test_pad_zeros(library):
    from sweep._xp import pad_zeros

    x = np.arange(24.0).reshape(2, 3, 4)
    widths = [(0, 0), (1, 2), (3, 0)]
    ref = np.pad(x, widths)
    if library == "torch":
        torch = pytest.importorskip("torch")
        out = pad_zeros(torch.from_numpy(x), widths).numpy()
    elif library == "jax":
        jnp = pytest.importorskip("jax.numpy")
        out = np.asarray(pad_zeros(jnp.asarray(x), widths))
    else:
        out = pad_zeros(x, widths)
    assert out.shape == (2, 6, 7)
    np.testing.assert_array_equal(out, ref)
