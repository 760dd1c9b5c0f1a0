"""Option blocks of the Torch-family propagator (:class:`~sweep.propagator.torch.PropTorch`).

* :class:`EagerOptions` -- ``torch.compile`` and inspection settings of the
  eager implementation (``backend="eager"`` or ``impl="eager"``).
* :class:`CUDAOptions` -- settings of the compiled implementation
  (``backend="cuda"`` or ``impl="c"``): a :class:`MemoryOptions` block choosing
  one memory-saving strategy, :class:`BoundaryOptions` or :class:`CkptOptions`.

Every block checks itself in ``__post_init__`` and raises ``TypeError`` or
``ValueError`` naming the offending field.  Eager checkpointing uses the
top-level ``use_ckpt`` and ``ckpt_chunks`` arguments of ``PropTorch`` (on by
default, in chunks planned from the estimated bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The memory blocks live in the core (sweep._memory uses them for every
# equation); this module is their public home.
from .._memory_options import (
    CKPT_DEFAULT_CHUNKS,
    BoundaryOptions,
    CkptOptions,
    MemoryOptions,
    check_bool,
    check_choice,
)

__all__ = [
    "CKPT_DEFAULT_CHUNKS",
    "COMPILE_MODES",
    "BoundaryOptions",
    "CUDAOptions",
    "CkptOptions",
    "EagerOptions",
    "MemoryOptions",
]

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass
class EagerOptions:
    """Settings of the eager (PyTorch autograd) implementation.

    Parameters
    ----------
    use_compile : bool
        Wrap the time step in ``torch.compile``.
    compile_mode : str
        ``mode`` of ``torch.compile``: "default", "reduce-overhead",
        "max-autotune" or "max-autotune-no-cudagraphs".
    compile_dynamic : bool
        ``dynamic`` of ``torch.compile`` (allow dynamic shapes).
    compile_backend : str, optional
        ``backend`` of ``torch.compile`` (default: torch's, "inductor").
    compile_fullgraph : bool
        ``fullgraph`` of ``torch.compile`` (error on graph breaks).
    store_last_wavefield : bool
        Keep the final wavefield of the last forward call on the module
        (``last_wavefield``, ``last_state``), detached, for inspection.
    """

    use_compile: bool = False
    compile_mode: str = "default"
    compile_dynamic: bool = False
    compile_backend: str | None = None
    compile_fullgraph: bool = False
    store_last_wavefield: bool = False

    def __post_init__(self) -> None:
        for name in ("use_compile", "compile_dynamic", "compile_fullgraph", "store_last_wavefield"):
            check_bool("EagerOptions", name, getattr(self, name))
        check_choice("EagerOptions", "compile_mode", self.compile_mode, COMPILE_MODES)
        if self.compile_backend is not None and (
            not isinstance(self.compile_backend, str) or not self.compile_backend
        ):
            raise TypeError(
                "EagerOptions.compile_backend must be None or a torch.compile backend name "
                f"such as 'inductor' or 'aot_eager', got {self.compile_backend!r}"
            )

    def compile_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``torch.compile``."""
        kwargs: dict[str, Any] = {
            "mode": self.compile_mode,
            "dynamic": self.compile_dynamic,
            "fullgraph": self.compile_fullgraph,
        }
        if self.compile_backend is not None:
            kwargs["backend"] = self.compile_backend
        return kwargs


@dataclass
class CUDAOptions:
    """Settings of the compiled implementation (``backend="cuda"`` or ``impl="c"``).

    Parameters
    ----------
    memory : MemoryOptions, optional
        Memory-saving strategy; None stores the full forward wavefield.
    """

    memory: MemoryOptions | None = None

    def __post_init__(self) -> None:
        if self.memory is not None and not isinstance(self.memory, MemoryOptions):
            raise TypeError(
                "CUDAOptions.memory must be a MemoryOptions or None, got "
                f"{type(self.memory).__name__}"
            )
