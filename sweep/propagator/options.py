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
from typing import Any, Literal

__all__ = [
    "COMPILE_MODES",
    "BoundaryOptions",
    "CUDAOptions",
    "CkptOptions",
    "EagerOptions",
    "MemoryOptions",
]

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
CKPT_DEFAULT_CHUNKS = 100


def _check_bool(owner: str, name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be True or False, got {value!r}")


def _check_int(owner: str, name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be an integer, got {value!r}")


def _check_choice(owner: str, name: str, value: Any, choices: tuple) -> None:
    if value not in choices:
        raise ValueError(
            f"{owner}.{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}"
        )


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
            _check_bool("EagerOptions", name, getattr(self, name))
        _check_choice("EagerOptions", "compile_mode", self.compile_mode, COMPILE_MODES)
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
class BoundaryOptions:
    """Boundary saving: store the wavefield's boundary strips, replay the interior.

    Parameters
    ----------
    storage : {"gpu", "cpu", "disk"}
        Keep the saved boundaries in device memory (for NumPy arrays: host
        memory), stage them in host memory, or write them to a temporary file
        (``SWEEP_TMPDIR`` chooses the folder) when they do not fit in memory.
    transfer_interval : int
        Steps per device-to-host transfer; only with ``storage="cpu"`` or
        ``"disk"`` (>= 1).
    pinned_memory : bool
        Use pinned host memory for the transfers; only with ``storage="cpu"``
        (CuPy arrays; host arrays need no transfer).
    """

    storage: Literal["gpu", "cpu", "disk"] = "gpu"
    transfer_interval: int = 1
    pinned_memory: bool = False

    def __post_init__(self) -> None:
        _check_choice("BoundaryOptions", "storage", self.storage, ("gpu", "cpu", "disk"))
        _check_int("BoundaryOptions", "transfer_interval", self.transfer_interval)
        _check_bool("BoundaryOptions", "pinned_memory", self.pinned_memory)
        if self.transfer_interval < 1:
            raise ValueError(
                f"BoundaryOptions.transfer_interval must be >= 1, got {self.transfer_interval}"
            )
        if self.storage == "gpu" and self.transfer_interval != 1:
            raise ValueError(
                "BoundaryOptions.transfer_interval only applies to storage='cpu'; with "
                f"storage='gpu' it must stay 1, got {self.transfer_interval}"
            )
        if self.storage != "cpu" and self.pinned_memory:
            raise ValueError(
                "BoundaryOptions.pinned_memory only applies to storage='cpu'; with "
                f"storage={self.storage!r} it must stay False"
            )


@dataclass
class CkptOptions:
    """Checkpointing: store some full states, recompute the rest in the backward pass.

    Parameters
    ----------
    mode : {"chunk", "recursive"}
        ``"chunk"``: periodic checkpoints, ``chunks`` segments replayed one by
        one.  ``"recursive"``: a fixed budget of ``count`` checkpoints.
    chunks : int
        Number of segments, at most; only for ``mode="chunk"`` (>= 1).  sweep
        uses fewer when fewer need less memory: more than
        ``sqrt(n_stored * snapshot / state)`` chunks only add saved states
        (the replay costs one forward pass whatever the count).
    count : int
        Checkpoint budget; only for ``mode="recursive"`` (>= 1).
    """

    mode: Literal["chunk", "recursive"] = "chunk"
    chunks: int = CKPT_DEFAULT_CHUNKS
    count: int = 0

    def __post_init__(self) -> None:
        _check_choice("CkptOptions", "mode", self.mode, ("chunk", "recursive"))
        _check_int("CkptOptions", "chunks", self.chunks)
        _check_int("CkptOptions", "count", self.count)
        if self.mode == "chunk":
            if self.chunks < 1:
                raise ValueError(
                    f"CkptOptions.chunks must be >= 1 in mode='chunk', got {self.chunks}"
                )
            if self.count != 0:
                raise ValueError(
                    "CkptOptions.count is only used by mode='recursive'; with mode='chunk' it "
                    f"must stay 0, got {self.count}"
                )
        else:
            if self.count < 1:
                raise ValueError(
                    f"CkptOptions.count must be >= 1 in mode='recursive', got {self.count}"
                )
            if self.chunks != CKPT_DEFAULT_CHUNKS:
                raise ValueError(
                    "CkptOptions.chunks is only used by mode='chunk'; with mode='recursive' it "
                    f"must stay at its default {CKPT_DEFAULT_CHUNKS}, got {self.chunks}"
                )


@dataclass
class MemoryOptions:
    """One memory-saving strategy of the compiled implementation.

    Parameters
    ----------
    strategy : {None, "boundary", "ckpt", "auto"}
        None stores the full forward wavefield; "auto" picks the fastest
        strategy that fits the byte budgets (see docs/memory.md).
    boundary : BoundaryOptions, optional
        Required with ``strategy="boundary"``, forbidden otherwise.
    ckpt : CkptOptions, optional
        Required with ``strategy="ckpt"``, forbidden otherwise.
    """

    strategy: Literal["boundary", "ckpt", "auto"] | None = None
    boundary: BoundaryOptions | None = None
    ckpt: CkptOptions | None = None

    def __post_init__(self) -> None:
        _check_choice(
            "MemoryOptions", "strategy", self.strategy, (None, "boundary", "ckpt", "auto")
        )
        if self.boundary is not None and not isinstance(self.boundary, BoundaryOptions):
            raise TypeError(
                "MemoryOptions.boundary must be a BoundaryOptions, got "
                f"{type(self.boundary).__name__}"
            )
        if self.ckpt is not None and not isinstance(self.ckpt, CkptOptions):
            raise TypeError(
                f"MemoryOptions.ckpt must be a CkptOptions, got {type(self.ckpt).__name__}"
            )
        if self.boundary is not None and self.ckpt is not None:
            raise ValueError(
                "MemoryOptions.boundary and MemoryOptions.ckpt cannot be used at the same time; "
                "choose one strategy"
            )
        if self.strategy == "boundary" and self.boundary is None:
            raise ValueError(
                "MemoryOptions(strategy='boundary') requires boundary=BoundaryOptions(...)"
            )
        if self.strategy == "ckpt" and self.ckpt is None:
            raise ValueError("MemoryOptions(strategy='ckpt') requires ckpt=CkptOptions(...)")
        if self.strategy in (None, "auto") and (self.boundary is not None or self.ckpt is not None):
            raise ValueError(
                f"MemoryOptions(strategy={self.strategy!r}) takes neither boundary nor ckpt "
                "options; set strategy='boundary' or 'ckpt' to use them"
            )


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
