"""The Born (LSRTM) stepper of the compiled kernels.

The kernels (``sweep_cy/lsrtm_cpu_impl.h``, ``cuda/lsrtm.cu``, over the point
arithmetic of ``cuda/lsrtm_stencil.h``) step two acoustic wavefields, the
background ``u0`` and the scattered ``u1``, each with its own CPML memory
variables, so a state here is two acoustic states
(:class:`sweep._compiled.FwdState`, :class:`sweep._compiled.AdjState`) and
:class:`CompiledLSRTM` is :class:`sweep._compiled.CompiledStepper` with the
Born field table.  The snapshot of a step is ``W0`` and ``W1`` of the model
and CPML cells (two values per cell); the adjoint carries ``mu = K lambda``
as the acoustic one does, the background's as ``G0 = mu0 + R mu1`` (see
``cuda/lsrtm_stencil.h``).  Both fields are leapfrogs (``u1``'s driven by
``dK W0``), so the forward pass runs backwards in time given both:
:class:`CompiledLSRTM` is a :class:`sweep._stepper.ReversibleStepper` whose
band save holds ``u0``, ``u1`` (state) and ``W0``, ``W1`` (snapshot).
"""

from __future__ import annotations

from typing import Any, ClassVar, NamedTuple

from ..._compiled import AdjState, CompiledStepper, FwdState, _Fields
from ..._stepper import ReversibleState

__all__ = ["BornCoefficients", "CompiledLSRTM"]

# Field slots (see CompiledStepper.field): the forward states, the adjoint
# states, the model and the reconstruction, distinct within one kernel call
# of either direction.
_FWD_SLOTS = (0, 11)
_ADJ_SLOTS = (22, 37)
_MODEL_SLOT = 52
_RECON_SLOT = 55  # u0^{t+1}, u0^t, u1^{t+1}, u1^t


class BornCoefficients(NamedTuple):
    """The model as the Born kernels take it, on the padded grid (row layout).

    Attributes
    ----------
    v2dt2 : array
        ``K = (vp dt)^2``, zero where the wavefield is held at zero, as the
        acoustic kernels' ``v2dt2``.
    dv2dt2 : array
        ``dK = 2 K mp``, the factor of the Born source ``dK W0`` (forward).
    ratio : array
        ``R = dK / K = 2 mp`` where ``K > 0``, zero elsewhere (the adjoint's
        background field is ``G0 = mu0 + R mu1``).
    """

    v2dt2: Any
    dv2dt2: Any
    ratio: Any


class BornState(ReversibleState):
    """The background and scattered wavefields at one time (:class:`FwdState` each)."""

    def __init__(self, engine: CompiledLSRTM) -> None:
        self.background = FwdState(engine, slot=_FWD_SLOTS[0])
        self.scattered = FwdState(engine, slot=_FWD_SLOTS[1])

    def parts(self) -> list[Any]:
        """Return views of everything a checkpoint must hold (both fields' :meth:`parts`)."""
        return self.background.parts() + self.scattered.parts()

    def outer_parts(self) -> list[Any]:
        """Return views of what a CPML replay starts from (both fields' ``outer_parts``)."""
        return self.background.outer_parts() + self.scattered.outer_parts()


class BornAdjoint:
    """The adjoint fields G0, mu1 (:class:`AdjState` each) and the gradient accumulators.

    The background's field is ``G0 = mu0 + R mu1`` (``K lambda0 + dK lambda1``).
    ``background.grad_v2dt2`` accumulates ``sum_t G0 (W0 - f) + mu1 W1``
    (``K`` times the gradient with respect to ``K`` at fixed ``mp``) and
    ``scattered.grad_v2dt2`` ``sum_t mu1 (W0 - f)`` (``K`` times the gradient
    with respect to ``dK``), per shot; ``grad_src`` is the background's.
    """

    def __init__(self, engine: CompiledLSRTM, *, model: bool, source: bool) -> None:
        self.background = AdjState(engine, model=model, source=source, slot=_ADJ_SLOTS[0])
        self.scattered = AdjState(engine, model=model, source=False, slot=_ADJ_SLOTS[1])

    @property
    def grad_src(self) -> Any:
        """The source-amplitude gradient (None when not asked for)."""
        return self.background.grad_src


