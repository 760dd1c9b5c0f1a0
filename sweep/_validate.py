"""Input checks shared by the propagators.

Every check runs before any compute and raises an exception that names the
argument and says how to fix it.  Checks that need model values (finite,
positive) are skipped for JAX tracers, whose values are unknown at trace time.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _fd
from ._warn import warn_user
from ._xp import is_concrete, to_host

FLOAT_DTYPES = ("float32", "float64")

# Cells per wavelength below which dispersion is visible, by accuracy order.
MIN_CELLS_PER_WAVELENGTH = {2: 10.0, 4: 6.0, 6: 5.0, 8: 4.0}


def dtype_name(x: Any) -> str:
    """Short dtype name ('float32', ...) of an array from any library.

    A NumPy dtype of either byte order gives its name (``>f4`` is 'float32'):
    the compiled path converts byte order (``sweep._xp.kernel_array``).
    """
    if isinstance(x.dtype, np.dtype):
        return x.dtype.name
    return str(x.dtype).rsplit(".", 1)[-1]


CONSTRAINTS = ("positive", "nonnegative", "at_least_one", "any")


def check_model(
    name: str, v: Any, ndims: Sequence[int] = (2, 3), constraint: str = "positive"
) -> None:
    """Model array: 2D/3D, float32/float64, finite, and ``constraint`` on its values.

    ``constraint`` is ``"positive"`` (velocities, impedances), ``"nonnegative"``
    (conductivities), ``"at_least_one"`` (relative permittivities) or ``"any"``
    (signed perturbations).
    """
    if constraint not in CONSTRAINTS:
        raise ValueError(f"unknown model constraint {constraint!r}; one of {CONSTRAINTS}")
    if not hasattr(v, "shape") or not hasattr(v, "dtype"):
        raise TypeError(
            f"{name} must be an array (NumPy, CuPy, torch or JAX), got {type(v).__name__}"
        )
    if v.ndim not in ndims:
        raise ValueError(
            f"{name} must be a {' or '.join(f'{n}D' for n in ndims)} array of model values "
            f"(axis order z, y, x), got ndim={v.ndim} with shape {tuple(v.shape)}"
        )
    if dtype_name(v) not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must be float32 or float64, got {dtype_name(v)}; cast it with .astype"
        )
    if min(v.shape) < 1:
        raise ValueError(f"{name} must not be empty, got shape {tuple(v.shape)}")
    if is_concrete(v):
        host = to_host(v)
        if not np.all(np.isfinite(host)):
            raise ValueError(
                f"{name} contains NaN or infinite values; every cell needs a finite value"
            )
        if constraint == "positive" and not np.all(host > 0):
            raise ValueError(
                f"{name} must be positive everywhere, found minimum {float(host.min()):g}; "
                "velocities and impedances cannot be zero or negative"
            )
        if constraint == "nonnegative" and not np.all(host >= 0):
            raise ValueError(f"{name} must be >= 0 everywhere, found minimum {float(host.min()):g}")
        if constraint == "at_least_one" and not np.all(host >= 1):
            raise ValueError(
                f"{name} must be >= 1 everywhere (relative to the vacuum's value, which is 1), "
                f"found minimum {float(host.min()):g}"
            )


def check_spacing(grid_spacing: Any, ndim: int) -> tuple[float, ...]:
    """Scalar or one positive finite value per axis."""
    if isinstance(grid_spacing, numbers.Real):
        values = (float(grid_spacing),) * ndim
    else:
        try:
            values = tuple(float(x) for x in grid_spacing)
        except TypeError:
            raise TypeError(
                f"grid_spacing must be a number or a sequence of {ndim} numbers, "
                f"got {type(grid_spacing).__name__}"
            ) from None
        if len(values) != ndim:
            raise ValueError(
                f"grid_spacing needs {ndim} values (one per model axis), got {len(values)}"
            )
    if not all(math.isfinite(x) and x > 0 for x in values):
        raise ValueError(f"grid_spacing must be positive and finite, got {values}")
    return values


def check_dt(dt: Any) -> float:
    """Positive finite time step."""
    if not isinstance(dt, numbers.Real) or isinstance(dt, bool):
        raise TypeError(f"dt must be a number (seconds), got {type(dt).__name__}")
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0):
        raise ValueError(f"dt must be positive and finite, got {dt}")
    return dt


def check_accuracy(accuracy: Any) -> int:
    """Spatial order of accuracy: 2, 4, 6 or 8."""
    if isinstance(accuracy, bool) or accuracy not in _fd.ORDERS:
        raise ValueError(f"accuracy must be one of {_fd.ORDERS}, got {accuracy!r}")
    return int(accuracy)


CFL_SCHEMES = ("leapfrog", "staggered")


def cfl_limit(
    v_max: float, spacing: Sequence[float], order: int, scheme: str = "leapfrog"
) -> float:
    """Largest stable dt of ``scheme`` for ``order``.

    ``"leapfrog"``: second-order fields (the centred second difference);
    ``"staggered"``: first-order systems on a staggered grid (velocity-stress),
    whose pair of staggered first differences has a larger spectral radius.
    """
    if scheme == "staggered":
        rho = _fd.staggered_spectral_radius(order)
    elif scheme == "leapfrog":
        rho = _fd.second_derivative_spectral_radius(order)
    else:
        raise ValueError(f"unknown CFL scheme {scheme!r}; one of {CFL_SCHEMES}")
    return 2.0 / (v_max * math.sqrt(sum(rho / dx**2 for dx in spacing)))


def check_cfl(
    dt: float, v_max: float, spacing: Sequence[float], order: int, scheme: str = "leapfrog"
) -> None:
    """Raise when ``dt`` exceeds the CFL limit of ``scheme`` (see :func:`cfl_limit`)."""
    limit = cfl_limit(v_max, spacing, order, scheme)
    if dt >= limit:
        raise ValueError(
            f"dt={dt:g} violates the CFL stability limit {limit:.6g} for accuracy={order} "
            f"and maximum velocity {v_max:g}; use dt <= {0.95 * limit:.6g} "
            "(or a coarser grid_spacing / lower accuracy)"
        )


def check_faces(name: str, value: Any, ndim: int, kind: type) -> tuple:
    """One value for all 2*ndim faces, or a sequence (lo_0, hi_0, lo_1, hi_1, ...)."""
    if isinstance(value, kind) or (kind is int and isinstance(value, numbers.Integral)):
        out = (value,) * (2 * ndim)
    else:
        try:
            out = tuple(value)
        except TypeError:
            raise TypeError(
                f"{name} must be a {kind.__name__} or a sequence of {2 * ndim} values "
                f"(low and high face of each axis), got {type(value).__name__}"
            ) from None
        if len(out) != 2 * ndim:
            raise ValueError(
                f"{name} needs {2 * ndim} values (low and high face of each of the {ndim} axes), "
                f"got {len(out)}"
            )
    if kind is int:
        if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in out):
            raise TypeError(f"{name} values must be integers (cells), got {out}")
        out = tuple(int(x) for x in out)
    else:
        if not all(isinstance(x, (bool, np.bool_)) for x in out):
            raise TypeError(f"{name} values must be True or False, got {out}")
        out = tuple(bool(x) for x in out)
    return out


def check_pml(pml_width: Any, free_surface: Any, model_shape: Sequence[int]) -> tuple:
    """Return validated (pml_width, free_surface) per face; free-surface faces get no CPML."""
    ndim = len(model_shape)
    widths = check_faces("pml_width", pml_width, ndim, int)
    if isinstance(free_surface, bool) and free_surface:
        # True means the conventional top surface: the low face of the first axis.
        free = (True,) + (False,) * (2 * ndim - 1)
    else:
        free = check_faces("free_surface", free_surface, ndim, bool)
    for face, w in enumerate(widths):
        n = model_shape[face // 2]
        if w < 0:
            raise ValueError(f"pml_width must be >= 0 cells, got {w} on face {face}")
        if w > max(4 * n, 64):
            raise ValueError(
                f"pml_width {w} on face {face} is oversized for a model axis of {n} cells; "
                "20-40 cells absorb well, use at most max(4 * n, 64)"
            )
    widths = tuple(0 if f else w for w, f in zip(widths, free, strict=True))
    return widths, free


def check_amplitudes(
    name: str, amp: Any, n_shots: int | None, model_dtype: str
) -> tuple[int, int, int]:
    """(n_shots, n_sources, nt) float array of the model's dtype."""
    if amp.ndim != 3:
        raise ValueError(
            f"{name} must have shape (n_shots, n_sources, nt), got shape {tuple(amp.shape)}"
        )
    if dtype_name(amp) != model_dtype:
        raise TypeError(
            f"{name} has dtype {dtype_name(amp)} but the model is {model_dtype}; "
            "use one dtype for all arrays"
        )
    if is_concrete(amp) and not np.all(np.isfinite(to_host(amp))):
        raise ValueError(f"{name} contains NaN or infinite values")
    if n_shots is not None and amp.shape[0] != n_shots:
        raise ValueError(f"{name} has {amp.shape[0]} shots but the locations have {n_shots}")
    return tuple(int(s) for s in amp.shape)


