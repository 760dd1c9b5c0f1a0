"""Benchmark sweep's acoustic propagator against Deepwave's ``scalar`` and Devito on the CPU.

All three solve the same equation, ``lap u - u_tt / v^2 = f``, with
second-order leapfrog time stepping and centred finite differences of order
``accuracy`` in space.  sweep and Deepwave add a C-PML of ``pml_width``
cells outside the model; Devito (4.8, its ``examples.seismic`` acoustic
solver, OpenMP) a damping sponge of the same width, cheaper per cell.  Each
(case, library) pair runs in its own subprocess, so that its peak resident
memory is measured in isolation and no state (thread pools, allocator
caches, imported modules) leaks from one measurement into the next.

Devito pins its own NumPy, so it may live in a virtual environment of its
own: ``SWEEP_BENCH_DEVITO_PYTHON=/path/to/venv/bin/python`` runs its worker
there (``pip install devito scipy pytest`` in that environment: its examples
import both); without it Devito runs in this interpreter, or is skipped
with a message when it is not installed.

Run ``python benchmarks/bench_acoustic.py --help`` for the options; the
default runs every case at full size, ``--quick`` runs scaled-down versions
in well under a minute.

Fairness settings
-----------------
* float32, 2 threads for both (``OMP_NUM_THREADS=2`` in every worker,
  ``torch.set_num_threads(2)`` for Deepwave, ``n_threads=2`` for sweep).
* Deepwave: ``backend="compiled"`` (its C kernels, never the Python
  backends), ``location_interpolation="none"`` (integer cell indices, exact
  injection/recording), ``storage_mode="device"`` without compression (the
  full-precision wavefield history stays in host memory, as sweep's does),
  ``model_gradient_sampling_interval=1`` and ``check_output_finite=False``
  (sweep does no such check).  The worker asserts that Deepwave did not
  sub-step in time (``info.step_ratio == 1``), so both do ``nt`` steps.
* Both: ``pml_width=20``, ``pml_freq=15`` (the Ricker peak frequency) and
  ``max_vel`` = the model's maximum velocity, so the CPML is built from the
  same parameters (its profile formulas still differ in detail).
* Timing: wall-clock time of the propagation call only (for gradient cases:
  forward pass + pullback / ``loss.backward()``), best of ``--repeats`` runs
  after one untimed warm-up run.  Building the model and moving it into the
  library's array type are not timed.  With ``--rounds R`` each library's
  worker runs R times per case, alternating with the other library's, and
  the best over all rounds counts: on a machine whose speed drifts over
  minutes, both libraries then see the same spread of conditions.
* Throughput: ``Mcells/s = prod(model shape without PML) * nt * n_shots /
  seconds / 1e6``.  For gradient cases the same count is divided by the time
  of forward + adjoint, so it is not comparable with forward throughput.
* Memory: the worker's peak resident set size (``VmHWM``, which unlike
  ``ru_maxrss`` does not inherit the driver's high-water mark across
  ``execve``) and the growth of that peak over the baseline measured after
  the imports and the problem set-up (which takes away the ~300 MiB that
  importing torch costs Deepwave).
* Contention: the machine may be shared, so each worker also records the
  share of all cores that *other* processes used during each timed run
  (from ``/proc/stat``), reported for the best run as "other load".
* Sign: both libraries use the source convention ``lap u - u_tt / v^2 = f``
  (a source adds ``-v^2 dt^2 f``), so receiver data and gradients compare
  directly.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

LIBRARIES = ("sweep", "deepwave", "devito")
LABELS = {"sweep": "sweep", "deepwave": "Deepwave", "devito": "Devito"}
N_THREADS = int(os.environ.get("SWEEP_BENCH_THREADS", "2"))
PML_WIDTH = 20
PEAK_FREQ = 15.0
V_MIN = 1500.0
V_MAX = 4000.0
SEED = 20240531


@dataclass(frozen=True)
class Case:
    """One benchmark configuration.

    Attributes
    ----------
    name : str
        Identifier used on the command line and in the tables.
    shape : tuple of int
        Model shape without PML, ``(nz, nx)`` or ``(nz, ny, nx)``.
    spacing : float
        Grid spacing in metres (all axes).
    dt : float
        Time step in seconds (below the CFL limit of both libraries).
    nt : int
        Number of time steps.
    n_shots : int
        Number of shots propagated in one call.
    accuracy : int
        Spatial order of accuracy.
    gradient : bool
        Whether the velocity gradient is computed as well.
    """

    name: str
    shape: tuple[int, ...]
    spacing: float
    dt: float
    nt: int
    n_shots: int
    accuracy: int
    gradient: bool

    @property
    def ndim(self) -> int:
        """Number of spatial dimensions."""
        return len(self.shape)

    @property
    def cell_updates(self) -> int:
        """Interior cells x time steps x shots (the throughput numerator)."""
        return int(np.prod(self.shape)) * self.nt * self.n_shots

    def describe(self) -> str:
        """Short human-readable description for the tables."""
        kind = "fwd+grad" if self.gradient else "forward"
        dims = "x".join(str(n) for n in self.shape)
        shots = f"{self.n_shots} shot" + ("s" if self.n_shots > 1 else "")
        return f"{self.ndim}D {kind} {dims}, nt={self.nt}, {shots}, acc {self.accuracy}"


def default_cases(quick: bool, grad_nt: int | None) -> dict[str, Case]:
    """Return the benchmark cases, keyed by name.

    Parameters
    ----------
    quick : bool
        Use small models and few time steps (a smoke run of a few seconds).
    grad_nt : int, optional
        Override the number of time steps of the gradient cases (both
        libraries store the whole wavefield, ``nt * n_shots * padded cells``
        floats, for the gradient).

    Returns
    -------
    dict of str to Case
        The cases in the order they are run.
    """
    if quick:
        shape2, nt2, shots2, shape3, nt3 = (100, 200), 300, 2, (40, 40, 40), 100
        shape2_a2 = (100, 300)
    else:
        shape2, nt2, shots2, shape3, nt3 = (300, 1000), 2000, 4, (128, 128, 128), 500
        # Order 2 on the larger model of issue 19 (its step is cheap; the
        # grid, 3.2 MB of wavefield per shot, is larger than the caches).
        shape2_a2 = (500, 1500)
    nt_grad = grad_nt if grad_nt is not None else nt2
    cases = [
        Case("fwd2d-a8", shape2, 10.0, 1e-3, nt2, shots2, 8, False),
        Case("fwd2d-a4", shape2, 10.0, 1e-3, nt2, shots2, 4, False),
        Case("fwd2d-a2", shape2_a2, 10.0, 1e-3, nt2, shots2, 2, False),
        Case("grad2d-a8", shape2, 10.0, 1e-3, nt_grad, shots2, 8, True),
        Case("grad2d-a4", shape2, 10.0, 1e-3, nt_grad, shots2, 4, True),
        # dt = 1 ms would make Deepwave sub-step in 3-D (its Courant number is 0.6).
        Case("fwd3d-a8", shape3, 10.0, 8e-4, nt3, 1, 8, False),
        Case("grad3d-a8", shape3, 10.0, 8e-4, nt3 // 2, 1, 8, True),
    ]
    return {case.name: case for case in cases}


# ----------------------------------------------------------------------------
# Problem set-up (shared by both libraries, NumPy only)
# ----------------------------------------------------------------------------


def velocity_model(shape: Sequence[int]) -> np.ndarray:
    """Smooth velocity model: a depth gradient with a gentle low-velocity lens.

    Parameters
    ----------
    shape : sequence of int
        ``(nz, nx)`` or ``(nz, ny, nx)``; axis 0 is depth.

    Returns
    -------
    numpy.ndarray
        float32 velocities from ``V_MIN`` at the top to ``V_MAX`` at the bottom.
    """
    coords = np.meshgrid(*[np.linspace(0.0, 1.0, n) for n in shape], indexing="ij")
    depth = coords[0]
    v = V_MIN + (V_MAX - V_MIN) * depth
    # A smooth Gaussian lens, 400 m/s slower, centred at 40 % depth.
    dist2 = (depth - 0.4) ** 2 / 0.01 + sum((c - 0.5) ** 2 / 0.04 for c in coords[1:])
    v -= 400.0 * np.exp(-dist2)
    return np.clip(v, V_MIN, V_MAX).astype(np.float32)


def ricker(freq: float, nt: int, dt: float) -> np.ndarray:
    """Ricker wavelet of peak frequency ``freq`` delayed by ``1.5 / freq``.

    Parameters
    ----------
    freq : float
        Peak frequency in Hz.
    nt : int
        Number of samples.
    dt : float
        Sample interval in seconds.

    Returns
    -------
    numpy.ndarray
        float32 array of length ``nt``.
    """
    t = np.arange(nt) * dt - 1.5 / freq
    arg = (np.pi * freq * t) ** 2
    return ((1.0 - 2.0 * arg) * np.exp(-arg)).astype(np.float32)


def survey(case: Case) -> dict[str, np.ndarray]:
    """Build the sources, receivers, wavelet and (for gradient cases) receiver cotangent.

    Sources sit at depth index 1, one per shot, spread evenly along the last
    horizontal axis from 1/8 to 7/8 of its length (a single shot sits in the
    middle).  In 2-D the receivers are every cell at depth index 2; in 3-D they
    are every fourth cell of the plane at depth index 2.  The cotangent used
    for the gradient is seeded Gaussian noise convolved with the wavelet, so
    it is band-limited like real data residuals.

    Parameters
    ----------
    case : Case
        The benchmark case.

    Returns
    -------
    dict of str to numpy.ndarray
        ``v``, ``source_amplitudes``, ``source_locations``,
        ``receiver_locations`` and, for gradient cases, ``cotangent``.
    """
    nx = case.shape[-1]
    wavelet = ricker(PEAK_FREQ, case.nt, case.dt)
    amp = np.tile(wavelet, (case.n_shots, 1, 1))
    src = np.zeros((case.n_shots, 1, case.ndim), dtype=np.int64)
    src[:, 0, 0] = 1
    src[:, 0, 1:] = np.asarray(case.shape[1:]) // 2
    if case.n_shots > 1:
        src[:, 0, -1] = np.linspace(nx // 8, nx - 1 - nx // 8, case.n_shots).astype(np.int64)
    if case.ndim == 2:
        horizontal = np.arange(nx)[:, None]
    else:
        grid = np.meshgrid(*[np.arange(0, n, 4) for n in case.shape[1:]], indexing="ij")
        horizontal = np.stack([g.ravel() for g in grid], axis=-1)
    one_shot = np.concatenate(
        [np.full((len(horizontal), 1), 2, dtype=np.int64), horizontal.astype(np.int64)], axis=1
    )
    rec = np.tile(one_shot, (case.n_shots, 1, 1))
    problem = {
        "v": velocity_model(case.shape),
        "source_amplitudes": np.ascontiguousarray(amp),
        "source_locations": src,
        "receiver_locations": rec,
    }
    if case.gradient:
        rng = np.random.default_rng(SEED)
        noise = rng.standard_normal((case.n_shots, rec.shape[1], case.nt))
        n_fft = 2 * case.nt
        spectrum = np.fft.rfft(noise, n_fft) * np.fft.rfft(wavelet.astype(np.float64), n_fft)
        cotangent = np.fft.irfft(spectrum, n_fft)[..., : case.nt]
        problem["cotangent"] = (cotangent / np.abs(cotangent).max()).astype(np.float32)
    return problem


# ----------------------------------------------------------------------------
# Workers (run in a subprocess, one library each)
# ----------------------------------------------------------------------------


def peak_rss_mib() -> float:
    """Peak resident set size of this process image so far, in MiB.

    Reads ``VmHWM`` from ``/proc/self/status``: unlike ``ru_maxrss`` (of
    ``RUSAGE_SELF`` or, in the parent, ``RUSAGE_CHILDREN``), it is reset by
    ``execve``, so it does not inherit the high-water mark of the parent
    process the worker was forked from.  Falls back to ``ru_maxrss`` where
    ``/proc`` is unavailable.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def busy_cpu_seconds() -> float | None:
    """Non-idle CPU time of the whole machine since boot (all cores), from ``/proc/stat``."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds() -> float:
    """User + system CPU time of this process (all threads)."""
    t = os.times()
    return t.user + t.system


def make_sweep_runner(
    case: Case, problem: dict[str, np.ndarray], pml_width: int = PML_WIDTH
) -> Callable[[], dict]:
    """Build a zero-argument callable that runs one sweep propagation.

    Parameters
    ----------
    case : Case
        The benchmark case.
    problem : dict of str to numpy.ndarray
        Output of :func:`survey`.

    Returns
    -------
    callable
        Returns ``{"receivers": ndarray}`` plus ``"grad_v"`` for gradient cases.
    """
    import sweep

    v = problem["v"]
    kwargs = {
        "source_amplitudes": problem["source_amplitudes"],
        "source_locations": problem["source_locations"],
        "receiver_locations": problem["receiver_locations"],
        "accuracy": case.accuracy,
        "pml_width": pml_width,
        "pml_freq": PEAK_FREQ,
        "max_vel": float(v.max()),
        "impl": "c",
        "n_threads": N_THREADS,
    }

    if not case.gradient:

        def run_forward() -> dict:
            result = sweep.acoustic(v, case.spacing, case.dt, **kwargs)
            return {"receivers": result.receivers}

        return run_forward

    cotangent = problem["cotangent"]

    def run_gradient() -> dict:
        result, pullback = sweep.vjp(sweep.acoustic, v, case.spacing, case.dt, **kwargs)
        grads = pullback(cotangent)
        return {"receivers": result.receivers, "grad_v": grads["v"]}

    return run_gradient


def make_deepwave_runner(
    case: Case,
    problem: dict[str, np.ndarray],
    backend: str = "compiled",
    threads: int = N_THREADS,
    pml_width: int = PML_WIDTH,
) -> Callable[[], dict]:
    """Build a zero-argument callable that runs one Deepwave propagation.

    Parameters
    ----------
    case : Case
        The benchmark case.
    problem : dict of str to numpy.ndarray
        Output of :func:`survey`.
    backend : {"compiled", "torch_compile"}
        Deepwave's backend: its C/OpenMP kernels (with whole-wavefield storage
        on the device, uncompressed, every step) or its ``torch.compile`` path.
    threads : int
        Torch intra-op threads.

    Returns
    -------
    callable
        Returns ``{"receivers": ndarray}`` plus ``"grad_v"`` for gradient cases.
    """
    import deepwave
    import torch

    torch.set_num_threads(threads)
    v = torch.from_numpy(problem["v"])
    options = {
        "source_amplitudes": torch.from_numpy(problem["source_amplitudes"]),
        "source_locations": torch.from_numpy(problem["source_locations"]),
        "receiver_locations": torch.from_numpy(problem["receiver_locations"]),
        "accuracy": case.accuracy,
        "pml_width": pml_width,
        "pml_freq": PEAK_FREQ,
        "max_vel": float(v.max()),
        "backend": backend,
        "location_interpolation": "none",
        "check_output_finite": False,
    }
    if backend == "compiled":
        options.update(
            storage_mode="device", storage_compression=False, model_gradient_sampling_interval=1
        )

    def check_no_substepping(out: Any) -> None:
        if out.info.step_ratio != 1 or out.info.backend != backend:
            raise RuntimeError(f"Deepwave did not run as intended: {out.info}")

    if not case.gradient:

        def run_forward() -> dict:
            with torch.no_grad():
                out = deepwave.scalar(v, case.spacing, case.dt, **options)
            check_no_substepping(out)
            return {"receivers": out.receiver_amplitudes.numpy()}

        return run_forward

    cotangent = torch.from_numpy(problem["cotangent"])
    v_param = v.clone().requires_grad_(True)

    def run_gradient() -> dict:
        v_param.grad = None
        out = deepwave.scalar(v_param, case.spacing, case.dt, **options)
        check_no_substepping(out)
        loss = (out.receiver_amplitudes * cotangent).sum()
        loss.backward()
        return {
            "receivers": out.receiver_amplitudes.detach().numpy(),
            "grad_v": v_param.grad.numpy().copy(),
        }

    return run_gradient


def make_devito_runner(
    case: Case, problem: dict[str, np.ndarray], pml_width: int = PML_WIDTH
) -> Callable[[], dict]:
    """Build a zero-argument callable that runs Devito's acoustic example solver.

    ``examples.seismic.acoustic.AcousticWaveSolver`` (Devito's own seismic
    examples: second order in time, ``space_order=accuracy``), one call per
    shot as Devito's solvers take one source position at a time.  Its
    absorbing layer is a damping sponge of ``pml_width`` cells
    (``bcs="damp"``), not a CPML.  Units are Devito's: km/s, ms, kHz; axes
    reversed to Devito's (x, [y,] z) order, depth last.  The source is
    sweep's Ricker sampled at the same ``dt``; the gradient is Devito's
    ``jacobian_adjoint`` (the gradient in squared slowness) of the stored
    forward wavefield (``save=True``, its full storage), for the same
    receiver cotangent.

    Returns
    -------
    callable
        Returns ``{"receivers": ndarray}`` (shots, receivers, nt) plus
        ``"grad_v"`` (Devito's gradient in its model's squared slowness, for
        gradient cases).
    """
    from devito import configuration
    from examples.seismic import AcquisitionGeometry, Model
    from examples.seismic.acoustic import AcousticWaveSolver

    configuration["log-level"] = "ERROR"
    ndim = case.ndim
    vp = np.ascontiguousarray(problem["v"].T) / 1000.0  # (x, [y,] z), km/s
    dt_ms = case.dt * 1000.0
    model = Model(
        vp=vp, origin=(0.0,) * ndim, shape=vp.shape, spacing=(case.spacing,) * ndim,
        space_order=case.accuracy, nbl=pml_width, bcs="damp", dtype=np.float32, dt=dt_ms,
    )  # fmt: skip

    def position(cells: np.ndarray) -> np.ndarray:
        return cells[..., ::-1].astype(np.float64) * case.spacing  # (z, [y,] x) -> (x, [y,] z)

    rec_pos = position(problem["receiver_locations"][0])
    src_pos = position(problem["source_locations"])  # (shots, 1, ndim)
    # Devito counts ceil((tn + dt) / dt) samples: with dt 0.8 ms, (nt - 1) * dt rounds
    # up by an ulp and gives nt + 1, so tn sits a hair below the last sample.
    tn = (case.nt - 1) * dt_ms * (1.0 - 1e-9)
    geometry = AcquisitionGeometry(
        model, rec_pos, src_pos[0], t0=0.0, tn=tn, f0=PEAK_FREQ / 1000.0, src_type="Ricker",
    )  # fmt: skip
    if geometry.nt != case.nt:
        raise RuntimeError(f"Devito's time axis has {geometry.nt} samples, not {case.nt}")
    solver = AcousticWaveSolver(model, geometry, space_order=case.accuracy)
    src = geometry.src
    rec = geometry.rec
    amplitudes = problem["source_amplitudes"]

    def shot_source(shot: int) -> None:
        src.coordinates.data[:] = src_pos[shot]
        src.data[:, 0] = amplitudes[shot, 0]

    if not case.gradient:

        def run_forward() -> dict:
            out = []
            for shot in range(case.n_shots):
                shot_source(shot)
                solver.forward(src=src, rec=rec, dt=dt_ms)
                out.append(np.array(rec.data).T)
            return {"receivers": np.stack(out)}

        return run_forward

    cotangent = problem["cotangent"]
    residual = geometry.new_rec(name="residual")

    def run_gradient() -> dict:
        out, grad = [], None
        for shot in range(case.n_shots):
            shot_source(shot)
            _, u, _ = solver.forward(src=src, rec=rec, dt=dt_ms, save=True)
            out.append(np.array(rec.data).T)
            residual.data[:] = cotangent[shot].T
            g, _ = solver.jacobian_adjoint(residual, u, dt=dt_ms)
            grad = np.array(g.data) if grad is None else grad + g.data
            del u
        return {"receivers": np.stack(out), "grad_v": grad}

    return run_gradient


def compiled_build_id(library: str) -> str:
    """Identify the compiled extension that ran (short SHA-256 of its file).

    sweep is installed in editable mode and rebuilds on import, so a source
    edit made while the benchmark runs would otherwise go unnoticed.
    """
    if library == "sweep":
        import sweep._C

        path = Path(sweep._C.__file__)
    elif library == "devito":  # compiles at run time: its version identifies it
        return "devito-" + importlib.metadata.version("devito")
    else:
        import deepwave

        path = Path(deepwave.__file__).parent / "libdeepwave_C.so"
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    except OSError:
        return "unknown"


def run_worker(library: str, case: Case, repeats: int, out_dir: Path) -> None:
    """Time one library on one case and write ``result.json`` and arrays to ``out_dir``.

    Parameters
    ----------
    library : {"sweep", "deepwave"}
        Which library to run.
    case : Case
        The benchmark case.
    repeats : int
        Timed repetitions after one untimed warm-up; the best time is kept.
    out_dir : pathlib.Path
        Directory for ``result.json``, ``receivers.npy`` and ``grad_v.npy``.
    """
    problem = survey(case)
    factory = {
        "sweep": make_sweep_runner,
        "deepwave": make_deepwave_runner,
        "devito": make_devito_runner,
    }[library]
    runner = factory(case, problem)
    baseline_mib = peak_rss_mib()

    outputs = runner()  # warm-up (first-touch allocations, lazy initialisation)
    times, foreign = [], []
    for _ in range(repeats):
        del outputs  # free the previous run's arrays before starting the next
        busy0, own0 = busy_cpu_seconds(), own_cpu_seconds()
        start = time.perf_counter()
        outputs = runner()
        elapsed = time.perf_counter() - start
        busy1, own1 = busy_cpu_seconds(), own_cpu_seconds()
        times.append(elapsed)
        if busy0 is not None and busy1 is not None:
            # CPU time that other processes used while we ran, as a fraction of
            # the machine (jiffy resolution, so only indicative for short runs).
            other = (busy1 - busy0) - (own1 - own0)
            foreign.append(max(0.0, other) / (elapsed * (os.cpu_count() or 1)))
        else:
            foreign.append(None)

    for key, value in outputs.items():
        np.save(out_dir / f"{key}.npy", np.asarray(value))
    result = {
        "version": importlib.metadata.version(library),
        "build": compiled_build_id(library),
        "times": times,
        "foreign_cpu_fraction": foreign,
        "baseline_rss_mib": baseline_mib,
        "peak_rss_mib": peak_rss_mib(),
    }
    (out_dir / "result.json").write_text(json.dumps(result))


# ----------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------


def wait_for_quiet_machine(max_wait_s: float, threshold: float = 0.15) -> float | None:
    """Wait until other processes use less than ``threshold`` of the machine.

    The load is sampled over one-second windows from ``/proc/stat``; the
    driver itself is idle meanwhile, so all of it is foreign.

    Parameters
    ----------
    max_wait_s : float
        Give up (and go ahead regardless) after this many seconds.
    threshold : float
        Busy fraction of all cores regarded as quiet.

    Returns
    -------
    float or None
        The busy fraction of the last window, or None without ``/proc/stat``.
    """
    deadline = time.monotonic() + max_wait_s
    while True:
        before = busy_cpu_seconds()
        time.sleep(1.0)
        after = busy_cpu_seconds()
        if before is None or after is None:
            return None
        load = (after - before) / (os.cpu_count() or 1)
        if load < threshold or time.monotonic() >= deadline:
            return load


def devito_python() -> str:
    """The interpreter of the Devito worker: ``SWEEP_BENCH_DEVITO_PYTHON`` or this one.

    Devito pins its own NumPy, so it may live in a virtual environment of its
    own; its worker needs only NumPy, Devito and Devito's examples.
    """
    return os.environ.get("SWEEP_BENCH_DEVITO_PYTHON", sys.executable)


def devito_available() -> str | None:
    """Return why the Devito worker cannot run, or None when it can."""
    probe = "import devito, examples.seismic.acoustic"
    done = subprocess.run([devito_python(), "-c", probe], capture_output=True, text=True)
    if done.returncode == 0:
        return None
    last = (done.stderr.strip().splitlines() or ["failed"])[-1]
    return f"{devito_python()} cannot import Devito's examples ({last})"


def launch_worker(library: str, case: Case, repeats: int, out_dir: Path) -> dict:
    """Run :func:`run_worker` in a fresh Python process and collect its results.

    Parameters
    ----------
    library : {"sweep", "deepwave"}
        Which library to run.
    case : Case
        The benchmark case.
    repeats : int
        Timed repetitions after the warm-up.
    out_dir : pathlib.Path
        Empty directory the worker writes into.

    Returns
    -------
    dict
        Best time, all times, throughput, peak RSS, the share of the
        machine that other processes used during each timed run, and the
        receiver data / gradient arrays.
    """
    env = dict(os.environ)
    env.update(
        {
            "OMP_NUM_THREADS": str(N_THREADS),
            "MKL_NUM_THREADS": str(N_THREADS),
            "OPENBLAS_NUM_THREADS": str(N_THREADS),
        }
    )
    if library == "devito":
        # Devito's own OpenMP code, compiled by gcc; its log would fill the worker log.
        env.update({"DEVITO_LANGUAGE": "openmp", "DEVITO_LOGGING": "ERROR"})
    command = [
        devito_python() if library == "devito" else sys.executable,
        os.path.abspath(__file__),
        "--worker",
        library,
        "--worker-case",
        json.dumps(asdict(case)),
        "--worker-dir",
        str(out_dir),
        "--repeats",
        str(repeats),
    ]
    log_path = out_dir / "log.txt"
    with open(log_path, "w") as log:
        completed = subprocess.run(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, check=False
        )
    if completed.returncode != 0:
        raise RuntimeError(
            f"{library} worker for {case.name} failed (exit {completed.returncode}):\n"
            f"{log_path.read_text()[-4000:]}"
        )
    result = json.loads((out_dir / "result.json").read_text())
    best_index = int(np.argmin(result["times"]))
    best = result["times"][best_index]
    result.update(
        {
            "best_s": best,
            "best_foreign_cpu_fraction": result["foreign_cpu_fraction"][best_index],
            "mcells_per_s": case.cell_updates / best / 1e6,
            "growth_mib": result["peak_rss_mib"] - result["baseline_rss_mib"],
            "receivers": np.load(out_dir / "receivers.npy"),
        }
    )
    if case.gradient:
        result["grad_v"] = np.load(out_dir / "grad_v.npy")
    return result


def relative_l2(a: np.ndarray, b: np.ndarray) -> float:
    """Return ``||a - b|| / ||b||`` in float64."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a64 - b64) / np.linalg.norm(b64))


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _ratio(a: dict | None, b: dict | None, key: str) -> float | None:
    if a is None or b is None:
        return None
    return a[key] / b[key]


