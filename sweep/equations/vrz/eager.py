"""VRZ on the eager base: one time step written against the Array API.

The pressure update is the acoustic one with the Laplacian replaced by the
variable-coefficient operator of ``b = vp / z`` and the update scaled by
``K = kappa dt^2 = z vp dt^2``.  Per axis ``d``::

    L_d p (i) = sum_k c2_k / 2 [(B_i + B_{i+k}) (p_{i+k} - p_i)
                              + (B_i + B_{i-k}) (p_{i-k} - p_i)]
    t_d       = L_d p + D1_d (B psi_d)
    zeta_d'   = b_d zeta_d + a_d t_d,    psi_d' = b_d psi_d + a_d D1_d p
    W         = sum_d (t_d + zeta_d'),   p' = K W + 2 p - p_prev - K B f (sources)

``L_d`` is symmetric (a weighted graph Laplacian: conservative, so a jump of
``b`` gets the flux continuity of ``div(b grad p)``), reaches ``order / 2``
cells like the acoustic stencil, and equals ``B * D2`` where ``B`` is
constant: with constant density VRZ is :func:`sweep.acoustic` up to rounding
(``K B = vp^2 dt^2``).  ``B`` lives on the whole padded grid (edge values
repeated outward, even mirror images behind a free surface), ``K`` is zero
where the pressure is not updated.
"""

from __future__ import annotations

from typing import Any

from ..._eager import EagerBase, _along
from ..._xp import pad_zeros


class EagerVRZ(EagerBase):
    """Variable-density acoustic equation (velocity and impedance) on :class:`EagerBase`."""

    def _setup(self) -> None:
        super()._setup()
        g = self.geom
        self.b_maps = [self._asarray(g.mirrored_axis_map(d), self.xp.int64) for d in range(g.ndim)]
        self.half_c2 = [0.5 * c for c in self.c2[1:]]

    def coefficients(self, vp: Any, z: Any) -> tuple[Any, Any, Any, list]:
        """Return ``(K, B, K B, E)`` on the padded grid.

        ``K = z vp dt^2`` (zero where the pressure is not updated),
        ``B = vp / z``, the source scale ``K B = vp^2 dt^2``, and the edge
        weights ``E[d][k-1](i) = c2_k / 2 (B_i + B_{i+k})`` along axis ``d``
        (zero where ``i + k`` is off the grid), formed once per call so that
        a step (and its autodiff) touches one weight per stencil edge.
        """
        dt = self.geom.dt
        k = self.pad_model(vp * z) * (dt * dt) * self.live[0]
        b = self.pad_model(vp / z, self.b_maps)
        edges = []
        for d in range(self.geom.ndim):
            n = b.shape[d]
            per_k = []
            for kk, c in enumerate(self.half_c2, start=1):
                pair = c * (_along(b, d, 0, n - kk) + _along(b, d, kk, n))
                widths = [(0, 0)] * b.ndim
                widths[d] = (0, kk)
                per_k.append(pad_zeros(pair, widths))
            edges.append(per_k)
        return k, b, k * b, edges

    def initial_state(self) -> dict[str, Any]:
        """Zero pressure at two times and the CPML memory variables."""
        psi, zeta = self.cpml_state()
        return {"u_prev": self.field(), "u": self.field(), "psi": psi, "zeta": zeta}

    def final_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """Return ``state`` with psi and zeta on the whole padded grid."""
        psi, zeta = self.padded_cpml(state["psi"], state["zeta"], state["u"])
        return {"u_prev": state["u_prev"], "u": state["u"], "psi": psi, "zeta": zeta}

    def _weighted(self, f: Any, edges: list, axis: int) -> Any:
        """``L_d f`` of ``f`` and the edge weights, which carry a halo along ``axis``."""
        f0 = self._tap(f, axis, 0)
        out = None
        for k, e in enumerate(edges, start=1):
            term = self._tap(e, axis, 0) * (self._tap(f, axis, k) - f0) + self._tap(e, axis, -k) * (
                self._tap(f, axis, -k) - f0
            )
            out = term if out is None else out + term
        return out

    def step(self, state: dict[str, Any], coeffs: Any, amp_t: Any | None) -> tuple[dict, Any]:
        """One time step: the new state and the receiver samples of p^t."""
        k, b, src_scale, edges = coeffs
        xp, nd = self.xp, self.geom.ndim
        b_axis = [self._interior(xp.expand_dims(b, axis=0), keep=d + 1) for d in range(nd)]
        e_axis = [
            [self._interior(xp.expand_dims(e, axis=0), keep=d + 1) for e in edges[d]]
            for d in range(nd)
        ]

        def second(f: Any, axis: int, lo: int, hi: int) -> Any:
            ee = e_axis[axis - 1]
            if lo or hi != f.shape[axis]:
                f, ee = _along(f, axis, lo, hi), [_along(e, axis, lo, hi) for e in ee]
            return self._weighted(f, ee, axis)

        def first(psi: Any, axis: int, lo: int, hi: int) -> Any:
            return self._d1(_along(b_axis[axis - 1], axis, lo, hi) * psi, axis)

        u, u_prev = state["u"], state["u_prev"]
        w, psi_new, zeta_new = self.cpml_operator(u, state["psi"], state["zeta"], second, first)
        u_new = self.leapfrog(k, w, u, u_prev)
        rec = self.record(u)
        u_new = self.mirror_ghosts(self.inject(u_new, src_scale, amp_t))
        return {"u_prev": u, "u": u_new, "psi": psi_new, "zeta": zeta_new}, rec

    def run(
        self,
        vp: Any,
        z: Any,
        amp: Any,
        progress: bool = False,
        callbacks: Any = None,
        initial: dict[str, Any] | None = None,
    ) -> tuple[Any, dict]:
        """Propagate all time steps; returns receivers and the final state."""
        coeffs = self.coefficients(vp, z)
        models = {"vp": vp, "z": z}
        records, state = self.run_steps(coeffs, amp, progress, callbacks, models, initial)
        return self.stack_records(records), self.final_state(state)
