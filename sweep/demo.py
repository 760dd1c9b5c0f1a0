"""A small 2D full-waveform inversion, runnable as ``python -m sweep.demo``.

The demo builds the synthetic model of :func:`sweep.models.synthetic_model`,
records "observed" shot gathers in it, smooths it into a starting model and
recovers detail with L-BFGS, taking the gradient of the least-squares misfit
from :func:`sweep.vjp`.  It prints the misfit and the model error each
iteration and writes a PNG with the true, starting and recovered models and
one observed shot gather.  By default it inverts one band (a 9 Hz Ricker
source); :class:`DemoConfig` takes several peak frequencies for a multiscale
(low to high frequency) inversion.

It needs only NumPy (the optimiser is written out below); the figure needs
matplotlib and is skipped with a message when matplotlib is missing.

Examples
--------
From a shell::

    python -m sweep.demo --out fwi.png --iterations 20

From Python:

>>> from sweep.demo import DemoConfig, run_fwi
>>> result = run_fwi(DemoConfig(iterations=2), progress=False)  # doctest: +SKIP
>>> result.misfit[-1] < result.misfit[0]  # doctest: +SKIP
True
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from . import _validate
from ._vjp import vjp
from .equations.acoustic import acoustic
from .models import ricker, smooth, surface_acquisition, synthetic_model

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DemoConfig", "DemoResult", "demo_figure", "main", "run_fwi", "save_figure"]

V_MIN = 1400.0
V_MAX = 5000.0
CFL_FRACTION = 0.85
PML_FREQ = 10.0
FIRST_STEP = 100.0  # m/s: largest model change of a steepest-descent step


@dataclass(frozen=True)
class DemoConfig:
    """Settings of the demo inversion.

    Attributes
    ----------
    shape : tuple of int
        Model size ``(nz, nx)`` in cells.
    spacing : float
        Cell size in metres.
    n_shots : int
        Number of surface shots.
    receiver_spacing : int
        Receiver interval in cells.
    freqs : tuple of float
        Ricker peak frequencies (Hz) of the frequency bands, inverted in order
        (e.g. ``(5.0, 9.0)`` for a two-band multiscale inversion).  The
        iterations are split evenly between the bands.
    record_time : float
        Recording length in seconds.
    iterations : int
        Total L-BFGS iterations, shared between the bands.
    smoothing : float
        Standard deviation (cells) of the Gaussian that makes the starting model.
    accuracy : int
        Spatial order of the finite differences.
    pml_width : int
        CPML cells added outside the model on every face.
    n_threads : int, optional
        OpenMP threads of the compiled kernels (default: all cores).
    """

    shape: tuple[int, int] = (60, 160)
    spacing: float = 10.0
    n_shots: int = 8
    receiver_spacing: int = 2
    freqs: tuple[float, ...] = (9.0,)
    record_time: float = 0.9
    iterations: int = 40
    smoothing: float = 10.0
    accuracy: int = 4
    pml_width: int = 20
    n_threads: int | None = None


@dataclass
class DemoResult:
    """What :func:`run_fwi` returns.

    Attributes
    ----------
    v_true, v_init, v_inv : numpy.ndarray, shape (nz, nx)
        True, starting and recovered velocity models (m/s).
    observed : numpy.ndarray, shape (n_shots, n_receivers, nt)
        Observed data at the highest frequency.
    dt : float
        Time step (s) of the propagation and of ``observed``.
    misfit : list of float
        Misfit relative to the misfit of the starting model in the same band,
        before the first iteration and after each iteration.
    model_error : list of float
        Relative model error ``||v - v_true|| / ||v_init - v_true||`` at the same
        points as ``misfit``.
    bands : list of float
        Peak frequency of the band each ``misfit`` entry was measured in.
    iteration : list of int
        Number of iterations done when each ``misfit`` entry was measured.
    seconds : float
        Wall-clock time of the inversion.
    source_locations, receiver_locations : numpy.ndarray or None
        Grid indices of the sources ``(n_shots, 1, 2)`` and receivers
        ``(n_shots, n_receivers, 2)``; the figure draws gathers against offset.
    """

    v_true: np.ndarray
    v_init: np.ndarray
    v_inv: np.ndarray
    observed: np.ndarray
    dt: float
    misfit: list[float] = field(default_factory=list)
    model_error: list[float] = field(default_factory=list)
    bands: list[float] = field(default_factory=list)
    iteration: list[int] = field(default_factory=list)
    seconds: float = 0.0
    source_locations: np.ndarray | None = None
    receiver_locations: np.ndarray | None = None


def _stable_dt(config: DemoConfig) -> float:
    """Return a round time step below the CFL limit of the fastest allowed velocity."""
    limit = _validate.cfl_limit(V_MAX, (config.spacing,) * 2, config.accuracy)
    return math.floor(CFL_FRACTION * limit * 1e4) / 1e4


def _gradient_weight(config: DemoConfig) -> np.ndarray:
    """Gradient weight: grows linearly with depth, zero on the bottom and sides.

    Waves lose amplitude with depth, and the gradient is largest next to the
    sources and receivers at the top; the linear ramp (a crude diagonal
    preconditioner) evens that out.  The outermost bottom and side cells are
    copied into the CPML, whose velocity the gradient holds fixed, so they are
    kept fixed too and the model stays continuous with its absorbing layer.
    """
    nz, nx = config.shape
    z = np.arange(nz, dtype=np.float64)[:, None]
    w = np.broadcast_to((z + 1.0) / nz, (nz, nx)).copy()
    w[-1, :] = 0.0
    w[:, [0, -1]] = 0.0
    return w


class _Problem:
    """Least-squares waveform misfit of one frequency band and its gradient."""

    def __init__(
        self,
        config: DemoConfig,
        observed: np.ndarray,
        amp: np.ndarray,
        src: np.ndarray,
        rec: np.ndarray,
        dt: float,
        weight: np.ndarray,
    ) -> None:
        self.config, self.observed, self.dt, self.weight = config, observed, dt, weight
        self.kwargs = {
            "source_amplitudes": amp,
            "source_locations": src,
            "receiver_locations": rec,
            "accuracy": config.accuracy,
            "pml_width": config.pml_width,
            # Fixed CPML settings keep the forward operator (and so the
            # objective) the same for every model the optimiser tries.
            "max_vel": V_MAX,
            "pml_freq": PML_FREQ,
            "impl": "c",
            "n_threads": config.n_threads,
        }

    def value(self, v: np.ndarray) -> tuple[float, Callable[[], np.ndarray]]:
        """Return the misfit at ``v`` and a function that computes its (weighted) gradient."""
        out, pullback = vjp(
            acoustic, v.astype(np.float32), self.config.spacing, self.dt, **self.kwargs
        )
        residual = out.receivers - self.observed
        f = 0.5 * float(np.sum(residual.astype(np.float64) ** 2))

        def gradient() -> np.ndarray:
            g = pullback(residual)["v"].astype(np.float64)
            return g * self.weight

        return f, gradient


def _lbfgs_direction(g: np.ndarray, history: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Two-loop recursion: ``-H g`` for the L-BFGS inverse Hessian ``H``."""
    q = g.copy()
    alphas = []
    for s, y in reversed(history):
        rho = 1.0 / float(np.vdot(y, s))
        a = rho * float(np.vdot(s, q))
        q -= a * y
        alphas.append((rho, a))
    s, y = history[-1]
    q *= float(np.vdot(s, y)) / float(np.vdot(y, y))
    for (s, y), (rho, a) in zip(history, reversed(alphas), strict=True):
        b = rho * float(np.vdot(y, q))
        q += (a - b) * s
    return -q


