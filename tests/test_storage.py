"""SnapshotStore: round trips per mode/compression/dtype, bf16 rounding, disk life cycle."""

import errno
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import sweep._storage as storage
from sweep._storage import SnapshotStore, StorageError, from_bf16, to_bf16

try:
    import cupy

    HAVE_GPU = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:
    cupy = None
    HAVE_GPU = False

needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason="needs CuPy and a CUDA device")

MODES = ("device", "cpu", "disk")
COMPRESSIONS = (None, "bf16")
DTYPES = (np.float32, np.float64)
ITEM = (2, 3, 5)
CHUNKS = (3, 1, 4, 2)  # uneven on purpose
N = sum(CHUNKS)


def _bounds(chunks=CHUNKS):
    out, start = [], 0
    for n in chunks:
        out.append((start, n))
        start += n
    return out


def _data(dtype, n=N, seed=0):
    rng = np.random.default_rng(seed)
    # Several decades of magnitude, all normal numbers in float32.
    scale = 10.0 ** rng.uniform(-6, 6, size=(n, *ITEM))
    return (rng.standard_normal((n, *ITEM)) * scale).astype(dtype)


def _representable(x):
    """x rounded towards zero to a value that bf16 holds exactly."""
    bits = x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
    return bits.view(np.float32).astype(x.dtype)


def _check(got, expected, compression):
    got = np.asarray(got)
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if compression is None:
        np.testing.assert_array_equal(got, expected)
    else:
        err = np.abs(got.astype(np.float64) - expected.astype(np.float64))
        assert np.all(err <= 2.0**-8 * np.abs(expected.astype(np.float64)))


def _fill(store, data, chunks=CHUNKS):
    """Put `data` chunk by chunk through one reused scratch buffer, as a time loop would."""
    scratch = np.empty((max(chunks), *ITEM), data.dtype)
    for start, n in _bounds(chunks):
        scratch[:n] = data[start : start + n]
        store.put(start, scratch[:n])
        scratch[:n] = -7.0  # the caller reuses its buffer as soon as put returns


def _store_dir(store):
    return Path(store.path).parent


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("mode", MODES)
def test_round_trip_reverse(mode, compression, dtype, tmp_path):
    data = _data(dtype)
    with SnapshotStore(
        N, ITEM, dtype, mode=mode, compression=compression, tmpdir=str(tmp_path)
    ) as store:
        _fill(store, data)
        for start, n in reversed(_bounds()):
            expected = data[start : start + n]
            _check(np.array(store.get(start, n)), expected, compression)
            out = np.full((n, *ITEM), np.nan, dtype)
            assert store.get(start, n, out=out) is out
            _check(out, expected, compression)
        # Reading with other chunk boundaries than written works too.
        _check(store.get(1, 7), data[1:8], compression)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", MODES)
def test_bf16_exact_for_representable_values(mode, dtype, tmp_path):
    data = _representable(_data(dtype, seed=3))
    with SnapshotStore(N, ITEM, dtype, mode=mode, compression="bf16", tmpdir=str(tmp_path)) as s:
        _fill(s, data)
        for start, n in reversed(_bounds()):
            np.testing.assert_array_equal(s.get(start, n), data[start : start + n])


@pytest.mark.parametrize("mode", ("device", "cpu"))
def test_direct_is_a_writable_view_in_memory(mode):
    data = _data(np.float32)
    with SnapshotStore(N, ITEM, np.float32, mode=mode) as store:
        view = store.direct(2, 3)
        assert view is not None and view.shape == (3, *ITEM) and view.dtype == np.float32
        view[...] = data[2:5]  # a kernel writes its output straight into the store
        store.put(2, view)
        np.testing.assert_array_equal(store.get(2, 3), data[2:5])
        # Writes through an older view of the same slots show up as well (no copy involved).
        store.direct(2, 3)[1] = 42.0
        store.put(2, view)
        assert np.all(store.get(3, 1) == 42.0)


