"""The window algorithms (fixed window, sliding window counter, sliding log) through the
Python API, against docs/decision.md: scenarios by hand and a brute-force reference model."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import librate
from helpers import MS, SECOND, VirtualClock, hammer
from librate import Decision
from models import WINDOW_CASES, Acquire, ModelCase

WINDOWS = ["fixed_window", "sliding_window", "sliding_log"]


def test_fixed_window_by_hand() -> None:
    limiter = librate.Limiter(algorithm="fixed_window", limit=3, period=1)
    assert [limiter.acquire(now_ns=500 * MS).remaining for _ in range(3)] == [2, 1, 0]
    denied = limiter.acquire(now_ns=500 * MS)
    # Window [0, 1 s) is spent; the next one opens in 500 ms, and is then full.
    assert denied == Decision(False, 3, 0, 500 * MS, 500 * MS, 0)
    assert limiter.acquire(now_ns=999 * MS).retry_after_ns == 1 * MS
    assert limiter.acquire(now_ns=SECOND) == Decision(True, 3, 2, 0, SECOND, 0)


def test_sliding_window_by_hand() -> None:
    limiter = librate.Limiter(algorithm="sliding_window", limit=10, period=1)
    assert all(limiter.acquire(now_ns=500 * MS).allowed for _ in range(10))
    # At 1 s the previous window counts fully: 10 * (P - 0) + 1 * P > 10 * P.
    assert not limiter.acquire(now_ns=SECOND).allowed
    # At 1.5 s it counts half: 10 * 0.5 P + (c + 1) P <= 10 P admits c = 0..4.
    assert [limiter.acquire(now_ns=1500 * MS).allowed for _ in range(6)] == [True] * 5 + [False]
    denied = limiter.acquire(now_ns=1500 * MS)
    # 10 * (P - e) + 6 P <= 10 P from e = 0.6 P: 100 ms on. Whole again only when
    # both windows have passed: at 3 s.
    assert denied == Decision(False, 10, 0, 100 * MS, 1500 * MS, 0)


def test_sliding_log_by_hand() -> None:
    limiter = librate.Limiter(algorithm="sliding_log", limit=2, period=1)
    assert limiter.acquire(now_ns=0).allowed
    assert limiter.acquire(now_ns=500 * MS).allowed
    denied = limiter.acquire(now_ns=900 * MS)
    # The entry at 0 leaves the window (t - 1 s, t] at t = 1 s; the one at 500 ms at 1.5 s.
    assert denied == Decision(False, 2, 0, 100 * MS, 600 * MS, 0)
    assert limiter.acquire(now_ns=SECOND).allowed


@pytest.mark.parametrize("case", WINDOW_CASES, ids=str)
def test_matches_reference_model(case: ModelCase) -> None:
    def make(**config: Any) -> Acquire:
        limiter = librate.Limiter(**config)
        return lambda key, n, t: limiter.acquire(n, now_ns=t)

    case.run(make)


@pytest.mark.parametrize("algorithm", WINDOWS)
def test_window_errors(algorithm: str) -> None:
    limiter = librate.Limiter(algorithm=algorithm, limit=3, period=1)
    with pytest.raises(librate.InsufficientCapacity):
        limiter.acquire(4, now_ns=0)
    with pytest.raises(librate.Unsupported):
        limiter.reserve(max_wait=1, now_ns=0)
    assert limiter.config.max_n == 3
    assert limiter.acquire(0, now_ns=0) == Decision(True, 3, 3, 0, 0, 0)


@pytest.mark.parametrize("algorithm", WINDOWS)
def test_four_threads_at_a_frozen_time(algorithm: str) -> None:
    limiter = librate.Limiter(algorithm=algorithm, limit=100, period=3600)
    assert sum(hammer(lambda: limiter.acquire(now_ns=5 * SECOND).allowed)) == 100


@pytest.mark.parametrize("algorithm", WINDOWS)
def test_try_acquire(algorithm: str) -> None:
    # With 30-day windows the real clock crosses a boundary during this test with odds
    # of about 1e-9.
    limiter = librate.Limiter(algorithm=algorithm, limit=2, period=timedelta(days=30))
    assert [limiter.try_acquire() for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize("algorithm", WINDOWS)
def test_wait_polls_until_admitted(algorithm: str, clock: VirtualClock) -> None:
    clock.now = 1000 * SECOND  # a window boundary for P = 2 s
    limiter = librate.Limiter(algorithm=algorithm, limit=1, period=2)
    assert limiter.wait().allowed and clock.slept == []
    denied = limiter.wait(timeout=1)  # the next unit is 2 s away (4 s for sliding_window)
    assert not denied.allowed and clock.slept == []
    assert limiter.wait().allowed
    assert clock.now - 1000 * SECOND == denied.retry_after_ns
