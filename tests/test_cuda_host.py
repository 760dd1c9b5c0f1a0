"""The CUDA kernels run on the host: cuda/*.cu built with g++ under a small shim.

A GPU is rarely at hand, so the CUDA sources and the launch sequence of
``sweep._cuda_backend`` would otherwise go untested between GPU sessions.
Here the same preamble and source text CuPy compiles are built with g++ (with
``__CUDACC__`` defined, so the device code paths and ``fma`` are the ones a
GPU runs), each kernel wrapped in a loop over its grid and block, and
``run_steps`` drives them exactly as on a device, on NumPy arrays.  A kernel
that is correct for every order of its threads is correct in this one order;
races between threads are not what these tests can find.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import sweep
from sweep import _compiled, _cuda_backend, _cuda_graph, _grid, equations
from sweep.propagator.options import BoundaryOptions, CkptOptions, MemoryOptions
from sweep.testing import edge_acquisition, random_problem

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="g++ not found")

_SHIM = """
#define __CUDACC__ 1
#include <cmath>
using std::fma;
#define __global__
#define __device__
#define __forceinline__ inline
struct sweep_emu_dim3 { unsigned x, y, z; };
static sweep_emu_dim3 blockIdx, threadIdx, blockDim, gridDim;
"""

# Debug builds: a failed SWEEP_CHECK_INDEX is recorded (the first one) instead of
# printf + __trap, and the kernel returns as on a GPU.
_DEBUG_SHIM = """
static long long sweep_emu_fail[4] = {0, -1, -1, -1}; /* count, shot, entry, index */
static const char *sweep_emu_what = "";
#define SWEEP_DEBUG_FAIL(what, shot, k, j)                                        \\
  do {                                                                           \\
    if (sweep_emu_fail[0]++ == 0) {                                              \\
      sweep_emu_what = (what);                                                   \\
      sweep_emu_fail[1] = (shot), sweep_emu_fail[2] = (k), sweep_emu_fail[3] = (j); \\
    }                                                                            \\
  } while (0)
