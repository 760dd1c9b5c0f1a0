"""PyTorch adapter: :class:`PropTorch`, a ``torch.nn.Module`` around any registered equation."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
from torch.autograd.function import once_differentiable
from torch.utils._pytree import tree_flatten, tree_unflatten

from .. import equations
from .._impl import resolve_impl
from .._vjp import vjp
from ._common import check_ckpt, eager_chunks, make_settings, memory_kwargs, select
from .options import CUDAOptions, EagerOptions

__all__ = ["PropTorch"]


@contextlib.contextmanager
def _stream_of(x: torch.Tensor) -> Iterator[None]:
    """Run CuPy kernels on torch's current stream for CUDA tensors."""
    if x.device.type != "cuda":
        yield
        return
    import cupy

    dev = x.device.index if x.device.index is not None else torch.cuda.current_device()
    stream = torch.cuda.current_stream(dev).cuda_stream
    with cupy.cuda.Device(dev), cupy.cuda.ExternalStream(stream, dev):
        yield


class _Core(torch.autograd.Function):
    """Compiled forward and hand-written adjoint; the pullback is a non-tensor tape."""

    @staticmethod
    def forward(ctx: Any, run: Any, names: tuple, amp: Any, *models: torch.Tensor) -> torch.Tensor:
        receivers, ctx.pullback = run(models, amp)
        ctx.names = names
        return receivers

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        grads = ctx.pullback(grad)  # any strides: the core's kernel_array lays it out
        need = ctx.needs_input_grad
        g_amp = grads.get("source_amplitudes") if need[2] else None
        g_models = (grads[n] if need[3 + i] else None for i, n in enumerate(ctx.names))
        return (None, None, g_amp, *g_models)


# Inductor inlines a kernel's producers into each consumer until an expression
# reaches this many operations (50 on the CPU by default).  A stencil step's
# backward reads every tap of every intermediate, so inlined producers are
# recomputed per tap (the VRZ step's backward: 2.2 MB of C++, 8x the time of
# its forward).  Materialising sooner speeds the backward and slows the forward
# (the acoustic forward 2x), so it applies to the step compiled with grad
# enabled (a graph of its own: dynamo compiles per grad mode) and to its
# backward, compiled lazily at its first use.
_GRAD_STEP_INDUCTOR = {"realize_cpu_opcount_threshold": 4}


def _grad_step_config() -> Any:
    """Context in which the differentiated step (and its backward) compile."""
    try:
        from torch._inductor import config
    except ImportError:
        return contextlib.nullcontext()
    known = {k: v for k, v in _GRAD_STEP_INDUCTOR.items() if hasattr(config, k)}
    return config.patch(known) if known else contextlib.nullcontext()


def _quiet(step: Any) -> Any:
    """Hide dynamo's note about array_api_compat's lru_cache'd type checks (pure helpers)."""

    def run(*args: Any) -> Any:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Dynamo detected a call to a `functools.lru_cache`")
            return step(*args)

    return run


