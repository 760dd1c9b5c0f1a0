"""Host buffers of the compiled kernels: zero-filled, and at the page offsets asked for."""

import ctypes
import gc
import inspect
import mmap
import resource

import numpy as np
import pytest

import sweep
from sweep import _hostmem
from sweep._compiled import CompiledAcoustic
from sweep.equations.acoustic.propagator import _prepare
from sweep.testing import random_problem


@pytest.mark.parametrize("shape", [(3, 50), (2, 1100, 1000)])  # ordinary and huge-page sizes
@pytest.mark.parametrize("phase", [None, 0, 1088, 4092])
def test_zeros_has_the_phase_and_is_zero(shape, phase):
    a = _hostmem.zeros(shape, np.float32, phase=phase)
    assert a.shape == shape and a.dtype == np.float32 and a.flags.c_contiguous
    assert not a.any()
    if phase is not None:
        assert a.ctypes.data % 4096 == phase
    a[...] = 1  # the whole array is writable memory
    assert a.sum() == a.size


def test_field_phases_are_distinct():
    phases = {_hostmem.field_phase(k) for k in range(64)}
    assert len(phases) == 64
    assert all(p % 64 == 0 for p in phases)
    shifted = [(_hostmem.field_phase(k) - 16) % 4096 for k in range(64)]
    assert [_hostmem.field_phase(k, 16) for k in range(64)] == shifted


def test_kernel_fields_start_at_distinct_page_offsets():
    problem = random_problem(2, np.float32, nt=5)
    args = inspect.signature(sweep.acoustic).bind(**problem)
    args.apply_defaults()
    geom = _prepare(**args.arguments).geom
    engine = CompiledAcoustic(geom, np, np.dtype(np.float32))
    state = engine.new_state()
    adj = engine.new_adjoint(model=True, source=True)
    fields = [state.u_prev, state.u, adj.lam_prev, adj.lam, adj.grad_v2dt2]
    for ax in engine.axes:
        fields += [*state.psi[ax], state.zeta[ax], *adj.P[ax], *adj.Z[ax]]
    fields.append(engine.kernel_v2dt2(np.ones(state.u.shape[1:], np.float32)))
    offsets = [f.ctypes.data % 4096 for f in fields]
    assert len(set(offsets)) == len(offsets)


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("nx", [40, 41])  # padded rows of 54 and 55 floats
def test_every_row_starts_its_main_cells_on_a_line(ndim, nx):
    """Rows are whole lines; x = halo (3D) or the plain middle's first cell (2D) starts one."""
    problem = random_problem(ndim, np.float32, nt=5)
    problem["v"] = np.full((*problem["v"].shape[:-1], nx), 2000.0, np.float32)
    problem["pml_width"] = 3
    problem["accuracy"] = 8
    args = inspect.signature(sweep.acoustic).bind(**problem)
    args.apply_defaults()
    geom = _prepare(**args.arguments).geom
    engine = CompiledAcoustic(geom, np, np.dtype(np.float32))
    state = engine.new_state()
    assert geom.layout_shape[-1] * 4 % 64 == 0
    x0 = geom.halo if ndim == 3 else geom.plain_range(ndim - 1)[0]
    v2dt2 = engine.kernel_v2dt2(np.ones(geom.padded_shape, np.float32))
    for field in (state.u[0], state.u_prev[0], v2dt2):
        rows = field.reshape(-1, *field.shape[-1:]) if ndim == 2 else field[1]
        assert all(rows[y, x0:].ctypes.data % 64 == 0 for y in range(4))
    offsets = {f.ctypes.data % 4096 for f in (state.u, state.u_prev)}
    assert len(offsets) == 2


def _store_problem():
    # A store of 2 shots x 300 steps x 60 x 60 cells (8.6 MB): large enough to be cached.
    problem = random_problem(2, np.float32, n_shots=2, nt=300)
    problem["v"] = np.full((60, 60), 2000.0, np.float32)
    problem["source_locations"] = np.array([[[30, 30]], [[20, 40]]])
    problem["receiver_locations"] = np.array([[[5, x] for x in range(0, 60, 3)]] * 2)
    problem["source_amplitudes"] = problem["source_amplitudes"][:, :1]
    return problem


