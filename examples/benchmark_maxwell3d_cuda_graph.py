"""3D Maxwell on a GPU: the forward loop as CUDA-graph replays against plain launches.

``sweep.maxwell3d(..., experimental_cuda_graph=True)`` captures the forward
loop as a CUDA graph (one per chunk between callbacks) on the first call and
replays it on later calls of the same configuration.  This script times both
ways on the same dipole survey (warm calls: the first of each compiles or
captures) and, with ``--verify``, checks that receivers and final fields are
bitwise equal, with and without a forward callback.  It needs CuPy and a CUDA
GPU.

    python examples/benchmark_maxwell3d_cuda_graph.py --verify
    python examples/benchmark_maxwell3d_cuda_graph.py --shape 96 96 96 --nt 800 --repeats 5
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import sweep
from sweep.models import ricker


def survey(shape: tuple[int, int, int], nt: int, xp) -> tuple[tuple, dict]:
    """Layered ground under air, a dipole per shot near the surface, a line of receivers."""
    nz, ny, nx = shape
    eps = np.full(shape, 4.0)
    eps[: nz // 5] = 1.0  # air
    eps[nz // 2 :] = 9.0  # wetter ground
    sigma = np.where(eps > 1.0, 2e-3, 0.0)
    mu = np.ones(shape)
    dx, dt, freq = 0.02, 3e-11, 500e6
    shots = 2
    src = np.array([[[nz // 5 + 1, ny // 2, nx // 3 + s * nx // 3]] for s in range(shots)])
    xs = np.arange(4, nx - 4, 2)
    rec = np.array([[[nz // 5 + 1, ny // 2, x] for x in xs]] * shots)
    amp = np.tile(ricker(freq, nt, dt, 1.2 / freq), (shots, 1, 1))
    models = tuple(xp.asarray(m, dtype=xp.float32) for m in (eps, sigma, mu))
    kw = dict(
        source_amplitudes=xp.asarray(amp, dtype=xp.float32), source_locations=src,
        receiver_locations=rec, accuracy=4, pml_width=10, source_component="ey",
        receiver_component="ey",
    )  # fmt: skip
    return (*models, dx, dt), kw


def timed(fn, repeats: int, sync) -> tuple[float, object]:
    """Best wall time of ``repeats`` calls of ``fn`` after one untimed call, and its result."""
    out = fn()  # warm-up: compiles the kernels or captures the graphs
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best, out


def main(argv: list[str] | None = None) -> int:
    """Time plain launches and graph replays; with ``--verify``, compare them."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", type=int, nargs=3, default=(64, 64, 64))
    ap.add_argument("--nt", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--verify", action="store_true", help="check graph == no graph bitwise")
    args = ap.parse_args(argv)
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no CuPy, no driver or no device
        print(f"this example needs CuPy and a CUDA GPU ({exc})", file=sys.stderr)
        return 2
    shape = tuple(args.shape)
    positional, kw = survey(shape, args.nt, cupy)
    sync = cupy.cuda.get_current_stream().synchronize
    cells = np.prod(shape) * args.nt * 2

    def run(graph: bool, **more):
        return sweep.maxwell3d(*positional, **kw, experimental_cuda_graph=graph, **more)

    t_plain, plain = timed(lambda: run(False), args.repeats, sync)
    t_graph, graph = timed(lambda: run(True), args.repeats, sync)
    print(f"maxwell3d {shape}, nt {args.nt}, 2 shots, order 4, float32")
    print(f"  plain launches: {t_plain:.4f} s ({cells / t_plain / 1e6:.0f} Mcells/s)")
    print(f"  graph replay:   {t_graph:.4f} s ({cells / t_graph / 1e6:.0f} Mcells/s), "
          f"{t_plain / t_graph:.2f}x")  # fmt: skip
    if not args.verify:
        return 0
    ok = bool(cupy.array_equal(plain.receivers, graph.receivers))
    ok &= all(bool(cupy.array_equal(graph.state[k], v)) for k, v in plain.state.items())

    def halve(state):
        if state.step == args.nt // 2:
            state.get_wavefield("ey", "full")[...] *= 0.5

    with_cb = [run(g, forward_callback=halve, callback_frequency=max(args.nt // 8, 1))
               for g in (False, True)]  # fmt: skip
    ok &= bool(cupy.array_equal(with_cb[0].receivers, with_cb[1].receivers))
    verdict = "equal" if ok else "DIFFER"
    print(f"  verify (no callback, and chunks with an in-place edit): {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
