"""What only ``librate.redis.AsyncRedisLimiter`` has: awaitables, concurrent tasks on one
event loop, and the client it takes. (Every scenario of test_redis.py that takes
``clients`` runs on it too.)"""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter

import pytest
import redis
import redis.asyncio

import librate
from helpers import SECOND
from librate import Decision
from librate.redis import AsyncRedisLimiter, RedisLimiter
from models import Acquire
from redis_server import RedisServer
from test_peer_vectors import throttled_rate_limit

ALGORITHMS = ["gcra", "fixed_window", "sliding_window", "sliding_log"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_tasks_admit_exactly_the_limit(redis_server: RedisServer, algorithm: str) -> None:
    # 400 tasks on one loop, over 10 keys at one frozen time, on a pool of connections:
    # exactly 5 admitted a key, and acquire_batch's 10 more all denied.
    async def run() -> Counter[str]:
        pool = redis.asyncio.BlockingConnectionPool(port=redis_server.port, max_connections=16)
        async with redis.asyncio.Redis(connection_pool=pool) as client:
            limiter = AsyncRedisLimiter(
                client, algorithm=algorithm, limit=5, period=3600, prefix=f"tasks:{algorithm}:"
            )
            keys = [f"user-{i % 10}" for i in range(400)]
            decisions = await asyncio.gather(*(limiter.acquire(k, now_ns=SECOND) for k in keys))
            batch = await limiter.acquire_batch(keys[:10], now_ns=SECOND)
            assert not any(decision.allowed for decision in batch)
            return Counter(key for key, d in zip(keys, decisions, strict=True) if d.allowed)

    assert asyncio.run(run()) == {f"user-{k}": 5 for k in range(10)}


def test_methods_are_awaitable(redis_server: RedisServer) -> None:
    async def run() -> None:
        async with redis_server.async_client() as client:
            limiter = AsyncRedisLimiter(client, limit=2, period=3600, prefix="awaitable:")
            calls = [
                limiter.acquire("k", now_ns=0),
                limiter.acquire_at("k", 0, 0),
                limiter.reserve("k", max_wait=0, now_ns=0),
                limiter.reserve_at("k", 0, 0, max_wait=0),
                limiter.acquire_batch(["k"], 0, now_ns=0),
                limiter.try_acquire("j"),
            ]
            assert all(inspect.isawaitable(call) for call in calls)
            one, two = (
                Decision(True, 2, 1, 0, 1800 * SECOND),
                Decision(True, 2, 0, 0, 3600 * SECOND),
            )
            # Nothing is sent until awaited: in order, one unit, a query, one more, queries.
            assert [await call for call in calls] == [one, one, two, two, [two], True]
            # Refusals are raised when the call is made, before anything is sent.
            with pytest.raises(librate.InsufficientCapacity):
                limiter.acquire("k", 3)

    asyncio.run(run())


def test_peer_vectors_through_asyncio(redis_server: RedisServer) -> None:
    # Every key these vectors write lives at least a second (T = 1 s) of Redis's own
    # clock: far longer than the test takes, so no key expires under it.
    loop = asyncio.new_event_loop()
    client = redis_server.async_client()

    def make(**config: object) -> Acquire:
        limiter = AsyncRedisLimiter(client, **config, prefix="vectors:async:")  # type: ignore[arg-type]
        return lambda key, n, t: loop.run_until_complete(limiter.acquire(key, n, now_ns=t))

    try:
        throttled_rate_limit(make)
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()


def test_each_limiter_takes_its_kind_of_client(redis_server: RedisServer) -> None:
    with redis_server.client() as sync_client:
        with pytest.raises(TypeError, match="asyncio client"):
            AsyncRedisLimiter(sync_client, limit=1, period=1, prefix="x")
    async_client = redis_server.async_client()
    with pytest.raises(TypeError, match="sync client"):
        RedisLimiter(async_client, limit=1, period=1, prefix="x")
    assert isinstance(async_client, redis.asyncio.Redis)
    assert not isinstance(sync_client, redis.asyncio.Redis)
