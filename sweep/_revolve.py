"""Binomial (Revolve-optimal) checkpointing schedules for an adjoint time loop.

The model
---------
A forward simulation has states ``s_0, s_1, ..., s_nt``; forward step ``t``
turns ``s_t`` into ``s_{t+1}``.  The adjoint pass runs ``t = nt-1`` down to
``0``, and adjoint step ``t`` needs forward step ``t`` to be run (again) from
``s_t`` in *recording* mode, because that run produces what the adjoint step
consumes.  Keeping every state would need ``nt + 1`` copies of the wavefield;
instead we have ``count`` *slots*, each able to hold one full state.  ``s_0``
starts in slot 0, so that slot counts towards ``count``.

Only forward steps cost anything: every step of an ``advance`` and every
``record`` counts as one.  Copying a state into or out of a slot is free, and
so is each adjoint step (it runs exactly once whatever the schedule).

To reverse the steps ``[a, b)`` while ``s_a`` is held in a slot and ``k``
slots are available (the one holding ``s_a`` included):

* one step (``b - a == 1``): record it from ``s_a``, then run its adjoint;
* one slot (``k == 1``): for each ``t`` from ``b - 1`` down to ``a``, restore
  ``s_a``, advance to ``s_t`` and record step ``t``;
* otherwise advance from ``s_a`` to some ``s_m``, store it in a second slot,
  reverse ``[m, b)`` with ``k - 1`` slots, then reverse ``[a, m)`` with ``k``
  slots (the slot of ``s_m`` is free again by then).

With ``C`` the binomial coefficient, the least number of forward steps to
reverse ``l`` steps with ``c`` slots is::

    T(l, c) = (r + 1) * l - C(c + r, r - 1),

where ``r >= 0`` is the unique integer with
``C(c + r - 1, r - 1) < l <= C(c + r, r)``.  ``r`` is the number of times the
most-repeated step is advanced (not counting its recording run):
``C(c + r, r)`` is the longest loop that ``c`` slots reverse while advancing
no step more than ``r`` times.  Thus ``T(l, 1) = l (l + 1) / 2`` and
``T(l, c) = 2 l - 1`` when ``l <= c + 1``.  The optimality of these binomial
schedules is the result of A. Griewank and A. Walther (2000), "Algorithm 799:
revolve: an implementation of checkpointing for the reverse or adjoint mode of
computational differentiation", ACM Trans. Math. Softw. 26(1), 19-45; the
formula above is that result restated for this cost model (recording runs
counted, the slot of ``s_0`` included in ``count``).  ``tests/test_revolve.py``
checks it against a brute-force dynamic program.

Schedules
---------
:func:`schedule` returns a list of actions for a driver that holds one *live*
state and ``count`` slots:

``("advance", t0, t1)``
    Run forward steps ``t0 .. t1-1`` from the live state (``s_t0 -> s_t1``),
    not recording.
``("save", slot, t)``
    Copy the live state, which is ``s_t``, into ``slot``.
``("restore", slot, t)``
    Copy ``slot``, which holds ``s_t``, into the live state.
``("record", t)``
    Run forward step ``t`` from the live state ``s_t`` in recording mode.  The
    live state afterwards is not to be relied on.
``("adjoint", t)``
    Run adjoint step ``t``; it always directly follows ``("record", t)``, and
    adjoint steps come in the order ``nt-1, ..., 0``.

The first action is ``("save", 0, 0)``.  A segment reversed with ``k`` slots
keeps its starting state in slot ``count - k``, so slot indices are below
``count`` and at most ``count`` states are ever stored.  A state that would
only be needed for the very next ``record`` is not saved.
"""

from __future__ import annotations

import operator
from math import comb

__all__ = ["min_forward_steps", "replay_cost", "schedule"]


