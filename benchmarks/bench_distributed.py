"""Shot-parallel scaling of ``sweep.distributed`` on one machine, and the engines' overheads.

Two measurements (see the "Distributed" section of benchmarks/README.md):

``scaling``
    A 2D FWI gradient of 16 shots (misfit, residual and velocity gradient;
    100 x 300 cells + 20 of CPML, 2500 steps, boundary saving by default,
    ``--memory full`` for full storage): one process with 1 and with 2
    OpenMP threads (``sweep.vjp``), against a Dask ``LocalCluster`` of 2
    worker processes x 1 thread (``sweep.distributed.gradient``, one group
    of 8 shots per worker; and again with each group's observed data read
    on its worker from a ``.npy`` file, ``observed=NpyLoader(path)``), and
    one group of 8 shots on 1 thread in this process (the compute per
    group).  The variants alternate within each
    round (the order reversed every other round), each timed ``--repeats``
    times after an untimed warm-up call; ``--wait-idle`` waits for a quiet
    machine before each round.  Efficiency = T(1 process, 1 thread) /
    (2 x T(2 workers)).  The cluster is ``sweep.distributed.local_client``'s:
    ``QUIET_DASK_CONFIG``, each worker pinned to its own core where 2 are
    all there are (``--no-pin``: not pinned; ``--dask-config default``: a
    plain ``LocalCluster``, Dask's own settings).

``overhead``
    Per-call costs of each engine on loopback for 1, 2 and 4 workers or
    ranks, with no propagation in them: sending a model to every worker
    (as ``gradient`` does: one task returning it, read by a task on each
    worker), the launch and return of one no-op task per worker, the fixed
    tree reduction of one model-size gradient per worker, and a whole
    ``sweep.distributed.gradient`` call on a tiny problem; torch.distributed
    (gloo): broadcast of the model, a barrier, and an all-reduce of a
    model-size gradient.

Run from the checkout, on an otherwise idle machine::

    PYTHONPATH=. python benchmarks/bench_distributed.py --json benchmarks/results_distributed.json
    PYTHONPATH=. python benchmarks/bench_distributed.py --quick     # a smoke run

Needs ``dask[distributed]`` (and torch for the torch.distributed overheads).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import sweep
from sweep.distributed import (
    QUIET_DASK_CONFIG,
    NpyLoader,
    _model_task,
    gradient,
    l2_misfit,
    local_client,
)
from sweep.models import ricker, surface_acquisition, synthetic_model

# The coarse benchmark grid's dispersion warning, once per call, would bury the output.
warnings.filterwarnings("ignore", "only .* cells per wavelength")

# The scaling problem: 2D, 16 shots.
SHAPE = (100, 300)
SPACING = 10.0
DT = 1e-3
NT = 2500
FREQ = 10.0
N_SHOTS = 16
ACCURACY = 4


def problem(shape=SHAPE, nt=NT, n_shots=N_SHOTS, memory: str = "boundary") -> dict[str, Any]:
    """Model, observed data and geometry of the scaling gradient."""
    from sweep.propagator.options import BoundaryOptions, MemoryOptions

    v_true = synthetic_model(shape, spacing=SPACING)
    v = sweep.models.smooth(v_true, 8.0)
    src, rec = surface_acquisition(shape, n_shots=n_shots, receiver_spacing=2)
    amp = np.tile(ricker(FREQ, nt, DT), (n_shots, 1, 1))
    geometry = dict(
        source_amplitudes=amp,
        source_locations=src,
        receiver_locations=rec,
        accuracy=ACCURACY,
        pml_freq=FREQ,
        max_vel=4500.0,
    )
    observed = sweep.acoustic(v_true, SPACING, DT, **geometry).receivers
    if memory == "boundary":  # little memory: 2.9 GB of snapshots per call otherwise
        geometry["memory"] = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())
    return {"v": v, "observed": observed, "geometry": geometry}


def serial_gradient(p: dict[str, Any], n_threads: int) -> tuple[float, np.ndarray]:
    """Loss and velocity gradient of every shot in this process."""
    out, pullback = sweep.vjp(
        sweep.acoustic, p["v"], SPACING, DT, n_threads=n_threads, **p["geometry"]
    )
    loss, residual = l2_misfit(out.receivers, p["observed"])
    grad = pullback(residual)["v"]
    pullback.release()
    return loss, grad


def dask_gradient(
    p: dict[str, Any], client: Any, shots_per_group: int, observed: Any = None
) -> tuple[float, Any]:
    """``sweep.distributed.gradient``; ``observed``: a loader instead of ``p``'s array."""
    loss, grads = gradient(
        sweep.acoustic,
        p["v"],
        grid_spacing=SPACING,
        dt=DT,
        observed=p["observed"] if observed is None else observed,
        client=client,
        shots_per_group=shots_per_group,
        n_threads=1,
        **p["geometry"],
    )
    return loss, grads["v"]


