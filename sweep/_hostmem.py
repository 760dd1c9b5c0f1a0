"""Large host arrays, on transparent huge pages where those fault in faster.

A wavefield store of several GB is written once, page by page, by the
kernels.  With 4 KiB pages each first touch is a page fault; on virtual
machines a fault costs microseconds, so touching 2 GiB took 7.6 s on one
machine, against 0.28 s when the same memory is an anonymous mapping advised
to use 2 MiB huge pages (``MADV_HUGEPAGE``; Linux, when transparent huge pages
are set to ``madvise`` or ``always``).  On another VM it is the other way
round: first touch of 1 GiB cost 0.36-0.46 s on 4 KiB pages and 0.48-2.3 s on
huge pages in a fresh process (the host backs a huge page's guest memory
4 KiB at a time; no compaction stalls), 0.05 s only once the process had
freed huge pages of its own.  So the first large mapping of a process times
both (:func:`_huge_pages_pay`: a few huge pages against as much memory in
4 KiB pages, a few ms) and huge pages are asked for only when 4 KiB pages
fault in slowly (more than ~1.5 us a page) and huge pages faster.  Timing
huge pages alone misled on the second VM: a freed huge page stays backed by
the host for about a second (then the guest hands it back), so the probe's
few pages could be backed while the hundreds after them were not.  Fresh
processes there, 330 MB first touched: 4 KiB pages 0.12-0.15 s every time,
huge pages 0.015 s within a second of another process freeing its own and
0.29-0.83 s otherwise; case B (2D 300 x 1000, 4 shots, nt 2000, boundary
saving) with huge pages forced, cold forward 1.49-1.53 s against
0.89-0.91 s on 4 KiB pages (warm 0.64-0.70 s either way).  Anonymous
mappings are zero-filled, so :func:`zeros` needs no extra pass.

NumPy's own allocations are visible to ``tracemalloc``; these are registered
in NumPy's tracemalloc domain too, so memory accounting (and
``sweep.estimate_memory``'s tests) see them.

Wavefield stores (:func:`empty`) and fields from 256 KiB on (:func:`zeros`)
are cached when released: a gradient or inversion loop asks for the same
sizes every iteration, and a cached mapping is not faulted in again, and a
store not zeroed again (2D 300 x 1000, 4 shots, 500 steps, order 4, 2
threads: 2.4 GB store, gradient best 0.520 -> 0.467 s; 3D 128^3 + CPML
forward, 12 fields of 22 MB refilled with zeros instead of mapped afresh:
6.07 -> 5.67 ms per step).  Fields below the 4 MiB of huge pages are cached
too, on 4 KiB pages: glibc returns freed blocks of that size to the kernel,
so each call faulted its fields in afresh (2D 440^2, 2 shots, 400 steps,
acoustic forward 39-41 -> 27-28 ms; benchmarks/README.md).  Fields are
registered with tracemalloc while handed out, not while cached.  The cache
holds released mappings only, gives each field slot back the mapping it had
and zeroes only the pages its last use wrote (so a field used in part, like a
C-PML memory variable, does not grow on reuse: 3D 128^3 order-8 gradient, a
process's second call faulted in ~230 MB more), and is emptied before any
mapping of another size is made, so it never raises the peak above one call's own;
:func:`release_cached` (``sweep.release_cached_memory``) frees it and
``SWEEP_STORE_CACHE=0`` turns it off.  Scratch arrays (:func:`scratch`:
results a chain rule writes whole, every call) have a pool of their own,
used only after a full-storage gradient's forward (:func:`keep_scratch`).
"""

from __future__ import annotations

import ctypes
import math
import mmap
import threading
import time
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

from ._config import config
from ._impl import compiled_function

# Below this size the ordinary allocator is as fast and wastes no huge page.
_MIN_BYTES = 4 << 20
# Fields from this size on are cached mappings (module docstring): glibc hands
# freed blocks of this size back to the kernel, so a fresh field faults in
# page by page on every call.
_FIELD_MIN_BYTES = 256 << 10
_PAGE = 4096
_PHASE_STEP = 17 * 64
_NUMPY_TRACEMALLOC_DOMAIN = 389047  # numpy/core/include/numpy/ndarraytypes.h


