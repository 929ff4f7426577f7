"""``librate.redis.RedisPolicy`` and ``AsyncRedisPolicy`` on a real ``redis-server``: the
decisions of the in-process ``librate.Policy`` field for field, exactly the tightest limit
admitted by many connections, reset, and failures as errors."""

from __future__ import annotations

import random
import threading

import pytest
import redis

import librate
from helpers import SECOND
from librate import Config, Decision
from librate.redis import AsyncRedisPolicy, RedisPolicy
from redis_server import Clients, RedisServer


def random_rule(rng: random.Random) -> Config:
    """A rule of any algorithm with a small limit and a period of a minute or more: every
    state the scripts write then lives at least 10 s by Redis's clock, far longer than a
    case takes, so nothing expires under the times the test passes."""
    limit = rng.randint(1, 6)
    period = rng.choice([60, 420, 3600, 61.234567891])
    kind = rng.randrange(4)
    if kind == 0:
        return Config.gcra(limit, period, rng.randint(1, 6))
    return [Config.fixed_window, Config.sliding_window, Config.sliding_log][kind - 1](
        limit, period
    )


def test_policies_decide_as_in_process(redis_server: RedisServer, clients: Clients) -> None:
    # Random policies of 1 to 8 rules of any mix; costs 0 to one past max_n, at
    # times forward and back: every decision, denied_by and rule is librate.Policy's.
    rng = random.Random(0x90_11C7)
    denials = 0
    for case in range(40):
        rules = [random_rule(rng) for _ in range(rng.randint(1, 8))]
        local = librate.Policy(rules)
        remote = clients.policy(redis_server.port, rules, f"py-conform:{clients.kind}:{case}:")
        assert remote.max_n == local.max_n
        assert remote.rules == tuple(rules)
        now = 10_000 * SECOND
        for step in range(25):
            if rng.random() < 0.2:
                now -= rng.randrange(30 * SECOND)
            else:
                now += rng.randrange(20 * SECOND)
            n = rng.randrange(local.max_n + 2)
            if n > local.max_n:
                with pytest.raises(librate.InsufficientCapacity):
                    local.acquire(n, now_ns=now)
                with pytest.raises(librate.InsufficientCapacity):
                    remote.acquire("k", n, now_ns=now)
                continue
            want = local.acquire(n, now_ns=now)
            assert remote.acquire_at("k", n, now) == want, (case, step, n, now, rules)
            denials += not want.decision.allowed
    assert denials > 100


