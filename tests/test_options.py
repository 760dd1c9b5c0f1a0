"""Validation of the PropTorch option blocks and of the backend/option matching."""

from __future__ import annotations

import pytest

from sweep import equations
from sweep.propagator import (
    BoundaryOptions,
    CkptOptions,
    CUDAOptions,
    EagerOptions,
    MemoryOptions,
)
from sweep.propagator._common import check_ckpt, chunk_sizes, make_settings, select

SPEC = equations.get("acoustic")


# -- EagerOptions --------------------------------------------------------------
def test_eager_options_defaults_match_seed():
    opts = EagerOptions()
    assert opts.use_compile is False
    assert opts.compile_mode == "default"
    assert opts.compile_dynamic is False
    assert opts.compile_backend is None
    assert opts.compile_fullgraph is False
    assert opts.store_last_wavefield is False
    assert opts.compile_kwargs() == {"mode": "default", "dynamic": False, "fullgraph": False}


def test_eager_options_compile_kwargs_backend():
    kw = EagerOptions(use_compile=True, compile_backend="aot_eager").compile_kwargs()
    assert kw["backend"] == "aot_eager"


@pytest.mark.parametrize(
    "field", ["use_compile", "compile_dynamic", "compile_fullgraph", "store_last_wavefield"]
)
def test_eager_options_flags_must_be_bool(field):
    with pytest.raises(TypeError, match=f"EagerOptions.{field} must be True or False"):
        EagerOptions(**{field: 1})


def test_eager_options_compile_mode_choices():
    for mode in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"):
        EagerOptions(compile_mode=mode)
    with pytest.raises(ValueError, match=r"EagerOptions\.compile_mode must be one of"):
        EagerOptions(compile_mode="fast")


@pytest.mark.parametrize("backend", ["", 3])
def test_eager_options_compile_backend(backend):
    with pytest.raises(
        TypeError, match=r"compile_backend must be None or a torch\.compile backend"
    ):
        EagerOptions(compile_backend=backend)


# -- BoundaryOptions -----------------------------------------------------------
def test_boundary_defaults_and_cpu_settings():
    b = BoundaryOptions()
    assert (b.storage, b.transfer_interval, b.pinned_memory) == ("gpu", 1, False)
    BoundaryOptions(storage="cpu", transfer_interval=4, pinned_memory=True)


def test_boundary_storage_choice():
    with pytest.raises(
        ValueError, match=r"BoundaryOptions\.storage must be one of 'gpu', 'cpu', 'disk'"
    ):
        BoundaryOptions(storage="ram")
    assert BoundaryOptions(storage="disk", transfer_interval=8).storage == "disk"


@pytest.mark.parametrize("interval", [0, -2])
def test_boundary_transfer_interval_at_least_one(interval):
    with pytest.raises(ValueError, match="transfer_interval must be >= 1"):
        BoundaryOptions(storage="cpu", transfer_interval=interval)


@pytest.mark.parametrize("interval", [1.0, True, "2"])
def test_boundary_transfer_interval_integer(interval):
    with pytest.raises(TypeError, match="transfer_interval must be an integer"):
        BoundaryOptions(storage="cpu", transfer_interval=interval)


def test_boundary_gpu_keeps_transfer_interval_one():
    with pytest.raises(ValueError, match="with storage='gpu' it must stay 1"):
        BoundaryOptions(storage="gpu", transfer_interval=2)


def test_boundary_gpu_forbids_pinned_memory():
    with pytest.raises(ValueError, match="pinned_memory only applies to storage='cpu'"):
        BoundaryOptions(storage="gpu", pinned_memory=True)


def test_boundary_pinned_memory_bool():
    with pytest.raises(TypeError, match="pinned_memory must be True or False"):
        BoundaryOptions(storage="cpu", pinned_memory=1)


# -- CkptOptions ---------------------------------------------------------------
def test_ckpt_defaults_and_valid_modes():
    c = CkptOptions()
    assert (c.mode, c.chunks, c.count) == ("chunk", 100, 0)
    CkptOptions(mode="chunk", chunks=1)
    CkptOptions(mode="recursive", count=3)


def test_ckpt_mode_choice():
    with pytest.raises(ValueError, match=r"CkptOptions\.mode must be one of 'chunk', 'recursive'"):
        CkptOptions(mode="binomial")