extern "C" long long *emu_debug_failures(void) { return sweep_emu_fail; }
extern "C" const char *emu_debug_what(void) { return sweep_emu_what; }
"""

_KERNEL = re.compile(r'extern "C" __global__ void (\w+)\(([^)]*)\)')
_STRUCT = re.compile(r"\bsweep_\w+_(params|fields)\b")


def _kernels(source: str) -> dict[str, list[str]]:
    """Kernel name -> parameter types, from the preprocessed source (macros name some)."""
    proc = subprocess.run(
        [GXX, "-E", "-P", "-x", "c++", f"-I{_cuda_backend.source_dir()}", "-"],
        input=source, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = {}
    for name, params in _KERNEL.findall(re.sub(r"\s+", " ", proc.stdout)):
        out[name] = [re.sub(r"\w+\s*$", "", p).strip() for p in params.split(",")]
    return out


def _wrapper(name: str, types: list[str]) -> str:
    """C++ that runs kernel ``name`` over a whole grid, one thread after another."""
    decl, call = [], []
    for k, ty in enumerate(types):
        if _STRUCT.search(ty):  # structs come by pointer from Python
            decl.append(f"const {ty.replace('const ', '')} *a{k}")
            call.append(f"*a{k}")
        else:
            decl.append(f"{ty} a{k}")
            call.append(f"a{k}")
    loops = "".join(
        f"for (unsigned {v} = 0; {v} < {n}; ++{v}) "
        for v, n in (("bz", "g[2]"), ("by", "g[1]"), ("bx", "g[0]"),
                     ("tz", "b[2]"), ("ty", "b[1]"), ("tx", "b[0]"))
    )  # fmt: skip
    return (
        f'extern "C" void emu_{name}(const unsigned *g, const unsigned *b, {", ".join(decl)}) {{\n'
        f"  blockDim = {{b[0], b[1], b[2]}}; gridDim = {{g[0], g[1], g[2]}};\n"
        f"  {loops}{{ blockIdx = {{bx, by, bz}}; threadIdx = {{tx, ty, tz}}; "
        f"{name}({', '.join(call)}); }}\n}}\n"
    )


class _HostModule:
    """The ``get_function`` of a CuPy RawModule, over a host build."""

    def __init__(self, lib: ctypes.CDLL, kernels: dict[str, list[str]]) -> None:
        self.lib, self.kernels = lib, kernels

    def get_function(self, name: str):
        fn, types = getattr(self.lib, f"emu_{name}"), self.kernels[name]

        def launch(grid, block, args) -> None:
            dims = [(ctypes.c_uint * 3)(*(tuple(d) + (1,) * (3 - len(d)))) for d in (grid, block)]
            keep, cargs = [], []
            for ty, a in zip(types, args, strict=True):
                if _STRUCT.search(ty):
                    buf = ctypes.create_string_buffer(a.tobytes())
                    keep.append(buf)
                    cargs.append(ctypes.cast(buf, ctypes.c_void_p))
                elif "*" in ty:
                    cargs.append(ctypes.c_void_p(int(a)))
                elif ty.endswith("sweep_int"):
                    cargs.append(ctypes.c_longlong(int(a)))
                else:
                    cargs.append(ctypes.c_int(int(a)))
            fn(*dims, *cargs)

        return launch


@functools.cache
def _host_module(
    equation: str, ndim: int, order: int, dtype_str: str, build_dir: str, debug: bool = False
) -> _HostModule:
    src = _cuda_backend.source_dir()
    text = (src / f"{equation}.cu").read_text()
    preamble = _cuda_backend.preamble(ndim, order, np.dtype(dtype_str), debug=debug)
    kernels = _kernels(preamble + text)
    assert kernels, f"no kernels found in {equation}.cu"
    tag = "_debug" if debug else ""
    name = f"{equation}_{ndim}d_o{order}_{np.dtype(dtype_str).name}{tag}.cpp"
    unit = Path(build_dir) / name
    lib = unit.with_suffix(".so")
    unit.write_text(
        _SHIM
        + (_DEBUG_SHIM if debug else "")
        + preamble
        + text
        + "".join(_wrapper(n, t) for n, t in kernels.items())
    )
    cmd = [
        GXX,
        "-std=c++17",
        "-O1",
        "-shared",
        "-fPIC",
        "-w",
        f"-I{src}",
        "-o",
        str(lib),
        str(unit),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return _HostModule(ctypes.CDLL(str(lib)), kernels)


class _HostGraph:
    """The launches of a captured chunk, with their arguments as they were at capture."""

    def __init__(self) -> None:
        self.launches: list = []

    def launch(self) -> None:
        for fn, grid, block, args in self.launches:
            fn(grid, block, args)


def _host_capture(mod, launches) -> _HostGraph:
    """Stream capture on the host: record what ``launches`` starts instead of running it."""
    graph = _HostGraph()

    class Recorder:
        def get_function(self, name):
            fn = mod.get_function(name)
            return lambda grid, block, args: graph.launches.append(
                (fn, grid, block, copy.deepcopy(args))
            )

    launches(Recorder())
    return graph


def _use_host_cuda(monkeypatch, tmp_path_factory, *, debug: bool = False) -> list:
    """Make impl="c" on NumPy arrays run the CUDA kernels (host build) instead of sweep._C.

    Every compiled stepper (CompiledAcoustic and its subclasses, the staggered
    systems') runs its own kernels there.  Returns a list that receives each module the runs used.
    """
    build = str(tmp_path_factory.getbasetemp() / "cuda_host")
    Path(build).mkdir(exist_ok=True)
    used = []

    def run(self, ndim, order, is_double, adjoint, params, fields, t, n, n_threads=0):
        dtype = np.dtype(np.float64 if is_double else np.float32).str
        mod = _host_module(self.name, ndim, order, dtype, build, debug)
        used.append(mod)
        if self.cuda_graph and not adjoint:  # as _cuda_backend.run_graph, the host's capture
            key = (self.name, ndim, order, dtype, "host", params.tobytes())
            capture = _cuda_backend.chunk_capture(
                mod, self.name, ndim, order, params, t, n, _host_capture
            )
            _cuda_graph.replay(key, fields, t, n, capture)
            return
        _cuda_backend.run_steps(mod, self.name, ndim, order, adjoint, params, fields.rec, t, n)

    # The device's receiver-cell groups, as for CuPy arrays.
    monkeypatch.setattr(_compiled.CompiledStepper, "_cuda_receivers", True)
    monkeypatch.setattr(_compiled.CompiledStepper, "_run", run)
    return used


@pytest.fixture
def cuda_on_host(monkeypatch, tmp_path_factory):
    """Make impl="c" on NumPy arrays run the CUDA kernels (host build) instead of sweep._C."""
    _use_host_cuda(monkeypatch, tmp_path_factory)


def _run(problem, d, **kw):
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c", **kw)
    return out, pullback(d)


BOUNDARY = MemoryOptions(strategy="boundary", boundary=BoundaryOptions())
RECURSIVE = MemoryOptions(strategy="ckpt", ckpt=CkptOptions(mode="recursive", count=3))


@pytest.mark.parametrize(
    ("ndim", "order", "free_surface"),
    [(2, 2, False), (2, 4, True), (2, 8, False), (3, 4, False), (3, 8, True)],
)
def test_host_cuda_matches_cpu(ndim, order, free_surface, request):
    """Forward and both gradients of the CUDA kernels agree with sweep._C (float64)."""
    problem = random_problem(ndim, accuracy=order, free_surface=free_surface, nt=40)
    out_c, pb_c = sweep.vjp(sweep.acoustic, **problem, impl="c")
    d = np.random.default_rng(5).standard_normal(out_c.receivers.shape)
    g_c = pb_c(d)
    request.getfixturevalue("cuda_on_host")
    out_g, g_g = _run(problem, d)
    scale = np.abs(out_c.receivers).max()
    np.testing.assert_allclose(out_g.receivers, out_c.receivers, rtol=0, atol=1e-12 * scale)
    for key in ("v", "source_amplitudes"):
        ref = g_c[key]
        np.testing.assert_allclose(g_g[key], ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@pytest.mark.parametrize("ndim", (2, 3))
def test_host_cuda_dot_product(ndim, cuda_on_host):
    """The CUDA adjoint is the transpose of the CUDA forward (float64)."""
    problem = random_problem(ndim, accuracy=8, free_surface=True, nt=40)
    out, pullback = sweep.vjp(sweep.acoustic, **problem, impl="c")
    d = np.random.default_rng(6).standard_normal(out.receivers.shape)
    g = pullback(d)
    lhs = np.vdot(d, out.receivers)
    rhs = np.vdot(g["source_amplitudes"], problem["source_amplitudes"])
    assert abs(lhs - rhs) / abs(lhs) < 1e-11


@pytest.mark.parametrize(
    ("memory", "strategy"), [(BOUNDARY, "boundary"), (RECURSIVE, "ckpt-recursive")]
)
def test_host_cuda_strategies_match_full_storage(memory, strategy, cuda_on_host):
    """Boundary saving (the band kernels) and checkpointing on the CUDA kernels."""
    problem = random_problem(2, accuracy=4, free_surface=True, nt=40)
    d = np.random.default_rng(7).standard_normal((2, 3, 40))
    _, ref = _run(problem, d)
    out, got = _run(problem, d, memory=memory)
    assert out.memory_plan.strategy == strategy
    for key in ("v", "source_amplitudes"):
        scale = np.abs(ref[key]).max()
        np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-12 * scale)


def test_host_cuda_debug_index_checks(monkeypatch, tmp_path_factory):
    """SWEEP_DEBUG kernels: bitwise the plain kernels on good indices; a bad one is caught.

    The kernels' own check (not sweep's host-side one, which debug mode runs
    first) is what runs here: sweep.config(debug=...) stays off.
    """
    problem = random_problem(2, accuracy=4, nt=20)
    d = np.random.default_rng(8).standard_normal((2, 3, 20))
    _use_host_cuda(monkeypatch, tmp_path_factory)
    out, ref = _run(problem, d)
    used = _use_host_cuda(monkeypatch, tmp_path_factory, debug=True)
    out_dbg, got = _run(problem, d)
    fails = used[0].lib.emu_debug_failures
    fails.restype = ctypes.POINTER(ctypes.c_longlong)
    assert fails()[0] == 0
    assert np.array_equal(out.receivers, out_dbg.receivers)
    for key in ref:
        assert np.array_equal(ref[key], got[key]), key
    original = _grid.Geometry.kernel_index

    def shifted(self, idx):  # the last source of the last shot into its row's padding
        out = original(self, idx).copy()
        if out.shape[-1] == 2:
            pitch = self.layout_shape[-1]
            out[-1, -1] = out[-1, -1] // pitch * pitch + self.padded_shape[-1]
        return out

    monkeypatch.setattr(_grid.Geometry, "kernel_index", shifted)
    out_bad = sweep.acoustic(**problem, impl="c")
    what = used[0].lib.emu_debug_what
    what.restype = ctypes.c_char_p
    count, shot, entry, index = fails()[:4]
    assert count > 0 and what() == b"source" and (shot, entry) == (1, 1)
    g = out_bad.geometry
    assert index % g.layout_shape[-1] == g.padded_shape[-1]
    assert np.isfinite(out_bad.receivers).all()  # the bad write was skipped


def _vrz(problem, d, **kw):
    out, pullback = sweep.vjp(sweep.vrz, **problem, impl="c", **kw)
    return out, pullback(d)


def _lsrtm(problem, d, **kw):
    vp, mp = problem["vp"], problem["mp"]
    rest = {k: v for k, v in problem.items() if k not in ("vp", "mp")}
    out, pullback = sweep.vjp(sweep.lsrtm, vp, mp, **rest, impl="c", **kw)
    return out, pullback(d)


@pytest.mark.parametrize(
    ("ndim", "order", "free_surface"), [(2, 2, False), (2, 8, True), (3, 4, True), (3, 6, False)]
)
def test_host_cuda_lsrtm_matches_cpu(ndim, order, free_surface, request):
    """Born data, background data and all three gradients of cuda/lsrtm.cu agree with sweep._C."""
    problem = random_problem(
        ndim, equation="lsrtm", accuracy=order, free_surface=free_surface, nt=40
    )
    d = np.random.default_rng(5).standard_normal((2, 3, 40))
    out_c, g_c = _lsrtm(problem, d)
    request.getfixturevalue("cuda_on_host")
    out_g, g_g = _lsrtm(problem, d)
    for key in ("receivers", "background_receivers", "wavefield", "background_wavefield"):
        ref = getattr(out_c, key)
        np.testing.assert_allclose(getattr(out_g, key), ref, rtol=0,
                                   atol=1e-12 * np.abs(ref).max(), err_msg=key)  # fmt: skip
    for key in ("vp", "mp", "source_amplitudes"):
        ref = g_c[key]
        np.testing.assert_allclose(g_g[key], ref, rtol=0, atol=1e-11 * np.abs(ref).max(),
                                   err_msg=key)  # fmt: skip
    # The CUDA adjoint is the transpose of the CUDA forward: migration and sources.
    lhs = np.vdot(d, out_g.receivers)
    assert abs(lhs - np.vdot(g_g["mp"], problem["mp"])) / abs(lhs) < 1e-11
    assert (
        abs(lhs - np.vdot(g_g["source_amplitudes"], problem["source_amplitudes"])) / abs(lhs)
        < 1e-11
    )


@pytest.mark.parametrize("interval", (1, 2))
def test_host_cuda_lsrtm_checkpointing_is_full_storage(interval, cuda_on_host):
    """Both snapshot values and the sampled source terms of the CUDA kernels, replayed."""
    problem = random_problem(2, equation="lsrtm", accuracy=4, free_surface=True, nt=40)
    d = np.random.default_rng(7).standard_normal((2, 3, 40))
    k = {"model_gradient_sampling_interval": interval}
    _, ref = _lsrtm(problem, d, **k)
    out, got = _lsrtm(problem, d, memory=RECURSIVE, **k)
    assert out.memory_plan.strategy == "ckpt-recursive"
    for key in ("vp", "mp", "source_amplitudes"):
        assert np.array_equal(got[key], ref[key]), key


@pytest.mark.parametrize(
    ("ndim", "order", "free_surface"),
    [(2, 2, False), (2, 4, True), (2, 8, (True, False, False, True)), (3, 4, False),
     (3, 8, True)],
)  # fmt: skip
def test_host_cuda_vrz_matches_cpu(ndim, order, free_surface, request):
    """VRZ: forward and every gradient of the CUDA kernels agree with sweep._C (float64)."""
    problem = random_problem(ndim, accuracy=order, free_surface=free_surface, nt=40,
                             equation="vrz")  # fmt: skip
    out_c, pb_c = sweep.vjp(sweep.vrz, **problem, impl="c")
    d = np.random.default_rng(5).standard_normal(out_c.receivers.shape)
    g_c = pb_c(d)
    request.getfixturevalue("cuda_on_host")
    out_g, g_g = _vrz(problem, d)
    scale = np.abs(out_c.receivers).max()
    np.testing.assert_allclose(out_g.receivers, out_c.receivers, rtol=0, atol=1e-12 * scale)
    for key in ("vp", "z", "source_amplitudes"):
        ref = g_c[key]
        np.testing.assert_allclose(g_g[key], ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@pytest.mark.parametrize("ndim", (2, 3))
def test_host_cuda_vrz_dot_product_and_checkpointing(ndim, cuda_on_host):
    """The CUDA VRZ adjoint is the transpose of its forward; checkpointing is full storage."""
    problem = random_problem(ndim, accuracy=8, free_surface=True, nt=40, equation="vrz")
    out, pullback = sweep.vjp(sweep.vrz, **problem, impl="c")
    d = np.random.default_rng(6).standard_normal(out.receivers.shape)
    g = pullback(d)
    lhs = np.vdot(d, out.receivers)
    rhs = np.vdot(g["source_amplitudes"], problem["source_amplitudes"])
    assert abs(lhs - rhs) / abs(lhs) < 1e-11
    out_r, got = _vrz(problem, d, memory=RECURSIVE)
    assert out_r.memory_plan.strategy == "ckpt-recursive"
    for key in ("vp", "z", "source_amplitudes"):
        assert np.array_equal(got[key], g[key]), key


@pytest.mark.parametrize("equation", ["lsrtm", "vrz"])
@pytest.mark.parametrize(("ndim", "order", "free"), [(2, 2, False), (2, 8, True), (3, 4, True)])
def test_host_cuda_boundary_saving_matches_full_storage_and_cpu(equation, ndim, order, free,
                                                                request):  # fmt: skip
    """Boundary saving on the CUDA kernels (band save and load, CPML replay, the
    reconstruction; VRZ's rebuilt snapshots): full storage's gradients to round-off
    and sweep._C's boundary saving, sources and receivers on the band."""
    problem = random_problem(ndim, accuracy=order, free_surface=free, nt=40, equation=equation)
    spec = equations.get(equation)
    problem = edge_acquisition(problem, problem[spec.models[0]].shape)
    models = [problem.pop(m) for m in spec.models]

    def run(**kw):
        out, pullback = sweep.vjp(spec.function, *models, **problem, impl="c", **kw)
        return out, pullback(d)

    d = np.random.default_rng(8).standard_normal((2, 3, 40))
    _, cpu = run(memory=BOUNDARY)
    request.getfixturevalue("cuda_on_host")
    _, ref = run()
    out, got = run(memory=BOUNDARY)
    assert out.memory_plan.strategy == "boundary"
    for key in spec.models:
        scale = np.abs(ref[key]).max()
        np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-12 * scale, err_msg=key)
        np.testing.assert_allclose(got[key], cpu[key], rtol=0, atol=1e-11 * scale, err_msg=key)
    assert np.array_equal(got["source_amplitudes"], ref["source_amplitudes"])


