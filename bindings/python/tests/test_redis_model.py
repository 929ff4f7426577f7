"""``librate.redis`` against the in-process limiters, through a real ``redis-server``
the tests start (redis_server.py): random configurations of every algorithm replayed
through both, every decision, refusal and key expiry compared (redis_replay.py); the
in-process reference-model cases (models.py) and peer vectors through Redis."""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

import pytest
import redis

import librate
from helpers import MS, SECOND
from librate.redis import RedisLimiter
from models import KEYED_CASES, LIMITER_CASES, WINDOW_CASES, Acquire, MakeAcquire, ModelCase
from redis_replay import MAX_STATE, Unexpiring, keywords, replay
from test_peer_vectors import throttled_rate_limit

ALGORITHMS = ["gcra", "fixed_window", "sliding_window", "sliding_log"]
#: 2**53 ns: the Redis tier's bound on a window's period and on GCRA's burst x T.
EXACT = 2**53
_prefixes = itertools.count()


def through_redis(client: redis.Redis) -> MakeAcquire:
    """``models.MakeAcquire`` through Redis, each limiter under a prefix of its own, on a
    client where no key expires by Redis's clock (the tests' times are their own)."""
    unexpiring = Unexpiring(client)

    def make(**config: Any) -> Acquire:
        limiter = RedisLimiter(unexpiring, **config, prefix=f"model:{next(_prefixes)}:")
        return lambda key, n, t: limiter.acquire(key, n, now_ns=t)

    return make


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_decides_as_the_in_process_limiter(redis_client: redis.Redis, algorithm: str) -> None:
    # Random configurations; every decision, refusal and expiry (redis_replay.replay).
    rng = random.Random(f"differential {algorithm}")
    replayed = 0
    for case in range(120):
        config = _random_config(rng, algorithm)
        try:
            librate.Limiter(**keywords(config))
        except librate.InvalidConfig as error:
            # Refused alike, word for word.
            with pytest.raises(librate.InvalidConfig, match=f"^{re.escape(str(error))}$"):
                RedisLimiter(redis_client, **keywords(config), prefix="x")
            continue
        try:
            RedisLimiter(redis_client, **keywords(config), prefix="x")
        except librate.InvalidConfig as error:
            # Only the bound of Lua's doubles is the Redis tier's own.
            assert "2**53" in str(error), config
            longest = config.period_ns
            if algorithm == "gcra":
                longest = config.max_n * (config.period_ns // config.limit)
            assert longest >= EXACT, config
            continue
        replay(redis_client, config, case, rng)
        replayed += 1
    assert replayed >= 90


def _random_config(rng: random.Random, algorithm: str) -> librate.Config:
    """As the Rust tests draw them (tests/redis*.rs): GCRA's limits to 20, periods to
    10 s, bursts to 40; the windows' periods tiny, small, human or near 2**53 ns, and
    limits small, at the in-process bound, anywhere below it, or one past it; the log's
    limits mostly to 50, some to 3000, its periods about a unit a ns, near 2**53 ns, or
    to 10 s."""
    if algorithm == "gcra":
        limit = rng.randint(1, 20)
        burst = None if rng.random() < 0.5 else rng.randint(1, 40)
        return librate.Config("gcra", limit, rng.randint(limit, 10 * SECOND), burst)
    if algorithm == "sliding_log":
        limit = rng.randint(1, 50) if rng.random() < 0.9 else rng.randint(51, 3000)
        period = rng.choice(
            [rng.randint(limit, 4 * limit), EXACT - 1 - rng.randrange(SECOND)]
            + [rng.randint(1, 10 * SECOND)] * 2
        )
        return librate.Config(algorithm, limit, period)
    period = rng.choice(
        [
            rng.randint(1, 64),
            rng.randint(2**10, 2**12),
            rng.randint(MS, 100 * SECOND),
            EXACT - rng.randint(1, 2**20) + (rng.random() < 0.05),
        ]
    )
    largest = _largest_window_limit(period)
    limit = rng.choice(
        [
            rng.randint(1, min(20, largest)),
            largest - rng.randrange(min(2, largest)),
            rng.randint(1, largest),
        ]
    ) + (rng.random() < 0.03)
    return librate.Config(algorithm, limit, period)


def _largest_window_limit(period: int) -> int:
    """The largest limit a window of ``period`` ns takes in process (the fixed window's
    bound: floor((2**64-1)/P) * 2**bits(L) + L <= 2**64 - 257), or 1 where none is."""
    last_index = (2**64 - 1) // period
    for bits in range(63, 0, -1):
        limit = (1 << bits) - 1
        if (last_index << bits) + limit <= MAX_STATE:
            return limit
    return 1


@pytest.mark.parametrize("case", LIMITER_CASES + WINDOW_CASES + KEYED_CASES, ids=str)
def test_reference_models_through_redis(redis_client: redis.Redis, case: ModelCase) -> None:
    # The in-process limiters' reference-model replays (models.py), through Redis.
    case.run(through_redis(redis_client))


def test_peer_vectors_through_redis(redis_client: redis.Redis) -> None:
    throttled_rate_limit(through_redis(redis_client))
