"""Benchmark sweep's compiled Maxwell propagators against TIDE 0.1.2 on the CPU.

Peers, on the same grid, shots, steps, order (TIDE's ``stencil``), CPML width
(both pad it outside the model), dtype (float32) and threads:

* ``tm2d``: ``sweep.tm2d(..., impl="c")`` against
  ``tide.maxwell.tm2d.maxwelltm``;
* ``mx3d``: ``sweep.maxwell3d(..., impl="c")`` against
  ``tide.maxwell.maxwell3d.maxwell3d`` (an ``ey`` dipole, ``ey`` receivers).

(The functions that TIDE's public operators ``tide.MaxwellTM`` and
``tide.Maxwell3D`` call, with their defaults: the "physical current" source
convention, device storage.)  TIDE runs its native C/OpenMP backend
(``python_backend="native"``, ``fallback="error"``: it raises rather than
fall back to its PyTorch reference code) with ``n_threads`` threads.

Modes: ``fwd`` (forward only) and ``grad`` (forward + gradient, the
cotangent the receiver data itself): ``sweep.vjp`` of every model and the
sources, full storage; TIDE ``torch.autograd.grad`` with respect to
``epsilon`` and ``sigma`` (its native path has no ``mu`` gradient, so
sweep does a little more work), its default device storage.

The media are homogeneous and lossy (epsilon 9, sigma 2e-3 S/m, mu 1), a
Ricker wavelet of 400 MHz, dx 1 cm, ``dt`` at 0.8 of sweep's CFL limit
(TIDE's own check, the order-2 limit, is looser, so TIDE does not resample
the time axis).  Both read a source amplitude as a current (A, a line source
in TM2D; A m, a dipole in 3D) and record ``E_y`` in V/m, so the traces are
compared as they are: the table gives the correlation of the two sets of
traces (all shots and receivers, each pair scaled by the norm of sweep's
trace), the worst single trace's, the lag in samples that maximises it, and
the amplitude ratio TIDE / sweep.

TIDE needs Python >= 3.12; its worker runs under ``--tide-python`` (default
``/work/venvs/tide/bin/python``).  Make such an interpreter with::

    python3.12 -m venv /work/venvs/tide
    /work/venvs/tide/bin/pip install tide-GPR==0.1.2

(it pulls ``torch>=2.12``; its CUDA build runs on the CPU).  sweep's worker
runs under the interpreter running this script.

Every measurement runs in its own subprocess, sweep and TIDE alternating
(``--rounds`` pairs per case), with ``--threads`` threads (OpenMP, torch,
the libraries' ``n_threads``) pinned to the first CPUs this process may use:
one untimed warm-up (``first``), then the best of ``--repeats`` calls.
``Mcells/s = interior cells * nt * shots / seconds / 1e6``; the ratio is
TIDE's best time over sweep's, per round.

    python -P benchmarks/bench_tide.py --quick --repeats 1
    /work/scratch/quiet.sh python -P benchmarks/bench_tide.py --json benchmarks/results_tide.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# name: (ndim, shape, (nt forward, nt gradient), shots, order, pml).  Each
# call takes ~0.3-5 s on two threads; the gradients' nt keeps the full
# storage to ~3 GB.
CASES = {
    "tm2d-o4": (2, (400, 400), (1000, 250), 4, 4, 20),
    "tm2d-o8": (2, (256, 512), (1000, 300), 2, 8, 20),
    "mx3d-o4": (3, (80, 80, 80), (200, 40), 1, 4, 10),
    "mx3d-o2": (3, (64, 96, 112), (160, 32), 1, 2, 10),
}
EPS, SIGMA, F0, DX = 9.0, 2e-3, 4e8, 0.01
STAG_SUM = {2: 1.0, 4: 9 / 8 + 1 / 24, 6: 75 / 64 + 25 / 384 + 3 / 640}
STAG_SUM[8] = 1225 / 1024 + 245 / 3072 + 49 / 5120 + 5 / 7168


def _problem(case: str, mode: str, quick: bool) -> dict:
    """The case's arrays (NumPy, float32) and sizes; the same for both libraries."""
    import numpy as np

    ndim, shape, nts, shots, order, pml = CASES[case]
    nt = nts[mode == "grad"]
    if quick:
        shape = tuple(max(24, s // 4) for s in shape)
        nt = max(20, nt // 4)
    c = 299792458.0 / np.sqrt(EPS)
    dt = 0.8 / (c * np.sqrt(ndim) / DX * STAG_SUM[order])
    t = np.arange(nt) * dt - 1.2 / F0
    arg = (np.pi * F0 * t) ** 2
    wavelet = ((1 - 2 * arg) * np.exp(-arg)).astype(np.float32)
    mid = [s // 2 for s in shape[1:-1]]
    xs = np.linspace(shape[-1] // 4, 3 * shape[-1] // 4, shots).astype(np.int64)
    src = np.zeros((shots, 1, ndim), np.int64)
    src[:, 0, 0] = 4
    src[:, 0, 1:-1] = mid
    src[:, 0, -1] = xs
    xr = np.arange(2, shape[-1] - 2, 4)
    rec = np.zeros((shots, len(xr), ndim), np.int64)
    rec[..., 0] = 2
    rec[..., 1:-1] = mid
    rec[..., -1] = xr
    full = [np.full(shape, v, np.float32) for v in (EPS, SIGMA, 1.0)]
    return {
        "models": full, "src": src, "rec": rec, "amp": np.tile(wavelet, (shots, 1, 1)),
        "dt": float(dt), "nt": nt, "order": order, "pml": pml, "ndim": ndim,
        "cells": int(np.prod(shape)) * nt * shots,
    }  # fmt: skip


def _sweep_call(p: dict, mode: str, threads: int):
    import sweep

    fn = sweep.tm2d if p["ndim"] == 2 else sweep.maxwell3d
    kw = dict(source_amplitudes=p["amp"], source_locations=p["src"],
              receiver_locations=p["rec"], accuracy=p["order"], pml_width=p["pml"],
              impl="c", n_threads=threads)  # fmt: skip

    def fwd():
        return fn(*p["models"], DX, p["dt"], **kw).receivers

    def grad():
        out, pullback = sweep.vjp(fn, *p["models"], DX, p["dt"], **kw)
        pullback(out.receivers)
        pullback.release()
        return out.receivers

    return fwd if mode == "fwd" else grad


def _tide_call(p: dict, mode: str, threads: int):
    import torch
    from tide.maxwell.maxwell3d import maxwell3d
    from tide.maxwell.tm2d import maxwelltm

    fn = maxwelltm if p["ndim"] == 2 else maxwell3d
    eps, sigma, mu = (torch.from_numpy(m) for m in p["models"])
    kw = dict(stencil=p["order"], pml_width=p["pml"], python_backend="native",
              fallback="error", n_threads=threads)  # fmt: skip
    args = (torch.from_numpy(p["amp"]), torch.from_numpy(p["src"]), torch.from_numpy(p["rec"]))

    def fwd():
        with torch.no_grad():
            return fn(eps, sigma, mu, DX, p["dt"], *args, **kw)[-1]

    leaves = [eps.clone().requires_grad_(True), sigma.clone().requires_grad_(True)]

    def grad():
        out = fn(*leaves, mu, DX, p["dt"], *args, **kw)[-1]
        torch.autograd.grad(out, leaves, out.detach())
        return out.detach()

    return fwd if mode == "fwd" else grad


def _receivers(out, p: dict):
    """Receiver data as NumPy (shots, receivers, nt), whatever the library's layout."""
    import numpy as np

    a = np.asarray(out.numpy() if hasattr(out, "numpy") else out, np.float64)
    want = (p["src"].shape[0], p["rec"].shape[1], p["nt"])
    if a.shape != want and a.shape == (want[2], want[0], want[1]):
        a = np.moveaxis(a, 0, -1)  # TIDE's time-first layout
    if a.shape != want:
        raise ValueError(f"receiver data of shape {a.shape}, expected {want}")
    return a


def worker(lib: str, case: str, mode: str, threads: int, repeats: int, quick: bool,
           save: str | None) -> dict:  # fmt: skip
    """Run one measurement in this process; return its timings."""
    import numpy as np
    import torch

    torch.set_num_threads(threads)
    p = _problem(case, mode, quick)
    call = (_sweep_call if lib == "sweep" else _tide_call)(p, mode, threads)
    t0 = time.perf_counter()
    out = call()
    first = time.perf_counter() - t0
    if save:
        np.save(save, _receivers(out, p))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    best = min(times)
    return {"lib": lib, "case": case, "mode": mode, "first_s": first, "best_s": best,
            "spread": max(times) / best, "nt": p["nt"], "cells": p["cells"],
            "mcells_s": p["cells"] / best / 1e6}  # fmt: skip


def compare(a, b, max_lag: int = 3) -> dict:
    """Traces ``b`` against ``a`` (same shape, time last), best over small lags.

    Each pair of traces is divided by the norm of ``a``'s, so the strong
    traces near the source do not outweigh the rest; ``corr`` is the
    correlation of all of them together, ``worst`` the lowest of one trace,
    ``amp_ratio`` the least-squares scale of ``b`` on ``a``.
    """
    import numpy as np

    scale = np.sqrt(np.sum(a * a, axis=-1, keepdims=True))
    a, b = a / np.where(scale > 0, scale, 1), b / np.where(scale > 0, scale, 1)
    best = {"corr": -2.0}
    for lag in range(-max_lag, max_lag + 1):
        x = a[..., max(0, -lag) : a.shape[-1] - max(0, lag)]
        y = b[..., max(0, lag) : b.shape[-1] - max(0, -lag)]
        corr = float(np.sum(x * y) / np.sqrt(np.sum(x * x) * np.sum(y * y)))
        if corr > best["corr"]:
            each = np.sum(x * y, -1) / np.sqrt(np.sum(x * x, -1) * np.sum(y * y, -1) + 1e-300)
            best = {"corr": corr, "worst": float(each.min()), "lag": lag,
                    "amp_ratio": float(np.sum(x * y) / np.sum(x * x))}  # fmt: skip
    return best


def _least_busy(n: int) -> list[int]:
    return sorted(os.sched_getaffinity(0))[:n]


def main(argv: list[str] | None = None) -> None:
    """Run every measurement in its own subprocess and print a table."""
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    ap.add_argument("--modes", default="fwd,grad", help="fwd, grad or both")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3, help="timed calls after the warm-up")
    ap.add_argument("--rounds", type=int, default=1, help="sweep / TIDE process pairs per case")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--tide-python", default="/work/venvs/tide/bin/python",
                    help="a Python >= 3.12 with tide-GPR 0.1.2")  # fmt: skip
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    cases, modes = args.cases.split(","), args.modes.split(",")
    for name, known in (("--cases", CASES), ("--modes", ("fwd", "grad"))):
        bad = [c for c in (cases if name == "--cases" else modes) if c not in known]
        if bad:
            ap.error(f"{name}: unknown {bad}; choose from {', '.join(known)}")
    if args.worker:
        os.sched_setaffinity(0, _least_busy(args.threads))
        lib, case, mode = args.worker.split(":")
        r = worker(lib, case, mode, args.threads, args.repeats, args.quick, args.save)
        print(json.dumps(r))
        return
    if not os.path.exists(args.tide_python):
        ap.error(f"--tide-python {args.tide_python} does not exist; see --help to make one")
    import numpy as np

    import sweep

    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    results, summary = [], []
    tmp_dir = tempfile.TemporaryDirectory(prefix="bench_tide_")  # the traces, removed at exit
    tmp = tmp_dir.name
    for case in cases:
        for mode in modes:
            ratios, pair, traces = [], {}, {}
            for rnd in range(args.rounds):
                for lib in ("sweep", "tide"):
                    python = sys.executable if lib == "sweep" else args.tide_python
                    cmd = [python, __file__, "--worker", f"{lib}:{case}:{mode}", "--threads",
                           str(args.threads), "--repeats", str(args.repeats)]  # fmt: skip
                    cmd += ["--quick"] if args.quick else []
                    if rnd == 0 and mode == "fwd":
                        traces[lib] = os.path.join(tmp, f"{lib}_{case}.npy")
                        cmd += ["--save", traces[lib]]
                    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
                    if proc.returncode:
                        print(f"# {lib} {case} {mode}: failed\n{proc.stderr[-3000:]}", flush=True)
                        pair.pop(lib, None)
                        continue
                    r = json.loads(proc.stdout.strip().splitlines()[-1])
                    r["round"] = rnd
                    results.append(r)
                    pair[lib] = r
                if len(pair) == 2:
                    s, t = pair["sweep"], pair["tide"]
                    ratios.append(t["best_s"] / s["best_s"])
                    print(f"| {case} | {mode} | nt {s['nt']} | sweep {s['best_s']:.3f} s "
                          f"({s['mcells_s']:.0f} Mcells/s, x{s['spread']:.2f}, first "
                          f"{s['first_s']:.2f} s) | TIDE {t['best_s']:.3f} s "
                          f"({t['mcells_s']:.0f} Mcells/s, x{t['spread']:.2f}, first "
                          f"{t['first_s']:.2f} s) | TIDE / sweep {ratios[-1]:.2f}x |",
                          flush=True)  # fmt: skip
            row = {"case": case, "mode": mode, "ratios": ratios}
            if len(traces) == 2 and all(os.path.exists(f) for f in traces.values()):
                row.update(compare(np.load(traces["sweep"]), np.load(traces["tide"])))
                print(f"# {case}: traces TIDE vs sweep: correlation {row['corr']:.6f} (worst "
                      f"trace {row['worst']:.4f}) at lag {row['lag']} samples, amplitude "
                      f"ratio {row['amp_ratio']:.4f}", flush=True)  # fmt: skip
            summary.append(row)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"sweep": sweep.__file__, "tide_python": args.tide_python,
                               "threads": args.threads, "repeats": args.repeats,
                               "quick": args.quick, "cases": {k: CASES[k] for k in cases},
                               "summary": summary, "results": results}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