def _track(address: int, nbytes: int) -> None:
    try:
        ctypes.pythonapi.PyTraceMalloc_Track(
            ctypes.c_uint(_NUMPY_TRACEMALLOC_DOMAIN), ctypes.c_size_t(address),
            ctypes.c_size_t(nbytes),
        )  # fmt: skip
    except (AttributeError, OSError):
        pass


def _untrack(address: int) -> None:
    try:
        ctypes.pythonapi.PyTraceMalloc_Untrack(
            ctypes.c_uint(_NUMPY_TRACEMALLOC_DOMAIN), ctypes.c_size_t(address)
        )
    except (AttributeError, OSError):
        pass


def _huge(nbytes: int) -> bool:
    """Whether an array of ``nbytes`` gets its own mapping on huge pages."""
    return nbytes >= _MIN_BYTES and hasattr(mmap, "MADV_HUGEPAGE")


def _anonymous(nbytes: int, huge: bool) -> mmap.mmap:
    """Return a fresh zeroed anonymous mapping, advised to use huge pages if ``huge``."""
    try:
        region = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    except OSError as exc:
        raise MemoryError(f"could not map {nbytes} bytes of host memory: {exc}") from exc
    if huge:
        try:
            region.madvise(mmap.MADV_HUGEPAGE)
        except OSError:
            pass  # huge pages unavailable: still a valid (zeroed) mapping
    return region


# Huge pages timed against 4 KiB pages over this many 2 MiB pages (once per process).
_PROBE_PAGES = 4
_HUGE_PAGE = 2 << 20
# 4 KiB first touch slower than this per 2 MiB (~1.5 us a fault) makes huge
# pages worth their risk (the first VM: ~7 ms; the second: 0.6-0.9 ms).
_SLOW_SMALL_PAGES = 3e-3
_huge_verdict: list[bool] = []
_probe_lock = threading.Lock()


def _first_touch(huge: bool) -> float:
    """Seconds to fault in ``_PROBE_PAGES`` x 2 MiB of fresh memory (huge or 4 KiB pages).

    One more 2 MiB is faulted in first, untimed: a process's first huge page
    took ~5 ms where the next ones took 0.1 ms.
    """
    region = _anonymous((_PROBE_PAGES + 2) * _HUGE_PAGE, huge)
    buf = np.frombuffer(region, dtype=np.uint8)
    start = -buf.ctypes.data % _HUGE_PAGE  # whole huge pages
    step = _HUGE_PAGE if huge else _PAGE  # one write per page
    buf[start : start + _HUGE_PAGE : step] = 1
    span = buf[start + _HUGE_PAGE : start + (_PROBE_PAGES + 1) * _HUGE_PAGE]
    begin = time.perf_counter()
    span[::step] = 1
    seconds = time.perf_counter() - begin
    del span, buf
    region.close()
    return seconds


def _huge_pages_pay() -> bool:
    """Whether to ask for huge pages here (measured once per process; module docstring).

    Only where 4 KiB pages fault in slowly and huge pages faster.
    """
    with _probe_lock:
        if not _huge_verdict:
            try:
                small = _first_touch(False)
                slow = small > _SLOW_SMALL_PAGES * _PROBE_PAGES
                _huge_verdict.append(slow and _first_touch(True) < small)
            except (OSError, ValueError, BufferError):
                _huge_verdict.append(True)  # could not time it: keep the advice
        return _huge_verdict[0]


def _map(nbytes: int) -> mmap.mmap:
    """Return a fresh zeroed anonymous mapping, on huge pages where they pay (module docstring)."""
    return _anonymous(nbytes, _huge(nbytes) and _huge_pages_pay())


def _track_mapping(region: mmap.mmap, out: np.ndarray) -> None:
    """Register ``out``, the first array over a new mapping, with tracemalloc until unmapped."""
    address = out.ctypes.data
    _track(address, out.nbytes)
    weakref.finalize(region, _unmapped, address)


