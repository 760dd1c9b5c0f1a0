"""sweep.elastic (impl "c" and "eager") against Deepwave 0.1.0's deepwave.elastic, CPU.

2D 600 x 200 cells (5 m), a two-layer model, 2 shots, CPML 20, a 15 Hz
Ricker force (fz / Deepwave's y) and 300 vz receivers per shot; forward and
forward + gradient (vp, vs, rho / Deepwave's lambda, mu, buoyancy).  With
``--3d``: 100 x 100 x 100 cells (10 m), CPML 10, 1 shot, 100 vz receivers.
Each (library, case) runs in a subprocess of its own, interleaved, once:

    PYTHONPATH=. python benchmarks/bench_elastic.py                # all, nt 1500, order 4
    PYTHONPATH=. python benchmarks/bench_elastic.py --order 8 --no-eager
    PYTHONPATH=. python benchmarks/bench_elastic.py c fwd 1500     # one worker
    PYTHONPATH=. python benchmarks/bench_elastic.py c grad 500 --order 8 --ckpt 10

Options: ``--order N`` (4), ``--3d``, ``--f64`` (float64), ``--nt N``,
``--ckpt N`` (sweep: chunked checkpointing with N chunks; Deepwave:
``checkpoint_segments=N``), ``--boundary`` (sweep: boundary saving),
``--full`` (sweep: full storage in memory), ``--warm`` (time a second
call, after the same call untimed: a gradient's store is then reused, as
in an inversion loop), ``--no-eager``, ``--eager-nt N``.  Each line
gives the time, the model cells times steps times shots per second
(Mcells/s) and the peak resident memory the run added (MB).  The eager
gradient (torch autodiff keeps every step) runs with ``--eager-nt`` steps
and is scaled to nt (linear in nt).

``--das``: DAS receivers instead (2D), sweep ``c`` against ``eager``
(Deepwave has none): a vertical fibre at x = 1500 m (5 m channels, 191 of
them) and 296 ``"exx"`` receivers on row 2, gauge length 20 m,
``quantity="strain"``; the same model and sources.  The gradients run
``--das-nt`` steps (c) and ``--eager-nt`` steps (eager), scaled to nt.

``--devito``: the forward, sweep ``c`` against Devito's elastic example
(``examples.seismic.elastic.ElasticWaveSolver``, velocity-stress, its own
OpenMP code), interleaved ``--repeats N`` (3) times, 2 threads, each run
after one untimed warm-up call (Devito compiles its operator on the first).
The example injects an explosion (on the normal stresses) and records
``tau_zz``, so both run ``source_kind="p"`` and ``receiver_kind="szz"``
here; Devito runs one call per shot and absorbs with its damping mask of
``pml_width`` cells, not a CPML, and scales its source differently, so
the agreement check is scale-free: the cosine similarity of the receiver
traces (-1: opposite source signs).  Devito pins its own NumPy, so
``SWEEP_BENCH_DEVITO_PYTHON=/path/to/venv/bin/python`` may name the
interpreter of its worker (as in bench_acoustic.py); ``--json PATH``
writes the figures.
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np


def _opt(name: str, default: int) -> int:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def compare_devito(nt: int, repeats: int, rest: list[str]) -> dict:
    """Time sweep ``c`` against Devito's elastic example, interleaved; see ``--devito``."""
    python = os.environ.get("SWEEP_BENCH_DEVITO_PYTHON", sys.executable)
    probe = "import devito, examples.seismic.elastic"
    if subprocess.run([python, "-c", probe], capture_output=True).returncode:
        sys.exit(f"{python} cannot import Devito's examples: set SWEEP_BENCH_DEVITO_PYTHON")
    env = dict(os.environ, OMP_NUM_THREADS="2", DEVITO_LANGUAGE="openmp", DEVITO_LOGGING="ERROR")
    times: dict[str, list[float]] = {"c": [], "devito": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            for lib, times_lib in times.items():
                save = f"{tmp}/{lib}.npz"
                command = [python if lib == "devito" else sys.executable, "-P", __file__,
                           lib, "p-fwd", str(nt), "--save", save, *rest]  # fmt: skip
                out = subprocess.run(command, capture_output=True, text=True, env=env)
                print((out.stdout.strip().splitlines() or [out.stderr.strip()[-300:]])[-1])
                if out.returncode:  # not a previous repeat's file
                    sys.exit(f"the {lib} worker failed (exit {out.returncode})")
                times_lib.append(float(np.load(save)["elapsed"]))
        a, b = (np.load(f"{tmp}/{lib}.npz")["receivers"].astype(np.float64) for lib in times)
    # Scale-free: Devito scales its source differently and absorbs with a mask.
    cosine = float(np.vdot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    best = {lib: min(t) for lib, t in times.items()}
    return {"nt": nt, "args": rest, "threads": 2, "times_s": times, "best_s": best,
            "devito_over_c": best["devito"] / best["c"], "receivers_cosine": cosine}  # fmt: skip


_VALUE_FLAGS = ("--order", "--ckpt", "--nt", "--eager-nt", "--das-nt", "--repeats", "--json",
                "--save")  # fmt: skip
_SWITCHES = ("--3d", "--f64", "--boundary", "--full", "--warm", "--no-eager", "--das", "--devito")


def _check_flags(argv: list[str]) -> None:
    """Print the usage for -h/--help; refuse an unknown flag (it would be ignored)."""
    if "-h" in argv or "--help" in argv:
        print(__doc__)
        sys.exit(0)
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a in _VALUE_FLAGS:
            skip = True
        elif a.startswith("-") and a not in _SWITCHES:
            sys.exit(f"bench_elastic.py: unknown option {a!r}; see --help")


_check_flags(sys.argv[1:])
warnings.simplefilter("ignore")
order = _opt("--order", 4)
ckpt = _opt("--ckpt", 0)
three_d = "--3d" in sys.argv
boundary = "--boundary" in sys.argv
full = "--full" in sys.argv
dtype = np.float64 if "--f64" in sys.argv else np.float32
if len(sys.argv) < 3 or sys.argv[1].startswith("--"):
    nt = _opt("--nt", 1500)
    eager_nt = _opt("--eager-nt", 150)
    das = "--das" in sys.argv
    das_nt = _opt("--das-nt", 300)
    if "--devito" in sys.argv:
        flags = [a for a in ("--3d", "--f64") if a in sys.argv] + ["--order", str(order)]
        result = compare_devito(nt, _opt("--repeats", 3), flags)
        print(json.dumps(result))
        if "--json" in sys.argv:
            with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
                json.dump(result, f, indent=1)
        sys.exit(0)
    libs = ("c", "deepwave") if "--no-eager" in sys.argv else ("c", "deepwave", "eager")
    if das:
        libs = tuple(lib for lib in libs if lib != "deepwave")
    rest = [a for a in sys.argv[1:] if a not in ("--nt", str(nt))]
    for case in ("das-fwd", "das-grad") if das else ("fwd", "grad"):
        for lib in libs:
            n = eager_nt if (lib, case[-4:]) == ("eager", "grad") else nt
            n = das_nt if (lib, case) == ("c", "das-grad") else n
            out = subprocess.run([sys.executable, "-P", __file__, lib, case, str(n), *rest],
                                 capture_output=True, text=True)  # fmt: skip
            line = (out.stdout.strip().splitlines() or [out.stderr.strip()[-200:]])[-1]
            print(line + (f" (x{nt / n:.0f} for nt={nt})" if n != nt else ""), flush=True)
    sys.exit(0)
lib, case = sys.argv[1], sys.argv[2]
nt = int(sys.argv[3]) if len(sys.argv) > 3 and not sys.argv[3].startswith("--") else 1500
if three_d:
    shape, shots, dx, dt, f0, pml = (100, 100, 100), 1, 10.0, 0.001, 15.0, 10
else:
    shape, shots, dx, dt, f0, pml = (200, 600), 2, 5.0, 0.0008, 15.0, 20
nz, nx = shape[0], shape[-1]
vp = np.full(shape, 2500.0, dtype)
vp[nz // 2 :] = 3000.0
vs = (vp / 1.8).astype(dtype)
rho = np.full(shape, 2000.0, dtype)
tt = np.arange(nt) * dt - 1.5 / f0
arg = (np.pi * f0 * tt) ** 2
amp = np.tile(((1 - 2 * arg) * np.exp(-arg)).astype(dtype), (shots, 1, 1)) * 1e6
n_rec = nx // 2 if not three_d else 100
src = np.zeros((shots, 1, len(shape)), np.int64)
rec = np.zeros((shots, n_rec, len(shape)), np.int64)
src[..., 0] = 2
rec[..., 0] = 2
for s in range(shots):
    src[s, 0, 1:] = (s + 1) * nx // (shots + 1) if not three_d else nx // 2
rec[..., -1] = np.arange(0, nx, 2)[:n_rec] if not three_d else np.arange(n_rec)
if three_d:
    rec[..., 1] = nx // 2
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
if lib in ("c", "eager"):
    import sweep
    from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions

    kw = dict(source_amplitudes=amp, source_locations=src, receiver_locations=rec,
              accuracy=order, pml_width=pml, impl=lib)  # fmt: skip
    if case == "p-fwd":  # Devito's example: an explosion, tau_zz receivers
        kw.update(source_kind="p", receiver_kind="szz")
    if case.startswith("das"):
        fibre = sweep.das.Fibre([[5.0, 1500.0], [955.0, 1500.0]], channel_spacing=5.0)
        kw.update(receiver_kind="exx", fibre=fibre, gauge_length=20.0, quantity="strain")
        kw["receiver_locations"] = rec[:, 2:-2]  # the gauges inside the model
    if ckpt and case.endswith("grad"):
        kw["memory"] = MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=ckpt))
    if boundary and case.endswith("grad"):
        kw["memory"] = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())
    if full and case.endswith("grad"):
        kw["storage_mode"] = "device"
    models = (vp, vs, rho)
    if lib == "eager" and case.endswith("grad"):
        import torch

        models = tuple(torch.from_numpy(x) for x in models)
        kw["source_amplitudes"] = torch.from_numpy(amp)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def run_sweep():
        if case.endswith("fwd"):
            out = sweep.elastic(*models, dx, dt, **kw)
            return out, np.asarray(out.receivers)
        out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, **kw)
        pullback(out.receivers * 0 + 1)
        return out, None

    if case == "p-fwd" or "--warm" in sys.argv:  # warm, as Devito's is: the same call, untimed
        run_sweep()
    t0 = time.perf_counter()
    out, receivers = run_sweep()
    elapsed = time.perf_counter() - t0