def _gradient(problem):
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c", n_threads=1)
    return pullback(np.ones_like(out.receivers))["v"]


@pytest.fixture
def empty_cache():
    if not hasattr(mmap, "MADV_HUGEPAGE"):
        pytest.skip("host buffers are cached only where they get huge-page mappings (Linux)")
    sweep.release_cached_memory()
    yield
    sweep.release_cached_memory()


def test_released_store_is_reused_and_other_sizes_empty_the_cache(empty_cache):
    a = _hostmem.empty((3, 1100, 1000), np.float32)
    address = a.ctypes.data
    del a
    assert _hostmem.cached_bytes() == 3 * 1100 * 1000 * 4
    b = _hostmem.empty((3, 1000, 1100), np.float32)  # same bytes: reused
    assert b.ctypes.data == address and _hostmem.cached_bytes() == 0
    del b
    c = _hostmem.empty((2, 1100, 1000), np.float32)  # another size: the cache is freed first
    assert _hostmem.cached_bytes() == 0
    del c
    assert sweep.release_cached_memory() == 2 * 1100 * 1000 * 4
    assert _hostmem.cached_bytes() == 0


def test_store_cache_can_be_turned_off(empty_cache, monkeypatch):
    monkeypatch.setenv("SWEEP_STORE_CACHE", "0")
    a = _hostmem.empty((3, 1100, 1000), np.float32)
    assert not a.any()
    del a
    assert _hostmem.cached_bytes() == 0


def test_gradient_ignores_what_a_reused_store_held(empty_cache, monkeypatch):
    problem = _store_problem()
    monkeypatch.setenv("SWEEP_STORE_CACHE", "0")
    reference = _gradient(problem)
    monkeypatch.setenv("SWEEP_STORE_CACHE", "1")
    _gradient(problem)
    assert _hostmem.cached_bytes() > 0  # the store of that run is cached ...
    poisoned = list(_hostmem._stores.regions)
    for region in poisoned:  # ... and poisoned before the next run reuses it
        np.frombuffer(region, dtype=np.float32)[:] = np.nan
    got = _gradient(problem)
    assert any(r is p for r in _hostmem._stores.regions for p in poisoned)  # it was reused
    assert np.array_equal(got, reference)
    assert np.abs(reference).max() > 0


def test_a_view_keeps_its_mapping_out_of_the_cache(empty_cache):
    a = _hostmem.zeros((3, 1100, 1000), np.float32, phase=1088)
    view = a[1, 5:]
    del a
    assert _hostmem.cached_bytes() == 0  # the view still uses the memory
    view[...] = 7
    b = _hostmem.zeros((3, 1100, 1000), np.float32, phase=1088)
    assert not b.any() and (view == 7).all()  # b got a fresh mapping
    del view
    assert _hostmem.cached_bytes() > 0
    del b


def _big_forward_problem():
    # 3D fields of 108^3 floats (5 MB each): large enough to be cached.
    problem = random_problem(3, np.float32, nt=12, accuracy=8)
    problem["v"] = np.full((60, 60, 60), 2000.0, np.float32)
    problem["source_locations"] = np.array([[[30, 30, 30]]])
    problem["receiver_locations"] = np.array([[[5, 30, x] for x in range(0, 60, 6)]])
    problem["source_amplitudes"] = problem["source_amplitudes"][:1, :1]
    problem["pml_width"] = 20
    return problem


def _address(region):
    return ctypes.addressof(ctypes.c_byte.from_buffer(region))


