"""How much of the CPML's reflection comes from the one-step lag of its psi.

sweep's CPML (``cuda/acoustic_stencil.h``) adds ``D1 psi^n`` to ``W^n``, where
``psi^n = b psi^{n-1} + a D1 u^{n-1}`` was written by the previous step: the
psi term lags the wavefield by one step.  Updating psi first
(``psi^{n+1} = b psi^n + a D1 u^n``) and adding ``D1 psi^{n+1}`` is the
unlagged form.  This script measures both on the problem of
``absorbing_layers.py`` with the eager NumPy propagator, whose operator it
swaps for the unlagged one (the compiled kernels and the hand-written
adjoints implement the lagged form only, so the comparison runs eagerly):
``||d - d_ref|| / ||d_ref||`` per layer width, ``d_ref`` from a model
``--margin`` cells larger on every side.  Deterministic; a few minutes.

    PYTHONPATH=. python benchmarks/cpml_psi_lag.py [--widths 10,20,40] [--margin 300]
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

import sweep
from sweep import _eager
from sweep._eager import _along, pad_zeros

SHAPE = (100, 200)
NT = 600
SOURCE = (40, 120)


def cpml_operator_unlagged(
    self: _eager.EagerBase, u: Any, psi: list, zeta: list, second: Any = None, first: Any = None
) -> tuple[Any, list, list]:
    """``EagerBase.cpml_operator`` with psi updated before its difference enters W."""
    second = second or self._second_plain
    first = first or self._first_plain
    h = self.geom.halo
    w = None
    psi_new, zeta_new = [], []
    for d in range(self.geom.ndim):
        axis, rdx = d + 1, self.rdx[d]
        u_axis = self._interior(u, keep=axis)
        lap = second(u_axis, axis, 0, u_axis.shape[axis]) * (rdx * rdx)
        w = lap if w is None else w + lap
        psi_d, zeta_d = [], []
        for (s0, n), (a, b), ps, zt in zip(
            self.strips[d], self.pml_strip[d], psi[d], zeta[d], strict=True
        ):
            lo, hi = s0 - h, s0 + n + h
            d1u = self._d1(_along(u_axis, axis, lo, hi), axis) * rdx
            pn = self._pad(b * _along(ps, axis, h, h + n) + a * d1u, [axis])
            d1psi = first(pn, axis, lo, hi) * rdx  # psi^{n+1}, not psi^n
            zn = b * zt + a * (second(u_axis, axis, lo, hi) * (rdx * rdx) + d1psi)
            psi_d.append(pn)
            zeta_d.append(zn)
            widths = [(0, 0)] * lap.ndim
            widths[axis] = (s0 - h, lap.shape[axis] - (s0 - h) - n)
            w = w + pad_zeros(d1psi + zn, widths)
        psi_new.append(psi_d)
        zeta_new.append(zeta_d)
    return w, psi_new, zeta_new


def ricker(freq: float, nt: int, dt: float) -> np.ndarray:
    t = np.arange(nt) * dt - 1.5 / freq
    arg = (np.pi * freq * t) ** 2
    return (1.0 - 2.0 * arg) * np.exp(-arg)


def receivers_at(margin: int, width: int) -> np.ndarray:
    """Receivers 5 cells below the top edge and 5 cells right of the left edge."""
    shape = (SHAPE[0] + 2 * margin, SHAPE[1] + 2 * margin)
    row = np.stack([np.full(SHAPE[1], 5), np.arange(SHAPE[1])], axis=-1)
    rows = np.delete(np.arange(SHAPE[0]), 5)
    column = np.stack([rows, np.full(rows.size, 5)], axis=-1)
    out = sweep.acoustic(
        np.full(shape, 2000.0),
        10.0,
        1e-3,
        source_amplitudes=ricker(15.0, NT, 1e-3)[None, None],
        source_locations=(np.array(SOURCE) + margin)[None, None].astype(np.int64),
        receiver_locations=(np.concatenate([row, column]) + margin)[None].astype(np.int64),
        accuracy=8,
        pml_width=width,
        pml_freq=15.0,
        max_vel=2000.0,
        impl="eager",
    )
    return np.asarray(out.receivers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--widths", default="10,20,40")
    parser.add_argument("--margin", type=int, default=300)
    args = parser.parse_args()
    widths = [int(w) for w in args.widths.split(",")]
    lagged = _eager.EagerBase.cpml_operator
    print("| psi in W | " + " | ".join(f"{w} cells" for w in widths) + " |")
    print("|---|" + "---:|" * len(widths))
    variants = (("psi^n (sweep's kernels)", lagged), ("psi^{n+1}", cpml_operator_unlagged))
    for name, operator in variants:
        _eager.EagerBase.cpml_operator = operator
        errors = []
        for w in widths:
            ref = receivers_at(args.margin, w)
            errors.append(np.linalg.norm(receivers_at(0, w) - ref) / np.linalg.norm(ref))
        print(f"| {name} | " + " | ".join(f"{e:.2e}" for e in errors) + " |", flush=True)
    _eager.EagerBase.cpml_operator = lagged


if __name__ == "__main__":
    main()
