"""VRZ on the compiled kernels: the stepper and the model gradients.

The kernels (``cuda/vrz_stencil.h``: C/OpenMP through ``sweep._C.vrz_run``,
CUDA through ``sweep._cuda_backend.vrz_run``) take the acoustic's state and
parameter records, so :class:`CompiledVRZ` is the acoustic stepper with the
VRZ models, snapshots and gradients.  Its forward pass does not run
backwards in time in this implementation (boundary saving would need the
band's ``u`` and the snapshot's ``u`` and ``psi`` there), so it is a plain
:class:`sweep._stepper.Stepper`: full storage and checkpointing.
"""

from __future__ import annotations

import functools
from typing import Any

from ..._compiled import _ADJ_SLOT, AdjState, CompiledAcoustic
from ..._compiled import _WRITES as ACOUSTIC_WRITES
from ..._grid import Geometry
from ..._params import VRZ_FIELDS

# Buffers each direction writes (see sweep._compiled).
_WRITES = {
    False: ACOUSTIC_WRITES[False],
    True: frozenset(
        {"u_prev", "u", "psi", "psi_new", "zeta", "zeta_new", "grad_kappa_dt2", "grad_buoyancy",
         "grad_src"}
    ),
}  # fmt: skip
# Field slots (see CompiledAcoustic.field) of the models, past the acoustic's.
_KAPPA_SLOT = 29
_BUOYANCY_SLOT = 30


class VRZAdjState(AdjState):
    """Adjoint wavefields (the acoustic's) and the VRZ gradient accumulators.

    Per shot, ``grad_kappa_dt2`` accumulates ``K dL/dK``: sum_t mu^{t+1} W^t,
    less ``B f mu`` at the sources, which :meth:`CompiledVRZ.finish_gradient`
    divides by K; ``grad_buoyancy`` accumulates dL/dB (``cuda/vrz_stencil.h``).
    """

    def __init__(self, engine: CompiledVRZ, *, model: bool, source: bool) -> None:
        super().__init__(engine, model=False, source=source)
        slot = _ADJ_SLOT + 2 + 4 * engine.geom.ndim  # after mu, mu_prev, P and Z
        self.grad_kappa_dt2 = engine.field(slot) if model else None
        self.grad_buoyancy = engine.field(slot + 1) if model else None