elif lib == "devito":
    from devito import configuration
    from examples.seismic import AcquisitionGeometry, Model
    from examples.seismic.elastic import ElasticWaveSolver

    configuration["log-level"] = "ERROR"
    # Devito's units (km/s, g/cm^3, ms) and axes (x, [y,] z): reversed, depth last.
    ndim, dt_ms = len(shape), dt * 1000.0
    model = Model(
        vp=vp.T / 1000, vs=vs.T / 1000, b=1000 / rho.T, origin=(0.0,) * ndim,
        shape=shape[::-1], spacing=(dx,) * ndim, space_order=order, nbl=pml, dtype=dtype,
        dt=dt_ms,
    )  # fmt: skip
    # Devito counts ceil((tn + dt) / dt) samples: keep tn a hair below the last one.
    geometry = AcquisitionGeometry(
        model, rec[0, :, ::-1] * dx, src[0, :, ::-1] * dx, t0=0.0,
        tn=(nt - 1) * dt_ms * (1 - 1e-9), f0=f0 / 1000, src_type="Ricker",
    )  # fmt: skip
    assert geometry.nt == nt, f"Devito's time axis has {geometry.nt} samples, not {nt}"
    solver = ElasticWaveSolver(model, geometry, space_order=order)
    source = geometry.src

    def devito_shots() -> np.ndarray:
        """One call per shot (Devito's solvers take one source position)."""
        traces = []
        for s in range(shots):
            source.coordinates.data[:] = src[s, :, ::-1] * dx
            source.data[:, 0] = amp[s, 0]
            tau_zz = solver.forward(src=source, dt=dt_ms)[0]
            traces.append(np.array(tau_zz.data).T)
        return np.stack(traces)

    devito_shots()  # compiles the operator
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    receivers = devito_shots()
    elapsed = time.perf_counter() - t0
