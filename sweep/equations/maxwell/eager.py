"""Maxwell's equations (TM2D and 3D) on the Yee grid, written against the Array API.

In SI units, with ``epsilon`` and ``mu`` relative and ``sigma`` in S/m::

    mu0 mu dH/dt               = -curl E
    eps0 eps dE/dt + sigma E   =  curl H - J

One time step is two half-step phases (:attr:`EagerBase.phases`)::

    H^{n+1/2} = H^{n-1/2} - dt / (mu0 mu) curl E^n
    E^{n+1}   = ca E^n + cb (curl H^{n+1/2} - J^{n+1/2})

with the loss term averaged over the step (semi-implicit, Crank-Nicolson):
``s = sigma dt / (2 eps0 eps)``, ``ca = (1 - s) / (1 + s)``, ``cb = dt /
(eps0 eps (1 + s))``.  It is second-order accurate, unconditionally stable for
any ``sigma >= 0`` (``|ca| < 1``), and a plain linear map of the fields, so
its discrete adjoint is exact (autodiff of this code; the compiled adjoint
will transpose the same update).  With ``sigma > 0`` the step damps and is
not run backwards in time (no boundary saving).

Every derivative ``d_b F`` of the curls is C-PML stretched with its own memory
variable ``m_F_b`` (``psi' = b psi + a D F``, derivative ``D F + psi'``), the
profiles taken at the derivative's node (:class:`sweep._staggered.EagerStaggered`).

Parameters on the nodes, repeated into the C-PML and the halo: ``eps`` and
``sigma`` of ``E_c`` are the means of the two nodes along its edge, ``mu`` of
``H_c`` the mean of the nodes around its face (2 in TM2D, 4 in 3D).

A free face (``free_surface``) is a perfect electric conductor: tangential E
is held at zero on its surface row (the outermost row of nodes) and mirrored
oddly beyond it, tangential H (half a cell inside) is mirrored evenly; the
normal components need no image.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..._points import inject_terms, node_terms
from ..._staggered import EagerStaggered
from . import components as comp

EPS0 = 8.8541878128e-12  # vacuum permittivity, F/m
MU0 = 1.25663706212e-6  # vacuum permeability, H/m
C0 = 1.0 / math.sqrt(EPS0 * MU0)  # speed of light, m/s


class EagerMaxwell(EagerStaggered):
    """Maxwell's equations on :class:`EagerStaggered`: H then E, per time step."""

    primary = "ey"
    phases = ("update_h", "update_e")
    record_after = 0  # receivers see E^t (time t dt)

    def staggering(self) -> dict[str, frozenset[int]]:
        """E and H components with their staggered axes (:mod:`.components`)."""
        return comp.fields(self.geom.ndim)

    def memory_keys(self) -> list[tuple[str, str, int]]:
        """(memory variable, field, axis) of every C-PML-stretched derivative."""
        return comp.memory_variables(self.geom.ndim)

    def held(self, name: str, d: int) -> bool:
        """Hold tangential E at zero on the surface row of a perfect conductor."""
        return name[0] == "e" and d not in self.stag[name]

    def mirror_sign(self, name: str, d: int) -> float:
        """Images beyond a conductor: tangential E odd, tangential H even, normal ones none."""
        tangential = (name[0] == "e") == (d not in self.stag[name])
        if not tangential:
            return 0.0
        return -1.0 if name[0] == "e" else 1.0

    def _setup(self) -> None:
        self.dv = math.prod(self.geom.spacing)  # cell volume (area in TM2D)
        super()._setup()

    def _setup_points(self) -> None:
        g = self.geom
        src = self.options.get("source_component") or ("ey",) * g.n_src
        rec = self.options.get("receiver_component") or ("ey",) * g.n_rec
        # A source is a current (moment) J dV along its component: -cb J is added to E.
        src_table = {c: ((c, -1.0),) for c in comp.electric(g.ndim)}
        rec_table = {c: ((c, 1.0),) for c in comp.electric(g.ndim)}
        self.src_terms = self.point_terms(
            node_terms(g, g.src_loc, src, src_table, self.stag, self.valid), g.n_src
        )
        self.rec_terms = self.point_terms(
            node_terms(g, g.rec_loc, rec, rec_table, self.stag, self.valid), g.n_rec
        )

    # -- models -----------------------------------------------------------------------
    def _mean(self, m: Any, axes: frozenset[int]) -> Any:
        """Mean of ``m`` over the nodes around a position staggered along ``axes``."""
        for d in sorted(axes):
            m = self._mean_next(m, d)
        return m

    def coefficients(
        self, epsilon: Any, sigma: Any, mu: Any, *, sources: bool = True
    ) -> dict[str, Any]:
        """Differentiable coefficients on the padded grid (no shot axis), ``dt`` folded in.

        ``"ca"``, ``"cb"``: the semi-implicit E update of each component;
        ``"ch"``: ``dt / (mu0 mu)`` of each H component; ``"src"``: the
        sources' scale ``cb / dV`` by E component (empty unless ``sources``:
        the compiled kernels scale by ``cb``).
        """
        eps, sig, mu = (self.pad_model(m) for m in (epsilon, sigma, mu))
        numpy = isinstance(eps, np.ndarray)
        ca, cb, ch = (self._coefficients_numpy if numpy else self._coefficients)(eps, sig, mu)
        src = {c: x / self.dv for c, x in cb.items()} if sources else {}
        return {"ca": ca, "cb": cb, "ch": ch, "src": src}

    def _coefficients(
        self, eps: Any, sig: Any, mu: Any
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """:meth:`coefficients`' ``ca``, ``cb``, ``ch`` from padded models (any array library)."""
        dt = self.geom.dt
        ca, cb, ch = {}, {}, {}
        for name, stag in self.stag.items():
            if name[0] == "e":
                e = EPS0 * self._mean(eps, stag)
                s = self._mean(sig, stag) * dt / (2 * e)
                s1 = 1 + s
                ca[name] = (1 - s) / s1
                cb[name] = dt / (e * s1)
            else:
                ch[name] = dt / (MU0 * self._mean(mu, stag))
        return ca, cb, ch

    def _coefficients_numpy(
        self, eps: np.ndarray, sig: np.ndarray, mu: np.ndarray
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        """:meth:`_coefficients` for padded NumPy models, bit for bit.

        The same operations in the same order, in place on arrays made here:
        each fresh full-size temporary costs its page faults (a compiled
        call's set-up; benchmarks/README.md).
        """
        dt = self.geom.dt

        def scaled(m: np.ndarray, stag: frozenset[int], c: float) -> np.ndarray:  # a new array
            # mean(m) * c; unstaggered (TM2D's Ey) the product is the new array (no copy first).
            out = self._mean(m, stag)
            if out is m:
                return np.multiply(m, c)
            out *= c
            return out

        half: dict[int, np.ndarray] = {}

        def mu_mean(stag: frozenset[int]) -> np.ndarray:  # a new array
            # The first axis's mean is shared (3D: Hy's and Hz's both start with z).
            axes = sorted(stag)
            if len(axes) < 2:
                return scaled(mu, stag, MU0)
            if axes[0] not in half:
                half[axes[0]] = self._mean_next(mu, axes[0])
            m = half[axes[0]]
            for d in axes[1:]:
                m = self._mean_next(m, d)
            m *= MU0
            return m

        ca, cb, ch = {}, {}, {}
        for name, stag in self.stag.items():
            if name[0] != "e":
                m = mu_mean(stag)  # MU0 mu
                ch[name] = np.divide(dt, m, out=m)  # dt / (MU0 mu)
                continue
            e = scaled(eps, stag, EPS0)
            s = scaled(sig, stag, dt)
            s /= e * 2  # mean(sig) dt / (2 e)
            s1 = s + 1
            np.subtract(1, s, out=s)
            s /= s1
            ca[name] = s  # (1 - s) / (1 + s)
            e *= s1
            cb[name] = np.divide(dt, e, out=e)  # dt / (e (1 + s))
        return ca, cb, ch

    # -- the step ---------------------------------------------------------------------
    def _curl(self, state: dict[str, Any], new: dict[str, Any], name: str) -> Any:
        """``(curl F)`` at component ``name`` on the interior (F: the other field).

        Stores each derivative's updated memory variable in ``new``.
        """
        acc = None
        for f, d, sign in comp.curl_terms(name, self.geom.ndim):
            key = f"m_{f}_{comp.AXES[self.geom.ndim][d]}"
            df, new[key] = self._stretch(state[f], f, d, state[key])
            term = df if sign > 0 else -df
            acc = term if acc is None else acc + term
        return acc

    def update_h(self, state: dict[str, Any], coeffs: Any, amp_t: Any) -> dict:
        """Phase 1: ``H^{n+1/2} = H^{n-1/2} - dt / (mu0 mu) curl E^n``."""
        new = dict(state)
        inner, xp = self._interior, self.xp
        names = comp.magnetic(self.geom.ndim)
        for h in names:
            curl = self._curl(state, new, h)
            ch = inner(xp.expand_dims(coeffs["ch"][h], axis=0))
            new[h] = self._pad(inner(state[h]) - ch * curl)
        return self._finish(new, names)

    def update_e(self, state: dict[str, Any], coeffs: Any, amp_t: Any) -> dict:
        """Phase 2: ``E^{n+1} = ca E^n + cb (curl H^{n+1/2} - J)``, sources at (n + 1/2) dt."""
        new = dict(state)
        inner, xp = self._interior, self.xp
        names = comp.electric(self.geom.ndim)
        for e in names:
            curl = self._curl(state, new, e)
            ca = inner(xp.expand_dims(coeffs["ca"][e], axis=0))
            cb = inner(xp.expand_dims(coeffs["cb"][e], axis=0))
            new[e] = self._pad(ca * inner(state[e]) + cb * curl)
        if self.src_terms:
            new = inject_terms(xp, new, self.src_terms, amp_t, coeffs["src"])
        return self._finish(new, names)

    def run(
        self,
        epsilon: Any,
        sigma: Any,
        mu: Any,
        amp: Any,
        progress: bool = False,
        callbacks: Any = None,
        initial: dict[str, Any] | None = None,
    ) -> tuple[Any, dict]:
        """Propagate all time steps; returns receivers and the final (padded) state."""
        coeffs = self.coefficients(epsilon, sigma, mu)
        models = {"epsilon": epsilon, "sigma": sigma, "mu": mu}
        records, state = self.run_steps(coeffs, amp, progress, callbacks, models, initial)
        return self.stack_records(records), self.final_state(state)


def speeds_of(epsilon: np.ndarray, mu: np.ndarray) -> tuple[float, float]:
    """(fastest, slowest) wave speed ``c0 / sqrt(eps mu)`` of relative models (m/s).

    The fastest pairs the smallest ``eps`` with the smallest ``mu`` anywhere
    (the staggered update couples neighbouring cells' values).
    """
    fast = C0 / math.sqrt(float(np.min(epsilon)) * float(np.min(mu)))
    slow = C0 / math.sqrt(float(np.max(np.asarray(epsilon) * np.asarray(mu))))
    return fast, slow
