"""Benchmark sweep's framework adapters (PropTorch, PropJax) on the CPU.

Three questions, all on the 2-D order-8 problem of ``bench_acoustic.py``'s
``fwd2d-a8`` case (300 x 1000 cells, dx 10 m, dt 1 ms, 4 shots, float32; the
model, sources, receivers and gradient cotangent are built by that script's
:func:`~bench_acoustic.survey`):

1. **Adapter overhead** of ``PropTorch(impl="c")`` (and ``PropJax(impl="c")``
   under ``jax.jit``) against the NumPy core ``sweep.acoustic`` on the same
   problem: forward only, and forward + backward (``loss.backward()`` /
   ``jax.value_and_grad`` against ``sweep.vjp`` and its pullback).
2. **Eager implementation**: ``PropTorch(impl="eager")`` without and with
   ``torch.compile`` (``EagerOptions(use_compile=True)``) against Deepwave's
   ``torch.compile`` backend (``deepwave.scalar(..., backend="torch_compile")``).
3. ``PropJax(impl="eager")`` under ``jax.jit`` (forward and
   ``jax.value_and_grad``), with ``PropJax(impl="c")`` for reference.

Every measurement runs in its own subprocess (as in ``bench_acoustic.py``):
one untimed warm-up call, whose time is reported as "first call" (it includes
``torch.compile`` / ``jax.jit`` compilation), then the best of ``--repeats``
timed calls.  The number of time steps differs between measurements, so that
the slow configurations fit in the time budget; throughput is
``Mcells/s = 300 * 1000 * nt * shots / seconds / 1e6`` (interior cells, as in
``bench_acoustic.py``), and every measurement is compared with a *peer*
measured in the same run.

Fairness settings
-----------------
* ``--threads`` (default 1) threads for every library: ``OMP_NUM_THREADS``
  (and MKL/OpenBLAS) in every worker, ``torch.set_num_threads``, sweep
  ``n_threads`` and, for JAX, ``XLA_FLAGS="--xla_cpu_multi_thread_eigen=false
  intra_op_parallelism_threads=1"``; every worker is also pinned
  (``sched_setaffinity``) to the ``--threads`` least busy CPUs, because XLA's
  CPU thread pool ignores those flags.  Each worker reports its CPU time
  divided by wall time during the best call, which should be about the
  thread count.
* Adapter overhead is a few per cent, below the drift of a shared machine
  between two workers: the ``overhead`` group runs ``--rounds`` times,
  interleaved, keeping the best call over all rounds, and the
  ``interleaved-*`` workers alternate the core, PropTorch c and PropJax c
  call by call in one process (``gc.collect()`` before each call) and report
  the median of the paired per-round ratios.
* ``torch.compile`` caches: every worker gets a fresh, empty
  ``TORCHINDUCTOR_CACHE_DIR``, so the compile times are cold (no FX-graph or
  kernel cache from an earlier run), for sweep and Deepwave alike.
* Deepwave: ``backend="torch_compile"``, ``location_interpolation="none"``
  (integer cell indices), ``check_output_finite=False``; the worker checks
  that it ran that backend without sub-stepping (``info.step_ratio == 1``).
* Everyone: ``accuracy=8``, ``pml_width=20``, ``pml_freq=15`` Hz (the
  wavelet's peak) and ``max_vel`` = the model maximum.
* Timing: wall-clock time of the call that produces the framework's output
  (blocked until ready for JAX); converting results to NumPy and the
  agreement check against the NumPy core (run afterwards, untimed, in the
  same worker) are not timed.  Peak RSS (``VmHWM``) is read before that check.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import bench_acoustic as ba
import numpy as np
from bench_acoustic import (
    PEAK_FREQ,
    PML_WIDTH,
    Case,
    busy_cpu_seconds,
    compiled_build_id,
    default_cases,
    machine_description,
    make_deepwave_runner,
    own_cpu_seconds,
    peak_rss_mib,
    relative_l2,
    survey,
    wait_for_quiet_machine,
)

# Configurations: (description, library whose compiled build is recorded, compiles?).
CONFIGS: dict[str, tuple[str, str, bool]] = {
    "core": ("sweep.acoustic / sweep.vjp (NumPy core, impl='c')", "sweep", False),
    "torch-c": ("PropTorch(impl='c')", "sweep", False),
    "jax-c": ("PropJax(impl='c') under jax.jit", "sweep", True),
    "torch-eager": ("PropTorch(impl='eager')", "sweep", False),
    "torch-compile": ("PropTorch(impl='eager', EagerOptions(use_compile=True))", "sweep", True),
    "deepwave-compile": ("deepwave.scalar(backend='torch_compile')", "deepwave", True),
    "jax-eager": ("PropJax(impl='eager') under jax.jit", "sweep", True),
    "interleaved": ("core, PropTorch c and PropJax c alternated in one worker", "sweep", False),
}
INTERLEAVED = ("core", "torch-c", "jax-c")
STAT_KEYS = ("times", "cpu_per_wall", "foreign_cpu_fraction")  # per timed call
GROUPS = {
    "overhead": "1. adapter overhead of the compiled path",
    "eager": "2. PropTorch eager (+ torch.compile) vs Deepwave torch_compile",
    "jax": "3. PropJax eager under jax.jit",
}


@dataclass(frozen=True)
class Measurement:
    """One (configuration, forward or gradient, nt) measurement.

    Attributes
    ----------
    name : str
        Identifier, ``"{config}-fwd"`` or ``"{config}-grad"`` (plus a suffix
        for variants).
    group : str
        Key of :data:`GROUPS` the measurement belongs to.
    config : str
        Key of :data:`CONFIGS`.
    gradient : bool
        Forward + backward (velocity gradient) instead of forward only.
    nt : int
        Number of time steps.
    repeats : int
        Default number of timed repeats (``--repeats`` overrides it).
    peer : str or None
        Name of the measurement this one is compared with.
    collect : bool
        Run ``gc.collect()`` (untimed) before every call, so that garbage
        kept alive by reference cycles is freed between calls.
    """

    name: str
    group: str
    config: str
    gradient: bool
    nt: int
    repeats: int
    peer: str | None
    collect: bool = False

    def case(self, quick: bool) -> Case:
        """The ``bench_acoustic`` case of this measurement (``fwd2d-a8`` with this nt)."""
        base = default_cases(quick, None)["fwd2d-a8"]
        return replace(base, name=self.name, nt=self.nt, gradient=self.gradient)


def default_plan(quick: bool) -> list[Measurement]:
    """Return all measurements in the order they run.

    Parameters
    ----------
    quick : bool
        Small model (100 x 200, 2 shots) and few steps, for a smoke run.

    Returns
    -------
    list of Measurement
        The full run uses nt = 2000 where the configuration is fast enough,
        and fewer steps for the slow ones (eager without compilation, and the
        gradients of the eager paths, whose autograd graphs keep every step's
        intermediates in memory).
    """
    steps = {  # (quick, full) number of time steps
        "c": (300, 2000),
        "c-grad": (300, 500),
        "eager": (40, 200),
        "eager-grad": (20, 30),
        "compile": (300, 2000),
        "cgrad": (60, 200),  # compile, gradient
        "jax": (100, 500),
        "jax-grad": (60, 200),
    }
    nt = {key: pair[0 if quick else 1] for key, pair in steps.items()}
    rep_fast, rep = (1, 1) if quick else (5, 3)
    rep_slow = min(rep, 2)
    rounds = 2 if quick else 6  # of the interleaved measurements
    dw_fwd, dw_grad = "deepwave-compile-fwd", "deepwave-compile-grad"
    m = Measurement
    return [
        m("core-fwd", "overhead", "core", False, nt["c"], rep_fast, None),
        m("torch-c-fwd", "overhead", "torch-c", False, nt["c"], rep_fast, "core-fwd"),
        m("jax-c-fwd", "overhead", "jax-c", False, nt["c"], rep_fast, "core-fwd"),
        m("core-grad", "overhead", "core", True, nt["c-grad"], rep, None),
        m("torch-c-grad", "overhead", "torch-c", True, nt["c-grad"], rep, "core-grad"),
        m("torch-c-grad-gc", "overhead", "torch-c", True, nt["c-grad"], rep, "core-grad", True),
        m("jax-c-grad", "overhead", "jax-c", True, nt["c-grad"], rep, "core-grad"),
        m("interleaved-fwd", "overhead", "interleaved", False, nt["c"], rounds, None),
        m("interleaved-grad", "overhead", "interleaved", True, nt["c-grad"], rounds, None),
        m("deepwave-compile-fwd", "eager", "deepwave-compile", False, nt["compile"], rep, None),
        m("torch-compile-fwd", "eager", "torch-compile", False, nt["compile"], rep, dw_fwd),
        m("torch-eager-fwd", "eager", "torch-eager", False, nt["eager"], rep_slow, dw_fwd),
        m("deepwave-compile-grad", "eager", "deepwave-compile", True, nt["cgrad"], rep, None),
        m("torch-compile-grad", "eager", "torch-compile", True, nt["cgrad"], rep, dw_grad),
        m("torch-eager-grad", "eager", "torch-eager", True, nt["eager-grad"], rep_slow, dw_grad),
        m("jax-eager-fwd", "jax", "jax-eager", False, nt["jax"], rep, "jax-c-fwd"),
        m("jax-eager-grad", "jax", "jax-eager", True, nt["jax-grad"], rep, "jax-c-grad"),
    ]


# ----------------------------------------------------------------------------
# Workers (one configuration each, in a subprocess)
# ----------------------------------------------------------------------------


def to_numpy(x: Any) -> np.ndarray:
    """Host NumPy copy of a NumPy, torch or JAX array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu()
    return np.asarray(x)