class CompiledLSRTM(CompiledStepper):
    """Runs the Born kernels on host (NumPy) or device (CuPy) arrays.

    A :class:`sweep._stepper.ReversibleStepper`: full storage (any place,
    bf16, sampling), checkpointing and boundary saving, which keeps ``u0``,
    ``u1`` (:attr:`band_values`) and ``W0``, ``W1`` of the band, replays
    the CPML of both fields and runs both backwards in the adjoint pass
    (``lsrtm_recon_point`` of ``cuda/lsrtm_stencil.h``).
    """

    name = "lsrtm"
    reversible = True
    snapshot_values = 2
    band_values = 2  # u0 and u1

    waves = 2  # u0 and u1 (state_bytes, live_state_bytes: CompiledStepper's)
    time_blocking = True  # both fields leapfrog in one stage (cpu_blocking.h)
    blocking_cell_bytes = 24  # u0, u0_prev, u1, u1_prev, K and dK at float32
    # The 2D adjoint blocked 16 steps deep in groups of 4 rows, though the
    # forward's default is unblocked: the 2D benchmark's gradient (300 x 1000,
    # 4 shots, order 8, 2 threads) spent 0.68-0.72 s in the adjoint unblocked,
    # 0.55-0.56 s at 16 steps (8: 0.58-0.63, 4: 0.73-0.77; benchmarks/README.md,
    # branch lsg2d).  The storing forward measured no difference blocked.
    adjoint_blocking: ClassVar[dict[int, tuple[int, int, int]]] = {2: (16, 4, 1)}

    # -- facts the memory strategies use --------------------------------------
    @property
    def model_gradient_bytes(self) -> int:
        """Bytes of the two per-shot gradient accumulators (:class:`BornAdjoint`)."""
        return 2 * self.field_bytes

    def working_bytes(self, *, gradient: bool) -> int:
        """Arrays every run allocates besides the strategy's storage (for estimates).

        Forward: its state (kept on the result), the three padded model arrays
        with their temporaries, and both receiver sets.  Gradient: also the
        adjoint state, the accumulators, the source-amplitude gradient and the
        model-size outputs.
        """
        g = self.geom
        item = self.dtype.itemsize
        fields = 2 * (2 + 3 * g.ndim)
        total = 6 * g.shot_stride * item + 2 * g.n_shots * g.n_rec * g.nt * item
        if gradient:
            fields += 2 * (2 + 4 * g.ndim) + 2
            total += g.n_shots * g.n_src * g.nt * item + 6 * g.shot_stride * item
        return total + fields * self.field_bytes

    # -- buffers and states ------------------------------------------------------
    def kernel_coefficients(self, vp: Any, mp: Any) -> BornCoefficients:
        """Return the kernels' model from ``vp`` and ``mp`` (kernel arrays, the model's shape).

        ``dK = K R`` is bitwise the eager ``2 K mp`` (scaling by 2 is exact).
        """
        g = self.geom
        k = g.pad_v2dt2(vp)
        ratio = 2 * g.pad_coefficient(mp)
        return BornCoefficients(
            *(self.copy_field(x, _MODEL_SLOT + i) for i, x in enumerate((k, k * ratio, ratio)))
        )

    def _layouts(self) -> dict[Any, tuple[tuple[int, ...], int]]:
        out = super()._layouts()
        g = self.geom
        out["rec"] = ((-1, g.n_shots, g.n_rec, g.nt), 0)  # forward: scattered, background
        return out

    def new_state(self) -> BornState:
        """Return zeroed forward wavefields (step 0)."""
        return BornState(self)

    def new_adjoint(self, *, model: bool, source: bool) -> BornAdjoint:
        """Return zeroed adjoint wavefields and the gradient accumulators asked for."""
        return BornAdjoint(self, model=model, source=source)

    def start_reconstruction(self, adj: BornAdjoint, final: BornState) -> None:
        """Run both forward fields backwards alongside ``adj``, from steps nt and nt - 1."""
        for i, (a, s) in enumerate(
            ((adj.background, final.background), (adj.scattered, final.scattered))
        ):
            a.recon_next = self.copy_field(s.u, _RECON_SLOT + 2 * i)
            a.recon = self.copy_field(s.u_prev, _RECON_SLOT + 2 * i + 1)

    def new_receivers(self) -> Any:
        """Return zeroed traces (2, n_shots, n_rec, nt): the scattered, then the background."""
        g = self.geom
        return self.zeros(2, g.n_shots, g.n_rec, g.nt)

    def finish_gradient(self, adj: BornAdjoint, coeffs: BornCoefficients) -> tuple[Any, Any]:
        """Return the gradients with respect to the padded ``K`` and ``mp``, summed over shots.

        ``K`` enters the Born source too (``dK = 2 K mp``), so its gradient
        at fixed ``mp`` is ``A / K`` (``A`` holds ``G0 = mu0 + R mu1``, which
        adds the ``R B`` of the Born source) and that of ``mp`` is ``2 B``,
        with ``A``, ``B`` the accumulators of :class:`BornAdjoint`.  Cells
        with ``K = 0`` take no part and get zero.
        """
        xp = self.xp
        k = coeffs.v2dt2
        live = k > 0
        a = adj.background.grad_v2dt2.sum(axis=0)
        b = adj.scattered.grad_v2dt2.sum(axis=0)
        g_k = xp.where(live, a / xp.where(live, k, 1), 0).astype(a.dtype)
        g_mp = xp.where(live, 2 * b, 0).astype(b.dtype)
        return g_k, g_mp

    # -- the hooks of CompiledStepper -----------------------------------------------
    def _set_coefficients(self, f: _Fields, coeffs: BornCoefficients, *, adjoint: bool) -> None:
        f.set("v2dt2", coeffs.v2dt2)
        f.set("dv2dt2", coeffs.dv2dt2)

    def _recon_fields(self, adj: BornAdjoint) -> dict[str, Any]:
        b, s = adj.background, adj.scattered
        if b.recon is None:
            return {}
        return {"recon_u0_next": b.recon_next, "recon_u0": b.recon,
                "recon_u1_next": s.recon_next, "recon_u1": s.recon}  # fmt: skip

    def _receiver_record(self, x: Any) -> Any:
        return x if x.ndim == 4 else x[None]  # the adjoint's residuals: one set

    def _forward_state(self, f: _Fields, state: BornState) -> None:
        state.background.point(f, "0")
        state.scattered.point(f, "1")

    def _swap_forward(self, state: BornState, n: int) -> None:
        if n % 2:
            state.background.swap()
            state.scattered.swap()

    def _adjoint_state(self, f: _Fields, adj: BornAdjoint) -> None:
        adj.background.point(f, "0")
        adj.scattered.point(f, "1")
        f.set("grad_v2dt2", adj.background.grad_v2dt2)
        f.set("grad_dv2dt2", adj.scattered.grad_v2dt2)

    def _swap_adjoint(self, adj: BornAdjoint) -> None:
        adj.background.swap()
        adj.scattered.swap()

    def _watched(self, state: BornState | BornAdjoint) -> Any:
        scattered = state.scattered
        return scattered.lam if isinstance(scattered, AdjState) else scattered.u