# -- the staggered systems (cuda/staggered_cuda.h) -----------------------------------------------
def _assert_cuda_is_cpu(out_c, g_c, out_g, g_g, d, amp):
    """The CUDA run (``out_g``, ``g_g``) equals the CPU's in float64: receivers, final
    state and every gradient; and its adjoint is the transpose of its forward."""
    scale = np.abs(out_c.receivers).max()
    np.testing.assert_allclose(out_g.receivers, out_c.receivers, rtol=0, atol=1e-12 * scale)
    for key, ref in out_c.state.items():
        tol = 1e-12 * max(np.abs(ref).max(), 1e-300)
        np.testing.assert_allclose(out_g.state[key], ref, rtol=0, atol=tol, err_msg=key)
    assert set(g_g) == set(g_c)
    for key, ref in g_c.items():
        np.testing.assert_allclose(g_g[key], ref, rtol=0, atol=1e-11 * np.abs(ref).max(),
                                   err_msg=key)  # fmt: skip
    lhs = np.vdot(d, out_g.receivers)
    rhs = np.vdot(g_g["source_amplitudes"], amp)
    assert abs(lhs - rhs) <= 1e-11 * abs(lhs)


def _elastic_problem(ndim, order, free=(), nt=24):
    """Two shots; every source kind and every receiver kind (two receivers on one cell)."""
    from sweep.equations.elastic import kinds

    rng = np.random.default_rng(0)
    shape = (12, 14) if ndim == 2 else (8, 7, 9)
    vp = 1800 + 300 * rng.random(shape)
    vs = vp / (1.8 + 0.3 * rng.random(shape))
    rho = 1000 + 500 * rng.random(shape)
    src_kind, rec_kind = list(kinds.source_kinds(ndim)), list(kinds.receiver_kinds(ndim))
    n = np.array(shape) - 2  # off the edge rows (free surfaces there)

    def points(count, a, b, s):
        return [[1 + (a + b * k + s) % n[0], *[1 + (k + s) % n[1]] * (ndim - 2),
                 1 + (2 * k) % n[-1]] for k in range(count)]  # fmt: skip

    src = [points(len(src_kind), 3, 2, s) for s in range(2)]
    rec = [points(len(rec_kind), 0, 1, s) for s in range(2)]
    for r in rec:
        r[1] = r[0]  # two receivers (vz, vx / vy) on one cell: the grouped injection
    faces = [i in free for i in range(2 * ndim)]
    kw = dict(
        source_amplitudes=rng.standard_normal((2, len(src_kind), nt)),
        source_locations=np.array(src),
        receiver_locations=np.array(rec),
        accuracy=order, pml_width=3, free_surface=faces, source_kind=src_kind,
        receiver_kind=rec_kind,
    )  # fmt: skip
    return (vp, vs, rho), 5.0, 0.0006, kw