def test_put_of_a_view_of_other_slots_copies():
    data = _data(np.float64)
    with SnapshotStore(N, ITEM, np.float64, mode="device") as store:
        _fill(store, data)
        store.put(5, store.direct(2, 3))  # same buffer, different slots: must copy
        np.testing.assert_array_equal(store.get(5, 3), data[2:5])
        np.testing.assert_array_equal(store.get(2, 3), data[2:5])


@pytest.mark.parametrize(
    ("mode", "compression"), [("disk", None), ("disk", "bf16"), ("device", "bf16"), ("cpu", "bf16")]
)
def test_direct_is_none_where_not_stored_as_compute_arrays(mode, compression, tmp_path):
    with SnapshotStore(
        N, ITEM, np.float32, mode=mode, compression=compression, tmpdir=str(tmp_path)
    ) as store:
        assert store.direct(0, 2) is None


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("mode", MODES)
def test_non_contiguous_chunks_and_out(mode, compression, tmp_path):
    data = _data(np.float64)
    wide = np.zeros((N, ITEM[0], 2 * ITEM[1], ITEM[2]))
    wide[:, :, ::2] = data
    with SnapshotStore(
        N, ITEM, np.float64, mode=mode, compression=compression, tmpdir=str(tmp_path)
    ) as store:
        store.put(0, wide[:, :, ::2])
        out = np.zeros_like(wide)
        store.get(2, 5, out=out[2:7, :, ::2])
        _check(out[2:7, :, ::2], data[2:7], compression)
        assert np.all(out[:, :, 1::2] == 0)


# ----------------------------------------------------------------------------- bf16


def _reference_bf16(bits):
    """Round-to-nearest-even of float32 bit patterns, one Python int at a time."""
    out = []
    for b in (int(v) for v in bits):
        hi, lo = b >> 16, b & 0xFFFF
        if lo > 0x8000 or (lo == 0x8000 and hi & 1):
            hi += 1
        out.append(hi)
    return np.array(out, dtype=np.uint16)


def test_to_bf16_rounds_ties_to_even():
    cases = {
        0x3F808000: 0x3F80,  # tie, even below: down
        0x3F818000: 0x3F82,  # tie, odd below: up
        0x3F808001: 0x3F81,  # above the tie: up
        0x3F807FFF: 0x3F80,  # below the tie: down
        0xBF808000: 0xBF80,  # negative tie, even
        0xBF818000: 0xBF82,  # negative tie, odd
        0x00008000: 0x0000,  # subnormal tie, even
        0x00018000: 0x0002,  # subnormal tie, odd
        0x3F7FFFFF: 0x3F80,  # carry into the exponent
        0x7F7F7FFF: 0x7F7F,  # largest finite bf16
        0x7F7F8000: 0x7F80,  # tie at the top, odd: overflows to inf (documented)
        0x7F800000: 0x7F80,  # inf
        0xFF800000: 0xFF80,  # -inf
    }
    bits = np.array(list(cases), dtype=np.uint32)
    got = to_bf16(bits.view(np.float32), np)
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, np.array(list(cases.values()), dtype=np.uint16))


def test_to_bf16_matches_reference_on_random_patterns():
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**32, size=4000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    finite = np.isfinite(x)
    np.testing.assert_array_equal(to_bf16(x[finite], np), _reference_bf16(bits[finite]))
    # float64 input is rounded to float32 first.
    x64 = rng.standard_normal(1000)
    np.testing.assert_array_equal(to_bf16(x64, np), to_bf16(x64.astype(np.float32), np))


