"""Gradient memory strategies, shared by every equation and device.

The adjoint pass needs, at step ``t``, the snapshot the forward step ``t``
produced (for the acoustic equation ``W^t``, the factor multiplying
``v^2 dt^2``).  How it gets there is the strategy:

``full``
    Store every (or every ``k``-th) snapshot of the model cells in device
    memory, host memory or a temporary file (:mod:`sweep._storage`),
    optionally compressed to bfloat16.
``boundary``
    Store only the state (``u``) of the band of model cells next to the CPML
    at every step and run the forward wavefield backwards in time on the rest
    of the model during the adjoint pass.  Leapfrog is time-reversible, so
    this recomputes what full storage would have stored, up to round-off.
    The damped CPML is not: its state is saved every few steps (the strips of
    :meth:`~sweep._stepper.ReversibleState.outer_parts`) and each segment is
    replayed forward in the adjoint pass with the band's saved ``u`` as its
    inner boundary, which gives the CPML cells' ``W`` bitwise as the forward
    pass had it, and the state of the ring of CPML cells next to the band,
    from which (with the band's saved ``u`` and the reconstructed plain
    cells) the reconstruction recomputes the band's ``W``.  Only equations
    whose stepper is reversible allow it.
``ckpt-chunk`` / ``ckpt-recursive``
    Keep whole forward states at a few times and replay the forward pass from
    them: evenly spaced chunks, or the binomial (Revolve) schedule of
    :mod:`sweep._revolve`.  Replays use the same kernels, so their gradients
    are bitwise those of full storage.

Strategies see the equation only through the stepper interface of
:mod:`sweep._stepper` (``forward_steps``, ``adjoint_steps``, state copies,
sizes such as ``snapshot_shape`` and ``state_bytes``, and the stepper's own
gradient finisher); :class:`sweep._compiled.CompiledAcoustic` is the acoustic
stepper.  :func:`plan` turns the user's options into a :class:`MemoryPlan`;
:func:`estimate` reports bytes per strategy.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np

from . import _callbacks, _debug, _hostmem, _revolve
from ._config import config
from ._memory_options import CKPT_DEFAULT_CHUNKS, MemoryOptions
from ._stepper import AdjointState, ForwardState, ReversibleStepper, Stepper
from ._storage import SnapshotStore

log = logging.getLogger("sweep")

STORAGE_MODES = ("device", "cpu", "disk", "none", "auto")
# Host memory staged per chunk when snapshots cannot be written in place
# (compressed or on disk): large enough to amortise I/O, small next to the store.
_SCRATCH_BYTES = 16 << 20
# The disk writer queues at most this many bytes of copies (sweep._storage).
_DISK_QUEUE_BYTES = 256 << 20  # documented bound, see peak_bytes


@dataclass
class MemoryPlan:
    """What a gradient-enabled run keeps for its adjoint pass.

    Attributes
    ----------
    strategy : str
        ``"full"``, ``"boundary"``, ``"ckpt-chunk"``, ``"ckpt-recursive"`` or
        ``"none"`` (no model gradient).
    storage : str or None
        Where the saved data lives: ``"device"``, ``"cpu"`` or ``"disk"``.
    compression : str or None
        ``"bf16"`` or None.
    interval : int
        Snapshot sampling interval (full storage and checkpointing).
    checkpoints : int
        Number of checkpoint states (checkpointing), else 0.
    transfer_interval : int
        Steps per device-to-host transfer (boundary saving to host memory).
    storage_bytes : int
        Bytes of snapshots, boundary strips or checkpoint states.
    reason : str
        Why this plan was chosen (for ``strategy="auto"``).
    """

    strategy: str
    storage: str | None = None
    compression: str | None = None
    interval: int = 1
    checkpoints: int = 0
    transfer_interval: int = 1
    storage_bytes: int = 0
    reason: str = ""
    estimates: dict[str, int] = field(default_factory=dict, repr=False)


@dataclass
class MemorySettings:
    """The memory keywords of a propagator call, validated."""

    memory: MemoryOptions | None = None
    storage_mode: str = "auto"
    storage_compression: str | None = None
    interval: int = 1
    limit_device: int | None = None
    limit_host: int | None = None


def check_settings(
    memory: Any,
    storage_mode: Any,
    storage_compression: Any,
    model_gradient_sampling_interval: Any,
    storage_bytes_limit_device: Any,
    storage_bytes_limit_host: Any,
) -> MemorySettings:
    """Validate the memory keywords of ``sweep.acoustic`` (before any compute)."""
    if memory is not None and not isinstance(memory, MemoryOptions):
        raise TypeError(
            "memory must be a sweep.propagator.options.MemoryOptions or None, got "
            f"{type(memory).__name__}"
        )
    if storage_mode not in STORAGE_MODES:
        raise ValueError(
            f"storage_mode must be one of {', '.join(map(repr, STORAGE_MODES))}, "
            f"got {storage_mode!r}"
        )
    if storage_compression is False or storage_compression in (None, "none"):
        compression = None
    elif storage_compression == "bf16":
        compression = "bf16"
    else:
        raise ValueError(
            f"storage_compression must be False, 'none' or 'bf16', got {storage_compression!r}"
        )
    k = model_gradient_sampling_interval
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"model_gradient_sampling_interval must be an integer >= 1, got {k!r}")
    limits = []
    for name, value in (
        ("storage_bytes_limit_device", storage_bytes_limit_device),
        ("storage_bytes_limit_host", storage_bytes_limit_host),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ValueError(
                f"{name} must be None or a non-negative number of bytes, got {value!r}"
            )
        limits.append(value)
    strategy = memory.strategy if memory is not None else None
    if strategy == "boundary":
        if k != 1:
            raise ValueError(
                "model_gradient_sampling_interval applies to full storage and checkpointing; "
                "boundary saving recomputes every step, so leave it at 1"
            )
        if compression is not None:
            raise ValueError(
                "storage_compression applies to stored snapshots; boundary saving keeps exact "
                "boundary strips, so leave it False"
            )
    if strategy in ("boundary", "ckpt") and storage_mode not in ("auto", "none"):
        raise ValueError(
            f"storage_mode={storage_mode!r} selects where full storage keeps snapshots; with "
            f"MemoryOptions(strategy={strategy!r}) leave it 'auto' (boundary saving takes "
            "BoundaryOptions(storage=...))"
        )
    if strategy in ("boundary", "ckpt") and storage_mode == "none":
        raise ValueError(
            f"storage_mode='none' (no model gradient) contradicts MemoryOptions(strategy="
            f"{strategy!r}); drop one of them"
        )
    return MemorySettings(memory, storage_mode, compression, k, limits[0], limits[1])


def boundary_refused(equation: str, why: str = "") -> ValueError:
    """Return the error for boundary saving asked of an equation that does not run backwards.

    ``why``: the reason, from the equation's declaration (``EquationSpec.irreversible``).
    """
    because = f" ({why})" if why else ""
    return ValueError(
        f"MemoryOptions(strategy='boundary') needs an equation whose forward pass "
        f"runs backwards in time, and the {equation} equation's does not{because}; use "
        "checkpointing (MemoryOptions(strategy='ckpt', ckpt=CkptOptions(...))) or "
        "full storage (memory=None or MemoryOptions())"
    )


def is_default(s: MemorySettings) -> bool:
    return (
        s.memory is None
        and s.storage_mode == "auto"
        and s.storage_compression is None
        and s.interval == 1
    )


# -- sizes -------------------------------------------------------------------------
def _host_available() -> int:
    """Return the host bytes a call may use: free memory plus the stores sweep keeps.

    Cached mappings (:mod:`sweep._hostmem`) are resident, so the kernel does
    not count them as available, but they are reused by a store of their size
    or unmapped before any other is made: without them, a loop that frees
    each call's results would see half the memory every other call and
    alternate between full storage and a cheaper strategy.
    """
    return _kernel_available() + _hostmem.cached_bytes()


def _kernel_available() -> int:
    """Return the kernel's estimate of available host memory (``MemAvailable``)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _device_available(xp: Any) -> int:
    if xp is np:
        return _host_available()
    free, _ = xp.cuda.runtime.memGetInfo()
    return int(free)


