"""The stepper interface: what the gradient memory strategies need from an equation.

The strategies of :mod:`sweep._memory` (full storage, boundary saving,
checkpointing, the planner and the estimates) decide what a forward pass
keeps for its adjoint pass and when to replay; the equation itself sits
behind a *stepper*, an object that runs chunks of forward and adjoint time
steps on states it creates.  The protocols below list every member the
strategies use, so an equation plugs in by implementing them;
:class:`sweep._compiled.CompiledAcoustic` is the acoustic stepper.

Terms the members use:

snapshot
    What adjoint step ``t`` needs from forward step ``t`` to add its share of
    the model gradient (acoustic: ``W^t``, the bracket that multiplies
    ``v^2 dt^2``), one array of :attr:`Stepper.snapshot_shape` per step.
coefficients (``coeffs``)
    The model in the stepper's own layout (acoustic: the padded
    ``v^2 dt^2``); the strategies hand it back to the stepper unchanged.
checkpoint
    What :meth:`ForwardState.save` returns: enough to continue the forward
    pass bitwise as if it had never stopped.

Every stepper supports full storage and checkpointing (:class:`Stepper`).
Boundary saving needs the forward pass to run backwards in time, so only a
:class:`ReversibleStepper` (``reversible`` True) supports it; the strategies
read none of its extra members from a stepper that is not reversible.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["AdjointState", "ForwardState", "ReversibleState", "ReversibleStepper", "Stepper"]


class ForwardState(Protocol):
    """The forward fields at one time step.

    Only :meth:`parts` is required; a class that names this protocol as a
    base gets :meth:`save`, :meth:`save_into` and :meth:`load` from it.
    """

    def parts(self) -> list[Any]:
        """Return views of every array a checkpoint must hold (writing them sets the state)."""
        ...

    def save(self) -> list[Any]:
        """Return a checkpoint: copies of :meth:`parts`."""
        return [a.copy() for a in self.parts()]

    def save_into(self, saved: list[Any]) -> None:
        """Overwrite an existing checkpoint with this state."""
        for dst, src in zip(saved, self.parts(), strict=True):
            dst[...] = src

    def load(self, saved: list[Any]) -> None:
        """Overwrite this state with a checkpoint."""
        for dst, src in zip(self.parts(), saved, strict=True):
            dst[...] = src


class ReversibleState(ForwardState, Protocol):
    """A forward state of a :class:`ReversibleStepper`."""

    def outer_parts(self) -> list[Any]:
        """Return views of what a replay of the outer cells starts from (writing them sets it)."""
        ...


class AdjointState(Protocol):
    """The adjoint fields and gradient accumulators at one time step.

    Opaque to the strategies: they create it with :meth:`Stepper.new_adjoint`
    and only hand it back to the stepper.
    """


class Stepper(Protocol):
    """One equation's forward and adjoint time steps, as the memory strategies drive them."""

    @property
    def name(self) -> str:
        """Name of the equation, for messages."""
        ...

    @property
    def reversible(self) -> bool:
        """Whether boundary saving applies: True only for a :class:`ReversibleStepper`."""
        ...

    @property
    def xp(self) -> Any:
        """Array module of the stepper's arrays (``numpy`` or ``cupy``)."""
        ...

    @property
    def dtype(self) -> np.dtype:
        """Element type of snapshots and states."""
        ...

    @property
    def nt(self) -> int:
        """Time steps of the run."""
        ...

    @property
    def step_cells(self) -> int:
        """Cell updates of one time step over every shot (bounds the steps of one call)."""
        ...

    @property
    def snapshot_shape(self) -> tuple[int, ...]:
        """Shape of one step's snapshot, every shot."""
        ...

    def snapshot_shape_for(self, compression: str | None) -> tuple[int, ...]:
        """Shape of one step's snapshot in a full-storage store of ``compression``.

        :attr:`snapshot_shape` unless the stepper lays snapshots out
        differently for a lossy store (VRZ on the CPU keeps ``W`` of every
        cell there instead of recomputing it from rounded ``u``); the
        stepper tells the layouts apart by the record's length.
        """
        ...

    @property
    def state_bytes(self) -> int:
        """Bytes of one checkpoint (:meth:`ForwardState.save`)."""
        ...

    @property
    def live_state_bytes(self) -> int:
        """Bytes of one :meth:`new_state` (a replay's running state)."""
        ...

    @property
    def model_gradient_bytes(self) -> int:
        """Bytes of the model-gradient accumulators of ``new_adjoint(model=True)``."""
        ...

    def working_bytes(self, *, gradient: bool) -> int:
        """Return the bytes every run allocates besides the strategy's storage.

        A forward run (its state, coefficients, receivers); with ``gradient``
        also the adjoint pass's (adjoint state with model gradient, source
        gradient).
        """
        ...

    def zeros(self, *shape: int) -> Any:
        """Return a zeroed array of :attr:`dtype` on the stepper's device."""
        ...

    def new_state(self) -> ForwardState:
        """Return the forward state at step 0 (all zero)."""
        ...

    def new_adjoint(self, *, model: bool, source: bool) -> AdjointState:
        """Return the adjoint state at step ``nt``, accumulating the gradients asked for."""
        ...

    def new_receivers(self) -> Any:
        """Return the zeroed receiver traces a forward pass fills."""
        ...

    def forward_steps(
        self,
        state: Any,
        coeffs: Any,
        amp: Any,
        t0: int,
        n: int,
        *,
        receivers: Any = None,
        store: Any = None,
        store_every: int = 1,
    ) -> None:
        """Advance ``state`` over steps ``t0 .. t0+n-1``.

        ``amp``: source amplitudes (or None).  ``receivers``, when given,
        receives the samples of these steps.  ``store``, when given, receives
        the snapshot of every step ``t`` with ``t % store_every == 0``, slot 0
        being the first such step of the range.
        """
        ...

    def adjoint_steps(
        self,
        adj: Any,
        coeffs: Any,
        amp: Any,
        grad_rec: Any,
        t_end: int,
        n: int,
        *,
        store: Any = None,
        store_every: int = 1,
    ) -> None:
        """Run adjoint steps ``t_end-1`` down to ``t_end-n``.

        ``grad_rec``: the receiver cotangent.  ``store``: the snapshots of the
        same range as :meth:`forward_steps` wrote them; the model gradient
        takes the steps it holds (none when ``store`` is None).
        """
        ...

    def finish_gradient(self, adj: Any, coeffs: Any) -> Any:
        """Return the model gradient (summed over shots) from the accumulators of ``adj``.

        New arrays: the strategies scale them in place by the sampling interval.
        """
        ...

    def source_gradient(self, adj: Any) -> Any:
        """Return the gradient with respect to the source amplitudes."""
        ...


