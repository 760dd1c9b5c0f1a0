"""CUDA launcher: compiles ``cuda/*.cu`` with CuPy (NVRTC) and runs time steps.

:func:`run` takes the arguments of the CPU binding's one entry point
(``sweep._C.run``: the equation's name, then the same parameter and pointer
records), so the driver in ``sweep._compiled`` is shared.
Kernels (``cuda/<equation>.cu``) are compiled once per (equation, ndim, order,
dtype, device, options) from a preamble that defines the specialisation
macros and the FD coefficients rendered by ``sweep._fd``.

Run-time settings (``sweep.config``) that reach the kernels: ``fast_math``
(``--use_fast_math``), ``debug`` (``SWEEP_DEBUG``: index bounds checks in the
kernels), and ``cuda_cache`` / ``cuda_cache_dir``: CuPy keeps compiled
kernels on disk, here in a sweep-owned folder, so a new process loads them
instead of compiling (:func:`precompile` fills it ahead of a cluster job).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import _cuda_graph, _fd, _fields_table
from ._config import config
from ._params import ACOUSTIC_PARAMS

_BLOCK = (32, 8, 1)
# The equations with CUDA kernels (cuda/<equation>.cu), and the wavefields of
# each: the suffixes of their fields' names in the pointer record (u{s},
# u{s}_prev, psi{s}, psi{s}_new, zeta{s}, zeta{s}_new).
WAVES = {"acoustic": ("",), "lsrtm": ("0", "1"), "vrz": ("",), "elastic": (), "maxwell": ()}
# Staggered first-order systems (cuda/staggered_cuda.h): two in-place phases
# per step, and the sets of images each has behind free faces (set k: those
# forward phase k fills, which adjoint phase 1 - k folds back).
IMAGE_SETS = {"elastic": (1,), "maxwell": (0, 1)}
# Reversible staggered systems (boundary saving): by ndim, the fields the
# first phase updates, [0, split), and the snapshot's field count nf (the
# second phase updates [split, nf)).  Elastic: the ndim velocities, then the
# stresses (cpu_phased.h's bs_replay / bs_reverse take the same split).
PHASE_FIELDS = {"elastic": {2: (2, 5), 3: (3, 9)}}
# Equations whose boundary-saving adjoint rebuilds each step's snapshot in
# slot 0 of the store (<equation>_recon_snapshot) and correlates it as full
# storage does (SWEEP_EQ_RECON_SNAPSHOT of the CPU skeleton).
RECON_SNAPSHOT = frozenset({"vrz"})
# The model-gradient output whose absence means no model gradient (the CPU
# kernels' SWEEP_EQ_GRAD).
GRADIENT = {"acoustic": "grad_v2dt2", "lsrtm": "grad_v2dt2", "vrz": "grad_kappa_dt2"}


def source_dir() -> Path:
    """Folder holding the CUDA sources (installed package data or the source tree)."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_cuda", here.parent / "cuda"):
        if (candidate / "acoustic.cu").exists():
            return candidate
    raise FileNotFoundError("sweep's CUDA sources (acoustic.cu) were not found")


def preamble(ndim: int, order: int, dtype: np.dtype, *, debug: bool = False) -> str:
    """Macro preamble selecting one specialisation (shared with the nvcc test).

    ``debug`` defines ``SWEEP_DEBUG``: the kernels check every source and
    receiver index (``cuda/acoustic.cu``).  The FD coefficients and the
    records' structs are the text of the headers the C build renders from
    ``sweep._fd`` and ``sweep._fields_table``.
    """
    real, tag = ("double", "f64") if np.dtype(dtype) == np.float64 else ("float", "f32")
    return (
        ("#define SWEEP_DEBUG 1\n" if debug else "")
        + f"#define SWEEP_NDIM {ndim}\n#define SWEEP_ORDER {order}\n"
        f"#define SWEEP_REAL {real}\n#define SWEEP_SUFFIX {ndim}d_o{order}_{tag}\n"
        + _fd.c_header()
        + _fields_table.c_header()
    )


