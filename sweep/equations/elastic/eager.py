"""Elastic velocity-stress propagation on the eager base, written against the Array API.

One time step is two half-step phases (:attr:`EagerBase.phases`)::

    v_a^{n+1/2} = v_a^{n-1/2} + dt b_a (sum_b d_b s_ab^n + f_a^n / dV)
    s_aa^{n+1}  = s_aa^n + dt (sum_b C_ab d_b v_b^{n+1/2} - Mdot^{n+1/2} / dV)
    s_ab^{n+1}  = s_ab^n + dt mu_ab (d_b v_a^{n+1/2} + d_a v_b^{n+1/2})

with ``C_aa = lambda + 2 mu``, ``C_ab = lambda`` (a != b), on the staggered
grid of :mod:`.kinds` and the staggered first differences of
:func:`sweep._fd.staggered_first_derivative`.  Every derivative ``d_b F`` is
C-PML stretched with its own memory variable ``m_F_b`` (``psi' = b psi + a
D F``, derivative ``D F + psi'``), whose profiles are taken at the node of
the derivative (half nodes for differences that land between samples).

Parameters (``vp``, ``vs``, ``rho`` on the nodes, repeated into the CPML and
the halo): ``lambda = rho (vp^2 - 2 vs^2)`` and ``mu = rho vs^2`` on the nodes;
the buoyancy of ``v_a`` at ``i + 1/2`` is ``1 / rho`` of the arithmetic mean
of ``rho`` at ``i`` and ``i + 1`` along ``a``; ``mu`` of a shear stress is the
harmonic mean of ``mu`` at the four nodes around it (zero where any of them is
zero: a fluid-solid contact carries no shear stress).

Free surface (stress image): the surface is the outermost model row of a
free face, on the nodes.  There the normal stress across it is held at zero
and mirrored oddly beyond it, the shear stresses across it are mirrored
oddly about it (so they vanish on it on average), the other normal stresses
use the surface's condition to eliminate the normal derivative
(``C_ab`` with ``lambda' = 2 lambda mu / (lambda + 2 mu)`` in place of
``lambda``, no term of the normal velocity), and velocities beyond the
surface stay zero.
"""

from __future__ import annotations

import functools
import math
from dataclasses import replace
from typing import Any

import numpy as np

from ... import _fd
from ..._points import PointTerms, inject_terms
from ..._staggered import EagerStaggered
from . import das, kinds


