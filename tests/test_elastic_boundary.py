"""Boundary saving of the compiled elastic propagator against full storage.

The plain cells' fields run backwards in the adjoint pass (the velocity-stress
update undone), the CPML is replayed forward from saved states with the
band's saved fields as its inner boundary (``sweep_cy/cpu_phased.h``).  The
reconstruction is exact in exact arithmetic, so its gradients equal full
storage's to round-off (float64: ~1e-12 of the largest entry; float32: ~1e-6
on short runs, growing with nt), the receivers and the source gradient bitwise (the adjoint fields
do not depend on the snapshots).  Every source and receiver kind (DAS strain
rates and a fibre included), free surfaces on any face, fluid cells
(``vs = 0``), 2D and 3D, every order.
"""

from __future__ import annotations

import gc
import os
import warnings

import numpy as np
import pytest

import sweep
from sweep.das import Fibre
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions

pytest.importorskip("sweep._C")

BOUNDARY = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())
BOUNDARY_DISK = MemoryOptions(strategy="boundary", boundary=BoundaryOptions(storage="disk"))


def _problem(ndim, order, nt=40, dtype=np.float64, free=(), src=("fz", "p"), rec=("vz",),
             water=False, pml=(4, 5), fibre=False):  # fmt: skip
    """Two shots; sources and receivers near the model's edges (in the band and the
    C-PML-term cells) as well as inside."""
    rng = np.random.default_rng(1)
    shape = (20, 24) if ndim == 2 else (13, 11, 15)
    vp = 1800 + 300 * rng.random(shape)
    vs = vp / (1.8 + 0.3 * rng.random(shape))
    if water:
        vs[:3] = 0.0  # a water layer
    rho = 1000 + 500 * rng.random(shape)
    mid = [5] * (ndim - 2)
    last = shape[-1] - 1
    src_loc = np.array([[[6 + s, *mid, 8], [1, *mid, last - 1 - s]] for s in range(2)])
    rec_loc = np.array([[[0, *mid, 3], [10, *mid, 10], [shape[0] - 1, *mid, 0]]] * 2)
    faces = [False] * (2 * ndim)
    for f in free:
        faces[f] = True
    kw = dict(
        source_amplitudes=rng.standard_normal((2, 2, nt)).astype(dtype),
        source_locations=src_loc[:, : len(src)],
        receiver_locations=rec_loc[:, : len(rec)],
        accuracy=order,
        pml_width=list(pml) * ndim,
        free_surface=faces,
        source_kind=list(src),
        receiver_kind=list(rec),
    )
    kw["source_amplitudes"] = kw["source_amplitudes"][:, : len(src)]
    if fibre:
        h = 5.0
        kw["fibre"] = Fibre([[2 * h, 2 * h], [14 * h, 20 * h]], channel_spacing=2 * h)
        kw["gauge_length"] = 2 * h
    return [m.astype(dtype) for m in (vp, vs, rho)], 5.0, 0.0008, kw


def _vjp(models, dx, dt, kw, **memory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coarse test grids: dispersion warnings
        out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", **kw, **memory)
        d = np.random.default_rng(2).standard_normal(np.shape(out.receivers))
        return out, pullback(d.astype(np.asarray(out.receivers).dtype))


def _check(models, dx, dt, kw, rtol=1e-12, reference=None):
    out0, ref = _vjp(models, dx, dt, kw, **(reference or {"storage_mode": "device"}))
    out, got = _vjp(models, dx, dt, kw, memory=BOUNDARY)
    assert out.memory_plan.strategy == "boundary"
    assert np.array_equal(np.asarray(out.receivers), np.asarray(out0.receivers))
    for key in ("vp", "vs", "rho"):
        scale = np.abs(ref[key]).max()
        assert scale > 0, key
        err = np.abs(got[key] - ref[key]).max() / scale
        assert err <= rtol, (key, err)
    assert np.array_equal(got["source_amplitudes"], ref["source_amplitudes"])
    return got, ref


@pytest.mark.parametrize(
    ("ndim", "order", "free", "src", "rec"),
    [
        (2, 2, (), ("fz", "fx"), ("vz", "vx", "p")),
        (2, 4, (0,), ("fz", "p"), ("szz", "sxz", "exx")),
        (2, 6, (1, 2), ("fx", "p"), ("sxx", "ezz", "exz")),
        (2, 8, (0, 1, 2, 3), ("p", "fz"), ("vx", "exx", "p")),
        (3, 4, (0,), ("fy", "p"), ("vy", "syz", "eyy")),
        (3, 8, (5,), ("fx", "fz"), ("sxy", "exy", "p")),
        (3, 2, (), ("fz", "fy"), ("vz", "szz", "eyz")),
    ],
)
def test_boundary_saving_matches_full_storage(ndim, order, free, src, rec):
    _check(*_problem(ndim, order, free=free, src=src, rec=rec))


@pytest.mark.parametrize("free", [(), (0,)])
def test_water_layer_and_fibre(free):
    _check(*_problem(2, 4, free=free, water=True, fibre=True, rec=("p", "vz")))


def test_agrees_with_checkpointing_and_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    ckpt = MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=3))
    models, dx, dt, kw = _problem(2, 4, free=(0,), rec=("vz", "exx"))
    got, _ = _check(models, dx, dt, kw, reference={"memory": ckpt})
    _, disk = _vjp(models, dx, dt, kw, memory=BOUNDARY_DISK)
    for key in got:
        assert np.array_equal(disk[key], got[key]), key
    gc.collect()
    assert not os.listdir(tmp_path)


