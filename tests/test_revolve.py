"""Tests for the binomial checkpointing schedules in sweep._revolve."""

from __future__ import annotations

import time
from functools import cache

import pytest

from sweep._revolve import min_forward_steps, replay_cost, schedule

L_MAX = 60
C_MAX = 8


@cache
def _dp_table() -> list[list[int]]:
    """Brute-force least cost T[c][l] straight from the recursive model."""
    inf = float("inf")
    table = [[inf] * (L_MAX + 1) for _ in range(C_MAX + 1)]
    for c in range(1, C_MAX + 1):
        table[c][1] = 1
        for n in range(2, L_MAX + 1):
            # No free slot: restore s_a, advance to s_t, record t, for every t.
            best = sum(t + 1 for t in range(n))
            if c >= 2:
                for l1 in range(1, n):
                    best = min(best, l1 + table[c - 1][n - l1] + table[c][l1])
            table[c][n] = best
    return table


def simulate(actions: list[tuple], nt: int, count: int) -> int:
    """Run a schedule on integer states (a state is its time index) and check it."""
    assert actions[0] == ("save", 0, 0)
    slots: dict[int, int] = {}
    live: int | None = 0
    adjoints: list[int] = []
    recorded: int | None = None
    cost = 0
    for i, action in enumerate(actions):
        kind = action[0]
        if kind != "adjoint":
            recorded = None
        if kind == "advance":
            _, t0, t1 = action
            assert live == t0, (i, action, live)
            assert 0 <= t0 < t1 <= nt, (i, action)
            cost += t1 - t0
            live = t1
        elif kind == "save":
            _, slot, t = action
            assert 0 <= slot < count, (i, action)
            assert live == t, (i, action, live)
            slots[slot] = t
        elif kind == "restore":
            _, slot, t = action
            assert slots.get(slot) == t, (i, action, slots)
            live = t
        elif kind == "record":
            (_, t) = action
            assert live == t, (i, action, live)
            assert 0 <= t < nt
            cost += 1
            recorded = t
            live = None  # the driver must not rely on the state after a recording run
        elif kind == "adjoint":
            (_, t) = action
            assert recorded == t, (i, action, recorded)
            adjoints.append(t)
            recorded = None
        else:
            raise AssertionError(f"unknown action {action!r}")
        assert len(slots) <= count
    assert adjoints == list(range(nt - 1, -1, -1))
    return cost


def test_closed_form_matches_brute_force() -> None:
    table = _dp_table()
    for c in range(1, C_MAX + 1):
        for n in range(1, L_MAX + 1):
            assert min_forward_steps(n, c) == table[c][n], (n, c)


def test_closed_form_special_cases() -> None:
    for n in range(1, 200):
        assert min_forward_steps(n, 1) == n * (n + 1) // 2
        for c in (n - 1, n, n + 5):
            if c >= 1:
                assert min_forward_steps(n, c) == 2 * n - 1


CASES = [(1, 1), (1, 3), (2, 1), (2, 2), (3, 2), (5, 100), (7, 7), (10, 3), (100, 1)]
CASES += [(nt, c) for nt in range(1, 41) for c in range(1, 7)]
CASES += [(1000, 2), (1000, 5), (2000, 20), (3003, 5), (3004, 5)]


@pytest.mark.parametrize(("nt", "count"), CASES[:9])
def test_schedule_named_cases(nt: int, count: int) -> None:
    actions = schedule(nt, count)
    assert simulate(actions, nt, count) == min_forward_steps(nt, count)
    assert replay_cost(actions) == min_forward_steps(nt, count)


def test_schedule_many_cases_optimal_and_valid() -> None:
    table = _dp_table()
    for nt, count in CASES:
        actions = schedule(nt, count)
        cost = simulate(actions, nt, count)
        assert cost == replay_cost(actions) == min_forward_steps(nt, count), (nt, count)
        if nt <= L_MAX and count <= C_MAX:
            assert cost == table[count][nt], (nt, count)


def test_simulator_rejects_broken_schedules() -> None:
    good = schedule(12, 3)
    simulate(good, 12, 3)
    record_at = next(i for i, a in enumerate(good) if a[0] == "record")
    broken_record = list(good)
    broken_record[record_at] = ("record", good[record_at][1] + 1)
    swapped = list(good)
    swapped[record_at], swapped[record_at + 1] = swapped[record_at + 1], swapped[record_at]
    advance_at = next(i for i, a in enumerate(good) if a[0] == "advance")
    _, t0, t1 = good[advance_at]
    broken_advance = list(good)
    broken_advance[advance_at] = ("advance", t0 + 1, t1)
    save_at = next(i for i, a in enumerate(good) if a[0] == "save" and a[1] > 0)
    out_of_range = list(good)
    out_of_range[save_at] = ("save", 3, good[save_at][2])
    for bad in (broken_record, swapped, broken_advance, out_of_range, good[:-2]):
        with pytest.raises(AssertionError):
            simulate(bad, 12, 3)


def test_record_runs_from_matching_state() -> None:
    # Replay on integer states independently of simulate(): the state each
    # recording run starts from must be the one of its step.
    for nt, count in [(50, 3), (33, 1), (9, 20)]:
        live: int | None = 0
        slots: dict[int, int | None] = {}
        seen: list[tuple[int, int | None]] = []
        for action in schedule(nt, count):
            if action[0] == "save":
                slots[action[1]] = live
            elif action[0] == "restore":
                live = slots[action[1]]
            elif action[0] == "advance":
                live = None if live is None else live + action[2] - action[1]
            elif action[0] == "record":
                seen.append((action[1], live))
                live = None
        assert seen == [(t, t) for t in range(nt - 1, -1, -1)]


def test_one_slot_is_quadratic_and_not_recursive() -> None:
    nt = 100_000
    actions = schedule(nt, 1)
    assert replay_cost(actions) == nt * (nt + 1) // 2 == min_forward_steps(nt, 1)
    first = [("advance", 0, nt - 1), ("record", nt - 1), ("adjoint", nt - 1), ("restore", 0, 0)]
    assert actions[1:5] == first


def test_schedule_is_fast() -> None:
    for nt, count in [(2000, 20), (10_000, 30), (10_000, 2)]:
        start = time.perf_counter()
        actions = schedule(nt, count)
        elapsed = time.perf_counter() - start
        assert elapsed < 2.0, (nt, count, elapsed)
        assert replay_cost(actions) == min_forward_steps(nt, count)


@pytest.mark.parametrize("func", [min_forward_steps, schedule])
@pytest.mark.parametrize(
    ("nt", "count", "name"),
    [
        (0, 3, "nt"),
        (-2, 3, "nt"),
        (2.5, 3, "nt"),
        (True, 3, "nt"),
        (4, 0, "count"),
        (4, -1, "count"),
        (4, "3", "count"),
        (4, None, "count"),
    ],
)
def test_bad_arguments(func, nt, count, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} "):
        func(nt, count)
