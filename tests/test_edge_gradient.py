"""The model gradient is the derivative of sweep.acoustic at every cell, edge cells included.

The CPML repeats the edge cells' velocities outward, so a change of an edge
cell changes the CPML too; these checks perturb the edge cells only (where
that matters) and compare with central differences, for every memory
strategy, implementation and free-surface setting.
"""

import numpy as np
import pytest

import sweep
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import random_problem

STRATEGIES = {
    "full": {},
    "full-disk": {"storage_mode": "disk"},
    "boundary": {"memory": MemoryOptions(strategy="boundary", boundary=BoundaryOptions())},
    "boundary-disk": {
        "memory": MemoryOptions(strategy="boundary", boundary=BoundaryOptions(storage="disk"))
    },
    "ckpt-chunk": {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=7))},
    "ckpt-recursive": {
        "memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3))
    },
}
FREE = {
    2: [False, (True, False, False, True)],
    3: [False, (True, False, False, False, False, True)],
}


def _edge_mask(shape):
    mask = np.zeros(shape)
    for d in range(len(shape)):
        sl = [slice(None)] * len(shape)
        for index in (0, -1):
            sl[d] = index
            mask[tuple(sl)] = 1.0
    return mask


def _near_edges(problem):
    """Sources and receivers one cell inside the corners, so every edge has a large gradient."""
    shape = problem["v"].shape
    corners = (
        np.array(np.meshgrid(*[[1, n - 2] for n in shape], indexing="ij")).reshape(len(shape), -1).T
    )
    n_shots = problem["source_amplitudes"].shape[0]
    src = np.stack([corners[[0, -1]], corners[[1, -2]]])[:n_shots]
    rec = np.broadcast_to(corners, (n_shots, *corners.shape))
    return dict(problem, source_locations=src, receiver_locations=rec)


def _objective(problem, d, impl, **kw):
    return float(np.vdot(d, sweep.acoustic(**problem, impl=impl, **kw).receivers))