def test_ckpt_chunk_mode_needs_positive_chunks():
    with pytest.raises(ValueError, match="chunks must be >= 1 in mode='chunk'"):
        CkptOptions(mode="chunk", chunks=0)


def test_ckpt_chunk_mode_keeps_count_zero():
    with pytest.raises(ValueError, match="with mode='chunk' it must stay 0"):
        CkptOptions(mode="chunk", count=2)


def test_ckpt_recursive_mode_needs_positive_count():
    with pytest.raises(ValueError, match="count must be >= 1 in mode='recursive'"):
        CkptOptions(mode="recursive")


def test_ckpt_recursive_mode_keeps_default_chunks():
    with pytest.raises(ValueError, match="must stay at its default 100"):
        CkptOptions(mode="recursive", count=2, chunks=10)


@pytest.mark.parametrize("kw", [{"chunks": 2.5}, {"count": True}])
def test_ckpt_integers(kw):
    with pytest.raises(TypeError, match="must be an integer"):
        CkptOptions(**kw)


# -- MemoryOptions -------------------------------------------------------------
def test_memory_valid_combinations():
    MemoryOptions()
    MemoryOptions(strategy="boundary", boundary=BoundaryOptions(storage="gpu"))
    MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="chunk", chunks=100))


def test_memory_strategy_choice():
    with pytest.raises(ValueError, match=r"MemoryOptions\.strategy must be one of"):
        MemoryOptions(strategy="disk")


def test_memory_boundary_requires_block():
    with pytest.raises(ValueError, match=r"strategy='boundary'\) requires boundary="):
        MemoryOptions(strategy="boundary")


def test_memory_ckpt_requires_block():
    with pytest.raises(ValueError, match=r"strategy='ckpt'\) requires ckpt="):
        MemoryOptions(strategy="ckpt")


@pytest.mark.parametrize("strategy", [None, "boundary", "ckpt"])
def test_memory_boundary_and_ckpt_exclusive(strategy):
    with pytest.raises(ValueError, match="cannot be used at the same time"):
        MemoryOptions(strategy=strategy, boundary=BoundaryOptions(), ckpt=CkptOptions())


@pytest.mark.parametrize("kw", [{"boundary": BoundaryOptions()}, {"ckpt": CkptOptions()}])
def test_memory_no_strategy_takes_no_blocks(kw):
    with pytest.raises(ValueError, match=r"strategy=None\) takes neither boundary nor ckpt"):
        MemoryOptions(strategy=None, **kw)


def test_memory_strategy_mismatched_block():
    with pytest.raises(ValueError, match="requires boundary="):
        MemoryOptions(strategy="boundary", ckpt=CkptOptions())
    with pytest.raises(ValueError, match="requires ckpt="):
        MemoryOptions(strategy="ckpt", boundary=BoundaryOptions())


def test_memory_block_types():
    with pytest.raises(TypeError, match=r"MemoryOptions\.boundary must be a BoundaryOptions"):
        MemoryOptions(strategy="boundary", boundary={"storage": "gpu"})
    with pytest.raises(TypeError, match=r"MemoryOptions\.ckpt must be a CkptOptions"):
        MemoryOptions(strategy="ckpt", ckpt=5)


# -- CUDAOptions ---------------------------------------------------------------
def test_cuda_options():
    assert CUDAOptions().memory is None
    CUDAOptions(memory=MemoryOptions(strategy="boundary", boundary=BoundaryOptions()))
    with pytest.raises(TypeError, match=r"CUDAOptions\.memory must be a MemoryOptions or None"):
        CUDAOptions(memory="boundary")


# -- backend / option matching (framework-neutral part of PropTorch) -----------
def _select(backend="torch", impl=None, eager=None, cuda=None, both=None, use_ckpt=False):
    return select(SPEC, backend, impl, eager, cuda, both, use_ckpt)


@pytest.mark.parametrize(
    ("backend", "impl", "wanted"),
    [
        ("torch", None, None),
        ("torch", "auto", None),
        ("torch", "c", "c"),
        ("torch", "eager", "eager"),
        ("eager", None, "eager"),
        ("eager", "eager", "eager"),
        ("cuda", None, "c"),
        ("cuda", "auto", "c"),
        ("cuda", "c", "c"),
    ],
)
def test_select_backend_to_impl(backend, impl, wanted):
    assert _select(backend, impl)[0] == wanted


