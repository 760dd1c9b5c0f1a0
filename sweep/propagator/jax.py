"""JAX adapter: :class:`PropJax`, a callable for any registered equation.

``impl="c"`` wraps the compiled core in ``jax.custom_vjp``: the forward and the
backward are each one ``jax.pure_callback`` into the NumPy-level core.  The
differentiated forward keeps the core's tape (stored wavefield or checkpoints,
per the memory settings) on the host, in a small cache keyed by a token that
JAX carries as the residual, so a gradient costs one forward and one adjoint.
When the tape is gone (evicted from the cache, or JAX re-ran a callback), the
backward reruns the forward.  Callbacks run on the host: on a GPU, inputs and
outputs round-trip through host memory.

``impl="eager"`` runs the Array-API step on jax arrays inside ``jax.lax.scan``
and lets JAX differentiate it; the loop is split into chunks that are
rematerialised (``jax.checkpoint``) in the backward pass.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._impl import resolve_impl
from .._vjp import vjp
from ..equations import EagerPlan
from ._common import check_ckpt, eager_chunks, make_settings, output_shape

__all__ = ["PropJax"]


def _struct(x: Any) -> jax.ShapeDtypeStruct | None:
    return None if x is None else jax.ShapeDtypeStruct(x.shape, x.dtype)


def _receivers(prop: PropJax, models: tuple, amp: Any) -> jax.ShapeDtypeStruct:
    shape = output_shape(prop.settings, None if amp is None else amp.shape)
    return jax.ShapeDtypeStruct(shape, models[0].dtype)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def _core(prop: PropJax, models: tuple, amp: Any) -> jax.Array:
    # Not differentiated: no tape.
    out = _receivers(prop, models, amp)
    return jax.pure_callback(prop._host_forward, out, models, amp, vmap_method="sequential")


def _core_fwd(prop: PropJax, models: tuple, amp: Any) -> tuple[jax.Array, tuple]:
    out = (_receivers(prop, models, amp), jax.ShapeDtypeStruct((), np.int32))
    rec, token = jax.pure_callback(
        prop._host_forward_tape, out, models, amp, vmap_method="sequential"
    )
    return rec, (models, amp, token)


def _core_bwd(prop: PropJax, res: tuple, grad: jax.Array) -> tuple:
    models, amp, token = res
    shapes = (tuple(_struct(m) for m in models), _struct(amp))
    return jax.pure_callback(
        prop._host_backward, shapes, models, amp, grad, token, vmap_method="sequential"
    )


class _Tapes:
    """The last few forward tapes, by token (each may hold a stored wavefield)."""

    def __init__(self, size: int = 2) -> None:
        self.size, self.next, self.items = size, 0, OrderedDict()

    def put(self, pullback: Any) -> int:
        self.next = (self.next + 1) % 2**31
        self.items[self.next] = pullback
        while len(self.items) > self.size:
            self.items.popitem(last=False)  # frees the oldest store (files included)
        return self.next

    def pop(self, token: int) -> Any:
        return self.items.pop(token, None)


_core.defvjp(_core_fwd, _core_bwd)


class PropJax:
    """Differentiable propagation of a registered equation on jax arrays.

    Works under ``jax.jit``, ``jax.grad``, ``jax.value_and_grad`` and
    ``jax.vmap`` (over models or source amplitudes).

    Parameters
    ----------
    equation : str
        Registry name (see ``sweep list equations``), e.g. ``"acoustic"``.
    grid_spacing, dt, source_locations, receiver_locations
        As for the equation's function (e.g. :func:`sweep.acoustic`); the
        locations are static (host) data.
    impl : {None, "auto", "eager", "c"}
        ``None``/``"auto"`` uses the compiled core when ``sweep._C`` imports;
        ``"c"`` falls back to ``"eager"`` with a ``UserWarning`` when it does not.
    use_ckpt : bool, optional
        Eager path: rematerialise the time loop chunk by chunk in the backward
        pass (default: yes; ``None`` means the same).
    ckpt_chunks : int, optional
        Number of chunks; default: the count that minimises the estimated
        peak memory (``sweep.estimate_memory(...).eager.jax_ckpt_chunks``).
    **options
        Further settings of the equation (``accuracy``, ``pml_width``, ...).
        The eager path needs ``max_vel`` and ``pml_freq`` when the models are
        traced (under ``jit``, ``grad`` or ``vmap``), because the CFL check and
        the CPML profiles are built from values, not tracers.
    """

    def __init__(
        self,
        equation: str = "acoustic",
        *,
        grid_spacing: Any,
        dt: float,
        source_locations: Any = None,
        receiver_locations: Any = None,
        impl: str | None = None,
        use_ckpt: bool | None = True,
        ckpt_chunks: int | None = None,
        **options: Any,
    ) -> None:
        self.spec, self.settings = make_settings(
            equation, grid_spacing, dt, source_locations, receiver_locations, options
        )
        check_ckpt(use_ckpt, ckpt_chunks)
        if not self.spec.compiled:
            if impl == "c":
                raise ValueError(f"equation {self.spec.name!r} has no compiled implementation")
            impl = "eager"
        self.impl = resolve_impl(self.spec.impl_for(impl, self.settings))
        self.use_ckpt = use_ckpt is not False
        self.ckpt_chunks = ckpt_chunks
        self._runners: dict[tuple, Any] = {}
        self._tapes = _Tapes()

    def __call__(self, *models: jax.Array, source_amplitudes: jax.Array | None = None) -> jax.Array:
        """Receiver data ``(n_shots, n_receivers, nt)`` for the models (``spec.models`` order)."""
        if len(models) != len(self.spec.models):
            raise TypeError(
                f"{self.spec.name} takes {len(self.spec.models)} model array(s) "
                f"{self.spec.models}, got {len(models)}"
            )
        models = tuple(jnp.asarray(m) for m in models)
        amp = None if source_amplitudes is None else jnp.asarray(source_amplitudes)
        if self.impl == "c":
            return _core(self, models, amp)
        return self._eager(models, amp)

    # -- compiled core, on the host ----------------------------------------
    def _run(self, models: tuple, amp: Any, *, grad: bool) -> Any:
        models = tuple(np.asarray(m) for m in models)
        amp = None if amp is None else np.asarray(amp)
        settings = {**self.settings, "impl": "c", "source_amplitudes": amp}
        if grad:
            return vjp(self.spec.function, *models, **settings)
        return self.spec.function(*models, **settings)

    def _host_forward(self, models: tuple, amp: Any) -> np.ndarray:
        return np.asarray(self._run(models, amp, grad=False).receivers)

    def _host_forward_tape(self, models: tuple, amp: Any) -> tuple[np.ndarray, np.ndarray]:
        out, pullback = self._run(models, amp, grad=True)
        token = self._tapes.put(pullback)
        return np.asarray(out.receivers), np.asarray(token, dtype=np.int32)

    def _host_backward(self, models: tuple, amp: Any, grad: Any, token: Any) -> tuple:
        pullback = self._tapes.pop(int(np.asarray(token)))
        if pullback is None:  # evicted or never stored: recompute the forward
            _, pullback = self._run(models, amp, grad=True)
        grads = pullback(grad)
        g_models = tuple(np.asarray(grads[n]) for n in self.spec.models)
        return g_models, None if amp is None else np.asarray(grads["source_amplitudes"])

    # -- eager Array-API path ----------------------------------------------
    def _eager(self, models: tuple, amp: Any) -> jax.Array:
        like = jnp.zeros((), dtype=models[0].dtype)
        with warnings.catch_warnings(), jax.ensure_compile_time_eval():
            # Without jax_enable_x64 the int64 index arrays become int32, which is all JAX has.
            warnings.filterwarnings("ignore", "Explicitly requested dtype int64")
            # Constants are concrete even under an outer trace, so the plan can be cached.
            plan = self.spec.eager_plan(models, amp, like, **self.settings)
        if amp is None:
            amp = jnp.zeros((plan.n_shots, 0, plan.nt), dtype=like.dtype)
        if plan.key not in self._runners:  # one jitted loop per set of constants
            while len(self._runners) >= 4:
                self._runners.pop(next(iter(self._runners)))
            self._runners[plan.key] = jax.jit(partial(self._loop, plan))
        return self._runners[plan.key](models, amp)

    def _loop(self, plan: EagerPlan, models: tuple, amp: jax.Array) -> jax.Array:
        sizes = eager_chunks(plan, self.ckpt_chunks, "jax") if self.use_ckpt else [plan.nt]
        n_chunks, length = len(sizes), sizes[0]
        pad = n_chunks * length - plan.nt  # trailing zero-source steps, outputs dropped
        xs = jnp.moveaxis(jnp.pad(amp, ((0, 0), (0, 0), (0, pad))), -1, 0)
        xs = xs.reshape(n_chunks, length, *xs.shape[1:])

        def step(coeffs: Any, state: Any, amp_t: Any) -> tuple[Any, Any]:
            return plan.step(state, coeffs, amp_t)

        def chunk(state: Any, amp_chunk: Any, coeffs: Any) -> tuple[Any, Any]:
            return jax.lax.scan(partial(step, coeffs), state, amp_chunk)

        if self.use_ckpt:
            chunk = jax.checkpoint(chunk)
        coeffs = plan.coefficients(*models)
        _, recs = jax.lax.scan(lambda s, a: chunk(s, a, coeffs), plan.initial_state(), xs)
        if not plan.n_rec:
            return jnp.zeros((plan.n_shots, 0, plan.nt), dtype=amp.dtype)
        recs = recs.reshape(n_chunks * length, *recs.shape[2:])[: plan.nt]
        out = jnp.moveaxis(recs, 0, -1)
        return out if plan.finish is None else plan.finish(out)
