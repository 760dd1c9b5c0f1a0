"""VRZ on the compiled kernels: the stepper and the model gradients.

The kernels (``cuda/vrz_stencil.h``: C/OpenMP through ``sweep._C.run``,
CUDA through ``sweep._cuda_backend.run``) take the acoustic's parameter
record and step one acoustic-like wavefield, so :class:`CompiledVRZ` is
:class:`sweep._compiled.CompiledStepper` with its default one-wavefield
states (:class:`sweep._compiled.FwdState`, an :class:`~sweep._compiled.AdjState`
with the VRZ gradients) and the VRZ field table, models, snapshots and
gradients.  A :class:`sweep._stepper.ReversibleStepper`: the leapfrog of
``u`` runs backwards in time on the plain cells, and since the gradient of
``B`` at a cell reads its neighbours' snapshot values, the adjoint rebuilds
each step's whole snapshot in a one-step buffer from the reconstruction
(plain cells), the band's save and the CPML replay, then correlates it as
full storage does.

The C kernels' snapshot is compact (:attr:`CompiledVRZ.snapshot_shape`):
``u`` of every stored cell, and ``W`` and ``psi`` only of the outer cells
(the CPML and the band), since a plain cell's ``W`` is a stencil of ``u``,
which the adjoint recomputes, and its ``psi`` is zero.  A compressed store
(bf16) also keeps ``W`` of the plain cells
(:meth:`CompiledVRZ.snapshot_shape_for`): recomputed from rounded ``u``, a
second difference of it, ``W`` would carry several times the rounding error.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from ..._compiled import _ADJ_SLOT, _RECON_SLOT, AdjState, CompiledStepper, FwdState, _Fields
from ..._grid import Geometry

# Field slots (see CompiledStepper.field) of the models, past the adjoint's.
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
        self.recon_snapshot: Any = None  # boundary saving: the step's rebuilt snapshot


class CompiledVRZ(CompiledStepper):
    """Runs the VRZ kernels on host (NumPy) or device (CuPy) arrays.

    Its coefficients are ``(K, B)`` on the padded grid in the kernels' layout
    (:meth:`kernel_coefficients`); a snapshot holds ``u`` of every stored
    cell and ``W``, ``psi`` of each axis of the outer cells
    (:attr:`snapshot_shape`).  A
    :class:`sweep._stepper.ReversibleStepper`: full storage, checkpointing
    and boundary saving (the band keeps ``u``, the snapshot's values of the
    band all ``2 + ndim``).
    """

    name = "vrz"
    reversible = True
    # Temporal blocking: a forward step streams u, u_prev, K and B (float32
    # bytes, as CompiledAcoustic counts them).
    time_blocking = True
    blocking_cell_bytes = 16
    # The 2D adjoint blocked as LSRTM's (sweep/equations/lsrtm/compiled.py): the
    # 2D benchmark's gradient (300 x 1000, 4 shots, order 8, 2 threads) spent
    # 1.31-1.35 s in the adjoint unblocked, 1.16-1.20 s at 16 steps in groups of
    # 4 rows (benchmarks/README.md, branch lsg2d).  3D: 4 steps in y tiles of 16
    # rows, not the forward's 8 in 48: the 3D benchmark's adjoint (128^3, one
    # shot, order 8, nt 100, 2 threads) took 5.13-5.45 s at 8 in 48, 4.38-4.47 s
    # at 4 in 16 (benchmarks/README.md, branch vrz3dadj).
    adjoint_blocking: ClassVar[dict[int, tuple[int, int, int]]] = {2: (16, 4, 1), 3: (4, 1, 16)}

    @property
    def snapshot_values(self) -> int:
        """Values per cell of a forward row and of the CPML replay: W, u and psi of each axis."""
        return 2 + self.geom.ndim

    @property
    def snapshot_shape(self) -> tuple[int, ...]:
        """Shape of one step's gradient snapshot.

        The C kernels' is compact: per shot one record of ``u`` of every
        stored cell, then ``W`` and ``psi`` of each axis of the outer cells
        (:attr:`sweep._grid.Geometry.outer_idx`), 1 + ndim blocks; a plain
        cell's ``W`` is recomputed from ``u`` (``cuda/vrz_stencil.h``,
        ``vrz_gradient_point``) and its ``psi`` is zero.  2D 300 x 1000 with a
        20-cell CPML: 1.54 values per stored cell instead of 4 (the nt-500
        store of 4 shots, float32: 4.4 GB instead of 11.3 GB).  The CUDA
        kernels keep ``2 + ndim`` values of every stored cell.
        """
        if self._cuda_receivers:  # the CUDA kernels (also their host build in the tests)
            return super().snapshot_shape
        return (self.geom.n_shots, self._record(keep_w=False))

    def snapshot_shape_for(self, compression: str | None) -> tuple[int, ...]:
        """Shape of one step's snapshot in a full-storage store of ``compression``.

        Compressed (bf16), the C kernels' record keeps ``W`` of every stored
        cell (``store_layout`` 1 of ``cuda/vrz_stencil.h``'s CPU rows): a
        plain cell's ``W`` recomputed from rounded ``u`` had 6x the error of
        rounding ``W`` (``docs/memory.md``).  2D 300 x 1000, CPML 20: 2.36
        values per stored cell, against 1.54 uncompressed and 4 on the GPU.
        """
        if compression is None or self._cuda_receivers:
            return self.snapshot_shape
        return (self.geom.n_shots, self._record(keep_w=True))

    def _record(self, *, keep_w: bool) -> int:
        """Values of one shot's C snapshot record: u, W (every cell, or outer), psi (outer)."""
        g = self.geom
        cells, outer = math.prod(g.store_shape), len(g.outer_idx)
        return cells + (cells if keep_w else outer) + g.ndim * outer

    def _layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        out = super()._layouts()
        if not self._cuda_receivers:  # either record length; _store_layout tells them apart
            out["store"] = ((-1, self.geom.n_shots, -1), 0)
        return out

    def _store_layout(self, f: _Fields) -> int:
        """Return ``store_layout`` for the snapshot buffer: 1 for a record with every cell's W."""
        store = f.array("store")
        if store is None or self._cuda_receivers:
            return 0
        record = store.shape[-1]
        if record == self._record(keep_w=False):
            return 0
        if record == self._record(keep_w=True):
            return 1
        raise ValueError(
            f"sweep kernels: a VRZ snapshot record of {record} values per shot; the kernels "
            f"take {self._record(keep_w=False)} (snapshot_shape) or "
            f"{self._record(keep_w=True)} (snapshot_shape_for('bf16'))"
        )

    @property
    def model_gradient_bytes(self) -> int:
        """Bytes of the per-shot gradient accumulators (K and B)."""
        return 2 * self.field_bytes

    @property
    def reconstruction_bytes(self) -> int:
        """Bytes of the reconstructed u^{t+1}, u^t and the one-step snapshot it rebuilds."""
        return 2 * self.field_bytes + math.prod(self.snapshot_shape) * self.dtype.itemsize

    def working_bytes(self, *, gradient: bool) -> int:
        """Arrays every run allocates besides the strategy's storage (for estimates).

        Forward: its state (kept on the result), padded K and B with their
        temporaries, and the receivers.  Gradient: also the adjoint state, the
        two per-shot gradient accumulators, the source-amplitude gradient and
        the model-size outputs.
        """
        g = self.geom
        item = self.dtype.itemsize
        fields = 2 + 3 * g.ndim  # u_prev, u, psi x2 and zeta per axis
        total = 6 * g.shot_stride * item + g.n_shots * g.n_rec * g.nt * item
        if gradient:
            fields += 5 + 4 * g.ndim  # mu x2, P x2 and Z x2 per axis, two gradients, K mu
            total += g.n_shots * g.n_src * g.nt * item + 8 * g.shot_stride * item
        return total + fields * self.field_bytes

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

    def new_adjoint(self, *, model: bool, source: bool) -> VRZAdjState:
        """Return zeroed adjoint wavefields and the gradient accumulators asked for."""
        return VRZAdjState(self, model=model, source=source)

    def start_reconstruction(self, adj: VRZAdjState, final: FwdState) -> None:
        """Run u backwards alongside ``adj`` from u^{nt}, u^{nt-1}; add the snapshot buffer."""
        adj.recon_next = self.copy_field(final.u, _RECON_SLOT)  # u^{nt}
        adj.recon = self.copy_field(final.u_prev, _RECON_SLOT + 1)  # u^{nt-1}
        adj.recon_snapshot = self.zeros(1, *self.snapshot_shape)

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

    # -- the hooks of CompiledStepper -----------------------------------------------
    def _set_coefficients(self, f: _Fields, coeffs: tuple[Any, Any], *, adjoint: bool) -> None:
        f.set("kappa_dt2", coeffs[0])
        f.set("buoyancy", coeffs[1])

    def _adjoint_state(self, f: _Fields, adj: VRZAdjState) -> None:
        adj.point(f)
        f.set("grad_kappa_dt2", adj.grad_kappa_dt2)
        f.set("grad_buoyancy", adj.grad_buoyancy)

    def _recon_fields(self, adj: VRZAdjState) -> dict[str, Any]:
        if adj.recon is None:
            return {}
        # The kernels rebuild each step's snapshot in slot 0 of the store.
        return {"recon_u_next": adj.recon_next, "recon_u": adj.recon,
                "store": adj.recon_snapshot}  # fmt: skip


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
