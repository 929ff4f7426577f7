"""wait(), wait_async() and the @limit decorator, on a virtual clock (no real sleeping)."""

from __future__ import annotations

import asyncio
import inspect
import math

import pytest

import librate
from helpers import MS, SECOND, VirtualClock


def test_wait_admits_at_once_when_free(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=1, period=2)
    decision = limiter.wait()
    assert decision.allowed and decision.wait_ns == 0 and clock.slept == []


def test_wait_sleeps_until_admitted(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=1, period=2)
    limiter.wait()
    start = clock.now
    decision = limiter.wait()
    # TAT = start + 2 s: a reserve at start waits 2 s (TAT + T - t - tau).
    assert decision.allowed and decision.wait_ns == 2 * SECOND
    assert clock.slept == [2.0] and clock.now == start + 2 * SECOND


def test_wait_with_timeout_gives_up_without_sleeping(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=1, period=2)
    start = clock.now
    limiter.wait()
    limiter.wait()  # TAT = start + 4 s; this one slept until start + 2 s
    denied = limiter.wait(timeout=1)
    # At start + 2 s: TAT + T - t = 4 s > tau + max_wait = 3 s, 1 s short.
    assert not denied.allowed and denied.retry_after_ns == 1 * SECOND
    assert clock.now == start + 2 * SECOND
    assert clock.slept == [2.0]  # only the second wait slept


def test_wait_within_timeout(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=1, period=2)
    limiter.wait()
    assert limiter.wait(timeout=2).allowed and clock.slept == [2.0]


def test_wait_async(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=10, period=1, burst=1)

    async def three() -> list[int]:
        return [(await limiter.wait_async()).wait_ns for _ in range(3)]

    # 100 ms apart; each wait sleeps out its turn before the next reserves.
    assert asyncio.run(three()) == [0, 100 * MS, 100 * MS]
    assert clock.slept == [0.1, 0.1]


def test_sync_decorator_raises_when_limited(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=1, period=3600)

    @limiter.rate_limited()
    def handler(x: int) -> int:
        """Doubles."""
        return 2 * x

    assert handler(21) == 42
    with pytest.raises(librate.RateLimited) as raised:
        handler(21)
    # No sleeping; the C clock moved on by at most the test's run time.
    assert 0 < raised.value.retry_after_ns <= 3600 * SECOND
    assert raised.value.retry_after == raised.value.decision.retry_after
    assert not raised.value.decision.allowed
    assert handler.__name__ == "handler" and handler.__doc__ == "Doubles."


def test_async_decorator_raises_when_limited(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=2, period=3600)

    @limiter.rate_limited(2)
    async def handler() -> str:
        return "ok"

    assert inspect.iscoroutinefunction(handler)
    assert asyncio.run(handler()) == "ok"
    with pytest.raises(librate.RateLimited):
        asyncio.run(handler())


def test_decorator_waits(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=1, period=2)

    @limiter.rate_limited(wait=True)
    def handler() -> str:
        return "ok"

    @limiter.rate_limited(wait=True)
    async def async_handler() -> str:
        return "ok"

    assert handler() == "ok" and clock.slept == []
    assert handler() == "ok" and clock.slept == [2.0]
    assert asyncio.run(async_handler()) == "ok" and clock.slept == [2.0, 2.0]


def test_decorator_wait_timeout_raises(clock: VirtualClock) -> None:
    limiter = librate.Limiter(limit=1, period=2)

    @limiter.rate_limited(wait=True, timeout=0.5)
    def handler() -> str:
        return "ok"

    assert handler() == "ok"
    with pytest.raises(librate.RateLimited) as raised:
        handler()
    assert raised.value.retry_after_ns == 1500 * MS  # 2 s of wait, 0.5 s allowed
    assert clock.slept == []


def test_wait_forever_sleeps_in_steps(clock: VirtualClock) -> None:
    # A reservation far in the future is slept in steps of at most a day.
    limiter = librate.Limiter(limit=1, period=3 * 86_400, burst=1)
    limiter.wait()
    decision = limiter.wait(timeout=math.inf)
    assert decision.wait_ns == 3 * 86_400 * SECOND
    assert clock.slept == [86_400.0, 86_400.0, 86_400.0]
