"""This machine's ceiling for two single-threaded shot groups at once, with no engine.

Runs the scaling problem's group of ``bench_distributed.py`` (8 shots, one
thread, boundary saving) in one process alone, then in two processes started
together (a barrier before every timed call).  ``T(alone) / T(pair)`` is the
best efficiency any engine (Dask, torch.distributed, OpenMP) can reach with
two such groups on this machine: what the two computations cost each other
through shared caches, memory bandwidth and clocks.

    PYTHONPATH=. python benchmarks/parallel_ceiling.py [--rounds 2] [--repeats 4] [--pin]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _work(barrier: Any, out: Any, repeats: int, core: int | None) -> None:
    import os

    if core is not None:
        os.sched_setaffinity(0, {core})
    import bench_distributed as bench

    problem = bench.problem(n_shots=bench.N_SHOTS // 2)
    bench.serial_gradient(problem, 1)  # warm-up: first-touch memory, planner
    times = []
    for _ in range(repeats):
        if barrier is not None:
            barrier.wait()
        t0 = time.perf_counter()
        bench.serial_gradient(problem, 1)
        times.append(time.perf_counter() - t0)
    out.put(times)


def _run(n_processes: int, repeats: int, pin: bool = False) -> list[float]:
    """Per timed call, the slowest process's time; ``pin``: process i on core i."""
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n_processes) if n_processes > 1 else None
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_work, args=(barrier, out, repeats, i if pin else None))
        for i in range(n_processes)
    ]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return [max(ts) for ts in zip(*results, strict=True)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument(
        "--pin", action="store_true", help="pin process i to core i (os.sched_setaffinity)"
    )
    args = parser.parse_args()
    for r in range(args.rounds):
        alone, pair = _run(1, args.repeats, args.pin), _run(2, args.repeats, args.pin)
        print(
            f"round {r + 1}{' (pinned)' if args.pin else ''}: "
            f"alone best {min(alone):.3f} s, median {statistics.median(alone):.3f}; "
            f"pair best {min(pair):.3f} s, median {statistics.median(pair):.3f}; "
            f"ceiling best {min(alone) / min(pair):.3f}, "
            f"median {statistics.median(alone) / statistics.median(pair):.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