def sweep_settings(case: Case, problem: dict[str, np.ndarray]) -> dict[str, Any]:
    """Constructor settings shared by PropTorch and PropJax (locations as NumPy)."""
    return {
        "grid_spacing": case.spacing,
        "dt": case.dt,
        "source_locations": problem["source_locations"],
        "receiver_locations": problem["receiver_locations"],
        "accuracy": case.accuracy,
        "pml_width": PML_WIDTH,
        "pml_freq": PEAK_FREQ,
        "max_vel": float(problem["v"].max()),
    }


def make_core_runner(case: Case, problem: dict, threads: int) -> Callable[[], dict]:
    """``bench_acoustic``'s sweep runner (``sweep.acoustic`` or ``sweep.vjp``, impl 'c')."""
    ba.N_THREADS = threads  # read by make_sweep_runner at call time
    return ba.make_sweep_runner(case, problem)


def make_torch_runner(config: str, case: Case, problem: dict, threads: int) -> Callable[[], dict]:
    """PropTorch with ``impl="c"``, ``"eager"`` or eager + ``torch.compile``.

    Parameters
    ----------
    config : {"torch-c", "torch-eager", "torch-compile"}
        The configuration.
    case : Case
        The benchmark case.
    problem : dict of str to numpy.ndarray
        Output of :func:`bench_acoustic.survey`.
    threads : int
        Torch intra-op threads and sweep ``n_threads``.

    Returns
    -------
    callable
        Returns ``{"receivers": tensor}`` plus ``"grad_v"`` for gradient cases.
    """
    import torch

    from sweep.propagator.options import EagerOptions
    from sweep.propagator.torch import PropTorch

    torch.set_num_threads(threads)
    settings = sweep_settings(case, problem)
    if config == "torch-c":
        prop = PropTorch("acoustic", impl="c", n_threads=threads, **settings)
    else:
        options = EagerOptions(use_compile=config == "torch-compile")
        prop = PropTorch("acoustic", impl="eager", eager_options=options, **settings)
    if prop.impl != ("c" if config == "torch-c" else "eager"):
        raise RuntimeError(f"PropTorch chose impl={prop.impl!r} for {config}")
    v = torch.from_numpy(problem["v"])
    amp = torch.from_numpy(problem["source_amplitudes"])

    if not case.gradient:

        def run_forward() -> dict:
            with torch.no_grad():
                return {"receivers": prop(v, source_amplitudes=amp)}

        return run_forward

    cotangent = torch.from_numpy(problem["cotangent"])
    v_param = v.clone().requires_grad_(True)

    def run_gradient() -> dict:
        v_param.grad = None
        receivers = prop(v_param, source_amplitudes=amp)
        receivers.backward(cotangent)
        return {"receivers": receivers.detach(), "grad_v": v_param.grad}

    return run_gradient