def _elastic(models, dx, dt, kw, **more):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coarse test grids: dispersion warnings
        out, pullback = sweep.vjp(sweep.elastic, *models, dx, dt, impl="c", **kw, **more)
        d = np.random.default_rng(1).standard_normal(out.receivers.shape)
        return out, pullback(d), d


@pytest.mark.parametrize(
    ("ndim", "order", "free"),
    [(2, 2, ()), (2, 8, (0, 1, 2, 3)), (2, 4, (0, 3)), (3, 2, (0, 5)), (3, 8, ())],
)
def test_host_cuda_elastic_matches_cpu(ndim, order, free, request):
    """Elastic: receivers, final state and every gradient of cuda/elastic.cu agree with
    sweep._C (float64), every source kind and every receiver kind at once; the CUDA
    adjoint is the transpose of its forward."""
    models, dx, dt, kw = _elastic_problem(ndim, order, free)
    out_c, g_c, d = _elastic(models, dx, dt, kw)
    request.getfixturevalue("cuda_on_host")
    out_g, g_g, _ = _elastic(models, dx, dt, kw)
    _assert_cuda_is_cpu(out_c, g_c, out_g, g_g, d, kw["source_amplitudes"])


def test_host_cuda_elastic_checkpointing_is_full_storage(cuda_on_host):
    """Both checkpointing modes on cuda/elastic.cu give full storage's gradients bitwise."""
    models, dx, dt, kw = _elastic_problem(2, 6, free=(0, 2))
    _, ref, _ = _elastic(models, dx, dt, kw)
    for mem in (MemoryOptions(strategy="ckpt", ckpt=CkptOptions(chunks=4)), RECURSIVE):
        out, got, _ = _elastic(models, dx, dt, kw, memory=mem)
        assert out.memory_plan.strategy.startswith("ckpt")
        for key in ref:
            assert np.array_equal(got[key], ref[key]), key


