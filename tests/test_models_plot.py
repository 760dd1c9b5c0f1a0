"""Tests of sweep.models (wavelets, synthetic models, acquisition) and sweep.plot."""

from __future__ import annotations

import numpy as np
import pytest

import sweep
from sweep import models


# ---------------------------------------------------------------- ricker
def test_ricker_peak_at_default_delay():
    dt, freq = 1e-3, 10.0
    w = models.ricker(freq, 400, dt)
    assert w.shape == (400,)
    assert w.dtype == np.float32
    assert int(np.argmax(w)) == round(1.5 / freq / dt)
    assert w.max() == pytest.approx(1.0, abs=1e-6)


def test_ricker_custom_peak_time_and_dtype():
    w = models.ricker(20.0, 200, 2e-3, peak_time=0.2, dtype=np.float64)
    assert w.dtype == np.float64
    assert int(np.argmax(w)) == 100
    # Symmetric about the peak.
    np.testing.assert_allclose(w[100 - 30 : 100], w[101 : 100 + 31][::-1], atol=1e-12)


def test_ricker_zero_mean_and_starts_at_zero():
    w = models.ricker(8.0, 1000, 1e-3, dtype=np.float64)
    assert abs(w.sum()) < 1e-6 * np.abs(w).sum()
    assert abs(w[0]) < 1e-8


def test_ricker_spectrum_peaks_at_freq():
    dt, nt, freq = 1e-3, 4096, 12.0
    w = models.ricker(freq, nt, dt, peak_time=1.0, dtype=np.float64)
    spec = np.abs(np.fft.rfft(w))
    f = np.fft.rfftfreq(nt, dt)
    assert f[np.argmax(spec)] == pytest.approx(freq, abs=0.5)


@pytest.mark.parametrize(
    ("freq", "nt", "dt"), [(0.0, 10, 1e-3), (-5.0, 10, 1e-3), (10.0, 0, 1e-3), (10.0, 10, 0.0)]
)
def test_ricker_rejects_bad_arguments(freq, nt, dt):
    with pytest.raises(ValueError):
        models.ricker(freq, nt, dt)


# ------------------------------------------------------- synthetic model
def test_synthetic_model_shape_range_dtype():
    v = models.synthetic_model((60, 160), 10.0)
    assert v.shape == (60, 160)
    assert v.dtype == np.float32
    assert v.min() == 1500.0
    assert v.max() == 4500.0
    assert 4000.0 in v  # deepest layer
    assert models.synthetic_model((30, 40), (5.0, 8.0), dtype=np.float64).dtype == np.float64


def test_synthetic_model_is_deterministic():
    a = models.synthetic_model((50, 120), 12.5)
    b = models.synthetic_model((50, 120), 12.5)
    np.testing.assert_array_equal(a, b)


def test_synthetic_model_velocity_increases_with_depth_outside_salt():
    v = models.synthetic_model((80, 200), 10.0, kind="faulted")
    assert v.max() <= 4000.0  # no salt
    assert np.all(np.diff(v, axis=0) >= 0)


def test_synthetic_model_kinds_differ():
    shape = (60, 160)
    layered = models.synthetic_model(shape, 10.0, kind="layered")
    faulted = models.synthetic_model(shape, 10.0, kind="faulted")
    full = models.synthetic_model(shape, 10.0)
    # The fault drops the layers on its right-hand side: slower there at depth.
    diff = faulted - layered
    assert np.all(diff[:, :60] == 0)
    assert np.all(diff <= 0) and np.any(diff < 0)
    # The salt body is the only 4500 m/s material.
    salt = full == 4500.0
    assert 0.02 < salt.mean() < 0.2
    np.testing.assert_array_equal(full[~salt], faulted[~salt])
    with pytest.raises(ValueError, match="kind"):
        models.synthetic_model(shape, 10.0, kind="marmousi")