def _unmapped(address: int) -> None:
    """Forget the array at ``address`` once its mapping is gone (tracemalloc, claim_fresh)."""
    _untrack(address)
    _fresh.discard(address)


def _view(region: mmap.mmap, shape: tuple[int, ...], dtype: np.dtype, pad: int) -> np.ndarray:
    """Return ``shape`` x ``dtype`` at byte ``pad`` of a new mapping, tracked for tracemalloc."""
    out = np.frombuffer(region, dtype=dtype, count=math.prod(shape), offset=pad).reshape(shape)
    _track_mapping(region, out)
    _fresh.add(out.ctypes.data)
    return out


# Addresses of arrays over fresh mappings that no one has claimed (claim_fresh).
_fresh: set[int] = set()


def claim_fresh(x: np.ndarray) -> bool:
    """Whether ``x`` starts an array of :func:`zeros` over a fresh mapping (once: claimed).

    A fresh mapping's pages are not faulted in yet.  A page whose first
    access is a read maps the shared zero page, and the write after it faults
    again to copy it, which flushes the page's translation on every core the
    process runs on: an interprocessor interrupt per page, costly on a
    virtual machine (3D elastic forward, 2 threads: 11 % of a cold call's
    samples).  A caller whose kernels read before they write fills the pages
    it will use with zeros first (written, they fault once, no copy).  A
    reused mapping was filled by :func:`zeros` already: False.
    """
    address = x.ctypes.data
    if address in _fresh:
        _fresh.discard(address)
        return True
    return False


def write_fresh(
    whole: Iterable[np.ndarray], partial: Iterable[tuple[np.ndarray, Iterable[Any]]] = ()
) -> None:
    """Zero by writes the arrays of fresh mappings (:func:`claim_fresh`) before a kernel reads them.

    Each array of ``whole`` is written entirely; each ``(array, slices)`` of
    ``partial`` on its slices only (memory variables used on their slabs).
    Arrays over reused mappings are left as they are (zeroed already).
    """
    for x in whole:
        if claim_fresh(x):
            x[...] = 0
    for x, slices in partial:
        if claim_fresh(x):
            for sl in slices:
                x[sl] = 0


def zeros(
    shape: tuple[int, ...],
    dtype: Any,
    phase: int | None = None,
    *,
    fill: bool = True,
    threads: int = 1,
) -> np.ndarray:
    """Return a zero-filled host array, on huge pages when it is large.

    ``phase`` (bytes, a multiple of the item size) places the first element
    that far past a 4 KiB boundary; ``None`` leaves it where the allocator
    puts it.  See :func:`field_phase` for why the kernels' fields want it.
    Arrays from 256 KiB on reuse a released mapping of the same size when
    one is cached, like :func:`empty`: preferably the one last handed out at
    the same ``phase`` (a kernel field's slot), zeroed again here where its
    pages hold data (:func:`_zero_resident`).
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    cached = _mid_size_cached(nbytes)
    if not (cached or _huge(nbytes)):
        if phase is None:
            return np.zeros(shape, dtype=dtype)
        raw = np.zeros(nbytes + _PAGE, dtype=np.uint8)
        start = (phase - raw.ctypes.data) % _PAGE
        return raw[start : start + nbytes].view(dtype).reshape(shape)
    pad = phase % _PAGE if phase is not None else 0
    if not cached:
        return _view(_map(nbytes + pad), shape, dtype, pad)
    # Any phase fits a mapping one page longer, so every field of a shape shares one size.
    out, reused = _cached(_fields, nbytes + _PAGE, shape, dtype, pad)
    if reused and fill:
        _zero_resident(out, threads)
    return out


_libc: list[Any] = []


def _libc_calls() -> tuple[Any, Any] | None:
    """Return libc's ``mincore`` and ``madvise`` (None where they are missing)."""
    if not _libc:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            calls = (libc.mincore, libc.madvise)
            for fn in calls:
                fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
                fn.restype = ctypes.c_int
            _libc.append(calls if hasattr(mmap, "MADV_DONTNEED") else None)
        except (AttributeError, OSError):
            _libc.append(None)
    return _libc[0]