def test_two_a_second_and_three_a_minute(redis_client: redis.Redis) -> None:
    policy = RedisPolicy(
        redis_client, [Config.gcra(2, 1), Config.fixed_window(3, 60)], prefix="py-doc:"
    )
    first = policy.acquire("bob", now_ns=0)
    # GCRA: T = 0.5 s, tolerance 1 s: one left, full again at 0.5 s. The window: two left.
    assert first.rules == (
        Decision(True, 2, 1, 0, SECOND // 2),
        Decision(True, 3, 2, 0, 60 * SECOND),
    )
    assert first.decision == Decision(True, 2, 1, 0, 60 * SECOND)
    assert first.denied_by is None
    assert policy.acquire("bob", now_ns=0).decision.allowed
    denied = policy.acquire("bob", now_ns=0)
    # Denied by the per-second rule; the per-minute one keeps its unit, reporting its state as is.
    assert denied.denied_by == 0
    assert denied.decision.retry_after_ns == SECOND // 2
    assert denied.rules[1] == Decision(True, 3, 1, 0, 60 * SECOND)
    assert policy.acquire("bob", now_ns=SECOND).decision.allowed
    denied = policy.acquire("bob", now_ns=2 * SECOND)
    assert denied.denied_by == 1
    assert denied.decision.retry_after_ns == 58 * SECOND
    assert policy.redis_keys("bob") == [b"py-doc:{=bob}:0", b"py-doc:{=bob}:1"]


def test_connections_admit_exactly_the_tightest_limit(redis_server: RedisServer) -> None:
    # 8 threads, each on a connection of its own, 20 requests each at one frozen time:
    # exactly the tightest rule's 30 admitted; every other rule holds exactly those 30.
    rules = [
        Config.gcra(40, 3600),
        Config.fixed_window(40, 3600),
        Config.sliding_window(30, 3600),
        Config.sliding_log(40, 3600),
    ]
    admitted = []
    lock = threading.Lock()

    def run() -> None:
        with redis_server.client() as client:
            policy = RedisPolicy(client, rules, prefix="py-hammer:")
            count = sum(
                policy.acquire("shared", now_ns=SECOND).decision.allowed for _ in range(20)
            )
        with lock:
            admitted.append(count)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(admitted) == 30
    with redis_server.client() as client:
        state = RedisPolicy(client, rules, prefix="py-hammer:").acquire("shared", 0, now_ns=SECOND)
    assert [rule.remaining for rule in state.rules] == [10, 10, 0, 10]


def test_reset_lifts_a_keys_limit(redis_server: RedisServer, clients: Clients) -> None:
    rules = [Config.gcra(2, 60), Config.sliding_window(3, 60), Config.sliding_log(3, 60)]
    policy = clients.policy(redis_server.port, rules, f"py-reset:{clients.kind}:")
    for key in ("alice", "bob"):
        assert policy.acquire(key, 2, now_ns=0).decision.allowed
        assert policy.acquire(key, now_ns=0).denied_by == 0
    policy.reset("alice")
    with redis_server.client() as client:
        assert client.exists(*policy.redis_keys("alice")) == 0
        assert client.exists(*policy.redis_keys("bob")) == 3
    fresh = policy.acquire("alice", 2, now_ns=0)
    assert [rule.remaining for rule in fresh.rules] == [0, 1, 1]
    assert policy.acquire("bob", now_ns=0).denied_by == 0
    policy.reset("nobody")


def test_a_limiters_reset(redis_server: RedisServer, clients: Clients) -> None:
    prefix = f"py-reset-one:{clients.kind}:"
    limiter = clients.limiter(
        redis_server.port, algorithm="fixed_window", limit=1, period=60, prefix=prefix
    )
    for key in ("alice", "bob"):
        assert limiter.acquire(key, now_ns=0).allowed
    limiter.reset("alice")
    assert limiter.acquire("alice", now_ns=0).allowed
    assert not limiter.acquire("bob", now_ns=0).allowed


def test_refusals(redis_client: redis.Redis) -> None:
    rules = [Config.gcra(5, 1), Config.sliding_log(3, 1)]
    for prefix in ("{api}:", "api{", "api}"):
        with pytest.raises(librate.InvalidConfig, match="prefix"):
            RedisPolicy(redis_client, rules, prefix=prefix)
    for count in (0, 9):
        with pytest.raises(librate.InvalidConfig, match="1 to 8 rules"):
            RedisPolicy(redis_client, [Config.gcra(1, 1)] * count, prefix="x")
    with pytest.raises(librate.InvalidConfig, match=r"rules\[1\]"):
        RedisPolicy(redis_client, [rules[0], Config.fixed_window(1, 200 * 86400)], prefix="x")
    with pytest.raises(TypeError):
        RedisPolicy(redis_client, rules[0], prefix="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        AsyncRedisPolicy(redis_client, rules, prefix="x")
    policy = RedisPolicy(redis_client, rules, prefix="py-refuse:")
    assert policy.max_n == 3
    with pytest.raises(librate.InsufficientCapacity):
        policy.acquire("k", 4, now_ns=0)


def test_failures_are_errors(own_redis_server: RedisServer) -> None:
    rules = [Config.gcra(2, 1), Config.fixed_window(2, 1), Config.sliding_log(2, 1)]
    with own_redis_server.client() as client:
        policy = RedisPolicy(client, rules, prefix="py-fail:")
        for wrong in range(len(rules)):
            keys = policy.redis_keys(f"wrong-{wrong}")
            client.rpush(keys[wrong], "x")
            with pytest.raises(librate.RedisError):
                policy.acquire(f"wrong-{wrong}", now_ns=0)
            # Nothing written to the other rules.
            assert client.exists(*keys) == 1
        client.script_flush()
        assert policy.acquire("k", 2, now_ns=0).decision.allowed
        # The server's clock: long after time 0, the key is fresh again.
        assert policy.acquire("k", 2).decision.allowed
        own_redis_server.stop()
        with pytest.raises(librate.RedisError):
            policy.acquire("k", now_ns=0)
        with pytest.raises(librate.RedisError):
            policy.reset("k")


def test_readme_example(redis_client: redis.Redis) -> None:
    client = redis_client
    policy = RedisPolicy(
        client,
        [librate.Config.gcra(10, 1), librate.Config.fixed_window(1000, 86400)],
        prefix="api:",
    )
    decision = policy.acquire("customer-7")
    if not decision.decision.allowed:
        print("429: rule", decision.denied_by, "denied")
    policy.reset("customer-7")  # support lifts the customer's limit
    assert decision.decision.allowed
    assert client.exists(*policy.redis_keys("customer-7")) == 0
