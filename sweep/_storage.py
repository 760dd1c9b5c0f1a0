"""Snapshot storage for the adjoint pass: device memory, host memory or a temporary file.

A forward simulation stores one snapshot (an array of fixed shape, e.g.
``(n_shots, nz, nx)``) per stored time step so that the adjoint pass can read
them back in reverse time order.  Snapshots arrive in chunks of consecutive
steps and are read back in chunks, last chunk first.  :class:`SnapshotStore`
hides where they live:

``"device"``
    On the compute device (host memory for NumPy, GPU memory for CuPy).
``"cpu"``
    In host memory; for CuPy in pinned memory, copied on every ``put``/``get``.
``"disk"``
    In a file inside a private temporary directory, written by one background
    thread so that the simulation keeps running, with optional prefetching
    for the reverse pass.

Optionally snapshots are stored as bfloat16 (``compression="bf16"``), halving
the memory of float32 snapshots and quartering that of float64 ones; see
:func:`to_bf16`.

Disk stores reserve their whole file up front, so a full disk fails at once
with a :class:`StorageError` that says what to change, instead of a crash or
a wrong gradient later; and their directory is removed however the store
ends (``close``, a ``with`` block left by an exception, garbage collection,
interpreter exit).
"""

from __future__ import annotations

import errno
import functools
import math
import os
import queue
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _hostmem
from ._config import config
from ._impl import compiled_function, compiled_module

__all__ = ["SnapshotStore", "StorageError", "from_bf16", "to_bf16"]

MODES = ("device", "cpu", "disk")
COMPRESSIONS = (None, "bf16")

# Most bytes of queued, not yet written, disk chunks before ``put`` waits for
# the writer: bounds host memory when the disk is slower than the simulation.
_MAX_PENDING_BYTES = 256 * 2**20

_FIXES = (
    "use storage_mode='cpu' (host memory) if it fits, point tmpdir or the SWEEP_TMPDIR "
    "environment variable at a larger disk, use storage_compression='bf16' (half the size "
    "of float32), increase model_gradient_sampling_interval (fewer stored steps), or use a "
    "boundary/checkpoint memory strategy"
)
_MEMORY_FIXES = (
    "use storage_mode='disk' (or 'cpu' from GPU memory), storage_compression='bf16' (half "
    "the size of float32), increase model_gradient_sampling_interval (fewer stored steps), "
    "or use a boundary/checkpoint memory strategy"
)


class StorageError(OSError):
    """Snapshots could not be stored: memory or disk space ran out, or I/O failed.

    The message says what was being stored, how many bytes, where, and how to
    fix it.
    """


# --------------------------------------------------------------------------- bfloat16


def to_bf16(x: Any, xp: Any = np) -> Any:
    """Round an array to bfloat16, returned as its ``uint16`` bit patterns.

    Parameters
    ----------
    x : array
        Real floating-point NumPy or CuPy array; float64 is first rounded to
        float32.
    xp : module
        ``numpy`` or ``cupy``, the namespace of ``x``.

    Returns
    -------
    array
        New ``uint16`` array of ``x``'s shape: the upper half of the float32
        bits, rounded to nearest, ties to even.

    Notes
    -----
    NaN stays NaN (made quiet, sign kept) and infinities stay infinite.
    Finite values within half a bfloat16 unit of the largest float32
    (``|x| >= 3.3961776e38``) round to infinity, as any rounding to bfloat16
    does.
    """
    x32 = xp.ascontiguousarray(xp.asarray(x, dtype=xp.float32))
    if xp is not np:
        return _cupy_kernels()[0](x32)
    compiled = _compiled_bf16()
    if compiled is not None:
        out = np.empty(x32.shape, np.uint16)
        compiled.to_bf16_into(x32.reshape(-1).view(np.uint32), out.reshape(-1))
        return out
    return _to_bf16_numpy(x32)