def test_compiled_bf16_matches_numpy_bitwise():
    """sweep._C's multi-threaded conversions give the NumPy reference's bits."""
    from sweep import _storage

    if _storage._compiled_bf16() is None:
        pytest.skip("sweep._C is not built")
    rng = np.random.default_rng(8)
    # Every class of pattern: random bits (NaNs, infinities, subnormals
    # included) and ties; long enough to be split between threads.
    bits = rng.integers(0, 2**32, size=300_001, dtype=np.uint64).astype(np.uint32)
    bits[::7] = (bits[::7] & 0xFFFF0000) | 0x8000
    x = bits.view(np.float32)
    got = to_bf16(x, np)
    np.testing.assert_array_equal(got, _storage._to_bf16_numpy(x))
    back = from_bf16(got, np.float32, np)
    np.testing.assert_array_equal(back.view(np.uint32), got.astype(np.uint32) << 16)
    np.testing.assert_array_equal(to_bf16(x[:0], np), np.zeros(0, np.uint16))


def test_to_bf16_keeps_nan():
    # Payloads only in the dropped low bits would truncate to infinity; the top one wraps.
    bits = np.array([0x7F800001, 0xFF800001, 0x7FC00000, 0xFFFFFFFF, 0x7F80FFFF], np.uint32)
    got = to_bf16(bits.view(np.float32), np)
    back = from_bf16(got, np.float32, np)
    assert np.all(np.isnan(back))
    np.testing.assert_array_equal(np.signbit(back), [False, True, False, True, False])


@pytest.mark.parametrize("dtype", DTYPES)
def test_from_bf16_dtype_and_values(dtype):
    h = np.array([0x3F80, 0xC040, 0x0000, 0x8000, 0x7F80, 0x0001], np.uint16)
    got = from_bf16(h, dtype, np)
    assert got.dtype == dtype
    expected = np.array([1.0, -3.0, 0.0, -0.0, np.inf, 2.0**-133], dtype)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


# ----------------------------------------------------------------------------- sizes


@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("mode", MODES)
def test_nbytes_equals_bytes_needed(mode, compression, tmp_path):
    for dtype in DTYPES:
        needed = SnapshotStore.bytes_needed(N, ITEM, dtype, compression)
        store = SnapshotStore(
            N, ITEM, dtype, mode=mode, compression=compression, tmpdir=str(tmp_path)
        )
        assert store.nbytes == needed
        if mode == "disk":
            assert os.path.getsize(store.path) == needed
        store.close()
        assert store.nbytes == 0


def test_bf16_halves_float32():
    f32 = SnapshotStore.bytes_needed(N, ITEM, np.float32, None)
    assert f32 == N * 30 * 4
    assert SnapshotStore.bytes_needed(N, ITEM, np.float32, "bf16") * 2 == f32
    assert SnapshotStore.bytes_needed(N, ITEM, np.float64, "bf16") * 2 == f32
    assert SnapshotStore.bytes_needed(N, ITEM, np.float64, "none") == 2 * f32


# ----------------------------------------------------------------------------- disk life cycle


def test_disk_file_lives_in_private_dir_until_close(tmp_path):
    store = SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path))
    directory = _store_dir(store)
    assert directory.parent == tmp_path and directory.name.startswith("sweep-")
    assert Path(store.path).is_file()
    _fill(store, _data(np.float32))
    store.close()
    assert not directory.exists()
    store.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        store.get(0, 1)


def test_disk_removed_when_with_block_raises(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as store:
            store.put(0, _data(np.float32)[:3])
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_disk_removed_on_keyboard_interrupt_between_puts(tmp_path):
    data = _data(np.float32)
    with pytest.raises(KeyboardInterrupt):
        with SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as store:
            for i, (start, n) in enumerate(_bounds()):
                store.put(start, data[start : start + n])
                if i == 1:
                    raise KeyboardInterrupt
    assert list(tmp_path.iterdir()) == []


def _abandoned_store(tmp_path):
    store = SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path))
    _fill(store, _data(np.float32))
    store.prefetch(0, 3)
    directory = _store_dir(store)
    assert directory.exists()
    return directory


def test_disk_removed_when_garbage_collected(tmp_path):
    directory = _abandoned_store(tmp_path)  # the store is unreachable once this returns
    gc.collect()
    assert not directory.exists()
    assert list(tmp_path.iterdir()) == []


