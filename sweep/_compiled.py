"""Driver for the compiled acoustic kernels (C/OpenMP on the host, CUDA via CuPy).

It owns buffer allocation and the bookkeeping of swapped buffers; the time
loop itself runs inside the kernels, in chunks between Python-level events
(progress updates).  Host arrays go to ``sweep._C``; CuPy arrays go to
``sweep._cuda_backend``.  Both take the same parameter record and pointer
record (``sweep._params``), so this file is the one driver for both devices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._grid import Geometry
from ._params import ACOUSTIC_FIELDS


def _ptr(x: Any) -> int:
    if x is None:
        return 0
    if isinstance(x, np.ndarray):
        return int(x.ctypes.data)
    return int(x.data.ptr)  # CuPy


class _Fields:
    """Pointer record plus the arrays it points to (kept alive here)."""

    def __init__(self) -> None:
        self.rec = np.zeros((), dtype=ACOUSTIC_FIELDS)
        self._keep: list[Any] = []

    def set(self, name: str, value: Any, axis: int | None = None) -> None:
        self._keep.append(value)
        if axis is None:
            self.rec[name] = _ptr(value)
        else:
            self.rec[name][axis] = _ptr(value)


@dataclass
class Tape:
    """What the adjoint pass needs from the forward pass: arrays plus the geometry."""

    geom: Geometry
    v2dt2: Any
    amp: Any
    store: Any  # (nt, n_shots, *padded) W^n, or None


class CompiledAcoustic:
    """Runs the acoustic kernels on host (NumPy) or device (CuPy) arrays."""

    def __init__(self, geom: Geometry, xp: Any, dtype: Any, n_threads: int = 0) -> None:
        self.geom = geom
        self.xp = xp
        self.dtype = np.dtype(dtype)
        # Below ~64k cells per step, OpenMP's per-step barriers cost more than
        # the work they share (badly so on a loaded machine): run on one thread.
        small = geom.n_shots * geom.shot_stride < 65536
        self.n_threads = int(n_threads or (1 if small else 0))
        self.axes = [3 - geom.ndim + d for d in range(geom.ndim)]
        if xp is np:
            from . import _C

            self._run = _C.acoustic_run
        else:
            from . import _cuda_backend

            self._run = _cuda_backend.acoustic_run

    def _zeros(self, *shape: int) -> Any:
        return self.xp.zeros(shape, dtype=self.dtype)

    def _field(self) -> Any:
        g = self.geom
        return self._zeros(g.n_shots, *g.padded_shape)

    def _common(self, f: _Fields, v2dt2: Any, amp: Any) -> None:
        g, xp = self.geom, self.xp
        f.set("v2dt2", v2dt2)
        for d, axis in enumerate(self.axes):
            a, b = g.pml_profiles[d]
            f.set("pml_a", xp.asarray(a, dtype=self.dtype), axis)
            f.set("pml_b", xp.asarray(b, dtype=self.dtype), axis)
        if g.n_src:
            f.set("src_amp", amp)
            f.set("src_idx", xp.asarray(g.src_idx))
        if g.n_rec:
            f.set("rec_idx", xp.asarray(g.rec_idx))

    def _chunks(self, n: int, progress: bool, desc: str) -> list[int]:
        n_chunks = min(n, 100) if progress else 1
        sizes = [n // n_chunks + (1 if i < n % n_chunks else 0) for i in range(n_chunks)]
        return [s for s in sizes if s]

    def forward(
        self, v2dt2: Any, amp: Any, *, store: bool, progress: bool = False
    ) -> tuple[Any, dict[str, Any], Tape | None]:
        """Run all steps; returns receivers, final state and (if ``store``) the tape."""
        g, xp = self.geom, self.xp
        f = _Fields()
        self._common(f, v2dt2, amp)
        u_prev, u = self._field(), self._field()
        psi = {ax: [self._field(), self._field()] for ax in self.axes}
        zeta = {ax: self._field() for ax in self.axes}
        rec = self._zeros(g.n_shots, g.n_rec, g.nt) if g.n_rec else None
        f.set("rec", rec)
        for ax in self.axes:
            f.set("zeta", zeta[ax], ax)
        w_store = xp.empty((g.nt, g.n_shots, *g.padded_shape), dtype=self.dtype) if store else None
        bar = _progress(progress, g.nt, "sweep forward")
        t = 0
        for n in self._chunks(g.nt, progress, "forward"):
            f.set("u_prev", u_prev)
            f.set("u", u)
            for ax in self.axes:
                f.set("psi", psi[ax][0], ax)
                f.set("psi_new", psi[ax][1], ax)
            f.set("store", None if w_store is None else w_store[t : t + n])
            self._run(
                g.ndim,
                g.order,
                self.dtype == np.float64,
                False,
                g.params(),
                f.rec,
                t,
                n,
                self.n_threads,
            )
            if n % 2:
                u_prev, u = u, u_prev
                for ax in self.axes:
                    psi[ax].reverse()
            t += n
            bar.update(n)
        bar.close()
        if rec is None:
            rec = self._zeros(g.n_shots, 0, g.nt)
        state = {
            "u_prev": u_prev,
            "u": u,
            "psi": [psi[ax][0] for ax in self.axes],
            "zeta": [zeta[ax] for ax in self.axes],
        }
        tape = Tape(g, v2dt2, amp, w_store) if store else None
        return rec, state, tape

    def backward(
        self, tape: Tape, grad_rec: Any, *, model: bool, source: bool, progress: bool = False
    ) -> tuple[Any, Any]:
        """Run the adjoint pass.

        Returns the gradient with respect to the padded ``v^2 dt^2`` (summed
        over shots) and with respect to the source amplitudes, each None when
        not requested.
        """
        g = self.geom
        f = _Fields()
        self._common(f, tape.v2dt2, tape.amp)
        lam_prev, lam = self._field(), self._field()
        P = {ax: [self._field(), self._field()] for ax in self.axes}
        Z = {ax: [self._field(), self._field()] for ax in self.axes}
        if g.n_rec:
            f.set("rec", self.xp.ascontiguousarray(grad_rec, dtype=self.dtype))
        grad_v = self._field() if model else None
        grad_src = self._zeros(g.n_shots, g.n_src, g.nt) if source and g.n_src else None
        f.set("grad_v2dt2", grad_v)
        f.set("grad_src", grad_src)
        if model and tape.store is None:
            raise RuntimeError("the forward pass stored no wavefield; model gradient unavailable")
        bar = _progress(progress, g.nt, "sweep adjoint")
        t_end = g.nt
        for n in self._chunks(g.nt, progress, "adjoint"):
            f.set("u_prev", lam_prev)
            f.set("u", lam)
            for ax in self.axes:
                f.set("psi", P[ax][0], ax)
                f.set("psi_new", P[ax][1], ax)
                f.set("zeta", Z[ax][0], ax)
                f.set("zeta_new", Z[ax][1], ax)
            f.set("store", tape.store[t_end - n : t_end] if model else None)
            self._run(
                g.ndim,
                g.order,
                self.dtype == np.float64,
                True,
                g.params(),
                f.rec,
                t_end,
                n,
                self.n_threads,
            )
            if n % 2:
                lam_prev, lam = lam, lam_prev
                for ax in self.axes:
                    P[ax].reverse()
                    Z[ax].reverse()
            t_end -= n
            bar.update(n)
        bar.close()
        if grad_v is not None:
            grad_v = grad_v.sum(axis=0)
        if source and grad_src is None:
            grad_src = self._zeros(g.n_shots, g.n_src, g.nt)
        return grad_v, grad_src


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(enabled: bool, total: int, desc: str) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="step")