def test_forward_reuses_fields_and_zeroes_them(empty_cache, monkeypatch):
    problem = _big_forward_problem()
    monkeypatch.setenv("SWEEP_STORE_CACHE", "0")
    reference = sweep.acoustic(**problem, impl="c", n_threads=1)
    monkeypatch.setenv("SWEEP_STORE_CACHE", "1")
    first = sweep.acoustic(**problem, impl="c", n_threads=1)
    kept = first.state["u"][0, 3:]  # a view of a field the result hands out
    kept_copy = kept.copy()
    del first
    poisoned = list(_hostmem._fields.regions)
    assert len(poisoned) > 2  # the fields nobody holds went back to the cache ...
    spans = [(_address(r), _address(r) + len(r)) for r in poisoned]
    for region in poisoned:  # ... and are poisoned before the next run reuses them
        np.frombuffer(region, dtype=np.float32)[:] = np.nan
    second = sweep.acoustic(**problem, impl="c", n_threads=1)
    fields = [second.state["u"], second.state["u_prev"], *second.state["zeta"]]
    reused = [f for f in fields if any(lo <= f.ctypes.data < hi for lo, hi in spans)]
    assert len(reused) >= 2
    assert np.array_equal(second.receivers, reference.receivers)
    for key in ("u", "u_prev"):
        assert np.array_equal(second.state[key], reference.state[key])
    assert np.array_equal(kept, kept_copy)  # the field still viewed was not reused


def test_planner_counts_cached_stores_as_free(empty_cache, monkeypatch):
    """A loop that frees each call's results keeps the plan it started with: the
    store the last call released is resident (the kernel does not count it as
    available) but reused or unmapped before anything else is mapped."""
    from sweep import _memory

    problem = _store_problem()
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c", n_threads=1)
    store = out.memory_plan.storage_bytes
    assert out.memory_plan.strategy == "full" and store >= 4 << 20
    del out, pullback
    # The kernel's view: 1.5 stores free besides what the process holds.
    free = int(1.5 * store / 0.8)
    monkeypatch.setattr(_memory, "_kernel_available", lambda: free - _hostmem.cached_bytes())
    for _ in range(3):
        out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c", n_threads=1)
        assert _hostmem.cached_bytes() == 0  # the released store was taken again
        assert out.memory_plan.strategy == "full", out.memory_plan.reason
        del out, pullback
        assert _hostmem.cached_bytes() >= store


def test_huge_pages_are_asked_for_only_where_they_fault_in_faster(monkeypatch):
    """_map advises MADV_HUGEPAGE per one timing of both page sizes per process."""
    timings = {True: 2.0, False: 1.0}  # huge pages slower
    monkeypatch.setattr(_hostmem, "_first_touch", lambda huge: timings[huge])
    monkeypatch.setattr(_hostmem, "_huge_verdict", [])
    assert _hostmem._huge_pages_pay() is False
    timings[True] = 0.5
    assert _hostmem._huge_pages_pay() is False  # decided once per process
    monkeypatch.setattr(_hostmem, "_huge_verdict", [])
    assert _hostmem._huge_pages_pay() is True
    # 4 KiB pages that fault in quickly are kept, however fast huge pages
    # looked (a huge page the host still backs is no guide to the next ones).
    small = _hostmem._SLOW_SMALL_PAGES * _hostmem._PROBE_PAGES
    timings.update({False: 0.5 * small, True: 0.01 * small})
    monkeypatch.setattr(_hostmem, "_huge_verdict", [])
    assert _hostmem._huge_pages_pay() is False
    advised = []
    real = _hostmem._anonymous

    def anonymous(nbytes, huge):
        advised.append(huge)
        return real(nbytes, huge)

    monkeypatch.setattr(_hostmem, "_anonymous", anonymous)
    for verdict in (False, True):
        monkeypatch.setattr(_hostmem, "_huge_verdict", [verdict])
        _hostmem._map(8 << 20).close()
    assert advised == [False, True]


def test_first_touch_times_fresh_memory():
    for huge in (False, True):
        seconds = _hostmem._first_touch(huge)
        assert 0 < seconds < 10


