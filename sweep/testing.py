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

import importlib
from collections.abc import Sequence

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


def elastic_force_2d(
    f: np.ndarray,
    dt: float,
    offset: tuple[float, float],
    vp: float,
    vs: float,
    rho: float,
    component: int,
    force: int,
    delay: float = 0.0,
) -> np.ndarray:
    """Particle velocity in a 2D homogeneous elastic full space from a line force.

    Component ``component`` (0: z, 1: x) of the velocity at ``offset`` (dz,
    dx) in metres from a line force along axis ``force`` with time function
    ``f`` (N/m, sampled at ``n dt``), output at times ``(n + delay) dt``.
    The plane-strain Green's function (Kausel, *Fundamental solutions in
    elastodynamics*, 2006) in NumPy's ``e^{+i omega t}`` convention::

        u_i = F_j / (4 i mu) [psi delta_ij + chi r_i r_j]
        psi = H0(ks r) - [H1(ks r) - (vs / vp) H1(kp r)] / (ks r)
        chi = H2(ks r) - (vs / vp)^2 H2(kp r)

    with outgoing Hankel functions ``H^(2)`` and ``v = i omega u``.  The zero
    frequency is dropped, so ``f`` should have (close to) zero mean.
    """
    from scipy.special import hankel2

    spec, omega, n = _padded_spectrum(np.asarray(f, dtype=np.float64), dt, 8)
    r = float(np.hypot(*offset))
    unit = np.asarray(offset, dtype=np.float64) / r
    w = omega[1:]
    ks, kp = w * r / vs, w * r / vp
    psi = hankel2(0, ks) - (hankel2(1, ks) - vs / vp * hankel2(1, kp)) / ks
    chi = hankel2(2, ks) - (vs / vp) ** 2 * hankel2(2, kp)
    g = np.zeros_like(spec)
    g[1:] = (psi * (component == force) + chi * unit[component] * unit[force]) / (4j * rho * vs**2)
    g[1:] *= 1j * w * np.exp(1j * w * delay * dt)
    return np.fft.irfft(spec * g, n)[: len(f)]