def test_synthetic_model_scales_with_resolution():
    coarse = models.synthetic_model((30, 80), 20.0)
    fine = models.synthetic_model((60, 160), 10.0)
    # Same geology: the fine model block-averaged is close to the coarse one.
    avg = fine.reshape(30, 2, 80, 2).mean(axis=(1, 3))
    assert np.mean(np.abs(avg - coarse) > 1.0) < 0.1


@pytest.mark.parametrize("shape", [(1, 10), (10,), (10, 10, 10)])
def test_synthetic_model_rejects_bad_shape(shape):
    with pytest.raises(ValueError):
        models.synthetic_model(shape, 10.0)


# ---------------------------------------------------------------- smooth
def test_smooth_keeps_constant_and_dtype():
    v = np.full((20, 30), 2000.0, dtype=np.float32)
    out = models.smooth(v, 3.0)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 2000.0, rtol=1e-6)


def test_smooth_reduces_roughness_and_keeps_range():
    v = models.synthetic_model((60, 160), 10.0)
    s = models.smooth(v, 5.0)
    assert s.shape == v.shape
    assert v.min() <= s.min() and s.max() <= v.max()
    rough = np.abs(np.diff(v, axis=0)).max()
    assert np.abs(np.diff(s, axis=0)).max() < 0.5 * rough
    assert s.mean() == pytest.approx(v.mean(), rel=0.02)


def test_smooth_per_axis_and_zero_sigma():
    rng = np.random.default_rng(0)
    v = rng.standard_normal((16, 24))
    np.testing.assert_allclose(models.smooth(v, 0.0), v)
    only_x = models.smooth(v, (0.0, 2.0))
    # Axis 0 untouched: smoothing each row separately gives the same result.
    rows = np.stack([models.smooth(v[i : i + 1], (0.0, 2.0))[0] for i in range(16)])
    np.testing.assert_allclose(only_x, rows)
    with pytest.raises(ValueError):
        models.smooth(v, (1.0, 2.0, 3.0))
    with pytest.raises(ValueError):
        models.smooth(v, -1.0)


def test_smooth_3d():
    v = np.zeros((9, 9, 9))
    v[4, 4, 4] = 1.0
    s = models.smooth(v, 1.0)
    assert s.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(s, s.transpose(1, 2, 0), atol=1e-15)


# ----------------------------------------------------------- acquisition
def test_surface_acquisition_2d():
    src, rec = models.surface_acquisition((60, 160), n_shots=5, receiver_spacing=4, depth=2)
    assert src.dtype == np.int64 and rec.dtype == np.int64
    assert src.shape == (5, 1, 2)
    assert rec.shape == (5, 40, 2)
    assert np.all(src[..., 0] == 2) and np.all(rec[..., 0] == 2)
    assert np.all(np.diff(src[:, 0, 1]) > 0)
    assert src[..., 1].min() >= 0 and src[..., 1].max() < 160
    np.testing.assert_array_equal(rec[0, :, 1], np.arange(0, 160, 4))
    np.testing.assert_array_equal(rec[0], rec[-1])


def test_surface_acquisition_3d_and_single_shot():
    src, rec = models.surface_acquisition((20, 12, 30), n_shots=1, receiver_spacing=3)
    assert src.shape == (1, 1, 3)
    assert src[0, 0].tolist() == [1, 6, 14]
    assert rec.shape == (1, 4 * 10, 3)
    assert np.all(rec[..., 0] == 1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"model_shape": (10,), "n_shots": 1, "receiver_spacing": 1},
        {"model_shape": (10, 10), "n_shots": 0, "receiver_spacing": 1},
        {"model_shape": (10, 10), "n_shots": 1, "receiver_spacing": 0},
        {"model_shape": (10, 10), "n_shots": 1, "receiver_spacing": 1, "depth": 10},
    ],
)
def test_surface_acquisition_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        models.surface_acquisition(**kwargs)