def _timed(fn) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


# "quiet": sweep.distributed.local_client (QUIET_DASK_CONFIG, workers pinned to
# cores when they fill them, unless PIN is False); "default": Dask's own settings.
DASK_CONFIG = "quiet"
PIN: bool | None = None


def _cluster(n_workers: int) -> tuple[Any, Any]:
    import distributed

    kwargs = dict(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=":0",  # any free port: a taken 8787 only warns, but noisily
        silence_logs=logging.ERROR,
    )
    if DASK_CONFIG == "quiet":
        client = local_client(**kwargs, pin=PIN, set_as_default=False)
        return client.cluster, client
    cluster = distributed.LocalCluster(**kwargs)
    return cluster, distributed.Client(cluster, set_as_default=False)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _busy() -> float | None:
    """Busy CPU seconds of the whole machine since boot (all cores), from /proc/stat."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_idle(max_wait_s: float, threshold: float = 0.15) -> float | None:
    """Wait (up to ``max_wait_s``) until the machine is less than ``threshold`` busy."""
    deadline = time.monotonic() + max_wait_s
    while True:
        before = _busy()
        time.sleep(1.0)
        after = _busy()
        if before is None or after is None:
            return None
        load = (after - before) / (os.cpu_count() or 1)
        if load < threshold or time.monotonic() >= deadline:
            return round(load, 3)


def _cpu(client: Any) -> float:
    """CPU seconds used so far by this process and by the cluster's worker processes."""
    own = os.times()
    workers = client.run(lambda: sum(os.times()[:2]))
    return own.user + own.system + sum(workers.values())