class EagerElastic(EagerStaggered):
    """The elastic velocity-stress system on :class:`EagerStaggered` (two phases per step)."""

    primary = "vz"
    phases = ("update_velocities", "update_stresses")
    record_after = 0  # receivers see v^{t+1/2} and s^t

    def staggering(self) -> dict[str, frozenset[int]]:
        """Velocities, normal and shear stresses with their staggered axes (:mod:`.kinds`)."""
        return kinds.fields(self.geom.ndim)

    def memory_keys(self) -> list[tuple[str, str, int]]:
        """(memory variable, field, axis) of every C-PML-stretched derivative."""
        return kinds.memory_variables(self.geom.ndim)

    def held(self, name: str, d: int) -> bool:
        """Hold the normal stress across a free face at zero on its surface row."""
        axis = kinds.AXES[self.geom.ndim][d]
        return name == kinds.stress(axis, axis)

    def mirror_sign(self, name: str, d: int) -> float:
        """Return -1 (odd images, the stress image) for stresses with a component along ``d``."""
        return -1.0 if kinds.mirrored(self.geom, name, d) else 0.0

    def _setup(self) -> None:
        g = self.geom
        nd = g.ndim
        self.axes = kinds.AXES[nd]
        self.dv = math.prod(g.spacing)  # cell volume (area in 2D)
        super()._setup()
        # Surface rows of each free face (for the surface moduli).
        self.surface = []
        for d in range(nd):
            row = np.zeros(g.padded_shape[d])
            if g.free_surface[2 * d]:
                row[g.lo(d)] = 1.0
            if g.free_surface[2 * d + 1]:
                row[g.lo(d) + g.model_shape[d] - 1] = 1.0
            if row.any():
                self.surface.append((d, self._asarray(row.reshape(self._axis_shape(d)[1:]))))
        self.surface_weights = [
            {fw: self._reduced_weights(d, fw) for fw in (True, False)} for d in range(nd)
        ]

    def _reduced_weights(self, d: int, forward: bool) -> list | None:
        """Per-cell weights of a velocity's difference along ``d`` near free surfaces.

        Order ``2 m`` with ``m`` the taps of :func:`kinds.stencil_taps`; None
        when axis ``d`` has no free surface.
        """
        g = self.geom
        if not (g.free_surface[2 * d] or g.free_surface[2 * d + 1]):
            return None
        h, n = g.halo, g.padded_shape[d]
        big = g.order // 2
        m = kinds.stencil_taps(g, d, forward)[h : n - h]  # result cells
        w = np.zeros((big, len(m)))
        for mm in range(1, big + 1):
            c = [float(x) for x in _fd.staggered_first_derivative(2 * mm)]
            w[: len(c), m == mm] = np.array(c)[:, None]
        shape = [1] * (g.ndim + 1)
        shape[d + 1] = -1
        return [self._asarray(row.reshape(shape)) for row in w]

    def source_rows(self) -> list[PointTerms]:
        """Every source's weighted point operator, unscaled (each path folds in its scale)."""
        g = self.geom
        src_kinds = self.options.get("source_kind") or ("fz",) * g.n_src
        return kinds.node_terms(g, g.src_loc, src_kinds, kinds.source_kinds(g.ndim), self.valid)

    def receiver_rows(self) -> list[PointTerms]:
        """Every receiver's weighted point operator: the kinds' and the DAS rows (:mod:`.das`).

        The eager and the compiled paths record the same rows.
        """
        g = self.geom
        rec_kinds = self.receiver_kinds
        table = dict(kinds.receiver_kinds(g.ndim), **{kinds.FIBRE: kinds.Kind(kinds.FIBRE, ())})
        rec = kinds.node_terms(g, g.rec_loc, rec_kinds, table, self.valid)  # strain: no terms
        gauge, fibre = self.options.get("gauge_length"), self.options.get("fibre")
        if any(k.startswith("e") for k in rec_kinds):
            rec += das.kind_terms(g, rec_kinds, gauge)
        if fibre is not None:
            rec += das.fibre_terms(g, fibre, rec_kinds.index(kinds.FIBRE), gauge)
        return rec

    @property
    def receiver_kinds(self) -> tuple[str, ...]:
        """One kind per receiver column (the fibre's channels: :data:`kinds.FIBRE`)."""
        return tuple(self.options.get("receiver_kind") or ("vz",) * self.geom.n_rec)

    def _setup_points(self) -> None:
        g = self.geom
        src = self.source_rows()
        # A stress-kind source's scale dt / dV is a constant: fold it into the weights.
        scale = g.dt / self.dv
        src = [t if t.field.startswith("v") else replace(t, weight=t.weight * scale) for t in src]
        self.src_v = self.point_terms([t for t in src if t.field.startswith("v")], g.n_src)
        self.src_s = self.point_terms([t for t in src if t.field.startswith("s")], g.n_src)
        self.rec_rows = self.receiver_rows()
        self.rec_terms = self.point_terms(self.rec_rows, g.n_rec)
        # Columns integrated in time (quantity="strain"), as a (1, n_rec, 1) mask.
        integrate = [self.options.get("quantity") == "strain" and kinds.is_strain(k)
                     for k in self.receiver_kinds]  # fmt: skip
        self.integrate = (
            self._asarray(np.asarray(integrate, dtype=np.float64).reshape(1, -1, 1))
            if any(integrate) else None
        )  # fmt: skip

    # -- models -----------------------------------------------------------------------
    def coefficients(self, vp: Any, vs: Any, rho: Any) -> dict[str, Any]:
        """Differentiable coefficients on the padded grid (no shot axis), ``dt`` folded in.

        ``"b"``: ``dt`` times the buoyancy of each velocity; ``"C"``: ``dt``
        times the moduli of the normal stresses, by (stress axis, velocity
        axis), with the free-surface rows' moduli; ``"mu"``: ``dt`` times the
        harmonic-mean ``mu`` of each shear stress; ``"src"``: the force
        sources' scale ``dt b / dV`` by velocity.
        """
        return self.coefficients_padded(*(self.pad_model(m) for m in (vp, vs, rho)))

    def coefficients_padded(
        self, vp: Any, vs: Any, rho: Any, planes: slice | None = None, *, sources: bool = True
    ) -> dict[str, Any]:
        """:meth:`coefficients` of padded models (``"src"`` only with ``sources``).

        ``planes``: the models are these planes of the first axis only (the
        values there are the whole grid's, but at the last plane of a slab
        that is not the grid's last: a mean with the next plane needs it).
        """
        xp, dt, nd = self.xp, self.geom.dt, self.geom.ndim
        surface = self.surface
        if planes is not None:
            surface = [(d, row[planes] if d == 0 else row) for d, row in surface]
        mu = rho * vs * vs
        m2 = rho * vp * vp  # lambda + 2 mu
        lam = m2 - 2 * mu
        b = {}
        for d, a in enumerate(self.axes):
            b[kinds.velocity(a)] = dt / self._mean_next(rho, d)
        # The surface condition s_dd = 0 eliminates d_d v_d: lambda' = lambda - lambda^2 / m2.
        lam_s = 2 * lam * mu / m2 if surface else None
        c = {}
        # Moduli no surface row changed are one array each (dt m2, dt lambda): the
        # compiled kernels then read 2 arrays for the 9 (benchmarks/README.md).
        untouched: dict[int, Any] = {}
        for i in range(nd):
            for j in range(nd):
                base = m2 if i == j else lam
                for d, row in surface:
                    if d == i:
                        continue  # s_dd itself is held at zero on its surface row
                    on = (0 * lam_s if j == d else lam_s + 2 * mu * float(i == j)) * row
                    base = base * (1 - row) + on
                if base is m2 or base is lam:
                    if id(base) not in untouched:
                        untouched[id(base)] = dt * base
                    c[(i, j)] = untouched[id(base)]
                else:
                    c[(i, j)] = dt * base
        mus = {}
        mu_next = {d: self._shift(mu, d) for d in range(nd)}  # each used by two pairs (3D)

        # Per corner its positive mask p and 1 / (x p + 1 - p): once for mu (a
        # corner of every pair) and each mu_next (of two pairs in 3D).
        def corner(x: Any) -> tuple[Any, Any]:
            p = xp.astype(x > 0, x.dtype)
            return p, 1 / (x * p + (1 - p))

        on_numpy = isinstance(mu, np.ndarray)
        if on_numpy:  # the same values in fewer passes (a compiled call's set-up)
            corner = _corner_numpy
        shared = {"mu": corner(mu), **{d: corner(x) for d, x in mu_next.items()}}
        for (i, a), (j, bb) in _pairs(self.axes):
            corners = [shared["mu"], shared[i], shared[j], corner(self._shift(mu_next[i], j))]
            if on_numpy:
                mus[kinds.stress(a, bb)] = _harmonic_numpy(dt, corners)
                continue
            inv = sum(t for _, t in corners)
            mus[kinds.stress(a, bb)] = dt * math.prod(p for p, _ in corners) * 4 / inv
        src = {v: bv / self.dv for v, bv in b.items()} if sources else {}
        return {"b": b, "C": c, "mu": mus, "src": src}

    def coefficients_transpose(
        self, vp: Any, vs: Any, rho: Any, cot: dict[str, dict[Any, Any]]
    ) -> tuple[Any, Any, Any]:
        """Apply the transposed Jacobian of :meth:`coefficients` to cotangents ``cot``.

        ``cot["b"]``, ``cot["C"]``, ``cot["mu"]``: cotangents (padded, no shot
        axis) keyed as the outputs; a missing key counts as zero.  Returns the
        cotangents of ``vp``, ``vs``, ``rho`` (model shape): the exact
        derivative of every step, the averages onto staggered points, the
        free-surface moduli and the repetition into the padding, with no
        autodiff (any Array-API library).  Where a harmonic mean has a zero
        corner it is zero, and so is its derivative (as autodiff of
        :meth:`coefficients` gives).

        The sums and products run in place on arrays this method made (never
        on ``cot`` or the models), in the order of the plain expressions they
        stand for, so the values are theirs bit for bit: a 3D 120^3 float64
        chain made ~100 fresh 14 MB temporaries, whose first touch was most
        of its time (benchmarks/README.md).
        """
        dt, nd = self.geom.dt, self.geom.ndim
        vp, vs, rho = (self.pad_model(m) for m in (vp, vs, rho))
        mu = rho * vs
        mu *= vs  # rho vs vs
        m2 = rho * vp
        m2 *= vp
        lam = m2 - 2 * mu
        g_rho: Any = 0.0
        g_mu: Any = 0.0
        g_m2: Any = 0.0
        g_lam: Any = 0.0
        g_lam_s: Any = 0.0
        for d, a in enumerate(self.axes):  # b = 2 dt / (rho + rho_next)
            gb = cot.get("b", {}).get(kinds.velocity(a))
            if gb is not None:
                total = rho + self._shift(rho, d)
                total *= total
                gs = gb * (-2.0 * dt)
                gs /= total
                del total
                back = self._shift_transpose(gs, d)
                g_rho = _add(g_rho, gs, owned=True)
                g_rho += back
                del back
        for i in range(nd):
            for j in range(nd):
                gc = cot.get("C", {}).get((i, j))
                if gc is None:
                    continue
                g_base = dt * gc
                for d, row in reversed(self.surface):  # base = base (1 - row) + on row
                    if d == i:
                        continue
                    if j != d:
                        g_on = g_base * row
                        g_lam_s = _add(g_lam_s, g_on, owned=i != j)
                        if i == j:
                            g_on *= 2
                            g_mu = _add(g_mu, g_on, owned=True)
                    g_base *= 1 - row
                if i == j:
                    g_m2 = _add(g_m2, g_base, owned=True)
                else:
                    g_lam = _add(g_lam, g_base, owned=True)
        if not isinstance(g_lam_s, float):  # lam_s = 2 lam mu / m2
            t = g_lam_s * 2
            t *= mu
            t /= m2
            g_lam = _add(g_lam, t, owned=True)
            t = g_lam_s * 2
            t *= lam
            t /= m2
            g_mu = _add(g_mu, t, owned=True)
            t = g_lam_s * 2
            t *= lam
            t *= mu
            del g_lam_s
            m2m2 = m2 * m2
            t /= m2m2
            del m2m2
            g_m2 = _sub(g_m2, t)
            del t
        del lam
        g_m2 = _add(g_m2, g_lam, owned=False)  # lam = m2 - 2 mu
        g_lam = _mul(g_lam, 2)
        g_mu = _sub(g_mu, g_lam)
        del g_lam
        for (i, a), (j, bb) in _pairs(self.axes):  # 4 dt / sum(1 / corner), 0 at a zero corner
            gm = cot.get("mu", {}).get(kinds.stress(a, bb))
            if gm is None:
                continue
            next_i = self._shift(mu, i)
            corners = [mu, next_i, self._shift(mu, j), self._shift(next_i, j)]
            pos = [self.xp.astype(x > 0, x.dtype) for x in corners]
            safe = [mu * pos[0], *corners[1:]]  # x p + (1 - p); the shifted copies are ours
            safe[1:] = [_mul(x, p) for x, p in zip(safe[1:], pos[1:], strict=True)]
            # Rebinding, not a bare loop of +=: immutable arrays (JAX) add out of place.
            safe = [_add(x, 1 - p, owned=False) for x, p in zip(safe, pos, strict=True)]
            del corners, next_i
            inv = 1 / safe[0]
            for x in safe[1:]:
                inv += 1 / x
            scale = gm * (4 * dt)
            every = pos[0] * pos[1]  # math.prod(pos): 1 p0 p1 p2 p3
            every *= pos[2]
            every *= pos[3]
            scale *= every
            del every
            inv *= inv
            scale /= inv
            del inv
            g_c = []
            for x, p in zip(safe, pos, strict=True):  # scale p / (x x)
                x *= x
                p *= scale
                p /= x
                g_c.append(p)
            del safe, pos, scale
            g_mu = _add(g_mu, g_c[0], owned=True)
            g_mu += self._shift_transpose(g_c[1], i)
            g_mu += self._shift_transpose(g_c[2], j)
            g_mu += self._shift_transpose(self._shift_transpose(g_c[3], j), i)
            del g_c
        del mu, m2
        t = g_mu * vs  # mu = rho vs^2, m2 = rho vp^2
        t *= vs
        g_rho = _add(g_rho, t, owned=True)
        t = g_m2 * vp
        t *= vp
        g_rho = _add(g_rho, t, owned=True)
        del t
        g_vs = _mul(_mul(_mul(g_mu, 2), rho), vs)
        g_vp = _mul(_mul(_mul(g_m2, 2), rho), vp)
        zero = 0 * vp
        return tuple(self.pad_model_transpose(_add(x, zero, owned=False))
                     for x in (g_vp, g_vs, g_rho))  # fmt: skip

    # -- the step ---------------------------------------------------------------------
    def _stretched(self, f: Any, name: str, d: int, psi: Any) -> tuple[Any, Any]:
        """C-PML-stretched derivative of field ``name`` along axis ``d``: (``D f + psi'``, psi')."""
        forward = d not in self.stag[name]
        # Velocities have no values beyond a free surface: near it, lower orders.
        weights = self.surface_weights[d][forward] if name.startswith("v") else None
        return self._stretch(f, name, d, psi, weights)

    def update_velocities(self, state: dict[str, Any], coeffs: Any, amp_t: Any) -> dict:
        """Phase 1: ``v^{n+1/2}`` from ``s^n`` and the force sources of step n."""
        new = dict(state)
        inner, xp = self._interior, self.xp
        for a in self.axes:
            acc = None
            for d, bx in enumerate(self.axes):
                s = kinds.stress(a, bx)
                key = f"m_{s}_{bx}"
                ds, new[key] = self._stretched(state[s], s, d, state[key])
                acc = ds if acc is None else acc + ds
            v = kinds.velocity(a)
            b = inner(xp.expand_dims(coeffs["b"][v], axis=0))
            new[v] = self._pad(inner(state[v]) + b * acc)
        if self.src_v:
            new = inject_terms(xp, new, self.src_v, amp_t, coeffs["src"])
        return self._finish(new, kinds.velocities(self.geom.ndim))

    def update_stresses(self, state: dict[str, Any], coeffs: Any, amp_t: Any) -> dict:
        """Phase 2: ``s^{n+1}`` from ``v^{n+1/2}`` and the stress sources (time n + 1/2)."""
        new = dict(state)
        inner, xp = self._interior, self.xp
        dv = {}
        for i, a in enumerate(self.axes):
            v = kinds.velocity(a)
            for d, bx in enumerate(self.axes):
                key = f"m_{v}_{bx}"
                dv[(i, d)], new[key] = self._stretched(state[v], v, d, state[key])
        nd = self.geom.ndim
        for i, a in enumerate(self.axes):
            s = kinds.stress(a, a)
            acc = None
            for j in range(nd):
                term = inner(xp.expand_dims(coeffs["C"][(i, j)], axis=0)) * dv[(j, j)]
                acc = term if acc is None else acc + term
            new[s] = self._pad(inner(state[s]) + acc)
        for (i, a), (j, bx) in _pairs(self.axes):
            s = kinds.stress(a, bx)
            mu = inner(xp.expand_dims(coeffs["mu"][s], axis=0))
            new[s] = self._pad(inner(state[s]) + mu * (dv[(i, j)] + dv[(j, i)]))
        if self.src_s:
            new = inject_terms(xp, new, self.src_s, amp_t)
        return self._finish(new, kinds.stresses(nd))

    def finish_records(self, records: Any) -> Any:
        """Receivers ``(n_shots, n_rec, nt)`` from the samples: strain where asked.

        ``quantity="strain"``: the strain-rate columns become strain, the
        exclusive cumulative sum times ``dt``, ``strain[t] = dt sum_{k<t}
        rate[k]``: sample ``t`` is time ``t dt`` (the rates are at ``(k + 1/2)
        dt``: the midpoint rule, the stresses' own time integration), and
        ``strain[0] = 0``.  Linear, so autodiff gives its exact adjoint.
        """
        if self.integrate is None:
            return records
        rate = records[..., :-1] * self.geom.dt
        summed = self.xp.cumulative_sum(rate, axis=-1, include_initial=True)
        return records + self.integrate * (summed - records)

    def finish_records_transpose(self, cot: Any) -> Any:
        """Apply the transpose of :meth:`finish_records` to a receiver cotangent ``cot``.

        On the strain columns, ``rate_cot[k] = dt sum_{t > k} cot[t]`` (a
        reversed exclusive cumulative sum); the other columns pass through.
        """
        if self.integrate is None:
            return cot
        xp = self.xp
        later = xp.flip(xp.cumulative_sum(xp.flip(cot[..., 1:], axis=-1), axis=-1), axis=-1)
        summed = xp.concat([later * self.geom.dt, xp.zeros_like(cot[..., :1])], axis=-1)
        return cot + self.integrate * (summed - cot)

    def stack_records(self, records: list[Any]) -> Any:
        """Receiver data (n_shots, n_rec, nt), with :meth:`finish_records` applied."""
        return self.finish_records(super().stack_records(records))

    def run(
        self,
        vp: Any,
        vs: Any,
        rho: Any,
        amp: Any,
        progress: bool = False,
        callbacks: Any = None,
        initial: dict[str, Any] | None = None,
    ) -> tuple[Any, dict]:
        """Propagate all time steps; returns receivers and the final (padded) state."""
        coeffs = self.coefficients(vp, vs, rho)
        models = {"vp": vp, "vs": vs, "rho": rho}
        records, state = self.run_steps(coeffs, amp, progress, callbacks, models, initial)
        return self.stack_records(records), self.final_state(state)


