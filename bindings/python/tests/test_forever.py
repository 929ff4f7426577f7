"""A rule that never refills (``period=librate.FOREVER``, 2**64-1 ns) through the Python
API: its allowance once, and "never" (``math.inf`` s, 2**64-1 ns) for what never comes."""

from __future__ import annotations

import math

import pytest

import librate
from librate import Decision

NEVER = 2**64 - 1


@pytest.mark.parametrize("algorithm", sorted(librate.ALGORITHMS))
def test_the_allowance_is_admitted_once(algorithm: str) -> None:
    limiter = librate.Limiter(algorithm=algorithm, limit=3, period=librate.FOREVER)
    assert limiter.config.period_ns == NEVER
    assert limiter.config.period == math.inf
    assert limiter.acquire(2, now_ns=0) == Decision(True, 3, 1, 0, NEVER, 0)
    denied = limiter.acquire(2, now_ns=NEVER)
    assert denied == Decision(False, 3, 1, NEVER, NEVER, 0)
    assert denied.retry_after == math.inf
    assert limiter.acquire(1, now_ns=5) == Decision(True, 3, 0, 0, NEVER, 0)


def test_gcra_admits_its_burst() -> None:
    config = librate.Config.gcra(10, librate.FOREVER, burst=2)
    assert config.period_ns == NEVER
    policy = librate.Policy([config])
    assert policy.acquire(2, now_ns=0).decision.allowed
    assert not policy.acquire(1, now_ns=NEVER).decision.allowed
