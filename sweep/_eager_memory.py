"""Memory of an eager gradient (PyTorch or JAX autodiff), with and without checkpointing.

The eager path (``impl="eager"``) is differentiated by the array library, so
the compiled strategies of :mod:`sweep._memory` do not apply to it.  What it
keeps instead:

* Without checkpointing, autodiff keeps every step's residuals: for the
  acoustic step that is the bracket ``W^t`` on the interior (the factor of
  ``v^2 dt^2`` in the update), ``nt`` interior fields in all.
* ``PropTorch`` checkpoints in ``n`` chunks by default: the forward pass
  keeps the state at the start of each chunk (``u``, ``u_prev`` and the CPML
  strips), and the backward pass replays one chunk at a time without a
  graph, keeping the state before each of its steps, then differentiates it
  one step at a time: ``n`` checkpoints plus one chunk's states.
* ``PropJax`` checkpoints in ``n`` chunks by default with ``jax.checkpoint``
  around each chunk of a ``lax.scan``: ``n`` checkpoints plus one chunk's
  residuals.

:func:`plan_chunks` picks the ``n`` that minimises each peak, and the
adapters use it when ``ckpt_chunks`` is not given.  The byte counts are of
arrays, as ``tracemalloc`` or a CUDA allocator would count them; a process's
resident size also holds the interpreter and libraries, and the C library's
allocator may hold freed memory it could not reuse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._grid import Geometry

__all__ = ["EagerMemoryEstimate", "eager_memory", "plan_chunks"]

# Fields of the whole batch (n_shots x padded grid) alive at the worst moment
# of a step or of its backward, besides the states and the residuals: the
# Laplacian and update temporaries, and in the backward the cotangents of u,
# u_prev and the update.  Measured for PyTorch on CPU (tests/test_eager_memory.py).
TRANSIENT_FIELDS = 6
# The same for a forward-only step (the update's temporaries).
FORWARD_FIELDS = 2
# Padded single-shot arrays among the step's constants and the model's
# coefficients: v^2 dt^2 and its gradient, the padded model and its mask,
# the live-cell mask.
CONSTANT_FIELDS = 6


@dataclass(frozen=True)
class EagerMemoryEstimate:
    """Estimated bytes of an eager gradient run (``impl="eager"``, PyTorch or JAX).

    Attributes
    ----------
    plain : int
        Peak bytes of a gradient that keeps the whole graph:
        ``PropTorch(..., use_ckpt=False)``, ``PropJax(..., use_ckpt=False)``
        and ``sweep.vjp`` on torch or JAX arrays with ``impl="eager"``.
    torch_ckpt : int
        Peak bytes of ``PropTorch``'s default, checkpointed in
        ``torch_ckpt_chunks`` chunks.
    torch_ckpt_chunks : int
        Chunks that minimise ``torch_ckpt``: ``PropTorch``'s default
        ``ckpt_chunks``.
    jax_ckpt : int
        Peak bytes of ``PropJax``'s default, checkpointed in
        ``jax_ckpt_chunks`` chunks.
    jax_ckpt_chunks : int
        Chunks that minimise ``jax_ckpt``: ``PropJax``'s default ``ckpt_chunks``.
    forward : int
        Peak bytes of a forward-only eager run.
    state : int
        Bytes of one state (one checkpoint): ``u``, ``u_prev`` and the CPML
        strips of every shot.
    replay : int
        Bytes of each further state ``PropTorch`` keeps while it replays a
        chunk (``u`` and the CPML strips; ``u_prev`` is the previous ``u``).
    step : int
        Bytes autodiff keeps per time step of a graph.
    fixed : int
        Bytes present throughout a gradient: constants, coefficients, source
        amplitudes, receivers and their cotangents, the model gradient, and
        the temporaries of one step.
    nt : int
        Time steps.
    """

    plain: int
    torch_ckpt: int
    torch_ckpt_chunks: int
    jax_ckpt: int
    jax_ckpt_chunks: int
    forward: int
    state: int
    replay: int
    step: int
    fixed: int
    nt: int

    def torch_ckpt_peak(self, n_chunks: int) -> int:
        """Peak bytes of ``PropTorch``'s checkpointed gradient in ``n_chunks`` chunks.

        Parameters
        ----------
        n_chunks : int
            Number of chunks (``ckpt_chunks``), clipped to ``[1, nt]``.

        Returns
        -------
        int
            Estimated peak bytes.
        """
        return self.fixed + _chunked(self.state, self.replay, self.nt, n_chunks, reuse=True)

    def jax_ckpt_peak(self, n_chunks: int) -> int:
        """Peak bytes of ``PropJax``'s checkpointed gradient in ``n_chunks`` chunks.

        Parameters
        ----------
        n_chunks : int
            Number of chunks (``ckpt_chunks``), clipped to ``[1, nt]``.

        Returns
        -------
        int
            Estimated peak bytes.
        """
        return self.fixed + _chunked(self.state, self.step, self.nt, n_chunks, reuse=False)


def _chunked(state: int, per_step: Any, nt: int, n_chunks: Any, *, reuse: bool) -> Any:
    """Bytes of ``n_chunks`` checkpoints and one chunk's ``per_step`` bytes a step.

    Both adapters hold one more state: PropTorch the state's cotangent,
    XLA's loops their carry twice (measured: 1.4-1.6 states more than the
    checkpoints and residuals).  ``reuse``: the chunk's first step reuses its
    checkpoint (PropTorch keeps the state before each step, the first of
    which is the checkpoint).
    """
    n = np.clip(np.asarray(n_chunks, dtype=np.int64), 1, nt)
    steps = -(-nt // n) - (1 if reuse else 0)
    total = (n + 1) * state + steps * per_step
    return int(total) if total.ndim == 0 else total


def plan_chunks(state: int, per_step: int, nt: int, *, reuse: bool) -> int:
    """Return the number of checkpoint chunks that minimises the peak bytes.

    Every chunk count replays the forward pass once, so the memory decides:
    ``n`` checkpoints of ``state`` bytes against one chunk of
    ``ceil(nt / n)`` steps of ``per_step`` bytes.

    Parameters
    ----------
    state : int
        Bytes of one checkpoint.
    per_step : int
        Bytes a replayed chunk keeps per step.
    nt : int
        Time steps.
    reuse : bool
        The chunk's first step is its checkpoint (PropTorch's replay).

    Returns
    -------
    int
        Chunks, in ``[1, nt]``.
    """
    n = np.arange(1, nt + 1, dtype=np.int64)
    return int(n[np.argmin(_chunked(state, per_step, nt, n, reuse=reuse))])


def eager_memory(
    geom: Geometry, itemsize: int, ckpt_chunks: int | None = None, states: int = 1
) -> EagerMemoryEstimate:
    """Estimate the bytes of an eager gradient run of a second-order equation.

    Parameters
    ----------
    geom : Geometry
        The call's geometry.
    itemsize : int
        Bytes per value (4 for float32, 8 for float64).
    ckpt_chunks : int, optional
        Chunks of the checkpointed runs; default: :func:`plan_chunks`.
    states : int
        Coupled wavefields per step, each with its own CPML (2 for Born
        modelling); states, residuals and temporaries scale with it.

    Returns
    -------
    EagerMemoryEstimate
    """
    h, shots, nt = geom.halo, geom.n_shots, geom.nt
    padded = math.prod(geom.padded_shape)
    interior = math.prod(n - 2 * h for n in geom.padded_shape)
    strips = 0
    for d in range(geom.ndim):
        across = interior // (geom.padded_shape[d] - 2 * h)  # cells of a slice across axis d
        for _, n in geom.cpml_strips(d):
            strips += across * ((n + 2 * h) + n)  # psi (with a halo along d) and zeta
    field = shots * padded * itemsize
    state = states * (2 * field + shots * strips * itemsize)
    replay = state - states * field
    # The bracket W^t (interior, every shot) and the receiver samples of the step.
    step = states * shots * (interior + geom.n_rec) * itemsize
    traces = shots * (geom.n_src + geom.n_rec) * nt * itemsize  # amplitudes, receivers
    constants = CONSTANT_FIELDS * padded * itemsize + traces
    # + the receivers' cotangent, one step's graph and the temporaries.
    fixed = (
        constants + shots * geom.n_rec * nt * itemsize + step + states * TRANSIENT_FIELDS * field
    )

    def chunks(per_step: int, reuse: bool) -> int:
        if ckpt_chunks is not None:
            return min(max(ckpt_chunks, 1), nt)
        return plan_chunks(state, per_step, nt, reuse=reuse)

    n_torch, n_jax = chunks(replay, True), chunks(step, False)
    return EagerMemoryEstimate(
        plain=fixed + 2 * state + nt * step,
        torch_ckpt=fixed + _chunked(state, replay, nt, n_torch, reuse=True),
        torch_ckpt_chunks=n_torch,
        jax_ckpt=fixed + _chunked(state, step, nt, n_jax, reuse=False),
        jax_ckpt_chunks=n_jax,
        forward=constants + 2 * state + states * FORWARD_FIELDS * field,
        state=state,
        replay=replay,
        step=step,
        fixed=fixed,
        nt=nt,
    )
