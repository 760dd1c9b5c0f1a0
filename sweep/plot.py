"""Matplotlib helpers for models, shot gathers, wavefields and gradients.

Matplotlib is an optional dependency (``pip install "sweep[plot]"``); it is
imported only when one of these functions runs.  On a machine without a
display (no ``DISPLAY``/``WAYLAND_DISPLAY`` on Linux) and with no backend
chosen by the user, the non-interactive Agg backend is selected, so the
functions work in scripts, tests and CI and figures can be saved with
``ax.figure.savefig(...)``.

Every function draws 2D arrays in physical units (metres from the model
origin, seconds), depth increasing downwards, and returns the
:class:`matplotlib.axes.Axes` it drew on.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["plot_gather", "plot_gradient", "plot_model", "plot_wavefield"]


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
) -> Axes:
    """Show a 2D velocity model in physical coordinates.

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

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    arr = _as_2d("v", v)
    ax = _axes(ax, (8.0, 3.5))
    image = ax.imshow(
        arr,
        extent=_extent(arr.shape, spacing),
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        aspect="auto",
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
    cmap: str = "gray",
) -> Axes:
    """Show one shot gather, time increasing downwards.

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
        Receiver interval in metres; when given the horizontal axis is offset
        along the spread in metres, otherwise the receiver index.
    cmap : str, optional
        Matplotlib colormap name.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    data = _as_2d("receivers_2d", receivers_2d)
    n_rec, nt = data.shape
    ax = _axes(ax, (5.0, 5.0))
    scale = _clip_value(data, clip)
    step = 1.0 if receiver_spacing is None else float(receiver_spacing)
    extent = [-0.5 * step, (n_rec - 0.5) * step, (nt - 0.5) * dt, -0.5 * dt]
    ax.imshow(
        data.T,
        extent=extent,
        cmap=cmap,
        vmin=-scale,
        vmax=scale,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xlabel("receiver" if receiver_spacing is None else "distance along spread (m)")
    ax.set_ylabel("time (s)")
    ax.set_title(title)
    return ax


def plot_wavefield(
    u: Any,
    spacing: float | Sequence[float],
    ax: Axes | None = None,
    clip: float = 99.5,
    *,
    title: str = "Wavefield",
    cmap: str = "seismic",
    colorbar: bool = False,
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

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    arr = _as_2d("u", u)
    return _symmetric_image(arr, spacing, ax, clip, title, cmap, colorbar, "amplitude")


def plot_gradient(
    g: Any,
    spacing: float | Sequence[float],
    ax: Axes | None = None,
    clip: float = 99.0,
    *,
    title: str = "Gradient",
    cmap: str = "RdBu_r",
    colorbar: bool = True,
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

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    arr = _as_2d("g", g)
    return _symmetric_image(arr, spacing, ax, clip, title, cmap, colorbar, "gradient")


def _symmetric_image(
    arr: np.ndarray,
    spacing: float | Sequence[float],
    ax: Axes | None,
    clip: float,
    title: str,
    cmap: str,
    colorbar: bool,
    label: str,
) -> Axes:
    """Draw a section on a colour scale symmetric about zero, clipped at a percentile."""
    ax = _axes(ax, (8.0, 3.5))
    scale = _clip_value(arr, clip)
    image = ax.imshow(
        arr,
        extent=_extent(arr.shape, spacing),
        cmap=cmap,
        vmin=-scale,
        vmax=scale,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xlabel("x (m)")
    ax.set_ylabel("depth (m)")
    ax.set_title(title)
    if colorbar:
        _colorbar(ax, image, label)
    return ax
