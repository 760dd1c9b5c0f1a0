"""sweep.vrz: compiled against eager and sweep.acoustic, memory strategies, physics."""

import numpy as np
import pytest

import sweep
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import edge_acquisition, random_problem, ricker

torch = pytest.importorskip("torch")
pytest.importorskip("sweep._C")

# Free surfaces on some faces, CPML on the others.
FREE = {2: (True, False, False, True), 3: (True, False, False, False, False, True)}


def _problem(ndim, dtype=np.float64, **kw):
    problem = random_problem(ndim, dtype, equation="vrz", nt=40, **kw)
    return problem.pop("vp"), problem.pop("z"), problem


def _gradients(vp, z, problem, impl="c", seed=1, **kw):
    """Forward result and gradients of <d, receivers> (torch autodiff for impl="eager")."""
    if impl == "eager":
        t = {k: torch.from_numpy(x) if isinstance(x, np.ndarray) and x.dtype.kind == "f" else x
             for k, x in problem.items()}  # fmt: skip
        vp, z = torch.from_numpy(vp), torch.from_numpy(z)
        out, pullback = sweep.vjp(sweep.vrz, vp, z, **t, impl="eager", **kw)
    else:
        out, pullback = sweep.vjp(sweep.vrz, vp, z, **problem, impl=impl, **kw)
    shape, dtype = tuple(out.receivers.shape), problem["source_amplitudes"].dtype
    d = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    g = pullback(torch.from_numpy(d) if impl == "eager" else d)
    return out, {k: np.asarray(x) for k, x in g.items()}


def _close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0,
                               atol=tol * np.abs(np.asarray(want)).max())  # fmt: skip


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("accuracy", [2, 4, 6, 8])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_compiled_matches_eager(ndim, accuracy, dtype):
    """Receivers, final wavefield and every gradient of impl="c" are the eager reference's.

    Free surfaces and CPML faces, so edge, halo and ghost cells all count.
    """
    vp, z, problem = _problem(ndim, dtype, accuracy=accuracy, free_surface=FREE[ndim])
    out_c, g_c = _gradients(vp, z, problem, "c")
    out_e, g_e = _gradients(vp, z, problem, "eager")
    tol = 1e-12 if dtype == np.float64 else 2e-5
    assert out_c.impl == "c" and out_e.impl == "eager"
    _close(out_c.receivers, out_e.receivers, tol)
    _close(out_c.wavefield, out_e.wavefield, tol)
    for key in ("vp", "z", "source_amplitudes"):
        assert g_c[key].dtype == dtype
        _close(g_c[key], g_e[key], tol)


