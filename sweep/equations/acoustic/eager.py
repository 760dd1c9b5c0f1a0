"""The constant-density acoustic equation's eager step on :class:`sweep._eager.EagerBase`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..._callbacks import Callbacks
from ..._eager import EagerBase


@dataclass
class EagerAcoustic(EagerBase):
    """The constant-density acoustic equation on :class:`EagerBase`."""

    # -- model ---------------------------------------------------------------
    def v2dt2(self, v: Any) -> Any:
        """(v dt)^2 on the padded grid, zero outside the updated cells.

        The CPML copies the edge velocities outward; autodiff carries that
        copy's derivative back to the edge cells, as the compiled path does.
        """
        return (self.pad_model(v) * self.geom.dt) ** 2 * self.live[0]

    coefficients = v2dt2

    def initial_state(self) -> dict[str, Any]:
        """Zero wavefields: u_prev, u and the CPML memory variables per axis.

        ``psi[d]`` and ``zeta[d]`` are lists with one array per strip of axis
        ``d`` (see :meth:`Geometry.cpml_strips`), interior along the other
        axes; psi keeps a zero halo along ``d`` for its derivative taps.
        """
        psi, zeta = self.cpml_state()
        return {"u_prev": self.field(), "u": self.field(), "psi": psi, "zeta": zeta}

    def padded_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """``state`` with psi and zeta on the whole padded grid (as the compiled core's)."""
        psi, zeta = self.padded_cpml(state["psi"], state["zeta"], state["u"])
        return {"u_prev": state["u_prev"], "u": state["u"], "psi": psi, "zeta": zeta}

    final_state = padded_state

    def step(self, state: dict[str, Any], v2dt2: Any, amp_t: Any | None) -> tuple[dict, Any]:
        """One time step: returns the new state and the receiver samples of u^t.

        The Laplacian runs on the whole interior; the CPML terms of axis d
        only on its strips, and are added to W there (psi, zeta, a and b
        vanish elsewhere, so this is the operator of the compiled kernels).
        """
        u, u_prev = state["u"], state["u_prev"]
        w, psi_new, zeta_new = self.cpml_operator(u, state["psi"], state["zeta"])
        # The halo is never updated: the interior update, padded with zeros.
        u_new = self.leapfrog(v2dt2, w, u, u_prev)
        rec = self.record(u)
        u_new = self.mirror_ghosts(self.inject(u_new, v2dt2, amp_t))
        return {"u_prev": u, "u": u_new, "psi": psi_new, "zeta": zeta_new}, rec

    def run(
        self,
        v: Any,
        amp: Any,
        progress: bool = False,
        callbacks: Callbacks | None = None,
        initial: dict[str, Any] | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Propagate all time steps; returns receivers (n_shots, n_rec, nt) and final state."""
        records, state = self.run_steps(self.v2dt2(v), amp, progress, callbacks, {"v": v}, initial)
        return self.stack_records(records), self.padded_state(state)