def _check_positive_int(value: object, name: str) -> int:
    """Return ``value`` as an int, or raise ValueError naming the argument."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{name} must be a positive integer, got {value!r}") from None
    if number < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return number


def _beta(c: int, r: int) -> int:
    """Return ``C(c + r, r)``: the most steps ``c`` slots reverse advancing each <= ``r`` times."""
    return comb(c + r, r) if r >= 0 else 0


def _repetitions(n: int, c: int, hint: int = 0) -> int:
    """Return ``r`` with ``_beta(c, r - 1) < n <= _beta(c, r)``, searching from ``hint``."""
    if c == 1:
        return n - 1
    r = max(hint, 0)
    while _beta(c, r) < n:
        r += 1
    while r > 0 and _beta(c, r - 1) >= n:
        r -= 1
    return r


def _cost(n: int, c: int, r: int) -> int:
    """Return ``T(n, c)`` given the repetition number ``r`` of ``(n, c)``."""
    return (r + 1) * n - (comb(c + r, r - 1) if r >= 1 else 0)


def min_forward_steps(nt: int, count: int) -> int:
    """Return the least number of forward steps needed to reverse ``nt`` steps.

    Parameters
    ----------
    nt : int
        Number of forward time steps (at least 1).
    count : int
        Number of state slots, the one holding the initial state included (at
        least 1).

    Returns
    -------
    int
        ``T(nt, count)``, counting every advanced step and every recording
        run; see the module docstring for the formula.

    Raises
    ------
    ValueError
        If ``nt`` or ``count`` is not a positive integer.
    """
    nt = _check_positive_int(nt, "nt")
    count = _check_positive_int(count, "count")
    if count == 1:
        return nt * (nt + 1) // 2
    return _cost(nt, count, _repetitions(nt, count))


def _split(n: int, k: int, r: int) -> int:
    """Return an optimal length of the first part of an ``n``-step segment with ``k >= 2`` slots.

    With ``r`` the repetition number of ``(n, k)``, any first part ``l1`` in
    ``[beta(k, r-2), beta(k, r-1)]`` whose rest ``n - l1`` lies in
    ``[beta(k-1, r-1), beta(k-1, r)]`` is optimal: on those ranges every step
    of either part costs ``r + 1``.  Pascal's rule makes the ranges fit ``n``.
    """
    return max(_beta(k, r - 2), n - _beta(k - 1, r), 1)


def schedule(nt: int, count: int) -> list[tuple]:
    """Return an optimal checkpointing schedule for ``nt`` steps and ``count`` slots.

    Parameters
    ----------
    nt : int
        Number of forward time steps (at least 1).
    count : int
        Number of state slots, the one holding ``s_0`` included (at least 1).

    Returns
    -------
    list of tuple
        Actions as described in the module docstring, starting with
        ``("save", 0, 0)``.  Their forward steps (:func:`replay_cost`) add up
        to :func:`min_forward_steps` ``(nt, count)``.

    Raises
    ------
    ValueError
        If ``nt`` or ``count`` is not a positive integer.
    """
    nt = _check_positive_int(nt, "nt")
    count = _check_positive_int(count, "count")
    count = min(count, nt + 1)  # more slots than states are never used
    actions: list[tuple] = [("save", 0, 0)]
    append = actions.append
    live: int | None = 0  # time index of the live state; None once it is unreliable
    # Segments still to reverse, as (a, b, k, r); the last one is done first.
    # s_a is in slot count - k; r is the repetition number of (b - a, k).
    stack = [(0, nt, count, _repetitions(nt, count))]
    while stack:
        a, b, k, r = stack.pop()
        slot = count - k
        n = b - a
        if n == 1 or k == 1:
            for t in range(b - 1, a - 1, -1):
                if live != a:
                    append(("restore", slot, a))
                if t > a:
                    append(("advance", a, t))
                append(("record", t))
                append(("adjoint", t))
                live = None
            continue
        l1 = _split(n, k, r)
        m = a + l1
        if live != a:
            append(("restore", slot, a))
        append(("advance", a, m))
        if b - m > 1:  # a one-step rest is recorded at once from the live s_m
            append(("save", slot + 1, m))
        live = m
        stack.append((a, m, k, _repetitions(l1, k, r - 1)))
        stack.append((m, b, k - 1, _repetitions(n - l1, k - 1, r)))
    return actions


def replay_cost(actions: list[tuple]) -> int:
    """Return the number of forward steps an action list runs.

    Parameters
    ----------
    actions : list of tuple
        Actions as returned by :func:`schedule`.

    Returns
    -------
    int
        The steps of every ``"advance"`` plus one per ``"record"``.
    """
    total = 0
    for action in actions:
        if action[0] == "advance":
            total += action[2] - action[1]
        elif action[0] == "record":
            total += 1
    return total
