"""``librate.redis`` from several processes on one ``redis-server``, and on a Redis Cluster
of three masters the tests start on loopback ports: exactly the limit admitted, and each
key decided as in process, wherever its slot lives."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections import Counter
from collections.abc import Iterator

import pytest
import redis

import librate
from helpers import SECOND
from librate.redis import AsyncRedisLimiter, RedisLimiter
from redis_server import RedisCluster, RedisServer, hammer_process

ALGORITHMS = ["gcra", "fixed_window", "sliding_window", "sliding_log"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_processes_admit_exactly_the_limit(redis_server: RedisServer, algorithm: str) -> None:
    # 4 processes x 4 connections, each thread 80 requests over 10 keys at one frozen
    # time: 320 requests a key, exactly 5 admitted between them all. (A period of an
    # hour: Redis's clock expires nothing while the processes start.)
    config = {
        "algorithm": algorithm,
        "limit": 5,
        "period": 3600,
        "prefix": f"hammer:{algorithm}:",
    }
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(16), context.Queue()
    processes = [
        context.Process(target=hammer_process, args=(redis_server.port, config, start, results))
        for _ in range(4)
    ]
    for process in processes:
        process.start()
    admitted: Counter[str] = Counter()
    for _ in processes:
        admitted.update(results.get(timeout=120))
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert admitted == {f"user-{k}": 5 for k in range(10)}


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisCluster]:
    started = RedisCluster()
    yield started
    started.close()


def test_keys_across_the_masters_decide_as_in_process(cluster: RedisCluster) -> None:
    # 40 keys: each decides as an in-process limiter of its own; one user's Redis keys
    # under two prefixes share a slot (the hash tag); every master holds some.
    client = cluster.client()
    per_second = RedisLimiter(client, limit=2, period=1, prefix="cluster:second:")
    per_hour = RedisLimiter(client, limit=100, period=3600, prefix="cluster:hour:")
    masters = set()
    for user in range(40):
        key = f"user-{user}"
        local = librate.Limiter(limit=2, period=1)
        for step in range(5):
            now = 1000 * SECOND + step * SECOND // 3
            assert per_second.acquire(key, now_ns=now) == local.acquire(now_ns=now), key
        assert per_hour.acquire(key, now_ns=0).allowed
        a, b = per_second.redis_key(key), per_hour.redis_key(key)
        assert client.keyslot(a) == client.keyslot(b) == client.cluster_keyslot(a)
        masters.add(client.get_node_from_key(a).port)
    assert masters == {node.port for node in cluster.nodes}
    client.close()


def test_a_batch_over_the_masters(cluster: RedisCluster) -> None:
    # A batch decides as single calls, also when one master lost its scripts: only the
    # calls it refused (NOSCRIPT) are sent again, so no key is decided twice.
    client = cluster.client()
    batched = RedisLimiter(client, limit=10, period=3600, prefix="cluster:batch:")
    single = RedisLimiter(client, limit=10, period=3600, prefix="cluster:single:")
    keys = [f"k{k % 12}" for k in range(15)]
    for round_ in range(4):
        if round_ == 1:
            with cluster.nodes[0].client() as node:
                node.script_flush()
        decisions = batched.acquire_batch(keys, now_ns=0)
        assert decisions == [single.acquire(key, now_ns=0) for key in keys], round_
    client.close()


def test_asyncio_on_the_cluster(cluster: RedisCluster) -> None:
    from redis.asyncio.cluster import ClusterNode
    from redis.asyncio.cluster import RedisCluster as AsyncCluster

    async def run() -> None:
        nodes = [ClusterNode("127.0.0.1", node.port) for node in cluster.nodes]
        client = AsyncCluster(startup_nodes=nodes, socket_timeout=5)
        limiter = AsyncRedisLimiter(client, limit=2, period=1, prefix="cluster:async:")
        for user in range(20):
            local = librate.Limiter(limit=2, period=1)
            for step in range(4):
                now = step * SECOND // 4
                want = local.acquire(now_ns=now)
                assert await limiter.acquire(f"u{user}", now_ns=now) == want
        keys = [f"b{k}" for k in range(10)]
        assert [d.allowed for d in await limiter.acquire_batch(keys * 3, now_ns=0)] == (
            [True] * 20 + [False] * 10
        )
        await client.aclose()

    asyncio.run(run())


def test_cluster_errors_are_errors(cluster: RedisCluster) -> None:
    client = cluster.client()
    limiter = RedisLimiter(client, limit=1, period=1, prefix="cluster:errors:")
    client.rpush(limiter.redis_key("list"), "x")
    with pytest.raises(librate.RedisError) as wrong:
        limiter.acquire("list")
    assert isinstance(wrong.value.__cause__, redis.ResponseError)
    client.close()


def test_policies_on_the_cluster(cluster: RedisCluster) -> None:
    # Every rule of a key in one slot, whatever the key (an empty one, braces in it): one
    # script call on its master, deciding as in process; reset through the Cluster client.
    from redis.asyncio.cluster import ClusterNode
    from redis.asyncio.cluster import RedisCluster as AsyncCluster

    from librate.redis import AsyncRedisPolicy, RedisPolicy

    rules = [librate.Config.gcra(2, 1), librate.Config.sliding_window(3, 10)]
    keys = ["", "}", "{x}", *(f"user-{user}" for user in range(20))]
    client = cluster.client()
    policy = RedisPolicy(client, rules, prefix="cluster:policy:")
    masters = set()
    for key in keys:
        local = librate.Policy(rules)
        for step in range(4):
            now = 1000 * SECOND + step * SECOND // 4
            assert policy.acquire(key, now_ns=now) == local.acquire(now_ns=now), key
        redis_keys = policy.redis_keys(key)
        assert len({client.keyslot(each) for each in redis_keys}) == 1
        masters.add(client.get_node_from_key(redis_keys[0]).port)
        policy.reset(key)
        assert policy.acquire(key, 2, now_ns=1000 * SECOND).decision.allowed
    assert masters == {node.port for node in cluster.nodes}
    client.close()

    async def run() -> None:
        nodes = [ClusterNode("127.0.0.1", node.port) for node in cluster.nodes]
        client = AsyncCluster(startup_nodes=nodes, socket_timeout=5)
        policy = AsyncRedisPolicy(client, rules, prefix="cluster:policy:async:")
        for key in keys:
            local = librate.Policy(rules)
            for step in range(4):
                now = step * SECOND // 4
                assert await policy.acquire(key, now_ns=now) == local.acquire(now_ns=now)
            await policy.reset(key)
            assert (await policy.acquire(key, 2, now_ns=0)).decision.allowed
        await client.aclose()

    asyncio.run(run())