@pytest.mark.parametrize("impl", ["c", "eager"])
@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("accuracy", [2, 4, 6, 8])
def test_constant_density_is_acoustic(ndim, accuracy, impl):
    """With z proportional to vp, VRZ is the acoustic equation (CPML and free surface too)."""
    problem = random_problem(ndim, np.float64, accuracy=accuracy, free_surface=True, nt=80)
    v = problem.pop("v")
    want = sweep.acoustic(v, **problem, impl="c")
    got = sweep.vrz(v, 1700.0 * v, **problem, impl=impl)
    scale = np.abs(want.receivers).max()
    np.testing.assert_allclose(got.receivers, want.receivers, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(got.wavefield, want.wavefield, rtol=0,
                               atol=1e-12 * np.abs(want.wavefield).max())  # fmt: skip


def _density_run(rho, source, kw):
    vp = np.full(rho.shape, 2000.0)
    return sweep.vrz(vp, vp * rho, 5.0, 5e-4, source_locations=np.array([[source]]), **kw)


def test_density_contrast_reflects_with_the_impedance_coefficient():
    """Equal velocities, rho1 over rho2: the reflection is R times the mirror source's field.

    R = (rho2 - rho1) / (rho2 + rho1) at every angle (0-50 degrees here; the error
    is second order in the grid spacing: about 1 % at 16 cells per wavelength,
    4 % at 8, measured).  The interface lies
    midway between the last rho1 row and the first rho2 row, so the mirror
    image of a source at row zs is at row 2 * zi - 1 - zs.
    """
    nz, nx, zi, zs, xs = 130, 150, 75, 45, 40
    rho1, rho2 = 1000.0, 2500.0
    r = (rho2 - rho1) / (rho2 + rho1)
    xr = np.arange(xs, nx - 30, 8)
    nt = 800
    kw = dict(
        source_amplitudes=ricker(12.5, nt, 5e-4)[None, None],
        receiver_locations=np.array([[[zs, x] for x in xr]]),
        accuracy=8,
        pml_width=20,
        max_vel=2000.0,
        pml_freq=12.5,
    )
    layered = np.where(np.arange(nz)[:, None] >= zi, rho2, rho1) * np.ones((1, nx))
    total = _density_run(layered, [zs, xs], kw).receivers[0]
    direct = _density_run(np.full((nz, nx), rho1), [zs, xs], kw).receivers[0]
    image = _density_run(np.full((nz, nx), rho1), [2 * zi - 1 - zs, xs], kw).receivers[0]
    reflected = total - direct
    angles = np.degrees(np.arctan2(xr - xs, 2 * (zi - 0.5 - zs)))
    assert angles.max() > 45
    for i in range(len(xr)):
        err = np.linalg.norm(reflected[i] - r * image[i]) / np.linalg.norm(r * image[i])
        assert err < 0.015, (angles[i], err)


BF16 = {"storage_compression": "bf16"}
# name: (the plan's strategy, the memory keywords)
STRATEGIES = {
    "full-cpu": ("full", {"storage_mode": "cpu"}),
    "full-disk": ("full", {"storage_mode": "disk"}),
    "ckpt-chunk": (
        "ckpt-chunk",
        {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=7))},
    ),
    "ckpt-recursive": (
        "ckpt-recursive",
        {"memory": MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3))},
    ),
}


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("interval", [1, 2])
def test_memory_strategies_give_full_storages_gradient(ndim, interval, tmp_path, monkeypatch):
    """Full storage elsewhere, bf16 and checkpointing: bitwise full storage on the device.

    With a sampling interval, against full storage with the same interval;
    bf16 snapshots, wherever they are kept, bitwise each other and close to
    the exact gradient.
    """
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    vp, z, problem = _problem(ndim, accuracy=4, free_surface=FREE[ndim])
    kw = {"model_gradient_sampling_interval": interval}
    out0, ref = _gradients(vp, z, problem, storage_mode="device", **kw)
    assert out0.memory_plan.strategy == "full"
    assert np.abs(ref["vp"]).max() > 0 and np.abs(ref["z"]).max() > 0
    for name, (strategy, memory) in STRATEGIES.items():
        out, got = _gradients(vp, z, problem, **memory, **kw)
        assert out.memory_plan.strategy == strategy, name
        assert np.array_equal(out.receivers, out0.receivers), name
        for key in ("vp", "z", "source_amplitudes"):
            assert np.array_equal(got[key], ref[key]), (name, key)
    _, bf16 = _gradients(vp, z, problem, storage_mode="device", **BF16, **kw)
    _, bf16_disk = _gradients(vp, z, problem, storage_mode="disk", **BF16, **kw)
    for key in ("vp", "z"):
        assert np.array_equal(bf16_disk[key], bf16[key]), key
        _close(bf16[key], ref[key], 1e-2)
    assert np.array_equal(bf16["source_amplitudes"], ref["source_amplitudes"])
    if interval > 1:  # every other step, scaled by 2: near the full gradient, not equal to it
        _, full = _gradients(vp, z, problem)
        for key in ("vp", "z"):
            assert not np.array_equal(ref[key], full[key])
            _close(ref[key], full[key], 0.5)
    assert not list(tmp_path.iterdir())  # disk stores removed