def compile_options(*, fast_math: bool = False) -> tuple[str, ...]:
    """NVRTC options of the kernels (``fast_math``: ``--use_fast_math``)."""
    options = ("-std=c++17", f"-I{source_dir()}")
    return (*options, "--use_fast_math") if fast_math else options


_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def _cupy_cache(enabled: bool, folder: str) -> Iterator[None]:
    """Point CuPy's kernel cache at ``folder``, or keep it in memory only (a cold start).

    CuPy reads ``CUPY_CACHE_DIR`` and ``CUPY_CACHE_IN_MEMORY`` when it
    compiles, so they are set around the compile only and the user's own
    CuPy kernels keep CuPy's cache.
    """
    names = ("CUPY_CACHE_DIR", "CUPY_CACHE_IN_MEMORY")
    with _ENV_LOCK:
        saved = {k: os.environ.get(k) for k in names}
        os.environ["CUPY_CACHE_DIR"] = folder
        os.environ["CUPY_CACHE_IN_MEMORY"] = "0" if enabled else "1"
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def kernel_settings() -> tuple[bool, bool, bool, str]:
    """(fast_math, debug, cuda_cache, cuda_cache_dir) from ``sweep.config``."""
    return (
        bool(config.get("fast_math")),
        bool(config.get("debug")),
        bool(config.get("cuda_cache")),
        str(config.get("cuda_cache_dir")),
    )


@functools.cache
def _module(
    ndim: int,
    order: int,
    dtype_str: str,
    device_id: int,
    settings: tuple[bool, bool, bool, str],
    equation: str = "acoustic",
) -> Any:
    """Compile one specialisation of ``cuda/<equation>.cu``, once per process.

    ``settings``: :func:`kernel_settings`.
    """
    import cupy

    fast_math, debug, cache, folder = settings
    src_dir = source_dir()
    code = preamble(ndim, order, np.dtype(dtype_str), debug=debug)
    code += (src_dir / f"{equation}.cu").read_text()
    with cupy.cuda.Device(device_id), _cupy_cache(cache, folder):
        mod = cupy.RawModule(code=code, options=compile_options(fast_math=fast_math))
        mod.compile()
    return mod


def precompile(
    ndims: Sequence[int] = (2, 3),
    orders: Sequence[int] = (2, 4, 6, 8),
    dtypes: Sequence[Any] = (np.float32, np.float64),
    devices: Sequence[int] | None = None,
    equations: Sequence[str] = tuple(WAVES),
) -> int:
    """Compile every CUDA kernel specialisation into the kernel cache; return how many.

    Run it once ahead of a cluster job (``sweep precompile``) on a node with
    the job's GPU model, with ``cuda_cache_dir`` on a file system the job's
    nodes share, so that no job step compiles.  The current ``fast_math``
    and ``debug`` settings are part of what is compiled.
    """
    try:
        import cupy
    except ImportError as exc:
        raise RuntimeError(
            f"precompiling the CUDA kernels needs CuPy ({exc}); install sweep[cuda]"
        ) from None
    if not config.get("cuda_cache"):
        raise RuntimeError(
            "the CUDA kernel cache is off (cuda_cache=False or SWEEP_CUDA_CACHE=0), so "
            "precompiled kernels would not be kept; turn it on to precompile"
        )
    if devices is None:
        devices = range(int(cupy.cuda.runtime.getDeviceCount()))
    settings = kernel_settings()
    count = 0
    for equation, device, ndim, order, dtype in itertools.product(
        equations, devices, ndims, orders, dtypes
    ):
        _module(int(ndim), int(order), np.dtype(dtype).str, int(device), settings, equation)
        count += 1
    return count