else:
    import deepwave
    import torch

    lam, mu, buoy = deepwave.vpvsrho_to_lambmubuoyancy(
        *(torch.from_numpy(x) for x in (vp, vs, rho))
    )
    if case == "grad":
        for x in (lam, mu, buoy):
            x.requires_grad_()
    # Deepwave's vertical axis is y in 2D, z in 3D.
    v = "z" if three_d else "y"
    kw = {f"source_amplitudes_{v}": torch.from_numpy(amp),
          f"source_locations_{v}": torch.from_numpy(src),
          f"receiver_locations_{v}": torch.from_numpy(rec),
          "accuracy": order, "pml_width": pml, "pml_freq": f0}  # fmt: skip
    if ckpt and case == "grad":
        kw["checkpoint_segments"] = ckpt
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def run_deepwave():
        out = deepwave.elastic(lam, mu, buoy, dx, dt, **kw)
        if case == "grad":
            r = out.receivers
            r = (
                r[next(iter(r))]
                if hasattr(r, "keys")
                else (r[0] if isinstance(r, (tuple, list)) else r)
            )
            r.sum().backward()

    if "--warm" in sys.argv:
        run_deepwave()
    t0 = time.perf_counter()
    run_deepwave()
    elapsed = time.perf_counter() - t0
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
mcells = np.prod(shape) * nt * shots / elapsed / 1e6
tag = f"{'3d' if three_d else '2d'} o{order} {np.dtype(dtype).name}" + (
    f" ckpt{ckpt}" if ckpt else ""
)
if lib == "c" and case.endswith("grad"):
    tag += f" {out.memory_plan.strategy}"
print(f"{lib} {case} {tag} nt={nt} {elapsed:.2f} s {mcells:.0f} Mcells/s peak +{peak:.0f} MB")
if "--save" in sys.argv:  # --devito's workers
    np.savez(sys.argv[sys.argv.index("--save") + 1], receivers=receivers, elapsed=elapsed)