def _zero_resident(out: np.ndarray, threads: int = 1) -> None:
    """Zero ``out`` (C-contiguous, over a cached mapping), writing only pages that hold data.

    Pages that the mapping's last user never touched are not resident, and
    pages it only read map the shared zero page: writing zeros to either
    faults a page in for nothing (a page first read then written faults
    twice), and a field whose kernels use only part of it (C-PML memory
    variables away from their strips) would grow by every such page on its
    second use (3D 128^3 order-8 gradient, 4 KiB pages: tens of thousands of
    faults in a process's second call; benchmarks/README.md).  ``mincore``
    tells which pages are resident: of those, only pages with a non-zero byte
    are written; the others are dropped (``MADV_DONTNEED``: they read as
    zeros, also where they were swapped out).  The whole pages at either end
    belong to the same mapping (:func:`zeros` gives each field a page more),
    so they are zeroed whole.  Where the calls fail, all of ``out`` is filled.
    The resident pages are read and, where they hold data, written by
    ``sweep._C.zero_written_pages`` on ``threads`` OpenMP threads, each page
    while it is in the caches (NumPy, where the kernels are not built: an
    ``any`` per run of resident pages, then the writes, on one thread; 3D
    Maxwell forward, 18 fields: 8.3 -> 3.9 ms a call, benchmarks/README.md).
    """
    calls = _libc_calls()
    addr = out.ctypes.data
    base = addr - addr % _PAGE
    npages = -(-(addr + out.nbytes - base) // _PAGE)
    vec = np.zeros(npages, dtype=np.uint8)
    if calls is None or calls[0](base, npages * _PAGE, vec.ctypes.data) != 0:
        out.fill(0)
        return
    pages = np.ctypeslib.as_array((ctypes.c_uint64 * (npages * _PAGE // 8)).from_address(base))
    pages = pages.reshape(npages, _PAGE // 8)
    resident = (vec & 1).astype(bool)
    compiled = _compiled_zeroing()
    if compiled is not None:
        compiled(base, _PAGE, vec, threads)
    else:
        # Which resident pages hold data, run by run (only resident pages are
        # read), then one pass over the runs of those: a run of NumPy calls per
        # resident run cost ~4 ms a 3D Maxwell call (18 fields, ~26 runs each).
        written = np.zeros(npages, dtype=bool)
        for first, last in _runs(resident):
            pages[first:last].any(axis=1, out=written[first:last])
        for first, last in _runs(written):
            pages[first:last] = 0
    for first, last in _runs(~resident):
        if calls[1](base + first * _PAGE, (last - first) * _PAGE, mmap.MADV_DONTNEED) != 0:
            pages[first:last] = 0


# glibc's dynamic mmap threshold is raised to the size of a mapped block freed
# (up to 32 MiB on 64-bit), its heap trim threshold to twice that (mallopt(3)).
_HEAP_BLOCK = 16 << 20
_heap_settled: list[bool] = []


def settle_heap() -> None:
    """Raise glibc's heap trim threshold to 32 MiB, once per process (elsewhere nothing).

    A compiled call's host set-up makes NumPy temporaries of a few MB a slab
    of planes (:meth:`~sweep._compiled.CompiledStepper.planewise_fields`),
    freed at its end.  glibc gives the top of its heap back to the kernel
    once more than its trim threshold is free there (2 x 128 KiB until the
    process frees a larger mapped block), so each next slab faulted its
    pages in again: 3D Maxwell 80^3 + CPML, order 4, one thread, ~11,700
    faults and 32 ms of coefficients in some processes against ~600 and
    15 ms in others, as the heap's layout fell (benchmarks/README.md).  A
    16 MiB block mapped and freed raises the threshold the way any NumPy
    program's first large temporary does (mallopt(3): the dynamic mmap
    threshold): arrays up to 16 MiB then come from the heap, and up to 32 MiB
    free at its top stays there.  Nothing is touched (no page faulted in).
    """
    if _heap_settled:
        return
    _heap_settled.append(True)
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):
            return  # another C library: its own policy
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = [ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]
        block = libc.malloc(_HEAP_BLOCK)
        if block:
            libc.free(block)
    except (AttributeError, OSError):
        pass


def _compiled_zeroing() -> Any:
    """``sweep._C.zero_written_pages``, or None without the compiled kernels."""
    return compiled_function("zero_written_pages")


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Return the [start, stop) runs of True in the 1-D boolean ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.view(np.int8), [0])))).tolist()
    return list(zip(edges[::2], edges[1::2], strict=True))


