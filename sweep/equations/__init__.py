"""Registry of the equations sweep can propagate.

Each :class:`EquationSpec` says what an equation is (dimensions, models,
wavefields, source and receiver kinds, orders of accuracy), whether it has
compiled kernels, and where its code lives.  The adapters
(:mod:`sweep.propagator.torch`, :mod:`sweep.propagator.jax`) and the ``sweep``
command line are written against this registry only, so a new equation is one
``REGISTRY`` line plus its own module.

Code is referenced by ``"module:attribute"`` strings and imported on first
use, so importing this module stays cheap and never imports torch or jax.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["REGISTRY", "EagerPlan", "EquationSpec", "ModelSpec", "get", "names"]


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


# Keywords of the compiled gradient's memory strategies (see sweep._memory).
MEMORY_OPTIONS = (
    "memory",
    "storage_mode",
    "storage_compression",
    "model_gradient_sampling_interval",
    "storage_bytes_limit_device",
    "storage_bytes_limit_host",
)

# Keywords every propagator takes besides its models, sources and receivers.
PROPAGATION_OPTIONS = (
    "accuracy",
    "pml_width",
    "free_surface",
    "pml_freq",
    "max_vel",
    "nt",
    "n_threads",
    "progress",
    "forward_callback",
    "backward_callback",
    "callback_frequency",
    "initial_state",
    *MEMORY_OPTIONS,
)


@dataclass(frozen=True)
class ModelSpec:
    """One model parameter of an equation.

    Attributes
    ----------
    name : str
        Argument name, e.g. ``"vp"``.
    constraint : str
        ``"positive"`` (velocities, impedances), ``"nonnegative"``
        (conductivities), ``"at_least_one"`` (relative permittivities) or
        ``"any"`` (signed perturbations); checked before any compute.
    """

    name: str
    constraint: str = "positive"


@dataclass(frozen=True)
class EquationSpec:
    """Static description of one equation.

    Attributes
    ----------
    name : str
        Registry key, e.g. ``"acoustic"``.
    ndims : tuple of int
        Supported numbers of spatial dimensions.
    models : tuple of str
        Model parameters, in the order the propagator takes them positionally.
    wavefields : tuple of str
        Fields of the propagator's state.
    sources, receivers : tuple of str
        Kinds of source injection and receiver recording.
    orders : tuple of int
        Supported spatial orders of accuracy.
    compiled : bool
        Whether the equation has compiled kernels (``impl="c"``).
    entry : str
        ``"module:function"`` of the NumPy-level propagator.  It takes the
        models positionally, then ``grid_spacing, dt`` and keyword settings,
        and supports :func:`sweep.vjp`.
    eager_entry : str or None
        ``"module:function"`` of the eager-plan builder used by the adapters
        (see :class:`EagerPlan`); None if the equation has no eager path.
    options : tuple of str
        Keyword settings of the propagator beyond grid, time step, sources and
        receivers.
    description : str
        One line for listings.
    constraints : tuple of str
        Constraint of each model (see :class:`ModelSpec`); default all
        ``"positive"``.
    outputs : tuple of str
        Recorded outputs of the propagator's result; the first is the
        differentiable one (what the adapters return).
    snapshot : tuple of str
        What the compiled adjoint needs stored per step for the model
        gradient (documentation of the memory strategies' unit).
    reversible : bool
        Whether the update can be run backwards in time (boundary saving);
        when False, boundary saving is refused before any compute and the
        memory planner skips it.
    irreversible : str
        Why not (for the refusal's message), when ``reversible`` is False.
    compiled_refusal : str or None
        ``"module:function"`` of ``refusal(settings) -> str | None``: why the
        compiled kernels cannot run a call with these keyword settings (the
        call then runs eager under ``impl=None``, and ``impl="c"`` raises
        with that reason); None: they run every call.
    problem : str or None
        ``"module:function"`` of ``random_models(shape, rng, dtype) -> dict``:
        a small random model of the equation for the contract tests
        (:func:`sweep.testing.random_problem`); None: a velocity of
        1500-2000 m/s named by ``models[0]``.
    extra_receivers : str or None
        ``"module:function"`` of ``count(settings) -> int``: receiver columns
        a call's keyword settings add after those of ``receiver_locations``
        (an elastic fibre's channels); None: none.
    """

    name: str
    ndims: tuple[int, ...] = (2, 3)
    models: tuple[str, ...] = ("v",)
    wavefields: tuple[str, ...] = ()
    sources: tuple[str, ...] = ("pressure",)
    receivers: tuple[str, ...] = ("pressure",)
    orders: tuple[int, ...] = (2, 4, 6, 8)
    compiled: bool = True
    entry: str = ""
    eager_entry: str | None = None
    options: tuple[str, ...] = PROPAGATION_OPTIONS
    description: str = ""
    constraints: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ("receivers",)
    snapshot: tuple[str, ...] = ()
    reversible: bool = True
    irreversible: str = ""
    compiled_refusal: str | None = None
    problem: str | None = None
    extra_receivers: str | None = None

    def n_receivers(self, settings: dict[str, Any]) -> int:
        """Receiver columns of a call with keyword ``settings`` (the data's second axis)."""
        rec = settings.get("receiver_locations")
        n = 0 if rec is None else int(np.shape(rec)[1])
        if self.extra_receivers is not None:
            n += int(_load(self.extra_receivers)(settings))
        return n

    def __post_init__(self) -> None:
        if ":" not in self.entry:
            raise ValueError(
                f"equation {self.name!r}: entry must name its propagator as 'module:function', "
                f"got {self.entry!r}"
            )

    @property
    def model_specs(self) -> tuple[ModelSpec, ...]:
        """The models with their constraints."""
        cons = self.constraints or ("positive",) * len(self.models)
        return tuple(ModelSpec(n, c) for n, c in zip(self.models, cons, strict=True))

    @property
    def gradients(self) -> tuple[str, ...]:
        """Names of the gradients :func:`sweep.vjp` returns."""
        return (*self.models, "source_amplitudes")

    @property
    def function(self) -> Callable[..., Any]:
        """The propagator function (imported on first use)."""
        return _load(self.entry)

    @property
    def eager_plan(self) -> Callable[..., EagerPlan]:
        """The eager-plan builder (imported on first use)."""
        if self.eager_entry is None:
            raise NotImplementedError(f"equation {self.name!r} has no eager implementation")
        return _load(self.eager_entry)

    def impl_for(self, impl: str | None, settings: dict[str, Any]) -> str | None:
        """Return the impl to request for a call with keyword ``settings``.

        ``impl`` unchanged, except where the compiled kernels cannot run these
        settings (:attr:`compiled_refusal`): then ``"eager"`` for None/"auto",
        and a ``ValueError`` with the reason for ``"c"``.
        """
        if not self.compiled or self.compiled_refusal is None or impl == "eager":
            return impl
        reason = _load(self.compiled_refusal)(settings)
        if reason is None:
            return impl
        if impl == "c":
            raise ValueError(
                f"sweep.{self.name} impl='c' cannot run this call: {reason}; use impl='eager' "
                "(or impl=None, which picks it)"
            )
        return "eager"

    def option_defaults(self) -> dict[str, Any]:
        """Default value of each option, read from the propagator's signature."""
        params = inspect.signature(self.function).parameters
        return {name: params[name].default if name in params else None for name in self.options}


@dataclass
class EagerPlan:
    """One eager propagation broken into steps, for the adapters' time loops.

    Attributes
    ----------
    nt, n_shots, n_src, n_rec : int
        Time steps, shots, sources and receivers per shot.
    coefficients : callable
        ``coefficients(*models) -> coeffs``: the differentiable per-call
        preprocessing of the models (any pytree of arrays).
    initial_state : callable
        ``initial_state() -> state`` (a pytree of zero arrays).
    step : callable
        ``step(state, coeffs, amp_t) -> (state, rec_t)``, pure and out of place;
        ``amp_t`` has shape ``(n_shots, n_src)`` and ``rec_t`` ``(n_shots, n_rec)``
        (None when there are no receivers).
    wavefield : callable
        ``wavefield(state) -> array`` of the primary field on the model grid.
    key : tuple
        Hashable summary of the constants baked into ``step`` (for caches of
        compiled steps).
    memory : EagerMemoryEstimate, optional
        Estimated bytes of a gradient run; the adapters plan their checkpoint
        chunks from it (None: about ``sqrt(nt)`` chunks).
    finish : callable, optional
        ``finish(receivers) -> receivers``: a differentiable map of the
        stacked ``(n_shots, n_rec, nt)`` samples to the receivers (e.g. the
        time integral of strain receivers); None: the samples themselves.
    """

    nt: int
    n_shots: int
    n_src: int
    n_rec: int
    coefficients: Callable[..., Any]
    initial_state: Callable[[], Any]
    step: Callable[[Any, Any, Any], tuple[Any, Any]]
    wavefield: Callable[[Any], Any]
    key: tuple
    memory: Any = None
    finish: Callable[[Any], Any] | None = None


def _host_proxy(x: Any, fill: float | None, name: str, needs: str) -> np.ndarray | None:
    """Host copy of ``x``, or a stand-in of its shape when ``x`` is a JAX tracer."""
    from .._xp import is_concrete, to_host

    if x is None:
        return None
    if is_concrete(x):
        return np.asarray(to_host(x))
    if fill is None:
        raise ValueError(
            f"{name} is a traced JAX value (inside jax.jit, jax.grad or jax.vmap), so its values "
            f"are unknown when the eager time loop is built; pass {needs} to the propagator "
            "(they fix the CFL check and the CPML profiles), or use impl='c'"
        )
    return np.full(tuple(x.shape), fill, dtype=str(x.dtype).rsplit(".", 1)[-1])


def build_eager_plan(
    models: Sequence[Any],
    source_amplitudes: Any,
    like: Any,
    settings: dict[str, Any],
    *,
    spec: EquationSpec,
    prepare: Callable[..., Any],
    engine_cls: Any,
    states: int = 1,
) -> EagerPlan:
    """Eager plan of a registered equation (validation and geometry from the core).

    Parameters
    ----------
    models : sequence of array
        In ``spec.models`` order; may be JAX tracers when ``max_vel`` and
        ``pml_freq`` are set (the first model, the wave speed, is then taken
        as ``max_vel`` everywhere for the set-up, positive models as 1, signed
        ones as 0).
    source_amplitudes : array or None
        Shape ``(n_shots, n_sources, nt)``.
    like : array
        A concrete array of the target library, device and dtype.
    settings : dict
        ``grid_spacing``, ``dt`` and keyword arguments of ``spec.function``.
    spec : EquationSpec
        The equation.
    prepare : callable
        The equation's validation: takes the propagator's arguments by name
        and returns a call with ``.geom``.
    engine_cls : type
        The equation's :class:`sweep._eager.EagerBase` subclass.
    states : int
        Coupled wavefields of the step (for the memory estimate).
    """
    from .._eager_memory import eager_memory
    from .._validate import dtype_name

    traced_needs = "max_vel= and pml_freq="
    pml_freq = settings.get("pml_freq")
    max_vel = settings.get("max_vel")
    known = max_vel is not None and pml_freq is not None
    hosts = []
    for i, (x, m) in enumerate(zip(models, spec.model_specs, strict=True)):
        if not known:
            fill = None
        elif i == 0:
            fill = max_vel
        else:
            fill = 0.0 if m.constraint == "any" else 1.0
        hosts.append(_host_proxy(x, fill, m.name, traced_needs))
    for name in ("forward_callback", "backward_callback", "initial_state"):
        if settings.get(name) is not None:
            raise ValueError(
                f"{name} is not supported by the adapters' eager time loop yet; call "
                f"sweep.{spec.name} directly, or use impl='c' where the equation has it"
            )
    amp_host = _host_proxy(source_amplitudes, 0.0, "source_amplitudes", "")
    # Memory strategies belong to the compiled adjoint; eager gradients come from autodiff.
    settings = {k: x for k, x in settings.items() if k not in MEMORY_OPTIONS}
    bound = inspect.signature(spec.function).bind(
        *hosts, source_amplitudes=amp_host, impl="eager", **settings
    )
    bound.apply_defaults()
    call = prepare(**bound.arguments)
    geom = call.geom
    engine = engine_cls.build(geom, like, **call.extra)
    key = (
        spec.name,
        geom.model_shape,
        geom.nt,
        geom.n_shots,
        str(like.dtype),
        str(engine.device),
        geom.v_max,
        geom.pml_freq,
        engine.plan_key,
    )
    return EagerPlan(
        nt=geom.nt,
        n_shots=geom.n_shots,
        n_src=geom.n_src,
        n_rec=geom.n_rec,
        coefficients=engine.coefficients,
        initial_state=engine.initial_state,
        step=engine.step,
        wavefield=engine.wavefield,
        key=key,
        memory=eager_memory(geom, np.dtype(dtype_name(like)).itemsize, states=states),
        finish=getattr(engine, "finish_records", None),
    )


def acoustic_eager_plan(
    models: Sequence[Any], source_amplitudes: Any, like: Any, **settings: Any
) -> EagerPlan:
    """Eager plan of :func:`sweep.acoustic` (see :func:`build_eager_plan`)."""
    from .acoustic.eager import EagerAcoustic
    from .acoustic.propagator import _prepare

    return build_eager_plan(
        models, source_amplitudes, like, settings, spec=REGISTRY["acoustic"], prepare=_prepare,
        engine_cls=EagerAcoustic,
    )  # fmt: skip


def _eager_plan_of(
    name: str, engine: str, prepare: str, states: int = 1
) -> Callable[..., EagerPlan]:
    """Make the eager-plan builder of equation ``name`` (engine and validation by import path)."""

    def plan(
        models: Sequence[Any], source_amplitudes: Any, like: Any, **settings: Any
    ) -> EagerPlan:
        return build_eager_plan(
            models, source_amplitudes, like, settings, spec=REGISTRY[name],
            prepare=_load(prepare), engine_cls=_load(engine), states=states,
        )  # fmt: skip

    plan.__doc__ = f"Eager plan of :func:`sweep.{name}` (see :func:`build_eager_plan`)."
    return plan


vrz_eager_plan = _eager_plan_of(
    "vrz", "sweep.equations.vrz.eager:EagerVRZ", "sweep.equations.vrz.propagator:_prepare"
)
lsrtm_eager_plan = _eager_plan_of(
    "lsrtm", "sweep.equations.lsrtm.eager:EagerLSRTM",
    "sweep.equations.lsrtm.propagator:_prepare", states=2,
)  # fmt: skip

elastic_eager_plan = _eager_plan_of(
    "elastic", "sweep.equations.elastic.eager:EagerElastic",
    "sweep.equations.elastic.propagator:_prepare", states=6,
)  # fmt: skip

tm2d_eager_plan = _eager_plan_of(
    "tm2d", "sweep.equations.maxwell.eager:EagerMaxwell",
    "sweep.equations.maxwell.propagator:prepare_tm2d", states=3,
)  # fmt: skip
maxwell3d_eager_plan = _eager_plan_of(
    "maxwell3d", "sweep.equations.maxwell.eager:EagerMaxwell",
    "sweep.equations.maxwell.propagator:prepare_maxwell3d", states=6,
)  # fmt: skip

_MAXWELL_OPTIONS = (*PROPAGATION_OPTIONS, "compute_precision")


def _maxwell(name: str, ndim: int, description: str, options: tuple[str, ...]) -> EquationSpec:
    """Declare TM2D or 3D Maxwell (one code, two registry names)."""
    e = ("ey",) if ndim == 2 else ("ex", "ey", "ez")
    h = ("hx", "hz") if ndim == 2 else ("hx", "hy", "hz")
    return EquationSpec(
        name,
        ndims=(ndim,),
        models=("epsilon", "sigma", "mu"),
        constraints=("at_least_one", "nonnegative", "positive"),
        wavefields=(*e, *h, "m_*"),
        sources=e,
        receivers=e,
        entry=f"sweep.equations.maxwell:{name}",
        eager_entry=f"sweep.equations:{name}_eager_plan",
        options=options,
        snapshot=("curl E per H", "E and curl H per E"),
        reversible=False,
        irreversible="with sigma > 0 the semi-implicit loss term damps the fields",
        problem="sweep.equations.maxwell.problem:random_models",
        description=description,
    )


# The state of the second-order pressure equations (acoustic, VRZ): two time
# levels and the CPML memory variables.
_PRESSURE_FIELDS = ("u", "u_prev", "psi", "zeta")

REGISTRY: dict[str, EquationSpec] = {
    "acoustic": EquationSpec(
        "acoustic",
        wavefields=_PRESSURE_FIELDS,
        entry="sweep.equations.acoustic:acoustic",
        eager_entry="sweep.equations:acoustic_eager_plan",
        snapshot=("W",),
        problem="sweep.equations.acoustic.problem:random_models",
        description="constant-density acoustic wave equation (pressure)",
    ),
    "vrz": EquationSpec(
        "vrz",
        models=("vp", "z"),
        constraints=("positive", "positive"),
        wavefields=_PRESSURE_FIELDS,
        entry="sweep.equations.vrz:vrz",
        eager_entry="sweep.equations:vrz_eager_plan",
        snapshot=("W", "u", "psi"),
        problem="sweep.equations.vrz.problem:random_models",
        description="variable-density acoustic equation in velocity and impedance (pressure)",
    ),
    "lsrtm": EquationSpec(
        "lsrtm",
        models=("vp", "mp"),
        constraints=("positive", "any"),
        wavefields=("u0", "u0_prev", "psi0", "zeta0", "u1", "u1_prev", "psi1", "zeta1"),
        entry="sweep.equations.lsrtm:lsrtm",
        eager_entry="sweep.equations:lsrtm_eager_plan",
        outputs=("receivers", "background_receivers"),
        snapshot=("W0", "W1"),
        problem="sweep.equations.lsrtm.problem:random_models",
        description="Born modelling (scattered pressure) and migration for LSRTM",
    ),
    "elastic": EquationSpec(
        "elastic",
        models=("vp", "vs", "rho"),
        constraints=("positive", "nonnegative", "positive"),
        wavefields=("vz", "vy", "vx", "szz", "syy", "sxx", "syz", "sxz", "sxy", "m_*"),
        sources=("fz", "fy", "fx", "p"),
        receivers=(
            *("vz", "vy", "vx", "p", "szz", "syy", "sxx", "syz", "sxz", "sxy"),
            *("ezz", "eyy", "exx", "eyz", "exz", "exy"),
        ),
        entry="sweep.equations.elastic:elastic",
        extra_receivers="sweep.equations.elastic.das:fibre_channels",
        eager_entry="sweep.equations:elastic_eager_plan",
        options=(
            "source_kind",
            "receiver_kind",
            "gauge_length",
            "quantity",
            "fibre",
            *PROPAGATION_OPTIONS,
        ),
        snapshot=("D_v", "D_jj", "D_ab + D_ba"),
        problem="sweep.equations.elastic.problem:random_models",
        description="isotropic elastic velocity-stress system on a staggered grid (2D/3D)",
    ),
    "tm2d": _maxwell(
        "tm2d", 2, "Maxwell's equations, TM mode in 2D (E_y, H_x, H_z), for radar", _MAXWELL_OPTIONS
    ),
    "maxwell3d": _maxwell(
        "maxwell3d",
        3,
        "Maxwell's equations in 3D on the Yee grid, for radar",
        (
            "source_component",
            "receiver_component",
            *_MAXWELL_OPTIONS,
            "python_backend",
            "experimental_cuda_graph",
        ),
    ),
}


def names() -> list[str]:
    """Return the registered equation names, sorted."""
    return sorted(REGISTRY)


def get(name: str | EquationSpec) -> EquationSpec:
    """Look up an equation, suggesting the closest name when it is unknown.

    Parameters
    ----------
    name : str or EquationSpec
        Registry key (a spec is returned unchanged).

    Returns
    -------
    EquationSpec

    Raises
    ------
    ValueError
        For an unknown name; the message suggests the closest registered one.
    """
    if isinstance(name, EquationSpec):
        return name
    if not isinstance(name, str):
        raise TypeError(f"equation must be a name (str), got {type(name).__name__}")
    spec = REGISTRY.get(name) or REGISTRY.get(name.lower())
    if spec is None:
        raise ValueError(f"unknown equation {name!r}{suggest(name, names())}")
    return spec


def suggest(word: str, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` (or the list of choices) for error messages."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; choose from {', '.join(repr(c) for c in choices)}"
