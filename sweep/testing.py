"""Reference solutions and helpers for testing propagators.

Analytic Green's functions of the constant-density acoustic equation in a
homogeneous medium, written for sweep's source convention: a point source
adds ``-v^2 dt^2 f`` to one cell per step, which is the continuous equation
``lap u - u_tt / v^2 = f(t) dV delta(x)`` with ``dV`` the cell volume
(area in 2D); the returned wavefield is therefore the negative of the
textbook response to ``+f``.  Both functions work in the frequency domain, so a
source sampled at ``t = n dt`` gives receiver samples on the same time axis.
"""

from __future__ import annotations

import numpy as np

from . import equations


def ricker(freq: float, nt: int, dt: float, peak_time: float | None = None) -> np.ndarray:
    """Ricker wavelet of peak frequency ``freq`` (Hz), float64, length ``nt``."""
    t0 = 1.5 / freq if peak_time is None else peak_time
    arg = (np.pi * freq * (np.arange(nt) * dt - t0)) ** 2
    return (1.0 - 2.0 * arg) * np.exp(-arg)


def _padded_spectrum(f: np.ndarray, dt: float, pad: int) -> tuple[np.ndarray, np.ndarray, int]:
    n = len(f) * pad
    spec = np.fft.rfft(f, n)
    omega = 2.0 * np.pi * np.fft.rfftfreq(n, dt)
    return spec, omega, n


def greens_2d(f: np.ndarray, dt: float, r: float, v: float, cell_area: float) -> np.ndarray:
    """Wavefield at distance ``r`` from a 2D point source with time function ``f``.

    Uses the outgoing Hankel solution ``-(i/4) H0^(2)(omega r / v)`` (NumPy's
    ``e^{+i omega t}`` convention); the zero frequency is dropped, so ``f``
    should have (close to) zero mean.
    """
    from scipy.special import hankel2

    spec, omega, n = _padded_spectrum(np.asarray(f, dtype=np.float64), dt, 8)
    g = np.zeros_like(spec)
    k = omega[1:] * r / v
    g[1:] = -0.25j * hankel2(0, k)
    return -np.fft.irfft(cell_area * spec * g, n)[: len(f)]


def greens_3d(f: np.ndarray, dt: float, r: float, v: float, cell_volume: float) -> np.ndarray:
    """Wavefield at distance ``r`` from a 3D point source: ``-dV f(t - r/v) / (4 pi r)``."""
    spec, omega, n = _padded_spectrum(np.asarray(f, dtype=np.float64), dt, 4)
    shifted = spec * np.exp(-1j * omega * r / v)
    return -np.fft.irfft(cell_volume * shifted, n)[: len(f)] / (4.0 * np.pi * r)


def relative_error(a: np.ndarray, b: np.ndarray) -> float:
    """Return ``||a - b|| / ||b||`` computed in float64."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def random_problem(
    ndim: int,
    dtype: type = np.float64,
    *,
    n_shots: int = 2,
    n_src: int = 2,
    n_rec: int = 3,
    nt: int = 60,
    seed: int = 0,
    free_surface: bool | tuple = False,
    accuracy: int = 4,
    equation: str = "acoustic",
) -> dict:
    """Keyword arguments of a small random problem for a registered equation.

    Heterogeneous models (for ``sweep.acoustic`` a velocity of 1500-2000 m/s;
    other equations: the ``problem`` of their registry entry), random source and receiver cells,
    Ricker-shaped sources with random amplitudes, a 5-cell CPML and fixed
    CPML parameters (so the forward map does not depend on the model's
    extremes, as finite-difference gradient checks need).
    """
    rng = np.random.default_rng(seed)
    shape = (22, 26) if ndim == 2 else (12, 13, 14)
    spec = equations.get(equation)
    if spec.problem is None:
        models = {"v": (1500.0 + 500.0 * rng.random(shape)).astype(dtype)}
    else:
        models = equations._load(spec.problem)(shape, rng, dtype)
    if isinstance(free_surface, bool):
        free = (free_surface,) + (False,) * (2 * ndim - 1)
    else:
        free = tuple(free_surface)
    # Sources stay off free-surface rows, where they would have no effect.
    src = np.stack(
        [
            rng.integers(int(free[2 * d]), s - int(free[2 * d + 1]), size=(n_shots, n_src))
            for d, s in enumerate(shape)
        ],
        -1,
    )
    rec = np.stack([rng.integers(0, s, size=(n_shots, n_rec)) for s in shape], -1)
    wavelet = ricker(40.0, nt, 1e-3)
    amp = (wavelet[None, None] * rng.standard_normal((n_shots, n_src, 1))).astype(dtype)
    return {
        **models,
        "grid_spacing": 5.0,
        "dt": 1e-3 if ndim == 2 else 8e-4,
        "source_amplitudes": amp,
        "source_locations": src,
        "receiver_locations": rec,
        "pml_width": 5,
        "accuracy": accuracy,
        "free_surface": free_surface,
        # Fixed CPML parameters make the forward map independent of v's extremes.
        "max_vel": 2000.0,
        "pml_freq": 20.0,
    }


def edge_acquisition(problem: dict, shape: tuple[int, ...]) -> dict:
    """``problem`` with its sources and receivers on the model's edge cells.

    The cells next to the CPML are the band that boundary saving keeps, so
    this is the hard case for it.  Two sources per shot (a corner and the
    opposite corner; a face and a corner) and three receivers, one cell in from
    free-surface rows, where a source has no effect.  Needs two shots.
    """
    ndim = len(shape)
    free = problem.get("free_surface", False)
    free = (free,) + (False,) * (2 * ndim - 1) if isinstance(free, bool) else tuple(free)
    lo = np.array([int(free[2 * d]) for d in range(ndim)])
    hi = np.array([n - 1 - int(free[2 * d + 1]) for d, n in enumerate(shape)])
    side = np.r_[(lo[0] + hi[0]) // 2, hi[1:]]  # on a face, not at a corner
    src = np.stack([np.stack([lo, hi]), np.stack([side, lo])])
    rec = np.stack([lo, hi, side])[None].repeat(2, 0)
    return {**problem, "source_locations": src, "receiver_locations": rec}