def make_jax_runner(config: str, case: Case, problem: dict, threads: int) -> Callable[[], dict]:
    """PropJax (``impl="c"`` or ``"eager"``) under ``jax.jit``.

    The gradient is ``jax.value_and_grad`` of ``sum(receivers * cotangent)``
    (the receivers come back as auxiliary output), so it matches the
    cotangent given to the other libraries' backward passes.

    Parameters
    ----------
    config : {"jax-c", "jax-eager"}
        The configuration.
    case : Case
        The benchmark case.
    problem : dict of str to numpy.ndarray
        Output of :func:`bench_acoustic.survey`.
    threads : int
        sweep ``n_threads`` for the compiled callbacks (XLA's own threads are
        set through ``XLA_FLAGS`` by the driver).

    Returns
    -------
    callable
        Returns ``{"receivers": jax.Array}`` plus ``"grad_v"`` for gradient cases.
    """
    import jax
    import jax.numpy as jnp

    from sweep.propagator.jax import PropJax

    settings = sweep_settings(case, problem)
    if config == "jax-c":
        prop = PropJax("acoustic", impl="c", n_threads=threads, **settings)
    else:
        prop = PropJax("acoustic", impl="eager", **settings)
    if prop.impl != config.removeprefix("jax-"):
        raise RuntimeError(f"PropJax chose impl={prop.impl!r} for {config}")
    v = jnp.asarray(problem["v"])
    amp = jnp.asarray(problem["source_amplitudes"])

    if not case.gradient:
        forward = jax.jit(lambda v, amp: prop(v, source_amplitudes=amp))

        def run_forward() -> dict:
            return {"receivers": jax.block_until_ready(forward(v, amp))}

        return run_forward

    cotangent = jnp.asarray(problem["cotangent"])

    def loss(v: Any, amp: Any, cot: Any) -> tuple[Any, Any]:
        receivers = prop(v, source_amplitudes=amp)
        return jnp.sum(receivers * cot), receivers

    value_and_grad = jax.jit(jax.value_and_grad(loss, has_aux=True))

    def run_gradient() -> dict:
        (_, receivers), grad_v = jax.block_until_ready(value_and_grad(v, amp, cotangent))
        return {"receivers": receivers, "grad_v": grad_v}

    return run_gradient


def make_runner(config: str, case: Case, problem: dict, threads: int) -> Callable[[], dict]:
    """Dispatch to the runner factory of ``config``."""
    if config == "core":
        return make_core_runner(case, problem, threads)
    if config.startswith("torch-"):
        return make_torch_runner(config, case, problem, threads)
    if config == "deepwave-compile":
        return make_deepwave_runner(case, problem, backend="torch_compile", threads=threads)
    return make_jax_runner(config, case, problem, threads)