def field_phase(slot: int, lead: int = 0) -> int:
    """Byte phase (offset past a 4 KiB boundary) of the kernels' field number ``slot``.

    A CPU loop stores u^{n+1} at index i while it loads u at i +- k rows: when
    two fields start at the same offset within a 4 KiB page (every large
    allocation does: it is page-aligned), such a load can match the low 12
    address bits of a store a few iterations back, and the core then holds
    the load until it knows the addresses differ.  Fields numbered 0, 1, 2, ...
    start 1088 bytes (17 cache lines) apart modulo 4 KiB, distinct for 64
    fields.  2D forward benchmark (300 x 1000, order 4, 4 shots, 2 threads):
    see benchmarks/README.md.  ``lead`` (bytes) moves the phase back so that
    the element ``lead`` bytes in, rather than the first, sits at it.
    """
    return (slot * _PHASE_STEP - lead) % _PAGE


_cache_lock = threading.Lock()
# Fields are kept up to this many bytes (stores, one at a time, without a cap).
_FIELD_CACHE_BYTES = 1 << 30


def _cache_enabled() -> bool:
    return bool(config.get("store_cache"))  # also sweep.config(store_cache=...)


def _mid_size_cached(nbytes: int) -> bool:
    """Whether an array of ``nbytes`` (a field or scratch array) comes from a cache of mappings."""
    return nbytes >= _FIELD_MIN_BYTES and _cache_enabled() and hasattr(mmap, "MADV_HUGEPAGE")


def _close(regions: list[mmap.mmap]) -> None:
    for region in regions:
        try:
            region.close()
        except BufferError:  # still exported somewhere: unmapped when that goes
            pass


class _Pool:
    """Released mappings kept for reuse, by byte size (see the module docstring)."""

    def __init__(self, cap: int | None) -> None:
        self.regions: list[mmap.mmap] = []
        self.pads: dict[int, int] = {}  # id of a cached region: the pad it was last used at
        self.cap = cap

    def take(self, size: int, pad: int = 0) -> mmap.mmap | None:
        """Return a cached mapping of ``size`` bytes, or None after unmapping every cached one.

        One last handed out at byte ``pad`` is preferred: a field's slot sets
        its pad (:func:`field_phase`), so each slot gets back the mapping it
        had, whose pages are resident where its kernels touched them
        (:func:`_zero_resident`).
        """
        with _cache_lock:
            match = [k for k, region in enumerate(self.regions) if len(region) == size]
            if match:
                same = [k for k in match if self.pads.get(id(self.regions[k])) == pad]
                region = self.regions.pop((same or match)[0])
                self.pads.pop(id(region), None)
                return region
            stale, self.regions = self.regions, []
            self.pads.clear()
        _close(stale)  # never hold a cached mapping and a new one at once
        return None

    def give(self, region: mmap.mmap, pad: int = 0) -> None:
        with _cache_lock:
            held = sum(len(r) for r in self.regions)
            if self.cap is None or held + len(region) <= self.cap:
                self.regions.append(region)
                self.pads[id(region)] = pad
                return
        _close([region])

    def release(self) -> int:
        with _cache_lock:
            regions, self.regions = self.regions, []
            self.pads.clear()
        nbytes = sum(len(r) for r in regions)
        _close(regions)
        return nbytes

    def nbytes(self) -> int:
        with _cache_lock:
            return sum(len(r) for r in self.regions)


