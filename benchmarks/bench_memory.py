"""Gradient memory strategies: time and peak memory of forward + velocity gradient.

Runs ``sweep.vjp(sweep.acoustic, ...)`` followed by the pullback under each
memory strategy (full storage in memory / on disk / bf16, boundary saving,
chunked and binomial checkpointing), each in its own subprocess so peak
resident memory is its own, and Deepwave's default full storage as the peer
(CPU only).  With ``--device cuda`` the sweep cases run on CuPy arrays and
the peak is CuPy's memory-pool high-water mark.

Problem set-up (model, wavelet, sources, receivers, cotangent) is shared with
``bench_acoustic.py``.  Examples::

    python benchmarks/bench_memory.py --quick
    python benchmarks/bench_memory.py --case grad2d-a8 --json benchmarks/results_memory.json
    python benchmarks/bench_memory.py --case grad3d-a8 --strategies boundary
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_acoustic as ba

STRATEGIES = {
    "full": {},
    "full-disk": {"storage_mode": "disk"},
    "full-bf16": {"storage_compression": "bf16"},
    "boundary": {"memory": ("boundary", {})},
    "boundary-cpu": {"memory": ("boundary", {"storage": "cpu"})},
    "ckpt-chunk": {"memory": ("ckpt", {"mode": "chunk", "chunks": 40})},
    "ckpt-recursive": {"memory": ("ckpt", {"mode": "recursive", "count": 20})},
    "deepwave": None,
}


def cases(quick: bool) -> dict[str, ba.Case]:
    """The issue's 2D case and the 3D boundary-saving case."""
    base = ba.default_cases(quick, None)
    g2 = base["grad2d-a8"]
    f3 = base["fwd3d-a8"]
    return {
        "grad2d-a8": g2,
        "grad3d-a8": replace(f3, name="grad3d-a8", gradient=True),
    }


def _memory_kwargs(spec: dict[str, Any]) -> dict[str, Any]:
    from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions

    out = dict(spec)
    if "memory" in out:
        kind, opts = out["memory"]
        if kind == "boundary":
            out["memory"] = MemoryOptions(strategy="boundary", boundary=BoundaryOptions(**opts))
        else:
            out["memory"] = MemoryOptions(strategy="ckpt", ckpt=CkptOptions(**opts))
    return out


def worker(case: ba.Case, strategy: str, device: str, threads: int) -> dict[str, Any]:
    """Time forward + gradient twice (after a short warm-up) in this process.

    Reports the second run (``seconds``) and the first (``cold_s``).
    """
    import numpy as np

    problem = ba.survey(case)
    cot = problem.pop("cotangent")
    if strategy == "deepwave":
        import deepwave
        import torch

        torch.set_num_threads(threads)
        v = torch.from_numpy(problem["v"]).requires_grad_()
        args = dict(
            source_amplitudes=torch.from_numpy(problem["source_amplitudes"]).float(),
            source_locations=torch.from_numpy(problem["source_locations"]),
            receiver_locations=torch.from_numpy(problem["receiver_locations"]),
            accuracy=case.accuracy,
            pml_width=20,
        )
        times = []
        for _ in range(2):  # cold (fresh memory), then warm
            v.grad = None
            t0 = time.perf_counter()
            out = deepwave.scalar(v, case.spacing, case.dt, **args)[-1]
            (out * torch.from_numpy(cot)).sum().backward()
            times.append(time.perf_counter() - t0)
            del out
        return {
            "seconds": times[1],
            "cold_s": times[0],
            "peak_mib": ba.peak_rss_mib(),
            "plan": "deepwave default",
        }
    import sweep

    kwargs = _memory_kwargs(STRATEGIES[strategy])
    v, amp = problem["v"], problem["source_amplitudes"].astype(np.float32)
    cot = cot.astype(np.float32)
    sync = lambda: None  # noqa: E731
    if device == "cuda":
        import cupy

        v, amp, cot = cupy.asarray(v), cupy.asarray(amp), cupy.asarray(cot)
        sync = cupy.cuda.Device().synchronize
    common = dict(
        source_locations=problem["source_locations"],
        receiver_locations=problem["receiver_locations"],
        accuracy=case.accuracy,
        pml_width=20,
    )
    if device == "cpu":
        common["n_threads"] = threads
    # Warm-up: compiles CUDA kernels, touches code paths; short so it adds little memory.
    short = min(case.nt, 50)
    out, pb = sweep.vjp(sweep.acoustic, v, case.spacing, case.dt,
                        source_amplitudes=amp[..., :short], **common, **kwargs)  # fmt: skip
    pb(cot[..., :short])
    del out, pb
    sync()
    if device == "cuda":
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
    # Twice: the first run pays for fresh memory (page faults, several seconds per
    # GB on a virtual machine), the second is what an inversion loop sees.
    cold = None
    for _ in range(2):
        t0 = time.perf_counter()
        out, pb = sweep.vjp(sweep.acoustic, v, case.spacing, case.dt,
                            source_amplitudes=amp, **common, **kwargs)  # fmt: skip
        sync()
        t1 = time.perf_counter()
        g = pb(cot)["v"]
        sync()
        t2 = time.perf_counter()
        if cold is None:
            cold = t2 - t0
            del out, pb, g
    plan = out.memory_plan
    est = sweep.estimate_memory(v, case.spacing, case.dt, source_amplitudes=amp, **common, **kwargs)
    if device == "cuda":
        import cupy

        peak = cupy.get_default_memory_pool().total_bytes() / 2**20
        g = cupy.asnumpy(g)
    else:
        peak = ba.peak_rss_mib()
    np.save(os.environ["SWEEP_BENCH_GRAD"], g)
    return {
        "seconds": t2 - t0,
        "cold_s": cold,
        "forward_s": t1 - t0,
        "adjoint_s": t2 - t1,
        "peak_mib": peak,
        "estimate_mib": est.peak / 2**20,
        "plan": f"{plan.strategy}/{plan.storage}"
        + (f"/{plan.compression}" if plan.compression else ""),
        "storage_mib": plan.storage_bytes / 2**20,
    }