def _to_bf16_numpy(x32: np.ndarray) -> np.ndarray:
    """:func:`to_bf16` of a contiguous float32 NumPy array, in NumPy (the reference)."""
    bits = x32.view(np.uint32)
    # Round to nearest even: add 0x7FFF plus the lowest kept bit, then truncate.
    # Only NaN bit patterns can wrap around here, and they are replaced below.
    rounded = bits >> 16
    rounded &= 1
    rounded += 0x7FFF
    rounded += bits
    rounded >>= 16
    # A NaN whose payload sits in the dropped bits would truncate to infinity.
    quiet_nan = (bits >> 16) | 0x0040
    return np.where(np.isnan(x32), quiet_nan, rounded).astype(np.uint16)


def from_bf16(h: Any, dtype: Any = np.float32, xp: Any = np) -> Any:
    """Widen bfloat16 bit patterns (``uint16``) back to floating point.

    Parameters
    ----------
    h : array
        ``uint16`` NumPy or CuPy array, as returned by :func:`to_bf16`.
    dtype : dtype
        Floating dtype of the result (exact: every bfloat16 is a float32).
    xp : module
        ``numpy`` or ``cupy``, the namespace of ``h``.

    Returns
    -------
    array
        Array of ``h``'s shape and dtype ``dtype`` (for float32, a view of a
        new array).

    Notes
    -----
    CuPy's float32 -> float64 conversion flushes subnormals (``|x| < 1.2e-38``)
    to zero, so on the GPU a float64 result can hold 0 where NumPy keeps a tiny
    value; :func:`to_bf16` of float64 input likewise.  Far below any
    snapshot's meaningful values, this is not worked around.
    """
    if xp is not np:
        h = xp.asarray(h, dtype=xp.uint16)
        return _from_bf16_into(h, xp.empty(h.shape, dtype=dtype), xp)
    wide = _from_bf16_into(h, np.empty(np.shape(h), np.float32), np)
    return wide if np.dtype(dtype) == np.float32 else wide.astype(dtype)


def _from_bf16_into(h: Any, out: Any, xp: Any) -> Any:
    if xp is not np:
        _cupy_kernels()[1](xp.asarray(h, dtype=xp.uint16), out)
        return out
    h = np.ascontiguousarray(h, dtype=np.uint16)
    compiled = _compiled_bf16()
    if compiled is not None and out.dtype == np.float32 and out.flags.c_contiguous:
        compiled.from_bf16_into(h.reshape(-1), out.reshape(-1).view(np.uint32))
        return out
    bits = h.astype(np.uint32)
    bits <<= 16
    out[...] = bits.view(np.float32)
    return out


def _compiled_bf16() -> Any:
    """``sweep._C`` for the multi-threaded conversions, or None without it (NumPy then)."""
    return compiled_module() if compiled_function("to_bf16_into") is not None else None


@functools.cache
def _cupy_kernels() -> tuple[Any, Any]:
    """Fused CuPy kernels for the bf16 conversions (one pass instead of several).

    Same rounding as the NumPy code above: nearest, ties to even; NaN kept
    (quiet, sign kept).  ``tests/test_storage.py`` compares them bit for bit.
    """
    import cupy

    to_bf16 = cupy.ElementwiseKernel(
        "float32 x",
        "uint16 y",
        """
        const unsigned int b = __float_as_uint(x);
        if ((b & 0x7fffffffu) > 0x7f800000u) {
          y = (unsigned short)((b >> 16) | 0x0040u);
        } else {
          y = (unsigned short)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
        }
        """,
        "sweep_to_bf16",
    )
    from_bf16 = cupy.ElementwiseKernel(
        "uint16 h", "T y", "y = (T)__uint_as_float(((unsigned int)h) << 16);", "sweep_from_bf16"
    )
    return to_bf16, from_bf16


# --------------------------------------------------------------------------- helpers


def _namespace(xp: Any) -> tuple[Any, bool]:
    """Return (array module, is_cupy) for numpy, cupy or their array_api_compat wrappers."""
    name = getattr(xp, "__name__", "")
    if name in ("numpy", "array_api_compat.numpy"):
        return np, False
    if name in ("cupy", "array_api_compat.cupy"):
        import cupy

        return cupy, True
    raise ValueError(f"xp must be the numpy or cupy module, got {xp!r}")


