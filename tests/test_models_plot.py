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


def _box_ratio(ax):
    """Height / width of the drawn axes box, in display units."""
    ax.figure.canvas.draw()
    box = ax.get_window_extent()
    return box.height / box.width


@pytest.mark.parametrize("name", ["plot_model", "plot_wavefield", "plot_gradient"])
def test_sections_keep_their_true_aspect_ratio(plt, name):
    from sweep import plot

    v = models.synthetic_model((30, 80), (10.0, 12.5))  # 300 m deep, 1000 m across
    ax = getattr(plot, name)(v - v.mean(), (10.0, 12.5))
    assert ax.get_aspect() == 1.0  # one metre down is one metre across
    assert _box_ratio(ax) == pytest.approx(300.0 / 1000.0, rel=0.02)
    # The new figure is sized for the section: little empty margin around it.
    width, height = ax.figure.get_size_inches()
    assert height < width * 0.5


def test_plot_model_aspect_options(plt):
    from sweep import plot

    v = models.synthetic_model((30, 80), 10.0)
    _fig, axes = plt.subplots(3, figsize=(6, 9), layout="constrained")
    plot.plot_model(v, 10.0, ax=axes[0], aspect="auto")
    plot.plot_model(v, 10.0, ax=axes[1], aspect=2.0, colorbar=False)
    plot.plot_model(v, 10.0, ax=axes[2], colorbar=False)
    assert axes[0].get_aspect() == "auto"
    # Vertical exaggeration 2: the box is twice as tall as true proportions.
    assert _box_ratio(axes[1]) == pytest.approx(2.0 * _box_ratio(axes[2]), rel=0.02)
    with pytest.raises(ValueError, match="aspect must be 'equal'"):
        plot.plot_model(v, 10.0, aspect="square")
    with pytest.raises(ValueError, match="aspect must be"):
        plot.plot_gradient(v, 10.0, aspect=0)


def test_tall_model_gets_a_tall_figure(plt):
    from sweep import plot

    ax = plot.plot_model(models.synthetic_model((160, 50), 10.0), 10.0)
    width, height = ax.figure.get_size_inches()
    assert height > 1.5 * width
    assert _box_ratio(ax) == pytest.approx(160 / 50, rel=0.02)


def test_plot_gather_in_metres_from_locations(plt):
    from sweep import plot

    src, rec = models.surface_acquisition((30, 60), n_shots=2, receiver_spacing=3)
    data = np.random.default_rng(2).standard_normal((rec.shape[1], 100))
    dt = 2e-3
    # x of the receivers: cell 0, 3, ..., 57 at 12.5 m.
    ax = plot.plot_gather(data, dt, receiver_locations=rec[0], spacing=12.5)
    assert ax.get_xlabel() == "x (m)"
    assert ax.get_xlim() == pytest.approx((-0.5 * 37.5, 57 * 12.5 + 0.5 * 37.5))
    assert ax.get_ylim() == pytest.approx(((100 - 0.5) * dt, -0.5 * dt))
    # Offsets from the shot's source; per-axis spacing uses the last (x) axis.
    sx = src[1, 0, 1]
    ax = plot.plot_gather(
        data, dt, receiver_locations=rec[1], spacing=(5.0, 12.5), source_location=src[1, 0]
    )
    assert ax.get_xlabel() == "offset (m)"
    lo, hi = ax.get_xlim()
    assert lo == pytest.approx((0 - sx) * 12.5 - 0.5 * 37.5)
    assert hi == pytest.approx((57 - sx) * 12.5 + 0.5 * 37.5)
    assert lo < 0 < hi