def check_locations(
    name: str,
    loc: Any,
    model_shape: Sequence[int],
    n_shots: int | None,
    count: int | None,
    free_surface: Sequence[bool],
) -> np.ndarray:
    """(n_shots, n, ndim) integer grid indices inside the model."""
    ndim = len(model_shape)
    host = np.asarray(to_host(loc))
    if host.ndim != 3 or host.shape[-1] != ndim:
        raise ValueError(
            f"{name} must have shape (n_shots, n, {ndim}) with integer grid indices in the "
            f"model's axis order, got shape {host.shape}"
        )
    if host.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer grid indices, got dtype {host.dtype}")
    if n_shots is not None and host.shape[0] != n_shots:
        raise ValueError(f"{name} has {host.shape[0]} shots, expected {n_shots}")
    if count is not None and host.shape[1] != count:
        raise ValueError(
            f"{name} has {host.shape[1]} entries per shot but the amplitudes have {count}"
        )
    for d, n in enumerate(model_shape):
        bad = (host[..., d] < 0) | (host[..., d] >= n)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"{name}{list(where)} = {host[where].tolist()} lies outside the model: "
                f"index {d} must be in [0, {n - 1}]"
            )
    return host.astype(np.int64)


def check_not_on_surface(
    name: str, loc: np.ndarray, model_shape: Sequence[int], free_surface: Sequence[bool]
) -> None:
    """Reject entries on a free-surface row, where they would be silenced."""
    for d, n in enumerate(model_shape):
        for side, row in ((0, 0), (1, n - 1)):
            if free_surface[2 * d + side] and loc.size and np.any(loc[..., d] == row):
                raise ValueError(
                    f"{name} has entries on the free surface (index {d} == {row}), where the "
                    f"wavefield is zero; move them one cell into the model"
                )