def test_disk_removed_at_interpreter_exit(tmp_path):
    script = textwrap.dedent(
        f"""
        import numpy as np
        from sweep._storage import SnapshotStore
        keep = SnapshotStore(4, (3,), np.float32, mode="disk", tmpdir={str(tmp_path)!r})
        keep.put(0, np.ones((4, 3), np.float32))
        print(keep.path)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert proc.stdout.strip().startswith(str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def test_two_stores_use_different_directories(tmp_path):
    with (
        SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as a,
        SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as b,
    ):
        assert _store_dir(a) != _store_dir(b)
        a.put(0, np.ones((2, *ITEM), np.float32))
        b.put(0, np.zeros((2, *ITEM), np.float32))
        assert np.all(a.get(0, 2) == 1) and np.all(b.get(0, 2) == 0)


def test_sweep_tmpdir_and_tmpdir_are_honoured(tmp_path, monkeypatch):
    env_dir, arg_dir = tmp_path / "env", tmp_path / "arg"
    env_dir.mkdir()
    arg_dir.mkdir()
    monkeypatch.setenv("SWEEP_TMPDIR", str(env_dir))
    with SnapshotStore(2, ITEM, np.float32, mode="disk") as store:
        assert _store_dir(store).parent == env_dir
    with SnapshotStore(2, ITEM, np.float32, mode="disk", tmpdir=str(arg_dir)) as store:
        assert _store_dir(store).parent == arg_dir
    assert list(env_dir.iterdir()) == [] and list(arg_dir.iterdir()) == []


def test_missing_tmpdir_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError, match="SWEEP_TMPDIR"):
        SnapshotStore(2, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path / "absent"))


# ----------------------------------------------------------------------------- failures


def test_disk_full_at_reservation(tmp_path, monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storage.os, "posix_fallocate", full, raising=False)
    needed = SnapshotStore.bytes_needed(N, ITEM, np.float64, None)
    with pytest.raises(StorageError) as info:
        SnapshotStore(N, ITEM, np.float64, mode="disk", tmpdir=str(tmp_path))
    message = str(info.value)
    assert isinstance(info.value, OSError)
    assert "SWEEP_TMPDIR" in message and "storage_mode" in message and "bf16" in message
    assert str(needed) in message and str(tmp_path) in message and "free" in message
    assert list(tmp_path.iterdir()) == []


def test_reservation_falls_back_where_unsupported(tmp_path, monkeypatch):
    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(storage.os, "posix_fallocate", unsupported, raising=False)
    data = _data(np.float32)
    with SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as store:
        assert os.path.getsize(store.path) == store.nbytes
        _fill(store, data)
        np.testing.assert_array_equal(store.get(0, N), data)


def test_memory_exhaustion_is_a_storage_error():
    with pytest.raises(StorageError, match="storage_mode='disk'"):
        SnapshotStore(2**40, (1024, 1024), np.float32, mode="device")


def _fail_second_write(monkeypatch):
    real, calls = storage._pwrite_all, []

    def write(fd, buf, offset):
        calls.append(offset)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, buf, offset)

    monkeypatch.setattr(storage, "_pwrite_all", write)


def test_writer_failure_raised_by_get(tmp_path, monkeypatch):
    _fail_second_write(monkeypatch)
    store = SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path))
    _fill(store, _data(np.float32))
    with pytest.raises(StorageError, match="SWEEP_TMPDIR") as info:
        store.get(6, 4)
    assert isinstance(info.value.__cause__, OSError)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(StorageError):
        store.get(0, 1)
    store.close()  # already reported: no second raise


def test_writer_failure_raised_by_close(tmp_path, monkeypatch):
    _fail_second_write(monkeypatch)
    store = SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path))
    store.put(0, _data(np.float32)[:3])
    store.put(3, _data(np.float32)[3:5])
    with pytest.raises(StorageError, match="storage_mode"):
        store.close()
    assert list(tmp_path.iterdir()) == []
    store.close()


def test_writer_failure_raised_by_put(tmp_path, monkeypatch):
    _fail_second_write(monkeypatch)
    data = _data(np.float32)
    with SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as store:
        store.put(0, data[:1])
        store.put(1, data[1:2])
        deadline = time.monotonic() + 10
        with pytest.raises(StorageError, match="No space left"):
            while time.monotonic() < deadline:
                store.put(2, data[2:3])
                time.sleep(0.005)
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- async disk I/O


def test_get_waits_for_pending_writes(tmp_path, monkeypatch):
    real = storage._pwrite_all

    def slow(fd, buf, offset):
        time.sleep(0.05)
        real(fd, buf, offset)

    monkeypatch.setattr(storage, "_pwrite_all", slow)
    data = _data(np.float64)
    with SnapshotStore(N, ITEM, np.float64, mode="disk", tmpdir=str(tmp_path)) as store:
        _fill(store, data)  # returns long before the writes are done
        for start, n in reversed(_bounds()):
            np.testing.assert_array_equal(store.get(start, n), data[start : start + n])
        store.put(0, data[5:8])
        store.prefetch(0, 3)  # queued behind the slow write, so it sees it
        np.testing.assert_array_equal(store.get(0, 3), data[5:8])


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_prefetch_serves_get_from_the_io_thread(compression, tmp_path, monkeypatch):
    real, readers = storage._pread_into, []

    def read(fd, buf, offset):
        readers.append(threading.current_thread() is threading.main_thread())
        real(fd, buf, offset)

    monkeypatch.setattr(storage, "_pread_into", read)
    data = _data(np.float32)
    with SnapshotStore(
        N, ITEM, np.float32, mode="disk", compression=compression, tmpdir=str(tmp_path)
    ) as store:
        _fill(store, data)
        bounds = list(reversed(_bounds()))
        store.prefetch(*bounds[0])
        for i, (start, n) in enumerate(bounds):
            if i + 1 < len(bounds):
                store.prefetch(*bounds[i + 1])  # read the next chunk while this one is used
            _check(store.get(start, n), data[start : start + n], compression)
        assert readers == [False] * len(bounds)  # no get read the file itself
        _check(store.get(0, 2), data[:2], compression)
        assert readers[-1] is True  # without a prefetch, get reads in the caller's thread


def test_put_after_prefetch_invalidates_it(tmp_path):
    data = _data(np.float32)
    with SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as store:
        _fill(store, data)
        store.prefetch(4, 4)
        store.put(6, -data[6:8])
        got = store.get(4, 4)
        np.testing.assert_array_equal(got[:2], data[4:6])
        np.testing.assert_array_equal(got[2:], -data[6:8])


@pytest.mark.parametrize("mode", ("device", "cpu"))
def test_prefetch_is_harmless_in_memory(mode):
    data = _data(np.float32)
    with SnapshotStore(N, ITEM, np.float32, mode=mode, compression="bf16") as store:
        _fill(store, data)
        store.prefetch(0, 3)
        _check(store.get(0, 3), data[:3], "bf16")


# ----------------------------------------------------------------------------- arguments


def test_bad_mode_and_compression_name_the_argument(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        SnapshotStore(N, ITEM, np.float32, mode="gpu")
    with pytest.raises(ValueError, match="compression"):
        SnapshotStore(N, ITEM, np.float32, mode="device", compression="zstd")
    with pytest.raises(ValueError, match="compression"):
        SnapshotStore.bytes_needed(N, ITEM, np.float32, "fp8")
    store = SnapshotStore(N, ITEM, np.float32, mode="device", compression="none")
    assert store.compression is None and store.direct(0, 1) is not None
    with pytest.raises(ValueError, match="dtype"):
        SnapshotStore(N, ITEM, np.int32, mode="device", compression="bf16")
    with pytest.raises(ValueError, match="xp"):
        SnapshotStore(N, ITEM, np.float32, mode="device", xp=os)
    assert list(tmp_path.iterdir()) == []


def test_bad_chunks_and_ranges(tmp_path):
    with SnapshotStore(N, ITEM, np.float32, mode="disk", tmpdir=str(tmp_path)) as store:
        with pytest.raises(ValueError, match="shape"):
            store.put(0, np.zeros((2, 3, 2), np.float32))
        with pytest.raises(ValueError, match="dtype"):
            store.put(0, np.zeros((2, *ITEM), np.float64))
        with pytest.raises(IndexError):
            store.put(N - 1, np.zeros((2, *ITEM), np.float32))
        with pytest.raises(IndexError):
            store.get(-1, 2)
        with pytest.raises(ValueError, match="out"):
            store.get(0, 2, out=np.zeros((3, *ITEM), np.float32))
        assert store.get(3, 0).shape == (0, *ITEM)


# ----------------------------------------------------------------------------- CuPy


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("mode", MODES)
def test_cupy_round_trip(mode, compression, dtype, tmp_path):
    data = _data(dtype)
    with SnapshotStore(
        N, ITEM, dtype, mode=mode, compression=compression, xp=cupy, tmpdir=str(tmp_path)
    ) as store:
        direct = store.direct(0, 2)
        if mode == "device" and compression is None:
            assert isinstance(direct, cupy.ndarray)
        else:
            assert direct is None
        scratch = cupy.empty((max(CHUNKS), *ITEM), dtype)
        for start, n in _bounds():
            scratch[:n] = cupy.asarray(data[start : start + n])
            store.put(start, scratch[:n])
            scratch[:n] = -7.0
        bounds = list(reversed(_bounds()))
        for i, (start, n) in enumerate(bounds):
            if i + 1 < len(bounds):
                store.prefetch(*bounds[i + 1])
            got = store.get(start, n)
            assert isinstance(got, cupy.ndarray)
            _check(cupy.asnumpy(got), data[start : start + n], compression)
            out = cupy.full((n, *ITEM), cupy.nan, dtype)
            assert store.get(start, n, out=out) is out
            _check(cupy.asnumpy(out), data[start : start + n], compression)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.gpu
@needs_gpu
def test_cupy_bf16_matches_numpy():
    rng = np.random.default_rng(9)
    bits = rng.integers(0, 2**32, size=20000, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    got = cupy.asnumpy(to_bf16(cupy.asarray(x), cupy))
    np.testing.assert_array_equal(got, to_bf16(x, np))
    for dtype in DTYPES:
        back = cupy.asnumpy(from_bf16(cupy.asarray(got), dtype, cupy))
        expected = from_bf16(got, dtype, np)
        # CuPy flushes float32 subnormals to zero when widening to float64 (documented).
        tiny = np.abs(expected) < np.finfo(np.float32).tiny
        np.testing.assert_array_equal(back[~tiny], expected[~tiny])
        assert np.all((back[tiny] == expected[tiny]) | (back[tiny] == 0))


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize("mode", MODES)
def test_cupy_non_contiguous_and_direct(mode, compression, tmp_path):
    data = _data(np.float32)
    wide = cupy.zeros((N, ITEM[0], 2 * ITEM[1], ITEM[2]), np.float32)
    wide[:, :, ::2] = cupy.asarray(data)
    with SnapshotStore(
        N, ITEM, np.float32, mode=mode, compression=compression, xp=cupy, tmpdir=str(tmp_path)
    ) as store:
        store.put(0, wide[:, :, ::2])
        out = cupy.zeros_like(wide)
        store.get(2, 5, out=out[2:7, :, ::2])
        _check(cupy.asnumpy(out[2:7, :, ::2]), data[2:7], compression)
        view = store.direct(1, 2)
        if view is not None:
            view[...] = 3.0  # a kernel writes in place
            store.put(1, view)
            assert bool(cupy.all(store.get(1, 2) == 3.0))
