"""``librate.lease.AsyncLeasedLimiter`` on a real ``redis-server`` and on a Redis
Cluster: the answers of test_redis_lease.py through ``await renew_at``, the renewer task,
the hand-back of ``aclose``, and the client it takes. Values by hand, as there."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import redis
import redis.asyncio

import librate
from helpers import MS, SECOND
from librate import Config, Decision, LeaseRule
from librate.lease import AsyncLeasedLimiter, Grant, HolderState, LeasedLimiter
from redis_server import RedisCluster, RedisServer
from test_redis_lease import RULE, WHOLE, two_holders_at_4_s

LEASED, UNSHARED = HolderState.LEASED, HolderState.UNSHARED


async def eventually(condition: Callable[[], bool], what: str) -> None:
    """``test_redis_lease.eventually`` on the event loop."""
    deadline = time.monotonic() + 20
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        await asyncio.sleep(0.01)


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())  # type: ignore[arg-type]


def test_a_new_rule_is_quiet_then_granted(redis_server: RedisServer) -> None:
    async def test() -> None:
        async with redis_server.async_client() as client:
            async with AsyncLeasedLimiter(
                client, "alease:{quiet}", RULE, name="host-a", background=False
            ) as limiter:
                assert await limiter.renew_at(10 * SECOND) is UNSHARED
                assert limiter.acquire_at(1, 10 * SECOND) == Decision(False, 0, 0, 500 * MS, 0)
                assert await limiter.renew_at(12 * SECOND) is LEASED
                grant = Grant(WHOLE, 1000, 2_000_000, 10_000_000, WHOLE, 1000, 1)
                assert limiter.last_grant == grant
                assert limiter.acquire_at(1, 12 * SECOND) == Decision(False, 1000, 0, MS, SECOND)
                assert limiter.acquire(1, now_ns=12 * SECOND + MS).allowed
            assert limiter.closed
            assert b"h:host-a" not in await client.hkeys("alease:{quiet}")

    run(test)


def test_the_task_renews_and_aclose_hands_the_share_back(redis_server: RedisServer) -> None:
    # Renewed by tasks on the server's clock: the first holds the whole rule, so the
    # second, once answered, holds nothing; the first closed hands its share back, and the
    # second is granted the whole rule.
    rule = LeaseRule(Config.gcra(1000, 1), lease=1)

    async def test() -> None:
        async with redis_server.async_client() as client:
            first = AsyncLeasedLimiter(client, "alease:{tasks}", rule, name="first")
            await eventually(lambda: first.state is LEASED, "the first leased")
            assert first.last_grant is not None and first.last_grant.rate == WHOLE
            second = AsyncLeasedLimiter(client, "alease:{tasks}", rule, name="second")
            await eventually(
                lambda: second.last_grant is not None and second.last_grant.holders == 2,
                "the second answered",
            )
            assert (second.last_grant.rate, second.last_grant.burst) == (0, 0)
            await first.aclose()
            assert first.closed and first.errors == 0
            with pytest.raises(librate.ClosedError):
                first.try_acquire()
            await eventually(
                lambda: second.last_grant is not None and second.last_grant.holders == 1,
                "the second alone",
            )
            assert (second.last_grant.rate, second.last_grant.burst) == (WHOLE, 1000)
            assert second.state is LEASED and second.errors == 0
            await second.aclose()
            await first.aclose()  # idempotent

    run(test)


def test_the_client_it_takes(redis_server: RedisServer) -> None:
    with redis_server.client() as sync_client:
        with pytest.raises(TypeError, match="an asyncio client"):
            AsyncLeasedLimiter(sync_client, "k", RULE, background=False)

    async def test() -> None:
        async with redis_server.async_client() as client:
            with pytest.raises(TypeError, match="a sync client"):
                LeasedLimiter(client, "k", RULE, background=False)

    run(test)
    # A renewer task needs a running event loop.
    with pytest.raises(RuntimeError, match="inside one"):
        AsyncLeasedLimiter(redis_server.async_client(), "k", RULE)


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisCluster]:
    started = RedisCluster()
    yield started
    started.close()


def test_a_rule_lives_in_its_slot_on_a_cluster(cluster: RedisCluster) -> None:
    # The rule's key is the script's one key: every holder's share in one hash, on the
    # master of its slot, which loads the script again after losing it.
    client: Any = cluster.client()
    h1, h2 = two_holders_at_4_s(client, "lease:{cluster}")
    node = client.get_node_from_key("lease:{cluster}")
    with redis.Redis(host=node.host, port=node.port) as master:
        assert set(master.hkeys("lease:{cluster}")) >= {b"rule", b"h:h1", b"h:h2"}
        master.script_flush()
    h1.close()
    assert h2.renew_at(4500 * MS) is LEASED
    assert h2.last_grant == Grant(WHOLE, 1000, 2_000_000, 0, WHOLE, 1000, 1)
    assert (h1.errors, h2.errors) == (0, 0)
    h2.close()
    client.close()


def test_asyncio_on_a_cluster(cluster: RedisCluster) -> None:
    from redis.asyncio.cluster import ClusterNode
    from redis.asyncio.cluster import RedisCluster as Client

    async def test() -> None:
        nodes = [ClusterNode("127.0.0.1", node.port) for node in cluster.nodes]
        client = Client(startup_nodes=nodes, socket_timeout=5)
        async with AsyncLeasedLimiter(
            client, "alease:{cluster}", RULE, name="h", background=False
        ) as limiter:
            assert await limiter.renew_at(0) is UNSHARED
            assert await limiter.renew_at(2 * SECOND) is LEASED
            assert limiter.last_grant == Grant(WHOLE, 1000, 2_000_000, 0, WHOLE, 1000, 1)
        await client.aclose()

    run(test)