def render_tables(cases: Sequence[Case], results: dict[str, dict[str, dict]]) -> str:
    """Format the measurements as markdown tables.

    Parameters
    ----------
    cases : sequence of Case
        The cases that were run.
    results : dict
        ``results[case.name][library]`` as returned by :func:`launch_worker`,
        plus ``results[case.name]["check"]`` with the cross-check numbers.

    Returns
    -------
    str
        Markdown text: speed, memory and agreement tables.  Speed-ups are a
        peer's time over sweep's (above 1: sweep is faster).
    """
    libs = [lib for lib in LIBRARIES if any(lib in results[c.name] for c in cases)]
    peers = [lib for lib in libs if lib != "sweep"]
    names = [LABELS[lib] for lib in libs]
    speed = [
        "| case | "
        + " | ".join(f"{n} [s]" for n in names)
        + "".join(f" | speed-up vs {LABELS[p]}" for p in peers)
        + " | "
        + " | ".join(f"{n} Mcells/s" for n in names)
        + " | other load "
        + " / ".join(names)
        + " |",
        "|---" + "|---:" * (2 * len(libs) + len(peers) + 1) + "|",
    ]
    memory = [
        "| case | "
        + " | ".join(f"{n} peak RSS [MiB]" for n in names)
        + "".join(f" | peak sweep/{LABELS[p]}" for p in peers)
        + " | "
        + " | ".join(f"{n} growth [MiB]" for n in names)
        + " |",
        "|---" + "|---:" * (2 * len(libs) + len(peers)) + "|",
    ]
    agreement = [
        "| case | rel. L2 receivers (sweep vs Deepwave) | rel. L2 grad v (sweep vs Deepwave) "
        "| same, without the edge cells "
        "| receivers' cosine similarity (sweep, Devito; -1: Devito's source sign is opposite) |",
        "|---|---:|---:|---:|---:|",
    ]
    for case in cases:
        entry = results[case.name]
        got = [entry.get(lib) for lib in libs]
        sw = entry.get("sweep")
        label = case.describe()
        speed.append(
            f"| {label} | "
            + " | ".join(_fmt(r and r["best_s"], ".3f") for r in got)
            + "".join(f" | {_fmt(_ratio(entry.get(p), sw, 'best_s'), '.2f')}" for p in peers)
            + " | "
            + " | ".join(_fmt(r and r["mcells_per_s"], ".0f") for r in got)
            + " | "
            + " / ".join(_fmt(r and r["best_foreign_cpu_fraction"], ".0%") for r in got)
            + " |"
        )
        memory.append(
            f"| {label} | "
            + " | ".join(_fmt(r and r["peak_rss_mib"], ".0f") for r in got)
            + "".join(f" | {_fmt(_ratio(sw, entry.get(p), 'peak_rss_mib'), '.2f')}" for p in peers)
            + " | "
            + " | ".join(_fmt(r and r["growth_mib"], ".0f") for r in got)
            + " |"
        )
        check = entry.get("check", {})
        agreement.append(
            f"| {label} | {_fmt(check.get('receivers_rel_l2'), '.2e')} "
            f"| {_fmt(check.get('grad_v_rel_l2'), '.2e')} "
            f"| {_fmt(check.get('grad_v_interior_rel_l2'), '.2e')} "
            f"| {_fmt(check.get('devito_receivers_cosine'), '.4f')} |"
        )
    return "\n".join(
        [
            "### Speed (best wall time; speed-up = the peer's time / sweep's)",
            "",
            *speed,
            "",
            "### Peak memory (RSS of the worker)",
            "",
            *memory,
            "",
            "### Agreement (Devito scales sources differently: a scale-free check only)",
            "",
            *agreement,
            "",
        ]
    )