def test_plot_gather_reversed_and_uneven_receivers(plt):
    from sweep import plot

    data = np.arange(4 * 5, dtype=float).reshape(4, 5)
    rec = np.array([[1, 9], [1, 6], [1, 3], [1, 0]])  # listed right to left
    ax = plot.plot_gather(data, 1e-3, receiver_locations=rec, spacing=10.0, clip=100)
    assert ax.get_xlim() == pytest.approx((-15.0, 105.0))
    # Drawn left to right: the leftmost column is the last receiver's trace.
    np.testing.assert_array_equal(ax.images[0].get_array()[:, 0], data[-1])
    uneven = np.array([[1, 0], [1, 2], [1, 7], [1, 8]])
    ax = plot.plot_gather(data, 1e-3, receiver_locations=uneven, spacing=10.0)
    assert not ax.images and len(ax.collections) == 1  # a mesh with one cell per receiver
    assert ax.get_xlim() == pytest.approx((-10.0, 85.0))
    assert ax.get_ylim()[0] > ax.get_ylim()[1]  # time still increases downwards


def test_plot_gather_location_errors(plt):
    from sweep import plot

    data = np.zeros((3, 10))
    rec = np.array([[1, 0], [1, 2], [1, 4]])
    with pytest.raises(ValueError, match="pass spacing"):
        plot.plot_gather(data, 1e-3, receiver_locations=rec)
    with pytest.raises(ValueError, match="together with receiver_locations"):
        plot.plot_gather(data, 1e-3, source_location=[1, 2])
    with pytest.raises(ValueError, match="either receiver_spacing or receiver_locations"):
        plot.plot_gather(data, 1e-3, receiver_locations=rec, spacing=1.0, receiver_spacing=2.0)
    with pytest.raises(ValueError, match=r"shape \(n_receivers, ndim\) = \(3, ndim\)"):
        plot.plot_gather(data, 1e-3, receiver_locations=rec[:2], spacing=1.0)
    with pytest.raises(ValueError, match="source_location must be one source"):
        plot.plot_gather(data, 1e-3, receiver_locations=rec, spacing=1.0, source_location=[[1]])
    with pytest.raises(ValueError, match="one per axis"):
        plot.plot_gather(data, 1e-3, receiver_locations=rec, spacing=(1.0, 2.0, 3.0))
    grid = np.array([[1, 0, 0], [1, 0, 2], [1, 2, 0]])  # a 3D receiver grid: x repeats
    with pytest.raises(ValueError, match="in order along the line"):
        plot.plot_gather(data, 1e-3, receiver_locations=grid, spacing=1.0)


def test_demo_figure_models_to_scale_and_gather_in_offset(plt):
    from sweep import demo

    config = demo.DemoConfig(shape=(30, 80), n_shots=3, receiver_spacing=2)
    v = models.synthetic_model(config.shape, config.spacing, dtype=np.float64)
    src, rec = models.surface_acquisition(config.shape, 3, 2)
    result = demo.DemoResult(
        v_true=v,
        v_init=models.smooth(v, 5.0),
        v_inv=v,
        observed=np.random.default_rng(0).standard_normal((3, rec.shape[1], 50)),
        dt=1e-3,
        misfit=[1.0, 0.5],
        model_error=[1.0, 0.8],
        bands=[9.0, 9.0],
        iteration=[0, 1],
        source_locations=src,
        receiver_locations=rec,
    )
    fig = demo.demo_figure(result, config.spacing, shot=1)
    fig.canvas.draw()
    model_axes = [ax for ax in fig.get_axes() if ax.get_ylabel() == "depth (m)"]
    assert len(model_axes) == 3
    for ax in model_axes:
        assert _box_ratio(ax) == pytest.approx(30 / 80, rel=0.02)
    (gather,) = [ax for ax in fig.get_axes() if ax.get_title().startswith("Observed")]
    assert gather.get_xlabel() == "offset (m)"
    sx = src[1, 0, 1]
    assert gather.get_xlim()[0] == pytest.approx((0 - sx - 1) * config.spacing)
    # A result without locations (made by older code) still draws, by receiver index.
    result.source_locations = result.receiver_locations = None
    fig = demo.demo_figure(result, config.spacing)
    (gather,) = [ax for ax in fig.get_axes() if ax.get_title().startswith("Observed")]
    assert gather.get_xlabel() == "receiver"