_stores = _Pool(None)
_fields = _Pool(_FIELD_CACHE_BYTES)
_scratch = _Pool(_FIELD_CACHE_BYTES)


def release_cached() -> int:
    """Unmap every cached store, field and scratch array; return the bytes released."""
    return _stores.release() + _fields.release() + _scratch.release()


def cached_bytes() -> int:
    """Bytes held by released stores, fields and scratch arrays kept for reuse."""
    return _stores.nbytes() + _fields.nbytes() + _scratch.nbytes()


# Whether scratch() caches (set per forward run by keep_scratch).
_scratch_kept = [True]


def keep_scratch(keep: bool) -> None:
    """Whether :func:`scratch` reuses mappings from now on; False also unmaps those cached.

    ``_memory.forward`` sets it per gradient run (a plain forward leaves it):
    True under full storage (the store is the call's peak), False otherwise:
    cached scratch arrays would sit beside the checkpoints and raise the
    peak (3D elastic o8, ckpt 5: +360 MB), and a gradient there reuses heap
    memory that the checkpoints freed, so fresh mappings would fault in more.
    """
    _scratch_kept[0] = keep
    if not keep:
        _scratch.release()


def scratch(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Return an uninitialised host array for a result a caller writes whole (``out=``).

    From 256 KiB on, a released mapping of the same size is reused, as for
    :func:`zeros` (a pool of their own, so these do not evict kernel fields):
    a gradient's chain rule makes the same large float64 arrays every call,
    and NumPy's fresh ones fault in every page again (3D elastic 100^3 +
    CPML, order 8: fresh huge pages zeroed were 13 % of a warm gradient's
    samples; benchmarks/README.md).  Smaller ones, with the cache off or
    after ``keep_scratch(False)``: ``np.empty``.
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if not (_scratch_kept[0] and _mid_size_cached(nbytes)):
        return np.empty(shape, dtype=dtype)
    return _cached(_scratch, nbytes, shape, dtype, 0)[0]


def empty(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """Return an uninitialised host array for a wavefield store.

    Large stores reuse a released store of the same byte size when one is
    cached (its contents are the previous run's: callers write every slot
    before reading it); otherwise the cache is emptied and a fresh zeroed
    mapping on huge pages is made (see :func:`zeros`).
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if not _huge(nbytes) or not _cache_enabled():
        return zeros(shape, dtype)
    return _cached(_stores, nbytes, shape, dtype, 0)[0]


def _cached(
    pool: _Pool, size: int, shape: tuple[int, ...], dtype: np.dtype, pad: int
) -> tuple[np.ndarray, bool]:
    """Return an array at byte ``pad`` of a mapping of ``size`` bytes, and whether it was cached.

    A fresh mapping (zero-filled) is made when ``pool`` has none.  The mapping
    goes back to the pool once no array over it is left: its owner is a
    ctypes array that every view keeps alive (a view of the array handed out
    references the array that one was reshaped from, not it, so a finalizer
    on the handed-out array could fire while a view of it lives).
    """
    region = pool.take(size, pad)
    reused = region is not None
    if region is None:
        region = _map(size)
    owner = (ctypes.c_byte * size).from_buffer(region)
    out = np.frombuffer(owner, dtype=dtype, count=math.prod(shape), offset=pad).reshape(shape)
    if not reused:  # a reused mapping's address was forgotten when given back
        _fresh.add(out.ctypes.data)
    # Tracked while handed out, not while cached: a mapping made before
    # tracemalloc started is counted from its next use on.
    _track(out.ctypes.data, out.nbytes)
    done = weakref.finalize(owner, _give_back, pool, region, out.ctypes.data, pad)
    done.atexit = False
    return out, reused


def _give_back(pool: _Pool, region: mmap.mmap, address: int, pad: int) -> None:
    _unmapped(address)  # a reused mapping is zeroed by zeros(), not claimed
    pool.give(region, pad)