def _detach(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _detach(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(_detach(v) for v in tree)
    return tree.detach() if isinstance(tree, torch.Tensor) else tree


def _run_steps(step: Any, state: Any, coeffs: Any, amp: Any, n: int) -> tuple[Any, list]:
    records = []
    for t in range(n):
        state, rec = step(state, coeffs, None if amp is None else amp[..., t])
        records.append(rec)
    return state, records


def _run_steps_into(step: Any, state: Any, coeffs: Any, amp: Any, out: torch.Tensor) -> Any:
    """Untracked steps writing the receiver samples into ``out`` (..., nt).

    Keeping one small tensor per step alive between the compiled step's large
    temporaries fragments the heap: resident memory grew by about a wavefield
    per step (11 GiB for 2000 steps of the 2D benchmark) without it.
    """
    for t in range(out.shape[-1]):
        state, rec = step(state, coeffs, None if amp is None else amp[..., t])
        if rec is not None:
            out[..., t] = rec
    return state


def _grad_leaf(x: Any, grad: bool) -> Any:
    """``x`` detached, requiring grad when asked and it can (floating-point tensors)."""
    if not isinstance(x, torch.Tensor):
        return x
    return x.detach().requires_grad_(grad and (x.is_floating_point() or x.is_complex()))


@dataclass
class _Loop:
    """The eager time loop of one call: its step, chunks and the tree of its coefficients."""

    plan: equations.EagerPlan
    step: Any
    sizes: list[int]
    coeff_spec: Any
    final_state: Any = None


class _CheckpointedLoop(torch.autograd.Function):
    """The eager time loop with checkpoints at chunk boundaries (PropTorch's default).

    The forward pass runs without a graph and keeps the state at the start of
    each chunk.  The backward pass replays the chunks last to first without a
    graph, keeping the state before each step of the chunk, and then
    differentiates the chunk one step at a time: ``n`` checkpoints and one
    chunk's states are alive at a time, and the forward pass runs twice.

    Unlike ``torch.utils.checkpoint``, no autograd graph lives longer than
    one step.  A graph that does (every step's, or one chunk's) leaves small
    long-lived allocations between each step's large temporaries, and glibc's
    allocator then could not reuse the freed temporaries: on the 60 x 160
    demo model (8 shots) resident memory grew by about 16 MB a step, 15 GiB
    for 900 steps, with or without ``torch.utils.checkpoint``.
    """

    @staticmethod
    def forward(ctx: Any, loop: _Loop, amp: Any, *coeff_leaves: Any) -> torch.Tensor:
        plan = loop.plan
        coeffs = tree_unflatten(list(coeff_leaves), loop.coeff_spec)
        like = next(c for c in coeff_leaves if isinstance(c, torch.Tensor))
        out = like.new_zeros((plan.n_shots, plan.n_rec, plan.nt))
        state, t, starts = plan.initial_state(), 0, []
        for n in loop.sizes:
            starts.append(state)
            chunk_amp = None if amp is None else amp[..., t : t + n]
            state = _run_steps_into(loop.step, state, coeffs, chunk_amp, out[..., t : t + n])
            t += n
        loop.final_state = state
        ctx.loop, ctx.starts = loop, starts
        ctx.tensor_pos = [i for i, c in enumerate(coeff_leaves) if isinstance(c, torch.Tensor)]
        ctx.leaves = [None if isinstance(c, torch.Tensor) else c for c in coeff_leaves]
        ctx.save_for_backward(amp, *(coeff_leaves[i] for i in ctx.tensor_pos))
        return out

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        # Grad mode is on here only under create_graph=True.  The gradient
        # below is built without a graph, so a second derivative through it
        # would silently miss terms: refuse instead.
        if torch.is_grad_enabled():
            raise RuntimeError(
                "PropTorch's checkpointed eager loop (use_ckpt=None or True, the default) is "
                "once differentiable; for second derivatives (create_graph=True) construct "
                "PropTorch(..., use_ckpt=False), which keeps the whole graph"
            )
        loop = ctx.loop
        amp, *tensors = ctx.saved_tensors
        need_amp = amp is not None and ctx.needs_input_grad[1]
        leaves = list(ctx.leaves)
        for i, x in zip(ctx.tensor_pos, tensors, strict=True):
            leaves[i] = x.detach().requires_grad_(ctx.needs_input_grad[2 + i])
        wanted = [i for i, x in enumerate(leaves) if getattr(x, "requires_grad", False)]
        coeffs = tree_unflatten(leaves, loop.coeff_spec)
        g_leaves: list[Any] = [None] * len(leaves)
        g_amp = torch.zeros_like(amp) if need_amp else None
        g_state: list[Any] = []  # cotangents of the state after step t
        t1 = loop.plan.nt
        for k in reversed(range(len(loop.sizes))):
            t0 = t1 - loop.sizes[k]
            # Replay the chunk without a graph, keeping the state before each step...
            states = [ctx.starts[k]]
            for t in range(t0, t1 - 1):
                amp_t = None if amp is None else amp[..., t]
                states.append(loop.step(states[-1], coeffs, amp_t)[0])
            # ...and differentiate one step at a time, so that no graph outlives its step.
            for t in reversed(range(t0, t1)):
                start_leaves, spec = tree_flatten(states.pop())
                # The state before step 0 is zeros, a constant.
                start = [_grad_leaf(x, t > 0) for x in start_leaves]
                amp_t = None if amp is None else amp[..., t].detach().requires_grad_(need_amp)
                with torch.enable_grad(), _grad_step_config():  # backward runs without grad
                    state, rec = loop.step(tree_unflatten(start, spec), coeffs, amp_t)
                pairs = [(rec, grad[..., t])] if rec is not None else []
                if g_state:
                    pairs += zip(tree_flatten(state)[0], g_state, strict=True)
                # Receivers of a zero state, say, are constants.
                pairs = [(x, g) for x, g in pairs if g is not None and x.requires_grad]
                needs = [x for x in start if getattr(x, "requires_grad", False)]
                inputs = needs + [leaves[i] for i in wanted]
                if need_amp:
                    inputs.append(amp_t)
                if not pairs:
                    g_state = []  # nothing later depends on this step
                    continue
                with _grad_step_config():
                    got = torch.autograd.grad(
                        [x for x, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True
                    )
                del pairs, state, rec
                n_start = len(needs)
                it = iter(got[:n_start])
                g_state = [next(it) if getattr(x, "requires_grad", False) else None for x in start]
                for i, g in zip(wanted, got[n_start : n_start + len(wanted)], strict=True):
                    if g is not None:
                        g_leaves[i] = g if g_leaves[i] is None else g_leaves[i] + g
                if need_amp and got[-1] is not None:
                    g_amp[..., t] = got[-1]
            t1 = t0
        for i in wanted:
            if g_leaves[i] is None:
                g_leaves[i] = torch.zeros_like(leaves[i])
        return (None, g_amp, *g_leaves)


class PropTorch(torch.nn.Module):
    """Differentiable propagation of a registered equation as a ``torch.nn.Module``.

    Parameters
    ----------
    equation : str
        Registry name (see ``sweep list equations``), e.g. ``"acoustic"``.
    grid_spacing, dt, source_locations, receiver_locations
        As for the equation's function (e.g. :func:`sweep.acoustic`).
    backend : {"torch", "eager", "cuda"}
        ``"torch"`` chooses by ``impl``; ``"eager"`` means ``impl="eager"`` and
        ``"cuda"`` means ``impl="c"`` (CUDA tensors run the CUDA kernels, CPU
        tensors the C/OpenMP kernels).
    impl : {None, "auto", "eager", "c"}
        ``None``/``"auto"`` uses the compiled binding when it imports; ``"c"``
        falls back to ``"eager"`` with a ``UserWarning`` when it does not.
    eager_options, cuda_options, backend_options : optional
        :class:`EagerOptions` / :class:`CUDAOptions` (``backend_options`` takes
        either); a block that does not match the backend is an error.
    use_ckpt : bool, optional
        Eager path: checkpoint the time loop (the default, ``None``, does;
        it has no effect on the compiled implementation, where ``True`` is an
        error).  The forward pass keeps the state at the start of each chunk;
        the backward pass replays one chunk at a time without a graph and
        differentiates it step by step, so a gradient holds ``ckpt_chunks``
        states and one chunk's states instead of every step's graph.  For the
        60 x 160 demo model (8 shots, 900 steps): 0.12 GiB of arrays instead
        of 0.55 GiB, and 0.23 GiB of resident memory instead of 15 GiB on
        glibc, for about 1.5 times the time of ``False``.  ``False`` keeps
        the whole graph: one forward pass less, and the only way to second
        derivatives (the checkpointed loop is once differentiable).
    ckpt_chunks : int, optional
        Number of chunks; default: the count that minimises the estimated
        peak memory (``sweep.estimate_memory(...).eager.torch_ckpt_chunks``).
    **options
        Further settings of the equation (``accuracy``, ``pml_width``, ...).
    """

    def __init__(
        self,
        equation: str = "acoustic",
        *,
        grid_spacing: Any,
        dt: float,
        source_locations: Any = None,
        receiver_locations: Any = None,
        backend: str = "torch",
        impl: str | None = None,
        eager_options: EagerOptions | None = None,
        cuda_options: CUDAOptions | None = None,
        backend_options: EagerOptions | CUDAOptions | None = None,
        use_ckpt: bool | None = None,
        ckpt_chunks: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__()
        self.spec, self.settings = make_settings(
            equation, grid_spacing, dt, source_locations, receiver_locations, options
        )
        check_ckpt(use_ckpt, ckpt_chunks)
        wanted, eager_options, cuda_options = select(
            self.spec, backend, impl, eager_options, cuda_options, backend_options, use_ckpt
        )
        self.impl = resolve_impl(self.spec.impl_for(wanted, self.settings))
        self.eager_options = eager_options or EagerOptions()
        self.cuda_options = cuda_options or CUDAOptions()
        self.memory = self.cuda_options.memory
        # None (the default) checkpoints the eager path and is moot for the compiled one.
        self.use_ckpt = (self.impl == "eager") if use_ckpt is None else use_ckpt
        self.ckpt_chunks = ckpt_chunks
        self._memory = memory_kwargs(self.spec, self.memory) if self.impl == "c" else {}
        if self._memory and self.settings.get("memory") is not None:
            raise ValueError(
                "memory options were given twice (memory= and cuda_options=CUDAOptions("
                "memory=...)); pass one of them"
            )
        self._compiled: dict[tuple, tuple[Any, Any]] = {}
        self.last_wavefield: torch.Tensor | None = None
        self.last_state: Any = None

    def forward(
        self, *models: torch.Tensor, source_amplitudes: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Receiver data ``(n_shots, n_receivers, nt)`` for the models (``spec.models`` order)."""
        if len(models) != len(self.spec.models):
            raise TypeError(
                f"{self.spec.name} takes {len(self.spec.models)} model tensor(s) "
                f"{self.spec.models}, got {len(models)}"
            )
        if self.impl == "c":
            return self._forward_c(models, source_amplitudes)
        return self._forward_eager(models, source_amplitudes)

    def _forward_c(self, models: tuple, amp: Any) -> torch.Tensor:
        settings = {**self.settings, **self._memory, "impl": "c"}
        with _stream_of(models[0]):
            if torch.is_grad_enabled() and any(
                x is not None and x.requires_grad for x in (amp, *models)
            ):
                return _Core.apply(partial(self._vjp, settings), self.spec.models, amp, *models)
            return self.spec.function(
                *(m.detach() for m in models),
                **settings,
                source_amplitudes=None if amp is None else amp.detach(),
            ).receivers

    def _vjp(self, settings: dict, models: tuple, amp: Any) -> tuple[torch.Tensor, Any]:
        out, pullback = vjp(self.spec.function, *models, source_amplitudes=amp, **settings)

        def pull(g: torch.Tensor) -> dict[str, torch.Tensor]:
            with _stream_of(g):
                return pullback(g)

        return out.receivers, pull

    def _step(self, plan: equations.EagerPlan) -> tuple[equations.EagerPlan, Any]:
        if not self.eager_options.use_compile:
            return plan, plan.step
        if plan.key not in self._compiled:
            while len(self._compiled) >= 4:
                self._compiled.pop(next(iter(self._compiled)))
            step = _quiet(torch.compile(plan.step, **self.eager_options.compile_kwargs()))
            self._compiled[plan.key] = (plan, step)
        return self._compiled[plan.key]

    def _keep_last(self, plan: equations.EagerPlan, state: Any) -> None:
        if self.eager_options.store_last_wavefield:
            self.last_state = _detach(state)
            self.last_wavefield = plan.wavefield(state).detach()

    def _forward_eager(self, models: tuple, amp: Any) -> torch.Tensor:
        plan = self.spec.eager_plan(models, amp, models[0], **self.settings)
        plan, step = self._step(plan)
        coeffs = plan.coefficients(*models)
        tensors = [x for x in (*models, amp) if isinstance(x, torch.Tensor)]
        finish = plan.finish or (lambda out: out)
        if not (torch.is_grad_enabled() and any(x.requires_grad for x in tensors)):
            out = models[0].new_zeros((plan.n_shots, plan.n_rec, plan.nt))
            state = _run_steps_into(step, plan.initial_state(), coeffs, amp, out)
            self._keep_last(plan, state)
            return finish(out)
        if self.use_ckpt:
            leaves, spec = tree_flatten(coeffs)
            loop = _Loop(plan, step, eager_chunks(plan, self.ckpt_chunks, "torch"), spec)
            out = _CheckpointedLoop.apply(loop, amp, *leaves)
            self._keep_last(plan, loop.final_state)
            loop.final_state = None
            return finish(out)
        state, records = _run_steps(step, plan.initial_state(), coeffs, amp, plan.nt)
        self._keep_last(plan, state)
        if plan.n_rec:
            return finish(torch.stack(records, dim=-1))
        return models[0].new_zeros((plan.n_shots, 0, plan.nt))
