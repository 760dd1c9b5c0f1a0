"""Elastic FWI of vp and vs from DAS strain-rate data in a borehole (a walkaway VSP).

A vertical fibre in a borehole records the axial strain rate ``e_zz``
(averaged over a gauge) of vertical forces fired at the surface (a free
surface); ``sweep.elastic`` models it with ``fibre=sweep.das.Fibre(...)``,
and ``PropTorch("elastic", ...)`` differentiates it with respect to ``vp``
and ``vs`` (the density is known).  The true model has layers and a
lens next to the borehole; the starting model has the smoothed layers only.
Steepest descent updates both velocities, with the rows next to the sources (tapered)
kept at their starting values and ``vs`` kept below the positive-bulk-modulus
limit.  The figure shows the observed gather, the last residual, the misfit
and the true, starting and recovered ``vp`` and ``vs``.

    python examples/das_fwi.py              # writes das_fwi.png (about a minute on 2 cores)
    python examples/das_fwi.py --quick      # a few iterations on a smaller problem (smoke test)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from tqdm.auto import tqdm

import sweep
from sweep.models import ricker, smooth
from sweep.propagator.torch import PropTorch


def true_model(nz: int, nx: int, dx: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layered vp and vs with a lens next to the borehole; Gardner density."""
    z = np.arange(nz)[:, None] * dx
    x = np.arange(nx)[None, :] * dx
    vp = 1800.0 + 700.0 * (z / z.max()) + np.where(z > 0.55 * z.max(), 250.0, 0.0) + 0 * x
    lens = np.exp(-(((z - 0.4 * z.max()) / 60.0) ** 2 + ((x - 0.45 * x.max()) / 90.0) ** 2))
    vp = vp + 250.0 * lens
    vs = vp / 1.7 - 120.0 * lens  # the lens is slower in S: vp and vs differ
    rho = 310.0 * vp**0.25
    return vp, vs, rho