def timed_call(runner: Callable[[], dict]) -> tuple[dict, tuple[float, float, float | None]]:
    """Call ``runner`` once; return its outputs and (seconds, CPU/wall, other load).

    "Other load" is the CPU time that other processes used during the call,
    as a fraction of all cores (from ``/proc/stat``; None without it).
    """
    busy0, own0 = busy_cpu_seconds(), own_cpu_seconds()
    start = time.perf_counter()
    outputs = runner()
    elapsed = time.perf_counter() - start
    busy1, own1 = busy_cpu_seconds(), own_cpu_seconds()
    foreign = None
    if busy0 is not None and busy1 is not None:
        other = max(0.0, (busy1 - busy0) - (own1 - own0))
        foreign = other / (elapsed * (os.cpu_count() or 1))
    return outputs, (elapsed, (own1 - own0) / elapsed, foreign)


def run_interleaved(case: Case, problem: dict, rounds: int, threads: int) -> dict:
    """Alternate the NumPy core, PropTorch c and PropJax c in one process.

    Each round calls every configuration once, in turn, so all three see the
    same machine conditions within seconds of each other; ``gc.collect()``
    (untimed) runs before every call.  After one untimed warm-up call each.

    Returns
    -------
    dict
        ``{config: {"times": [...], "cpu_per_wall": [...],
        "foreign_cpu_fraction": [...]}}`` for ``INTERLEAVED``.
    """
    runners = {config: make_runner(config, case, problem, threads) for config in INTERLEAVED}
    for runner in runners.values():
        runner()
    per_config: dict[str, dict[str, list]] = {
        config: {key: [] for key in STAT_KEYS} for config in INTERLEAVED
    }
    for _ in range(rounds):
        for config, runner in runners.items():
            gc.collect()
            _, stats = timed_call(runner)
            for key, value in zip(STAT_KEYS, stats, strict=True):
                per_config[config][key].append(value)
    return per_config


def run_worker(
    config: str,
    case: Case,
    repeats: int,
    threads: int,
    out_dir: Path,
    collect: bool = False,
    cpus: Sequence[int] | None = None,
) -> None:
    """Time one configuration on one case and write ``result.json`` to ``out_dir``.

    Parameters
    ----------
    config : str
        Key of :data:`CONFIGS`.
    case : Case
        The benchmark case.
    repeats : int
        Timed calls after the untimed warm-up; all times are kept.
    threads : int
        Threads for every library.
    out_dir : pathlib.Path
        Where ``result.json`` is written.
    collect : bool
        Run ``gc.collect()`` (untimed) before every call.
    cpus : sequence of int, optional
        Restrict this process (and its threads) to these CPUs, before any
        library is imported.
    """
    if cpus:
        os.sched_setaffinity(0, cpus)
    problem = survey(case)
    if config == "interleaved":
        import sweep

        per_config = run_interleaved(case, problem, repeats, threads)
        result = {
            "build": compiled_build_id("sweep"),
            "sweep_path": str(Path(sweep.__file__).parent),
            "cpus": sorted(os.sched_getaffinity(0)),
            "collect": True,
            "per_config": per_config,
            "peak_rss_mib": peak_rss_mib(),
        }
        (out_dir / "result.json").write_text(json.dumps(result))
        return
    runner = make_runner(config, case, problem, threads)
    baseline_mib = peak_rss_mib()

    start = time.perf_counter()
    outputs = runner()  # warm-up: compilation, first-touch allocations, lazy set-up
    first_s = time.perf_counter() - start
    times, foreign, cpu_per_wall = [], [], []
    for _ in range(repeats):
        del outputs  # free the previous run's arrays before starting the next
        if collect:
            gc.collect()
        outputs, stats = timed_call(runner)
        for values, value in zip((times, cpu_per_wall, foreign), stats, strict=True):
            values.append(value)
    peak_mib = peak_rss_mib()
    outputs = {key: to_numpy(value) for key, value in outputs.items()}

    # Agreement with the NumPy core on the same problem (untimed, after the RSS reading).
    check: dict[str, float] = {}
    if config != "core":
        reference = make_core_runner(case, problem, threads)()
        for key, value in reference.items():
            check[f"{key}_rel_l2"] = relative_l2(outputs[key], value)

    import sweep

    result = {
        "build": compiled_build_id(CONFIGS[config][1]),
        "sweep_path": str(Path(sweep.__file__).parent),
        "cpus": sorted(os.sched_getaffinity(0)),
        "collect": collect,
        "first_s": first_s,
        "times": times,
        "cpu_per_wall": cpu_per_wall,
        "foreign_cpu_fraction": foreign,
        "baseline_rss_mib": baseline_mib,
        "peak_rss_mib": peak_mib,
        "check": check,
    }
    (out_dir / "result.json").write_text(json.dumps(result))


# ----------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------


