"""CUDA-graph replay of forward chunks (``experimental_cuda_graph=True``).

A forward chunk of a staggered system (Maxwell, elastic) is a fixed sequence
of kernel launches: the kernels update their fields in place, so no launch
depends on a host-side swap, and every argument is the call's parameter
record, its pointer record or a step number.  Captured once as a CUDA graph,
the chunk replays with one launch instead of several per step.

A graph bakes in every pointer it was captured with, so the arrays it reads
and writes belong to a cache entry, not to one call: each replay first copies
every array of the call's pointer record (:class:`sweep._compiled._Fields`)
into the entry's buffer of that name and shape, and afterwards copies back
the arrays the kernels write (the fields, memory variables and receivers).
Callbacks therefore run between replays on the caller's arrays, with their
usual semantics, and in-place edits of a wavefield reach the next replay.

Entries are keyed by what fixes the launch sequence apart from the step
range: the equation, its specialisation (ndim, order, dtype), the device,
the kernel settings and the parameter record (shapes, shots, point terms,
CPML widths, free faces).  In an entry a graph is keyed by the chunk's first
step, its length and the pointer record over the entry's buffers, so a run
split at callbacks captures one graph per chunk and a later compatible call
replays them.  The cache holds :data:`MAX_ENTRIES` entries (least recently
used dropped first); :func:`release` empties it (``sweep.release_cached_memory``).
Each entry holds one copy of every array of a call, on the device.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

MAX_ENTRIES = 2

_lock = threading.Lock()
_entries: collections.OrderedDict[Hashable, _Entry] = collections.OrderedDict()
_counts = {"captures": 0, "replays": 0}


class _Entry:
    """The buffers of one launch configuration and the graphs captured over them."""

    def __init__(self) -> None:
        self.buffers: dict[tuple[Any, ...], Any] = {}
        self.graphs: dict[tuple[Any, ...], Any] = {}

    def nbytes(self) -> int:
        return sum(int(b.nbytes) for b in self.buffers.values())

    def bind(self, fields: Any) -> tuple[np.ndarray, list[tuple[Any, Any]]]:
        """Copy the call's arrays into this entry's buffers.

        Returns the pointer record over the buffers and the (call's array,
        buffer) pairs to copy back after a replay (what the kernels write).
        """
        rec = np.zeros((), dtype=fields.rec.dtype)
        back = []
        for name, axis, value, offset in fields.entries:
            address = 0
            if value is not None:
                key = (name, axis, tuple(value.shape), tuple(value.strides), value.dtype.str)
                src = _span(value)
                flat = self.buffers.get(key)
                if flat is None:
                    flat = self.buffers[key] = src.copy()
                else:
                    flat[...] = src
                buf = _with_layout(flat, value)
                address = fields.address(name, buf, axis) + offset
                if name in fields.written:
                    back.append((src, flat))
            if axis is None:
                rec[name] = address
            else:
                rec[name][axis] = address
        return rec, back


def _as_strided(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return np.lib.stride_tricks.as_strided
    import cupy

    return cupy.lib.stride_tricks.as_strided


def _span(value: Any) -> Any:
    """Return the memory of ``value`` from its first to its last element, as one array.

    Kernel buffers have padded rows (``_Fields`` checks the layout); the
    padding is copied too, so a buffer holds exactly what the call's does.
    """
    if value.size == 0:
        return value.reshape(-1)
    if any(s < 0 for s in value.strides):
        raise ValueError("kernel buffers have non-negative strides")
    last = sum((n - 1) * s for n, s in zip(value.shape, value.strides, strict=True))
    return _as_strided(value)(value, shape=(last // value.itemsize + 1,), strides=(value.itemsize,))


def _with_layout(flat: Any, like: Any) -> Any:
    """``flat`` (a :func:`_span` copy) seen with the shape and strides of ``like``."""
    return _as_strided(flat)(flat, shape=like.shape, strides=like.strides)


def replay(
    key: Hashable,
    fields: Any,
    t: int,
    n_steps: int,
    capture: Callable[[np.ndarray], Any],
) -> None:
    """Run forward steps ``t .. t + n_steps - 1`` as a graph replay.

    ``key``: the launch configuration (see the module docstring); ``fields``:
    the call's :class:`sweep._compiled._Fields`; ``capture(record)`` records
    the chunk's launches over ``record`` without running them and returns a
    graph (an object with ``launch()``), called once per chunk and entry.
    """
    with _lock:
        entry = _entries.pop(key, None) or _Entry()
        _entries[key] = entry  # most recently used last
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
    rec, back = entry.bind(fields)
    chunk = (t, n_steps, rec.tobytes())
    graph = entry.graphs.get(chunk)
    if graph is None:
        graph = entry.graphs[chunk] = capture(rec)
        _counts["captures"] += 1
    graph.launch()
    _counts["replays"] += 1
    for value, buf in back:
        value[...] = buf


def counts() -> dict[str, int]:
    """Graphs captured and replayed in this process (for tests and benchmarks)."""
    return dict(_counts)


def release() -> int:
    """Drop every cached graph and buffer; return the device bytes released."""
    with _lock:
        entries = list(_entries.values())
        _entries.clear()
    return sum(e.nbytes() for e in entries)
