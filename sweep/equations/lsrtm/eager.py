"""Born modelling (LSRTM) on the eager base.

Two acoustic wavefields share the grid: the background ``u0``, driven by the
sources, and the scattered ``u1``, driven by the perturbation.  With
``K = (vp dt)^2`` and ``dK = 2 K mp`` (the change of ``K`` when ``vp`` changes
by ``vp * mp``; both repeated into the CPML like the model)::

    u0' = K W0 + 2 u0 - u0_prev - K f        (sources)
    u1' = K W1 + 2 u1 - u1_prev + dK W0 - dK f

``W`` is the acoustic bracket of :meth:`EagerBase.cpml_operator` (each field
with its own CPML memory variables).  This is the derivative of the acoustic
update with respect to ``K``, so the scattered receivers are exactly the
Jacobian of :func:`sweep.acoustic` at ``vp`` applied to ``vp * mp``.
"""

from __future__ import annotations

from typing import Any

from ..._eager import EagerBase


class EagerLSRTM(EagerBase):
    """Born (linearised acoustic) modelling on :class:`EagerBase`."""

    primary = "u1"
    record_background = False  # step() also returns the background's samples

    def coefficients(self, vp: Any, mp: Any) -> tuple[Any, Any]:
        """``(K, dK)`` on the padded grid, zero where the field is not updated."""
        k = (self.pad_model(vp) * self.geom.dt) ** 2 * self.live[0]
        return k, 2 * k * self.pad_model(mp)

    def initial_state(self) -> dict[str, Any]:
        """Zero background and scattered fields with their CPML memory variables."""
        state = {}
        for f in ("0", "1"):
            psi, zeta = self.cpml_state()
            state |= {f"u{f}_prev": self.field(), f"u{f}": self.field(), f"psi{f}": psi,
                      f"zeta{f}": zeta}  # fmt: skip
        return state

    def final_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """Return ``state`` with the CPML memory variables on the whole padded grid."""
        out = dict(state)
        for f in ("0", "1"):
            psi, zeta = self.padded_cpml(state[f"psi{f}"], state[f"zeta{f}"], state[f"u{f}"])
            out[f"psi{f}"], out[f"zeta{f}"] = psi, zeta
        return out

    def step(self, state: dict[str, Any], coeffs: Any, amp_t: Any | None) -> tuple[dict, Any]:
        """One time step: the new state and the scattered receiver samples of u1^t."""
        k, dk = coeffs
        u0, u1 = state["u0"], state["u1"]
        w0, psi0, zeta0 = self.cpml_operator(u0, state["psi0"], state["zeta0"])
        w1, psi1, zeta1 = self.cpml_operator(u1, state["psi1"], state["zeta1"])
        born = self._interior(self.xp.expand_dims(dk, axis=0)) * w0
        u0_new = self.leapfrog(k, w0, u0, state["u0_prev"])
        u1_new = self.leapfrog(k, w1, u1, state["u1_prev"], extra=born)
        rec = self.record(u1)
        if self.record_background:
            rec = (rec, self.record(u0))
        u0_new = self.mirror_ghosts(self.inject(u0_new, k, amp_t))
        u1_new = self.mirror_ghosts(self.inject(u1_new, dk, amp_t))
        new = {"u0_prev": u0, "u0": u0_new, "psi0": psi0, "zeta0": zeta0,
               "u1_prev": u1, "u1": u1_new, "psi1": psi1, "zeta1": zeta1}  # fmt: skip
        return new, rec

    def run(
        self,
        vp: Any,
        mp: Any,
        amp: Any,
        progress: bool = False,
        callbacks: Any = None,
        initial: dict[str, Any] | None = None,
    ) -> tuple[Any, Any, dict]:
        """Propagate all steps; returns scattered and background receivers and the final state."""
        self.record_background = True
        try:
            coeffs = self.coefficients(vp, mp)
            records, state = self.run_steps(coeffs, amp, progress, callbacks,
                                            {"vp": vp, "mp": mp}, initial)  # fmt: skip
        finally:
            self.record_background = False
        scattered = self.stack_records([r[0] for r in records if r[0] is not None])
        background = self.stack_records([r[1] for r in records if r[1] is not None])
        return scattered, background, self.final_state(state)