def worker_env(threads: int, out_dir: Path) -> dict[str, str]:
    """Environment of a worker: thread counts for every library, a fresh inductor cache."""
    env = dict(os.environ)
    n = str(threads)
    xla = "--xla_cpu_multi_thread_eigen=false" if threads == 1 else ""
    env.update(
        {
            "OMP_NUM_THREADS": n,
            "MKL_NUM_THREADS": n,
            "OPENBLAS_NUM_THREADS": n,
            "SWEEP_BENCH_THREADS": n,
            "XLA_FLAGS": f"{xla} intra_op_parallelism_threads={n}".strip(),
            "TORCHINDUCTOR_CACHE_DIR": str(out_dir / "inductor_cache"),
        }
    )
    return env


def cpu_busy_times() -> dict[int, float]:
    """Non-idle jiffies of every CPU since boot, from the ``cpuN`` lines of ``/proc/stat``."""
    busy = {}
    try:
        with open("/proc/stat") as stat:
            for line in stat:
                if line.startswith("cpu") and line[3].isdigit():
                    name, *fields = line.split()
                    values = [int(x) for x in fields[:8]]
                    busy[int(name[3:])] = sum(values) - values[3] - values[4]
    except (OSError, ValueError, IndexError):
        return {}
    return busy


def quiet_cpus(n: int, window_s: float = 0.5) -> list[int]:
    """The ``n`` CPUs (of those this process may use) that were least busy just now.

    Parameters
    ----------
    n : int
        How many CPUs to return.
    window_s : float
        Length of the sampling window in seconds.

    Returns
    -------
    list of int
        Sorted CPU numbers; all allowed CPUs when ``n`` is at least their number.
    """
    allowed = sorted(os.sched_getaffinity(0))
    if n >= len(allowed):
        return allowed
    before = cpu_busy_times()
    time.sleep(window_s)
    after = cpu_busy_times()
    load = {cpu: after.get(cpu, 0) - before.get(cpu, 0) for cpu in allowed}
    return sorted(sorted(allowed, key=lambda cpu: load[cpu])[:n])


def launch_worker(
    measurement: Measurement, case: Case, repeats: int, threads: int, out_dir: Path
) -> dict:
    """Run :func:`run_worker` in a fresh Python process and return its raw results.

    The worker is pinned to the ``threads`` least busy CPUs (XLA ignores its
    thread flags for some operations; pinning bounds every library alike).

    Parameters
    ----------
    measurement : Measurement
        What to run.
    case : Case
        Its benchmark case.
    repeats : int
        Timed repeats after the warm-up.
    threads : int
        Threads (and CPUs) for every library.
    out_dir : pathlib.Path
        Empty directory the worker writes into.

    Returns
    -------
    dict
        The worker's ``result.json`` plus the measurement's static fields;
        :func:`summarise` adds the derived numbers.
    """
    cpus = quiet_cpus(threads)
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        measurement.config,
        "--worker-case",
        json.dumps(asdict(case)),
        "--worker-dir",
        str(out_dir),
        "--worker-cpus",
        ",".join(str(c) for c in cpus),
        "--repeats",
        str(repeats),
        "--threads",
        str(threads),
    ]
    if measurement.collect:
        command.append("--worker-gc")
    log_path = out_dir / "log.txt"
    with open(log_path, "w") as log:
        completed = subprocess.run(
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=worker_env(threads, out_dir),
            check=False,
        )
    shutil.rmtree(out_dir / "inductor_cache", ignore_errors=True)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{measurement.name} worker failed (exit {completed.returncode}):\n"
            f"{log_path.read_text()[-4000:]}"
        )
    result = json.loads((out_dir / "result.json").read_text())
    result.update(
        {
            "config": measurement.config,
            "group": measurement.group,
            "gradient": measurement.gradient,
            "nt": measurement.nt,
            "peer": measurement.peer,
            "cell_updates": case.cell_updates,
            "cpus": [result["cpus"]],
        }
    )
    if "first_s" in result:
        result["first_s"] = [result["first_s"]]
    return result


def merge_rounds(earlier: dict, later: dict) -> dict:
    """Combine two runs (rounds) of the same measurement: all timed calls, the worst peak."""
    merged = dict(earlier)
    for key in ("times", "cpu_per_wall", "foreign_cpu_fraction", "first_s", "cpus"):
        merged[key] = earlier[key] + later[key]
    merged["peak_rss_mib"] = max(earlier["peak_rss_mib"], later["peak_rss_mib"])
    merged["baseline_rss_mib"] = min(earlier["baseline_rss_mib"], later["baseline_rss_mib"])
    return merged


def summarise_interleaved(result: dict) -> dict:
    """Best and median time of each configuration of an interleaved run, and its overhead.

    The overhead over the NumPy core is given twice: from the best calls, and
    as the median over rounds of the paired ratio (this round's adapter call
    over this round's core call), which cancels slow drifts of the machine.
    """
    per_config = result["per_config"]
    core = per_config["core"]["times"]
    for entry in per_config.values():
        times = entry["times"]
        entry["best_s"] = min(times)
        entry["median_s"] = float(np.median(times))
        entry["mcells_per_s"] = result["cell_updates"] / min(times) / 1e6
        entry["overhead_best"] = min(times) / min(core) - 1.0
        paired = [t / c - 1.0 for t, c in zip(times, core, strict=True)]
        entry["overhead_paired_median"] = float(np.median(paired))
    result["rounds"] = len(core)
    return result


