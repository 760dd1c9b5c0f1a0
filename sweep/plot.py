"""Matplotlib helpers for models, shot gathers, wavefields and gradients.

Matplotlib is an optional dependency (``pip install "sweep[plot]"``); it is
imported only when one of these functions runs.  On a machine without a
display (no ``DISPLAY``/``WAYLAND_DISPLAY`` on Linux) and with no backend
chosen by the user, the non-interactive Agg backend is selected, so the
functions work in scripts, tests and CI and figures can be saved with
``ax.figure.savefig(...)``.

Every function draws 2D arrays in physical units (metres from the model
origin, seconds), depth increasing downwards, and returns the
:class:`matplotlib.axes.Axes` it drew on.  Models, wavefields and gradients
keep their true aspect ratio (one metre is as long across as down) unless
``aspect`` says otherwise; gathers show the receivers' offset or x in metres
when their locations and the grid spacing are given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_das_gather", "plot_gather", "plot_gradient", "plot_model", "plot_wavefield"]


def _pyplot() -> Any:
    """Import ``matplotlib.pyplot``, choosing Agg when there is no display."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "sweep.plot needs matplotlib; install it with pip install matplotlib "
            '(or pip install "sweep[plot]")'
        ) from exc
    headless = sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )
    if headless and "matplotlib.pyplot" not in sys.modules and "MPLBACKEND" not in os.environ:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    plt = _pyplot()
    _, new_ax = plt.subplots(figsize=figsize, layout="constrained")
    return new_ax


def _as_2d(name: str, a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim == 3 and arr.shape[0] == 1:
        arr = arr[0]
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2D array (nz, nx) (or have a leading axis of length 1), "
            f"got shape {arr.shape}; select a shot or a slice first"
        )
    return arr


def _spacing2(spacing: float | Sequence[float]) -> tuple[float, float]:
    if np.isscalar(spacing):
        return float(spacing), float(spacing)  # type: ignore[arg-type]
    dz, dx = (float(s) for s in spacing)  # type: ignore[union-attr]
    return dz, dx


def _extent(shape: tuple[int, ...], spacing: float | Sequence[float]) -> list[float]:
    """Imshow extent with cell centres at ``index * spacing``."""
    dz, dx = _spacing2(spacing)
    nz, nx = shape
    return [-0.5 * dx, (nx - 0.5) * dx, (nz - 0.5) * dz, -0.5 * dz]


def _section_figsize(
    shape: tuple[int, ...], spacing: float | Sequence[float], aspect: str | float
) -> tuple[float, float]:
    """Figure size (inches) that fits a section drawn with ``aspect`` and a colour bar."""
    if aspect == "auto":
        return (8.0, 3.5)
    dz, dx = _spacing2(spacing)
    nz, nx = shape
    ratio = (nz * dz) / (nx * dx) * (1.0 if aspect == "equal" else float(aspect))
    # Axes about 6.6 inches across (or 6.6 inches down for tall sections), plus
    # room for the title, labels and colour bar; with the height of the axes
    # matched, the colour bar is as tall as the section.
    width = 6.6 if ratio <= 1.0 else max(6.6 / ratio, 2.0)
    return (width + 1.9, min(width * ratio, 9.0) + 1.0)


def _check_aspect(aspect: Any) -> str | float:
    if aspect in ("equal", "auto"):
        return aspect
    if isinstance(aspect, (int, float)) and not isinstance(aspect, bool) and aspect > 0:
        return float(aspect)
    raise ValueError(
        "aspect must be 'equal' (true proportions), 'auto' (fill the axes) or a positive "
        f"number (depth stretched by that factor), got {aspect!r}"
    )


def _clip_value(a: np.ndarray, clip: float) -> float:
    if not 0 < clip <= 100:
        raise ValueError(f"clip must be a percentile in (0, 100], got {clip!r}")
    value = float(np.percentile(np.abs(a), clip)) if a.size else 0.0
    if not np.isfinite(value) or value <= 0:
        value = float(np.max(np.abs(a))) if a.size else 0.0
    return value if np.isfinite(value) and value > 0 else 1.0


def _colorbar(ax: Axes, image: Any, label: str) -> None:
    ax.figure.colorbar(image, ax=ax, label=label, shrink=0.9)


