"""The direct limiter (GCRA): seed scenarios, every decision field, reserve, try_acquire."""

from __future__ import annotations

import math
import pickle
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import librate
from helpers import MS, SECOND
from librate import Decision, Limiter
from models import LIMITER_CASES, Acquire, ModelCase


def test_seed_bob_and_alice_one_per_two_seconds() -> None:
    # The seed scenario of docs/decision.md: L=1, P=2 s, B=1. Keys are independent: one
    # limiter per person.
    bob, alice = Limiter(limit=1, period=2), Limiter(limit=1, period=2)
    assert bob.acquire(now_ns=0).allowed
    denied = bob.acquire(now_ns=999 * MS)
    assert not denied.allowed
    # TAT = 2 s; admitted again once TAT + T - t <= tau, i.e. t >= 2 s: 1001 ms from now.
    assert denied.retry_after_ns == 1001 * MS
    assert denied.retry_after == pytest.approx(1.001)
    assert alice.acquire(now_ns=999 * MS).allowed
    assert not bob.acquire(now_ns=1000 * MS).allowed
    assert bob.acquire(now_ns=2001 * MS).allowed


def test_seed_one_per_second_burst_two() -> None:
    limiter = Limiter(limit=1, period=1, burst=2)
    a, b, c = (limiter.acquire(now_ns=0) for _ in range(3))
    assert (a.allowed, b.allowed, c.allowed) == (True, True, False)
    assert c.retry_after_ns == SECOND  # TAT = 2 s, so t + 1 s admits
    assert limiter.acquire(now_ns=SECOND).allowed  # D, a second later


def test_decision_fields_by_hand() -> None:
    limiter = Limiter(limit=1, period=2)
    first = limiter.acquire(now_ns=0)
    # TAT 0 -> 2 s: nothing left, full again in 2 s.
    assert first == Decision(True, 1, 0, 0, 2 * SECOND, 0)
    later = limiter.acquire(now_ns=500 * MS)
    assert later == Decision(False, 1, 0, 1500 * MS, 1500 * MS, 0)
    assert later.reset_after == 1.5 and later.wait == 0.0


def test_acquire_now_writes_the_whole_decision() -> None:
    # acquire() without now_ns has a path of its own (the C library writes straight into
    # the Decision). GCRA, 2 an hour (T = 30 min): a first unit leaves 1 and TAT =
    # now + 30 min whenever now is; two more units at once are denied.
    limiter = Limiter(limit=2, period=3600)
    assert limiter.acquire() == Decision(True, 2, 1, 0, 1800 * SECOND, 0)
    denied = limiter.acquire(2)
    assert (denied.allowed, denied.limit, denied.remaining, denied.wait_ns) == (False, 2, 1, 0)
    keyed = librate.KeyedLimiter(limit=2, period=3600, capacity=4)
    assert keyed.acquire("a", 2) == Decision(True, 2, 0, 0, 3600 * SECOND, 0)
    assert keyed.acquire(b"b") == Decision(True, 2, 1, 0, 1800 * SECOND, 0)
    with pytest.raises(librate.InsufficientCapacity, match="n=3"):
        limiter.acquire(3)
    limiter.close()
    with pytest.raises(librate.ClosedError):
        limiter.acquire()


def test_decision_is_immutable_and_compares_by_value() -> None:
    decision = Decision(False, 3, 1, 2 * SECOND, 4 * SECOND)
    with pytest.raises(AttributeError, match="immutable"):
        decision.allowed = True  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del decision.limit
    assert decision == Decision(False, 3, 1, 2 * SECOND, 4 * SECOND, 0)
    assert decision != Decision(False, 3, 1, 2 * SECOND, 4 * SECOND, 1)
    assert decision != (False, 3, 1, 2 * SECOND, 4 * SECOND, 0)
    assert len({decision, Decision(False, 3, 1, 2 * SECOND, 4 * SECOND)}) == 1
    assert repr(decision) == (
        "Decision(allowed=False, limit=3, remaining=1, retry_after_ns=2000000000, "
        "reset_after_ns=4000000000, wait_ns=0)"
    )
    assert (decision.retry_after, decision.reset_after, decision.wait) == (2.0, 4.0, 0.0)
    assert pickle.loads(pickle.dumps(decision)) == decision


def test_query_changes_nothing() -> None:
    limiter = Limiter(limit=2, period=2)
    query = limiter.acquire(0, now_ns=0)
    assert query == Decision(True, 2, 2, 0, 0, 0)
    assert limiter.acquire(2, now_ns=0).allowed
    assert limiter.acquire(0, now_ns=0) == Decision(True, 2, 0, 0, 2 * SECOND, 0)
    assert not limiter.acquire(1, now_ns=0).allowed


