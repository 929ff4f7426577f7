"""Published test vectors of peer GCRA libraries, through the Python API on a frozen
timeline. librate's rules (docs/decision.md) win where a peer's conventions differ: a peer's -1 "no
retry" is ``retry_after_ns == 0`` for an admission, and a cost above the burst raises
``InsufficientCapacity`` (docs/decision.md) where a peer reports a denial."""

from __future__ import annotations

from typing import Any

import pytest

import librate
from helpers import MS
from librate import Decision, Limiter
from models import Acquire, MakeAcquire

# throttled/throttled rate_test.go TestRateLimit: PerSec(1) with MaxBurst 4, a burst of 5
# (throttled's burst counts the request in hand). (at ms, n, allowed, remaining, reset
# ms, retry ms).
THROTTLED = [
    (0, 1, True, 4, 1000, 0),
    (0, 1, True, 3, 2000, 0),
    (0, 1, True, 2, 3000, 0),
    (0, 1, True, 1, 4000, 0),
    (0, 1, True, 0, 5000, 0),
    (0, 1, False, 0, 5000, 1000),
    (3000, 1, True, 2, 3000, 0),
    (3100, 1, True, 1, 3900, 0),
    (4000, 1, True, 1, 4000, 0),
    (8000, 1, True, 4, 1000, 0),
    (9500, 1, True, 4, 1000, 0),
    (9500, 0, True, 4, 1000, 0),
    (9500, 2, True, 2, 3000, 0),
    (9500, 5, False, 2, 3000, 3000),
]


def throttled_rate_limit(make: MakeAcquire) -> None:
    """The vectors through the limiter ``make`` gives for their configuration (see
    ``models.MakeAcquire``), on one key."""
    acquire = make(algorithm="gcra", limit=1, period=1, burst=5)
    with pytest.raises(librate.InsufficientCapacity):
        acquire(b"k", 6, 0)
    for i, (at_ms, n, allowed, remaining, reset_ms, retry_ms) in enumerate(THROTTLED, 1):
        want = Decision(allowed, 5, remaining, retry_ms * MS, reset_ms * MS)
        assert acquire(b"k", n, at_ms * MS) == want, f"case {i}"


def test_throttled_rate_limit_vectors() -> None:
    def make(**config: Any) -> Acquire:
        limiter = Limiter(**config)
        return lambda key, n, t: limiter.acquire(n, now_ns=t)

    throttled_rate_limit(make)