def plot_model(
    v: Any,
    spacing: float | Sequence[float],
    ax: Axes | None = None,
    title: str = "Velocity model",
    *,
    vmin: float | None = None,
    vmax: float | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    units: str = "m/s",
    aspect: str | float = "equal",
) -> Axes:
    """Show a 2D velocity model in physical coordinates, in its true proportions.

    Parameters
    ----------
    v : array_like, shape (nz, nx)
        Model values (e.g. velocity in m/s).
    spacing : float or (float, float)
        Cell size in metres, one value or ``(dz, dx)``.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created when omitted.
    title : str, optional
        Axes title.
    vmin, vmax : float, optional
        Colour scale limits; default: the range of ``v``.  Pass the same values
        to compare several models.
    cmap : str, optional
        Matplotlib colormap name.
    colorbar : bool, optional
        Add a colour bar labelled with ``units``.
    units : str, optional
        Label of the colour bar.
    aspect : {"equal", "auto"} or float, optional
        ``"equal"`` (default): a metre of depth as long as a metre across;
        ``"auto"``: fill the axes; a number: depth stretched by that factor
        (vertical exaggeration).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    arr = _as_2d("v", v)
    aspect = _check_aspect(aspect)
    ax = _axes(ax, _section_figsize(arr.shape, spacing, aspect))
    image = ax.imshow(
        arr,
        extent=_extent(arr.shape, spacing),
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        aspect=aspect,
        interpolation="nearest",
    )
    ax.set_xlabel("x (m)")
    ax.set_ylabel("depth (m)")
    ax.set_title(title)
    if colorbar:
        _colorbar(ax, image, units)
    return ax


def plot_gather(
    receivers_2d: Any,
    dt: float,
    ax: Axes | None = None,
    clip: float = 98.0,
    *,
    title: str = "Shot gather",
    receiver_spacing: float | None = None,
    receiver_locations: Any = None,
    spacing: float | Sequence[float] | None = None,
    source_location: Any = None,
    cmap: str = "gray",
) -> Axes:
    """Show one shot gather, time increasing downwards.

    The horizontal axis is, by what is given: the offset from the source in
    metres (``receiver_locations``, ``spacing`` and ``source_location``), the
    receivers' x in metres (``receiver_locations`` and ``spacing``), the
    distance along the spread (``receiver_spacing``), or else the receiver
    index.

    Parameters
    ----------
    receivers_2d : array_like, shape (n_receivers, nt)
        Receiver data of one shot, e.g. ``result.receivers[shot]``.
    dt : float
        Time sample interval in seconds (the propagation ``dt``).
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created when omitted.
    clip : float, optional
        Percentile of ``|data|`` mapped to the ends of the symmetric colour
        scale (default 98); lower values bring out weak arrivals.
    title : str, optional
        Axes title.
    receiver_spacing : float, optional
        Receiver interval in metres, for data without receiver locations:
        the horizontal axis is the distance along the spread from the first
        receiver.
    receiver_locations : int array_like, shape (n_receivers, ndim), optional
        Grid indices of this shot's receivers, e.g. ``receiver_locations[shot]``
        of the propagation; their last axis is x.  Needs ``spacing``.
    spacing : float or sequence of float, optional
        Cell size in metres, one value or one per axis (the propagation's
        ``grid_spacing``).
    source_location : int array_like, shape (ndim,), optional
        Grid indices of the shot's source, e.g. ``source_locations[shot, 0]``:
        the horizontal axis becomes the offset, receiver x minus source x.
    cmap : str, optional
        Matplotlib colormap name.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    data = _as_2d("receivers_2d", receivers_2d)
    x, label = _gather_axis(
        data.shape[0], receiver_spacing, receiver_locations, spacing, source_location
    )
    return _draw_gather(data, x, label, dt, ax, clip, title, cmap)[0]