def summarise(result: dict) -> dict:
    """Add the best time, throughput, compile estimate and memory growth to a raw result.

    The compile estimate is the first (cold, untimed) call of the first round
    minus the best timed call; it is only given for configurations that compile.
    """
    best_index = int(np.argmin(result["times"]))
    best = result["times"][best_index]
    first = result["first_s"][0]
    result.update(
        {
            "rounds": len(result["first_s"]),
            "best_s": best,
            "compile_s": first - best if CONFIGS[result["config"]][2] else None,
            "best_cpu_per_wall": result["cpu_per_wall"][best_index],
            "best_foreign_cpu_fraction": result["foreign_cpu_fraction"][best_index],
            "mcells_per_s": result["cell_updates"] / best / 1e6,
            "growth_mib": result["peak_rss_mib"] - result["baseline_rss_mib"],
        }
    )
    return result


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def peer_ratios(results: dict[str, dict], name: str) -> tuple[float | None, float | None]:
    """Throughput ratio to the peer, and the time overhead when both ran the same nt.

    Returns
    -------
    tuple
        ``(mcells_ratio, overhead)``: this measurement's Mcells/s divided by
        its peer's, and ``best_s / peer best_s - 1`` (None unless the nt match).
    """
    entry = results[name]
    peer = results.get(entry.get("peer") or "")
    if peer is None:
        return None, None
    ratio = entry["mcells_per_s"] / peer["mcells_per_s"]
    overhead = entry["best_s"] / peer["best_s"] - 1.0 if entry["nt"] == peer["nt"] else None
    return ratio, overhead


def describe(result: dict) -> str:
    """Configuration description of a result, noting ``gc.collect()`` between calls."""
    text = CONFIGS[result["config"]][0]
    return text + ", gc.collect() between calls" if result.get("collect") else text


