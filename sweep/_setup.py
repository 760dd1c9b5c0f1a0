"""Validation and geometry of a propagator call, shared by every equation.

:func:`prepare` checks every argument of a propagator call before any compute
(models against their declared constraints, grid, time step against the CFL
limit of the equation's fastest wave, sources, receivers, boundaries, memory
options) and builds the :class:`~sweep._grid.Geometry`.  An equation supplies
its model declarations (:class:`sweep.equations.ModelSpec`) and a function
giving its wave speeds; everything else is the same for all of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import _memory
from . import _validate as val
from . import equations as _equations
from ._callbacks import Callbacks, check_callbacks
from ._grid import Geometry
from ._impl import resolve_impl
from ._warn import warn_user
from ._xp import array_namespace, is_concrete, library_name, to_host

__all__ = ["Call", "Speeds", "prepare"]


@dataclass(frozen=True)
class Speeds:
    """Wave speeds of a model, from the equation's declaration.

    Attributes
    ----------
    cfl : float
        Speed that bounds the stable time step (the fastest wave, including
        what the equation's coefficients couple between neighbouring cells).
    slowest : float
        Slowest wave speed (the dispersion warning, the default ``pml_freq``).
    damping : float
        Speed that scales the CPML damping (default for ``max_vel``).
    """

    cfl: float
    slowest: float
    damping: float


@dataclass
class Call:
    """A validated propagator call."""

    geom: Geometry
    impl: str
    models: dict[str, Any]
    amp: Any
    n_threads: int
    progress: bool
    memory: _memory.MemorySettings
    callbacks: Callbacks | None = None
    initial_state: dict[str, Any] | None = None
    # Validated settings of the equation's own (its engines' keyword arguments).
    extra: dict[str, Any] = field(default_factory=dict)
    # experimental_cuda_graph=True: forward runs on CuPy arrays replay CUDA graphs.
    cuda_graph: bool = False


def prepare(
    models: dict[str, Any],
    constraints: dict[str, str],
    speeds: Callable[[dict[str, np.ndarray], int], Speeds],
    *,
    equation: str,
    grid_spacing: float | Sequence[float],
    dt: float,
    source_amplitudes: Any,
    source_locations: Any,
    receiver_locations: Any,
    accuracy: int,
    pml_width: int | Sequence[int],
    free_surface: bool | Sequence[bool],
    pml_freq: float | None,
    max_vel: float | None,
    nt: int | None,
    impl: str | None,
    n_threads: int | None,
    progress: bool,
    forward_callback: Any = None,
    backward_callback: Any = None,
    callback_frequency: Any = 1,
    initial_state: Any = None,
    wavefields: Sequence[str] = ("u", "u_prev", "psi", "zeta"),
    cfl_scheme: str = "leapfrog",
    compiled: bool = True,
    **memory_options: Any,
) -> Call:
    """Validate every argument of a propagator call (before any compute).

    Parameters
    ----------
    models : dict
        The model arrays by name, in the propagator's order.
    constraints : dict
        ``"positive"``, ``"nonnegative"``, ``"at_least_one"`` or ``"any"`` per model.
    speeds : callable
        ``speeds(host_models, order) -> Speeds`` of concrete models.
    equation : str
        The propagator's name, for messages.
    initial_state : dict, optional
        The state of step 0 (a previous result's ``state``): checked against
        ``wavefields``, the equation's declared state fields.
    cfl_scheme : str
        The time stepping of the CFL check (:func:`sweep._validate.cfl_limit`):
        ``"leapfrog"`` (second-order fields) or ``"staggered"`` (first-order
        systems).
    compiled : bool
        Whether the equation has compiled kernels; without them ``impl=None``
        runs eager and ``impl="c"`` is an error.
    **memory_options
        The memory keywords (see :func:`sweep._memory.check_settings`).

    Returns
    -------
    Call
    """
    names = list(models)
    first = names[0]
    for name, x in models.items():
        val.check_model(name, x, constraint=constraints[name])
    lead = models[first]
    for name in names[1:]:
        x = models[name]
        if tuple(x.shape) != tuple(lead.shape):
            raise ValueError(
                f"{name} has shape {tuple(x.shape)} but {first} has {tuple(lead.shape)}; "
                f"every model of sweep.{equation} is on the same grid"
            )
        if val.dtype_name(x) != val.dtype_name(lead):
            raise TypeError(
                f"{name} is {val.dtype_name(x)} but {first} is {val.dtype_name(lead)}; "
                "use one dtype for all arrays"
            )
        if array_namespace(x) is not array_namespace(lead):
            raise TypeError(
                f"{name} is a {library_name(x)} array but {first} is {library_name(lead)}; "
                "pass every array from the same library"
            )
    ndim = lead.ndim
    model_shape = tuple(int(s) for s in lead.shape)
    model_dtype = val.dtype_name(lead)
    spacing = val.check_spacing(grid_spacing, ndim)
    dt = val.check_dt(dt)
    order = val.check_accuracy(accuracy)
    mem = _memory.check_settings(**memory_options)
    spec = _equations.REGISTRY.get(equation)
    if mem.memory is not None and mem.memory.strategy == "boundary" and spec is not None:
        if not spec.reversible:  # the declaration says so: refused before any compute
            raise _memory.boundary_refused(equation, spec.irreversible)
    callbacks = check_callbacks(forward_callback, backward_callback, callback_frequency)
    impl = resolve_impl(impl, compiled=compiled, equation=equation)
    if impl == "eager" and backward_callback is not None:
        raise ValueError(
            "backward_callback runs in the compiled adjoint pass (impl='c'); with impl='eager' "
            "gradients come from the array library's autodiff, which has no such hook"
        )
    widths, free = val.check_pml(pml_width, free_surface, model_shape)
    for d, n in enumerate(model_shape):
        if n < 2 * val._fd.halo(order) + 1 and (free[2 * d] or free[2 * d + 1]):
            raise ValueError(
                f"{first} has {n} cells along axis {d}, too few for a free surface with "
                f"accuracy={order}; it needs at least {2 * val._fd.halo(order) + 1}"
            )
    if source_amplitudes is not None:
        if source_locations is None:
            raise ValueError("source_locations is required when source_amplitudes is given")
        n_shots, n_src, nt_amp = val.check_amplitudes(
            "source_amplitudes", source_amplitudes, None, model_dtype
        )
        if nt is not None and nt != nt_amp:
            raise ValueError(f"nt={nt} disagrees with source_amplitudes.shape[-1]={nt_amp}")
        nt = nt_amp
        src_loc = val.check_locations(
            "source_locations", source_locations, model_shape, n_shots, n_src, free
        )
        val.check_not_on_surface("source_locations", src_loc, model_shape, free)
        if array_namespace(source_amplitudes) is not array_namespace(lead):
            raise TypeError(
                f"source_amplitudes is a {library_name(source_amplitudes)} array but {first} is "
                f"{library_name(lead)}; pass both from the same library"
            )
    else:
        if source_locations is not None:
            raise ValueError("source_locations was given without source_amplitudes")
        if nt is None:
            raise ValueError("nt is required when there are no source_amplitudes")
        n_shots = None
        src_loc = None
    if not isinstance(nt, int) or nt < 1:
        raise ValueError(f"nt must be a positive integer number of time steps, got {nt!r}")
    if receiver_locations is None:
        rec_loc = np.zeros((n_shots or 1, 0, ndim), dtype=np.int64)
    else:
        rec_loc = val.check_locations(
            "receiver_locations", receiver_locations, model_shape, n_shots, None, free
        )
    n_shots = rec_loc.shape[0] if n_shots is None else n_shots
    if src_loc is None:
        src_loc = np.zeros((n_shots, 0, ndim), dtype=np.int64)
    if not all(is_concrete(x) for x in models.values()):
        raise ValueError(
            f"the models are traced JAX values; sweep.{equation} needs concrete model values for "
            "its CFL and CPML set-up. Use sweep.propagator.jax.PropJax inside jax.jit."
        )
    speed = speeds({k: np.asarray(to_host(x)) for k, x in models.items()}, order)
    val.check_cfl(dt, speed.cfl, spacing, order, cfl_scheme)
    v_max = speed.damping
    if max_vel is not None:
        if not (isinstance(max_vel, (int, float)) and math.isfinite(max_vel) and max_vel > 0):
            raise ValueError(f"max_vel must be a positive velocity, got {max_vel!r}")
        v_max = float(max_vel)
    if source_amplitudes is not None:
        val.warn_dispersion(source_amplitudes, dt, speed.slowest, spacing, order)
    if pml_freq is None:
        # The highest frequency resolved with 10 cells per wavelength in the slowest medium.
        pml_freq = speed.slowest / (10.0 * max(spacing))
    if not (isinstance(pml_freq, (int, float)) and math.isfinite(pml_freq) and pml_freq >= 0):
        raise ValueError(f"pml_freq must be a non-negative frequency in Hz, got {pml_freq!r}")
    if n_threads is not None and (not isinstance(n_threads, int) or n_threads < 0):
        raise ValueError(
            f"n_threads must be a non-negative integer (0: all cores), got {n_threads!r}"
        )
    geom = Geometry(
        ndim=ndim,
        order=order,
        model_shape=model_shape,
        spacing=spacing,
        dt=dt,
        nt=nt,
        pml_width=widths,
        free_surface=free,
        pml_freq=float(pml_freq),
        v_max=v_max,  # CPML damping scale
        src_loc=src_loc,
        rec_loc=rec_loc,
    )
    if impl == "eager" and not _memory.is_default(mem):
        warn_user(
            "the memory options (memory=, storage_mode=, storage_compression=, "
            "model_gradient_sampling_interval=) apply to impl='c'; the eager path is "
            "differentiated by the array library (PropTorch and PropJax checkpoint it by "
            "default; see their use_ckpt and ckpt_chunks)"
        )
    if initial_state is not None:
        check_initial_state(initial_state, geom, lead, wavefields)
    return Call(geom, impl, dict(models), source_amplitudes, int(n_threads or 0), bool(progress),
                mem, callbacks, initial_state)  # fmt: skip


def check_initial_state(state: Any, geom: Geometry, like: Any, wavefields: Sequence[str]) -> None:
    """Check a restart state: a previous result's ``state`` for the same grid and shots."""
    if not isinstance(state, dict):
        raise TypeError(
            f"initial_state must be a dict like a result's .state, got {type(state).__name__}"
        )
    missing = [k for k in wavefields if k not in state]
    if missing:
        raise ValueError(
            f"initial_state lacks {missing}; pass a previous result's .state (keys "
            f"{list(wavefields)})"
        )
    shape = (geom.n_shots, *geom.padded_shape)
    for key in wavefields:
        value = state[key]
        arrays = value if isinstance(value, (list, tuple)) else [value]
        if isinstance(value, (list, tuple)) and len(value) != geom.ndim:
            raise ValueError(f"initial_state[{key!r}] needs one array per axis ({geom.ndim})")
        for x in arrays:
            if tuple(getattr(x, "shape", ())) != shape:
                raise ValueError(
                    f"initial_state[{key!r}] has shape {tuple(getattr(x, 'shape', ()))}; a "
                    f"restart needs the padded shape {shape} of this call (same model, "
                    "pml_width, accuracy and shots as the run it continues)"
                )
            if val.dtype_name(x) != val.dtype_name(like) or (
                array_namespace(x) is not array_namespace(like)
            ):
                raise TypeError(
                    f"initial_state[{key!r}] must be a {library_name(like)} "
                    f"{val.dtype_name(like)} array like the models"
                )
            if is_concrete(x) and not np.all(np.isfinite(np.asarray(to_host(x)))):
                raise ValueError(f"initial_state[{key!r}] contains NaN or infinite values")


def velocity_speeds(name: str) -> Callable[[dict[str, np.ndarray], int], Speeds]:
    """Speeds of an equation whose wave speed is the model ``name`` itself."""

    def speeds(models: dict[str, np.ndarray], order: int) -> Speeds:
        v = models[name]
        v_max = float(v.max())
        return Speeds(cfl=v_max, slowest=float(v.min()), damping=v_max)

    return speeds
