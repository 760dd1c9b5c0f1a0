"""Compiled Maxwell (``sweep.tm2d``, ``sweep.maxwell3d``) against acoustic per cell-step, CPU.

Every case runs the compiled kernels (``impl="c"``) on one shot in a
homogeneous lossy medium (epsilon 9, sigma 2e-3 S/m, mu 1; the acoustic
cases a constant velocity) with a source and a line of receivers near the
top, CPML 20 cells on every face (10 in 3D), and reports the best of
``--repeats`` calls after one untimed warm-up, the spread (slowest / best)
and the throughput in model cells times steps per second (Mcells/s, the
padding not counted) and in ns per cell-step, of the whole call and of its
compiled kernels alone (the time inside ``sweep._C.run``: without the
Python set-up, the point terms' maps and the copies of the result).  The
acoustic cases, at the
same size, order and dtype, give the per-cell ratio the Maxwell issue
targets (TM2D within 2x of acoustic 2D).

Cases are named ``EQ-MODE-oORDER-DTYPE``: EQ one of ``tm2d``, ``mx3d``,
``ac2d``, ``ac3d``; MODE ``fwd`` or ``grad`` (forward, then the adjoint
of every model and the sources through :func:`sweep.vjp`, full storage);
e.g. ``tm2d-fwd-o4-f32``.

    PYTHONPATH=. python benchmarks/bench_maxwell.py                 # the default set
    PYTHONPATH=. python benchmarks/bench_maxwell.py tm2d-fwd-o4-f32 ac2d-fwd-o4-f32
    /work/scratch/quiet.sh python -P benchmarks/bench_maxwell.py --repeats 3

Sizes: 2D 440 x 440, nt 400 forward, 200 gradient; 3D 100^3, nt 100 forward,
64^3, nt 60 gradient (full storage of the 3D snapshots takes ~1.3 GB in
float32).  ``--threads N`` (default: every CPU this process may use).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

import sweep

# (shape, nt) by (ndim, mode)
SIZES = {
    (2, "fwd"): ((440, 440), 400),
    (2, "grad"): ((440, 440), 200),
    (3, "fwd"): ((100, 100, 100), 100),
    (3, "grad"): ((64, 64, 64), 60),
}
DEFAULT = [
    f"{eq}-{mode}-o{order}-{dt}"
    for eq in ("tm2d", "ac2d", "mx3d", "ac3d")
    for mode in ("fwd", "grad")
    for order in (4, 8)
    for dt in ("f32", "f64")
]


def _case(name: str, threads: int):
    """Return (call, model cells x steps) of one case."""
    eq, mode, order, dts = name.split("-")
    order = int(order[1:])
    dtype = np.float32 if dts == "f32" else np.float64
    ndim = 3 if eq.endswith("3d") else 2
    shape, nt = SIZES[ndim, mode]
    mid = [s // 2 for s in shape[1:-1]]
    src = np.array([[[4, *mid, shape[-1] // 2]]])
    xr = np.arange(2, shape[-1] - 2, 4)
    rec = np.zeros((1, len(xr), ndim), np.int64)
    rec[..., 0] = 2
    rec[..., 1:-1] = mid
    rec[..., -1] = xr
    pml = 20 if ndim == 2 else 10
    if eq in ("tm2d", "mx3d"):
        dx, f0 = 0.01, 4e8
        dt = 0.8 * dx / (1e8 * np.sqrt(ndim) * 1.3)  # c = c0 / 3: 0.8 of the CFL limit
        models = (np.full(shape, 9.0, dtype), np.full(shape, 2e-3, dtype), np.ones(shape, dtype))
        fn = sweep.tm2d if ndim == 2 else sweep.maxwell3d
    else:
        dx, f0 = 5.0, 15.0
        dt = 0.4 * dx / 2500.0 / np.sqrt(ndim)
        models = (np.full(shape, 2500.0, dtype),)
        fn = sweep.acoustic
    t = np.arange(nt) * dt - 1.2 / f0
    arg = (np.pi * f0 * t) ** 2
    amp = ((1 - 2 * arg) * np.exp(-arg)).astype(dtype)[None, None]
    kw = dict(source_amplitudes=amp, source_locations=src, receiver_locations=rec,
              accuracy=order, pml_width=pml, impl="c", n_threads=threads)  # fmt: skip
    cells = int(np.prod(shape)) * nt

    def fwd():
        return fn(*models, dx, dt, **kw)

    def grad():
        out, pullback = sweep.vjp(fn, *models, dx, dt, **kw)
        g = pullback(np.ones_like(out.receivers))
        pullback.release()
        return g

    return (fwd if mode == "fwd" else grad), cells


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", nargs="*", help="case names (default: all)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")  # dispersion / undersampling warnings of the test sources
    from sweep import _C

    run, in_kernels = _C.run, [0.0]

    def timed_run(*a: object) -> None:
        t0 = time.perf_counter()
        run(*a)
        in_kernels[0] += time.perf_counter() - t0

    _C.run = timed_run
    print(f"{'case':<18} {'best s':>8} {'spread':>7} {'Mcells/s':>9} {'ns/cell':>8} "
          f"{'kernel s':>9} {'ns/cell':>8}")  # fmt: skip
    for name in args.cases or DEFAULT:
        call, cells = _case(name, args.threads)
        call()
        times, kernels = [], []
        for _ in range(args.repeats):
            in_kernels[0] = 0.0
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
            kernels.append(in_kernels[0])
        best, kern = min(times), min(kernels)
        print(f"{name:<18} {best:8.4f} {max(times) / best:7.3f} {cells / best / 1e6:9.1f} "
              f"{best / cells * 1e9:8.3f} {kern:9.4f} {kern / cells * 1e9:8.3f}",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
