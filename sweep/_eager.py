"""Eager propagators written once against the Python Array API.

The same code runs on NumPy, CuPy, PyTorch and JAX arrays.  It is the
reference for the compiled kernels (same discrete operator, see
``cuda/acoustic_stencil.h``) and it is differentiable by the framework's own
autodiff (torch.autograd, jax.vjp).  Every operation is out of place so that
JAX can trace it; the step is a pure function of (state, inputs) so callers
may wrap it in ``torch.compile`` or ``jax.lax.scan``.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, ClassVar

import numpy as np

from . import _fd
from ._callbacks import Callbacks, CallbackState
from ._grid import Geometry
from ._points import DeviceTerms, PointTerms
from ._xp import array_namespace, device_of, pad_zeros, scatter_add, take_transpose


@dataclass
class EagerBase:
    """Constants of one eager propagation on the caller's arrays, and the generic pieces.

    An equation subclasses it with ``coefficients(*models)``,
    ``initial_state()``, ``step(state, coeffs, amp_t)`` and
    ``final_state(state)``; this base supplies the padded grid, the stencil
    taps, the CPML strips, model padding, receiver sampling, source
    injection and the free-surface ghosts, so those are written once.

    A first-order system (velocity-stress, E-H) updates its fields in
    half-step phases instead of one leapfrog: it lists them in ``phases``
    (method names, each ``phase(state, coeffs, amp_t) -> state``) and
    implements ``sample(state)``, taken after phase ``record_after``; the
    default :meth:`step` runs them.  Settings of the equation's own (e.g.
    source and receiver kinds) reach the engine as keyword arguments of
    :meth:`build` and are kept in ``options``.
    """

    geom: Geometry
    xp: Any
    dtype: Any
    device: Any
    options: dict[str, Any] = dataclass_field(default_factory=dict)
    # False: only what the compiled kernels' set-up reads (the models' padding
    # and coefficients, the fields' masks), not the eager step's constants.
    with_step: bool = True

    @classmethod
    def build(
        cls, geom: Geometry, like: Any, *, with_step: bool = True, **options: Any
    ) -> EagerBase:
        """Prepare constants on the namespace/device/dtype of ``like``.

        ``options``: the equation's own validated settings (``Call.extra``).
        ``with_step=False``: without the eager step's constants (CPML profiles,
        masks, ghosts, point terms), for a compiled engine's set-up.
        """
        xp = array_namespace(like)
        self = cls(geom, xp, like.dtype, device_of(like), dict(options), with_step)
        self._setup()
        return self

    @property
    def plan_key(self) -> tuple:
        """Hashable summary of ``options`` (part of a compiled step's cache key)."""
        return tuple(sorted((k, repr(v)) for k, v in self.options.items()))

    def point_terms(self, terms: list[PointTerms], n_columns: int) -> list[DeviceTerms]:
        """Move weighted point operators (:mod:`sweep._points`) onto the engine's device."""
        n = self.geom.shot_stride
        out = []
        for t in terms:
            out.append(
                DeviceTerms(
                    t.field,
                    self._asarray(t.shot * n + t.cell, self.xp.int64),
                    self._asarray(t.cell, self.xp.int64),
                    self._asarray(t.shot * n_columns + t.column, self.xp.int64),
                    self._asarray(t.weight),
                )
            )
        return out

    def _asarray(self, x: np.ndarray, dtype: Any = None) -> Any:
        return self.xp.asarray(x, dtype=dtype or self.dtype, device=self.device)

    def _setup(self) -> None:
        g, xp = self.geom, self.xp
        nd = g.ndim
        self.c1 = [float(c) for c in _fd.first_derivative(g.order)]
        self.c2 = [float(c) for c in _fd.second_derivative(g.order)]
        self.maps = [self._asarray(g.axis_map(d), xp.int64) for d in range(nd)]
        if not self.with_step:
            return
        self.live = self._asarray(g.live()[None])
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

    # -- models --------------------------------------------------------------
    def pad_model(self, m: Any, maps: list[Any] | None = None) -> Any:
        """Pad a model onto the padded grid by repeating edge values (``maps``: per axis)."""
        g = self.geom
        if maps is None and isinstance(m, np.ndarray) and m.shape == tuple(g.model_shape):
            # The same copies in one pass (three takes of a 3D model: ~15x the time).
            widths = [
                (g.lo(d), n - g.lo(d) - k)
                for d, (n, k) in enumerate(zip(g.padded_shape, g.model_shape, strict=True))
            ]
            return np.pad(m, widths, mode="edge")
        for d, idx in enumerate(self.maps if maps is None else maps):
            m = self.xp.take(m, idx, axis=d)
        return m

    def pad_planes(self, m: np.ndarray, planes: slice, out: np.ndarray) -> np.ndarray:
        """``pad_model(m)[planes]`` of a NumPy model (model shape), written into ``out``.

        ``out``: a buffer of the padded planes' shape with at least as many
        planes (its first ones are returned).  The same edge copies as
        :meth:`pad_model`, a slab at a time (the compiled set-up's
        :meth:`~sweep._compiled.CompiledStepper.planewise_fields`): no
        whole padded model, its pass and its fresh pages.
        """
        g = self.geom
        nd = g.ndim
        lo = [g.lo(d) for d in range(nd)]
        k = g.model_shape
        dst = out[: planes.stop - planes.start]
        idx = np.clip(np.arange(planes.start, planes.stop) - lo[0], 0, k[0] - 1)
        inner = [slice(lo[d], lo[d] + k[d]) for d in range(nd)]
        if idx.size and idx[-1] - idx[0] == idx.size - 1:  # a run of model planes
            dst[(slice(None), *inner[1:])] = m[idx[0] : idx[-1] + 1]
        else:
            dst[(slice(None), *inner[1:])] = m[idx]
        for d in range(1, nd):  # the edges along axis d, over the axes before it padded
            head = (slice(None),) * d
            tail = tuple(inner[d + 1 :])
            dst[(*head, slice(0, lo[d]), *tail)] = dst[(*head, slice(lo[d], lo[d] + 1), *tail)]
            end = lo[d] + k[d]
            dst[(*head, slice(end, None), *tail)] = dst[(*head, slice(end - 1, end), *tail)]
        return dst

    def pad_model_transpose(self, g: Any) -> Any:
        """Apply the transpose of :meth:`pad_model` to ``g`` (padded -> model shape).

        A model cell receives the sum over every padded cell that repeats it.
        """
        for d in reversed(range(self.geom.ndim)):
            g = take_transpose(self.xp, g, self.maps[d], self.geom.model_shape[d], d)
        return g

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

    def zeros(self, shape: tuple[int, ...]) -> Any:
        """Return a zero array of the engine's dtype and device."""
        return self.xp.zeros(shape, dtype=self.dtype, device=self.device)

    def field(self) -> Any:
        """Return a zero wavefield of every shot on the padded grid."""
        return self.zeros((self.geom.n_shots, *self.geom.padded_shape))

    def cpml_state(self) -> tuple[list, list]:
        """Zero CPML memory variables of one second-order field: (psi, zeta).

        ``psi[d]`` and ``zeta[d]`` are lists with one array per strip of axis
        ``d`` (see :meth:`Geometry.cpml_strips`), interior along the other
        axes; psi keeps a zero halo along ``d`` for its derivative taps.
        """
        h = self.geom.halo
        psi = [
            [self.zeros(self._strip_shape(d, n, h)) for _, n in s]
            for d, s in enumerate(self.strips)
        ]
        zeta = [
            [self.zeros(self._strip_shape(d, n, 0)) for _, n in s]
            for d, s in enumerate(self.strips)
        ]
        return psi, zeta

    def padded_cpml(self, psi: list, zeta: list, like: Any) -> tuple[list, list]:
        """Return psi and zeta strips on the whole padded grid (as the compiled core's)."""
        g, h = self.geom, self.geom.halo
        out: dict[str, list] = {"psi": [], "zeta": []}
        for d, strips in enumerate(self.strips):
            ax = d + 1
            for key, halo, fields in (("psi", h, psi), ("zeta", 0, zeta)):
                full = None
                for (s0, n), x in zip(strips, fields[d], strict=True):
                    widths = [(h, h)] * len(x.shape)
                    widths[0] = (0, 0)
                    widths[ax] = (s0, g.padded_shape[d] - s0 - n)
                    x = pad_zeros(_along(x, ax, halo, halo + n), widths)
                    full = x if full is None else full + x
                if full is None:
                    full = self.xp.zeros_like(like)
                out[key].append(full)
        return out["psi"], out["zeta"]

    def cpml_operator(
        self, u: Any, psi: list, zeta: list, second: Any = None, first: Any = None
    ) -> tuple[Any, list, list]:
        """Apply the CPML-stretched operator of a second-order field on the interior.

        Per axis d, with ``t_d = second(u) + first(psi_d)`` (both scaled by
        the grid spacing), ``zeta_d' = b zeta_d + a t_d``,
        ``psi_d' = b psi_d + a D1 u`` and ``W = sum_d (t_d + zeta_d')``:
        the bracket ``cuda/acoustic_stencil.h`` documents.  ``second(f,
        axis, lo, hi)`` is the unscaled second-order operator of ``f[lo:hi]``
        along ``axis`` (default the plain second difference); ``first(psi,
        axis, lo, hi)`` the unscaled first difference of psi (default plain),
        where ``lo:hi`` is the strip's range (with halo) in padded
        coordinates.  The operator runs on the whole interior; the CPML terms
        only on the strips, where they are added to ``W`` (psi, zeta, a and b
        vanish elsewhere).  Returns (W, psi', zeta').
        """
        if second is None:
            second = self._second_plain
        if first is None:
            first = self._first_plain
        g = self.geom
        h = g.halo
        inner = self._interior
        w = None
        psi_new, zeta_new = [], []
        for d in range(g.ndim):
            axis = d + 1
            rdx = self.rdx[d]
            u_axis = inner(u, keep=axis)
            lap = second(u_axis, axis, 0, u_axis.shape[axis]) * (rdx * rdx)
            w = lap if w is None else w + lap
            n_int = lap.shape[axis]
            psi_d, zeta_d = [], []
            for (s0, n), (a, b), ps, zt in zip(
                self.strips[d], self.pml_strip[d], psi[d], zeta[d], strict=True
            ):
                lo, hi = s0 - h, s0 + n + h
                u_s = _along(u_axis, axis, lo, hi)
                d1psi = first(ps, axis, lo, hi) * rdx
                # The strip's operator again, not a slice of lap: slicing lap
                # makes inductor write lap out as a whole array.
                zn = b * zt + a * (second(u_axis, axis, lo, hi) * (rdx * rdx) + d1psi)
                d1u = self._d1(u_s, axis) * rdx
                psi_d.append(self._pad(b * _along(ps, axis, h, h + n) + a * d1u, [axis]))
                zeta_d.append(zn)
                i0 = s0 - h  # the strip's first cell in interior coordinates
                widths = [(0, 0)] * len(lap.shape)
                widths[axis] = (i0, n_int - i0 - n)
                w = w + pad_zeros(d1psi + zn, widths)
            psi_new.append(psi_d)
            zeta_new.append(zeta_d)
        return w, psi_new, zeta_new

    def _second_plain(self, f: Any, axis: int, lo: int, hi: int) -> Any:
        return self._d2(f if lo == 0 and hi == f.shape[axis] else _along(f, axis, lo, hi), axis)

    def _first_plain(self, psi: Any, axis: int, lo: int, hi: int) -> Any:
        return self._d1(psi, axis)

    def leapfrog(self, coef: Any, w: Any, u: Any, u_prev: Any, extra: Any = None) -> Any:
        """``coef W + 2 u - u_prev (+ extra)`` on the interior, with a zero halo."""
        inner = self._interior
        new = inner(self.xp.expand_dims(coef, axis=0)) * w + 2 * inner(u) - inner(u_prev)
        if extra is not None:
            new = new + extra
        return self._pad(new)

    def record(self, u: Any) -> Any:
        """Receiver samples of ``u``: (n_shots, n_rec), or None without receivers."""
        if not self.rec_global.shape[0]:
            return None
        xp = self.xp
        return xp.reshape(xp.take(xp.reshape(u, (-1,)), self.rec_global), (u.shape[0], -1))

    def inject(self, u: Any, coef: Any, amp_t: Any | None) -> Any:
        """``u`` with ``-coef f`` added at the sources (``coef`` on the padded grid)."""
        if amp_t is None or not self.src_global.shape[0]:
            return u
        xp = self.xp
        inj = -xp.take(xp.reshape(coef, (-1,)), self.src_local) * xp.reshape(amp_t, (-1,))
        return xp.reshape(scatter_add(xp.reshape(u, (-1,)), self.src_global, inj), u.shape)

    def mirror_ghosts(self, u: Any) -> Any:
        """Free-surface ghosts: odd mirror images of the cells below the surface."""
        for d, mirror, ghost in self.ghosts:
            u = u - ghost * self.xp.take(u, mirror, axis=d + 1)
        return u

    def model_view(self, padded: Any) -> Any:
        """Return the model cells of a padded field (shot axis first)."""
        g = self.geom
        sl = (slice(None), *(slice(g.lo(d), g.lo(d) + n) for d, n in enumerate(g.model_shape)))
        return padded[sl]

    def wavefield(self, state: dict[str, Any]) -> Any:
        """Return the primary wavefield of a state on the model grid."""
        return self.model_view(state[self.primary])

    # -- the equation's part -------------------------------------------------
    primary = "u"  # the state's field that wavefield() returns

    def coefficients(self, *models: Any) -> Any:
        """Differentiable per-call coefficients of the update from the models."""
        raise NotImplementedError

    def initial_state(self) -> dict[str, Any]:
        """Zero state."""
        raise NotImplementedError

    phases: ClassVar[tuple[str, ...]] = ()  # half-step phases of a first-order system
    record_after: ClassVar[int] = 0  # the phase after which sample() records

    def step(self, state: dict[str, Any], coeffs: Any, amp_t: Any | None) -> tuple[dict, Any]:
        """One time step: the new state and the receiver samples (or None).

        The default runs the equation's ``phases`` in order, each
        ``getattr(self, name)(state, coeffs, amp_t) -> state``, and takes
        :meth:`sample` after phase ``record_after``.
        """
        if not self.phases:
            raise NotImplementedError
        rec = None
        for i, name in enumerate(self.phases):
            state = getattr(self, name)(state, coeffs, amp_t)
            if i == self.record_after:
                rec = self.sample(state)
        return state, rec

    def sample(self, state: dict[str, Any]) -> Any:
        """Receiver samples (n_shots, n_rec) of a phased step, or None without receivers."""
        raise NotImplementedError

    def final_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """Return the state as the user sees it (CPML fields on the padded grid)."""
        raise NotImplementedError

    def callback_fields(self, state: dict[str, Any]) -> dict[str, Any]:
        """Return the wavefields a callback sees: the state's padded fields by name."""
        return {k: v for k, v in state.items() if not isinstance(v, list)}

    def load_state(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Return the state of step 0 from ``fields``, a result's ``state`` (a restart).

        Wavefields are copied; the CPML memory variables (on the whole padded
        grid there) are cut back to their strips.
        """
        state = self.initial_state()
        for key, zero in state.items():
            x = fields[key]
            if not isinstance(zero, list):
                state[key] = self.xp.asarray(x, copy=True)
                continue
            strips = []
            for d, (per_axis, full) in enumerate(zip(zero, x, strict=True)):
                axis = d + 1
                inner = self._interior(full, keep=axis)
                cut = []
                for (s0, n), z in zip(self.strips[d], per_axis, strict=True):
                    part = _along(inner, axis, s0, s0 + n)
                    # psi keeps a zero halo along its axis, zeta none (see cpml_state).
                    pad = (z.shape[axis] - n) // 2
                    cut.append(self._pad(part, [axis]) if pad else part + 0)
                strips.append(cut)
            state[key] = strips
        return state

    def run_steps(
        self,
        coeffs: Any,
        amp: Any,
        progress: bool = False,
        callbacks: Callbacks | None = None,
        models: dict[str, Any] | None = None,
        initial: dict[str, Any] | None = None,
    ) -> tuple[list[list[Any]], dict[str, Any]]:
        """Every step from the zero state: per-step outputs and the final state.

        ``callbacks.forward`` (see :mod:`sweep._callbacks`) is called before
        every ``callback_frequency``-th step with the state's wavefields.
        """
        g = self.geom
        state = self.initial_state() if initial is None else self.load_state(initial)
        records: list[Any] = []
        steps = range(g.nt)
        if progress:
            from tqdm.auto import tqdm

            steps = tqdm(steps, desc="sweep eager", unit="step")
        forward = callbacks.forward if callbacks is not None else None
        for t in steps:
            if forward is not None and t % callbacks.frequency == 0:
                forward(CallbackState(t, g.nt, g.dt, g.spacing, "forward", g,
                                      self.callback_fields(state), models or {}))  # fmt: skip
            amp_t = amp[:, :, t] if amp is not None and g.n_src else None
            state, rec = self.step(state, coeffs, amp_t)
            if rec is not None:
                records.append(rec)
        return records, state

    def stack_records(self, records: list[Any]) -> Any:
        """Receiver data (n_shots, n_rec, nt) from the per-step samples."""
        g = self.geom
        if records:
            return self.xp.stack(records, axis=-1)
        return self.zeros((g.n_shots, g.n_rec, g.nt))


def _along(x: Any, axis: int, start: int, stop: int) -> Any:
    """``x[start:stop]`` along ``axis``."""
    sl = [slice(None)] * len(x.shape)
    sl[axis] = slice(start, stop)
    return x[tuple(sl)]
