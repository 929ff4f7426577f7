"""librate.KeyedPolicy: per-key and global rules decided together for one key, over
rate_keyed_policy_*. Expected values are worked out in the comments (GCRA with limit L
per period P has T = P / L; a fixed window of L per P counts units in [kP, (k+1)P))."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import pytest

import librate
from conftest import Serve
from helpers import MS, SECOND, VirtualClock, get, hello_wsgi
from librate import Config, KeyedRule, _keyed_policy
from librate.middleware import WSGIRateLimit

POST = [1, 0, 1]
LIKE = [0, 1, 1]


def site(capacity: int = 100) -> librate.KeyedPolicy:
    """Per customer 1 post and 5 likes a second (GCRA), everybody 3 a second (window)."""
    return librate.KeyedPolicy(
        [
            KeyedRule.per_key(Config.gcra(1, 1)),
            KeyedRule.per_key(Config.gcra(5, 1)),
            KeyedRule.global_(Config.fixed_window(3, 1)),
        ],
        capacity=capacity,
    )


def test_posts_and_likes() -> None:
    policy = site()
    post = policy.acquire_costs("alice", POST, now_ns=0)
    # Combined over the post and global rules: limit 1, remaining 0 (TAT 1 s); the like
    # rule only reports its state (5 of 5, full).
    assert post == librate.PolicyDecision(
        librate.Decision(True, 1, 0, 0, SECOND),
        None,
        (
            librate.Decision(True, 1, 0, 0, SECOND),
            librate.Decision(True, 5, 5, 0, 0),
            librate.Decision(True, 3, 2, 0, SECOND),
        ),
    )
    # Her second post: the post rule denies for 1 s; the global unit is given back.
    denied = policy.acquire_costs("alice", POST, now_ns=0)
    assert denied.denied_by == 0
    assert denied.decision.retry_after_ns == SECOND
    assert denied.rules[2].remaining == 2
    assert policy.acquire_costs(b"alice", LIKE, now_ns=0).decision.allowed
    # bob posts; carol's like finds the window full (alice's post and like, bob's post).
    assert policy.acquire_costs("bob", POST, now_ns=0).decision.allowed
    carol = policy.acquire_costs("carol", LIKE, now_ns=0)
    assert (carol.denied_by, carol.decision.retry_after_ns) == (2, SECOND)
    # n units of every rule.
    assert policy.acquire("dave", 1, now_ns=SECOND).decision.allowed
    assert not policy.acquire("dave", 1, now_ns=SECOND + 200 * MS).decision.allowed
    # Now, on the library's clock: a new second for everybody, erin's first like.
    assert policy.try_acquire_costs("erin", LIKE)
    assert policy.try_acquire("erin", 0)


def test_reset_and_stats() -> None:
    policy = site()
    assert policy.acquire_costs("alice", POST, now_ns=0).decision.allowed
    policy.reset("alice")
    policy.reset("nobody")
    again = policy.acquire_costs("alice", POST, now_ns=0)
    assert again.decision.allowed
    # The global rule remembers both posts.
    assert again.rules[2].remaining == 1
    # alice is live in the post table only; nothing was refused.
    assert policy.stats(now_ns=0) == librate.KeyedStats(100, 200, 1, 0)


def test_a_full_table_refuses_a_new_key_and_takes_nothing() -> None:
    policy = site(capacity=1)
    for key in ("a", "b"):
        assert policy.acquire_costs(key, POST, now_ns=0).decision.allowed
    with pytest.raises(librate.TableFull):
        policy.acquire_costs("c", POST, now_ns=0)
    # The global rule counted a and b only.
    assert policy.acquire("c", 0, now_ns=0).rules[2].remaining == 1
    assert policy.stats(now_ns=0).table_full == 1


def test_bad_input() -> None:
    with pytest.raises(librate.InvalidConfig, match="1 to 8 rules"):
        librate.KeyedPolicy([], capacity=1)
    with pytest.raises(librate.InvalidConfig, match="capacity"):
        librate.KeyedPolicy([KeyedRule.per_key(Config.gcra(1, 1))], capacity=0)
    with pytest.raises(TypeError, match="put one rule in a list"):
        librate.KeyedPolicy(KeyedRule.per_key(Config.gcra(1, 1)), capacity=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must be a KeyedRule"):
        librate.KeyedPolicy([Config.gcra(1, 1)], capacity=1)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="scope"):
        KeyedRule(Config.gcra(1, 1), "everybody")
    policy = site()
    with pytest.raises(librate.InvalidConfig):
        policy.acquire_costs("k", [1, 1])
    with pytest.raises(librate.InsufficientCapacity):
        policy.acquire("k", 2)
    with pytest.raises(TypeError):
        policy.acquire(3, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        policy.acquire_costs("k", [-1, 0, 0])
    policy.close()
    with pytest.raises(librate.ClosedError):
        policy.try_acquire("k")


def test_a_shared_file(tmp_path: Path) -> None:
    path = tmp_path / "policy"
    rules = site().rules
    first = librate.KeyedPolicy.open(path, rules, capacity=100)
    second = librate.KeyedPolicy.open(os.fspath(path), rules, capacity=100)
    assert first.acquire_costs("alice", POST, now_ns=0).decision.allowed
    denied = second.acquire_costs("alice", POST, now_ns=0)
    assert (denied.denied_by, denied.rules[2].remaining) == (0, 2)
    with pytest.raises(librate.Incompatible):
        librate.KeyedPolicy.open(path, rules[:2], capacity=100)
    with pytest.raises(FileNotFoundError):
        librate.KeyedPolicy.open(tmp_path / "none" / "policy", rules, capacity=100)


def test_middleware_over_http(serve: Serve) -> None:
    # Per client 1 a second (GCRA), everybody 3 a minute (fixed window).
    clock = VirtualClock(now=0)
    calls: list[str] = []
    policy = librate.KeyedPolicy(
        [KeyedRule.per_key(Config.gcra(1, 1)), KeyedRule.global_(Config.fixed_window(3, 60))],
        capacity=100,
    )
    port = serve(policy, calls, clock=clock, rule_names=["client", "all"])
    advertised = '"client";q=1;w=1, "all";q=3;w=60'
    steps = [
        # (source, time, status, RateLimit, Retry-After)
        ("127.0.0.1", 0, 200, '"client";r=0;t=1', None),
        # The same client again: its own rule denies for 1 s; the global unit given back.
        ("127.0.0.1", 0, 429, '"client";r=0;t=1', "1"),
        ("127.0.0.2", 0, 200, '"client";r=0;t=1', None),
        # The third admission leaves the global rule 0 until 1:00.
        ("127.0.0.3", 0, 200, '"all";r=0;t=60', None),
        ("127.0.0.4", SECOND, 429, '"all";r=0;t=59', "59"),
    ]
    for index, (source, now, status, ratelimit, retry) in enumerate(steps):
        clock.now = now
        answer = get(port, f"/{index}", source=source)
        assert answer.status == status, index
        assert answer.headers["RateLimit-Policy"] == advertised
        assert answer.headers["RateLimit"] == ratelimit, index
        assert answer.headers["Retry-After"] == retry, index
    assert calls == ["/0", "/2", "/3"]


def test_middleware_takes_a_key_function() -> None:
    policy = site()
    app = WSGIRateLimit(hello_wsgi([]), policy, key=lambda environ: "k")
    assert app is not None
    with pytest.raises(ValueError, match="max_n 1"):
        WSGIRateLimit(hello_wsgi([]), policy, cost=2)


def test_docstring_runs() -> None:
    assert doctest.testmod(_keyed_policy, raise_on_error=True).attempted > 0