BOUNDARY = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("order", [2, 8])
@pytest.mark.parametrize("free", [False, True])
def test_boundary_saving_matches_full_storage(ndim, order, free):
    """u runs backwards on the plain cells; every step's snapshot is rebuilt from it and the
    saves, so float64 agrees with full storage to round-off.

    Sources and receivers on the band; the source gradient is bitwise (it
    does not read the forward field).
    """
    vp, z, problem = _problem(ndim, accuracy=order, free_surface=FREE[ndim] if free else False)
    problem = edge_acquisition(problem, vp.shape)
    out0, ref = _gradients(vp, z, problem)
    out, got = _gradients(vp, z, problem, memory=BOUNDARY)
    assert out.memory_plan.strategy == "boundary"
    assert np.array_equal(out.receivers, out0.receivers)
    for key in ("vp", "z"):
        scale = np.abs(ref[key]).max()
        assert scale > 0
        np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-12 * scale, err_msg=key)
    assert np.array_equal(got["source_amplitudes"], ref["source_amplitudes"])


def test_boundary_saving_float32_storage_places_and_threads(tmp_path, monkeypatch):
    """float32 round-off only; the strips in memory, host memory or on disk; shots per thread."""
    monkeypatch.setenv("SWEEP_TMPDIR", str(tmp_path))
    vp, z, problem = _problem(2, np.float32, accuracy=8, free_surface=True)
    problem = edge_acquisition(problem, vp.shape)
    _, ref = _gradients(vp, z, problem)
    _, first = _gradients(vp, z, problem, memory=BOUNDARY, n_threads=1)
    for storage in ("gpu", "cpu", "disk"):
        for n_threads in (1, 2, 3):  # 2: a shot per thread; 3: all threads share each step
            memory = MemoryOptions(strategy="boundary", boundary=BoundaryOptions(storage=storage))
            _, got = _gradients(vp, z, problem, memory=memory, n_threads=n_threads)
            for key in ("vp", "z"):
                rel = np.abs(got[key] - ref[key]).max() / np.abs(ref[key]).max()
                assert rel < 1e-4, (storage, key, rel)
                assert np.array_equal(got[key], first[key]), (storage, n_threads, key)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("ndim", [2, 3])
def test_shots_split_between_threads_are_bitwise_one_thread(ndim):
    """Whole shots per thread (sub-problems) or all threads on every step: the same bits."""
    vp, z, problem = _problem(ndim, accuracy=8, n_shots=4, free_surface=FREE[ndim])
    out1, ref = _gradients(vp, z, problem, n_threads=1)
    for n_threads in (2, 3):
        out, got = _gradients(vp, z, problem, n_threads=n_threads)
        assert np.array_equal(out.receivers, out1.receivers)
        assert np.array_equal(out.wavefield, out1.wavefield)
        for key in ("vp", "z", "source_amplitudes"):
            assert np.array_equal(got[key], ref[key]), (key, n_threads)


