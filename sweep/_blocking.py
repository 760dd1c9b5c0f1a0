"""Temporal blocking of the CPU forward kernel: the default and its run-time tuning.

Forward steps advance several steps at a time in one sweep along the
outermost axis (``forward_blocked`` in ``sweep_cy/cpu_blocking.h``); so do a
gradient's storing forward and adjoint (acoustic, VRZ, LSRTM: snapshots written
and correlated inside the wavefront), with the untuned choice (they run no
trials of their own).
Blocking reorders the cell updates and never their arithmetic, so every
choice gives bitwise the same result; only the speed differs, and which
choice is fastest depends on the CPU's caches more than on the problem:

- AMD EPYC (family 26, 1 MiB L2 per core): 3D 8 steps in y tiles of 48 rows
  (4 steps in tiles of 32 ~10 % slower); 2D unblocked.
- Intel Xeon (Emerald Rapids, 2 MiB L2 per core, a slower shared L3): 3D 2-8
  steps in tiles of 16-24 rows, 20-30 % less time per step than 8 in 48
  (benchmark 128^3 + CPML 20, order 8, two threads: 5.4-6.1 against 7.5-7.9
  ms); 2D blocked 8 steps deep, 8-15 % faster than unblocked.

No cache-size rule predicts both (the working set of 8 in 48 fits neither L2),
so a large forward tunes itself the way FFT planners and autotuning stencil
compilers do: its first steps run under each candidate in turn, timed, and
the rest of the run, and later runs of the same size, use the fastest.  The
trial steps are the run's own steps, so nothing is computed twice.

Two facts about the equation come from its stepper: the bytes per cell one
forward step streams (``cell_bytes``; the acoustic kernels count u, u_prev
and v^2 dt^2 at float32, 12) and the sweeps over the grid per time step
(``stages``; 1 for leapfrog).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from ._config import config
from ._grid import Geometry

log = logging.getLogger("sweep")

Blocking = tuple[int, int, int]  # (steps, plane group, y tile)

UNBLOCKED: Blocking = (1, 1, 1)
# Used until tuning has finished (and by short runs that never finish it).
DEFAULTS: dict[int, Blocking] = {2: UNBLOCKED, 3: (8, 1, 48)}
# 3D: the measured best on each machine above, two between them, and
# unblocked.  2D (no y tiles): unblocked, the best on AMD, and groups of 4 rows
# 4 or 8 steps deep, the best on the Intel Xeon (benchmark 300 x 1000, 4
# shots, two threads: order 4 0.45 -> 0.38-0.39 ms per step, order 8 0.60 -> 0.55).
CANDIDATES: dict[int, tuple[Blocking, ...]] = {
    2: ((1, 1, 1), (8, 4, 1), (4, 4, 1)),
    3: ((8, 1, 48), (8, 1, 16), (4, 1, 24), (2, 1, 24), (1, 1, 1)),
}
# Cells updated per trial (every shot): ~40-100 ms of work, long against the
# timer and the per-call overhead, short against a run.  None: from the size.
TRIAL_CELLS = 100_000_000
TRIAL_STEPS: int | None = None
TRIAL_ROUNDS = 2  # candidates in order, then in reverse: drifts in speed cancel

# A step whose fields fit comfortably in the last-level cache gains nothing.
_BLOCKING_MIN_BYTES = 8 << 20


def fixed() -> Blocking | None:
    """Return the blocking ``SWEEP_TIME_BLOCKING="steps,group,tile"`` fixes, or None.

    Read per call (also ``sweep.config(time_blocking=...)``): the acoustic
    family's engines through :func:`time_blocking`, Maxwell's 3D forward for
    its steps per pass.
    """
    return config.get("time_blocking")  # also sweep.config(time_blocking=...)


def worth_blocking(geom: Geometry, *, cell_bytes: int) -> bool:
    """Return True when a forward step of ``geom`` is large enough to gain from blocking.

    Steps whose fields (``cell_bytes`` per cell) fit in the caches gain nothing.
    """
    step_bytes = geom.n_shots * geom.shot_stride * cell_bytes
    return step_bytes >= _BLOCKING_MIN_BYTES


def adjoint_blocking(
    geom: Geometry, n_threads: int, *, cell_bytes: int, defaults: dict[int, Blocking]
) -> Blocking:
    """Return the blocking of the CPU adjoint (and storing forward's) calls of a gradient.

    ``defaults`` (the stepper's ``adjoint_blocking``) replaces :data:`DEFAULTS`
    for the dimensions it names; ``SWEEP_TIME_BLOCKING`` still fixes the choice.
    The kernels run a storing forward under it only where the equation sets
    ``SWEEP_EQ_BLOCK_STORE``, and the adjoint only with ``SWEEP_EQ_BLOCK_ADJOINT``
    (``cpu_blocking.h``); only the adjoint takes it here.
    """
    if fixed() is not None or geom.ndim not in defaults:
        return time_blocking(geom, n_threads, cell_bytes=cell_bytes)
    return defaults[geom.ndim] if worth_blocking(geom, cell_bytes=cell_bytes) else UNBLOCKED


def time_blocking(geom: Geometry, n_threads: int, *, cell_bytes: int) -> Blocking:
    """Return the untuned blocking of the CPU forward: (steps, plane group, y tile).

    ``steps`` 1 is off.  ``SWEEP_TIME_BLOCKING="steps,group,tile"`` fixes the
    choice (and turns tuning off); see :class:`BlockingTuner` for the tuned one.
    ``cell_bytes``: bytes per cell a forward step streams (the stepper's).
    """
    chosen = fixed()
    if chosen is not None:
        return chosen
    return DEFAULTS[geom.ndim] if worth_blocking(geom, cell_bytes=cell_bytes) else UNBLOCKED


class BlockingTuner:
    """Picks a blocking for one problem size by timing real forward steps.

    The schedule is a warm-up piece (first touch of fresh buffers, not timed)
    followed by ``rounds`` rounds of ``trial_steps`` steps per candidate,
    alternating the order.  A call asks :meth:`next_piece` how many of its
    steps to run under which blocking and reports the time with
    :meth:`record`; a piece may end early (at the end of a call) and the trial
    goes on in the next call.  Once the schedule is done, :attr:`best` is the
    candidate with the least seconds per step in its best round.
    """

    def __init__(
        self,
        candidates: Sequence[Blocking],
        default: Blocking,
        trial_steps: int = 16,
        rounds: int = TRIAL_ROUNDS,
    ) -> None:
        self.default = default
        self.candidates = tuple(candidates)
        order = [default]  # warm-up
        for r in range(rounds):
            order += self.candidates if r % 2 == 0 else self.candidates[::-1]
        self._schedule = order
        self._trial_steps = trial_steps
        self._entry = 0  # index into the schedule
        self._left = trial_steps  # steps of the current entry still to run
        self._time = 0.0  # seconds of the current entry so far
        self._rates: dict[Blocking, list[float]] = {c: [] for c in self.candidates}
        self.best: Blocking | None = None
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        return self.best is not None

    def next_piece(self, n: int) -> tuple[Blocking, int, bool]:
        """(blocking, steps, timed) for the next at most ``n`` steps of a call."""
        with self._lock:
            if self.best is not None:
                return self.best, n, False
            return self._schedule[self._entry], min(n, self._left), self._entry > 0

    def record(self, blocking: Blocking, steps: int, seconds: float) -> None:
        """Account ``steps`` steps that took ``seconds`` under ``blocking``."""
        with self._lock:
            if self.best is not None or blocking != self._schedule[self._entry]:
                return  # another thread's run moved the schedule on
            self._left -= steps
            self._time += seconds
            if self._left > 0:
                return
            if self._entry > 0:
                self._rates[blocking].append(self._time / self._trial_steps)
            self._entry += 1
            self._left, self._time = self._trial_steps, 0.0
            if self._entry == len(self._schedule):
                self.best = min(self.candidates, key=lambda c: min(self._rates[c]))
                log.debug(
                    "time blocking: %s (ms per step, best round: %s)",
                    self.best,
                    {c: round(1e3 * min(r), 3) for c, r in self._rates.items()},
                )

    @property
    def rates(self) -> dict[Blocking, list[float]]:
        """Seconds per step of every finished trial, per candidate."""
        return {c: list(r) for c, r in self._rates.items()}


def trial_steps(geom: Geometry, *, stages: int) -> int:
    """Return the steps of one trial: about TRIAL_CELLS cell updates, whole 8-step blocks.

    A time step updates every cell ``stages`` times.
    """
    cells = geom.n_shots * geom.shot_stride * stages
    steps = -(-TRIAL_CELLS // cells)
    return min(max(-(-steps // 8) * 8, 16), 256)


# One tuner per problem size and thread count, for the life of the process.
_TUNERS: dict[tuple, BlockingTuner] = {}
_TUNERS_MAX = 64


def tuner_for(
    geom: Geometry, dtype_name: str, n_threads: int, *, cell_bytes: int, stages: int
) -> BlockingTuner | None:
    """Return the tuner of this problem size, or None when the blocking is fixed or off.

    ``cell_bytes`` and ``stages``: the stepper's facts (see the module docstring).
    """
    # The kernels run a forward with a free surface unblocked: nothing to tune.
    if (
        not worth_blocking(geom, cell_bytes=cell_bytes)
        or any(geom.free_surface)
        or fixed() is not None
    ):
        return None
    # cell_bytes tells the equations apart (their steps cost differently).
    key = (
        geom.ndim,
        geom.order,
        dtype_name,
        geom.n_shots,
        tuple(geom.padded_shape),
        n_threads,
        cell_bytes,
    )
    tuner = _TUNERS.get(key)
    if tuner is None:
        if len(_TUNERS) >= _TUNERS_MAX:
            _TUNERS.pop(next(iter(_TUNERS)))
        steps = TRIAL_STEPS or trial_steps(geom, stages=stages)
        tuner = BlockingTuner(CANDIDATES[geom.ndim], DEFAULTS[geom.ndim], steps, TRIAL_ROUNDS)
        _TUNERS[key] = tuner
    return tuner
