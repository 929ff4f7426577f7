"""Counts of the Redis clients (docs/metrics.md), kept in the binding: off until
``enable_counts()``, then each decision received counted once, as in process; a query
(n=0) and a request Redis does not decide are not."""

from __future__ import annotations

import asyncio

import pytest
import redis

import librate
from helpers import SECOND
from librate import Counts, RuleCounts
from librate.redis import AsyncRedisLimiter, AsyncRedisPolicy, RedisLimiter, RedisPolicy
from redis_server import RedisServer

SECOND_AND_MINUTE = [librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)]


def test_a_redis_limiter_counts_every_path(redis_client: redis.Redis) -> None:
    limiter = RedisLimiter(
        redis_client, algorithm="fixed_window", limit=2, period=60, prefix="counts:limiter:"
    )
    limiter.acquire("k", now_ns=0)
    assert limiter.counts() is None  # off by default: nothing counted
    limiter.enable_counts()
    # 1 of 2 left for k: admitted (acquire), then denied (acquire, then a batch of k and
    # j, where j is admitted), a query not counted; try_acquire is on the server's clock:
    # a fresh key, admitted.
    assert limiter.acquire("k", now_ns=0).allowed
    assert not limiter.acquire("k", now_ns=0).allowed
    batch = limiter.acquire_batch(["k", "j"], now_ns=0)
    assert [d.allowed for d in batch] == [False, True]  # type: ignore[union-attr]
    limiter.acquire("k", 0, now_ns=0)
    assert limiter.try_acquire("fresh")
    assert limiter.counts() == Counts(admitted=3, denied=2, table_full=0)


def test_a_redis_policy_counts_the_first_rule_that_denied(redis_client: redis.Redis) -> None:
    # As in process (test_counts.py): 3 admitted, one denied by each rule.
    policy = RedisPolicy(redis_client, SECOND_AND_MINUTE, prefix="counts:policy:")
    policy.enable_counts()
    at = [0, 0, 0, SECOND, 2 * SECOND]
    assert [policy.acquire("k", now_ns=t).decision.allowed for t in at] == [
        True,
        True,
        False,
        True,
        False,
    ]
    assert policy.counts() == Counts(3, 2, 0, (RuleCounts(1, 0), RuleCounts(1, 0)))


def test_a_redis_policy_counts_its_shadow_rule(redis_client: redis.Redis) -> None:
    # The minute rule in shadow (docs/policies.md#shadow-rules): it takes a unit of each
    # request the per-second rule admits, is only asked of the one it denies (at 0, the
    # third), and would deny the fifth (at 2 s, its fourth of 3): counted beside that
    # request's admission, as in process (test_counts.py).
    policy = RedisPolicy(redis_client, SECOND_AND_MINUTE, prefix="counts:shadow:", shadow=[1])
    policy.enable_counts()
    at = [0, 0, 0, SECOND, 2 * SECOND]
    decisions = [policy.acquire("k", now_ns=t) for t in at]
    assert [d.decision.allowed for d in decisions] == [True, True, False, True, True]
    assert decisions[-1].shadow_denied_by == 1
    assert policy.counts() == Counts(4, 1, 0, (RuleCounts(1, 0), RuleCounts(0, 1)))


def test_asyncio_clients_count(redis_server: RedisServer) -> None:
    async def run() -> tuple[Counts | None, Counts | None]:
        async with redis_server.async_client() as client:
            limiter = AsyncRedisLimiter(
                client, algorithm="fixed_window", limit=1, period=60, prefix="counts:async:"
            )
            policy = AsyncRedisPolicy(client, SECOND_AND_MINUTE, prefix="counts:apolicy:")
            limiter.enable_counts()
            policy.enable_counts()
            for _ in range(3):
                await limiter.acquire("k", now_ns=0)
                await policy.acquire("k", now_ns=0)
            return limiter.counts(), policy.counts()

    assert asyncio.run(run()) == (
        Counts(1, 2, 0),
        Counts(2, 1, 0, (RuleCounts(1, 0), RuleCounts(0, 0))),
    )


def test_the_collector_exports_a_redis_policy(redis_client: redis.Redis) -> None:
    # A Redis client is a limiter to the collector like any other: its shadow rule's
    # would-be denial too (as test_a_redis_policy_counts_its_shadow_rule counts it).
    prometheus_client = pytest.importorskip("prometheus_client")
    from librate.prometheus import RateLimitCollector

    policy = RedisPolicy(redis_client, SECOND_AND_MINUTE, prefix="counts:export:", shadow=[1])
    collector = RateLimitCollector()
    collector.add("redis", policy, rule_names=["second", "minute"])
    for t in [0, 0, 0, SECOND, 2 * SECOND]:
        policy.acquire("k", now_ns=t)
    registry = prometheus_client.CollectorRegistry()
    registry.register(collector)
    lines = prometheus_client.generate_latest(registry).decode().splitlines()
    assert [line for line in lines if not line.startswith("#")] == [
        'ratelimit_requests_total{limiter="redis",result="admitted",rule=""} 4.0',
        'ratelimit_requests_total{limiter="redis",result="table_full",rule=""} 0.0',
        'ratelimit_requests_total{limiter="redis",result="denied",rule="second"} 1.0',
        'ratelimit_requests_total{limiter="redis",result="denied",rule="minute"} 0.0',
        'ratelimit_requests_total{limiter="redis",result="shadow_denied",rule="second"} 0.0',
        'ratelimit_requests_total{limiter="redis",result="shadow_denied",rule="minute"} 1.0',
    ]