def _lbfgs(
    problem: _Problem,
    v: np.ndarray,
    iterations: int,
    first_step: float,
    memory: int = 5,
) -> Iterator[tuple[np.ndarray, float]]:
    """Box-constrained L-BFGS with a backtracking (Armijo) line search.

    Yields ``(model, misfit)`` for the starting model and after every
    iteration; stops early when no step along steepest descent reduces the
    misfit.  Each trial model is clipped to ``[V_MIN, V_MAX]``, and the gradient
    of a trial is only computed once the trial is accepted.
    """
    f, grad_fn = problem.value(v)
    yield v, f
    if iterations == 0:
        return
    g = grad_fn()
    history: list[tuple[np.ndarray, np.ndarray]] = []
    done = 0
    while done < iterations:
        if history:
            d = _lbfgs_direction(g, history)
            if float(np.vdot(d, g)) >= 0:  # not a descent direction: restart
                history.clear()
        if not history:
            # Steepest descent scaled to change the model by at most first_step.
            d = -g * (first_step / max(float(np.max(np.abs(g))), 1e-30))
        alpha = 1.0
        for _ in range(8):
            v_try = np.clip(v + alpha * d, V_MIN, V_MAX)
            f_try, grad_try = problem.value(v_try)
            if f_try <= f + 1e-4 * float(np.vdot(g, v_try - v)):
                break
            alpha *= 0.3
        else:
            if not history:
                return  # even a tiny steepest-descent step fails: converged
            history.clear()  # retry from steepest descent
            continue
        g_try = grad_try()
        s, y = v_try - v, g_try - g
        if float(np.vdot(s, y)) > 1e-12 * float(np.vdot(y, y)):
            history.append((s, y))
            del history[:-memory]
        v, f, g = v_try, f_try, g_try
        done += 1
        yield v, f