def run_graph(
    equation: str,
    ndim: int,
    order: int,
    is_double: bool,
    params: np.ndarray,
    fields: Any,
    t: int,
    n_steps: int,
) -> None:
    """Run forward steps ``t .. t + n_steps - 1`` of a staggered system as a CUDA-graph replay.

    ``fields``: the call's :class:`sweep._compiled._Fields`.  The graph of
    this chunk is captured on first use and kept (:mod:`sweep._cuda_graph`).
    """
    import cupy

    if equation not in IMAGE_SETS:
        raise ValueError(f"CUDA-graph replay runs the staggered systems only, not {equation}")
    dtype = np.dtype(np.float64 if is_double else np.float32)
    settings = kernel_settings()
    device = cupy.cuda.Device().id
    mod = _module(ndim, order, dtype.str, device, settings, equation)
    key = (equation, ndim, order, dtype.str, device, settings, params.tobytes())
    _cuda_graph.replay(
        key, fields, t, n_steps,
        chunk_capture(mod, equation, ndim, order, params, t, n_steps, stream_capture),
    )  # fmt: skip


def chunk_capture(
    mod: Any,
    equation: str,
    ndim: int,
    order: int,
    params: np.ndarray,
    t: int,
    n_steps: int,
    capture: Callable[[Any, Callable[[Any], None]], Any],
) -> Callable[[np.ndarray], Any]:
    """Return what captures a forward chunk over a pointer record (``sweep._cuda_graph.replay``).

    ``capture(mod, launches)`` records what ``launches(module)`` launches
    through ``module`` without running it and returns the graph
    (:func:`stream_capture`; the tests' host build records the calls).
    """

    def record(rec: np.ndarray) -> Any:
        return capture(
            mod, lambda m: run_steps(m, equation, ndim, order, False, params, rec, t, n_steps)
        )

    return record


class _DeviceGraph:
    """A captured CUDA graph, launched on the current stream (after the copies into its buffers)."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    def launch(self) -> None:
        import cupy

        self.graph.launch(cupy.cuda.get_current_stream())


def stream_capture(mod: Any, launches: Callable[[Any], None]) -> _DeviceGraph:
    """Capture the kernels ``launches(mod)`` starts on a side stream into a CUDA graph."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        try:
            launches(mod)
        finally:
            graph = stream.end_capture()
    return _DeviceGraph(graph)


def _swap(fields: np.ndarray, a: str, b: str, axes: list[int] | None = None) -> None:
    if axes is None:
        fields[a], fields[b] = fields[b].copy(), fields[a].copy()
    else:
        for ax in axes:
            fields[a][ax], fields[b][ax] = fields[b][ax].copy(), fields[a][ax].copy()


def run(
    equation: str,
    ndim: int,
    order: int,
    is_double: bool,
    adjoint: bool,
    params: np.ndarray,
    fields: np.ndarray,
    t: int,
    n_steps: int,
    n_threads: int = 0,
) -> None:
    """Run ``n_steps`` forward steps of ``equation`` from ``t``, or adjoint steps ending at ``t``.

    The arguments of the CPU entry ``sweep._C.run``; ``n_threads``
    is the CPU's and ignored here.
    """
    import cupy

    dtype = np.float64 if is_double else np.float32
    settings = kernel_settings()
    mod = _module(ndim, order, np.dtype(dtype).str, cupy.cuda.Device().id, settings, equation)
    run_steps(mod, equation, ndim, order, adjoint, params, fields, t, n_steps)
    if settings[1]:  # debug: report a kernel's failed index check here, not at a later call
        try:
            cupy.cuda.get_current_stream().synchronize()
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            raise RuntimeError(
                f"sweep debug: a CUDA kernel stopped ({exc}); the line starting 'sweep debug:' "
                "that it printed names the bad index"
            ) from exc