def test_select_unknown_backend_and_impl():
    with pytest.raises(ValueError, match="backend must be 'torch', 'eager' or 'cuda'"):
        _select("numpy")
    with pytest.raises(ValueError, match=r"use sweep\.propagator\.jax\.PropJax"):
        _select("jax")
    with pytest.raises(ValueError, match="impl must be one of"):
        _select("torch", "cython")


@pytest.mark.parametrize(("backend", "impl"), [("eager", "c"), ("cuda", "eager")])
def test_select_backend_conflicts_with_impl(backend, impl):
    with pytest.raises(ValueError, match=f"backend='{backend}' selects impl="):
        _select(backend, impl)


def test_select_eager_options_need_eager_backend():
    with pytest.raises(ValueError, match="EagerOptions configure the eager implementation"):
        _select("cuda", eager=EagerOptions())
    with pytest.raises(ValueError, match="EagerOptions configure the eager implementation"):
        _select("torch", "c", both=EagerOptions())


def test_select_cuda_options_need_compiled_backend():
    with pytest.raises(ValueError, match="CUDAOptions configure the compiled implementation"):
        _select("eager", cuda=CUDAOptions())
    with pytest.raises(ValueError, match="CUDAOptions configure the compiled implementation"):
        _select("torch", "eager", both=CUDAOptions())


def test_select_use_ckpt_is_eager_only():
    with pytest.raises(ValueError, match="use_ckpt checkpoints the eager time loop"):
        _select("cuda", use_ckpt=True)


def test_select_backend_options_routing():
    eager, cuda = EagerOptions(use_compile=True), CUDAOptions()
    assert _select("eager", both=eager)[1:] == (eager, None)
    assert _select("cuda", both=cuda)[1:] == (None, cuda)
    # auto accepts both blocks; the one matching the resolved impl is used
    assert _select("torch", eager=eager, cuda=cuda)[1:] == (eager, cuda)


def test_select_backend_options_errors():
    with pytest.raises(TypeError, match="backend_options must be an EagerOptions or a CUDAOptions"):
        _select(both={"use_compile": True})
    with pytest.raises(ValueError, match="EagerOptions given twice"):
        _select("eager", eager=EagerOptions(), both=EagerOptions())
    with pytest.raises(ValueError, match="CUDAOptions given twice"):
        _select("cuda", cuda=CUDAOptions(), both=CUDAOptions())
    with pytest.raises(TypeError, match="eager_options must be a EagerOptions"):
        _select(eager=CUDAOptions())
    with pytest.raises(TypeError, match="cuda_options must be a CUDAOptions"):
        _select(cuda=EagerOptions())


def test_select_uncompiled_equation(monkeypatch):
    spec = equations.EquationSpec("toy", compiled=False, entry="toy:toy")
    assert select(spec, "torch", None, None, None, None, False)[0] == "eager"
    with pytest.raises(ValueError, match="has no compiled implementation"):
        select(spec, "cuda", None, None, None, None, False)


def test_check_ckpt():
    check_ckpt(True, None)
    check_ckpt(False, 3)
    with pytest.raises(TypeError, match="use_ckpt must be True or False"):
        check_ckpt(1, None)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="ckpt_chunks must be None or a positive integer"):
            check_ckpt(True, bad)


def test_chunk_sizes():
    assert chunk_sizes(10, 3) == [4, 3, 3]
    assert chunk_sizes(5, 10) == [1] * 5
    assert sum(chunk_sizes(37, None)) == 37
    assert len(chunk_sizes(36, None)) == 6


def test_make_settings_rejects_unknown_and_reserved():
    with pytest.raises(TypeError, match="did you mean 'accuracy'"):
        make_settings("acoustic", 1.0, 1e-3, None, None, {"acuracy": 4})
    with pytest.raises(TypeError, match="pass source_amplitudes to the call"):
        make_settings("acoustic", 1.0, 1e-3, None, None, {"source_amplitudes": None})
    with pytest.raises(ValueError, match="did you mean 'acoustic'"):
        make_settings("acoustc", 1.0, 1e-3, None, None, {})
