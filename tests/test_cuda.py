"""CUDA kernels: compile everywhere nvcc exists; run and compare where a GPU exists."""

import shutil
import subprocess

import numpy as np
import pytest

import sweep
from sweep._cuda_backend import preamble, source_dir
from sweep.testing import random_problem

NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 4, 6, 8))
@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_cuda_sources_compile(tmp_path, ndim, order, dtype):
    """Every specialisation of every .cu source compiles (the same text CuPy compiles)."""
    sources = sorted(source_dir().glob("*.cu"))
    assert sources
    for cu in sources:
        unit = tmp_path / cu.name
        unit.write_text(preamble(ndim, order, np.dtype(dtype)) + cu.read_text())
        proc = subprocess.run(
            [
                NVCC,
                "-std=c++17",
                "-arch=sm_80",
                f"-I{source_dir()}",
                "--ptx",
                "-Werror",
                "all-warnings",
                "-o",
                str(tmp_path / "out.ptx"),
                str(unit),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        # SWEEP_FMA must resolve to the kernel's own precision: float32 code
        # that fused in double (or converted to it) would be slow and round
        # unlike the CPU.
        ptx = (tmp_path / "out.ptx").read_text()
        own, other = ("f32", "f64") if dtype == np.float32 else ("f64", "f32")
        assert f"fma.rn.{own}" in ptx, cu.name
        assert f"fma.rn.{other}" not in ptx and "cvt.f64.f32" not in ptx, cu.name


@pytest.mark.skipif(NVCC is None, reason="nvcc not found")
@pytest.mark.parametrize("ndim", (2, 3))
def test_cuda_debug_build_compiles_with_its_checks(tmp_path, ndim):
    """Debug mode's SWEEP_DEBUG build compiles cleanly and traps; the plain build has no trap."""
    for debug in (False, True):
        unit = tmp_path / "acoustic.cu"
        text = (source_dir() / "acoustic.cu").read_text()
        unit.write_text(preamble(ndim, 4, np.dtype(np.float32), debug=debug) + text)
        ptx = tmp_path / "out.ptx"
        cmd = [NVCC, "-std=c++17", "-arch=sm_80", f"-I{source_dir()}", "--ptx", "-Werror",
               "all-warnings", "-o", str(ptx), str(unit)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stderr
        assert ("trap;" in ptx.read_text()) == debug


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


gpu = pytest.mark.skipif(not _gpu_available(), reason="needs CuPy and a CUDA GPU")


def _to_gpu(problem):
    import cupy

    return {
        k: cupy.asarray(x) if k in ("v", "vp", "z", "source_amplitudes") else x
        for k, x in problem.items()
    }


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 4, 6, 8))
@pytest.mark.parametrize("free_surface", (False, True))
def test_cpu_and_cuda_agree(ndim, order, free_surface):
    problem = random_problem(ndim, accuracy=order, free_surface=free_surface)
    rng = np.random.default_rng(5)
    out_c, pb_c = sweep.vjp(sweep.acoustic, **problem, impl="c")
    out_g, pb_g = sweep.vjp(sweep.acoustic, **_to_gpu(problem), impl="c")
    scale = np.abs(out_c.receivers).max()
    np.testing.assert_allclose(out_g.receivers.get(), out_c.receivers, rtol=0, atol=1e-12 * scale)
    d = rng.standard_normal(out_c.receivers.shape)
    import cupy

    g_c, g_g = pb_c(d), pb_g(cupy.asarray(d))
    for key in ("v", "source_amplitudes"):
        ref = g_c[key]
        np.testing.assert_allclose(g_g[key].get(), ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("ndim", (2, 3))
def test_cuda_dot_product_and_determinism(ndim):
    import cupy

    problem = _to_gpu(random_problem(ndim, accuracy=8, free_surface=True))
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c")
    d = cupy.asarray(np.random.default_rng(6).standard_normal(out.receivers.shape))
    g = pullback(d)
    lhs = float(cupy.vdot(d, out.receivers))
    rhs = float(cupy.vdot(g["source_amplitudes"], problem["source_amplitudes"]))
    assert abs(lhs - rhs) / abs(lhs) < 1e-11
    again = sweep.acoustic(**problem, impl="c").receivers
    assert bool(cupy.array_equal(again, out.receivers))


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("ndim", (2, 3))
@pytest.mark.parametrize("order", (2, 8))
@pytest.mark.parametrize("free_surface", (False, True))
def test_cpu_and_cuda_agree_vrz(ndim, order, free_surface):
    """VRZ: receivers and every gradient of the CUDA kernels agree with sweep._C (float64)."""
    import cupy

    problem = random_problem(ndim, accuracy=order, free_surface=free_surface, equation="vrz")
    out_c, pb_c = sweep.vjp(sweep.vrz, **problem, impl="c")
    out_g, pb_g = sweep.vjp(sweep.vrz, **_to_gpu(problem), impl="c")
    scale = np.abs(out_c.receivers).max()
    np.testing.assert_allclose(out_g.receivers.get(), out_c.receivers, rtol=0, atol=1e-12 * scale)
    d = np.random.default_rng(5).standard_normal(out_c.receivers.shape)
    g_c, g_g = pb_c(d), pb_g(cupy.asarray(d))
    for key in ("vp", "z", "source_amplitudes"):
        ref = g_c[key]
        np.testing.assert_allclose(g_g[key].get(), ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@pytest.mark.gpu
@gpu
@pytest.mark.parametrize("equation", ["elastic", "tm2d", "maxwell3d"])
@pytest.mark.parametrize("free", [False, True])
def test_cpu_and_cuda_agree_staggered(equation, free):
    """Elastic and Maxwell: receivers and every gradient of cuda/elastic.cu and
    cuda/maxwell.cu agree with sweep._C (float64); the host-run tests
    (tests/test_cuda_host.py) cover their cases without a GPU."""
    import warnings

    import cupy

    rng = np.random.default_rng(0)
    ndim = 2 if equation in ("elastic", "tm2d") else 3
    shape = (20, 24) if ndim == 2 else (12, 10, 14)
    if equation == "elastic":
        vp = 1800 + 300 * rng.random(shape)
        models, dx, dt, names = (vp, vp / 1.9, 1000 + 500 * rng.random(shape)), 5.0, 6e-4, (
            "vp", "vs", "rho")  # fmt: skip
        extra = {"source_kind": ["fz", "p"], "receiver_kind": ["vz", "sxz", "p"]}
    else:
        models = (1.5 + 2.5 * rng.random(shape), 1e-2 * rng.random(shape),
                  1.0 + 0.2 * rng.random(shape))  # fmt: skip
        dx, dt, names = 5e-3, 6e-12, ("epsilon", "sigma", "mu")
        extra = {"max_vel": 2.5e8, "pml_freq": 1e10}
        if ndim == 3:
            extra |= {"source_component": ["ex", "ez"], "receiver_component": ["ey"] * 3}
    mid = [4] * (ndim - 2)
    kw = dict(
        source_amplitudes=rng.standard_normal((2, 2, 40)),
        source_locations=np.array([[[5 + s, *mid, 6], [8, *mid, 9 + s]] for s in range(2)]),
        receiver_locations=np.array([[[1, *mid, 3], [8, *mid, 8], [2, *mid, 10]]] * 2),
        accuracy=4, pml_width=4, free_surface=free, **extra,
    )  # fmt: skip
    fn = getattr(sweep, equation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out_c, pb_c = sweep.vjp(fn, *models, dx, dt, impl="c", **kw)
        gpu_kw = dict(kw, source_amplitudes=cupy.asarray(kw["source_amplitudes"]))
        out_g, pb_g = sweep.vjp(fn, *map(cupy.asarray, models), dx, dt, impl="c", **gpu_kw)
        assert isinstance(out_g.receivers, cupy.ndarray)
        scale = np.abs(out_c.receivers).max()
        np.testing.assert_allclose(out_g.receivers.get(), out_c.receivers, rtol=0,
                                   atol=1e-12 * scale)  # fmt: skip
        d = rng.standard_normal(out_c.receivers.shape)
        g_c, g_g = pb_c(d), pb_g(cupy.asarray(d))
    for key in (*names, "source_amplitudes"):
        ref = g_c[key]
        np.testing.assert_allclose(g_g[key].get(), ref, rtol=0, atol=1e-11 * np.abs(ref).max())
