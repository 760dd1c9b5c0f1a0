"""Framework-neutral pieces shared by the torch and JAX adapters."""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from .. import equations
from .._impl import IMPLS
from .._warn import warn_user
from .._xp import to_host
from .options import CUDAOptions, EagerOptions, MemoryOptions

# backend name -> the impl it implies (None: chosen by impl=)
BACKENDS = {"torch": None, "eager": "eager", "cuda": "c"}
# Settings the adapters own themselves (never forwarded as options).
_RESERVED = ("source_amplitudes", "impl")


def make_settings(
    equation: str | equations.EquationSpec,
    grid_spacing: Any,
    dt: Any,
    source_locations: Any,
    receiver_locations: Any,
    options: dict[str, Any],
) -> tuple[equations.EquationSpec, dict[str, Any]]:
    """Look up the equation and check the option names; returns (spec, settings)."""
    spec = equations.get(equation)
    for name in options:
        if name in _RESERVED:
            raise TypeError(
                f"{name!r} is not a constructor setting: pass source_amplitudes to the call "
                "and impl as its own keyword"
            )
        if name not in spec.options:
            raise TypeError(
                f"unexpected setting {name!r} for equation {spec.name!r}"
                f"{equations.suggest(name, spec.options)}"
            )

    def host(x: Any) -> np.ndarray | None:
        return None if x is None else np.asarray(to_host(x))

    settings = {
        "grid_spacing": grid_spacing,
        "dt": dt,
        "source_locations": host(source_locations),
        "receiver_locations": host(receiver_locations),
        **options,
    }
    return spec, settings


def check_ckpt(use_ckpt: Any, ckpt_chunks: Any) -> None:
    """Validate the eager checkpoint arguments (``use_ckpt=None``: the adapter's default)."""
    if use_ckpt is not None and not isinstance(use_ckpt, bool):
        raise TypeError(
            f"use_ckpt must be True or False (or None for the default: checkpoint the eager "
            f"path), got {use_ckpt!r}"
        )
    if ckpt_chunks is not None and (
        isinstance(ckpt_chunks, bool) or not isinstance(ckpt_chunks, int) or ckpt_chunks < 1
    ):
        raise ValueError(f"ckpt_chunks must be None or a positive integer, got {ckpt_chunks!r}")


def chunk_sizes(nt: int, n_chunks: int | None) -> list[int]:
    """Split ``nt`` steps into ``n_chunks`` near-equal chunks (default ~sqrt(nt))."""
    n = max(1, round(math.sqrt(nt))) if n_chunks is None else min(n_chunks, nt)
    return [nt // n + (1 if i < nt % n else 0) for i in range(n)]


def eager_chunks(plan: equations.EagerPlan, ckpt_chunks: int | None, framework: str) -> list[int]:
    """Chunk lengths of a checkpointed eager loop of ``framework`` ("torch" or "jax").

    ``ckpt_chunks`` when given, else the count that minimises the plan's
    estimated peak memory for that framework's checkpointing
    (:mod:`sweep._eager_memory`), else about ``sqrt(nt)``.
    """
    if ckpt_chunks is None and plan.memory is not None:
        ckpt_chunks = getattr(plan.memory, f"{framework}_ckpt_chunks")
    return chunk_sizes(plan.nt, ckpt_chunks)


def memory_kwargs(spec: equations.EquationSpec, memory: MemoryOptions | None) -> dict[str, Any]:
    """``{"memory": memory}`` when the core accepts it; warn when a strategy is dropped."""
    if memory is None:
        return {}
    if "memory" in inspect.signature(spec.function).parameters:
        return {"memory": memory}
    if memory.strategy is not None:
        warn_user(
            f"sweep.{spec.name} does not implement memory strategy {memory.strategy!r} yet; "
            "the full forward wavefield is stored instead"
        )
    return {}


def output_shape(
    spec: equations.EquationSpec, settings: dict[str, Any], amp_shape: tuple[int, ...] | None
) -> tuple[int, ...]:
    """Receiver data shape ``(n_shots, n_receivers, nt)`` from static information."""
    rec = settings["receiver_locations"]
    if amp_shape is not None:
        n_shots, nt = amp_shape[0], amp_shape[-1]
    else:
        if settings.get("nt") is None:
            raise ValueError("nt is required when there are no source_amplitudes")
        n_shots, nt = (1 if rec is None else rec.shape[0]), settings["nt"]
    return (n_shots, spec.n_receivers(settings), nt)


def select(
    spec: equations.EquationSpec,
    backend: str,
    impl: str | None,
    eager_options: EagerOptions | None,
    cuda_options: CUDAOptions | None,
    backend_options: EagerOptions | CUDAOptions | None,
    use_ckpt: bool,
) -> tuple[str | None, EagerOptions | None, CUDAOptions | None]:
    """Map ``backend``/``impl`` to the requested impl and check the option blocks match it.

    Returns the requested impl (None for auto, "c" or "eager", before the
    binding fallback) and the eager and CUDA option blocks.
    """
    if backend not in BACKENDS:
        hint = "; use sweep.propagator.jax.PropJax for JAX" if backend == "jax" else ""
        raise ValueError(f"backend must be 'torch', 'eager' or 'cuda', got {backend!r}{hint}")
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of None, 'auto', 'eager' or 'c', got {impl!r}")
    wanted = BACKENDS[backend] or (None if impl == "auto" else impl)
    if BACKENDS[backend] and impl not in (None, "auto", wanted):
        raise ValueError(f"backend={backend!r} selects impl={wanted!r}, got impl={impl!r}")
    if backend_options is not None:
        if not isinstance(backend_options, (EagerOptions, CUDAOptions)):
            raise TypeError(
                "backend_options must be an EagerOptions or a CUDAOptions, got "
                f"{type(backend_options).__name__}"
            )
        eager = isinstance(backend_options, EagerOptions)
        if (eager_options if eager else cuda_options) is not None:
            raise ValueError(
                f"{type(backend_options).__name__} given twice: as backend_options and as "
                f"{'eager_options' if eager else 'cuda_options'}"
            )
        if eager:
            eager_options = backend_options
        else:
            cuda_options = backend_options
    for value, kind, name in (
        (eager_options, EagerOptions, "eager_options"),
        (cuda_options, CUDAOptions, "cuda_options"),
    ):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    chosen = f"backend={backend!r}, impl={impl!r}"
    if wanted == "c" and eager_options is not None:
        raise ValueError(
            f"EagerOptions configure the eager implementation, but {chosen} selects the "
            "compiled one; pass CUDAOptions (cuda_options=) instead"
        )
    if wanted == "c" and use_ckpt:
        raise ValueError(
            f"use_ckpt checkpoints the eager time loop, but {chosen} selects the compiled "
            "implementation; use CUDAOptions(memory=MemoryOptions(strategy='ckpt', ...))"
        )
    if wanted == "eager" and cuda_options is not None:
        raise ValueError(
            f"CUDAOptions configure the compiled implementation, but {chosen} selects the "
            "eager one; pass EagerOptions (eager_options=) instead"
        )
    if not spec.compiled:
        if wanted == "c":
            raise ValueError(f"equation {spec.name!r} has no compiled implementation (impl='c')")
        wanted = "eager"
    return wanted, eager_options, cuda_options