def _draw_gather(
    data: np.ndarray, x: np.ndarray, label: str, dt: float, ax: Axes | None, clip: float,
    title: str, cmap: str,
) -> tuple[Axes, Any]:  # fmt: skip
    """Draw ``data`` (n_receivers, nt) at positions ``x``, time down; return (axes, image)."""
    n_rec, nt = data.shape
    if x[-1] < x[0]:  # receivers listed right to left: draw them left to right
        x, data = x[::-1], data[::-1]
    ax = _axes(ax, (5.0, 5.0))
    scale = _clip_value(data, clip)
    steps = np.diff(x)
    if n_rec < 2 or np.allclose(steps, steps[0], rtol=1e-6, atol=0):
        step = float(steps[0]) if n_rec > 1 else 1.0
        extent = [x[0] - 0.5 * step, x[-1] + 0.5 * step, (nt - 0.5) * dt, -0.5 * dt]
        image = ax.imshow(
            data.T,
            extent=extent,
            cmap=cmap,
            vmin=-scale,
            vmax=scale,
            aspect="auto",
            interpolation="nearest",
        )
    else:  # uneven receiver intervals: a cell from midpoint to midpoint
        mid = 0.5 * (x[1:] + x[:-1])
        edges = np.concatenate([[x[0] - 0.5 * steps[0]], mid, [x[-1] + 0.5 * steps[-1]]])
        times = (np.arange(nt + 1) - 0.5) * dt
        image = ax.pcolormesh(edges, times, data.T, cmap=cmap, vmin=-scale, vmax=scale)
        ax.set_ylim(times[-1], times[0])
    ax.set_xlabel(label)
    ax.set_ylabel("time (s)")
    ax.set_title(title)
    return ax, image


def plot_das_gather(
    data: Any,
    dt: float,
    fibre: Any = None,
    ax: Axes | None = None,
    clip: float = 98.0,
    *,
    title: str = "DAS gather",
    quantity: str = "rate",
    cmap: str = "seismic",
    colorbar: bool = True,
) -> Axes:
    """Show one shot's DAS data: channels along the fibre across, time down.

    Parameters
    ----------
    data : array_like, shape (n_channels, nt)
        One shot's strain-rate (or strain) channels, e.g. the fibre's columns
        of ``sweep.elastic(..., fibre=fibre).receivers[shot]``.
    dt : float
        Time sample interval in seconds.
    fibre : sweep.das.Fibre, optional
        The fibre: the horizontal axis is each channel's distance along it
        (metres); without it, the channel index.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created when omitted.
    clip : float, optional
        Percentile of ``|data|`` mapped to the ends of the symmetric colour scale.
    title : str, optional
        Axes title.
    quantity : {"rate", "strain"}, optional
        Labels the colour bar: strain rate (1/s) or strain.
    cmap : str, optional
        Matplotlib colormap name (diverging: extension and compression).
    colorbar : bool, optional
        Add a colour bar.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    arr = _as_2d("data", data)
    if fibre is None:
        x, label = np.arange(arr.shape[0], dtype=float), "channel"
    else:
        x, label = np.asarray(fibre.arc, dtype=float), "distance along fibre (m)"
        if x.size != arr.shape[0]:
            raise ValueError(
                f"data has {arr.shape[0]} channels but the fibre has {x.size}; pass the "
                "fibre's columns of one shot"
            )
    ax, image = _draw_gather(arr, x, label, dt, ax, clip, title, cmap)
    if colorbar:
        _colorbar(ax, image, "strain rate (1/s)" if quantity == "rate" else "strain")
    return ax


def _gather_axis(
    n_rec: int,
    receiver_spacing: float | None,
    receiver_locations: Any,
    spacing: float | Sequence[float] | None,
    source_location: Any,
) -> tuple[np.ndarray, str]:
    """Horizontal positions of a gather's receivers and the axis label."""
    if receiver_locations is None:
        if source_location is not None:
            raise ValueError(
                "source_location gives offsets only together with receiver_locations and "
                "spacing (the receivers' grid indices and the cell size)"
            )
        if receiver_spacing is None:
            return np.arange(n_rec, dtype=float), "receiver"
        return np.arange(n_rec) * float(receiver_spacing), "distance along spread (m)"
    if receiver_spacing is not None:
        raise ValueError(
            "pass either receiver_spacing or receiver_locations (with spacing), not both"
        )
    if spacing is None:
        raise ValueError(
            "receiver_locations are grid indices: pass spacing (the cell size in metres, the "
            "propagation's grid_spacing) to draw them in metres"
        )
    loc = np.asarray(receiver_locations)
    if loc.ndim != 2 or loc.shape[0] != n_rec:
        raise ValueError(
            f"receiver_locations must have shape (n_receivers, ndim) = ({n_rec}, ndim) for this "
            f"gather, got {loc.shape}; pass one shot's locations, e.g. receiver_locations[shot]"
        )
    dx = _axis_spacing(spacing, loc.shape[1])
    x = loc[:, -1] * dx
    label = "x (m)"
    if source_location is not None:
        src = np.asarray(source_location).reshape(-1)
        if src.shape != (loc.shape[1],):
            raise ValueError(
                f"source_location must be one source's grid indices, shape ({loc.shape[1]},), "
                f"got {np.shape(source_location)}; e.g. source_locations[shot, 0]"
            )
        x = x - src[-1] * dx
        label = "offset (m)"
    steps = np.diff(x)
    if n_rec > 1 and not (np.all(steps > 0) or np.all(steps < 0)):
        raise ValueError(
            "the receivers' x positions must be all different and in order along the line "
            "to draw them in metres (a 2D grid of receivers in 3D?); pass one line of "
            "receivers, or receiver_spacing instead"
        )
    return x.astype(float), label


