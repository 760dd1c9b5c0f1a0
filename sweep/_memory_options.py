"""Option blocks of the gradient memory strategies (:mod:`sweep._memory`).

:class:`MemoryOptions` chooses one strategy of the compiled adjoint, with a
:class:`BoundaryOptions` (boundary saving) or a :class:`CkptOptions`
(checkpointing).  They belong to the core, which every equation shares; the
public import path is :mod:`sweep.propagator.options` (and
:mod:`sweep.propagator`), which re-exports them.  Every block checks itself
in ``__post_init__`` and raises ``TypeError`` or ``ValueError`` naming the
offending field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CKPT_DEFAULT_CHUNKS",
    "BoundaryOptions",
    "CkptOptions",
    "MemoryOptions",
    "check_bool",
    "check_choice",
    "check_int",
]

CKPT_DEFAULT_CHUNKS = 100


def check_bool(owner: str, name: str, value: Any) -> None:
    """Raise TypeError unless ``owner.name`` is True or False."""
    if not isinstance(value, bool):
        raise TypeError(f"{owner}.{name} must be True or False, got {value!r}")


def check_int(owner: str, name: str, value: Any) -> None:
    """Raise TypeError unless ``owner.name`` is an integer (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}.{name} must be an integer, got {value!r}")


def check_choice(owner: str, name: str, value: Any, choices: tuple) -> None:
    """Raise ValueError unless ``owner.name`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(
            f"{owner}.{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}"
        )


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
        check_choice("BoundaryOptions", "storage", self.storage, ("gpu", "cpu", "disk"))
        check_int("BoundaryOptions", "transfer_interval", self.transfer_interval)
        check_bool("BoundaryOptions", "pinned_memory", self.pinned_memory)
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
        check_choice("CkptOptions", "mode", self.mode, ("chunk", "recursive"))
        check_int("CkptOptions", "chunks", self.chunks)
        check_int("CkptOptions", "count", self.count)
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
        check_choice("MemoryOptions", "strategy", self.strategy, (None, "boundary", "ckpt", "auto"))
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
