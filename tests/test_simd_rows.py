"""The CPU's explicit-vector rows give bitwise the scalar rows' results."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import sweep
from sweep.propagator.options import BoundaryOptions, MemoryOptions
from sweep.testing import random_problem

pytest.importorskip("sweep._C", reason="compiled kernels not built")

BOUNDARY = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())


def _wide_problem(ndim, dtype, order, nx, free_surface=False, equation="acoustic"):
    """random_problem with a long x axis (nx model cells): rows long enough
    for the vector rows' interior loads as well as their row-end cases."""
    problem = random_problem(
        ndim, dtype, n_shots=2, nt=40, accuracy=order, free_surface=free_surface,
        equation=equation,
    )  # fmt: skip
    shape = (22, nx) if ndim == 2 else (12, 13, nx)
    rng = np.random.default_rng(3)
    vp = (1500.0 + 500.0 * rng.random(shape)).astype(dtype)
    if equation == "lsrtm":
        problem["vp"] = vp
        problem["mp"] = (0.1 * rng.standard_normal(shape)).astype(dtype)
    elif equation == "vrz":
        problem["vp"] = vp
        problem["z"] = ((1000.0 + 600.0 * rng.random(shape)) * vp).astype(dtype)
    else:
        problem["v"] = vp
    # x faces wide enough for whole vectors in the x-CPML segments, and uneven.
    problem["pml_width"] = [5] * (2 * ndim - 2) + [13, 22]
    return problem


def _run(problem, flag, monkeypatch, **memory):
    monkeypatch.setenv("SWEEP_SIMD_ROWS", flag)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c", n_threads=1, **memory)
    d = np.random.default_rng(1).standard_normal(out.receivers.shape).astype(out.receivers.dtype)
    grads = pullback(d)
    return [out.receivers, np.asarray(out.wavefield), grads["v"], grads["source_amplitudes"]]


@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 4, 6, 8))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_vector_rows_are_bitwise_scalar_rows(ndim, order, dtype, monkeypatch):
    # 61: a scalar tail after the last vector; 64 + order: the plain x range is
    # 64 cells (whole vectors), so the last vector takes the row-end load.
    for nx, memory in itertools.product((61, 64 + order), ({}, {"memory": BOUNDARY})):
        problem = _wide_problem(ndim, dtype, order, nx, free_surface=order == 4)
        ref = _run(problem, "0", monkeypatch, **memory)
        got = _run(problem, "1", monkeypatch, **memory)
        for a, b in zip(ref, got, strict=True):
            assert np.array_equal(a, b), (nx, memory)
        assert np.abs(ref[2]).max() > 0


def _run_born(problem, flag, monkeypatch):
    monkeypatch.setenv("SWEEP_SIMD_ROWS", flag)
    kw = dict(problem)
    vp, mp = kw.pop("vp"), kw.pop("mp")
    out, pullback = sweep.vjp(sweep.lsrtm, vp, mp, **kw, impl="c", n_threads=1)
    d = np.random.default_rng(1).standard_normal(out.receivers.shape).astype(out.receivers.dtype)
    grads = pullback(d)
    return [out.receivers, out.background_receivers, np.asarray(out.wavefield),
            np.asarray(out.background_wavefield), grads["vp"], grads["mp"],
            grads["source_amplitudes"]]  # fmt: skip


@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 4, 6, 8))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_born_vector_rows_are_bitwise_scalar_rows(ndim, order, dtype, monkeypatch):
    """LSRTM (acoustic's rows on both fields plus the scattering terms), forward and gradients."""
    for nx in (61, 64 + order):
        problem = _wide_problem(ndim, dtype, order, nx, free_surface=order == 4, equation="lsrtm")
        ref = _run_born(problem, "0", monkeypatch)
        got = _run_born(problem, "1", monkeypatch)
        for k, (a, b) in enumerate(zip(ref, got, strict=True)):
            assert np.array_equal(a, b), (nx, k)
        assert np.abs(ref[0]).max() > 0 and np.abs(ref[5]).max() > 0


def _run_vrz(problem, flag, monkeypatch, **memory):
    monkeypatch.setenv("SWEEP_SIMD_ROWS", flag)
    kw = dict(problem)
    vp, z = kw.pop("vp"), kw.pop("z")
    out, pullback = sweep.vjp(sweep.vrz, vp, z, **kw, impl="c", n_threads=1, **memory)
    d = np.random.default_rng(1).standard_normal(out.receivers.shape).astype(out.receivers.dtype)
    grads = pullback(d)
    return [out.receivers, np.asarray(out.wavefield), grads["vp"], grads["z"],
            grads["source_amplitudes"]]  # fmt: skip


@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 4, 6, 8))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_vrz_vector_rows_are_bitwise_scalar_rows(ndim, order, dtype, monkeypatch):
    """VRZ's forward (acoustic's vector rows with its flux operator, B in a window of its
    own): receivers, wavefield, and the gradients from its snapshots' W."""
    for nx, memory in itertools.product((61, 64 + order), ({}, {"memory": BOUNDARY})):
        problem = _wide_problem(ndim, dtype, order, nx, free_surface=order == 4, equation="vrz")
        ref = _run_vrz(problem, "0", monkeypatch, **memory)
        got = _run_vrz(problem, "1", monkeypatch, **memory)
        for k, (a, b) in enumerate(zip(ref, got, strict=True)):
            assert np.array_equal(a, b), (nx, memory, k)
        assert np.abs(ref[0]).max() > 0 and np.abs(ref[3]).max() > 0


def test_simd_rows_setting_is_checked(monkeypatch):
    monkeypatch.setenv("SWEEP_SIMD_ROWS", "yes")
    problem = random_problem(2, nt=5)
    with pytest.raises(ValueError, match="SWEEP_SIMD_ROWS"):
        sweep.acoustic(**problem, impl="c")