def warn_dispersion(
    amp: Any, dt: float, v_min: float, spacing: Sequence[float], order: int
) -> None:
    """Warn when the sources carry energy at too few cells per wavelength."""
    if amp.shape[-1] < 4 or not is_concrete(amp):
        return
    host = np.asarray(to_host(amp), dtype=np.float64).reshape(-1, amp.shape[-1])
    spec = np.abs(np.fft.rfft(host, axis=-1)).sum(axis=0)
    if not np.any(spec > 0):
        return
    freqs = np.fft.rfftfreq(host.shape[-1], dt)
    f_max = float(freqs[np.nonzero(spec >= 0.05 * spec.max())[0][-1]])
    if f_max <= 0:
        return
    cells = v_min / (f_max * max(spacing))
    need = MIN_CELLS_PER_WAVELENGTH[order]
    if cells < need:
        warn_user(
            f"only {cells:.2g} cells per wavelength at {f_max:.3g} Hz in the slowest medium "
            f"(accuracy={order} needs about {need:g}); expect numerical dispersion. "
            "Use a finer grid_spacing, a higher accuracy or lower-frequency sources.",
        )


# Fewest samples per period of a source's highest significant frequency.
MIN_SAMPLES_PER_PERIOD = 4.0


def warn_undersampled(amp: Any, dt: float) -> None:
    """Warn when ``dt`` samples the sources' spectrum too coarsely (aliasing).

    The highest significant frequency (where the amplitude spectrum of the
    sources drops below 5 % of its peak) needs :data:`MIN_SAMPLES_PER_PERIOD`
    samples per period; a source with energy up to the Nyquist frequency is
    not band-limited at this ``dt``.  Sources still on at their first or last
    sample are not judged (their spectrum is that of the cut).
    """
    if amp.shape[-1] < 4 or not is_concrete(amp):
        return
    host = np.asarray(to_host(amp), dtype=np.float64).reshape(-1, amp.shape[-1])
    peak = np.abs(host).max()
    # A source still on at its first or last sample (a run cut short, a restart's chunk)
    # has the spectrum of the cut, not its own: judge only sources that start and end off.
    if peak == 0 or np.abs(host[:, [0, -1]]).max() > 0.01 * peak:
        return
    spec = np.abs(np.fft.rfft(host, axis=-1)).sum(axis=0)
    freqs = np.fft.rfftfreq(host.shape[-1], dt)
    f_max = float(freqs[np.nonzero(spec >= 0.05 * spec.max())[0][-1]])
    if f_max * dt * MIN_SAMPLES_PER_PERIOD > 1.0:
        warn_user(
            f"dt={dt:g} undersamples the source spectrum: its highest significant frequency "
            f"{f_max:.3g} Hz gets {1.0 / (f_max * dt):.2g} samples per period (the Nyquist "
            f"frequency is {0.5 / dt:.3g} Hz; at least {MIN_SAMPLES_PER_PERIOD:g} are needed). "
            "Use a smaller dt, or a smoother, lower-frequency source wavelet.",
        )
