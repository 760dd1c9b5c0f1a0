"""Bad input is rejected before any compute, with a message naming the argument."""

import warnings

import numpy as np
import pytest

import sweep
from sweep.testing import random_problem, ricker


@pytest.fixture
def problem():
    return random_problem(2, n_shots=2, n_src=1, n_rec=2)


def _call(problem, **changes):
    return sweep.acoustic(**{**problem, **changes})


@pytest.mark.parametrize(
    ("changes", "error", "match"),
    [
        ({"v": np.ones(10) * 1500.0}, ValueError, "v must be a 2D or 3D array"),
        ({"v": np.ones((4, 4, 4, 4)) * 1500.0}, ValueError, "v must be a 2D or 3D array"),
        ({"v": (np.ones((22, 26)) * 1500).astype(np.int32)}, TypeError, "v must be float32"),
        ({"v": [[1500.0]]}, TypeError, "v must be an array"),
        ({"grid_spacing": -1.0}, ValueError, "grid_spacing must be positive"),
        ({"grid_spacing": (5.0, 5.0, 5.0)}, ValueError, "grid_spacing needs 2 values"),
        ({"dt": 0.0}, ValueError, "dt must be positive"),
        ({"dt": "1e-3"}, TypeError, "dt must be a number"),
        ({"accuracy": 3}, ValueError, "accuracy must be one of"),
        ({"accuracy": 10}, ValueError, "accuracy must be one of"),
        ({"pml_width": -2}, ValueError, "pml_width must be >= 0"),
        ({"pml_width": 500}, ValueError, "pml_width 500 .* oversized"),
        ({"pml_width": (5, 5, 5)}, ValueError, "pml_width needs 4 values"),
        ({"pml_width": 2.5}, TypeError, "pml_width"),
        ({"free_surface": (True, False)}, ValueError, "free_surface needs 4 values"),
        ({"impl": "fortran"}, ValueError, "impl must be one of"),
        ({"n_threads": -1}, ValueError, "n_threads must be"),
        ({"pml_freq": -5.0}, ValueError, "pml_freq must be"),
        ({"max_vel": 0.0}, ValueError, "max_vel must be"),
    ],
)
def test_bad_arguments(problem, changes, error, match):
    with pytest.raises(error, match=match):
        _call(problem, **changes)


@pytest.mark.parametrize("bad", [np.nan, np.inf, 0.0, -1500.0])
def test_bad_velocity_values(problem, bad):
    v = problem["v"].copy()
    v[3, 4] = bad
    with pytest.raises(ValueError, match=r"v (contains NaN|must be positive)"):
        _call(problem, v=v)


def test_mixed_dtypes(problem):
    with pytest.raises(
        TypeError, match="source_amplitudes has dtype float32 but the model is float64"
    ):
        _call(problem, source_amplitudes=problem["source_amplitudes"].astype(np.float32))


def test_nan_source_amplitudes(problem):
    amp = problem["source_amplitudes"].copy()
    amp[0, 0, 3] = np.nan
    with pytest.raises(ValueError, match="source_amplitudes contains NaN"):
        _call(problem, source_amplitudes=amp)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("source_amplitudes", np.zeros((2, 60)), "source_amplitudes must have shape"),
        ("source_locations", np.zeros((2, 1), dtype=np.int64), "source_locations must have shape"),
        (
            "source_locations",
            np.zeros((2, 3, 2), dtype=np.int64),
            "3 entries per shot but the amplitudes have 1",
        ),
        ("source_locations", np.zeros((3, 1, 2), dtype=np.int64), "3 shots, expected 2"),
        ("source_locations", np.zeros((2, 1, 2)), "integer grid indices"),
        (
            "receiver_locations",
            np.zeros((2, 2, 3), dtype=np.int64),
            r"receiver_locations must have shape \(n_shots, n, 2\)",
        ),
        ("receiver_locations", np.zeros((1, 2, 2), dtype=np.int64), "1 shots, expected 2"),
    ],
)
def test_shape_mismatches(problem, key, value, match):
    with pytest.raises((ValueError, TypeError), match=match):
        _call(problem, **{key: value})