def lamb_2d(
    f: np.ndarray,
    dt: float,
    receivers: Sequence[tuple[float, float, int]],
    source_depth: float,
    vp: float,
    vs: float,
    rho: float,
    delay: float = 0.0,
    nk: int = 4000,
) -> np.ndarray:
    """Particle velocities in a 2D elastic half-space from a buried vertical line force (Lamb).

    The free surface is ``z = 0`` (z down); the force (N/m, time function
    ``f`` sampled at ``n dt``) acts downward at depth ``source_depth``; each
    receiver is ``(x, depth, component)``: horizontal offset, a depth above
    the source, and 0 for ``vz`` or 1 for ``vx``.  Returns ``(n_receivers,
    len(f))`` samples at ``(n + delay) dt``.

    A semi-analytic reference by wavenumber integration: per frequency and
    horizontal wavenumber the 4x4 first-order system of displacement and
    traction is split into its up- and down-going P and S waves (numerical
    eigenvectors), the source is the jump ``-1`` of ``szz`` across its depth,
    the surface is traction-free and nothing comes up from below; the
    wavenumber integral is a midpoint sum, and a complex frequency
    (``omega - i alpha``, removed afterwards) keeps the surface-wave pole off
    the real axis.  It reproduces :func:`elastic_force_2d` to 2e-3 for a deep
    source (``tests/test_elastic.py``).
    """
    h = source_depth
    if not all(0 <= depth < h for _, depth, _ in receivers):
        raise ValueError("every receiver must be between the surface and the source")
    nt = len(f)
    n = 4 * nt
    t = np.arange(nt) * dt
    alpha = 3.0 / (n * dt)
    spec = np.fft.rfft(np.asarray(f, dtype=np.float64) * np.exp(-alpha * t), n)
    omega = 2.0 * np.pi * np.fft.rfftfreq(n, dt)
    keep = np.abs(spec) > 1e-6 * np.abs(spec).max()
    keep[0] = False
    mu = rho * vs**2
    m2 = rho * vp**2
    lam = m2 - 2 * mu
    # Beyond the waves' wavenumbers the field decays as exp(-k dz): stop where it is gone.
    gap = min(h - depth for _, depth, _ in receivers)
    k_max = max(12.0 / gap, 1.5 * omega[keep].max() / vs)
    wk = omega[keep] - 1j * alpha
    w, k = np.meshgrid(wk, (np.arange(nk) + 0.5) * k_max / nk, indexing="ij")
    ik = 1j * k
    # d/dz [ux, uz, sxz, szz] = A [ux, uz, sxz, szz] for exp(i omega t - i k x).
    a = np.zeros((*w.shape, 4, 4), dtype=complex)
    a[..., 0, 1], a[..., 0, 2] = ik, 1 / mu
    a[..., 1, 0], a[..., 1, 3] = ik * lam / m2, 1 / m2
    a[..., 2, 0] = -rho * w**2 + ik * (-ik * m2 + ik * lam * lam / m2)
    a[..., 2, 3] = ik * lam / m2
    a[..., 3, 1], a[..., 3, 2] = -rho * w**2, ik
    ev, vec = np.linalg.eig(a)
    order = np.argsort(ev.real, axis=-1)  # two down-going (decaying with z), two up-going
    ev = np.take_along_axis(ev, order, -1)
    vec = np.take_along_axis(vec, order[..., None, :], -1)
    dn, up = [0, 1], [2, 3]
    # Unknowns: below the source (down, from h), above it (down from 0, up from h).
    m = np.zeros((*w.shape, 6, 6), dtype=complex)
    m[..., :4, 0:2] = vec[..., :, dn]
    m[..., :4, 2:4] = -vec[..., :, dn] * np.exp(ev[..., dn] * h)[..., None, :]
    m[..., :4, 4:6] = -vec[..., :, up]
    m[..., 4:6, 2:4] = vec[..., 2:4, :][..., :, dn]
    m[..., 4:6, 4:6] = vec[..., 2:4, :][..., :, up] * np.exp(-ev[..., up] * h)[..., None, :]
    rhs = np.zeros((*w.shape, 6, 1), dtype=complex)
    rhs[..., 3, 0] = -1.0
    c = np.linalg.solve(m, rhs)[..., 0]
    out = np.zeros((len(receivers), nt))
    for r, (x, depth, component) in enumerate(receivers):
        row = 1 - component  # uz is row 1, ux row 0
        u = (c[..., 2:4] * np.exp(ev[..., dn] * depth) * vec[..., row, :][..., dn]).sum(-1) + (
            c[..., 4:6] * np.exp(ev[..., up] * (depth - h)) * vec[..., row, :][..., up]
        ).sum(-1)
        # uz is even in k, ux odd: u(x) = (1 / 2 pi) int U(k) exp(-i k x) dk.
        kernel = np.cos(k * x) if component == 0 else -1j * np.sin(k * x)
        g = np.zeros(len(omega), dtype=complex)
        g[keep] = (u * kernel).sum(1) * (k_max / nk) / np.pi * 1j * wk
        g[keep] *= np.exp(1j * wk * delay * dt)
        out[r] = np.fft.irfft(spec * g, n)[:nt] * np.exp(alpha * t)
    return out


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
    other equations: the ``problem`` of their registry entry, whose module may
    also define ``settings(ndim)`` with its own ``grid_spacing``, ``dt``,
    ``peak_freq``, ``max_vel`` and ``pml_freq``), random source and receiver cells,
    Ricker-shaped sources with random amplitudes, a 5-cell CPML and fixed
    CPML parameters (so the forward map does not depend on the model's
    extremes, as finite-difference gradient checks need).
    """
    rng = np.random.default_rng(seed)
    shape = (22, 26) if ndim == 2 else (12, 13, 14)
    spec = equations.get(equation)
    # Seismic scales unless the equation's problem module says otherwise (``settings``).
    scales = {"grid_spacing": 5.0, "dt": 1e-3 if ndim == 2 else 8e-4, "peak_freq": 40.0,
              "max_vel": 2000.0, "pml_freq": 20.0}  # fmt: skip
    if spec.problem is None:
        models = {"v": (1500.0 + 500.0 * rng.random(shape)).astype(dtype)}
    else:
        models = equations._load(spec.problem)(shape, rng, dtype)
        module = importlib.import_module(spec.problem.partition(":")[0])
        if hasattr(module, "settings"):
            scales.update(module.settings(ndim))
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
    wavelet = ricker(scales["peak_freq"], nt, scales["dt"])
    amp = (wavelet[None, None] * rng.standard_normal((n_shots, n_src, 1))).astype(dtype)
    return {
        **models,
        "grid_spacing": scales["grid_spacing"],
        "dt": scales["dt"],
        "source_amplitudes": amp,
        "source_locations": src,
        "receiver_locations": rec,
        "pml_width": 5,
        "accuracy": accuracy,
        "free_surface": free_surface,
        # Fixed CPML parameters make the forward map independent of v's extremes.
        "max_vel": scales["max_vel"],
        "pml_freq": scales["pml_freq"],
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
