"""How much each library's absorbing layer reflects, at equal layer widths.

sweep and Deepwave absorb with a C-PML, Devito's seismic examples with a
damping sponge (cheaper per cell, which matters for the speed comparison of
``bench_acoustic.py``).  This measures what each buys: a 2-D homogeneous
model (2000 m/s, 10 m cells, 100 x 200 cells, order 8, 15 Hz Ricker, dt 1 ms,
600 steps) with a source inside and receivers along a line 5 cells below the
top edge and a column 5 cells from the left edge, run once with the layer
under test and once inside a model 300 cells larger on every side (same
layer), whose edges are too far for any reflection to return within the
run.  The reflection error is ``||d - d_ref|| / ||d_ref||`` over all
receivers and samples: everything the layer sends back, relative to the
direct wave.  Each library runs in its own subprocess (Devito in
``SWEEP_BENCH_DEVITO_PYTHON``, see ``bench_acoustic.py``).

    PYTHONPATH=. python benchmarks/absorbing_layers.py [--widths 10,20,40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_acoustic as bench

SHAPE = (100, 200)
MARGIN = 300
NT = 600
SOURCE = (40, 120)


def _problem(margin: int) -> tuple[bench.Case, dict[str, np.ndarray]]:
    shape = (SHAPE[0] + 2 * margin, SHAPE[1] + 2 * margin)
    case = bench.Case("reflections", shape, 10.0, 1e-3, NT, 1, 8, False)
    row = np.stack([np.full(SHAPE[1], 5), np.arange(SHAPE[1])], axis=-1)
    rows = np.delete(np.arange(SHAPE[0]), 5)  # (5, 5) is on the row already
    column = np.stack([rows, np.full(rows.size, 5)], axis=-1)
    receivers = np.concatenate([row, column]) + margin
    problem = {
        "v": np.full(shape, 2000.0, np.float32),
        "source_amplitudes": bench.ricker(bench.PEAK_FREQ, NT, case.dt)[None, None],
        "source_locations": (np.array(SOURCE) + margin)[None, None].astype(np.int64),
        "receiver_locations": receivers[None].astype(np.int64),
    }
    return case, problem


def run_worker(library: str, widths: list[int]) -> dict[str, float]:
    """Reflection error of ``library`` for each layer width (in this process)."""
    factory = {
        "sweep": bench.make_sweep_runner,
        "deepwave": bench.make_deepwave_runner,
        "devito": bench.make_devito_runner,
    }[library]
    errors = {}
    for width in widths:
        small = factory(*_problem(0), pml_width=width)()["receivers"].astype(np.float64)
        ref = factory(*_problem(MARGIN), pml_width=width)()["receivers"].astype(np.float64)
        errors[str(width)] = float(np.linalg.norm(small - ref) / np.linalg.norm(ref))
    return errors


def main(argv: list[str] | None = None) -> int:
    """Run every library's worker and print a markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--widths", default="10,20,40", help="layer widths in cells")
    parser.add_argument("--libs", default="sweep,deepwave,devito")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    widths = [int(w) for w in args.widths.split(",")]
    if args.worker:
        print(json.dumps(run_worker(args.worker, widths)))
        return 0
    results = {}
    for library in args.libs.split(","):
        if library == "devito" and (why := bench.devito_available()) is not None:
            print(f"skipping Devito: {why}", file=sys.stderr)
            continue
        python = bench.devito_python() if library == "devito" else sys.executable
        env = dict(os.environ, DEVITO_LANGUAGE="openmp", DEVITO_LOGGING="ERROR")
        command = [python, os.path.abspath(__file__), "--worker", library, "--widths", args.widths]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{library} worker failed:\n{done.stderr[-3000:]}")
        results[library] = json.loads(done.stdout.strip().splitlines()[-1])
    print("| layer width [cells] | " + " | ".join(bench.LABELS[lib] for lib in results) + " |")
    print("|---:" + "|---:" * len(results) + "|")
    for w in widths:
        cells = " | ".join(f"{results[lib][str(w)]:.2e}" for lib in results)
        print(f"| {w} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