class CompiledVRZ(CompiledAcoustic):
    """Runs the VRZ kernels on host (NumPy) or device (CuPy) arrays.

    Its coefficients are ``(K, B)`` on the padded grid in the kernels' layout
    (:meth:`kernel_coefficients`); a snapshot holds ``W``, ``u`` and ``psi``
    of each axis per cell (``2 + ndim`` values).  Not reversible: the
    boundary-saving members it inherits are never used.
    """

    name = "vrz"
    reversible = False
    kernels = "vrz"
    fields_dtype = VRZ_FIELDS
    writes = _WRITES
    # A forward step streams u, u_prev, K and B (float32 bytes, see CompiledAcoustic).
    blocking_cell_bytes = 16

    @property
    def snapshot_values(self) -> int:
        """Values per cell of a snapshot: W, u and psi of each axis."""
        return 2 + self.geom.ndim

    @property
    def snapshot_shape(self) -> tuple[int, ...]:
        """Shape of one step's snapshot: (values, shots, *store_shape)."""
        return (self.snapshot_values, self.geom.n_shots, *self.geom.store_shape)

    @property
    def model_gradient_bytes(self) -> int:
        """Bytes of the per-shot gradient accumulators (K and B)."""
        return 2 * self.field_bytes

    def working_bytes(self, *, gradient: bool) -> int:
        """Return the acoustic's :meth:`~CompiledAcoustic.working_bytes` with B and its gradient."""
        extra = 3 * self.geom.shot_stride * self.dtype.itemsize  # B and its padding
        if gradient:
            extra += self.field_bytes + 4 * self.geom.shot_stride * self.dtype.itemsize
        return super().working_bytes(gradient=gradient) + extra

    @functools.cached_property
    def buffer_layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        """The acoustic's layouts (:meth:`CompiledAcoustic.buffer_layouts`) and VRZ's fields."""
        g = self.geom
        pitch = g.layout_shape[-1]
        out = dict(super().buffer_layouts)
        for name in ("kappa_dt2", "buoyancy"):
            out[name] = (g.padded_shape, pitch)
        for name in ("grad_kappa_dt2", "grad_buoyancy"):
            out[name] = ((g.n_shots, *g.padded_shape), pitch)
        return out

    def kernel_coefficients(self, vp: Any, z: Any) -> tuple[Any, Any]:
        """``(K, B)`` of the eager reference (``EagerVRZ.coefficients``), in the kernels' layout.

        ``K = z vp dt^2``, zero where the wavefield is not updated, and
        ``B = vp / z`` on the whole padded grid (even mirrors in the
        free-surface ghosts); ``vp``, ``z`` in the kernels' layout
        (:func:`sweep._xp.kernel_array`).
        """
        g, xp = self.geom, self.xp
        live = xp.asarray(g.live(), dtype=self.dtype)
        kappa_dt2 = g.pad(vp * z) * (g.dt * g.dt) * live
        buoyancy = g.pad(vp / z, mirrored=True)
        return self.copy_field(kappa_dt2, _KAPPA_SLOT), self.copy_field(buoyancy, _BUOYANCY_SLOT)

    def _set_coefficients(self, f: Any, coeffs: tuple[Any, Any]) -> None:
        f.set("kappa_dt2", coeffs[0])
        f.set("buoyancy", coeffs[1])

    def _set_gradients(self, f: Any, adj: VRZAdjState) -> None:
        f.set("grad_kappa_dt2", adj.grad_kappa_dt2)
        f.set("grad_buoyancy", adj.grad_buoyancy)

    def new_adjoint(self, *, model: bool, source: bool) -> VRZAdjState:
        """Return zeroed adjoint wavefields and the gradient accumulators asked for."""
        return VRZAdjState(self, model=model, source=source)

    def finish_gradient(self, adj: VRZAdjState, coeffs: tuple[Any, Any]) -> tuple[Any, Any]:
        """Return the gradients with respect to the padded K and B, summed over shots.

        Cells with K = 0 (halo, free-surface rows) get a zero K gradient; B's
        gradient of halo cells is already on the cells they copy (see
        :func:`model_gradients`).
        """
        xp = self.xp
        kappa_dt2 = coeffs[0]
        live = kappa_dt2 > 0
        g_kappa = adj.grad_kappa_dt2.sum(axis=0)
        g_kappa = xp.where(live, g_kappa / xp.where(live, kappa_dt2, 1), 0).astype(g_kappa.dtype)
        return g_kappa, adj.grad_buoyancy.sum(axis=0)


def model_gradients(
    geom: Geometry, g_kappa_dt2: Any, g_buoyancy: Any, vp: Any, z: Any
) -> dict[str, Any]:
    """Gradients with respect to ``vp`` and ``z`` from those w.r.t. the padded K and B.

    Both padded models repeat the edge cells outward, so each padded cell's
    share goes to the model cell it copies (:meth:`Geometry.fold_to_model`).
    The kernels have already put B's halo cells on the stored cells they
    copy (a ghost's on its mirror, the others' on the edge cell), so one fold
    serves both.  Then the chain rule of ``K = z vp dt^2`` and ``B = vp / z``.
    """
    g_kz = geom.fold_to_model(g_kappa_dt2) * (geom.dt * geom.dt)  # dL/d(vp z)
    g_b = geom.fold_to_model(g_buoyancy)  # dL/d(vp / z)
    return {"vp": g_kz * z + g_b / z, "z": g_kz * vp - g_b * vp / (z * z)}