def scaling(
    rounds: int, repeats: int, quick: bool, memory: str, idle_s: float, nt: int = NT
) -> dict[str, Any]:
    """Time the variants, alternating them within each round.

    Each timed call also records the machine's busy fraction during it (all
    processes) and the cores it obtained (CPU seconds of this process and of
    the workers over wall seconds): a run that obtained fewer cores than its
    threads was slowed down by other work on the machine.
    """
    p = problem(shape=(50, 150), nt=400, memory=memory) if quick else problem(nt=nt, memory=memory)
    group = N_SHOTS // 2
    one_group = {
        **p,
        "observed": p["observed"][:group],
        "geometry": {
            k: (v[:group] if k.startswith(("source", "receiver")) else v)
            for k, v in p["geometry"].items()
        },
    }
    # The loader variant reads each group's observed data on its worker from this file.
    data_dir = tempfile.TemporaryDirectory(prefix="sweep_bench_")
    np.save(Path(data_dir.name) / "observed.npy", p["observed"])
    loader = NpyLoader(Path(data_dir.name) / "observed.npy")
    cluster, client = _cluster(2)
    times: dict[str, list[float]] = {
        "serial_1thread": [],
        "serial_2threads": [],
        "dask_2x1": [],
        "dask_2x1_loader": [],
        "group_1thread": [],
    }
    busy: dict[str, list[float]] = {k: [] for k in times}
    cores: dict[str, list[float]] = {k: [] for k in times}
    quiet = []
    results = {}
    try:
        variants = {
            "serial_1thread": lambda: serial_gradient(p, 1),
            "serial_2threads": lambda: serial_gradient(p, 2),
            "dask_2x1": lambda: dask_gradient(p, client, group),
            "dask_2x1_loader": lambda: dask_gradient(p, client, group, loader),
            "group_1thread": lambda: serial_gradient(one_group, 1),
        }
        for name, fn in variants.items():  # warm-up: imports, first allocations, tuning
            results[name] = fn()
        for r in range(rounds):
            if idle_s > 0:
                quiet.append(wait_idle(idle_s))
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in order:
                for _ in range(repeats):
                    before, cpu0 = _busy(), _cpu(client)
                    t, _ = _timed(variants[name])
                    after, cpu1 = _busy(), _cpu(client)
                    times[name].append(t)
                    cores[name].append(round((cpu1 - cpu0) / t, 3))
                    if before is not None and after is not None:
                        share = (after - before) / (t * (os.cpu_count() or 1))
                        busy[name].append(round(share, 3))
            best_so_far = ", ".join(f"{k} {min(v):.3f}s" for k, v in times.items())
            print(f"round {r + 1}/{rounds}: {best_so_far}, load {_load()}", flush=True)
    finally:
        client.close()
        cluster.close()
        data_dir.cleanup()
    ref_loss, ref = results["serial_2threads"]
    loss, g = results["dask_2x1"]
    agree = float(np.abs(g - ref).max() / np.abs(ref).max())
    loss_l, g_l = results["dask_2x1_loader"]
    loader_bitwise = bool(loss_l == loss and np.array_equal(g_l, g))
    best = {k: min(v) for k, v in times.items()}
    median = {k: statistics.median(v) for k, v in times.items()}
    # Samples that got the cores they asked for (95 %): the others shared the machine.
    wanted = {"serial_1thread": 1, "serial_2threads": 2, "dask_2x1": 2, "dask_2x1_loader": 2,
              "group_1thread": 1}  # fmt: skip
    clean = {
        k: [t for t, c in zip(times[k], cores[k], strict=True) if c >= 0.95 * wanted[k]]
        for k in times
    }
    clean_best = {k: min(v) if v else None for k, v in clean.items()}
    clean_eff = None
    if clean_best["serial_1thread"] and clean_best["dask_2x1"]:
        clean_eff = clean_best["serial_1thread"] / (2 * clean_best["dask_2x1"])
    return {
        "problem": {
            "shape": list(p["v"].shape),
            "nt": int(p["observed"].shape[-1]),
            "n_shots": int(p["observed"].shape[0]),
            "accuracy": ACCURACY,
            "pml_width": 20,
            "shots_per_group": group,
        },
        "memory": memory,
        "times_s": times,
        "machine_busy_fraction_during_run": busy,
        "cores_obtained_during_run": cores,
        "machine_busy_before_round": quiet,
        "best_s": best,
        "median_s": median,
        "efficiency_best": best["serial_1thread"] / (2 * best["dask_2x1"]),
        "efficiency_median": median["serial_1thread"] / (2 * median["dask_2x1"]),
        "efficiency_loader_best": best["serial_1thread"] / (2 * best["dask_2x1_loader"]),
        "efficiency_loader_median": median["serial_1thread"] / (2 * median["dask_2x1_loader"]),
        "dask_vs_2threads_best": best["serial_2threads"] / best["dask_2x1"],
        "dask_vs_2threads_median": median["serial_2threads"] / median["dask_2x1"],
        "clean_samples_s": clean,
        "clean_best_s": clean_best,
        "efficiency_clean_best": clean_eff,
        "loss_relative_difference": abs(loss - ref_loss) / ref_loss,
        "gradient_max_difference_over_max": agree,
        "loader_bitwise_equal_to_array": loader_bitwise,
    }


# -- overheads ----------------------------------------------------------------------------------
def _median_time(fn, n: int) -> float:
    fn()  # warm
    return statistics.median(_timed(fn)[0] for _ in range(n))


def _part(model: np.ndarray, i: int) -> dict[str, Any]:
    """One worker's stand-in gradient (a model-size array) for the reduction timing."""
    return {"loss": 1.0, "v": model + i}