def render_tables(results: dict[str, dict], quick: bool = False) -> str:
    """Format the measurements as markdown: speed, memory/conditions and targets.

    Parameters
    ----------
    results : dict
        ``results[measurement name]`` as returned by :func:`launch_worker`.
    quick : bool
        Whether these are ``--quick`` results (the targets are then not judged).

    Returns
    -------
    str
        Markdown text.
    """
    speed = [
        "| measurement | timed | nt | best [s] | median [s] | first call [s] | compile ~ [s] "
        "| Mcells/s | peer | Mcells/s vs peer | time vs peer |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    memory = [
        "| measurement | timed calls | peak RSS [MiB] | growth [MiB] | CPU/wall | other load "
        "| rel. L2 receivers vs core | rel. L2 grad v vs core |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    groups: dict[str, list[str]] = {}
    for name, entry in results.items():
        if entry["config"] != "interleaved":
            groups.setdefault(entry["group"], []).append(name)
    for group, names in groups.items():
        speed.append(f"| **{GROUPS[group]}** | | | | | | | | | | |")
        for name in names:
            r = results[name]
            ratio, overhead = peer_ratios(results, name)
            speed.append(
                f"| `{name}`: {describe(r)} "
                f"| {'fwd+bwd' if r['gradient'] else 'forward'} | {r['nt']} "
                f"| {r['best_s']:.3f} | {np.median(r['times']):.3f} | {r['first_s'][0]:.2f} "
                f"| {_fmt(r['compile_s'], '.1f')} "
                f"| {r['mcells_per_s']:.1f} | {r['peer'] or '-'} | {_fmt(ratio, '.3f')} "
                f"| {_fmt(overhead and 100 * overhead, '+.1f')}{'' if overhead is None else ' %'} |"
            )
            check = r.get("check", {})
            memory.append(
                f"| `{name}` | {len(r['times'])} | {r['peak_rss_mib']:.0f} | {r['growth_mib']:.0f} "
                f"| {r['best_cpu_per_wall']:.2f} | {_fmt(r['best_foreign_cpu_fraction'], '.0%')} "
                f"| {_fmt(check.get('receivers_rel_l2'), '.1e')} "
                f"| {_fmt(check.get('grad_v_rel_l2'), '.1e')} |"
            )
    lines = [
        "#### Speed (best wall time; first call = untimed warm-up, incl. compilation)",
        "",
        *speed,
        "",
        "#### Memory, threads, load and agreement",
        "",
        *memory,
        "",
    ]
    interleaved = render_interleaved(results)
    if interleaved:
        lines += [
            "#### Adapter overhead, interleaved in one worker (gc.collect() before every call)",
            "",
            *interleaved,
            "",
        ]
    targets = render_targets(results)
    if targets and not quick:
        lines += ["#### Targets", "", *targets, ""]
    return "\n".join(lines)


def render_interleaved(results: dict[str, dict]) -> list[str]:
    """Markdown rows of the interleaved overhead measurements (empty if there are none)."""
    rows = [
        "| timed | nt | rounds | core best / median [s] | PropTorch c best / median [s] "
        "| PropTorch overhead: best / paired median | PropJax c best / median [s] "
        "| PropJax overhead: best / paired median |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results.values():
        if r["config"] != "interleaved":
            continue
        cells = [f"{'fwd+bwd' if r['gradient'] else 'forward'}", str(r["nt"]), str(r["rounds"])]
        for config in INTERLEAVED:
            e = r["per_config"][config]
            cells.append(f"{e['best_s']:.3f} / {e['median_s']:.3f}")
            if config != "core":
                best, paired = 100 * e["overhead_best"], 100 * e["overhead_paired_median"]
                cells.append(f"{best:+.1f} % / {paired:+.1f} %")
        rows.append("| " + " | ".join(cells) + " |")
    return rows if len(rows) > 2 else []


def render_targets(results: dict[str, dict]) -> list[str]:
    """Markdown rows comparing the measurements with the issue's targets."""
    rows = ["| target | measured | met? |", "|---|---|---|"]
    for name, label in (
        ("torch-c-fwd", "PropTorch impl='c' forward overhead < 2 %"),
        ("torch-c-grad", "PropTorch impl='c' fwd+bwd overhead < 2 %"),
        ("torch-c-grad-gc", "same, with gc.collect() between calls (untimed)"),
    ):
        if name in results and results.get(results[name]["peer"]) is not None:
            _, overhead = peer_ratios(results, name)
            if overhead is not None:
                met = "yes" if overhead < 0.02 else "no"
                rows.append(f"| {label} | {100 * overhead:+.1f} % | {met} |")
    for name, kind in (("interleaved-fwd", "forward"), ("interleaved-grad", "fwd+bwd")):
        if name in results:
            overhead = results[name]["per_config"]["torch-c"]["overhead_paired_median"]
            met = "yes" if overhead < 0.02 else "no"
            rows.append(
                f"| PropTorch impl='c' {kind} overhead < 2 % (interleaved, gc between calls, "
                f"median of paired rounds) | {100 * overhead:+.1f} % | {met} |"
            )
    for name, label in (
        ("torch-compile-fwd", "PropTorch eager + torch.compile forward >= 1.5x Deepwave"),
        ("torch-compile-grad", "(no target) PropTorch eager + torch.compile fwd+bwd"),
    ):
        if name in results and results.get(results[name]["peer"]) is not None:
            ratio, _ = peer_ratios(results, name)
            met = ("yes" if ratio >= 1.5 else "no") if "no target" not in label else "-"
            rows.append(f"| {label} | {ratio:.2f}x Deepwave torch_compile | {met} |")
    return rows if len(rows) > 2 else []


def used_builds(results: dict[str, dict]) -> dict[str, list[str]]:
    """Distinct compiled-extension ids per library (sweep or deepwave)."""
    builds: dict[str, set[str]] = {}
    for entry in results.values():
        builds.setdefault(CONFIGS[entry["config"]][1], set()).add(entry.get("build", "unknown"))
    return {lib: sorted(ids) for lib, ids in builds.items()}


def write_json(path: Path, machine: dict, quick: bool, results: dict) -> None:
    """Write the machine description, plan and results to ``path``."""
    payload = {
        "machine": machine,
        "quick": quick,
        "builds": used_builds(results),
        "configs": {k: v[0] for k, v in CONFIGS.items()},
        "results": results,
    }
    path.write_text(json.dumps(payload, indent=2))


def describe_machine(threads: int) -> dict[str, Any]:
    """``bench_acoustic``'s machine description plus JAX versions and the thread count."""
    machine = machine_description()
    machine["threads"] = threads
    for name in ("jax", "jaxlib"):
        try:
            machine["versions"][name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            machine["versions"][name] = "not installed"
    return machine


def render_saved(paths: Sequence[Path]) -> None:
    """Print the tables of one or more ``--json`` files, merged in the given order."""
    machine: dict = {}
    results: dict[str, dict] = {}
    quick = False
    for path in paths:
        payload = json.loads(Path(path).read_text())
        machine, quick = payload["machine"], payload.get("quick", False)
        results.update(payload["results"])
    print(
        f"CPU: {machine.get('cpu')} (nproc {machine.get('nproc')}), "
        f"{machine.get('threads')} thread(s), versions {machine.get('versions')}"
    )
    print(render_tables(results, quick))
    print(f"compiled builds used: {used_builds(results)}")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="100 x 200 model, 2 shots, few steps, 1 repeat: a smoke run",
    )
    parser.add_argument(
        "--cases",
        default="all",
        help="comma-separated measurement names (e.g. torch-c-fwd,core-fwd) and/or groups "
        f"({', '.join(GROUPS)}), or 'all' (default)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed repeats after one warm-up, for every measurement (default: 5 for the "
        "compiled forward runs, 3 for the rest, 2 for eager without compilation, 6 rounds "
        "for the interleaved runs; 1, and 2 rounds, with --quick)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads for every library (OMP_NUM_THREADS, torch.set_num_threads, sweep "
        "n_threads, XLA intra-op threads), and CPUs each worker is pinned to; default 1",
    )
    parser.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each worker, wait up to SECONDS for other processes to use < 15%% of "
        "the machine (default 0: off)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument(
        "--render",
        type=Path,
        nargs="+",
        metavar="JSON",
        help="print the tables of earlier --json files (merged) and exit",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="run the 'overhead' group this many times, interleaved (core, torch-c, jax-c, "
        "core, ...), and keep the best call over all rounds: its comparisons are a few "
        "per cent, below the drift of a shared machine (default 3; 1 with --quick)",
    )
    parser.add_argument("--worker", choices=list(CONFIGS), help=argparse.SUPPRESS)
    parser.add_argument("--worker-gc", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-cpus", default="", help=argparse.SUPPRESS)
    parser.add_argument("--worker-case", help=argparse.SUPPRESS)
    parser.add_argument("--worker-dir", type=Path, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def select(plan: list[Measurement], spec: str) -> list[Measurement]:
    """Measurements named in ``spec`` (names and/or group names), in plan order."""
    if spec == "all":
        return plan
    wanted = set(spec.split(","))
    unknown = wanted - {m.name for m in plan} - set(GROUPS)
    if unknown:
        raise SystemExit(
            f"unknown case(s) {sorted(unknown)}; choose from {[m.name for m in plan]} "
            f"or groups {list(GROUPS)}"
        )
    return [m for m in plan if m.name in wanted or m.group in wanted]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: run the selected measurements and print the markdown tables."""
    args = parse_args(argv)
    if args.worker:
        fields = json.loads(args.worker_case)
        fields["shape"] = tuple(fields["shape"])
        cpus = [int(c) for c in args.worker_cpus.split(",") if c]
        run_worker(
            args.worker,
            Case(**fields),
            args.repeats,
            args.threads,
            args.worker_dir,
            collect=args.worker_gc,
            cpus=cpus,
        )
        return 0
    if args.render:
        render_saved(args.render)
        return 0
    if args.threads < 1:
        raise SystemExit("--threads must be >= 1")

    plan = select(default_plan(args.quick), args.cases)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    repeated = [m for m in plan if m.group == "overhead" and m.config != "interleaved"]
    schedule = repeated * rounds + [m for m in plan if m not in repeated]
    machine = describe_machine(args.threads)
    machine["overhead_rounds"] = rounds
    print(f"# sweep adapters, acoustic 2D order 8, float32, {args.threads} thread(s)", flush=True)
    print(
        f"CPU: {machine['cpu']} (nproc {machine['nproc']}), Python {machine['python']}, "
        f"versions {machine['versions']}",
        flush=True,
    )
    raw: dict[str, dict] = {}
    results: dict[str, dict] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_adapters_") as tmp:
        for index, measurement in enumerate(schedule):
            case = measurement.case(args.quick)
            repeats = args.repeats if args.repeats is not None else measurement.repeats
            out_dir = Path(tmp) / f"{index:02d}-{measurement.name}"
            out_dir.mkdir()
            if args.wait_idle > 0:
                load = wait_for_quiet_machine(args.wait_idle)
                if load is not None:
                    print(f"machine load before start: {load:.0%}", file=sys.stderr)
            print(
                f"running {measurement.name} (nt={case.nt}, {repeats} timed repeat(s))...",
                file=sys.stderr,
                flush=True,
            )
            new = launch_worker(measurement, case, repeats, args.threads, out_dir)
            if measurement.config == "interleaved":
                results[measurement.name] = summarise_interleaved(new)
                print(
                    "  overhead over the core (median of paired rounds): "
                    + ", ".join(
                        f"{c} {100 * new['per_config'][c]['overhead_paired_median']:+.1f} %"
                        for c in INTERLEAVED[1:]
                    ),
                    file=sys.stderr,
                    flush=True,
                )
                continue
            earlier = raw.get(measurement.name)
            raw[measurement.name] = new if earlier is None else merge_rounds(earlier, new)
            results[measurement.name] = summarise(dict(raw[measurement.name]))
            print(
                f"  best {min(new['times']):.3f} s (first {new['first_s'][0]:.2f} s) on CPU "
                f"{new['cpus'][0]}, peak RSS {new['peak_rss_mib']:.0f} MiB; over all rounds "
                f"{results[measurement.name]['mcells_per_s']:.1f} Mcells/s "
                f"[{time.perf_counter() - started:.0f} s elapsed]",
                file=sys.stderr,
                flush=True,
            )
            if args.json is not None:  # keep what has been measured if a later one fails
                write_json(args.json, machine, args.quick, results)
    print()
    print(render_tables(results, args.quick))
    builds = used_builds(results)
    print(f"compiled builds used: {builds}")
    if len(builds.get("sweep", [])) > 1:
        print("WARNING: sweep's compiled extension changed during the run")
    if args.json is not None:
        print(f"results written to {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