def run_fwi(
    config: DemoConfig | None = None,
    *,
    progress: bool = True,
    log: Callable[[str], None] | None = print,
) -> DemoResult:
    """Run the demo inversion.

    Parameters
    ----------
    config : DemoConfig, optional
        Problem and optimiser settings; the defaults run in about a minute on
        two CPU cores.
    progress : bool, optional
        Show a tqdm progress bar over the iterations.
    log : callable, optional
        Receives one line of text per band start and per iteration (through
        ``tqdm.write`` while the progress bar is shown); ``None`` silences it.

    Returns
    -------
    DemoResult
        The models, the observed data and the misfit and model-error history.
    """
    from tqdm import tqdm

    config = config or DemoConfig()
    start = time.perf_counter()
    spacing = config.spacing
    v_true = synthetic_model(config.shape, spacing, dtype=np.float64)
    v_init = smooth(v_true, config.smoothing)
    dt = _stable_dt(config)
    nt = round(config.record_time / dt)
    src, rec = surface_acquisition(config.shape, config.n_shots, config.receiver_spacing)
    weight = _gradient_weight(config)
    err0 = float(np.linalg.norm(v_init - v_true))
    result = DemoResult(
        v_true, v_init, v_init, np.empty(0), dt, source_locations=src, receiver_locations=rec
    )
    n_bands = len(config.freqs)
    per_band = [
        config.iterations // n_bands + (i < config.iterations % n_bands) for i in range(n_bands)
    ]

    def say(msg: str) -> None:
        if log is None:
            return
        if progress:
            tqdm.write(msg)  # prints above the progress bar
        else:
            log(msg)

    v = v_init.copy()
    done = 0
    with tqdm(total=config.iterations, desc="FWI", unit="it", disable=not progress) as bar:
        for freq, n_it in zip(config.freqs, per_band, strict=True):
            wavelet = ricker(freq, nt, dt)
            amp = np.ascontiguousarray(np.broadcast_to(wavelet, (config.n_shots, 1, nt)))
            observed = acoustic(
                v_true.astype(np.float32),
                spacing,
                dt,
                source_amplitudes=amp,
                source_locations=src,
                receiver_locations=rec,
                accuracy=config.accuracy,
                pml_width=config.pml_width,
                max_vel=V_MAX,
                pml_freq=PML_FREQ,
                impl="c",
                n_threads=config.n_threads,
            ).receivers
            result.observed = observed
            problem = _Problem(config, observed, amp, src, rec, dt, weight)
            f0 = k = 0
            for k, (model, f) in enumerate(_lbfgs(problem, v, n_it, FIRST_STEP)):
                f0 = f0 or f or 1.0  # the band's starting misfit
                result.misfit.append(f / f0)
                result.model_error.append(float(np.linalg.norm(model - v_true)) / err0)
                result.bands.append(freq)
                result.iteration.append(done + k)
                label = "start    " if k == 0 else f"iteration {done + k:3d}"
                say(
                    f"{freq:g} Hz band, {label}: misfit {result.misfit[-1]:.4f}, "
                    f"model error {result.model_error[-1]:.4f}"
                )
                if k:
                    bar.update(1)
            v = model
            # Iterations the line search could not use (it converged) count as done.
            bar.update(n_it - k)
            done += n_it
    result.v_inv = v
    result.seconds = time.perf_counter() - start
    return result