def _axis_spacing(spacing: float | Sequence[float], ndim: int) -> float:
    """Cell size along the last (x) axis."""
    if np.isscalar(spacing):
        return float(spacing)  # type: ignore[arg-type]
    values = [float(s) for s in spacing]  # type: ignore[union-attr]
    if len(values) != ndim:
        raise ValueError(
            f"spacing must be one value or one per axis ({ndim}), got {len(values)} values"
        )
    return values[-1]


def plot_wavefield(
    u: Any,
    spacing: float | Sequence[float],
    ax: Axes | None = None,
    clip: float = 99.5,
    *,
    title: str = "Wavefield",
    cmap: str = "seismic",
    colorbar: bool = False,
    aspect: str | float = "equal",
) -> Axes:
    """Show a wavefield snapshot with a symmetric colour scale.

    Parameters
    ----------
    u : array_like, shape (nz, nx) or (1, nz, nx)
        Wavefield on the model grid, e.g. ``result.wavefield[shot]``.
    spacing : float or (float, float)
        Cell size in metres, one value or ``(dz, dx)``.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created when omitted.
    clip : float, optional
        Percentile of ``|u|`` mapped to the ends of the colour scale.
    title : str, optional
        Axes title.
    cmap : str, optional
        A diverging matplotlib colormap.
    colorbar : bool, optional
        Add a colour bar.
    aspect : {"equal", "auto"} or float, optional
        As for :func:`plot_model`; default: true proportions.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    arr = _as_2d("u", u)
    return _symmetric_image(arr, spacing, ax, clip, title, cmap, colorbar, "amplitude", aspect)


def plot_gradient(
    g: Any,
    spacing: float | Sequence[float],
    ax: Axes | None = None,
    clip: float = 99.0,
    *,
    title: str = "Gradient",
    cmap: str = "RdBu_r",
    colorbar: bool = True,
    aspect: str | float = "equal",
) -> Axes:
    """Show a model gradient on a colour scale symmetric about zero.

    Parameters
    ----------
    g : array_like, shape (nz, nx)
        Gradient with respect to the model, e.g. ``pullback(residual)["v"]``.
    spacing : float or (float, float)
        Cell size in metres, one value or ``(dz, dx)``.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on; a new figure is created when omitted.
    clip : float, optional
        Percentile of ``|g|`` mapped to the ends of the colour scale, so that
        spikes at sources and receivers do not wash out the rest.
    title : str, optional
        Axes title.
    cmap : str, optional
        A diverging matplotlib colormap; white is zero.
    colorbar : bool, optional
        Add a colour bar.
    aspect : {"equal", "auto"} or float, optional
        As for :func:`plot_model`; default: true proportions.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    arr = _as_2d("g", g)
    return _symmetric_image(arr, spacing, ax, clip, title, cmap, colorbar, "gradient", aspect)


def _symmetric_image(
    arr: np.ndarray,
    spacing: float | Sequence[float],
    ax: Axes | None,
    clip: float,
    title: str,
    cmap: str,
    colorbar: bool,
    label: str,
    aspect: str | float,
) -> Axes:
    """Draw a section on a colour scale symmetric about zero, clipped at a percentile."""
    aspect = _check_aspect(aspect)
    ax = _axes(ax, _section_figsize(arr.shape, spacing, aspect))
    scale = _clip_value(arr, clip)
    image = ax.imshow(
        arr,
        extent=_extent(arr.shape, spacing),
        cmap=cmap,
        vmin=-scale,
        vmax=scale,
        aspect=aspect,
        interpolation="nearest",
    )
    ax.set_xlabel("x (m)")
    ax.set_ylabel("depth (m)")
    ax.set_title(title)
    if colorbar:
        _colorbar(ax, image, label)
    return ax
