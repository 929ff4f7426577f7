"""Obvious sequential reference models of docs/decision.md, and brute-force oracles
for the decision fields it defines. Slow on purpose: clarity over speed, small periods only.

Each model answers ``admits(t, n)`` for any t at or after the last request without
changing state, and ``commit(t, n)`` records an admitted request. The oracle derives
``remaining``, ``retry_after_ns`` and ``reset_after_ns`` from those two by search, exactly
as docs/decision.md defines them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from fractions import Fraction
from typing import Any

from helpers import SECOND


@dataclass
class Gcra:
    limit: int
    period: int
    burst: int = 0
    tat: int = 0

    def __post_init__(self) -> None:
        self.interval = self.period // self.limit
        self.max_n = self.burst or self.limit
        self.tolerance = self.max_n * self.interval

    def admits(self, t: int, n: int) -> bool:
        return max(self.tat, t) + n * self.interval - t <= self.tolerance

    def commit(self, t: int, n: int) -> None:
        self.tat = max(self.tat, t) + n * self.interval


@dataclass
class FixedWindow:
    limit: int
    period: int
    window: int = -1
    count: int = 0

    max_n = property(lambda self: self.limit)

    def _count_at(self, t: int) -> int:
        return self.count if t // self.period == self.window else 0

    def admits(self, t: int, n: int) -> bool:
        return self._count_at(t) + n <= self.limit

    def commit(self, t: int, n: int) -> None:
        self.count = self._count_at(t) + n
        self.window = t // self.period


@dataclass
class SlidingWindow:
    limit: int
    period: int
    counts: dict[int, int] = field(default_factory=dict)  # window index -> count

    max_n = property(lambda self: self.limit)

    def admits(self, t: int, n: int) -> bool:
        k, e = divmod(t, self.period)
        previous, current = self.counts.get(k - 1, 0), self.counts.get(k, 0)
        return (
            previous * (self.period - e) + (current + n) * self.period <= self.limit * self.period
        )

    def commit(self, t: int, n: int) -> None:
        k = t // self.period
        self.counts[k] = self.counts.get(k, 0) + n


@dataclass
class SlidingLog:
    limit: int
    period: int
    log: list[int] = field(default_factory=list)  # admitted timestamps, one per unit

    max_n = property(lambda self: self.limit)

    def admits(self, t: int, n: int) -> bool:
        live = sum(1 for stamp in self.log if t - self.period < stamp <= t)
        return live + n <= self.limit

    def commit(self, t: int, n: int) -> None:
        self.log.extend([t] * n)


Model = Gcra | FixedWindow | SlidingWindow | SlidingLog


@dataclass(frozen=True)
class Expected:
    allowed: bool
    limit: int
    remaining: int
    retry_after_ns: int
    reset_after_ns: int


def remaining(model: Model, t: int) -> int:
    return max(m for m in range(model.max_n + 1) if model.admits(t, m))


def decide(model: Model, t: int, n: int, horizon: int) -> Expected:
    """Decides a request against the model (committing it if admitted) and derives every
    field by search over d in [0, horizon]."""
    allowed = n == 0 or model.admits(t, n)
    retry = 0 if allowed else next(d for d in range(1, horizon + 1) if model.admits(t + d, n))
    if allowed and n:
        model.commit(t, n)
    reset = next(d for d in range(horizon + 1) if remaining(model, t + d) == model.max_n)
    return Expected(allowed, model.max_n, remaining(model, t), retry, reset)


def replay(
    acquire: Callable[[bytes, int, int], Any],
    models: dict[bytes, Model],
    *,
    seed: str,
    gaps: tuple[int, ...],
    horizon: int,
    steps: int = 300,
) -> None:
    """Sends the same pseudo-random requests (key, cost, non-decreasing time) to
    ``acquire(key, n, now_ns)`` and to each key's model, and checks every decision."""
    rng = random.Random(seed)
    t = 0
    for _ in range(steps):
        t += rng.choice(gaps)
        key = rng.choice(sorted(models))
        model = models[key]
        n = rng.choice([0, 1, 1, 1, min(2, model.max_n), model.max_n])
        expected = decide(model, t, n, horizon)
        got = acquire(key, n, t)
        observed = (got.allowed, got.limit, got.remaining, got.retry_after_ns, got.reset_after_ns)
        assert observed == astuple(expected), f"t={t} key={key!r} n={n}"
        assert got.wait_ns == 0


#: A limiter under test: ``acquire(key, n, now_ns)`` returning its ``Decision``.
Acquire = Callable[[bytes, int, int], Any]
#: Makes the limiter under test for a configuration, given as ``librate.Limiter``'s
#: keywords: in process (``Limiter``, ``KeyedLimiter``) or through Redis.
MakeAcquire = Callable[..., Acquire]

MODELS: dict[str, Callable[..., Model]] = {
    "gcra": Gcra,
    "fixed_window": FixedWindow,
    "sliding_window": SlidingWindow,
    "sliding_log": SlidingLog,
}


@dataclass(frozen=True)
class ModelCase:
    """One replay against the reference models: a configuration, one model per key, and
    the pseudo-random requests of ``replay``. The period is 100 ns, so the oracle can
    search every nanosecond."""

    algorithm: str
    limit: int
    burst: int | None
    keys: tuple[bytes, ...]
    seed: str
    gaps: tuple[int, ...]
    horizon_periods: int
    period: int = 100

    def __str__(self) -> str:
        return f"{self.algorithm}-{self.limit}-{self.burst}-{len(self.keys)}keys"

    def run(self, make: MakeAcquire) -> None:
        """Replays the case through the limiter ``make`` gives for its configuration."""
        model = MODELS[self.algorithm]
        burst = () if self.burst is None else (self.burst,)
        models = {key: model(self.limit, self.period, *burst) for key in self.keys}
        acquire = make(
            algorithm=self.algorithm,
            limit=self.limit,
            period=Fraction(self.period, SECOND),
            burst=self.burst,
        )
        replay(
            acquire,
            models,
            seed=self.seed,
            gaps=self.gaps,
            horizon=self.horizon_periods * self.period,
        )


#: GCRA on one key (test_limiter.py).
LIMITER_CASES = [
    ModelCase("gcra", limit, burst, (b"",), f"gcra{limit}{burst}", (0, 0, 1, 5, 13, 40), 4)
    for limit, burst in [(4, None), (4, 1), (4, 7), (3, 2)]
]
#: The window algorithms on one key (test_windows.py).
WINDOW_CASES = [
    ModelCase(algorithm, limit, None, (b"",), f"{algorithm}{limit}", (0, 0, 1, 7, 30, 60, 150), 3)
    for algorithm in ("fixed_window", "sliding_window", "sliding_log")
    for limit in (1, 4, 7)
]
#: Every algorithm on three keys (test_keyed.py).
KEYED_CASES = [
    ModelCase(
        algorithm, 4, burst, (b"a", b"b", b""), algorithm + str(burst), (0, 0, 1, 9, 40, 120), 4
    )
    for algorithm, burst in [
        ("gcra", None),
        ("gcra", 2),
        ("fixed_window", None),
        ("sliding_window", None),
        ("sliding_log", None),
    ]
]