def dask_overheads(workers: int, sizes: list[int], n: int) -> dict[str, Any]:
    import dask

    from sweep.distributed import _combine

    cluster, client = _cluster(workers)
    out: dict[str, Any] = {"workers": workers}
    # As sweep.distributed.gradient does: a model inside a task is meant to be there.
    large = dask.config.set({"distributed.admin.large-graph-warning-threshold": "1TB"})
    try:
        client.wait_for_workers(workers)
        names = list(client.scheduler_info()["workers"])

        def launch() -> None:
            futures = [client.submit(int, i, pure=False) for i in range(workers)]
            client.gather(futures)

        out["launch_s"] = _median_time(launch, n)
        for size in sizes:
            model = np.ones(size // 4, np.float32)

            def send(model=model) -> None:
                f = client.submit(_model_task, model, pure=False)
                readers = [
                    client.submit(len, f, pure=False, workers=[w], allow_other_workers=False)
                    for w in names
                ]
                client.gather(readers)

            model_f = [client.submit(_model_task, model, pure=False)]
            client.gather(model_f)

            def reduce(model_f=model_f) -> None:
                parts = [client.submit(_part, model_f[0], i, pure=False) for i in range(workers)]
                level = parts  # the reduction of sweep.distributed.gradient
                while len(level) > 2:
                    pairs = [
                        client.submit(_combine, level[i], level[i + 1], pure=False)
                        for i in range(0, len(level) - 1, 2)
                    ]
                    level = pairs + level[len(pairs) * 2 :]
                last = client.gather(level)
                if len(last) == 2:
                    _combine(*last)

            out[f"send_{size}B_s"] = _median_time(send, n) - out["launch_s"]
            out[f"launch_and_reduce_{size}B_s"] = _median_time(reduce, n)
        tiny = problem(shape=(20, 40), nt=20, n_shots=2 * workers)
        out["tiny_compute_serial_s"] = _median_time(lambda: serial_gradient(tiny, 1), n)
        out["tiny_gradient_call_s"] = _median_time(lambda: dask_gradient(tiny, client, 2), n)
    finally:
        large.__exit__(None, None, None)
        client.close()
        cluster.close()
    return out


def _torch_rank(rank: int, world: int, port: int, sizes: list[int], n: int, queue: Any) -> None:
    import torch
    import torch.distributed as dist

    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    out: dict[str, Any] = {"ranks": world}

    def timed(fn) -> float:
        fn()
        samples = []
        for _ in range(n):
            dist.barrier()
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
        return statistics.median(samples)

    out["barrier_s"] = timed(dist.barrier)
    for size in sizes:
        x = torch.ones(size // 4)
        out[f"broadcast_{size}B_s"] = timed(lambda x=x: dist.broadcast(x, src=0))
        out[f"all_reduce_{size}B_s"] = timed(lambda x=x: dist.all_reduce(x))
    if rank == 0:
        queue.put(out)
    dist.barrier()
    dist.destroy_process_group()


def torch_overheads(world: int, sizes: list[int], n: int) -> dict[str, Any]:
    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.start_processes(
        _torch_rank,
        args=(world, port, sizes, n, queue),
        nprocs=world,
        join=True,
        start_method="spawn",
    )
    return queue.get()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--parts", default="scaling,overhead")
    p.add_argument("--memory", choices=("boundary", "full"), default="boundary")
    p.add_argument(
        "--nt", type=int, default=NT, help=f"time steps of the scaling problem (default {NT})"
    )
    p.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each round, wait up to this long for a quiet machine",
    )
    p.add_argument(
        "--dask-config",
        choices=("quiet", "default"),
        default="quiet",
        help="the workers' Dask settings: sweep.distributed.QUIET_DASK_CONFIG or Dask's defaults",
    )
    p.add_argument(
        "--no-pin", action="store_true", help="quiet config: do not pin the workers to cores"
    )
    p.add_argument("--json", help="write the results here")
    args = p.parse_args(argv)
    global DASK_CONFIG, PIN
    DASK_CONFIG = args.dask_config
    PIN = False if args.no_pin else None
    parts = args.parts.split(",")
    rounds = 1 if args.quick else args.rounds
    result: dict[str, Any] = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": sys.version.split()[0],
            "sweep": sweep.__version__,
            "load_at_start": _load(),
        },
        "command": " ".join(["python", "benchmarks/bench_distributed.py", *sys.argv[1:]]),
        "dask_config": QUIET_DASK_CONFIG if args.dask_config == "quiet" else "Dask's defaults",
        "workers_pinned": args.dask_config == "quiet" and not args.no_pin,
    }
    if "scaling" in parts:
        result["scaling"] = scaling(
            rounds, args.repeats, args.quick, args.memory, args.wait_idle, args.nt
        )
        summary = {
            k: v for k, v in result["scaling"].items() if not k.startswith(("times", "mach"))
        }
        print(json.dumps(summary))
    if "overhead" in parts:
        model_bytes = SHAPE[0] * SHAPE[1] * 4
        sizes = [model_bytes, 32 << 20]
        n = 5 if args.quick else 20
        result["overhead_dask"] = [dask_overheads(w, sizes, n) for w in (1, 2, 4)]
        for row in result["overhead_dask"]:
            print(row, flush=True)
        try:
            result["overhead_torch"] = [torch_overheads(w, sizes, n) for w in (1, 2, 4)]
            for row in result["overhead_torch"]:
                print(row, flush=True)
        except ImportError as exc:
            print(f"torch.distributed overheads skipped: {exc}")
    result["machine"]["load_at_end"] = _load()
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