def test_fresh_limiter_is_full_at_any_time() -> None:
    for now in (0, 1, 2**62):
        assert Limiter(limit=3, period=3).acquire(3, now_ns=now).allowed


def test_earlier_time_never_admits_more() -> None:
    limiter = Limiter(limit=1, period=2)
    assert limiter.acquire(now_ns=10 * SECOND).allowed  # TAT = 12 s
    back = limiter.acquire(now_ns=0)
    assert not back.allowed
    assert back.retry_after_ns == 12 * SECOND  # TAT + T - 0 - tau


@pytest.mark.parametrize("case", LIMITER_CASES, ids=str)
def test_matches_reference_model(case: ModelCase) -> None:
    def make(**config: Any) -> Acquire:
        limiter = Limiter(**config)
        return lambda key, n, t: limiter.acquire(n, now_ns=t)

    case.run(make)


def test_period_forms() -> None:
    assert Limiter(limit=1, period=2).config.period_ns == 2 * SECOND
    assert Limiter(limit=1, period=0.1).config.period_ns == 100 * MS
    assert (
        Limiter(limit=1, period=timedelta(minutes=1, microseconds=5)).config.period_ns
        == 60 * SECOND + 5000
    )
    config = Limiter(algorithm="gcra", limit=5, period=1.5, burst=2).config
    assert config == librate.Config("gcra", 5, 1500 * MS, 2)
    assert (config.period, config.max_n) == (1.5, 2)
    assert Limiter(limit=5, period=1).config.max_n == 5


def test_reserve_shapes_traffic() -> None:
    # 10 per second, burst 1: one unit every 100 ms.
    shaper = Limiter(limit=10, period=1, burst=1)
    waits = [shaper.reserve(max_wait=0.5, now_ns=0).wait_ns for _ in range(3)]
    assert waits == [0, 100 * MS, 200 * MS]
    # TAT = 300 ms: a fourth would wait 300 ms.
    denied = shaper.reserve(max_wait=timedelta(milliseconds=250), now_ns=0)
    assert not denied.allowed
    assert denied.retry_after_ns == 50 * MS  # 400 - tau 100 - max_wait 250
    admitted = shaper.reserve(max_wait=0.3, now_ns=0)
    assert admitted.allowed and admitted.wait_ns == 300 * MS and admitted.wait == 0.3


def test_reserve_without_wait_is_acquire() -> None:
    a, b = Limiter(limit=2, period=1), Limiter(limit=2, period=1)
    for t in (0, 0, 0, 100 * MS, 900 * MS):
        assert a.reserve(max_wait=0, now_ns=t) == b.acquire(now_ns=t)


def test_reserve_forever() -> None:
    shaper = Limiter(limit=1, period=1)
    shaper.reserve(max_wait=math.inf, now_ns=0)
    assert shaper.reserve(max_wait=math.inf, now_ns=0).wait_ns == SECOND


def test_reserve_now() -> None:
    # Without now_ns, reserve uses the library clock; a fresh limiter never waits.
    assert Limiter(limit=1, period=1).reserve(max_wait=1).wait_ns == 0


def test_try_acquire() -> None:
    limiter = Limiter(limit=1, period=3600)
    assert limiter.try_acquire() is True
    assert limiter.try_acquire() is False  # the next unit is due in an hour
    assert limiter.try_acquire(0) is True  # a query
    assert limiter.acquire(0).remaining == 0


def test_try_acquire_costs() -> None:
    limiter = Limiter(limit=5, period=3600)
    assert limiter.try_acquire(3) is True
    assert limiter.try_acquire(3) is False
    assert limiter.try_acquire(2) is True


def test_index_objects_are_ints() -> None:
    class Count:
        def __index__(self) -> int:
            return 2

    limiter = Limiter(limit=Count(), period=1)  # type: ignore[arg-type]
    assert limiter.config.limit == 2
    assert limiter.try_acquire(Count()) is True  # type: ignore[arg-type]
    assert limiter.acquire(Count(), now_ns=Count()).allowed is False  # type: ignore[arg-type]


def test_decision_seconds_and_never() -> None:
    never = Decision(False, 1, 0, 2**64 - 1, 2**64 - 1, 0)
    assert never.retry_after == math.inf and never.reset_after == math.inf
    with pytest.raises(AttributeError):
        never.allowed = True  # type: ignore[misc]


def test_clock_and_version() -> None:
    first = librate.now_ns()
    assert librate.now_ns() >= first
    cargo = (Path(__file__).resolve().parents[3] / "Cargo.toml").read_text()
    version = re.search(r'^version = "([^"]+)"', cargo, re.MULTILINE)
    assert version and librate.library_version() == version.group(1)
