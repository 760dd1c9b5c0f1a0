"""PyTorch adapter: :class:`PropTorch`, a ``torch.nn.Module`` around any registered equation."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from functools import partial
from typing import Any

import torch
from torch.autograd.function import once_differentiable
from torch.utils.checkpoint import checkpoint

from .. import equations
from .._impl import resolve_impl
from .._vjp import vjp
from ._common import check_ckpt, chunk_sizes, make_settings, memory_kwargs, select
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
    use_ckpt, ckpt_chunks
        Checkpoint the eager time loop in ``ckpt_chunks`` chunks (default
        about ``sqrt(nt)``) with ``torch.utils.checkpoint``.
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
        use_ckpt: bool = False,
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
        self.impl = resolve_impl(wanted)
        self.eager_options = eager_options or EagerOptions()
        self.cuda_options = cuda_options or CUDAOptions()
        self.memory = self.cuda_options.memory
        self.use_ckpt, self.ckpt_chunks = use_ckpt, ckpt_chunks
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
        coeffs, state = plan.coefficients(*models), plan.initial_state()
        tensors = [x for x in (*models, amp) if isinstance(x, torch.Tensor)]
        if not (torch.is_grad_enabled() and any(x.requires_grad for x in tensors)):
            out = models[0].new_zeros((plan.n_shots, plan.n_rec, plan.nt))
            state = _run_steps_into(step, state, coeffs, amp, out)
            self._keep_last(plan, state)
            return out
        records, t = [], 0
        for n in chunk_sizes(plan.nt, self.ckpt_chunks) if self.use_ckpt else [plan.nt]:
            args = (step, state, coeffs, None if amp is None else amp[..., t : t + n], n)
            if self.use_ckpt and torch.is_grad_enabled():
                state, recs = checkpoint(_run_steps, *args, use_reentrant=False)
            else:
                state, recs = _run_steps(*args)
            records += recs
            t += n
        self._keep_last(plan, state)
        if plan.n_rec:
            return torch.stack(records, dim=-1)
        return models[0].new_zeros((plan.n_shots, 0, plan.nt))