class ReversibleStepper(Stepper, Protocol):
    """A stepper whose forward pass runs backwards in time: boundary saving applies.

    The forward pass saves, at every step, the state values of a band of cells
    next to the absorbing boundary (``band_u``); the adjoint pass runs the
    field backwards on the inner cells (the reconstruction) and replays the
    absorbing boundary forward from saved outer states, segment by segment,
    for the outer cells' snapshots (``replay_w``) and the state of the ring
    of CPML cells the band's stencil reads (``replay_u``), from which the
    reconstruction recomputes the band's snapshots.
    """

    @property
    def band_shape(self) -> tuple[int, ...]:
        """Shape of one step of ``band_u`` (the band's state values), every shot."""
        ...

    @property
    def ring_shape(self) -> tuple[int, ...]:
        """Shape of one step of ``replay_u`` (the ring's state values), every shot."""
        ...

    @property
    def outer_shape(self) -> tuple[int, ...]:
        """Shape of one step of ``replay_w`` (the outer cells' snapshots), every shot."""
        ...

    @property
    def outer_state_bytes(self) -> int:
        """Bytes of :meth:`ReversibleState.outer_parts`."""
        ...

    @property
    def reconstruction_bytes(self) -> int:
        """Bytes :meth:`start_reconstruction` adds to an adjoint state."""
        ...

    def new_state(self) -> ReversibleState:
        """Return the forward state at step 0 (all zero)."""
        ...

    def forward_steps(
        self,
        state: Any,
        coeffs: Any,
        amp: Any,
        t0: int,
        n: int,
        *,
        receivers: Any = None,
        store: Any = None,
        store_every: int = 1,
        band_u: Any = None,
    ) -> None:
        """As :meth:`Stepper.forward_steps`; ``band_u`` (n steps) gets the band's state."""
        ...

    def replay_steps(
        self,
        state: Any,
        coeffs: Any,
        t0: int,
        n: int,
        *,
        band_u: Any,
        replay_w: Any,
        replay_u: Any = None,
        amp: Any = None,
    ) -> None:
        """Replay the outer cells over steps ``t0 .. t0+n-1`` from ``state``'s outer parts.

        ``band_u`` (slot 0: step ``t0``) is their inner boundary; ``replay_w``
        (n, *outer_shape) receives their snapshots, bitwise the forward pass's,
        and ``replay_u`` (n, *ring_shape), when given, the ring's state that
        the reconstruction reads (the state at the start of each step, or
        what the stepper documents).  ``amp``: the source amplitudes of the
        forward pass, for a stepper whose outer cells may hold sources.
        """
        ...

    def start_reconstruction(self, adj: Any, final: Any) -> None:
        """Make ``adj`` run the forward pass backwards from the final forward state."""
        ...

    def adjoint_steps(
        self,
        adj: Any,
        coeffs: Any,
        amp: Any,
        grad_rec: Any,
        t_end: int,
        n: int,
        *,
        store: Any = None,
        store_every: int = 1,
        band_u_offset: tuple[Any, int] | None = None,
        replay_w: Any = None,
        replay_u: Any = None,
    ) -> None:
        """As :meth:`Stepper.adjoint_steps`, or with the reconstruction started.

        Then ``band_u_offset = (array, offset_bytes)`` points at the band's
        ``u`` of step ``t_end-n-1`` (the offset may reach one slot before the
        array: that step is not read when it is -1), and ``replay_w`` and
        ``replay_u`` hold the outer cells' snapshots and the ring's state of
        steps ``t_end-n .. t_end-1`` (:meth:`replay_steps`).
        """
        ...