def machine_description() -> dict[str, Any]:
    """CPU model, core count and library versions, for the report."""
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    # Read versions from the package metadata rather than importing the packages:
    # the driver must stay small, since a forked worker starts from its image.
    versions = {}
    for name in ("numpy", "torch", "deepwave", "devito", "sweep"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    # Where the workers import sweep from: an installed copy shadows the
    # source tree unless the tree is on PYTHONPATH (or installed editable).
    spec = importlib.util.find_spec("sweep")
    return {
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "sweep_from": str(Path(spec.origin).parent) if spec and spec.origin else "not found",
        "python": platform.python_version(),
        "threads": N_THREADS,
        "versions": versions,
    }


def used_builds(results: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Return the distinct compiled-extension ids each library ran with."""
    builds: dict[str, set[str]] = {}
    for entry in results.values():
        for lib in LIBRARIES:
            if lib in entry:
                builds.setdefault(lib, set()).add(entry[lib].get("build", "unknown"))
    return {lib: sorted(ids) for lib, ids in builds.items()}


def write_json(path: Path, machine: dict, cases: Sequence[Case], results: dict) -> None:
    """Write the machine description, cases and results to ``path``."""
    payload = {
        "machine": machine,
        "builds": used_builds(results),
        "cases": [asdict(c) for c in cases],
        "results": results,
    }
    path.write_text(json.dumps(payload, indent=2))


def report(machine: dict, cases: Sequence[Case], results: dict, json_path: Path | None) -> None:
    """Print the markdown tables (and a warning on mixed builds); optionally save JSON."""
    builds = used_builds(results)
    print()
    print(render_tables(cases, results))
    print(f"compiled builds used: {builds}")
    for lib, ids in builds.items():
        if len(ids) > 1:
            print(
                f"WARNING: {lib}'s compiled extension changed during the run ({ids}); "
                "cases ran against different builds."
            )
    if json_path is not None:
        write_json(json_path, machine, cases, results)
        print(f"results written to {json_path}", file=sys.stderr)


def render_saved(paths: Sequence[Path]) -> None:
    """Print the tables of one or more ``--json`` files, merged in the given order."""
    machine: dict = {}
    cases: dict[str, Case] = {}
    results: dict[str, dict[str, Any]] = {}
    for path in paths:
        payload = json.loads(Path(path).read_text())
        machine = payload["machine"]
        for fields in payload["cases"]:
            fields = {**fields, "shape": tuple(fields["shape"])}
            cases[fields["name"]] = Case(**fields)
        results.update(payload["results"])
    print(
        f"CPU: {machine.get('cpu')} (nproc {machine.get('nproc')}), "
        f"versions {machine.get('versions')}"
    )
    report(machine, [cases[n] for n in results], results, None)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small models and few steps: a smoke run of well under a minute",
    )
    parser.add_argument(
        "--cases",
        default="all",
        help="comma-separated case names (fwd2d-a8, fwd2d-a4, fwd2d-a2, grad2d-a8, "
        "grad2d-a4, fwd3d-a8, grad3d-a8) or 'all' (default)",
    )
    parser.add_argument(
        "--libs",
        default=",".join(LIBRARIES),
        help="comma-separated libraries to run (default: all three; Devito is skipped "
        "with a message when SWEEP_BENCH_DEVITO_PYTHON, or this interpreter, lacks it)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats after one warm-up (default 3; 1 with --quick)",
    )
    parser.add_argument(
        "--grad-repeats",
        type=int,
        default=None,
        help="timed repeats for the gradient cases (default: --repeats)",
    )
    parser.add_argument(
        "--grad-nt",
        type=int,
        default=None,
        help="time steps of the gradient cases (default: same as the forward "
        "2-D cases); both libraries keep nt*shots*padded-cells floats",
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each worker, wait up to SECONDS for other processes to "
        "use < 15%% of the machine (for shared machines; default 0: off)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run every library's worker this many times per case, alternating "
        "libraries, and keep each library's best (for machines whose speed "
        "drifts over minutes; default 1)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--render",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="print the tables of earlier --json files (merged) and exit",
    )
    parser.add_argument("--worker", choices=LIBRARIES, help=argparse.SUPPRESS)
    parser.add_argument("--worker-case", help=argparse.SUPPRESS)
    parser.add_argument("--worker-dir", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run the selected cases and print the markdown tables."""
    args = parse_args(argv)
    if args.worker:
        fields = json.loads(args.worker_case)
        fields["shape"] = tuple(fields["shape"])
        run_worker(args.worker, Case(**fields), args.repeats, args.worker_dir)
        return 0
    if args.render:
        render_saved(args.render)
        return 0

    all_cases = default_cases(args.quick, args.grad_nt)
    names = list(all_cases) if args.cases == "all" else args.cases.split(",")
    unknown = [n for n in names if n not in all_cases]
    if unknown:
        raise SystemExit(f"unknown case(s) {unknown}; choose from {list(all_cases)}")
    libraries = args.libs.split(",")
    if any(lib not in LIBRARIES for lib in libraries):
        raise SystemExit(f"--libs must be a subset of {LIBRARIES}")
    if "devito" in libraries and (why := devito_available()) is not None:
        if args.libs != ",".join(LIBRARIES):  # asked for by name
            raise SystemExit(f"{why}; set SWEEP_BENCH_DEVITO_PYTHON to one that can")
        print(f"skipping Devito: {why}", file=sys.stderr)
        libraries.remove("devito")
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    grad_repeats = args.grad_repeats if args.grad_repeats is not None else repeats
    cases = [all_cases[n] for n in names]

    machine = machine_description()
    peers = " and ".join(LABELS[lib] for lib in libraries if lib != "sweep")
    print(f"# sweep vs {peers}, acoustic, float32, {N_THREADS} threads", flush=True)
    print(
        f"CPU: {machine['cpu']} (nproc {machine['nproc']}), Python {machine['python']}, "
        f"versions {machine['versions']}",
        flush=True,
    )
    print(f"sweep imported from {machine['sweep_from']}", flush=True)
    checkout = Path(__file__).resolve().parents[1] / "sweep"
    if checkout.is_dir() and Path(machine["sweep_from"]).resolve() != checkout:
        print(
            f"WARNING: not the checkout this script lives in ({checkout}); run with "
            "PYTHONPATH=<checkout> (or an editable install) to measure it",
            file=sys.stderr,
            flush=True,
        )
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_acoustic_") as tmp:
        for case in cases:
            results[case.name] = {}
            n_rep = grad_repeats if case.gradient else repeats
            for rnd, library in ((r, lib) for r in range(args.rounds) for lib in libraries):
                out_dir = Path(tmp) / f"{case.name}-{library}-{rnd}"
                out_dir.mkdir()
                if args.wait_idle > 0:
                    load = wait_for_quiet_machine(args.wait_idle)
                    if load is not None:
                        print(f"machine load before start: {load:.0%}", file=sys.stderr)
                print(
                    f"running {case.name} with {library} ({n_rep} timed repeat(s))...",
                    file=sys.stderr,
                    flush=True,
                )
                r = launch_worker(library, case, n_rep, out_dir)
                earlier = results[case.name].get(library)
                r["round_best_s"] = [*(earlier["round_best_s"] if earlier else []), r["best_s"]]
                if earlier and earlier["best_s"] <= r["best_s"]:
                    earlier["round_best_s"] = r["round_best_s"]
                    r = earlier
                results[case.name][library] = r
                print(
                    f"  best {r['best_s']:.3f} s, {r['mcells_per_s']:.0f} Mcells/s, "
                    f"peak RSS {r['peak_rss_mib']:.0f} MiB",
                    file=sys.stderr,
                    flush=True,
                )
            entry = results[case.name]
            if "sweep" in entry and "deepwave" in entry:
                sw, dw = entry["sweep"], entry["deepwave"]
                check = {"receivers_rel_l2": relative_l2(sw["receivers"], dw["receivers"])}
                if case.gradient:
                    check["grad_v_rel_l2"] = relative_l2(sw["grad_v"], dw["grad_v"])
                    # sweep holds the CPML's velocity fixed; Deepwave's edge cells also
                    # carry the CPML's gradient. Compare away from the edge cells too.
                    inner = (slice(1, -1),) * case.ndim
                    check["grad_v_interior_rel_l2"] = relative_l2(
                        sw["grad_v"][inner], dw["grad_v"][inner]
                    )
                entry["check"] = check
            if "sweep" in entry and "devito" in entry:
                # Scale-free: Devito scales its source differently and absorbs with a
                # sponge; a similarity near 1 says both ran the same survey.
                a, b = (entry[lib]["receivers"].astype(np.float64) for lib in ("sweep", "devito"))
                cosine = float(np.vdot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
                entry.setdefault("check", {})["devito_receivers_cosine"] = cosine
            for r in entry.values():
                r.pop("receivers", None)
                r.pop("grad_v", None)
            if args.json is not None:  # keep what has been measured if a later case fails
                write_json(args.json, machine, cases[: len(results)], results)

    report(machine, cases, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