@pytest.mark.parametrize(("ndim", "order", "free"), [(2, 4, (0,)), (2, 8, ()), (3, 2, (0, 5))])
def test_host_cuda_elastic_boundary_saving(ndim, order, free, request):
    """Boundary saving on cuda/elastic.cu (band save, CPML replay, reconstruction): full
    storage's gradients to round-off and sweep._C's boundary saving, every source and
    receiver kind (some on the band and the cells with C-PML terms)."""
    models, dx, dt, kw = _elastic_problem(ndim, order, free)
    _, cpu, _ = _elastic(models, dx, dt, kw, memory=BOUNDARY)
    request.getfixturevalue("cuda_on_host")
    _, ref, _ = _elastic(models, dx, dt, kw)
    out, got, _ = _elastic(models, dx, dt, kw, memory=BOUNDARY)
    assert out.memory_plan.strategy == "boundary"
    for key in ("vp", "vs", "rho"):
        scale = np.abs(ref[key]).max()
        np.testing.assert_allclose(got[key], ref[key], rtol=0, atol=1e-12 * scale, err_msg=key)
        np.testing.assert_allclose(got[key], cpu[key], rtol=0, atol=1e-11 * scale, err_msg=key)
    assert np.array_equal(got["source_amplitudes"], ref["source_amplitudes"])