def test_mid_size_fields_are_cached_zeroed_and_counted_while_in_use(empty_cache):
    """Fields from 256 KiB on (below the 4 MiB of huge pages) come back from the cache.

    They are zeroed again when reused, and tracemalloc counts one while it is
    handed out, even when its mapping was made before tracing started (the
    memory estimate's tests measure peaks with tracemalloc).
    """
    import tracemalloc

    shape = (2, 200, 200)  # 320 KB of float32
    nbytes = 2 * 200 * 200 * 4
    a = _hostmem.zeros(shape, np.float32, phase=1088)
    address = a.ctypes.data
    a[...] = 5
    del a
    assert _hostmem.cached_bytes() >= nbytes
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        b = _hostmem.zeros(shape, np.float32, phase=1088)
        assert b.ctypes.data == address and not b.any()
        assert tracemalloc.get_traced_memory()[0] - before >= nbytes
        del b
        assert tracemalloc.get_traced_memory()[0] - before < nbytes
    finally:
        tracemalloc.stop()
    small = _hostmem.zeros((2, 100, 100), np.float32)  # 80 KB: the ordinary allocator
    assert not any(
        lo <= small.ctypes.data < lo + len(r)
        for r in _hostmem._fields.regions
        for lo in [_address(r)]
    )


def _resident_pages(x: np.ndarray) -> int:
    """Pages of ``x`` (C-contiguous) that are resident (``mincore``)."""
    mincore = ctypes.CDLL(None).mincore
    mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    base = x.ctypes.data - x.ctypes.data % 4096
    npages = -(-(x.ctypes.data + x.nbytes - base) // 4096)
    vec = np.zeros(npages, dtype=np.uint8)
    assert mincore(base, npages * 4096, vec.ctypes.data) == 0
    return int((vec & 1).sum())


def test_reused_field_is_zero_and_faults_in_no_page_its_last_user_left_alone(empty_cache):
    """A reused field is zeroed where it was written and its untouched pages stay out.

    Each slot (page offset) gets back the mapping it had, so a field that a
    kernel uses in part (C-PML memory variables) does not grow on reuse.
    """
    shape = (3, 1100, 1000)  # 13 MB: huge-page size, still checked per 4 KiB page
    a = _hostmem.zeros(shape, np.float32, phase=1088)
    b = _hostmem.zeros(shape, np.float32, phase=2176)
    address_a, address_b = a.ctypes.data, b.ctypes.data
    a[0, 100:300] = 5.0  # part of a
    a[2, -1, -1] = 7.0  # its last element
    b[...] = 3.0
    resident = _resident_pages(a)
    del a, b
    b2 = _hostmem.zeros(shape, np.float32, phase=2176)  # asked for first: still its own
    a2 = _hostmem.zeros(shape, np.float32, phase=1088)
    assert (a2.ctypes.data, b2.ctypes.data) == (address_a, address_b)
    if not _hostmem._huge_pages_pay():  # on huge pages residency is per 2 MiB
        assert _resident_pages(a2) <= resident
    assert not a2.any() and not b2.any()
    del a2
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a2 = _hostmem.zeros(shape, np.float32, phase=1088)  # read all over (zero pages): not written
    assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults < 100  # 3,200 pages
    assert not a2.any()
    del a2, b2
    assert len(_hostmem._fields.regions) >= 2
    for region in list(_hostmem._fields.regions):
        np.frombuffer(region, dtype=np.uint8)[:] = 1  # what the last user left: zeroed on reuse
    for phase in (1088, 4092, 0):  # another slot gets another's mapping, zeroed
        c = _hostmem.zeros(shape, np.float32, phase=phase)
        assert not c.any()
        c[...] = np.nan
        del c


def test_unclaimed_fresh_arrays_are_forgotten_when_released(empty_cache, monkeypatch):
    # claim_fresh's set must not keep the address of a mapping that is gone:
    # neither an uncached one (unmapped) nor a cached one (reused: not fresh).
    for cache in ("0", "1"):
        monkeypatch.setenv("SWEEP_STORE_CACHE", cache)
        a = _hostmem.zeros((3, 1100, 1000), np.float32)
        address = a.ctypes.data
        assert address in _hostmem._fresh
        del a
        gc.collect()
        assert address not in _hostmem._fresh


def test_scratch_arrays_reuse_their_mappings_apart_from_fields(empty_cache):
    """A released scratch array's mapping is handed out again (contents as left).

    Its pool is its own: a scratch array of another size does not empty the
    fields' cache, and ``release_cached_memory`` frees both.
    """
    _hostmem.keep_scratch(True)  # as under full storage
    field = _hostmem.zeros((2, 200, 200), np.float32, phase=1088)
    del field
    fields = _hostmem._fields.nbytes()
    assert fields > 0
    a = _hostmem.scratch((3, 300, 300), np.float64)
    a[...] = 7.0
    address = a.ctypes.data
    del a
    assert _hostmem._fields.nbytes() == fields
    b = _hostmem.scratch((3, 300, 300), np.float64)
    assert b.ctypes.data == address and bool((b == 7.0).all())
    del b
    assert _hostmem.cached_bytes() >= fields + 3 * 300 * 300 * 8
    small = _hostmem.scratch((10, 10), np.float64)  # below 256 KiB: np.empty
    assert small.shape == (10, 10) and _hostmem._scratch.nbytes() == 3 * 300 * 300 * 8
    assert sweep.release_cached_memory() >= fields + 3 * 300 * 300 * 8
    assert _hostmem.cached_bytes() == 0
    a = _hostmem.scratch((3, 300, 300), np.float64)
    del a
    _hostmem.keep_scratch(False)  # as a forward without full storage: freed, not cached
    assert _hostmem.cached_bytes() == 0
    b = _hostmem.scratch((3, 300, 300), np.float64)
    del b
    assert _hostmem.cached_bytes() == 0
    _hostmem.keep_scratch(True)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_reused_field_is_zeroed_by_the_kernels_helper_and_numpy_alike(
    empty_cache, monkeypatch, compiled, threads
):
    """``_zero_resident`` on ``sweep._C`` (OpenMP) or NumPy: zero, no page faulted in."""
    if not compiled:
        monkeypatch.setattr(_hostmem, "_compiled_zeroing", lambda: None)
    shape = (2, 700, 1000)  # 5.6 MB
    a = _hostmem.zeros(shape, np.float32, phase=1088)
    address = a.ctypes.data
    a[0, 10:200] = 2.0
    a[1, 300:301] = -0.0  # a page holding only a negative zero is written too
    a[1, -1, -1] = 1.0
    resident = _resident_pages(a)
    del a
    a = _hostmem.zeros(shape, np.float32, phase=1088, threads=threads)
    assert a.ctypes.data == address
    if not _hostmem._huge_pages_pay():
        assert _resident_pages(a) <= resident
    assert not a.view(np.uint32).any()  # no -0.0 left either


def test_the_kernels_helper_writes_only_resident_pages_with_data():
    from sweep import _C

    pages = np.zeros((6, 512), np.uint64)
    pages[[1, 2, 4], 7] = 3
    base = pages.ctypes.data
    assert base % 8 == 0
    resident = np.array([1, 1, 0, 1, 1, 1], np.uint8)  # page 2 "not resident": left alone
    assert _C.zero_written_pages(base, 4096, resident, 2) == 2
    assert pages[2, 7] == 3 and np.count_nonzero(pages) == 1
    with pytest.raises(ValueError):
        _C.zero_written_pages(base, 100, resident, 1)


def test_settling_the_heap_is_harmless_and_once():
    _hostmem.settle_heap()
    _hostmem.settle_heap()
    assert _hostmem._heap_settled == [True]
    x = np.ones(3 << 20, np.float32)  # 12 MB: from the heap now, still an ordinary array
    assert float(x.sum()) == 3 << 20
