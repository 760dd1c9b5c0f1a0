"""Benchmark sweep's VRZ and LSRTM propagators against Deepwave 0.1.0 on the CPU.

Peers, on the same grid, shots, steps, order and CPML:

* ``vrz``: ``sweep.vrz(vp, z)`` against ``deepwave.acoustic(v, rho)``
  (Deepwave's variable-density acoustic propagator, first order in
  velocity-pressure on a staggered grid);
* ``lsrtm``: ``sweep.lsrtm(vp, mp)`` against ``deepwave.scalar_born(v, scatter=...)``.

Each is timed forward only and forward + gradient of every model (``sweep.vjp``
on torch tensors / ``torch.autograd.grad`` for Deepwave).  Implementations:

* ``c``: sweep's compiled kernels against Deepwave's (``backend="compiled"``);
  skipped while the equation has no compiled kernels;
* ``eager``: ``PropTorch(equation, impl="eager")`` under ``torch.compile``
  (``EagerOptions(use_compile=True)``) against Deepwave's ``torch.compile``
  backend (``backend="torch_compile"``), with fewer steps.

Every measurement runs in its own subprocess with ``--threads`` threads
(OpenMP, torch, sweep ``n_threads``) pinned to the least busy CPUs: one
untimed warm-up call (reported as ``first``; it includes compilation), then
the best of ``--repeats`` calls.  Throughput is
``Mcells/s = model cells * nt * shots / seconds / 1e6``; the table's ratio is
Deepwave's time over sweep's, measured in the same run.

    PYTHONPATH=. python benchmarks/bench_equations.py --quick
    PYTHONPATH=. python benchmarks/bench_equations.py --json benchmarks/results_equations.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

CASES = {
    # name: (shape, nt for c, nt for eager)
    "2d": ((300, 1000), 2000, 200),
    "3d": ((128, 128, 128), 200, 20),
}


@dataclass
class Measurement:
    equation: str
    case: str
    lib: str  # "sweep" or "deepwave"
    impl: str  # "c" or "eager"
    mode: str  # "fwd" or "grad"


def _problem(case: str, impl: str, quick: bool, nt: int | None = None):
    import numpy as np
    import torch

    shape, nt_c, nt_eager = CASES[case]
    nt = nt or (nt_c if impl == "c" else nt_eager)
    if quick:
        shape = tuple(max(24, s // 4) for s in shape)
        nt = max(20, nt // 10)
    rng = np.random.default_rng(0)
    ndim = len(shape)
    vp = (2000.0 + 1000.0 * rng.random(shape)).astype(np.float32)
    rho = (1500.0 + 500.0 * rng.random(shape)).astype(np.float32)
    mp = (0.05 * rng.standard_normal(shape)).astype(np.float32)
    n_shots = 4 if ndim == 2 else 1
    x = np.linspace(10, shape[-1] - 10, n_shots).astype(np.int64)
    src = np.zeros((n_shots, 1, ndim), np.int64)
    src[:, 0, 0] = 2
    src[:, 0, -1] = x
    if ndim == 3:
        src[:, 0, 1] = shape[1] // 2
    xr = np.arange(0, shape[-1], 4)
    rec = np.zeros((n_shots, len(xr), ndim), np.int64)
    rec[..., 0] = 2
    rec[..., -1] = xr
    if ndim == 3:
        rec[..., 1] = shape[1] // 2
    dt = 1e-3 if ndim == 2 else 8e-4
    t = np.arange(nt) * dt - 0.1
    arg = (np.pi * 10.0 * t) ** 2
    wavelet = ((1 - 2 * arg) * np.exp(-arg)).astype(np.float32)
    amp = np.tile(wavelet, (n_shots, 1, 1))
    return {
        "vp": torch.from_numpy(vp), "rho": torch.from_numpy(rho), "mp": torch.from_numpy(mp),
        "src": torch.from_numpy(src), "rec": torch.from_numpy(rec),
        "amp": torch.from_numpy(amp), "dx": 10.0, "dt": dt, "nt": nt,
        "cells": int(np.prod(shape)) * nt * n_shots,
    }  # fmt: skip


COMMON = {"accuracy": 8, "pml_width": 20, "pml_freq": 10.0}


def _sweep_call(m: Measurement, p: dict, threads: int):
    import torch

    import sweep
    from sweep.propagator.options import EagerOptions
    from sweep.propagator.torch import PropTorch

    max_vel = float(p["vp"].max())
    models = [p["vp"], p["vp"] * p["rho"]] if m.equation == "vrz" else [p["vp"], p["mp"]]
    if m.impl == "c":
        kw = dict(COMMON, max_vel=max_vel, source_locations=p["src"].numpy(),
                  receiver_locations=p["rec"].numpy(), n_threads=threads, impl="c")  # fmt: skip
        fn = sweep.vrz if m.equation == "vrz" else sweep.lsrtm
        np_models = [x.numpy() for x in models]
        amp = p["amp"].numpy()
        if m.mode == "fwd":
            return lambda: fn(*np_models, p["dx"], p["dt"], source_amplitudes=amp, **kw).receivers

        def grad():
            out, pullback = sweep.vjp(fn, *np_models, p["dx"], p["dt"], source_amplitudes=amp, **kw)
            return pullback(out.receivers)

        return grad
    prop = PropTorch(
        m.equation, grid_spacing=p["dx"], dt=p["dt"], source_locations=p["src"],
        receiver_locations=p["rec"], max_vel=max_vel, impl="eager",
        eager_options=EagerOptions(use_compile=True), **COMMON,
    )  # fmt: skip
    if m.mode == "fwd":

        def fwd():
            with torch.no_grad():
                return prop(*models, source_amplitudes=p["amp"])

        return fwd
    leaves = [x.clone().requires_grad_(True) for x in models]

    def grad():
        out = prop(*leaves, source_amplitudes=p["amp"])
        return torch.autograd.grad(out, leaves, out.detach())

    return grad


def _deepwave_call(m: Measurement, p: dict):
    import deepwave
    import torch

    backend = "compiled" if m.impl == "c" else "torch_compile"
    kw = dict(COMMON, max_vel=float(p["vp"].max()), backend=backend,
              location_interpolation="none", check_output_finite=False)  # fmt: skip
    vp = p["vp"].clone().requires_grad_(m.mode == "grad")
    if m.equation == "vrz":
        second = p["rho"].clone().requires_grad_(m.mode == "grad")

        def run():
            out = deepwave.acoustic(
                vp, second, p["dx"], p["dt"], source_amplitudes_p=p["amp"],
                source_locations_p=p["src"], receiver_locations_p=p["rec"], **kw,
            )  # fmt: skip
            return out[-1]
    else:
        second = (p["vp"] * p["mp"]).clone().requires_grad_(m.mode == "grad")

        def run():
            out = deepwave.scalar_born(
                vp, p["dx"], p["dt"], scatter=second, source_amplitudes=p["amp"],
                source_locations=p["src"], receiver_locations=p["rec"], **kw,
            )  # fmt: skip
            return out[-1]

    if m.mode == "fwd":

        def fwd():
            with torch.no_grad():
                return run()

        return fwd

    def grad():
        out = run()
        return torch.autograd.grad(out, [vp, second], out.detach())

    return grad


def worker(m: Measurement, threads: int, repeats: int, quick: bool, nt: int | None = None) -> dict:
    """Run one measurement in this process; return its timings."""
    import torch

    torch.set_num_threads(threads)
    p = _problem(m.case, m.impl, quick, nt)
    call = _sweep_call(m, p, threads) if m.lib == "sweep" else _deepwave_call(m, p)
    t0 = time.perf_counter()
    call()
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return {**asdict(m), "first_s": first, "best_s": best, "nt": p["nt"],
            "mcells_s": p["cells"] / best / 1e6}  # fmt: skip


def _least_busy(n: int) -> list[int]:
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[:n]


def main(argv: list[str] | None = None) -> None:
    """Run every measurement in its own subprocess and print a table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--equations", default="vrz,lsrtm")
    ap.add_argument("--cases", default="2d,3d")
    ap.add_argument("--impls", default="c,eager")
    ap.add_argument("--modes", default="fwd,grad")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true")
    # Deepwave keeps every step of both Born fields for its gradient: the 2D
    # case at nt 2000 needs ~23 GB, so gradients on small machines take fewer.
    ap.add_argument("--nt", type=int, help="time steps, instead of the case's")
    ap.add_argument("--json")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        os.sched_setaffinity(0, _least_busy(args.threads))
        m = Measurement(**json.loads(args.worker))
        print(json.dumps(worker(m, args.threads, args.repeats, args.quick, args.nt)))
        return
    import sweep
    from sweep import equations

    results = []
    for eq in args.equations.split(","):
        for case in args.cases.split(","):
            for impl in args.impls.split(","):
                if impl == "c" and not equations.get(eq).compiled:
                    print(f"# {eq} {case}: no compiled kernels in this sweep, c skipped")
                    continue
                for mode in args.modes.split(","):
                    pair = {}
                    for lib in ("sweep", "deepwave"):
                        m = Measurement(eq, case, lib, impl, mode)
                        env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
                        cmd = [
                            sys.executable,
                            __file__,
                            "--worker",
                            json.dumps(asdict(m)),
                            "--threads",
                            str(args.threads),
                            "--repeats",
                            str(args.repeats),
                        ]
                        cmd += ["--quick"] if args.quick else []  # fmt: skip
                        cmd += ["--nt", str(args.nt)] if args.nt else []  # fmt: skip
                        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
                        if proc.returncode:
                            print(f"# {m}: failed\n{proc.stderr[-2000:]}")
                            continue
                        r = json.loads(proc.stdout.strip().splitlines()[-1])
                        pair[lib] = r
                        results.append(r)
                    if len(pair) == 2:
                        s, d = pair["sweep"], pair["deepwave"]
                        print(f"| {eq} | {case} | {impl} | {mode} | nt {s['nt']} | "
                              f"sweep {s['best_s']:.3f} s ({s['mcells_s']:.0f} Mcells/s, first "
                              f"{s['first_s']:.1f} s) | deepwave {d['best_s']:.3f} s "
                              f"({d['mcells_s']:.0f} Mcells/s, first {d['first_s']:.1f} s) | "
                              f"ratio {d['best_s'] / s['best_s']:.2f}x |", flush=True)  # fmt: skip
                    if args.json:
                        with open(args.json, "w") as f:
                            json.dump({"sweep": sweep.__file__, "threads": args.threads,
                                       "results": results}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
