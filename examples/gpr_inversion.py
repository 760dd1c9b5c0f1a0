"""Ground-penetrating radar: 2D inversion of permittivity and conductivity.

A multi-offset surface survey (several transmitters, a line of receivers on
the ground) over dry sand with a buried clay-filled pipe and a wet layer
below it.  ``sweep.tm2d`` models the TM-mode radargrams (the line source's
current in A, receivers in V/m; the ground's top edge radiates into an air
layer and a CPML), and ``PropTorch("tm2d", ...)`` differentiates them with
respect to the relative permittivity ``epsilon`` and the conductivity
``sigma`` (S/m; the permeability is that of vacuum).  The starting model is
the dry sand alone.  Each iteration updates ``log(epsilon - 1)`` and
``log(sigma)`` (positive models, and conductivities that span decades) by
steepest descent with a step that shrinks each iteration; the rows next to
the antennas are kept at their starting values.  The figure shows the
observed radargram, the last residual, the misfit and the true, starting and
recovered ``epsilon`` and ``sigma``.

    python examples/gpr_inversion.py          # writes gpr_inversion.png (~8 s on 2 cores)
    python examples/gpr_inversion.py --quick  # a few iterations, smaller (smoke test)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from sweep.models import ricker, smooth
from sweep.propagator.torch import PropTorch

EPS_SAND, SIGMA_SAND = 4.0, 1e-3  # dry sand
EPS_PIPE, SIGMA_PIPE = 25.0, 5e-2  # the pipe's wet clay fill
EPS_WET, SIGMA_WET = 12.0, 1e-2  # the wet layer


def true_model(nz: int, nx: int, dx: float) -> tuple[np.ndarray, np.ndarray]:
    """Dry sand, a wet layer from 65 % of the depth, a clay-filled pipe above it."""
    z = np.arange(nz)[:, None] * dx
    x = np.arange(nx)[None, :] * dx
    eps = np.full((nz, nx), EPS_SAND, np.float32)
    sigma = np.full((nz, nx), SIGMA_SAND, np.float32)
    wet = np.broadcast_to(z >= 0.65 * nz * dx, (nz, nx))
    eps[wet], sigma[wet] = EPS_WET, SIGMA_WET
    radius = 0.09 * nz * dx
    pipe = (z - 0.35 * nz * dx) ** 2 + (x - 0.5 * nx * dx) ** 2 <= radius**2
    eps[pipe], sigma[pipe] = EPS_PIPE, SIGMA_PIPE
    return eps, sigma


def main(argv: list[str] | None = None) -> dict:
    """Run the inversion; save a figure; return the models and the misfit history."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=15)
    parser.add_argument("--shots", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small and short (smoke test)")
    parser.add_argument("--out", default="gpr_inversion.png")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.shots = min(args.iterations, 2), min(args.shots, 2)

    dx, dt, freq = 0.02, 3e-11, 200e6  # 2 cm cells, 30 ps, a 200 MHz antenna
    nz, nx = (30, 40) if args.quick else (50, 80)
    nt = 300 if args.quick else 720
    eps, sigma = true_model(nz, nx, dx)
    eps0, sigma0 = np.full_like(eps, EPS_SAND), np.full_like(sigma, SIGMA_SAND)
    mu = np.ones_like(eps)

    # Transmitters spread along the surface row; receivers every other cell there.
    sx = np.linspace(3, nx - 4, args.shots).round().astype(np.int64)
    src = np.stack([np.zeros_like(sx), sx], -1)[:, None, :]
    rx = np.arange(1, nx - 1, 2)
    rec = np.broadcast_to(np.stack([np.zeros_like(rx), rx], -1), (args.shots, rx.size, 2))
    amp = np.tile(ricker(freq, nt, dt), (args.shots, 1, 1)).astype(np.float32)  # 1 A peak
    prop = PropTorch("tm2d", grid_spacing=dx, dt=dt, source_locations=src,
                     receiver_locations=np.ascontiguousarray(rec), pml_width=12,
                     pml_freq=freq, accuracy=4)  # fmt: skip
    t_amp, t_mu = torch.from_numpy(amp), torch.from_numpy(mu)
    with torch.no_grad():
        observed = prop(torch.from_numpy(eps), torch.from_numpy(sigma), t_mu,
                        source_amplitudes=t_amp)  # fmt: skip

    # Unknowns: log(epsilon - 1) and log(sigma), from the dry sand.
    a = torch.tensor(np.log(eps0 - 1.0), requires_grad=True)
    b = torch.tensor(np.log(sigma0), requires_grad=True)
    # Zero on the antennas' rows, a cosine taper to one by row 6 (their strong gradient).
    ramp = np.clip((np.arange(nz)[:, None] - 2.0) / 4.0, 0.0, 1.0)
    keep = np.broadcast_to(0.5 - 0.5 * np.cos(np.pi * ramp), (nz, nx)).astype(np.float32)
    norm = float((observed**2).sum())
    misfit = []
    start = time.perf_counter()
    steps = tqdm(range(args.iterations + 1), desc="GPR inversion", disable=args.no_progress)
    for it in steps:
        pred = prop(1.0 + torch.exp(a), torch.exp(b), t_mu, source_amplitudes=t_amp)
        loss = ((pred - observed) ** 2).sum() / norm
        misfit.append(float(loss.detach()))
        if it == 0:  # the starting model's data: observed minus it is what the targets reflect
            reflections = (observed - pred.detach())[0].numpy()
        steps.set_postfix(misfit=f"{misfit[-1]:.4f}")
        if it == args.iterations:  # the last evaluation is the final model's misfit
            residual = (pred - observed).detach()
            break
        g_a, g_b = torch.autograd.grad(loss, (a, b))
        # The largest update: 0.25 in log(epsilon - 1), 0.5 in log(sigma), shrinking.
        shrink = 0.9**it
        with torch.no_grad():
            for p, g, size in ((a, g_a, 0.25), (b, g_b, 0.5)):
                g = smooth(g.numpy(), 1.0) * keep
                p -= torch.from_numpy(size * shrink * g / np.abs(g).max())
    elapsed = time.perf_counter() - start
    eps_inv = 1.0 + np.exp(a.detach().numpy())
    sigma_inv = np.exp(b.detach().numpy())

    def error(est: np.ndarray, true: np.ndarray) -> float:
        return float(np.linalg.norm(est - true) / np.linalg.norm(true))

    print(
        f"{args.iterations} iterations in {elapsed:.1f} s; misfit {misfit[0]:.4f} -> "
        f"{misfit[-1]:.4f}; model error epsilon {error(eps0, eps):.4f} -> "
        f"{error(eps_inv, eps):.4f}, sigma {error(sigma0, sigma):.4f} -> "
        f"{error(sigma_inv, sigma):.4f}"
    )
    gathers = observed[0].numpy(), reflections, residual[0].numpy()
    _figure(args.out, dx, dt, rec[0], src[0, 0], gathers, misfit, (eps, eps0, eps_inv),
            (sigma, sigma0, sigma_inv))  # fmt: skip
    print(f"wrote {args.out}")
    return {"epsilon": eps_inv, "sigma": sigma_inv, "misfit": misfit, "epsilon_true": eps,
            "sigma_true": sigma, "epsilon_start": eps0, "sigma_start": sigma0}  # fmt: skip


def _figure(out, dx, dt, receivers, source, gathers, misfit, epss, sigmas) -> None:
    import matplotlib.pyplot as plt

    from sweep.plot import plot_gather, plot_model

    fig, axes = plt.subplots(3, 4, figsize=(16, 10), layout="constrained")
    where = dict(receiver_locations=receivers, spacing=dx, source_location=source)
    titles = ("observed radargram, shot 0", "observed - starting model's: the reflections",
              "final residual (scale of the reflections)")  # fmt: skip
    for ax, data, title in zip(axes[0], gathers, titles, strict=False):
        plot_gather(data, dt * 1e9, ax=ax, title=title, **where)  # time axis in ns
        ax.set_ylabel("time (ns)")
    axes[0, 2].images[0].set_clim(axes[0, 1].images[0].get_clim())
    axes[0, 3].semilogy(misfit, "o-")
    axes[0, 3].set_xlabel("iteration")
    axes[0, 3].set_ylabel("misfit / energy of the observed data")
    axes[0, 3].set_title("misfit")
    rows = (("epsilon", "relative", epss), ("sigma", "S/m", sigmas))
    for row, (name, units, (true, start, found)) in enumerate(rows, start=1):
        lo, hi = float(true.min()), float(true.max())
        for col, (label, m) in enumerate((("true", true), ("start", start), ("recovered", found))):
            plot_model(m, dx, ax=axes[row, col], title=f"{name} {label}", vmin=lo, vmax=hi,
                       units=units)  # fmt: skip
        update = found - start
        top = float(abs(update).max()) or 1.0
        plot_model(update, dx, ax=axes[row, 3], title=f"{name}: recovered - start",
                   vmin=-top, vmax=top, cmap="RdBu_r", units=units)  # fmt: skip
    fig.savefig(out, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    main()