def _normalize_compression(compression: str | None) -> str | None:
    if compression is None or compression == "none":
        return None
    if compression == "bf16":
        return "bf16"
    raise ValueError(f"compression must be None, 'none' or 'bf16', got {compression!r}")


def _stored_dtype(dtype: np.dtype, compression: str | None) -> np.dtype:
    return np.dtype(np.uint16) if compression == "bf16" else dtype


def _format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def _free_bytes(directory: str) -> str:
    try:
        return f"{shutil.disk_usage(directory).free} bytes"
    except OSError:
        return "an unknown number of bytes"


def _disk_full_message(what: str, nbytes: int, directory: str, exc: OSError) -> str:
    return (
        f"{what} {_format_bytes(nbytes)} ({nbytes} bytes) of wavefield snapshots in "
        f"{directory!r} failed: {exc.strerror or exc}; {_free_bytes(directory)} free there. "
        f"To fix: {_FIXES}."
    )


def _data_ptr(a: Any) -> int:
    if isinstance(a, np.ndarray):
        return int(a.__array_interface__["data"][0])
    return int(a.data.ptr)  # CuPy


def _byte_view(buf: np.ndarray) -> memoryview:
    """Writable byte view of a C-contiguous host array (no copy)."""
    return memoryview(buf.reshape(-1).view(np.uint8))


def _pwrite_all(fd: int, buf: np.ndarray, offset: int) -> None:
    """Write all of the C-contiguous host array ``buf`` at byte ``offset`` of ``fd``."""
    mv = _byte_view(buf)
    done = 0
    while done < len(mv):
        # pwrite may write less than asked (Linux caps one call near 2 GiB).
        done += os.pwrite(fd, mv[done:], offset + done)


def _pread_into(fd: int, buf: np.ndarray, offset: int) -> None:
    """Fill the C-contiguous host array ``buf`` from byte ``offset`` of ``fd``."""
    mv = _byte_view(buf)
    done = 0
    while done < len(mv):
        if hasattr(os, "preadv"):
            k = os.preadv(fd, [mv[done:]], offset + done)
        else:  # pragma: no cover - platforms without preadv
            data = os.pread(fd, len(mv) - done, offset + done)
            k = len(data)
            mv[done : done + k] = data
        if k == 0:
            raise OSError(errno.EIO, f"unexpected end of snapshot file at byte {offset + done}")
        done += k


# --------------------------------------------------------------------------- disk state


@dataclass
class _Read:
    """One prefetch: the host buffer the I/O thread fills, and when it is done."""

    buf: np.ndarray
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None
    cancelled: bool = False


class _DiskState:
    """Everything the I/O thread and the finalizer need; never refers to the store.

    Keeping the store itself out of here lets it be garbage collected (and its
    directory removed) while the thread is still alive.
    """

    def __init__(self, directory: str, path: str, nbytes: int) -> None:
        self.directory = directory
        self.path = path
        self.nbytes = nbytes
        self.fd: int | None = None
        self.thread: threading.Thread | None = None
        self.jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.cond = threading.Condition()
        self.pending: dict[int, tuple[int, int, int]] = {}  # job -> (first, stop, nbytes)
        self.pending_bytes = 0
        self.next_job = 0
        self.error: str | None = None  # message of the first I/O thread failure
        self.cause: BaseException | None = None
        self.reported = False
        # Set by an aborting close: what is still queued is discarded, not
        # written (an interrupted run must not wait for up to _DISK_QUEUE_BYTES of I/O).
        self.closing = False

    def fail(self, exc: BaseException) -> None:
        """Record the first I/O thread failure and remove the file (its data is now useless)."""
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            message = _disk_full_message("writing", self.nbytes, self.directory, exc)
        else:
            message = f"writing wavefield snapshots to {self.path!r} failed: {exc!r}"
        with self.cond:
            if self.error is None:
                self.error, self.cause = message, exc
            self.cond.notify_all()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def _io_worker(state: _DiskState) -> None:
    """Run queued writes and prefetch reads in order, so reads see earlier writes."""
    fd = state.fd
    assert fd is not None
    try:
        while True:
            job = state.jobs.get()
            if job is None:
                return
            if job[0] == "write":
                _, job_id, offset, data = job
                try:
                    # After a failure or once closing, only drain the queue.
                    if state.error is None and not state.closing:
                        _pwrite_all(fd, data, offset)
                except Exception as exc:
                    state.fail(exc)
                finally:
                    with state.cond:
                        state.pending_bytes -= state.pending.pop(job_id)[2]
                        state.cond.notify_all()
            else:
                _, offset, read = job
                try:
                    if not read.cancelled and state.error is None:
                        _pread_into(fd, read.buf, offset)
                except Exception as exc:
                    read.error = exc
                finally:
                    read.done.set()
    finally:
        # The thread owns the descriptor: it may still be writing when a close
        # is interrupted, and a descriptor closed under it could be reused.
        os.close(fd)