def _corner_numpy(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy's ``corner`` of :meth:`EagerElastic.coefficients`, bit for bit: (x > 0, 1 / x or 1).

    Where ``x > 0``, ``x p + (1 - p)`` is ``x`` exactly; elsewhere it is 1.
    """
    pos = x > 0
    inv = np.ones_like(x)
    np.divide(1, x, out=inv, where=pos)
    return pos, inv


def _harmonic_numpy(dt: float, corners: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """``dt prod(p) 4 / sum(1 / corner)`` from :func:`_corner_numpy`'s pairs, bit for bit.

    The product of the 0/1 masks times ``dt`` times 4 is ``dt 4`` or 0
    exactly, so the mean is ``(dt 4) / inv`` times the corners' joint mask;
    the sum runs in the same order, in place.
    """
    inv = corners[0][1] + corners[1][1]
    for _, t in corners[2:]:
        inv += t
    out = np.divide(np.asarray(dt, inv.dtype) * 4, inv, out=inv)
    out *= functools.reduce(np.logical_and, (p for p, _ in corners))
    return out


def _pairs(axes: tuple[str, ...]) -> list[tuple[tuple[int, str], tuple[int, str]]]:
    """Pairs of distinct axes (i < j) with their names: the shear stresses."""
    return [((i, a), (j, b)) for i, a in enumerate(axes) for j, b in enumerate(axes) if i < j]


def _add(total: Any, x: Any, owned: bool) -> Any:
    """``total + x``, in place on ``total`` (an array of the caller's own) or on ``x`` if ``owned``.

    ``total`` a float (the zero a sum starts from): ``x`` plus it, in place
    when the caller owns ``x`` (``0.0 + x`` turns ``-0.0`` into ``0.0``, as
    the plain sum does).
    """
    if isinstance(total, float):
        if owned and not isinstance(x, float):
            x += total
            return x
        return total + x
    total += x
    return total


def _sub(total: Any, x: Any) -> Any:
    """``total - x``, in place on ``total`` when it is an array of the caller's own."""
    if isinstance(total, float):
        return total - x
    total -= x
    return total


def _mul(x: Any, y: Any) -> Any:
    """``x * y``, in place on ``x`` when it is an array of the caller's own (a float: a new one)."""
    if isinstance(x, float):
        return x * y
    x *= y
    return x