class _StaggeredBoundary:
    """Boundary saving's launches for a staggered system (``cuda/staggered_cuda.h``).

    In the order of the CPU's ``bs_replay`` and ``bs_reverse``
    (``sweep_cy/cpu_phased.h``); the state is the snapshot's fields
    (:data:`PHASE_FIELDS`).
    """

    def __init__(self, equation, kernel, p, f, ndim, h, grid, shot_grid, faces, face_grid) -> None:
        if equation not in PHASE_FIELDS:
            raise NotImplementedError(f"no CUDA boundary saving for {equation} (not reversible)")
        self.p, self.f, self.grid, self.shot_grid = p, f, grid, shot_grid
        self.split, self.nf = PHASE_FIELDS[equation][ndim]
        self.faces, self.face_grid, self.h = faces, face_grid, h
        self.k_copy, self.k_rows = kernel("bs_copy"), kernel("bs_rows")
        self.k_outer, self.k_sources = kernel("bs_outer"), kernel("bs_sources")
        self.k_images = kernel("images")
        n = {0: int(p["n_band"]), 1: int(p["n_ring"])}
        self.copy_grid = {w: ((int(p["n_shots"]) * c + 255) // 256,) for w, c in n.items()}
        self.n = n
        self.outer_grid = ((int(p["n_shots"]) * int(p["n_outer"]) + 255) // 256,)

    def _args(self, *rest: Any) -> tuple:
        return (self.p[()], self.f[()], *rest)

    def copy(self, slot: int, which: int, f0: int, f1: int, to_grid: int) -> None:
        """Save (load: ``to_grid``) fields [f0, f1) of the band (``which`` 0) or the ring (1)."""
        if self.n[which] and (which == 0 or int(self.f["replay_u"])):
            args = (np.int64(slot), np.int32(which), np.int32(f0), np.int32(f1), np.int32(to_grid))
            self.k_copy(self.copy_grid[which], (256,), self._args(*args))

    def _fields(self, phase: int) -> tuple[int, int]:
        return (self.split, self.nf) if phase else (0, self.split)

    def _images(self) -> None:
        """Fill the stresses' images behind every free face, as the forward does."""
        for d, side in self.faces:
            args = (np.int32(d), np.int32(side), np.int32(1), np.int32(0))
            self.k_images(self.face_grid(d, self.h + 1), (256,), self._args(*args))

    def replay(self, step: int, slot: int, sources: Any) -> None:
        """One step of the CPML replay (``bs_replay``)."""
        self.copy(slot, 1, self.split, self.nf, 0)  # the ring's stresses at the step's start
        for phase in (0, 1):
            at = np.int64(slot), np.int32(phase)
            self.k_rows(self.grid, _BLOCK, self._args(*at, np.int32(0)))
            sources(self.shot_grid, (128,), self._args(np.int64(step), np.int32(phase)))
            self.copy(slot, 0, *self._fields(phase), 1)  # the band's, at the step's end
            if phase:
                self._images()
            else:
                self.copy(slot, 1, 0, self.split, 0)  # the ring's velocities at its end

    def reverse(self, step: int, slot: int, sources: Any) -> None:
        """One step of the reconstruction (``bs_reverse``)."""
        for phase in (1, 0):
            self.copy(slot, 1, *self._fields(1 - phase), 1)
            if phase == 0:
                self._images()
            self.k_sources(self.shot_grid, (128,), self._args(np.int64(step), np.int32(phase)))
            self.k_rows(self.grid, _BLOCK, self._args(np.int64(slot), np.int32(phase), np.int32(1)))
        self.k_outer(self.outer_grid, (256,), self._args(np.int64(slot)))


def run_steps(
    mod: Any,
    equation: str,
    ndim: int,
    order: int,
    adjoint: bool,
    params: np.ndarray,
    fields: np.ndarray,
    t: int,
    n_steps: int,
) -> None:
    """Launch the kernels of one :func:`run` through ``mod.get_function``.

    ``mod`` is a CuPy RawModule, or the tests' host build of the same sources.
    Boundary saving's kernels are looked up only when the fields ask for it.
    A step of a staggered system (:data:`IMAGE_SETS`) is two phases, each
    its rows and then its points and images (``cuda/staggered_cuda.h``);
    the adjoint runs them in reverse.
    """
    p = params.astype(ACOUSTIC_PARAMS)
    f = fields.copy()
    shape = p["shape"]
    n_active_z = int(shape[0] - 2 * (order // 2)) if ndim == 3 else 1
    h = order // 2
    grid = (
        (int(shape[2]) - 2 * h + _BLOCK[0] - 1) // _BLOCK[0],
        (int(shape[1]) - 2 * h + _BLOCK[1] - 1) // _BLOCK[1],
        int(p["n_shots"]) * n_active_z,
    )
    n_shots = int(p["n_shots"])
    shot_grid = ((n_shots + 127) // 128,)
    axes = [3 - ndim + d for d in range(ndim)]
    faces = [(d, side) for d in axes for side, key in ((0, "free_lo"), (1, "free_hi")) if p[key][d]]
    staggered = equation in IMAGE_SETS

    def kernel(name: str) -> Any:
        return mod.get_function(f"{equation}_{name}")

    def face_grid(d: int, layers: int) -> tuple[int]:
        n1 = int(shape[1 if d == 0 else 0]) * int(shape[2 if d != 2 else 1])
        return ((n_shots * layers * n1 + 255) // 256,)

    main = kernel("adjoint" if adjoint else "forward")
    sources = kernel("adjoint_sources" if adjoint else "forward_sources")
    ghosts = kernel("images" if staggered else "ghosts")
    steps = range(t - 1, t - n_steps - 1, -1) if adjoint else range(t, t + n_steps)
    t_first = t - n_steps if adjoint else t
    k = max(int(p["store_every"]), 1)
    n_band = int(p["n_band"]) if int(f["band_idx"]) else 0
    waves = WAVES[equation]
    recon_names = [(f"recon_u{s}_next", f"recon_u{s}") for s in waves]
    recon = adjoint and bool(waves) and recon_names[0][1] in f.dtype.names
    recon = recon and bool(int(f[recon_names[0][1]])) and bool(int(f[GRADIENT[equation]]))
    # CPML replay (boundary saving): the forward loads the band's u^t and keeps
    # W^t of the outer cells and the ring's state; the adjoint correlates the
    # CPML cells with the W^t and loads the ring's state for the band's W^t.
    replay = bool(int(f["replay_w"]))
    n_ring = int(p["n_ring"]) if int(f["replay_u"]) and int(f["ring_code"]) else 0
    if n_ring and (replay or recon):
        ring = kernel("ring_load" if adjoint else "ring_save")
        ring_grid = ((n_shots * n_ring + 255) // 256,)
    if n_band and not staggered:
        band = kernel("band_restore" if adjoint else "band_save")
        band_load = kernel("band_load")
        band_grid = ((n_shots * n_band + 255) // 256,)
    rebuild = recon and equation in RECON_SNAPSHOT
    if rebuild:
        snapshot = kernel("recon_snapshot")
    if replay and recon and not rebuild:
        correlate = kernel("replay_correlate")
        cpml_grid = ((n_shots * int(p["n_cpml"]) + 255) // 256,)
    # Receivers: one thread each (forward), one per receiver cell (adjoint).
    receivers = kernel("inject_residuals" if adjoint else "record")
    n_rec_items = int(p["n_rec_groups"]) if adjoint else n_shots * int(p["n_rec"])
    rec_grid = ((n_rec_items + 255) // 256,) if int(f["rec"]) and n_rec_items else None
    # Free-surface ghosts: the new state of every wavefield (and the reconstruction's).
    targets = [f"u{s}_prev" for s in waves] + ([nxt for nxt, _ in recon_names] if recon else [])
    if staggered and faces and adjoint:
        halo = kernel("halo")

    def wave_points(step: int) -> None:
        """Run a wave equation's step after its rows: points, boundary saving, ghosts."""
        if rec_grid is not None:
            receivers(rec_grid, (256,), (p[()], f[()], np.int64(step)))
        sources(shot_grid, (128,), (p[()], f[()], np.int64(step)))
        if recon and n_band:
            band(
                band_grid,
                (256,),
                (p[()], f[()], np.int64(step - t_first), np.int32(step > 0)),
            )
        if recon and replay and not rebuild:
            correlate(cpml_grid, (256,), (p[()], f[()], np.int64(step - t_first)))
        for d, side in faces:
            for name in targets:
                ghosts(
                    face_grid(d, h),
                    (256,),
                    (p[()], np.uint64(f[name]), np.int32(d), np.int32(side)),
                )

    def images(image_set: int) -> None:
        """Fill (fold back) the images of one set across every free face, in the CPU's order."""
        if image_set not in IMAGE_SETS[equation]:
            return
        order = [(d, side) for d in (axes[::-1] if adjoint else axes) for side in (0, 1)]
        for d, side in order:
            if (d, side) in faces:
                args = (np.int32(d), np.int32(side), np.int32(image_set), np.int32(adjoint))
                ghosts(face_grid(d, h + 1), (256,), (p[()], f[()], *args))

    def staggered_points(step: int, phase: int) -> None:
        """Run a staggered system's phase after its rows (cuda/staggered_cuda.h)."""
        at, ph = np.int64(step), np.int32(phase)
        if not adjoint:
            sources(shot_grid, (128,), (p[()], f[()], at, ph))
            if rec_grid is not None:
                receivers(rec_grid, (256,), (p[()], f[()], at, ph))
            images(phase)
            return
        image_set = 1 - phase
        if image_set in IMAGE_SETS[equation]:
            for d, side in faces:
                args = (np.int32(d), np.int32(side), np.int32(image_set))
                halo(face_grid(d, h), (256,), (p[()], f[()], *args))
        if rec_grid is not None:
            receivers(rec_grid, (256,), (p[()], f[()], at, ph))
        images(image_set)
        sources(shot_grid, (128,), (p[()], f[()], at, ph))

    if staggered and (replay or n_band):
        bs = _StaggeredBoundary(equation, kernel, p, f, ndim, h, grid, shot_grid, faces, face_grid)
        if replay:  # the CPML replay (forward) or the reconstruction (adjoint)
            for step in steps:
                (bs.reverse if adjoint else bs.replay)(step, step - t_first, sources)
            return
    for step in steps:
        # Same slot rule as the CPU driver (store_slot in cpu_skeleton.h).
        slot = step // k - (t_first + k - 1) // k if step % k == 0 else -1
        if replay:
            slot = step - t_first
        if not adjoint and n_band and not staggered:
            load_or_save = band_load if replay else band
            load_or_save(band_grid, (256,), (p[()], f[()], np.int64(step - t_first)))
        if n_ring and (replay or recon):  # after the band's load; before the step's rows
            ring(ring_grid, (256,), (p[()], f[()], np.int64(step - t_first)))
        if rebuild:
            snapshot(grid, _BLOCK, (p[()], f[()], np.int64(slot)))
            slot = 0  # the rebuilt snapshot
        if staggered:
            for phase in (1, 0) if adjoint else (0, 1):
                main(grid, _BLOCK, (p[()], f[()], np.int64(slot), np.int32(phase)))
                staggered_points(step, phase)
            if n_band and not adjoint:  # boundary saving: the band's fields at the step's end
                bs.copy(step - t_first, 0, 0, bs.nf, 0)
            continue
        main(grid, _BLOCK, (p[()], f[()], np.int64(slot)))
        wave_points(step)
        for s in waves:
            _swap(f, f"u{s}_prev", f"u{s}")
            _swap(f, f"psi{s}", f"psi{s}_new", axes)
            if adjoint:
                _swap(f, f"zeta{s}", f"zeta{s}_new", axes)
        if recon:
            for nxt, cur in recon_names:
                _swap(f, nxt, cur)
