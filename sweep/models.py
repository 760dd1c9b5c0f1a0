"""Source wavelets, synthetic velocity models and acquisition geometries.

Everything here is generated from formulas: nothing is downloaded and every
function is deterministic, so examples, tests and the demo are reproducible.

Functions
---------
ricker
    Ricker (Mexican-hat) source wavelet.
synthetic_model
    A 2D layered model with a dipping normal fault and a salt-like body.
smooth
    Separable Gaussian smoothing, e.g. to build FWI starting models.
surface_acquisition
    Sources and receivers near the top of the model, as sweep location arrays.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import DTypeLike

__all__ = ["MODEL_KINDS", "ricker", "smooth", "surface_acquisition", "synthetic_model"]

#: Names accepted by :func:`synthetic_model`'s ``kind`` argument.
MODEL_KINDS: tuple[str, ...] = ("default", "layered", "faulted")

# Layer interfaces of the synthetic model as fractions of the model depth (at
# the left edge, before the fault), and the velocity of each layer (m/s).
_INTERFACES = (0.14, 0.29, 0.44, 0.60, 0.78)
_LAYER_VELOCITIES = (1500.0, 1850.0, 2200.0, 2650.0, 3150.0, 4000.0)
_SALT_VELOCITY = 4500.0


def ricker(
    freq: float,
    nt: int,
    dt: float,
    peak_time: float | None = None,
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """Ricker wavelet sampled at ``t = 0, dt, ..., (nt - 1) dt``.

    ``w(t) = (1 - 2 a) exp(-a)`` with ``a = (pi freq (t - peak_time))^2``: the
    negative normalised second derivative of a Gaussian, with peak amplitude 1
    at ``peak_time`` and its spectrum peaking at ``freq``.

    Parameters
    ----------
    freq : float
        Peak (dominant) frequency in Hz.
    nt : int
        Number of samples.
    dt : float
        Sample interval in seconds (use the propagation time step).
    peak_time : float, optional
        Time of the central peak in seconds.  The default, ``1.5 / freq``,
        delays the wavelet enough that it starts at (numerically) zero.
    dtype : dtype, optional
        Output dtype, float32 by default to match float32 models.

    Returns
    -------
    numpy.ndarray, shape (nt,)
        The wavelet.  Add two leading axes (``w[None, None]``) or use
        ``np.broadcast_to`` to build ``source_amplitudes``.

    Raises
    ------
    ValueError
        If ``freq``, ``nt`` or ``dt`` is not positive.

    Examples
    --------
    >>> w = ricker(10.0, 500, 0.002)
    >>> int(np.argmax(w)) * 0.002
    0.15
    """
    if not (math.isfinite(freq) and freq > 0):
        raise ValueError(f"freq must be a positive frequency in Hz, got {freq!r}")
    if isinstance(nt, bool) or not isinstance(nt, (int, np.integer)) or nt < 1:
        raise ValueError(f"nt must be a positive integer number of samples, got {nt!r}")
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be a positive time step in seconds, got {dt!r}")
    if peak_time is None:
        peak_time = 1.5 / freq
    t = np.arange(int(nt), dtype=np.float64) * dt
    a = (math.pi * freq * (t - peak_time)) ** 2
    return ((1.0 - 2.0 * a) * np.exp(-a)).astype(dtype)


def _spacing_tuple(spacing: float | Sequence[float], ndim: int) -> tuple[float, ...]:
    if isinstance(spacing, (int, float, np.integer, np.floating)):
        values = (float(spacing),) * ndim
    else:
        values = tuple(float(s) for s in spacing)
    if len(values) != ndim or not all(math.isfinite(s) and s > 0 for s in values):
        raise ValueError(
            f"spacing must be a positive number or {ndim} positive numbers, got {spacing!r}"
        )
    return values


def synthetic_model(
    shape: tuple[int, int] = (100, 300),
    spacing: float | Sequence[float] = 10.0,
    kind: str = "default",
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """Built-in 2D synthetic velocity model.

    The model is described in physical coordinates, relative to its depth and
    width, so any ``shape`` and ``spacing`` sample the same geology:

    * six layers whose velocity increases with depth from 1500 to 4000 m/s,
      with gently dipping and undulating interfaces;
    * a normal fault dipping at about 60 degrees, whose hanging wall (right of
      the fault) is dropped by about 8 % of the model depth (``"faulted"`` and
      ``"default"``);
    * an elliptical salt-like body of 4500 m/s in the lower left part of the
      model (``"default"`` only).

    Parameters
    ----------
    shape : tuple of int
        ``(nz, nx)``: number of cells in depth and horizontally, each >= 2.
    spacing : float or (float, float)
        Cell size in metres, one value or ``(dz, dx)``.
    kind : {"default", "layered", "faulted"}
        ``"layered"``: layers only; ``"faulted"``: layers and fault;
        ``"default"``: layers, fault and salt body.
    dtype : dtype, optional
        Output dtype (float32 by default).

    Returns
    -------
    numpy.ndarray, shape (nz, nx)
        Velocity in m/s, between 1500 and 4500.

    Raises
    ------
    ValueError
        For an unknown ``kind``, a shape that is not two positive sizes >= 2,
        or non-positive spacing.

    Examples
    --------
    >>> v = synthetic_model((60, 160), 10.0)
    >>> v.shape, float(v.min()), float(v.max())
    ((60, 160), 1500.0, 4500.0)
    """
    if kind not in MODEL_KINDS:
        raise ValueError(f"kind must be one of {MODEL_KINDS}, got {kind!r}")
    if len(shape) != 2 or not all(isinstance(n, (int, np.integer)) and n >= 2 for n in shape):
        raise ValueError(f"shape must be two integers (nz, nx), each >= 2, got {shape!r}")
    nz, nx = (int(n) for n in shape)
    dz, dx = _spacing_tuple(spacing, 2)
    depth, width = nz * dz, nx * dx
    # Cell-centre coordinates in metres.
    z = ((np.arange(nz) + 0.5) * dz)[:, None]
    x = ((np.arange(nx) + 0.5) * dx)[None, :]
    xn = x / width  # 0..1 across the model

    # Fault: a plane through (x = 0.55 width, z = 0) dipping 60 degrees to the
    # right.  Points to its right (the hanging wall) see the layers shifted down.
    throw = 0.0
    if kind in ("default", "faulted"):
        fault_x = 0.55 * width + z / math.tan(math.radians(60.0))
        hanging = x > fault_x
        throw = np.where(hanging, 0.08 * depth, 0.0)
    # Depth of the stratigraphy sampled at each point: layers bend gently.
    strat = z - throw - depth * (0.04 * xn + 0.015 * np.sin(2.0 * math.pi * 1.3 * xn))
    v = np.full((nz, nx), _LAYER_VELOCITIES[0])
    for frac, vel in zip(_INTERFACES, _LAYER_VELOCITIES[1:], strict=True):
        v = np.where(strat >= frac * depth, vel, v)

    if kind == "default":
        # Salt body: an ellipse centred at 27 % of the width, 66 % of the depth.
        cz, cx = 0.66 * depth, 0.27 * width
        rz, rx = 0.16 * depth, min(0.16 * width, 0.55 * depth)
        inside = ((z - cz) / rz) ** 2 + ((x - cx) / rx) ** 2 <= 1.0
        v = np.where(inside, _SALT_VELOCITY, v)
    return np.ascontiguousarray(v, dtype=dtype)


def _gaussian_kernel(sigma: float) -> np.ndarray:
    radius = max(1, math.ceil(4.0 * sigma))
    k = np.arange(-radius, radius + 1, dtype=np.float64)
    w = np.exp(-0.5 * (k / sigma) ** 2)
    return w / w.sum()


def smooth(v: np.ndarray, sigma_cells: float | Sequence[float]) -> np.ndarray:
    """Gaussian-smoothed copy of a model, e.g. an FWI starting model.

    A separable Gaussian filter (pure NumPy), truncated at four standard
    deviations.  The model is extended by repeating its edge values, so a
    constant model stays constant and the edges are not pulled towards zero.

    Parameters
    ----------
    v : numpy.ndarray
        Model of any dimension (typically ``(nz, nx)`` or ``(nz, ny, nx)``).
    sigma_cells : float or sequence of float
        Standard deviation of the Gaussian in cells: one value for every axis
        or one per axis.  ``0`` leaves an axis unsmoothed.

    Returns
    -------
    numpy.ndarray
        Smoothed model with the shape and (floating) dtype of ``v``.

    Raises
    ------
    ValueError
        If a ``sigma_cells`` value is negative or not finite, or their number
        does not match ``v.ndim``.

    Examples
    --------
    >>> v0 = smooth(synthetic_model((60, 160), 10.0), 6.0)
    """
    v = np.asarray(v)
    if np.isscalar(sigma_cells):
        sigmas = (float(sigma_cells),) * v.ndim
    else:
        sigmas = tuple(float(s) for s in sigma_cells)
    if len(sigmas) != v.ndim:
        raise ValueError(f"sigma_cells needs 1 or {v.ndim} values, got {len(sigmas)}")
    if not all(math.isfinite(s) and s >= 0 for s in sigmas):
        raise ValueError(f"sigma_cells must be non-negative and finite, got {sigma_cells!r}")
    out_dtype = v.dtype if np.issubdtype(v.dtype, np.floating) else np.float64
    out = v.astype(np.float64)
    for axis, sigma in enumerate(sigmas):
        if sigma == 0:
            continue
        w = _gaussian_kernel(sigma)
        r = (len(w) - 1) // 2
        pad = [(0, 0)] * v.ndim
        pad[axis] = (r, r)
        padded = np.pad(out, pad, mode="edge")
        moved = np.moveaxis(padded, axis, 0)
        n = out.shape[axis]
        acc = np.zeros((n, *moved.shape[1:]))
        for k, wk in enumerate(w):
            acc += wk * moved[k : k + n]
        out = np.moveaxis(acc, 0, axis)
    return np.ascontiguousarray(out, dtype=out_dtype)


def _spread(n: int, size: int, margin: int) -> np.ndarray:
    """``n`` integer positions evenly spread over ``[margin, size - 1 - margin]``."""
    lo, hi = margin, size - 1 - margin
    if hi < lo:
        lo, hi = 0, size - 1
    if n == 1:
        return np.array([(lo + hi) // 2], dtype=np.int64)
    return np.round(np.linspace(lo, hi, n)).astype(np.int64)


def surface_acquisition(
    model_shape: Sequence[int],
    n_shots: int,
    receiver_spacing: int,
    depth: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Surface shots and a fixed receiver spread, as sweep location arrays.

    One source per shot, at grid row ``depth`` (first axis), the shots evenly
    spread along the last (x) axis.  Every shot records on the same receivers
    at row ``depth``, every ``receiver_spacing`` cells along x starting at
    x = 0.  For a 3D ``(nz, ny, nx)`` model the shots lie on the middle y line
    and the receivers form a grid with ``receiver_spacing`` along y and x.

    Parameters
    ----------
    model_shape : sequence of int
        ``(nz, nx)`` or ``(nz, ny, nx)``.
    n_shots : int
        Number of shots (>= 1).
    receiver_spacing : int
        Receiver interval in cells (>= 1).
    depth : int, optional
        Row of sources and receivers, default 1: one cell below the top, which
        keeps them off a free surface (``free_surface=True`` forbids sources on
        row 0).

    Returns
    -------
    source_locations : numpy.ndarray of int64, shape (n_shots, 1, ndim)
        Source grid indices, in the model's axis order.
    receiver_locations : numpy.ndarray of int64, shape (n_shots, n_receivers, ndim)
        Receiver grid indices, identical for every shot.

    Raises
    ------
    ValueError
        For a shape that is not 2D or 3D, non-positive counts, or a ``depth``
        outside the model.

    Examples
    --------
    >>> src, rec = surface_acquisition((60, 160), n_shots=4, receiver_spacing=2)
    >>> src.shape, rec.shape
    ((4, 1, 2), (4, 80, 2))
    """
    shape = tuple(int(n) for n in model_shape)
    ndim = len(shape)
    if ndim not in (2, 3) or min(shape) < 1:
        raise ValueError(f"model_shape must be (nz, nx) or (nz, ny, nx), got {model_shape!r}")
    if int(n_shots) < 1:
        raise ValueError(f"n_shots must be >= 1, got {n_shots!r}")
    if int(receiver_spacing) < 1:
        raise ValueError(f"receiver_spacing must be >= 1 cell, got {receiver_spacing!r}")
    if not 0 <= int(depth) < shape[0]:
        raise ValueError(f"depth must be a row index in [0, {shape[0] - 1}], got {depth!r}")
    n_shots, step, depth = int(n_shots), int(receiver_spacing), int(depth)
    nx = shape[-1]
    # Keep shots a few cells away from the side CPMLs when the model allows.
    sx = _spread(n_shots, nx, margin=min(5, nx // 10))
    src = np.zeros((n_shots, 1, ndim), dtype=np.int64)
    src[:, 0, 0] = depth
    src[:, 0, -1] = sx
    if ndim == 3:
        src[:, 0, 1] = shape[1] // 2
    axes = [np.arange(0, n, step, dtype=np.int64) for n in shape[1:]]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, ndim - 1)
    rec_one = np.concatenate([np.full((len(grid), 1), depth, dtype=np.int64), grid], axis=1)
    rec = np.ascontiguousarray(np.broadcast_to(rec_one, (n_shots, *rec_one.shape)))
    return src, rec