def test_float32():
    """Round-off of the reconstruction in float32: ~1e-6 of the largest entry (measured 9e-7)."""
    _check(*_problem(2, 8, nt=120, dtype=np.float32, free=(0,), rec=("vz", "p")), rtol=1e-5)


def test_narrow_models_without_plain_cells():
    """A model narrower than two halos has no plain cell: everything is replayed."""
    models, dx, dt, kw = _problem(2, 8, nt=20, rec=("vz",))
    models = [m[:7, :9].copy() for m in models]
    kw["source_locations"] = np.array([[[3, 3], [1, 8]]] * 2)
    kw["receiver_locations"] = np.array([[[2, 2]]] * 2)
    _check(models, dx, dt, kw)


def test_planner_considers_boundary_saving():
    models, dx, dt, kw = _problem(2, 4, nt=200, rec=("vz",))
    models = [np.tile(m, (3, 3)) for m in models]
    est = sweep.estimate_memory(sweep.elastic, *models, dx, dt, impl="c", **kw)
    assert "boundary" in est.strategies
    assert est.strategies["boundary"] < est.strategies["full"]
    limit = (est.strategies["boundary"] + est.strategies["full"]) // 2
    out, _ = _vjp(models, dx, dt, kw, storage_bytes_limit_device=limit,
                  storage_bytes_limit_host=limit)  # fmt: skip
    assert out.memory_plan.strategy == "boundary"


def test_files_removed_when_interrupted(tmp_path, monkeypatch):
    from sweep.equations.elastic.compiled import CompiledElastic

    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    models, dx, dt, kw = _problem(2, 4, nt=60, rec=("vz",))
    real = CompiledElastic.forward_steps
    calls = []

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, *args, **kwargs)

    monkeypatch.setattr(CompiledElastic, "forward_steps", interrupted)
    with pytest.raises(KeyboardInterrupt):
        sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", **kw, memory=BOUNDARY_DISK,
                  progress=True)  # fmt: skip
    monkeypatch.undo()
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    gc.collect()
    assert not os.listdir(tmp_path)
    out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", **kw,
                              memory=BOUNDARY_DISK)  # fmt: skip

    def broken(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(CompiledElastic, "adjoint_steps", broken)
    with pytest.raises(KeyboardInterrupt):
        pullback(np.ones_like(out.receivers))
    del pullback
    gc.collect()
    assert not os.listdir(tmp_path)


def test_threads_are_bitwise_equal():
    """One shot, so that two threads share its rows (the replay's and the reconstruction's)."""
    models, dx, dt, kw = _problem(3, 4, nt=16, free=(0,), rec=("vz", "p"))
    for key in ("source_amplitudes", "source_locations", "receiver_locations"):
        kw[key] = kw[key][:1]
    _, a = _vjp(models, dx, dt, dict(kw, n_threads=1), memory=BOUNDARY)
    _, b = _vjp(models, dx, dt, dict(kw, n_threads=2), memory=BOUNDARY)
    for key in a:
        assert np.array_equal(a[key], b[key]), key