@pytest.mark.parametrize("key", ["source_locations", "receiver_locations"])
@pytest.mark.parametrize("where", [(-1, 3), (22, 3), (3, 26)])
def test_locations_outside_model(problem, key, where):
    loc = problem[key].copy()
    loc[1, 0] = where
    with pytest.raises(ValueError, match=rf"{key}\[1, 0(, \d)?\] = .* lies outside the model"):
        _call(problem, **{key: loc})


def test_source_on_free_surface(problem):
    loc = problem["source_locations"].copy()
    loc[0, 0, 0] = 0
    with pytest.raises(ValueError, match="source_locations has entries on the free surface"):
        _call(problem, source_locations=loc, free_surface=True)


def test_cfl_violation_names_a_stable_dt(problem):
    with pytest.raises(
        ValueError, match=r"dt=0.01 violates the CFL stability limit .* use dt <= "
    ) as info:
        _call(problem, dt=1e-2)
    stable = float(str(info.value).split("use dt <= ")[1].split()[0])
    _call(problem, dt=stable)  # the suggested dt runs


def test_nt_required_without_sources(problem):
    with pytest.raises(ValueError, match="nt is required"):
        _call(problem, source_amplitudes=None, source_locations=None)


def test_locations_without_amplitudes(problem):
    with pytest.raises(ValueError, match="source_locations was given without source_amplitudes"):
        _call(problem, source_amplitudes=None, nt=10)


def test_too_few_cells_per_wavelength_warns(problem):
    amp = np.zeros_like(problem["source_amplitudes"])
    amp[..., 5] = 1.0  # an impulse: energy up to the Nyquist frequency
    with pytest.warns(UserWarning, match=r"cells per wavelength .* expect numerical dispersion"):
        _call(problem, source_amplitudes=amp)


@pytest.mark.parametrize("via", ["call", "vjp"])
def test_warnings_point_at_the_callers_line(problem, via):
    """However deep in sweep a warning is raised, it names the user's file and line."""
    amp = np.zeros_like(problem["source_amplitudes"])
    amp[..., 5] = 1.0
    with pytest.warns(UserWarning, match="cells per wavelength") as record:
        if via == "call":
            sweep.acoustic(**{**problem, "source_amplitudes": amp})
        else:
            sweep.vjp(sweep.acoustic, **{**problem, "source_amplitudes": amp})
    assert {w.filename for w in record} == {__file__}


def test_well_sampled_sources_do_not_warn():
    v = np.full((40, 40), 2000.0)
    amp = ricker(10.0, 200, 1e-3)[None, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sweep.acoustic(
            v, 5.0, 1e-3, source_amplitudes=amp, source_locations=np.array([[[20, 20]]]), nt=200
        )


def test_model_too_small_for_free_surface():
    with pytest.raises(ValueError, match="too few for a free surface"):
        sweep.acoustic(np.full((6, 30), 1500.0), 5.0, 1e-3, nt=5, accuracy=8, free_surface=True)


def test_cotangent_shape_checked(problem):
    _, pullback = sweep.vjp(sweep.acoustic, **problem)
    with pytest.raises(ValueError, match="receiver cotangent must have the receivers' shape"):
        pullback(np.zeros((1, 1, 1)))


def test_eager_gradient_needs_autodiff_library(problem):
    with pytest.raises(ValueError, match="impl='eager' gets its gradients"):
        sweep.vjp(sweep.acoustic, **problem, impl="eager")


def test_unknown_keyword(problem):
    with pytest.raises(TypeError):
        sweep.acoustic(**problem, bogus=1)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        sweep.vjp(sweep.acoustic, **problem, bogus=1)


def test_fallback_warning_when_binding_missing(problem, monkeypatch):
    import sweep._impl

    monkeypatch.setattr(sweep._impl, "binding_error", lambda: "ImportError: hidden for a test")
    with pytest.warns(
        UserWarning, match="sweep._C is not available .*hidden for a test.* falling back"
    ):
        res = _call(problem, impl=None)
    assert res.impl == "eager"