@pytest.mark.parametrize("ndim", [2, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_forward_is_bitwise_unblocked(ndim, dtype, monkeypatch):
    """Temporal blocking of the forward (sweep/_blocking.py) applies to VRZ's leapfrog too."""
    vp, z, problem = _problem(ndim, dtype, accuracy=8, n_shots=3, n_src=3, n_rec=5)

    def forward(blocking, n_threads):
        monkeypatch.setenv("SWEEP_TIME_BLOCKING", blocking)
        out = sweep.vrz(vp, z, **problem, impl="c", n_threads=n_threads)
        return [out.receivers, out.state["u"], out.state["u_prev"], *out.state["psi"]]

    reference = forward("1,1,1", 1)
    for blocking in ("2,1,5", "5,1,13", "4,3,7"):
        for n_threads in (1, 3):
            for a, b in zip(reference, forward(blocking, n_threads), strict=True):
                assert np.array_equal(a, b), (blocking, n_threads)


@pytest.mark.parametrize("ndim", [2, 3])
def test_cpu_snapshot_is_compact(ndim):
    """The C kernels' snapshot: u of every stored cell, W and psi only of the outer cells.

    A plain cell's W is recomputed from u in the adjoint (the gradients
    against eager above check it); here the size the planner counts.  A bf16
    store keeps W of every cell (recomputed from rounded u it would carry
    several times the rounding error), and the kernels refuse other records.
    """
    from sweep.equations.vrz.compiled import CompiledVRZ

    vp, z, problem = _problem(ndim, accuracy=4)
    out = sweep.vrz(vp, z, **problem, impl="c")
    g = out.geometry
    engine = CompiledVRZ(g, np, np.float64)
    cells, outer = int(np.prod(g.store_shape)), len(g.outer_idx)
    assert 0 < outer < cells
    assert engine.snapshot_shape == (g.n_shots, cells + (1 + ndim) * outer)
    assert np.prod(engine.snapshot_shape) < g.n_shots * (2 + ndim) * cells
    assert engine.snapshot_shape_for(None) == engine.snapshot_shape
    assert engine.snapshot_shape_for("bf16") == (g.n_shots, 2 * cells + ndim * outer)
    state, coeffs = engine.new_state(), engine.kernel_coefficients(vp, z)
    with pytest.raises(ValueError, match="VRZ snapshot record"):
        engine.forward_steps(state, coeffs, None, 0, 1, store=engine.zeros(1, g.n_shots, cells))


def test_bf16_store_keeps_w(monkeypatch):
    """bf16 keeps W of every cell: W recomputed from rounded u (the compact record) errs more.

    Measured here (relative L2 of vp / z): 2.5e-3 / 2.3e-3 kept, 7.1e-3 / 4.2e-3 recomputed.
    """
    from sweep.equations.vrz.compiled import CompiledVRZ

    vp, z, problem = _problem(2, accuracy=8, free_surface=FREE[2])
    _, ref = _gradients(vp, z, problem)
    _, kept = _gradients(vp, z, problem, **BF16)
    monkeypatch.setattr(CompiledVRZ, "snapshot_shape_for", lambda self, c: self.snapshot_shape)
    _, recomputed = _gradients(vp, z, problem, **BF16)
    err = {k: [np.linalg.norm(g[k] - ref[k]) / np.linalg.norm(ref[k]) for g in (kept, recomputed)]
           for k in ("vp", "z")}  # fmt: skip
    assert err["vp"][0] < 0.5 * err["vp"][1], err
    assert err["z"][0] < err["z"][1], err


def test_bf16_gradient_of_high_x_cpml_cells_reads_their_own_psi():
    """bf16 keeps W of every cell but psi of the outer cells only, so the two are
    addressed differently (sweep_cy/vrz_cpu_impl.h); a gradient that read psi of
    the high-x C-PML cells at W's index took other cells' psi and still passed
    the tests above (their sources leave psi there near zero).  Sources and
    receivers on the edges put the waves into every C-PML strip; the last
    model column, which sums the high-x C-PML's gradient, then errs at bf16's
    level (measured 1.1e-2 / 2.1e-3 for vp / z), not 0.27 / 0.09 as it did
    with psi read at W's index.
    """
    vp, z, problem = _problem(2, accuracy=4)
    problem = edge_acquisition(problem, vp.shape)
    _, ref = _gradients(vp, z, problem)
    _, bf16 = _gradients(vp, z, problem, **BF16)
    for key, tol in (("vp", 0.05), ("z", 0.03)):
        edge, want = bf16[key][:, -1], ref[key][:, -1]
        assert np.abs(want).max() > 0.1 * np.abs(ref[key]).max(), key  # the strip matters
        err = np.linalg.norm(edge - want) / np.linalg.norm(want)
        assert err < tol, (key, err)


def test_window_max_is_the_sliding_window_max():
    """The CFL speed's neighbourhood max (windows of doubling width) equals the plain one."""
    from sweep.equations.vrz.propagator import window_max

    def plain(x, reach):
        for d in range(x.ndim):
            pad = [(0, 0)] * x.ndim
            pad[d] = (reach, reach)
            padded = np.pad(x, pad, mode="edge")
            x = np.lib.stride_tricks.sliding_window_view(padded, 2 * reach + 1, axis=d).max(-1)
        return x

    rng = np.random.default_rng(3)
    for shape in [(7,), (5, 9), (13, 4, 6), (1, 3, 2), (2, 1, 17)]:
        for reach in (0, 1, 2, 3, 4, 5, 7):
            x = rng.random(shape)
            np.testing.assert_array_equal(window_max(x, reach), plain(x, reach))
