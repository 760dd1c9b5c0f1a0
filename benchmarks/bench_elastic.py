"""sweep.elastic (impl "c" and "eager") against Deepwave 0.1.0's deepwave.elastic, CPU.

2D 600 x 200 cells (5 m), a two-layer model, 2 shots, order 4, CPML 20, a
15 Hz Ricker force (fz / Deepwave's y) and 300 vz receivers per shot; forward
and forward + gradient (vp, vs, rho / Deepwave's lambda, mu, buoyancy).
Each (library, case) runs in a subprocess of its own, interleaved, once:

    PYTHONPATH=. python benchmarks/bench_elastic.py            # all, nt 1500
    PYTHONPATH=. python benchmarks/bench_elastic.py c fwd 1500 # one worker

The eager gradient (torch autodiff keeps every step) runs with ``--eager-nt``
steps and is scaled to nt (linear in nt).
"""

import subprocess
import sys
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")
if len(sys.argv) < 3 or sys.argv[1].startswith("--"):
    nt = 1500
    eager_nt = 150
    if "--eager-nt" in sys.argv:
        eager_nt = int(sys.argv[sys.argv.index("--eager-nt") + 1])
    for case in ("fwd", "grad"):
        for lib in ("c", "deepwave", "eager"):
            n = eager_nt if (lib, case) == ("eager", "grad") else nt
            out = subprocess.run([sys.executable, "-P", __file__, lib, case, str(n)],
                                 capture_output=True, text=True)  # fmt: skip
            line = (out.stdout.strip().splitlines() or [out.stderr.strip()[-200:]])[-1]
            print(line + (f" (x{nt / n:.0f} for nt={nt})" if n != nt else ""), flush=True)
    sys.exit(0)
lib, case = sys.argv[1], sys.argv[2]
nt = int(sys.argv[3]) if len(sys.argv) > 3 else 1500
nz, nx, shots, order, dx, dt, f0 = 200, 600, 2, 4, 5.0, 0.0008, 15.0
vp = np.full((nz, nx), 2500.0, np.float32)
vp[nz // 2 :] = 3000.0
vs = (vp / 1.8).astype(np.float32)
rho = np.full((nz, nx), 2000.0, np.float32)
tt = np.arange(nt) * dt - 1.5 / f0
arg = (np.pi * f0 * tt) ** 2
amp = np.tile(((1 - 2 * arg) * np.exp(-arg)).astype(np.float32), (shots, 1, 1)) * 1e6
src = np.array([[[2, 150]], [[2, 450]]])
rec = np.zeros((shots, 300, 2), np.int64)
rec[..., 0] = 2
rec[..., 1] = np.arange(0, 600, 2)
if lib in ("c", "eager"):
    import sweep

    kw = dict(source_amplitudes=amp, source_locations=src, receiver_locations=rec,
              accuracy=order, pml_width=20, impl=lib)  # fmt: skip
    models = (vp, vs, rho)
    if lib == "eager" and case == "grad":
        import torch

        models = tuple(torch.from_numpy(x) for x in models)
        kw["source_amplitudes"] = torch.from_numpy(amp)
    t0 = time.perf_counter()
    if case == "fwd":
        out = sweep.elastic(*models, dx, dt, **kw)
    else:
        out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, **kw)
        pullback(out.receivers * 0 + 1)
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
    kw = dict(source_amplitudes_y=torch.from_numpy(amp), source_locations_y=torch.from_numpy(src),
              receiver_locations_y=torch.from_numpy(rec), accuracy=order, pml_width=20,
              pml_freq=f0)  # fmt: skip
    t0 = time.perf_counter()
    out = deepwave.elastic(lam, mu, buoy, dx, dt, **kw)
    if case == "grad":
        r = out.receivers
        r = (
            r[next(iter(r))]
            if hasattr(r, "keys")
            else (r[0] if isinstance(r, (tuple, list)) else r)
        )
        r.sum().backward()
    elapsed = time.perf_counter() - t0
print(f"{lib} {case} nt={nt} {elapsed:.2f} s")