def run(case: ba.Case, strategy: str, device: str, threads: int, tmp: Path) -> dict[str, Any]:
    """Run :func:`worker` in a subprocess and compare its gradient with full storage."""
    import numpy as np

    grad_path = tmp / f"{case.name}-{strategy}.npy"
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), SWEEP_BENCH_GRAD=str(grad_path))
    cmd = [sys.executable, __file__, "--worker", case.name, strategy, device, str(threads)]
    if case.nt != cases(False)[case.name].nt or case.shape != cases(False)[case.name].shape:
        cmd.append("--quick")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["mcells_s"] = case.cell_updates / result["seconds"] / 1e6
    ref = tmp / f"{case.name}-full.npy"
    if strategy != "deepwave" and ref.exists() and grad_path.exists():
        a, b = np.load(grad_path), np.load(ref)
        result["rel_err_vs_full"] = float(np.linalg.norm(a - b) / np.linalg.norm(b))
    return result


def render(case: ba.Case, results: dict[str, dict[str, Any]]) -> str:
    """Markdown table of one case."""
    peer = results.get("deepwave", {}).get("seconds")
    lines = [
        f"**{case.describe()}**",
        "",
        "| strategy | plan | time (s) | first run (s) | Mcells/s | vs Deepwave | peak MiB "
        "| estimate MiB | storage MiB | rel. error vs full |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | error: {r['error']} ||||||||")
            continue
        ratio = f"{peer / r['seconds']:.2f}x" if peer and name != "deepwave" else ""
        err = r.get("rel_err_vs_full")
        lines.append(
            f"| {name} | {r['plan']} | {r['seconds']:.2f} | {r.get('cold_s', float('nan')):.2f} "
            f"| {r['mcells_s']:.0f} | {ratio} "
            f"| {r['peak_mib']:.0f} | {r.get('estimate_mib', float('nan')):.0f} "
            f"| {r.get('storage_mib', float('nan')):.0f} "
            f"| {'' if err is None else f'{err:.1e}'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes (smoke run)")
    p.add_argument("--case", default="grad2d-a8", choices=("grad2d-a8", "grad3d-a8"))
    p.add_argument("--strategies", default=",".join(STRATEGIES))
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--nt", type=int, default=None, help="override the number of time steps")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--worker", nargs=4, default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        name, strategy, device, threads = args.worker
        case = cases(args.quick)[name]
        if os.environ.get("SWEEP_BENCH_NT"):
            case = replace(case, nt=int(os.environ["SWEEP_BENCH_NT"]))
        print(json.dumps(worker(case, strategy, device, int(threads))))
        return 0
    case = cases(args.quick)[args.case]
    if args.nt:
        os.environ["SWEEP_BENCH_NT"] = str(args.nt)
        case = replace(case, nt=args.nt)
    names = [s for s in args.strategies.split(",") if s]
    if args.device == "cuda":
        names = [s for s in names if s != "deepwave"]
    if "full" in names:  # the reference gradient first
        names.remove("full")
        names.insert(0, "full")
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"sweep-bench-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        results[name] = run(case, name, args.device, args.threads, tmp)
        print(f"{name}: {results[name]}", flush=True)
    table = render(case, results)
    print(table)
    if args.json:
        saved = json.loads(args.json.read_text()) if args.json.exists() else {}
        saved[f"{case.name}-{args.device}"] = {
            "case": asdict(case),
            "threads": args.threads,
            "machine": ba.machine_description(),
            "results": results,
        }
        args.json.write_text(json.dumps(saved, indent=1))
    for f in tmp.glob("*.npy"):
        f.unlink()
    tmp.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
