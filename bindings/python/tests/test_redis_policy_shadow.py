"""Shadow rules of ``RedisPolicy`` and ``AsyncRedisPolicy`` on a real ``redis-server``
(docs/policies.md#shadow-rules): the mask goes with each call, the script decides the
enforced rules all or nothing and each shadow rule alone, as ``librate.Policy`` does."""

from __future__ import annotations

import random

import pytest
import redis

import librate
from helpers import MS, SECOND
from librate import Config
from librate.redis import RedisPolicy
from redis_server import Clients, RedisServer
from test_redis_policy import random_rule


def test_shadow_rule_reports_then_enforces(redis_client: redis.Redis) -> None:
    # 2 a second enforced, 1 a second in shadow (GCRA, each burst its limit).
    policy = RedisPolicy(
        redis_client, [Config.gcra(2, 1), Config.gcra(1, 1)], prefix="py-shadow:", shadow=[1]
    )
    assert policy.shadow == (1,)
    first = policy.acquire("k", now_ns=0)
    assert first.decision.allowed and first.shadow_denied_by is None
    assert (first.decision.limit, first.decision.remaining) == (2, 1)
    second = policy.acquire("k", now_ns=0)
    assert second.decision.allowed and second.shadow_denied_by == 1
    assert second.rules[1].retry_after_ns == SECOND
    third = policy.acquire("k", now_ns=0)
    assert (third.denied_by, third.shadow_denied_by) == (0, 1)
    assert third.decision.retry_after_ns == 500 * MS
    # Enforced at 1 s: the shadow rule took its one token at 0 only.
    policy.set_shadow([])
    assert policy.acquire("k", now_ns=SECOND).decision.allowed
    assert policy.acquire("k", now_ns=SECOND).denied_by == 1
    with pytest.raises(librate.InvalidConfig):
        policy.set_shadow([2])
    assert policy.shadow == ()


def test_all_shadow_admits_everything(redis_client: redis.Redis) -> None:
    policy = RedisPolicy(redis_client, [Config.gcra(1, 1)], prefix="py-all-shadow:", shadow=[0])
    policy.acquire("k", now_ns=0)
    d = policy.acquire("k", now_ns=0)
    assert d.decision.allowed and d.shadow_denied_by == 0
    assert (d.decision.limit, d.decision.remaining) == (2**64 - 1, 2**64 - 1)


def test_shadowed_policies_decide_as_in_process(redis_server: RedisServer, clients: Clients) -> None:
    # Random policies and masks; costs 0 to max_n at times going forward: every decision
    # is librate.Policy's with the same mask, shadow_denied_by included.
    rng = random.Random(0x5AD0_77)
    shadow_denials = 0
    for case in range(30):
        rules = [random_rule(rng) for _ in range(rng.randint(1, 8))]
        shadow = [i for i in range(len(rules)) if rng.random() < 0.5]
        local = librate.Policy(rules, shadow=shadow)
        remote = clients.policy(redis_server.port, rules, f"py-shadowed:{clients.kind}:{case}:")
        remote.set_shadow(shadow)
        now = 10_000 * SECOND
        for step in range(20):
            now += rng.randrange(20 * SECOND)
            n = rng.randrange(local.max_n + 1)
            want = local.acquire(n, now_ns=now)
            assert remote.acquire_at("k", n, now) == want, (case, step, n, now, rules, shadow)
            shadow_denials += want.shadow_denied_by is not None
    assert shadow_denials > 20