def _maxwell_problem(ndim, order, free=(), nt=24):
    """Two shots; in 3D every source and receiver component (two receivers on one cell)."""
    rng = np.random.default_rng(0)
    shape = (12, 13) if ndim == 2 else (9, 7, 10)
    models = (1.5 + 2.5 * rng.random(shape), 1e-3 + 2e-2 * rng.random(shape),
              1.0 + 0.2 * rng.random(shape))  # fmt: skip
    mid = [3] * (ndim - 2)
    src = [[[3 + s, *mid, 4], [5, *mid, 6 + s], [2, *mid, 2]] for s in range(2)]
    rec = [[[0, *mid, 3], [0, *mid, 3], [5, *mid, 5], [1, *mid, 7]] for _ in range(2)]
    t = (np.arange(nt) - 6.0) / 3.0
    kw = dict(
        source_amplitudes=(1 - 2 * t**2) * np.exp(-(t**2)) * rng.uniform(0.5, 1.5, (2, 3, 1)),
        source_locations=np.array(src), receiver_locations=np.array(rec), accuracy=order,
        pml_width=3, free_surface=[i in free for i in range(2 * ndim)], max_vel=2.5e8,
        pml_freq=1e10,
    )  # fmt: skip
    if ndim == 3:
        kw.update(source_component=["ex", "ey", "ez"], receiver_component=["ex", "ey", "ez", "ey"])
    return models, 5e-3, 6e-12, kw


