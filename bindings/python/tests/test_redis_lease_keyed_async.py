"""``librate.lease.AsyncKeyedLeasedLimiter`` on a real ``redis-server``: the answers of
test_redis_lease_keyed.py through ``await``, the renewer task leasing a hot key, the
hand-back of ``aclose``, the fallback, and the client and loop it takes. Values by hand,
as there."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from functools import partial

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

import librate
import test_redis_lease_keyed
from helpers import MS, SECOND
from librate import Config, Decision, LeaseRule
from librate.lease import AsyncKeyedLeasedLimiter
from redis_server import RedisServer
from test_redis_lease_keyed import GCRA, Counts, holders_in


class Counting(Counts, redis.asyncio.Redis):  # type: ignore[misc]
    """An asyncio client that counts its lease script calls."""


#: The sync tests' helpers, for asyncio.
counting = partial(test_redis_lease_keyed.counting, kind=Counting)
keyed = partial(test_redis_lease_keyed.keyed, kind=AsyncKeyedLeasedLimiter)


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())  # type: ignore[arg-type]


def test_requests_in_redis_and_a_leased_key_in_process(redis_server: RedisServer) -> None:
    async def test() -> None:
        async with counting(redis_server) as client:
            requests = keyed(client, "akg:", GCRA, hot=10**6, name="r")
            assert await requests.acquire_at("a", 4, 0) == Decision(True, 10, 6, 0, 400 * MS)
            assert not await requests.try_acquire_at("a", 7, 0)
            with pytest.raises(librate.InsufficientCapacity):
                await requests.acquire("a", 11)
            async with keyed(client, "akg:", GCRA, name="h") as holder:
                assert await holder.try_acquire_at("a", 0, 100 * MS)
                assert await holder.renew_at(100 * MS) == 1
                assert holder.is_leased("a")
                assert b"h:h" in await client.hkeys("akg:a")
                assert await requests.acquire_at("a", 1, 2100 * MS) == Decision(
                    True, 10, 9, 0, 100 * MS
                )
                # 22.5% of the rule, as in test_redis_lease_keyed.py: one unit every
                # 444,444,445 ns from empty at 2.1 s, decided in process.
                assert await holder.renew_at(2100 * MS) == 1
                sent = dict(client.sent)
                every = 444_444_445
                assert not await holder.try_acquire_at("a", 1, 2100 * MS + every - 1)
                assert await holder.try_acquire_at("a", 1, 2100 * MS + every)
                assert client.sent == sent
            assert holder.closed and b"h:h" not in await client.hkeys("akg:a")
            assert client.sent[b"release"] == 1
            with pytest.raises(librate.ClosedError):
                await holder.try_acquire("a")
            await holder.aclose()  # idempotent
            await requests.aclose()

    run(test)


def test_the_task_leases_a_hot_key_and_aclose_hands_it_back(redis_server: RedisServer) -> None:
    async def test() -> None:
        rule = LeaseRule(Config.gcra(1000, 1), lease=0.2)
        async with counting(redis_server) as client:
            async with AsyncKeyedLeasedLimiter(client, "akr:", rule, hot=2, capacity=1) as limiter:
                assert await limiter.try_acquire("hot")
                deadline = time.monotonic() + 20
                while True:
                    sent = client.sent[b"acquire"]
                    await limiter.try_acquire("hot")
                    if client.sent[b"acquire"] == sent:
                        break  # decided in process
                    assert time.monotonic() < deadline, "never decided in process"
                    await asyncio.sleep(0.01)
                assert limiter.is_leased("hot") and limiter.errors == 0
            assert limiter.closed
            fields = await client.hkeys("akr:hot")
            assert fields and not holders_in(fields)

    run(test)


def test_redis_stopped_is_the_fallback(own_redis_server: RedisServer) -> None:
    async def test() -> None:
        client = counting(own_redis_server, retry=Retry(NoBackoff(), 0))
        local = Config.gcra(1, 1, burst=1)
        limiter = keyed(client, "akd:", GCRA, fallback=local)
        assert await limiter.acquire_at("a", 1, 0) == Decision(True, 10, 9, 0, 100 * MS)
        own_redis_server.stop()
        # The local rule per key: one a second, bursts of 1.
        assert await limiter.acquire_at("a", 1, 0) == Decision(True, 1, 0, 0, SECOND)
        assert not await limiter.try_acquire_at("a", 1, 0)
        assert await limiter.try_acquire_at("b", 1, 0)
        assert limiter.errors == 3 and isinstance(limiter.last_error, librate.RedisError)
        await limiter.aclose()
        await client.aclose()

    run(test)


def test_the_client_and_the_loop_it_takes(redis_server: RedisServer) -> None:
    with pytest.raises(TypeError, match=r"AsyncKeyedLeasedLimiter takes an asyncio client"):
        keyed(redis.Redis(), "akc:", GCRA)
    with pytest.raises(RuntimeError, match="renews on a task of the running event loop"):
        AsyncKeyedLeasedLimiter(redis_server.async_client(), "akc:", GCRA, hot=1, capacity=1)