def test_models_feed_sweep_acoustic():
    v = models.synthetic_model((30, 60), 10.0)
    dt, nt = 1e-3, 200
    src, rec = models.surface_acquisition(v.shape, n_shots=2, receiver_spacing=3)
    amp = np.ascontiguousarray(np.broadcast_to(models.ricker(8.0, nt, dt), (2, 1, nt)))
    out = sweep.acoustic(
        v,
        10.0,
        dt,
        source_amplitudes=amp,
        source_locations=src,
        receiver_locations=rec,
        free_surface=True,
    )
    assert out.receivers.shape == (2, 20, nt)
    assert np.all(np.isfinite(out.receivers)) and np.abs(out.receivers).max() > 0


# ------------------------------------------------------------------ plot
@pytest.fixture
def plt():
    from sweep import plot

    pyplot = plot._pyplot()
    yield pyplot
    pyplot.close("all")


def test_plot_model_returns_axes(plt, tmp_path):
    from matplotlib.axes import Axes

    from sweep import plot

    v = models.synthetic_model((30, 80), (10.0, 12.5))
    ax = plot.plot_model(v, (10.0, 12.5), title="true")
    assert isinstance(ax, Axes)
    assert ax.get_title() == "true"
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # depth increases downwards
    assert ax.get_xlim()[1] == pytest.approx(79.5 * 12.5)
    ax.figure.savefig(tmp_path / "model.png")
    assert (tmp_path / "model.png").stat().st_size > 0


def test_plot_helpers_draw_on_given_axes(plt):
    from sweep import plot

    rng = np.random.default_rng(1)
    _fig, axes = plt.subplots(2, 2)
    data = rng.standard_normal((20, 300)).astype(np.float32)
    g = rng.standard_normal((30, 40))
    assert plot.plot_gather(data, 1e-3, ax=axes[0, 0], clip=95) is axes[0, 0]
    assert plot.plot_wavefield(g[None], 5.0, ax=axes[0, 1]) is axes[0, 1]
    assert plot.plot_gradient(g, 5.0, ax=axes[1, 0]) is axes[1, 0]
    assert plot.plot_model(g + 3, 5.0, ax=axes[1, 1], colorbar=False) is axes[1, 1]
    # Gathers: time on the vertical axis, increasing downwards.
    assert axes[0, 0].get_ylim()[0] == pytest.approx(299.5e-3)
    # Gradients and wavefields use colour scales symmetric about zero.
    for ax in (axes[0, 1], axes[1, 0]):
        lo, hi = ax.images[0].get_clim()
        assert lo == -hi and hi > 0


def test_plot_gradient_of_zeros_and_bad_input(plt):
    from sweep import plot

    ax = plot.plot_gradient(np.zeros((10, 10)), 1.0)
    assert ax.images[0].get_clim() == (-1.0, 1.0)
    with pytest.raises(ValueError, match="2D"):
        plot.plot_model(np.zeros((2, 3, 4)), 1.0)
    with pytest.raises(ValueError, match="clip"):
        plot.plot_gather(np.zeros((3, 4)), 1e-3, clip=0)


def test_plot_real_shot(plt):
    from sweep import plot

    v = models.synthetic_model((30, 60), 10.0)
    dt, nt = 1e-3, 250
    src, rec = models.surface_acquisition(v.shape, n_shots=1, receiver_spacing=2)
    amp = models.ricker(8.0, nt, dt)[None, None]
    out, pullback = sweep.vjp(
        sweep.acoustic,
        v,
        10.0,
        dt,
        source_amplitudes=amp,
        source_locations=src,
        receiver_locations=rec,
    )
    grad = pullback(out.receivers)["v"]
    _fig, axes = plt.subplots(3)
    plot.plot_gather(out.receivers[0], dt, ax=axes[0], receiver_spacing=20.0)
    plot.plot_wavefield(out.wavefield[0], 10.0, ax=axes[1], colorbar=True)
    plot.plot_gradient(grad, 10.0, ax=axes[2])
    assert axes[0].get_xlabel().startswith("distance")