def _maxwell(ndim, models, dx, dt, kw, **more):
    import warnings

    fn = sweep.tm2d if ndim == 2 else sweep.maxwell3d
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coarse test grids: dispersion warnings
        out, pullback = sweep.vjp(fn, *models, dx, dt, impl="c", **kw, **more)
        d = np.random.default_rng(1).standard_normal(out.receivers.shape)
        return out, pullback(d), d


@pytest.mark.parametrize(
    ("ndim", "order", "free"),
    [(2, 2, ()), (2, 8, (0, 1, 2, 3)), (3, 2, (0, 5)), (3, 8, (1, 4))],
)
def test_host_cuda_maxwell_matches_cpu(ndim, order, free, request):
    """Maxwell: receivers, final state and every gradient of cuda/maxwell.cu agree with
    sweep._C (float64), perfect conductors on and off; the CUDA adjoint is the transpose
    of its forward."""
    models, dx, dt, kw = _maxwell_problem(ndim, order, free)
    out_c, g_c, d = _maxwell(ndim, models, dx, dt, kw)
    request.getfixturevalue("cuda_on_host")
    out_g, g_g, _ = _maxwell(ndim, models, dx, dt, kw)
    _assert_cuda_is_cpu(out_c, g_c, out_g, g_g, d, kw["source_amplitudes"])


def test_host_cuda_maxwell_checkpointing_is_full_storage(cuda_on_host):
    """Checkpointing on cuda/maxwell.cu gives full storage's gradients bitwise."""
    models, dx, dt, kw = _maxwell_problem(2, 4, free=(0, 3))
    _, ref, _ = _maxwell(2, models, dx, dt, kw)
    out, got, _ = _maxwell(2, models, dx, dt, kw, memory=RECURSIVE)
    assert out.memory_plan.strategy == "ckpt-recursive"
    for key in ref:
        assert np.array_equal(got[key], ref[key]), key


@pytest.fixture
def graph_on_host(monkeypatch, tmp_path_factory):
    """cuda_on_host with every compiled forward call replayed as a graph (sweep._cuda_graph)."""
    _use_host_cuda(monkeypatch, tmp_path_factory)
    monkeypatch.setattr(_compiled.CompiledStepper, "cuda_graph", True)
    _cuda_graph.release()
    yield
    _cuda_graph.release()