def _directional_check(problem, impl="c", **kw):
    """Gap between <g, dv> and the central difference of J along an edge-only dv.

    Relative to sum |g dv|, which the terms of <g, dv> cannot cancel below.
    """
    rng = np.random.default_rng(5)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl=impl, **kw)
    d = np.asarray(out.receivers).copy()
    g = np.asarray(pullback(d)["v"])
    dv = rng.standard_normal(problem["v"].shape) * _edge_mask(problem["v"].shape)
    h = 1e-2
    jp = _objective(dict(problem, v=problem["v"] + h * dv), d, impl)
    jm = _objective(dict(problem, v=problem["v"] - h * dv), d, impl)
    fd = (jp - jm) / (2 * h)
    return abs(np.vdot(g, dv) - fd) / np.abs(g * dv).sum()


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("strategy", list(STRATEGIES))
@pytest.mark.parametrize("free_index", [0, 1])
def test_edge_cells_match_central_differences(ndim, strategy, free_index, tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    problem = random_problem(ndim, accuracy=4, free_surface=FREE[ndim][free_index], nt=50)
    assert _directional_check(_near_edges(problem), **STRATEGIES[strategy]) < 1e-7


@pytest.mark.parametrize("order", [2, 8])
def test_every_edge_cell_matches_its_central_difference(order):
    """Cell by cell over all edge cells of a 2D model (the corners get three CPML shares)."""
    problem = random_problem(2, accuracy=order, nt=40, n_shots=1)
    problem["v"] = problem["v"][:10, :12].copy()
    problem["source_locations"] = np.array([[[1, 3], [8, 0]]])
    problem["receiver_locations"] = np.array([[[0, 0], [9, 11], [0, 6]]])
    out, pullback = sweep.vjp(sweep.acoustic, **problem)
    d = out.receivers.copy()
    g = pullback(d)["v"]
    h = 1e-2
    for cell in zip(*np.nonzero(_edge_mask(problem["v"].shape)), strict=True):
        e = np.zeros_like(problem["v"])
        e[cell] = h
        fd = (
            _objective(dict(problem, v=problem["v"] + e), d, "c")
            - _objective(dict(problem, v=problem["v"] - e), d, "c")
        ) / (2 * h)
        assert abs(g[cell] - fd) <= 1e-7 * np.abs(g).max(), (cell, g[cell], fd)


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("free_index", [0, 1])
def test_eager_edge_cells_match_central_differences(ndim, free_index):
    torch = pytest.importorskip("torch")
    problem = _near_edges(
        random_problem(ndim, accuracy=4, free_surface=FREE[ndim][free_index], nt=40)
    )
    tp = {
        k: torch.from_numpy(x) if k in ("v", "source_amplitudes") else x for k, x in problem.items()
    }
    out, pullback = sweep.vjp(sweep.acoustic, **tp, impl="eager")
    d = out.receivers.detach().clone()
    g = pullback(d)["v"].numpy()
    rng = np.random.default_rng(5)
    dv = rng.standard_normal(problem["v"].shape) * _edge_mask(problem["v"].shape)
    h = 1e-2

    def j(v):
        return float(
            (d * sweep.acoustic(**dict(tp, v=torch.from_numpy(v)), impl="eager").receivers).sum()
        )

    fd = (j(problem["v"] + h * dv) - j(problem["v"] - h * dv)) / (2 * h)
    assert abs(np.vdot(g, dv) - fd) < 1e-7 * np.abs(g * dv).sum()


@pytest.mark.parametrize("ndim", [2, 3])
def test_eager_and_c_agree_on_edge_cells(ndim):
    torch = pytest.importorskip("torch")
    problem = random_problem(ndim, accuracy=4, nt=30)
    rng = np.random.default_rng(3)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c")
    d = rng.standard_normal(out.receivers.shape)
    gc = pullback(d)["v"]
    tp = {
        k: torch.from_numpy(x) if k in ("v", "source_amplitudes") else x for k, x in problem.items()
    }
    _, pb = sweep.vjp(sweep.acoustic, **tp, impl="eager")
    ge = pb(torch.from_numpy(d))["v"].numpy()
    np.testing.assert_allclose(gc, ge, rtol=0, atol=1e-10 * np.abs(ge).max())


def test_float32_edge_gradient_matches_float64():
    problem = random_problem(2, accuracy=4, nt=50)
    rng = np.random.default_rng(4)
    out, pullback = sweep.vjp(sweep.acoustic, **problem)
    d = rng.standard_normal(out.receivers.shape)
    g64 = pullback(d)["v"]
    p32 = dict(
        problem,
        v=problem["v"].astype(np.float32),
        source_amplitudes=problem["source_amplitudes"].astype(np.float32),
    )
    _, pb32 = sweep.vjp(sweep.acoustic, **p32)
    g32 = pb32(d.astype(np.float32))["v"]
    edge = _edge_mask(g64.shape) > 0
    assert np.linalg.norm(g32[edge] - g64[edge]) < 1e-5 * np.linalg.norm(g64[edge])


def _padded_gradient(problem, memory):
    """sum mu W per padded cell (before the division by v^2 dt^2 and the fold), n_threads 1."""
    from sweep import _memory
    from sweep._compiled import CompiledAcoustic
    from sweep.equations.acoustic.propagator import _prepare

    args = dict(problem)
    v, spacing, dt = args.pop("v"), args.pop("grid_spacing"), args.pop("dt")
    call = _prepare(
        v, spacing, dt, **args, nt=None, impl="c", n_threads=1, progress=False, memory=memory,
        storage_mode="auto", storage_compression=False, model_gradient_sampling_interval=1,
        storage_bytes_limit_device=None, storage_bytes_limit_host=None,
    )  # fmt: skip
    engine = CompiledAcoustic(call.geom, np, np.float64, 1)
    v2dt2 = engine.kernel_v2dt2(call.geom.pad_v2dt2(v))
    plan = _memory.plan(engine, call.memory)
    amp = problem["source_amplitudes"]
    receivers, _, tape = _memory.forward(engine, v2dt2, amp, plan, False)
    d = np.random.default_rng(9).standard_normal(receivers.shape)
    g, _ = _memory.backward(engine, tape, d, model=True, source=False, progress=False)
    return np.asarray(g), call.geom


@pytest.mark.parametrize("ndim", [2, 3])
def test_boundary_cpml_gradient_is_bitwise_full_storage(ndim):
    """The replay gives the CPML cells' W bitwise, so their correlations are equal bitwise.

    Model cells differ by the round-off of the time reversal.
    """
    problem = random_problem(ndim, accuracy=4, nt=45, free_surface=FREE[ndim][1])
    full, geom = _padded_gradient(problem, None)
    bnd, _ = _padded_gradient(problem, STRATEGIES["boundary"]["memory"])
    cpml = np.ones(geom.padded_shape, dtype=bool)
    cpml[geom.model_slices()] = False
    assert np.abs(full[cpml]).max() > 0
    np.testing.assert_array_equal(full[cpml], bnd[cpml])


@pytest.mark.parametrize("n_shots", [1, 3])
def test_boundary_replay_on_a_model_narrower_than_a_halo(n_shots):
    """A 2-cell-wide model with a CPML on one x face only (plain ranges reach past the stored
    cells): boundary saving's CPML correlations still equal full storage's bitwise."""
    problem = random_problem(2, accuracy=8, nt=40, n_shots=n_shots, free_surface=False)
    problem["v"] = np.ascontiguousarray(problem["v"][:, :2])
    problem["pml_width"] = (3, 3, 20, 0)
    problem["source_locations"] = np.stack([[[5, 0]]] * n_shots).repeat(2, axis=1)
    problem["receiver_locations"] = np.stack([[[2, 0], [9, 1], [20, 0]]] * n_shots)
    full, geom = _padded_gradient(problem, None)
    bnd, _ = _padded_gradient(problem, STRATEGIES["boundary"]["memory"])
    cpml = np.ones(geom.padded_shape, dtype=bool)
    cpml[geom.model_slices()] = False
    assert np.abs(full[cpml]).max() > 0
    np.testing.assert_array_equal(full[cpml], bnd[cpml])


@pytest.mark.parametrize("width", [1, 2, 3, 9])
@pytest.mark.parametrize("order", [2, 8])
def test_row_segments_stay_inside_the_updated_cells(width, order):
    """The kernels run a row's low CPML segment from the halo to the plain range's start and
    the high one from its end to the high halo.  On a model narrower than a halo with a CPML
    on one x face only, the plain range started beyond the high halo: the adjoint's taps of
    the CPML profile then read past its end (NaN gradients whenever that memory held NaN)."""
    from sweep._grid import Geometry

    for widths in [(3, 3, 20, 0), (3, 3, 0, 20), (3, 3, 20, 20), (0, 0, 0, 0)]:
        geom = Geometry(
            ndim=2, order=order, model_shape=(12, width), spacing=(5.0, 5.0), dt=1e-3, nt=4,
            pml_width=widths, free_surface=(False,) * 4, pml_freq=20.0, v_max=2000.0,
            src_loc=np.zeros((1, 0, 2), np.int64), rec_loc=np.zeros((1, 0, 2), np.int64),
        )  # fmt: skip
        for d in range(2):
            lo, hi = geom.plain_range(d)
            assert geom.halo <= lo <= hi <= geom.padded_shape[d] - geom.halo, (widths, d)


def test_replay_rows_fill_exactly_their_entries():
    """Where plain ranges reach past the stored cells (a 1-cell-wide model, a CPML on one x face
    only), each row's outer cells must fill exactly its outer_idx entries.  Rows are dealt to
    threads in tiles; an overlong row at the end of one thread's tile would overwrite the next
    thread's first row, so 2 threads must give the 1-thread buffer bitwise."""
    from sweep._compiled import CompiledAcoustic
    from sweep.equations.acoustic.propagator import _prepare

    problem = random_problem(2, accuracy=8, nt=12, n_shots=1)
    args = dict(problem, pml_width=(3, 3, 20, 0))
    v = np.ascontiguousarray(args.pop("v")[:, :1])
    args["source_locations"] = np.zeros_like(args["source_locations"])
    args["receiver_locations"] = np.zeros_like(args["receiver_locations"])
    call = _prepare(
        v, args.pop("grid_spacing"), args.pop("dt"), **args, nt=None, impl="c", n_threads=1,
        progress=False, memory=None, storage_mode="auto", storage_compression=False,
        model_gradient_sampling_interval=1, storage_bytes_limit_device=None,
        storage_bytes_limit_host=None,
    )  # fmt: skip
    geom = call.geom
    # The case under test: the plain range is empty, at the high halo.
    assert geom.plain_range(1) == (geom.padded_shape[1] - geom.halo,) * 2
    n = 5
    band_u = None
    out = []
    for threads in (1, 2):
        engine = CompiledAcoustic(geom, np, np.float64, threads)
        v2dt2 = engine.kernel_v2dt2(geom.pad_v2dt2(v))
        if band_u is None:
            band_u = np.random.default_rng(0).standard_normal((n, *engine.band_shape))
        buf = np.zeros((n, *engine.outer_shape))
        engine.replay_steps(engine.new_state(), v2dt2, 0, n, band_u=band_u, replay_w=buf)
        out.append(buf)
    assert np.abs(out[0]).max() > 0
    np.testing.assert_array_equal(out[0], out[1])