def demo_figure(result: DemoResult, spacing: float, shot: int = 0) -> Figure:
    """Draw the true, starting and recovered models, a shot gather and the convergence.

    Parameters
    ----------
    result : DemoResult
        Output of :func:`run_fwi`.
    spacing : float
        Cell size in metres.
    shot : int, optional
        Index of the observed shot gather to show.

    Returns
    -------
    matplotlib.figure.Figure
        The figure (close it with ``matplotlib.pyplot.close`` when done).

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    """
    from . import plot

    plt = plot._pyplot()
    from matplotlib.ticker import MaxNLocator

    nz, nx = result.v_true.shape
    # Three models in their true proportions, stacked in a column (axes about
    # 6.6 inches wide, as the width ratio leaves them) beside the gather and the
    # convergence plot; the height fits them with their titles and labels.
    model_height = min(6.6 * nz / nx, 3.0)
    fig = plt.figure(figsize=(12.5, 3 * model_height + 2.0), layout="constrained")
    # Two subfigures, so that each column's titles and labels space its own rows.
    left, right = fig.subfigures(1, 2, width_ratios=(2.1, 1.0))
    lo, hi = float(result.v_true.min()), float(result.v_true.max())
    err = result.model_error[-1] if result.model_error else 1.0
    panels = (
        (result.v_true, "True model"),
        (result.v_init, "Starting model (smoothed true model)"),
        (result.v_inv, f"Recovered model (error {err:.2f} x the starting model's)"),
    )
    model_axes = left.subplots(3, 1, sharex=True)
    for ax, (model, title) in zip(model_axes, panels, strict=True):
        plot.plot_model(model, spacing, ax=ax, title=title, vmin=lo, vmax=hi, colorbar=False)
    for ax in model_axes[:-1]:
        ax.set_xlabel("")
    # One colour bar for the three models: they share the true model's scale.
    left.colorbar(model_axes[0].images[0], ax=model_axes, label="velocity (m/s)", shrink=0.6)
    gather_ax, ax = right.subplots(2, 1, height_ratios=(2.0, 1.0))
    located = result.receiver_locations is not None and result.source_locations is not None
    plot.plot_gather(
        result.observed[shot],
        result.dt,
        ax=gather_ax,
        clip=90.0,
        title=f"Observed shot gather {shot}",
        receiver_locations=result.receiver_locations[shot] if located else None,
        source_location=result.source_locations[shot, 0] if located else None,
        spacing=spacing if located else None,
    )
    it = np.asarray(result.iteration)
    bands = np.asarray(result.bands)
    for freq in dict.fromkeys(result.bands):
        sel = bands == freq
        ax.semilogy(
            it[sel], np.asarray(result.misfit)[sel], "o-", ms=3, label=f"misfit, {freq:g} Hz"
        )
    ax.set_xlabel("iteration")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("misfit / starting misfit")
    ax.set_title("Convergence")
    right = ax.twinx()
    right.plot(it, result.model_error, "s-", ms=3, color="k", label="model error")
    right.set_ylim(0.0, 1.05 * max(result.model_error, default=1.0))
    right.set_ylabel("model error / starting error")
    lines = ax.get_lines() + right.get_lines()
    # Misfit and model error fall from the top left: the bottom left stays clear.
    ax.legend(lines, [line.get_label() for line in lines], fontsize="small", loc="lower left")
    return fig


def save_figure(result: DemoResult, path: str, spacing: float, shot: int = 0) -> None:
    """Write :func:`demo_figure` to a PNG.

    Parameters
    ----------
    result : DemoResult
        Output of :func:`run_fwi`.
    path : str
        Output file name (PNG).
    spacing : float
        Cell size in metres.
    shot : int, optional
        Index of the observed shot gather to show.

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    """
    from . import plot

    fig = demo_figure(result, spacing, shot)
    fig.savefig(path, dpi=110)
    plot._pyplot().close(fig)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m sweep.demo",
        description="Small 2D full-waveform inversion on sweep's synthetic model.",
    )
    parser.add_argument(
        "--out",
        default="sweep_demo.png",
        metavar="PATH.png",
        help="where to write the figure (default: %(default)s)",
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=DemoConfig.iterations,
        metavar="N",
        help="L-BFGS iterations over all frequency bands (default: %(default)s)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="no progress bar and no per-iteration output"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="OpenMP threads of the compiled kernels (default: all cores)",
    )
    args = parser.parse_args(argv)
    if args.iterations < 0:
        parser.error("--iterations must be >= 0")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point of ``python -m sweep.demo``.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments (default: ``sys.argv[1:]``): ``--out PATH.png``,
        ``--iterations N``, ``--quiet`` and ``--threads N``.

    Returns
    -------
    int
        Exit status: 0 on success.
    """
    args = _parse(argv)
    # OpenMP threads that spin while they wait for each other make the time
    # loop several times slower when other programs share the cores; passive
    # waiting costs little on an idle machine.  This only takes effect when
    # the compiled kernels are not loaded yet and no policy has been chosen.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    config = DemoConfig(iterations=args.iterations, n_threads=args.threads)
    log = None if args.quiet else print
    if log is not None:
        dt = _stable_dt(config)
        log(
            f"sweep demo: {config.shape[0]} x {config.shape[1]} cells of {config.spacing:g} m, "
            f"{config.n_shots} shots, dt {dt * 1e3:g} ms, bands {list(config.freqs)} Hz, "
            f"{config.iterations} L-BFGS iterations"
        )
    result = run_fwi(config, progress=not args.quiet, log=log)
    if log is not None:
        log(
            f"done in {result.seconds:.1f} s: final misfit {result.misfit[-1]:.4f} of the "
            f"band's starting misfit, model error {result.model_error[-1]:.4f} of the "
            "starting model's"
        )
    try:
        save_figure(result, args.out, config.spacing, shot=config.n_shots // 2)
    except ImportError as exc:
        print(f"not writing {args.out}: {exc}", file=sys.stderr)
    else:
        if log is not None:
            log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