def _maxwell3d(models, dx, dt, kw, **more):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # coarse test grids: dispersion warnings
        return sweep.maxwell3d(*models, dx, dt, impl="c", **kw, **more)


def _same_run(a, b):
    assert np.array_equal(a.receivers, b.receivers)
    for key, ref in b.state.items():
        assert np.array_equal(a.state[key], ref), key


def _graph_counts(before):
    now = _cuda_graph.counts()
    return {k: now[k] - before[k] for k in now}


def test_host_cuda_graph_replays_the_forward_and_reuses_it(graph_on_host, monkeypatch):
    """maxwell3d as graph replays equals the plain launches bitwise; a later call of the
    same configuration with other amplitudes replays the captured graph on its own data."""
    models, dx, dt, kw = _maxwell_problem(3, 4, free=(0,))
    before = _cuda_graph.counts()
    got = _maxwell3d(models, dx, dt, kw)
    assert _graph_counts(before) == {"captures": 1, "replays": 1}  # the whole forward, once
    kw2 = dict(kw, source_amplitudes=-0.5 * kw["source_amplitudes"][:, ::-1])
    before = _cuda_graph.counts()
    got2 = _maxwell3d(models, dx, dt, kw2)
    assert _graph_counts(before) == {"captures": 0, "replays": 1}
    monkeypatch.setattr(_compiled.CompiledStepper, "cuda_graph", False)  # the plain launches
    _same_run(got, _maxwell3d(models, dx, dt, kw))
    _same_run(got2, _maxwell3d(models, dx, dt, kw2))
    assert np.abs(got2.receivers).max() > 0


def test_host_cuda_graph_chunks_follow_the_callbacks(graph_on_host, monkeypatch):
    """With a forward callback every chunk of callback_frequency steps is one graph; the
    callback's in-place edit of a wavefield reaches the next replay."""
    models, dx, dt, kw = _maxwell_problem(3, 2, nt=24)
    steps = []

    def callback(state):
        steps.append(state.step)
        if state.step == 10:
            state.get_wavefield("ey", "full")[...] *= 0.5

    before = _cuda_graph.counts()
    got = _maxwell3d(models, dx, dt, kw, forward_callback=callback, callback_frequency=5)
    assert _graph_counts(before) == {"captures": 5, "replays": 5}  # steps 0-4, ..., 20-23
    first = list(steps)
    before = _cuda_graph.counts()
    again = _maxwell3d(models, dx, dt, kw, forward_callback=callback, callback_frequency=5)
    assert _graph_counts(before) == {"captures": 0, "replays": 5}
    _same_run(again, got)
    monkeypatch.setattr(_compiled.CompiledStepper, "cuda_graph", False)
    steps.clear()
    plain = _maxwell3d(models, dx, dt, kw, forward_callback=callback, callback_frequency=5)
    assert steps == first
    _same_run(got, plain)
    no_edit = _maxwell3d(models, dx, dt, kw)
    assert not np.array_equal(no_edit.receivers, plain.receivers)  # the edit mattered


def test_host_cuda_graph_cache_keys_and_release(graph_on_host, monkeypatch):
    """Another order or dtype is another entry; the least recently used goes first;
    release_cached_memory frees every entry's buffers."""
    models, dx, dt, kw = _maxwell_problem(3, 2)
    runs = [(models, dict(kw)), (models, dict(kw, accuracy=4)),
            (tuple(m.astype(np.float32) for m in models),
             dict(kw, source_amplitudes=kw["source_amplitudes"].astype(np.float32)))]  # fmt: skip
    for m, k in runs:
        before = _cuda_graph.counts()
        _maxwell3d(m, dx, dt, k)
        assert _graph_counts(before)["captures"] == 1
    assert len(_cuda_graph._entries) == _cuda_graph.MAX_ENTRIES == 2
    before = _cuda_graph.counts()
    _maxwell3d(*runs[0][:1], dx, dt, runs[0][1])  # evicted: captured again
    assert _graph_counts(before)["captures"] == 1
    held = sum(e.nbytes() for e in _cuda_graph._entries.values())
    assert held > 0 and sweep.release_cached_memory() >= held
    assert not _cuda_graph._entries