def _cleanup(state: _DiskState) -> None:
    """Stop the I/O thread and remove the file and its directory (the finalizer)."""
    thread = state.thread
    try:
        if thread is not None:
            state.jobs.put(None)
            if thread is not threading.current_thread() and thread.is_alive():
                thread.join()
        elif state.fd is not None:
            os.close(state.fd)
            state.fd = None
    finally:
        # Also when the join above is interrupted (KeyboardInterrupt): the
        # thread then finishes writing into an unlinked file, which is harmless.
        shutil.rmtree(state.directory, ignore_errors=True)


def _reserve(fd: int, nbytes: int) -> None:
    """Allocate the file's blocks now, so a full disk fails here rather than mid-run."""
    if nbytes == 0:
        return
    fallocate = getattr(os, "posix_fallocate", None)
    if fallocate is not None:
        try:
            fallocate(fd, 0, nbytes)
            return
        except OSError as exc:
            # File systems that cannot preallocate: fall back to a sparse file;
            # a later ENOSPC then surfaces from the writer as a StorageError.
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
    os.ftruncate(fd, nbytes)


# --------------------------------------------------------------------------- the store


class SnapshotStore:
    """Fixed number of same-shaped snapshots, written forward and read back in reverse.

    Parameters
    ----------
    n_slots : int
        Number of snapshots (slots) the store holds.
    item_shape : tuple of int
        Shape of one snapshot.
    dtype : dtype
        Compute dtype of the snapshots (what ``put`` takes and ``get`` returns).
    mode : {"device", "cpu", "disk"}
        Where the snapshots live: the compute device, host memory (pinned for
        CuPy) or a file in a private temporary directory.
    compression : {None, "none", "bf16"}
        Store as bfloat16 (see :func:`to_bf16`); ``"none"`` is the same as None.
    xp : module
        ``numpy`` or ``cupy``: the library of the arrays given and returned.
    tmpdir : str, optional
        Parent of the temporary directory of a disk store; default the
        ``SWEEP_TMPDIR`` environment variable, else the system default.

    Attributes
    ----------
    n_slots, item_shape, dtype, mode, compression
        As given (normalized: ``dtype`` a NumPy dtype, ``compression`` None or "bf16").
    path : str or None
        The file of a disk store, None otherwise.

    Raises
    ------
    ValueError
        For a bad ``mode``, ``compression``, ``n_slots``, ``item_shape``,
        ``dtype`` or ``xp``.
    StorageError
        When the memory or disk space cannot be had.

    Notes
    -----
    Use it as a context manager or call :meth:`close`.  A disk store's
    directory is removed also when the store is garbage collected or the
    interpreter exits without either.  A store is meant for one caller thread.
    """

    def __init__(
        self,
        n_slots: int,
        item_shape: tuple[int, ...],
        dtype: Any,
        *,
        mode: str,
        compression: str | None = None,
        xp: Any = np,
        tmpdir: str | None = None,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.compression = _normalize_compression(compression)
        self.mode = mode
        self.n_slots, self.item_shape, self.dtype = _check_layout(
            n_slots, item_shape, dtype, self.compression
        )
        self._xp, self._cupy = _namespace(xp)
        self._stored = _stored_dtype(self.dtype, self.compression)
        self._item_bytes = math.prod(self.item_shape) * self._stored.itemsize
        self._nbytes = self.n_slots * self._item_bytes
        self._closed = False
        self._buf: Any = None  # memory modes: (n_slots, *item_shape) in the stored dtype
        self._disk: _DiskState | None = None
        self._prefetched: dict[tuple[int, int], _Read] = {}
        self.path: str | None = None
        # Memory modes whose buffer is on the compute device (NumPy "cpu" is host = device).
        self._on_device = mode == "device" or (mode == "cpu" and not self._cupy)
        if mode == "disk":
            self._open_disk(tmpdir)
        else:
            self._allocate()

    # ----------------------------------------------------------------- set-up

    def _allocate(self) -> None:
        shape = (self.n_slots, *self.item_shape)
        try:
            if self._on_device and not self._cupy:
                # Huge pages: first-touch page faults dominate writing a large
                # store; a released store of the same size is reused.
                self._buf = _hostmem.empty(shape, self._stored)
                where = "host"
            elif self._on_device:
                self._buf = self._xp.empty(shape, dtype=self._stored)
                where = "GPU" if self._cupy else "host"
            else:
                import cupyx

                self._buf = cupyx.empty_pinned(shape, dtype=self._stored)
                where = "pinned host"
        except (MemoryError, RuntimeError) as exc:
            # CuPy reports failed pinned allocations as CUDARuntimeError (a RuntimeError).
            where = "GPU" if (self._cupy and self._on_device) else "host"
            raise StorageError(
                f"allocating {_format_bytes(self._nbytes)} ({self._nbytes} bytes) of {where} "
                f"memory for {self.n_slots} wavefield snapshots of shape {self.item_shape} "
                f"({self._stored}) failed: {exc}. To fix: {_MEMORY_FIXES}."
            ) from exc
        self._where = where

    def _open_disk(self, tmpdir: str | None) -> None:
        parent = tmpdir or config.get("tmpdir")
        try:
            directory = tempfile.mkdtemp(prefix="sweep-", dir=parent)
        except OSError as exc:
            raise StorageError(
                f"cannot create a temporary directory for {_format_bytes(self._nbytes)} "
                f"({self._nbytes} bytes) of wavefield snapshots in "
                f"{parent or tempfile.gettempdir()!r}: {exc}. To fix: point tmpdir or the "
                "SWEEP_TMPDIR environment variable at a writable directory, or use "
                "storage_mode='cpu'."
            ) from exc
        path = os.path.join(directory, "snapshots.bin")
        state = _DiskState(directory, path, self._nbytes)
        # Registered before anything else can fail, so the directory never leaks.
        self._finalizer = weakref.finalize(self, _cleanup, state)
        try:
            state.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                _reserve(state.fd, self._nbytes)
            except OSError as exc:
                raise StorageError(
                    _disk_full_message("reserving", self._nbytes, directory, exc)
                ) from exc
            # Daemon, so interpreter exit is not held up before the finalizer stops it.
            thread = threading.Thread(
                target=_io_worker, args=(state,), name="sweep-snapshot-io", daemon=True
            )
            thread.start()
            state.thread = thread  # from here on the thread owns (and closes) the descriptor
        except BaseException:
            self._finalizer()
            raise
        self._disk = state
        self.path = path
        self._where = directory

    # ----------------------------------------------------------------- sizes

    @property
    def nbytes(self) -> int:
        """Bytes this store holds for all slots (host, device and disk); 0 once closed."""
        return 0 if self._closed else self._nbytes

    @staticmethod
    def bytes_needed(
        n_slots: int, item_shape: tuple[int, ...], dtype: Any, compression: str | None
    ) -> int:
        """Return the bytes a store of this layout holds, without allocating anything.

        Parameters
        ----------
        n_slots : int
            Number of snapshots.
        item_shape : tuple of int
            Shape of one snapshot.
        dtype : dtype
            Compute dtype.
        compression : {None, "none", "bf16"}
            Storage compression.

        Returns
        -------
        int
            Equal to :attr:`nbytes` of such a store (in any mode).
        """
        compression = _normalize_compression(compression)
        n_slots, item_shape, dtype = _check_layout(n_slots, item_shape, dtype, compression)
        return n_slots * math.prod(item_shape) * _stored_dtype(dtype, compression).itemsize

    # ----------------------------------------------------------------- access

    def direct(self, start: int, n: int) -> Any:
        """Return a writable compute-device view of slots ``[start, start + n)``, or None.

        Parameters
        ----------
        start, n : int
            First slot and number of slots.

        Returns
        -------
        array or None
            View (no copy) of shape ``(n, *item_shape)`` in the compute dtype
            that kernels may write into and read from directly, so that
            ``put(start, view)`` costs nothing; None when the slots are not
            stored that way (compressed, disk, or "cpu" mode with CuPy), in
            which case write into a scratch array and ``put`` it.
        """
        self._check_usable()
        self._check_range(start, n)
        if not self._direct_ok():
            return None
        return self._buf[start : start + n]

    def _direct_ok(self) -> bool:
        return self._on_device and self.compression is None

    def put(self, start: int, chunk: Any) -> None:
        """Store ``chunk``, shape ``(n, *item_shape)``, at slots ``[start, start + n)``.

        ``chunk`` may be reused by the caller as soon as this returns.  A disk
        store writes in the background; an I/O failure is raised as
        :class:`StorageError` by the next ``put``, ``get``, ``prefetch`` or
        ``close``.

        Parameters
        ----------
        start : int
            First slot.
        chunk : array
            Array of the store's ``xp`` and compute dtype.  Putting the view
            returned by ``direct(start, n)`` is a no-op.
        """
        self._check_usable()
        n = self._check_chunk(chunk, "chunk")
        self._check_range(start, n)
        if n == 0:
            return
        xp = self._xp
        if self._buf is not None:
            dest = self._buf[start : start + n]
            if self._on_device:
                if self.compression == "bf16":
                    dest[...] = to_bf16(chunk, xp)
                elif not _same_memory(chunk, dest):
                    dest[...] = chunk
            else:  # CuPy compute, pinned host storage; convert on the GPU to move fewer bytes
                src = to_bf16(chunk, xp) if self.compression == "bf16" else chunk
                xp.ascontiguousarray(src).get(out=dest)
            return
        self._put_disk(start, n, chunk)

    def _put_disk(self, start: int, n: int, chunk: Any) -> None:
        state = self._disk
        assert state is not None
        xp = self._xp
        # An independent host copy in the stored dtype: the caller may reuse `chunk`.
        if self.compression == "bf16":
            data = to_bf16(chunk, xp)
        elif self._cupy:
            data = chunk
        else:
            data = np.array(chunk, dtype=self._stored, order="C", copy=True)
        if self._cupy:
            data = xp.ascontiguousarray(data).get()
        first, stop = start, start + n
        # Prefetched data for these slots is now stale.
        for key in [k for k in self._prefetched if k[0] < stop and first < k[0] + k[1]]:
            self._prefetched.pop(key).cancelled = True
        with state.cond:
            # Back-pressure: wait while too many bytes are queued (at least one may be).
            while (
                state.error is None
                and state.pending
                and state.pending_bytes + data.nbytes > _MAX_PENDING_BYTES
            ):
                state.cond.wait()
            if state.error is None:
                job_id = state.next_job
                state.next_job += 1
                state.pending[job_id] = (first, stop, data.nbytes)
                state.pending_bytes += data.nbytes
                state.jobs.put(("write", job_id, first * self._item_bytes, data))
        self._raise_if_failed()

    def get(self, start: int, n: int, out: Any = None) -> Any:
        """Return slots ``[start, start + n)`` in the compute dtype on the compute device.

        Parameters
        ----------
        start, n : int
            First slot and number of slots.
        out : array, optional
            Array of shape ``(n, *item_shape)`` and the compute dtype to fill.

        Returns
        -------
        array
            ``out`` if given.  Otherwise, for uncompressed "device" stores
            (and NumPy "cpu" stores) a view into the store, valid until these
            slots are written again; else a new array.
        """
        self._check_usable()
        self._check_range(start, n)
        if out is not None:
            if self._check_chunk(out, "out") != n:
                raise ValueError(f"out must have shape {(n, *self.item_shape)}, got {out.shape}")
        if self._buf is not None:
            src = self._buf[start : start + n]
            if not self._on_device:
                return self._to_compute(src, out)
            if self.compression == "bf16":
                return self._to_compute(src, out)
            if out is None:
                return src
            if not _same_memory(out, src):
                out[...] = src
            return out
        return self._get_disk(start, n, out)

    def _get_disk(self, start: int, n: int, out: Any) -> Any:
        state = self._disk
        assert state is not None
        self._raise_if_failed()
        read = self._prefetched.pop((start, n), None)
        if read is not None:
            read.done.wait()
            self._raise_if_failed()
            if read.error is not None:
                raise self._read_error(start, n, read.error)
            return self._to_compute(read.buf, out)
        # Data still queued for these slots must reach the file before reading it.
        stop = start + n
        with state.cond:
            while state.error is None and any(
                s < stop and start < e for s, e, _ in state.pending.values()
            ):
                state.cond.wait()
        self._raise_if_failed()
        direct_read = (
            out is not None
            and not self._cupy
            and self.compression is None
            and isinstance(out, np.ndarray)
            and out.flags.c_contiguous
        )
        buf = out if direct_read else self._host_empty((n, *self.item_shape))
        try:
            _pread_into(state.fd, buf, start * self._item_bytes)
        except OSError as exc:
            raise self._read_error(start, n, exc) from exc
        return out if direct_read else self._to_compute(buf, out)

    def prefetch(self, start: int, n: int) -> None:
        """Start reading slots ``[start, start + n)`` so that ``get(start, n)`` need not wait.

        Only disk stores read ahead (on their I/O thread, after every earlier
        ``put``); for the others this does nothing.  The data is held in host
        memory until the matching ``get(start, n)``, a ``put`` to those slots,
        or ``close``.

        Parameters
        ----------
        start, n : int
            First slot and number of slots, as a later ``get`` will ask.
        """
        self._check_usable()
        self._check_range(start, n)
        if self._disk is None or n == 0 or (start, n) in self._prefetched:
            return
        self._raise_if_failed()
        read = _Read(self._host_empty((n, *self.item_shape)))
        self._prefetched[(start, n)] = read
        self._disk.jobs.put(("read", start * self._item_bytes, read))

    def close(self, abort: bool = False) -> None:
        """Free the memory; for disk stores, finish the I/O thread and remove the directory.

        Idempotent.  Raises :class:`StorageError` if a background write failed
        and no earlier call has reported it.  ``abort=True`` (a run that was
        interrupted or failed) drops the writes still queued instead of
        waiting for them.
        """
        if self._closed:
            return
        self._closed = True
        self._buf = None
        self._prefetched.clear()
        if self._disk is not None:
            self._disk.closing = abort
            self._finalizer()
            self._raise_if_failed()

    def __enter__(self) -> SnapshotStore:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc is None:
            self.close()
            return
        try:
            self.close()
        except StorageError as failure:
            # Keep the caller's exception (e.g. KeyboardInterrupt) the one that
            # propagates, but say that the background write failed too.
            if hasattr(exc, "add_note"):
                exc.add_note(f"also: {failure}")

    def __repr__(self) -> str:
        state = "closed" if self._closed else getattr(self, "_where", "")
        return (
            f"SnapshotStore(n_slots={self.n_slots}, item_shape={self.item_shape}, "
            f"dtype={self.dtype}, mode={self.mode!r}, compression={self.compression!r}, "
            f"{'cupy' if self._cupy else 'numpy'}, {state})"
        )

    # ----------------------------------------------------------------- internals

    def _check_usable(self) -> None:
        if self._closed:
            if self._disk is not None and self._disk.error is not None:
                raise StorageError(f"snapshot store closed after a failure: {self._disk.error}")
            raise ValueError("operation on a closed SnapshotStore")

    def _check_range(self, start: int, n: int) -> None:
        if not (0 <= start and 0 <= n and start + n <= self.n_slots):
            raise IndexError(
                f"slots [{start}, {start + n}) are outside the store's {self.n_slots} slots"
            )

    def _check_chunk(self, a: Any, name: str) -> int:
        shape = tuple(a.shape)
        if len(shape) != 1 + len(self.item_shape) or shape[1:] != self.item_shape:
            raise ValueError(f"{name} must have shape (n, *{self.item_shape}), got {shape}")
        if a.dtype != self.dtype:
            raise ValueError(f"{name} must have dtype {self.dtype}, got {a.dtype}")
        return shape[0]

    def _host_empty(self, shape: tuple[int, ...]) -> np.ndarray:
        if self._cupy:
            import cupyx

            return cupyx.empty_pinned(shape, dtype=self._stored)  # faster host -> device
        return np.empty(shape, dtype=self._stored)

    def _to_compute(self, host_or_stored: Any, out: Any) -> Any:
        """Stored-dtype data (host or device) -> compute dtype on the compute device."""
        xp = self._xp
        data = xp.asarray(host_or_stored)  # host -> GPU for CuPy; no copy otherwise
        if self.compression == "bf16":
            if out is None:
                return from_bf16(data, self.dtype, xp)
            return _from_bf16_into(data, out, xp)
        if out is None:
            return data
        out[...] = data
        return out

    def _raise_if_failed(self) -> None:
        state = self._disk
        if state is None or state.error is None:
            return
        # A failed store is useless: release everything now and say why.
        self._closed = True
        self._buf = None
        self._prefetched.clear()
        self._finalizer()
        if state.reported:
            raise StorageError(f"snapshot store closed after a failure: {state.error}")
        state.reported = True
        raise StorageError(state.error) from state.cause

    def _read_error(self, start: int, n: int, exc: BaseException) -> StorageError:
        return StorageError(
            f"reading wavefield snapshots [{start}, {start + n}) from {self.path!r} failed: {exc}"
        )


def _same_memory(a: Any, b: Any) -> bool:
    """Return True if arrays ``a`` and ``b`` are the same view of the same memory."""
    return (
        type(a) is type(b)
        and a.shape == b.shape
        and a.strides == b.strides
        and _data_ptr(a) == _data_ptr(b)
    )


def _check_layout(
    n_slots: int, item_shape: Any, dtype: Any, compression: str | None
) -> tuple[int, tuple[int, ...], np.dtype]:
    if isinstance(n_slots, bool) or not isinstance(n_slots, (int, np.integer)) or n_slots < 0:
        raise ValueError(f"n_slots must be a non-negative int, got {n_slots!r}")
    if isinstance(item_shape, (int, np.integer)):
        item_shape = (item_shape,)
    try:
        shape = tuple(int(d) for d in item_shape)
    except TypeError:
        raise ValueError(f"item_shape must be a tuple of ints, got {item_shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"item_shape must not have negative sizes, got {item_shape!r}")
    dtype = np.dtype(dtype)
    if compression == "bf16" and dtype.kind != "f":
        raise ValueError(f"dtype must be a real floating dtype for bf16 compression, got {dtype}")
    if dtype.hasobject:
        raise ValueError(f"dtype must not hold Python objects, got {dtype}")
    return int(n_slots), shape, dtype