def main(argv: list[str] | None = None) -> dict:
    """Run the inversion; save a figure; return the models and the misfit history."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--shots", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small and short (smoke test)")
    parser.add_argument("--out", default="das_fwi.png")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.shots = min(args.iterations, 2), min(args.shots, 2)
    torch.set_num_threads(max(1, torch.get_num_threads()))

    dx, dt = 10.0, 1.5e-3
    nz, nx = (24, 30) if args.quick else (40, 56)
    nt = 240 if args.quick else 480
    vp, vs, rho = true_model(nz, nx, dx)
    # Start: the smoothed layers seen at the well, without the lens (laterally invariant).
    col = round(0.95 * nx)
    vp0, vs0 = (np.repeat(smooth(m, 4.0)[:, col : col + 1], nx, axis=1) for m in (vp, vs))

    # The fibre: down the borehole at x = 0.6 of the width, channels every cell.
    x_well = round(0.6 * nx) * dx
    fibre = sweep.das.Fibre([[2 * dx, x_well], [(nz - 3) * dx, x_well]], channel_spacing=dx)
    gauge = 2 * dx
    # Vertical forces one node below the free surface, spread along x (a walkaway).
    sx = np.linspace(4, nx - 5, args.shots).round().astype(np.int64)
    src = np.stack([np.ones_like(sx), sx], -1)[:, None, :]
    amp = np.tile(ricker(8.0, nt, dt), (args.shots, 1, 1)).astype(np.float64) * 1e6
    settings = dict(grid_spacing=dx, dt=dt, source_locations=src, fibre=fibre,
                    gauge_length=gauge, free_surface=True, pml_width=12,
                    max_vel=float(vp.max()) * 1.1, pml_freq=8.0, accuracy=8)  # fmt: skip
    prop = PropTorch("elastic", **settings)
    t_amp = torch.from_numpy(amp)
    t_rho = torch.from_numpy(rho)
    with torch.no_grad():
        observed = prop(torch.from_numpy(vp), torch.from_numpy(vs), t_rho, source_amplitudes=t_amp)

    # Steepest descent on vp and vs: each gradient smoothed over a cell or two, scaled so
    # that its largest update is `step` m/s (shrinking with the iterations); the rows
    # next to the sources are left alone.
    p_vp = torch.tensor(vp0, requires_grad=True)
    p_vs = torch.tensor(vs0, requires_grad=True)
    # Zero on the top 3 rows, a cosine taper to one by row 9 (the sources' strong gradient).
    ramp = np.clip((np.arange(nz)[:, None] - 3.0) / 6.0, 0.0, 1.0)
    keep = np.broadcast_to(0.5 - 0.5 * np.cos(np.pi * ramp), (nz, nx))
    norm = float((observed**2).sum())
    misfit = []
    start = time.perf_counter()
    steps = tqdm(range(args.iterations + 1), desc="DAS FWI", disable=args.no_progress)
    for it in steps:
        pred = prop(p_vp, p_vs, t_rho, source_amplitudes=t_amp)
        loss = ((pred - observed) ** 2).sum() / norm
        misfit.append(float(loss.detach()))
        steps.set_postfix(misfit=f"{misfit[-1]:.4f}")
        if it == args.iterations:  # the last evaluation is the final model's misfit
            residual = (pred - observed).detach()
            break
        g_vp, g_vs = torch.autograd.grad(loss, (p_vp, p_vs))
        step = 60.0 * 0.85**it
        with torch.no_grad():
            for p, g in ((p_vp, g_vp), (p_vs, g_vs)):
                g = smooth(g.numpy(), 1.5) * keep
                p -= torch.from_numpy(step * g / np.abs(g).max())
            # Keep vs in the range of the scheme (a positive bulk modulus).
            p_vs.copy_(torch.minimum(p_vs.clamp(min=300.0), 0.8 * p_vp))
    elapsed = time.perf_counter() - start
    vp_inv, vs_inv = p_vp.detach().numpy(), p_vs.detach().numpy()

    def error(est: np.ndarray, true: np.ndarray) -> float:
        return float(np.linalg.norm(est - true) / np.linalg.norm(true))

    print(
        f"{args.iterations} iterations in {elapsed:.1f} s; misfit {misfit[0]:.4f} -> "
        f"{misfit[-1]:.4f}; model error vp {error(vp0, vp):.4f} -> {error(vp_inv, vp):.4f}, "
        f"vs {error(vs0, vs):.4f} -> {error(vs_inv, vs):.4f}"
    )
    _figure(args.out, dx, dt, fibre, observed[0].numpy(), residual[0].numpy(), misfit,
            (vp, vp0, vp_inv), (vs, vs0, vs_inv), x_well)  # fmt: skip
    print(f"wrote {args.out}")
    return {"vp": vp_inv, "vs": vs_inv, "misfit": misfit, "vp_true": vp, "vs_true": vs,
            "vp_start": vp0, "vs_start": vs0}  # fmt: skip


def _figure(out, dx, dt, fibre, observed, residual, misfit, vps, vss, x_well) -> None:
    import matplotlib.pyplot as plt

    from sweep.plot import plot_das_gather, plot_model

    fig, axes = plt.subplots(3, 3, figsize=(13, 11), layout="constrained")
    plot_das_gather(observed, dt, fibre, ax=axes[0, 0], title="observed, shot 0")
    plot_das_gather(residual, dt, fibre, ax=axes[0, 1], title="final residual, shot 0 (same scale)")
    axes[0, 1].images[0].set_clim(axes[0, 0].images[0].get_clim())
    axes[0, 2].semilogy(misfit, "o-")
    axes[0, 2].set_xlabel("iteration")
    axes[0, 2].set_ylabel("relative misfit")
    axes[0, 2].set_title("misfit")
    for row, (name, models) in enumerate((("vp", vps), ("vs", vss)), start=1):
        lo, hi = float(models[0].min()), float(models[0].max())
        for col, (label, m) in enumerate(zip(("true", "start", "recovered"), models, strict=True)):
            ax = plot_model(m, dx, ax=axes[row, col], title=f"{name} {label}", vmin=lo, vmax=hi)
            ax.axvline(x_well, color="w", lw=1, ls="--")
    fig.savefig(out, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
