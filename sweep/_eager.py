"""Eager acoustic propagator written once against the Python Array API.

The same code runs on NumPy, CuPy, PyTorch and JAX arrays.  It is the
reference for the compiled kernels (same discrete operator, see
``cuda/acoustic_stencil.h``) and it is differentiable by the framework's own
autodiff (torch.autograd, jax.vjp).  Every operation is out of place so that
JAX can trace it; the step is a pure function of (state, inputs) so callers
may wrap it in ``torch.compile`` or ``jax.lax.scan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _fd
from ._grid import Geometry
from ._xp import array_namespace, device_of, pad_zeros, scatter_add


@dataclass
class EagerAcoustic:
    """Constants of one eager propagation, converted to the caller's arrays."""

    geom: Geometry
    xp: Any
    dtype: Any
    device: Any

    @classmethod
    def build(cls, geom: Geometry, like: Any) -> EagerAcoustic:
        """Prepare constants on the namespace/device/dtype of ``like``."""
        xp = array_namespace(like)
        self = cls(geom, xp, like.dtype, device_of(like))
        self._setup()
        return self

    def _asarray(self, x: np.ndarray, dtype: Any = None) -> Any:
        return self.xp.asarray(x, dtype=dtype or self.dtype, device=self.device)

    def _setup(self) -> None:
        g, xp = self.geom, self.xp
        nd = g.ndim
        self.c1 = [float(c) for c in _fd.first_derivative(g.order)]
        self.c2 = [float(c) for c in _fd.second_derivative(g.order)]
        self.maps = [self._asarray(g.axis_map(d), xp.int64) for d in range(nd)]
        live = np.ones(g.padded_shape)
        for d in range(nd):
            shape = [1] * nd
            shape[d] = -1
            live = live * g.axis_live(d).reshape(shape)
        self.live = self._asarray(live[None])
        self.pml = []
        for d in range(nd):
            shape = [1] * (nd + 1)
            shape[d + 1] = -1
            a, b = g.pml_profiles[d]
            self.pml.append((self._asarray(a.reshape(shape)), self._asarray(b.reshape(shape))))
        # The CPML memory variables live in strips along their own axis only.
        self.strips = [g.cpml_strips(d) for d in range(nd)]
        self.pml_strip = [
            [tuple(_along(p, d + 1, s0, s0 + n) for p in self.pml[d]) for s0, n in self.strips[d]]
            for d in range(nd)
        ]
        self.ghosts = []
        for d in range(nd):
            mirror, ghost = g.ghost_mirror(d)
            if ghost.any():
                shape = [1] * (nd + 1)
                shape[d + 1] = -1
                self.ghosts.append(
                    (d, self._asarray(mirror, xp.int64), self._asarray(ghost.reshape(shape)))
                )
        n = g.shot_stride
        shot_off = np.arange(g.n_shots, dtype=np.int64)[:, None] * n
        self.src_global = self._asarray((g.src_idx + shot_off).reshape(-1), xp.int64)
        self.src_local = self._asarray(g.src_idx.reshape(-1), xp.int64)
        self.rec_global = self._asarray((g.rec_idx + shot_off).reshape(-1), xp.int64)
        self.rdx = [1.0 / dx for dx in g.spacing]

    # -- model ---------------------------------------------------------------
    def v2dt2(self, v: Any) -> Any:
        """(v dt)^2 on the padded grid, zero outside the updated cells.

        The CPML copies the edge velocities outward; autodiff carries that
        copy's derivative back to the edge cells, as the compiled path does.
        """
        xp = self.xp
        v_pad = v
        for d, m in enumerate(self.maps):
            v_pad = xp.take(v_pad, m, axis=d)
        return (v_pad * self.geom.dt) ** 2 * self.live[0]

    # -- stencils ------------------------------------------------------------
    # Stencils take arrays with a halo along their own axis only, where each
    # tap is a plain shifted slice: compilers (torch.compile, XLA) vectorise
    # slices, not the wrap-around index arithmetic of a roll.
    def _tap(self, f: Any, axis: int, k: int) -> Any:
        h = self.geom.halo
        return _along(f, axis, h + k, f.shape[axis] - h + k)

    def _d2(self, f: Any, axis: int) -> Any:
        out = self.c2[0] * self._tap(f, axis, 0)
        for k, c in enumerate(self.c2[1:], start=1):
            out = out + c * (self._tap(f, axis, k) + self._tap(f, axis, -k))
        return out

    def _d1(self, f: Any, axis: int) -> Any:
        out = None
        for k, c in enumerate(self.c1, start=1):
            term = c * (self._tap(f, axis, k) - self._tap(f, axis, -k))
            out = term if out is None else out + term
        return out

    def _interior(self, f: Any, keep: int | None = None) -> Any:
        """``f`` without its halo, except along axis ``keep``."""
        h = self.geom.halo
        sl = [slice(None)] + [
            slice(None) if ax == keep else slice(h, f.shape[ax] - h)
            for ax in range(1, self.geom.ndim + 1)
        ]
        return f[tuple(sl)]

    def _pad(self, x: Any, axes: Any = None) -> Any:
        """Zero halo around an interior array (the inverse of ``_interior``)."""
        h = self.geom.halo
        axes = range(1, self.geom.ndim + 1) if axes is None else axes
        return pad_zeros(x, [(h, h) if ax in axes else (0, 0) for ax in range(len(x.shape))])

    def _strip_shape(self, d: int, n: int, halo: int) -> tuple[int, ...]:
        """Shape of an array over ``n`` strip cells of axis ``d`` (+ ``halo`` each side)."""
        g = self.geom
        shape = [g.n_shots] + [m - 2 * g.halo for m in g.padded_shape]
        shape[d + 1] = n + 2 * halo
        return tuple(shape)

    def initial_state(self) -> dict[str, Any]:
        """Zero wavefields: u_prev, u and the CPML memory variables per axis.

        ``psi[d]`` and ``zeta[d]`` are lists with one array per strip of axis
        ``d`` (see :meth:`Geometry.cpml_strips`), interior along the other
        axes; psi keeps a zero halo along ``d`` for its derivative taps.
        """
        g, xp = self.geom, self.xp

        def zeros(shape: tuple[int, ...]) -> Any:
            return xp.zeros(shape, dtype=self.dtype, device=self.device)

        h = g.halo
        return {
            "u_prev": zeros((g.n_shots, *g.padded_shape)),
            "u": zeros((g.n_shots, *g.padded_shape)),
            "psi": [
                [zeros(self._strip_shape(d, n, h)) for _, n in s] for d, s in enumerate(self.strips)
            ],
            "zeta": [
                [zeros(self._strip_shape(d, n, 0)) for _, n in s] for d, s in enumerate(self.strips)
            ],
        }

    def padded_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` with psi and zeta on the whole padded grid (as the compiled core's)."""
        g, h = self.geom, self.geom.halo
        out = {"u_prev": state["u_prev"], "u": state["u"], "psi": [], "zeta": []}
        for d, strips in enumerate(self.strips):
            ax = d + 1
            for key, halo in (("psi", h), ("zeta", 0)):
                full = None
                for (s0, n), x in zip(strips, state[key][d], strict=True):
                    widths = [(h, h)] * len(x.shape)
                    widths[0] = (0, 0)
                    widths[ax] = (s0, g.padded_shape[d] - s0 - n)
                    x = pad_zeros(_along(x, ax, halo, halo + n), widths)
                    full = x if full is None else full + x
                if full is None:
                    full = self.xp.zeros_like(state["u"])
                out[key].append(full)
        return out

    def step(self, state: dict[str, Any], v2dt2: Any, amp_t: Any | None) -> tuple[dict, Any]:
        """One time step: returns the new state and the receiver samples of u^t.

        The Laplacian runs on the whole interior; the CPML terms of axis d
        only on its strips, and are added to W there (psi, zeta, a and b
        vanish elsewhere, so this is the operator of the compiled kernels).
        """
        xp, g = self.xp, self.geom
        h = g.halo
        u, u_prev = state["u"], state["u_prev"]
        inner = self._interior
        w = None
        psi_new, zeta_new = [], []
        for d in range(g.ndim):
            axis = d + 1
            rdx = self.rdx[d]
            u_axis = inner(u, keep=axis)
            lap = self._d2(u_axis, axis) * (rdx * rdx)
            w = lap if w is None else w + lap
            n_int = lap.shape[axis]
            psi_d, zeta_d = [], []
            for (s0, n), (a, b), psi, zeta in zip(
                self.strips[d], self.pml_strip[d], state["psi"][d], state["zeta"][d], strict=True
            ):
                u_s = _along(u_axis, axis, s0 - h, s0 + n + h)
                d1psi = self._d1(psi, axis) * rdx
                # The strip's second difference again, not a slice of lap:
                # slicing lap makes inductor write lap out as a whole array.
                zn = b * zeta + a * (self._d2(u_s, axis) * (rdx * rdx) + d1psi)
                d1u = self._d1(u_s, axis) * rdx
                psi_d.append(self._pad(b * _along(psi, axis, h, h + n) + a * d1u, [axis]))
                zeta_d.append(zn)
                i0 = s0 - h  # the strip's first cell in interior coordinates
                widths = [(0, 0)] * len(lap.shape)
                widths[axis] = (i0, n_int - i0 - n)
                w = w + pad_zeros(d1psi + zn, widths)
            psi_new.append(psi_d)
            zeta_new.append(zeta_d)
        # The halo is never updated: the interior update, padded with zeros.
        u_new = self._pad(inner(xp.expand_dims(v2dt2, axis=0)) * w + 2 * inner(u) - inner(u_prev))
        shape = u_new.shape
        rec = None
        if self.rec_global.shape[0]:
            rec = xp.reshape(xp.take(xp.reshape(u, (-1,)), self.rec_global), (shape[0], -1))
        if amp_t is not None and self.src_global.shape[0]:
            inj = -xp.take(xp.reshape(v2dt2, (-1,)), self.src_local) * xp.reshape(amp_t, (-1,))
            u_new = xp.reshape(scatter_add(xp.reshape(u_new, (-1,)), self.src_global, inj), shape)
        for d, mirror, ghost in self.ghosts:
            u_new = u_new - ghost * xp.take(u_new, mirror, axis=d + 1)
        return {"u_prev": u, "u": u_new, "psi": psi_new, "zeta": zeta_new}, rec

    def run(self, v: Any, amp: Any, progress: bool = False) -> tuple[Any, dict[str, Any]]:
        """Propagate all time steps; returns receivers (n_shots, n_rec, nt) and final state."""
        xp, g = self.xp, self.geom
        v2dt2 = self.v2dt2(v)
        state = self.initial_state()
        records = []
        steps = range(g.nt)
        if progress:
            from tqdm.auto import tqdm

            steps = tqdm(steps, desc="sweep eager", unit="step")
        for t in steps:
            amp_t = amp[:, :, t] if amp is not None and g.n_src else None
            state, rec = self.step(state, v2dt2, amp_t)
            if rec is not None:
                records.append(rec)
        if records:
            receivers = xp.stack(records, axis=-1)
        else:
            receivers = xp.zeros((g.n_shots, g.n_rec, g.nt), dtype=self.dtype, device=self.device)
        return receivers, self.padded_state(state)


def _along(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x[start:stop]`` along ``axis``."""
    sl = [slice(None)] * len(x.shape)
    sl[axis] = slice(start, stop)
    return x[tuple(sl)]