def default_limits(xp: Any, s: MemorySettings) -> tuple[int, int]:
    """Byte budgets (device, host): the call's, else sweep.config's, else a share of what is free.

    The share is ``memory_fraction`` (default 80 %) of the memory free now.
    """
    host = s.limit_host if s.limit_host is not None else config.get("memory_limit_host")
    if host is None:
        host = int(config.get("memory_fraction") * _host_available())
    if s.limit_device is not None:
        device = s.limit_device
    elif xp is np:
        device = host  # host arrays: the "device" is host memory
    else:
        device = config.get("memory_limit_device")
        if device is None:
            device = int(config.get("memory_fraction") * _device_available(xp))
    return device, host


def _n_stored(nt: int, k: int) -> int:
    return -(-nt // k)


def full_bytes(engine: Stepper, interval: int, compression: str | None) -> int:
    return SnapshotStore.bytes_needed(
        _n_stored(engine.nt, interval),
        engine.snapshot_shape_for(compression),
        engine.dtype,
        compression,
    )


def replay_segment(engine: ReversibleStepper) -> int:
    """Return the steps per CPML replay segment of boundary saving.

    Segments of S steps keep nt / S saved CPML states and one buffer of S
    steps of outer-cell W and ring state; S = sqrt(nt * state / step) makes
    their sum least.
    """
    nt = engine.nt
    step = _replay_step_bytes(engine)
    s = round(math.sqrt(nt * engine.outer_state_bytes / max(step, 1)))
    return max(1, min(nt, s))


def _replay_step_bytes(engine: ReversibleStepper) -> int:
    """Bytes one replayed step keeps: the outer cells' W and the ring's state."""
    cells = math.prod(engine.outer_shape) + math.prod(engine.ring_shape)
    return cells * engine.dtype.itemsize


def boundary_bytes(engine: ReversibleStepper) -> int:
    """Return the bytes of the band's state of every step, the CPML states and one replay buffer."""
    nt, seg = engine.nt, replay_segment(engine)
    band = SnapshotStore.bytes_needed(nt, engine.band_shape, engine.dtype, None)
    replay = seg * _replay_step_bytes(engine)
    return band + -(-nt // seg) * engine.outer_state_bytes + replay


def _chunk_bounds(nt: int, chunks: int) -> list[int]:
    n = max(1, min(chunks, nt))
    return [round(i * nt / n) for i in range(n + 1)]


def chunk_count(engine: Stepper, requested: int, interval: int) -> int:
    """Chunks chunked checkpointing uses: ``requested``, or fewer when fewer need less memory.

    c chunks keep c states and one chunk's snapshots (about n_stored / c);
    their sum is least at c = sqrt(n_stored * snapshot / state), and more
    chunks only add states (the replay costs one forward pass whatever c).
    """
    snap = SnapshotStore.bytes_needed(1, engine.snapshot_shape, engine.dtype, None)
    best = math.sqrt(_n_stored(engine.nt, interval) * snap / max(engine.state_bytes, 1))
    return max(1, min(requested, math.ceil(best), engine.nt))


def ckpt_bytes(engine: Stepper, n: int, mode: str, interval: int) -> int:
    """Checkpoint states plus the replay snapshots they need (``n`` chunks or slots)."""
    nt = engine.nt
    snap = SnapshotStore.bytes_needed(1, engine.snapshot_shape, engine.dtype, None)
    if mode == "chunk":
        b = _chunk_bounds(nt, chunk_count(engine, n, interval))
        longest = max(b[i + 1] - b[i] for i in range(len(b) - 1))
        return (len(b) - 1) * engine.state_bytes + (_n_stored(longest, interval) + 1) * snap
    return min(n, nt + 1) * engine.state_bytes + snap


def peak_bytes(engine: Stepper, strategy: str, *, interval: int = 1,
               compression: str | None = None, storage: str = "device",
               checkpoints: int = 0) -> int:  # fmt: skip
    """Estimated peak bytes of a forward + adjoint run with one strategy."""
    base = engine.working_bytes(gradient=strategy != "forward")
    if strategy == "forward":
        return base
    if strategy == "none":
        return base - engine.model_gradient_bytes
    if strategy == "full":
        nbytes = full_bytes(engine, interval, compression)
        if storage != "disk" and compression is None:
            return base + nbytes
        # Staged through a scratch chunk plus copies in flight (measured: 2.3-2.8
        # chunks for disk; with bf16, converted by sweep._C without temporaries,
        # 1.4 in memory and 1.2 on disk).  A disk slower than the kernels can
        # hold up to _DISK_QUEUE_BYTES more in the writer's queue; that is not
        # counted.
        shape = engine.snapshot_shape_for(compression)
        step = SnapshotStore.bytes_needed(1, shape, engine.dtype, None)
        full = SnapshotStore.bytes_needed(_n_stored(engine.nt, interval), shape, engine.dtype, None)
        chunk = _scratch_bytes(full, step)
        factor = 3.0 if not compression else 1.2 if storage == "disk" else 1.45
        extra = int(factor * chunk)
        return base + extra + (0 if storage == "disk" else nbytes)
    if strategy == "boundary":
        # The reconstruction in the adjoint state and the replay's state.
        replay_state = engine.live_state_bytes
        return base + boundary_bytes(engine) + engine.reconstruction_bytes + replay_state
    live = engine.live_state_bytes
    mode = "chunk" if strategy == "ckpt-chunk" else "recursive"
    return base + ckpt_bytes(engine, checkpoints, mode, interval) + live


def estimate(engine: Stepper, s: MemorySettings) -> dict[str, int]:
    """Bytes of storage per strategy (without the common working set).

    ``"boundary"`` only for a reversible stepper.
    """
    k = s.interval
    out = {
        "full": full_bytes(engine, k, None),
        "full_bf16": full_bytes(engine, k, "bf16"),
    }
    if engine.reversible:
        out["boundary"] = boundary_bytes(engine)
    out["ckpt_chunk"] = ckpt_bytes(engine, CKPT_DEFAULT_CHUNKS, "chunk", k)
    if s.memory is not None and s.memory.ckpt is not None:
        ck = s.memory.ckpt
        n = ck.chunks if ck.mode == "chunk" else ck.count
        out[f"ckpt_{ck.mode}"] = ckpt_bytes(engine, n, ck.mode, k)
    return out


def plan_peak(engine: Stepper, p: MemoryPlan) -> int:
    """Estimated peak bytes of a forward + adjoint run under plan ``p``."""
    return peak_bytes(
        engine,
        p.strategy,
        interval=p.interval,
        compression=p.compression,
        storage=p.storage or "device",
        checkpoints=p.checkpoints,
    )


# -- planning ------------------------------------------------------------------------
def _full_mode(engine: Stepper, s: MemorySettings, nbytes: int) -> tuple[str, str]:
    device, host = default_limits(engine.xp, s)
    if engine.xp is np:
        if nbytes <= host:
            return "device", f"{nbytes} B of snapshots fit the host budget of {host} B"
        return "disk", f"{nbytes} B of snapshots exceed the host budget of {host} B"
    if nbytes <= device:
        return "device", f"{nbytes} B of snapshots fit the device budget of {device} B"
    if nbytes <= host:
        return "cpu", f"{nbytes} B exceed the device budget {device} B but fit the host's {host} B"
    return "disk", f"{nbytes} B exceed the device ({device} B) and host ({host} B) budgets"


def plan(engine: Stepper, s: MemorySettings) -> MemoryPlan:
    """Choose what the forward pass keeps for the adjoint pass."""
    mem = s.memory
    estimates = estimate(engine, s)
    if s.storage_mode == "none":
        return MemoryPlan("none", reason="storage_mode='none': no model gradient")
    strategy = None if mem is None else mem.strategy
    if (
        mem is None
        and s.storage_mode == "auto"
        and s.storage_compression is None
        and s.interval == 1
    ):
        strategy = "auto"
    if strategy == "boundary":
        if not engine.reversible:
            raise boundary_refused(engine.name)
        b = mem.boundary
        storage = {"gpu": "device", "cpu": "cpu", "disk": "disk"}[b.storage]
        return MemoryPlan(
            "boundary",
            storage=storage,
            transfer_interval=b.transfer_interval,
            storage_bytes=estimates["boundary"],
            reason="MemoryOptions(strategy='boundary')",
            estimates=estimates,
        )
    if strategy == "ckpt":
        ck = mem.ckpt
        n = chunk_count(engine, ck.chunks, s.interval) if ck.mode == "chunk" else ck.count
        return MemoryPlan(
            f"ckpt-{ck.mode}",
            storage="device",
            interval=s.interval,
            checkpoints=n,
            storage_bytes=ckpt_bytes(engine, n, ck.mode, s.interval),
            reason=f"MemoryOptions(strategy='ckpt', mode={ck.mode!r})",
            estimates=estimates,
        )
    if strategy == "auto":
        return _auto(engine, s, estimates)
    nbytes = full_bytes(engine, s.interval, s.storage_compression)
    if s.storage_mode == "auto":
        mode, why = _full_mode(engine, s, nbytes)
    else:
        mode, why = s.storage_mode, f"storage_mode={s.storage_mode!r}"
    return MemoryPlan(
        "full",
        storage=mode,
        compression=s.storage_compression,
        interval=s.interval,
        storage_bytes=nbytes,
        reason=why,
        estimates=estimates,
    )


def _auto(engine: Stepper, s: MemorySettings, estimates: dict[str, int]) -> MemoryPlan:
    """Pick the fastest strategy that fits the byte budgets.

    In order: full storage in memory, boundary saving (reversible steppers),
    full storage in host memory (CuPy arrays), binomial checkpointing, full
    storage on disk.
    """
    device, host = default_limits(engine.xp, s)
    full, bnd = estimates["full"], estimates.get("boundary")
    where = "host" if engine.xp is np else "device"
    if full <= device:
        why = f"full storage ({full} B) fits the {where} budget of {device} B"
        return MemoryPlan("full", "device", storage_bytes=full, estimates=estimates, reason=why)
    if bnd is not None and bnd <= device:
        why = f"full storage ({full} B) exceeds {device} B; boundary saving ({bnd} B) fits"
        return MemoryPlan("boundary", "device", storage_bytes=bnd, estimates=estimates, reason=why)
    if engine.xp is not np and full <= host:
        why = f"full storage ({full} B) exceeds the device budget but fits the host's {host} B"
        return MemoryPlan("full", "cpu", storage_bytes=full, estimates=estimates, reason=why)
    count = min(engine.nt + 1, device // max(engine.state_bytes, 1) - 2)
    if count >= 2:
        nbytes = ckpt_bytes(engine, count, "recursive", 1)
        stored = f"full storage ({full} B) exceeds"
        if bnd is not None:
            stored = f"full storage ({full} B) and boundary saving ({bnd} B) exceed"
        why = f"{stored} {device} B; {count} checkpoints fit"
        return MemoryPlan(
            "ckpt-recursive",
            "device",
            checkpoints=count,
            storage_bytes=nbytes,
            estimates=estimates,
            reason=why,
        )
    why = f"no strategy fits {device} B of memory; snapshots go to disk"
    return MemoryPlan("full", "disk", storage_bytes=full, estimates=estimates, reason=why)


@dataclass
class MemoryEstimate:
    """Bytes a gradient run would use, per strategy, without running it.

    Attributes
    ----------
    plan : MemoryPlan
        What the call would do with its memory keywords.
    peak : int
        Estimated peak bytes (forward + adjoint) under ``plan``.
    forward_peak : int
        Estimated peak bytes of a forward-only call.
    strategies : dict
        Estimated peak bytes per strategy: ``"full"``, ``"full_bf16"``,
        ``"full_disk"`` (memory only; the file holds ``storage["full"]``),
        ``"boundary"`` (equations that allow it), ``"ckpt_chunk"`` and
        ``"ckpt_recursive"`` (the binomial schedule with the requested count,
        else 20 checkpoints).
    storage : dict
        Bytes of snapshots, strips or checkpoints per strategy.
    eager : EagerMemoryEstimate or None
        The eager path's gradient (``impl="eager"``, PyTorch or JAX
        autodiff), with and without checkpointing; see
        :class:`sweep._eager_memory.EagerMemoryEstimate`.
    """

    plan: MemoryPlan
    peak: int
    forward_peak: int
    strategies: dict[str, int]
    storage: dict[str, int]
    eager: Any = None


def memory_estimate(engine: Stepper, s: MemorySettings) -> MemoryEstimate:
    """Estimate peak bytes of every strategy for one call."""
    p = plan(engine, s)
    k = s.interval
    ck = s.memory.ckpt if s.memory is not None else None
    chunks = ck.chunks if ck is not None and ck.mode == "chunk" else CKPT_DEFAULT_CHUNKS
    count = ck.count if ck is not None and ck.mode == "recursive" else 20
    strategies = {
        "full": peak_bytes(engine, "full", interval=k),
        "full_bf16": peak_bytes(engine, "full", interval=k, compression="bf16"),
        "full_disk": peak_bytes(engine, "full", interval=k, storage="disk"),
    }
    if engine.reversible:
        strategies["boundary"] = peak_bytes(engine, "boundary")
    strategies["ckpt_chunk"] = peak_bytes(engine, "ckpt-chunk", interval=k, checkpoints=chunks)
    strategies["ckpt_recursive"] = peak_bytes(
        engine, "ckpt-recursive", interval=k, checkpoints=count
    )
    storage = estimate(engine, s)
    storage["ckpt_recursive"] = ckpt_bytes(engine, count, "recursive", k)
    storage["ckpt_chunk"] = ckpt_bytes(engine, chunks, "chunk", k)
    return MemoryEstimate(
        plan=p,
        peak=plan_peak(engine, p),
        forward_peak=peak_bytes(engine, "forward"),
        strategies=strategies,
        storage=storage,
    )


# -- running ---------------------------------------------------------------------------
@dataclass
class Tape:
    """What the adjoint pass needs from the forward pass."""

    plan: MemoryPlan
    coeffs: Any
    amp: Any
    final: ForwardState
    stores: list[SnapshotStore] = field(default_factory=list)
    states: list[Any] = field(default_factory=list)  # checkpoints
    actions: list[tuple] = field(default_factory=list)
    record_buf: Any = None

    def close(self, abort: bool = False) -> None:
        """Release stored data (files included) now; ``abort``: drop queued writes."""
        for st in self.stores:
            st.close(abort=abort)
        self.stores = []
        self.states = []


# Cell updates per compiled call: Python sees Ctrl-C (and runs callbacks) only
# between calls, so a call must stay short, but each call costs ~1 ms besides
# its steps (Python, waking the threads, refilling caches).  The 2D forward
# runs ~3e9 cell updates per second on 2 cores and a boundary-saving adjoint
# step ~3 forward steps, so this is 0.03-0.1 s of work (0.3 s on a machine
# loaded 3x).  Case B (2D 300 x 1000, 4 shots, nt 2000, boundary saving),
# same-process A/B on warm calls: 3.26-3.72 s with 30e6 (121 calls a pass),
# 3.06-3.26 s with 120e6.  At least _CALL_MIN_STEPS steps, so that temporal
# blocking (8 steps per sweep) still applies.
_CALL_CELLS = 120_000_000
_CALL_MIN_STEPS = 16


def call_steps(engine: Stepper, align: int = 1) -> int:
    """Most steps one compiled call runs (a multiple of ``align``)."""
    steps = max(_CALL_MIN_STEPS, _CALL_CELLS // max(engine.step_cells, 1))
    return max(align, steps // align * align)


def _progress_chunks(nt: int, progress: bool, max_steps: int | None = None) -> list[int]:
    """Chunk boundaries between progress updates, at most ``max_steps`` apart.

    In debug mode also every ``debug_check_every`` steps: the stepper checks
    the wavefields for NaN/Inf after each chunk.
    """
    n = min(nt, 100) if progress else 1
    if max_steps:
        n = max(n, -(-nt // max_steps))
    bounds = [round(i * nt / n) for i in range(n + 1)]
    if _debug.enabled():
        bounds = sorted(set(bounds) | set(range(0, nt, config.get("debug_check_every"))))
    return bounds


def _scratch_bytes(total: int, step_bytes: int) -> int:
    """Bytes of the staging chunk of a store of ``total`` (uncompressed) bytes.

    At most _SCRATCH_BYTES, and at most an eighth of the store (but one step):
    a scratch chunk as large as a small store made bf16 storage cost more
    than float32.
    """
    return min(_SCRATCH_BYTES, max(step_bytes, total // 8))


def _io_chunks(
    nt: int, step_bytes: int, progress: bool, align: int = 1, max_steps: int | None = None
) -> list[int]:
    """Chunk boundaries for staged (scratch-buffer) storage: bounded scratch size."""
    scratch = _scratch_bytes(-(-nt // align) * step_bytes, step_bytes)
    steps = max(align, (scratch // max(step_bytes, 1)) // align * align)
    if max_steps:
        steps = min(steps, max_steps)
    bounds = sorted(set(range(0, nt, steps)) | set(_progress_chunks(nt, progress)) | {nt})
    return bounds


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(enabled: bool, total: int, desc: str) -> Any:
    """Return a tqdm bar, or a do-nothing stand-in when ``enabled`` is false."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="step")


@dataclass
class _Fwd:
    """What a strategy's forward driver works with."""

    engine: Stepper
    coeffs: Any
    amp: Any
    state: ForwardState
    receivers: Any
    tape: Tape
    bar: Any
    progress: bool

    def parts(self) -> tuple:
        return (self.engine, self.coeffs, self.amp, self.state, self.receivers, self.tape,
                self.bar, self.progress)  # fmt: skip


@dataclass
class _Bwd:
    """What a strategy's adjoint driver works with."""

    engine: Stepper
    tape: Tape
    adj: AdjointState
    grad_rec: Any
    bar: Any
    progress: bool

    def parts(self) -> tuple:
        return self.engine, self.tape, self.adj, self.grad_rec, self.bar, self.progress


def forward(
    engine: Stepper,
    coeffs: Any,
    amp: Any,
    plan_: MemoryPlan | None,
    progress: bool,
    initial: Any = None,
) -> tuple[Any, ForwardState, Tape | None]:
    """Run the forward pass; keep what ``plan_`` says for the adjoint pass.

    ``coeffs`` and ``amp`` are the model and the source amplitudes in the
    stepper's layout (see :mod:`sweep._stepper`); ``initial(state)``, when
    given, fills the state of step 0 (a restart).  Returns the receiver
    traces, the final state and the tape (None without ``plan_``).
    """
    if plan_ is not None:  # cached scratch arrays only under full storage (_hostmem.keep_scratch)
        _hostmem.keep_scratch(plan_.strategy == "full")
    receivers = engine.new_receivers()
    state = engine.new_state()
    if initial is not None:
        initial(state)
    bar = progress_bar(progress, engine.nt, "sweep forward")
    tape = None if plan_ is None else Tape(plan_, coeffs, amp, state)
    run = _Fwd(engine, coeffs, amp, state, receivers, tape, bar, progress)
    try:
        _DRIVERS["none" if plan_ is None else plan_.strategy][0](run)
    except BaseException:
        if tape is not None:
            tape.close(abort=True)
        raise
    finally:
        bar.close()
    if plan_ is not None:
        log.debug("sweep memory plan: %s", plan_)
    return receivers, state, tape


def backward(
    engine: Stepper,
    tape: Tape,
    grad_rec: Any,
    *,
    model: bool,
    source: bool,
    progress: bool,
) -> tuple[Any, Any]:
    """Run the adjoint pass.

    Returns the model gradient (:meth:`~sweep._stepper.Stepper.finish_gradient`;
    for the acoustic stepper with respect to the padded ``v^2 dt^2``, summed
    over shots) and the gradient with respect to the source amplitudes, each
    None when not requested.
    """
    plan_ = tape.plan
    if _debug.enabled():
        _debug.check_residual(grad_rec)
    model = model and plan_.strategy != "none"
    adj = engine.new_adjoint(model=model, source=source)
    bar = progress_bar(progress, engine.nt, "sweep adjoint")
    brun = _Bwd(engine, tape, adj, grad_rec, bar, progress)
    try:
        _DRIVERS[plan_.strategy if model else "none"][1](brun)
    except BaseException:
        # An interrupted adjoint pass (Ctrl-C, an error) leaves a tape that
        # cannot be replayed: free it and remove its files now.
        tape.close(abort=True)
        raise
    finally:
        bar.close()
    grad_model = None
    if model:
        grad_model = engine.finish_gradient(adj, tape.coeffs)
        if plan_.interval > 1:
            # Every k-th step stands for k steps.
            for part in grad_model if isinstance(grad_model, tuple) else (grad_model,):
                part *= plan_.interval
    grad_src = engine.source_gradient(adj) if source else None
    return grad_model, grad_src


class _Window:
    """Slots of a store as an array the kernels can use.

    A view into the store when it allows one (uncompressed, in memory on the
    compute device); otherwise one reusable scratch buffer, filled from the
    store for reading and handed back with ``put`` after writing.
    """

    def __init__(self, engine: Stepper, store: SnapshotStore) -> None:
        self.engine, self.store, self.scratch = engine, store, None

    def _scratch(self, n: int) -> Any:
        if self.scratch is None or self.scratch.shape[0] < n:
            self.scratch = self.engine.zeros(max(n, 1), *self.store.item_shape)
        return self.scratch[:n]

    def for_writing(self, s0: int, n: int) -> Any:
        buf = self.store.direct(s0, n)
        return self._scratch(n) if buf is None else buf

    def for_reading(self, s0: int, n: int) -> Any:
        buf = self.store.direct(s0, n)
        return self.store.get(s0, n, out=self._scratch(n)) if buf is None else buf


def _store_bounds(
    engine: Stepper, store: SnapshotStore, progress: bool, align: int = 1
) -> list[int]:
    """Chunk boundaries: progress chunks for in-place stores, bounded ones when staged."""
    nt, max_steps = engine.nt, call_steps(engine, align)
    if store.direct(0, 0) is not None:
        return _progress_chunks(nt, progress, max_steps)
    step_bytes = math.prod(store.item_shape) * store.dtype.itemsize
    return _io_chunks(nt, step_bytes, progress, align=align, max_steps=max_steps)


# no storage (forward only, or no model gradient) --------------------------------------
def _forward_plain(run: _Fwd) -> None:
    engine, coeffs, amp, state, receivers, _, bar, progress = run.parts()
    for t0, t1 in pairwise(_progress_chunks(engine.nt, progress, call_steps(engine))):
        engine.forward_steps(state, coeffs, amp, t0, t1 - t0, receivers=receivers)
        bar.update(t1 - t0)


def _backward_plain(run: _Bwd) -> None:
    engine, tape, adj, grad_rec, bar, progress = run.parts()
    chunks = pairwise(_progress_chunks(engine.nt, progress, call_steps(engine)))
    for t0, t1 in reversed(list(chunks)):
        engine.adjoint_steps(adj, tape.coeffs, tape.amp, grad_rec, t1, t1 - t0)
        bar.update(t1 - t0)


# full storage -------------------------------------------------------------------------
def _forward_full(run: _Fwd) -> None:
    engine, coeffs, amp, state, receivers, tape, bar, progress = run.parts()
    plan_ = tape.plan
    k = plan_.interval
    store = SnapshotStore(
        _n_stored(engine.nt, k),
        engine.snapshot_shape_for(plan_.compression),
        engine.dtype,
        mode=plan_.storage,
        compression=plan_.compression,
        xp=engine.xp,
    )
    tape.stores.append(store)
    window = _Window(engine, store)
    bounds = _store_bounds(engine, store, progress, align=k)
    for t0, t1 in pairwise(bounds):
        s0, s1 = _n_stored(t0, k), _n_stored(t1, k)
        buf = window.for_writing(s0, s1 - s0)
        engine.forward_steps(
            state, coeffs, amp, t0, t1 - t0, receivers=receivers, store=buf, store_every=k
        )
        store.put(s0, buf)
        bar.update(t1 - t0)
    tape.actions = list(pairwise(bounds))


def _backward_full(run: _Bwd) -> None:
    engine, tape, adj, grad_rec, bar, _ = run.parts()
    k = tape.plan.interval
    store = tape.stores[0]
    window = _Window(engine, store)
    chunks = list(reversed(tape.actions))
    for i, (t0, t1) in enumerate(chunks):
        s0, s1 = _n_stored(t0, k), _n_stored(t1, k)
        buf = window.for_reading(s0, s1 - s0)
        if i + 1 < len(chunks):  # the next chunk's I/O overlaps this chunk's compute
            p0, p1 = (_n_stored(t, k) for t in chunks[i + 1])
            store.prefetch(p0, p1 - p0)
        engine.adjoint_steps(
            adj, tape.coeffs, tape.amp, grad_rec, t1, t1 - t0, store=buf, store_every=k
        )
        bar.update(t1 - t0)


# boundary saving ----------------------------------------------------------------------
def _forward_boundary(run: _Fwd) -> None:
    engine, coeffs, amp, state, receivers, tape, bar, progress = run.parts()
    nt, plan_ = engine.nt, tape.plan  # plan() chose boundary saving: a ReversibleStepper
    bu = SnapshotStore(nt, engine.band_shape, engine.dtype, mode=plan_.storage, xp=engine.xp)
    tape.stores.append(bu)
    window = _Window(engine, bu)
    seg = replay_segment(engine)
    bounds = _store_bounds(engine, bu, progress, align=max(1, plan_.transfer_interval))
    # Segments start the replays; callback steps must end calls (sweep._callbacks).
    bounds = sorted(set(bounds) | set(range(0, nt, seg)) | _callbacks.chunk_bounds(engine, nt))
    starts = _replay_starts(engine, state.outer_parts(), -(-nt // seg))
    for t0, t1 in pairwise(bounds):
        if t0 % seg == 0:  # the outer state a replay of this segment starts from
            parts = state.outer_parts()
            if starts is None:
                tape.states.append([x.copy() for x in parts])
            else:
                kept = starts[t0 // seg]
                for dst, src in zip(kept, parts, strict=True):
                    dst[...] = src
                tape.states.append(kept)
        n = t1 - t0
        u = window.for_writing(t0, n)
        engine.forward_steps(state, coeffs, amp, t0, n, receivers=receivers, band_u=u)
        bu.put(t0, u)
        bar.update(n)
    tape.actions = list(pairwise(bounds))


def _replay_starts(engine: Stepper, parts: list[Any], n: int) -> list[list[Any]] | None:
    """Room for ``n`` copies of ``parts`` (the states CPML replays start from), or None.

    One host array (:func:`sweep._hostmem.empty`, cached between calls) holds
    them all: copied one by one, the ~100 MB of case B (2D 300 x 1000, 4
    shots, nt 2000) came from the allocator and were faulted in afresh, page by
    page, every call.  None (copy each) off the host or for mixed dtypes.
    """
    if engine.xp is not np or not parts or any(x.dtype != parts[0].dtype for x in parts):
        return None
    size = sum(x.size for x in parts)
    buf = _hostmem.empty((n, size), parts[0].dtype)
    out = []
    for row in buf:
        views, k = [], 0
        for x in parts:
            views.append(row[k : k + x.size].reshape(x.shape))
            k += x.size
        out.append(views)
    return out


def _backward_boundary(run: _Bwd) -> None:
    engine, tape, adj, grad_rec, bar, _ = run.parts()
    nt = engine.nt
    (bu,) = tape.stores
    win_u = _Window(engine, bu)
    win_replay = _Window(engine, bu)  # the band's u for the replay, read apart
    engine.start_reconstruction(adj, tape.final)
    slot_bytes = math.prod(engine.band_shape) * engine.dtype.itemsize
    # backward() runs this driver only when the model gradient is wanted.
    seg = replay_segment(engine)
    replay_state = engine.new_state()
    replay_w = engine.zeros(min(seg, nt), *engine.outer_shape)
    replay_u = engine.zeros(min(seg, nt), *engine.ring_shape)
    replayed = -1
    for t0, t1 in reversed(tape.actions):
        n = t1 - t0
        s0 = t0 // seg * seg
        if s0 != replayed:
            # The outer cells' snapshots of this segment: replay it from its saved state.
            s1 = min(s0 + seg, nt)
            for dst, src in zip(replay_state.outer_parts(), tape.states[s0 // seg], strict=True):
                dst[...] = src
            tape.states[s0 // seg] = None
            band_u = win_replay.for_reading(s0, s1 - s0)
            engine.replay_steps(replay_state, tape.coeffs, s0, s1 - s0, band_u=band_u,
                                replay_w=replay_w[: s1 - s0],
                                replay_u=replay_u[: s1 - s0], amp=tape.amp)  # fmt: skip
            replayed = s0
        # band_u slot 0 must be step t0 - 1; for t0 == 0 that step is never read,
        # so the pointer may sit one slot before the array (and a one-step call
        # from 0 reads none of it, but the kernels still check its layout).
        u0 = max(t0 - 1, 0)
        u = win_u.for_reading(u0, max(t1 - 1 - u0, 1))
        offset = -slot_bytes if t0 == 0 else 0
        engine.adjoint_steps(
            adj,
            tape.coeffs,
            tape.amp,
            grad_rec,
            t1,
            n,
            band_u_offset=(u, offset),
            replay_w=replay_w[t0 - s0 : t1 - s0],
            replay_u=replay_u[t0 - s0 : t1 - s0],
        )
        bar.update(n)


# checkpointing -----------------------------------------------------------------------
def _forward_chunks(run: _Fwd) -> None:
    engine, coeffs, amp, state, receivers, tape, bar, _ = run.parts()
    chunks = chunk_count(engine, tape.plan.checkpoints, tape.plan.interval)
    bounds = _chunk_bounds(engine.nt, chunks)
    for t0, t1 in pairwise(bounds):
        tape.states.append(state.save())
        for a, b in _pieces(engine, t0, t1):
            engine.forward_steps(state, coeffs, amp, a, b - a, receivers=receivers)
            bar.update(b - a)
    tape.actions = list(pairwise(bounds))


def _backward_chunks(run: _Bwd) -> None:
    engine, tape, adj, grad_rec, bar, _ = run.parts()
    k = tape.plan.interval
    longest = max(t1 - t0 for t0, t1 in tape.actions)
    store = engine.zeros(_n_stored(longest, k) + 1, *engine.snapshot_shape)
    live = engine.new_state()
    for i in reversed(range(len(tape.actions))):
        t0, t1 = tape.actions[i]
        live.load(tape.states[i])
        tape.states[i] = None  # free the checkpoint once replayed
        pieces = _pieces(engine, t0, t1, align=k)
        base = _n_stored(t0, k)
        for a, b in pieces:
            buf = store[_n_stored(a, k) - base : _n_stored(b, k) - base]
            engine.forward_steps(live, tape.coeffs, tape.amp, a, b - a, store=buf, store_every=k)
        for a, b in reversed(pieces):
            buf = store[_n_stored(a, k) - base : _n_stored(b, k) - base]
            engine.adjoint_steps(adj, tape.coeffs, tape.amp, grad_rec, b, b - a, store=buf,
                                 store_every=k)  # fmt: skip
            bar.update(b - a)


def _pieces(engine: Stepper, t0: int, t1: int, align: int = 1) -> list[tuple[int, int]]:
    """[t0, t1) in compiled calls of at most :func:`call_steps` steps.

    Inner bounds are multiples of ``align`` (the sampling interval), so every
    piece's snapshots start at its own first slot.
    """
    steps = call_steps(engine, align)
    inner = range(-(-(t0 + 1) // steps) * steps, t1, steps)
    return list(pairwise([t0, *inner, t1]))


def _save(slots: list, i: int, state: ForwardState) -> None:
    if slots[i] is None:
        slots[i] = state.save()
    else:
        state.save_into(slots[i])


def _forward_recursive(run: _Fwd) -> None:
    """Run the schedule's opening actions as the forward pass.

    They advance from step 0 to the recording of the last step, which also
    produces the final state.
    """
    engine, coeffs, amp, state, receivers, tape, bar, _ = run.parts()
    count = min(tape.plan.checkpoints, engine.nt + 1)
    actions = _revolve.schedule(engine.nt, count)
    slots: list[list[Any] | None] = [None] * count
    snap = engine.zeros(1, *engine.snapshot_shape)
    i = 0
    k = tape.plan.interval
    while True:
        act = actions[i]
        i += 1
        if act[0] == "save":
            _save(slots, act[1], state)
        elif act[0] == "restore":
            state.load(slots[act[1]])
        elif act[0] == "advance":
            for t0, t1 in _pieces(engine, act[1], act[2]):
                engine.forward_steps(state, coeffs, amp, t0, t1 - t0, receivers=receivers)
                bar.update(t1 - t0)
        elif act[0] == "record":
            # The last step: its snapshot is the first the adjoint needs.
            engine.forward_steps(
                state, coeffs, amp, act[1], 1, receivers=receivers, store=snap, store_every=k
            )
            bar.update(1)
            break
    tape.states = slots
    tape.actions = actions[i:]
    tape.record_buf = snap


def _backward_recursive(run: _Bwd) -> None:
    engine, tape, adj, grad_rec, bar, _ = run.parts()
    k = tape.plan.interval
    live = engine.new_state()
    slots = tape.states
    snap = tape.record_buf
    for act in tape.actions:
        kind = act[0]
        if kind == "adjoint":
            t = act[1]
            engine.adjoint_steps(
                adj, tape.coeffs, tape.amp, grad_rec, t + 1, 1, store=snap, store_every=k
            )
            bar.update(1)
        elif kind == "record":
            engine.forward_steps(live, tape.coeffs, tape.amp, act[1], 1, store=snap, store_every=k)
        elif kind == "advance":
            for t0, t1 in _pieces(engine, act[1], act[2]):
                engine.forward_steps(live, tape.coeffs, tape.amp, t0, t1 - t0)
        elif kind == "save":
            _save(slots, act[1], live)
        elif kind == "restore":
            live.load(slots[act[1]])


# (forward driver, adjoint driver) per MemoryPlan.strategy.
_DRIVERS = {
    "none": (_forward_plain, _backward_plain),
    "full": (_forward_full, _backward_full),
    "boundary": (_forward_boundary, _backward_boundary),
    "ckpt-chunk": (_forward_chunks, _backward_chunks),
    "ckpt-recursive": (_forward_recursive, _backward_recursive),
}

__all__ = [
    "MemoryEstimate",
    "MemoryPlan",
    "MemorySettings",
    "Tape",
    "backward",
    "check_settings",
    "forward",
    "plan",
]
