"""Changing rules at run time through the Python API: ``Limiter.set_config``,
``KeyedLimiter.set_config`` and ``Policy.set_rules``, carrying the state over (expected
values worked out by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

import librate
from librate import Config, Decision

SECOND = 1_000_000_000


def test_gcra_keeps_its_tokens() -> None:
    # 10 a second (T = 100 ms): 6 taken, 4 tokens. 1 a second, burst 2: capped at 2.
    limiter = librate.Limiter(limit=10, period=1)
    assert limiter.acquire(6, now_ns=0).allowed
    limiter.set_config(Config.gcra(1, 1, burst=2), now_ns=0)
    assert limiter.config == Config.gcra(1, 1, burst=2)
    assert limiter.acquire(2, now_ns=0) == Decision(True, 2, 0, 0, 2 * SECOND, 0)
    assert limiter.acquire(1, now_ns=0).retry_after_ns == SECOND


def test_refused_changes_change_nothing() -> None:
    limiter = librate.Limiter(limit=2, period=1)
    with pytest.raises(librate.InvalidConfig):
        limiter.set_config(Config.fixed_window(2, 1), now_ns=0)
    with pytest.raises(TypeError):
        limiter.set_config("gcra")  # type: ignore[arg-type]
    assert limiter.config == Config.gcra(2, 1)
    limiter.close()
    with pytest.raises(librate.ClosedError):
        limiter.set_config(Config.gcra(3, 1))


def test_a_table_keeps_each_keys_tokens() -> None:
    # 10 a second (T = 100 ms): ann takes 6 (4 tokens), bob 1 (9). 1 a second, burst 2:
    # both capped at 2 (TAT 0).
    users = librate.KeyedLimiter(capacity=100, limit=10, period=1)
    assert users.acquire("ann", 6, now_ns=0).allowed
    assert users.acquire(b"bob", 1, now_ns=0).allowed
    users.set_config(Config.gcra(1, 1, burst=2), now_ns=0)
    assert users.config == Config.gcra(1, 1, burst=2)
    assert users.acquire("ann", 2, now_ns=0) == Decision(True, 2, 0, 0, 2 * SECOND, 0)
    assert users.acquire("ann", 1, now_ns=0).retry_after_ns == SECOND
    assert users.acquire("bob", 0, now_ns=0).remaining == 2
    with pytest.raises(librate.InvalidConfig):
        users.set_config(Config.sliding_log(2, 1))
    with pytest.raises(TypeError):
        users.set_config("gcra")  # type: ignore[arg-type]
    assert users.config == Config.gcra(1, 1, burst=2)
    users.set_config(Config.gcra(1, 1, burst=2))  # now: ann's state carried again
    users.close()
    with pytest.raises(librate.ClosedError):
        users.set_config(Config.gcra(3, 1))


def test_a_shared_table_refuses_a_change(tmp_path: Path) -> None:
    users = librate.KeyedLimiter.open(tmp_path / "users", capacity=16, limit=10, period=1)
    with pytest.raises(librate.Unsupported):
        users.set_config(Config.gcra(1, 1), now_ns=0)
    assert users.config == Config.gcra(10, 1)


def test_a_policy_changes_plan() -> None:
    policy = librate.Policy([Config.gcra(2, 1), Config.fixed_window(3, 60)])
    assert policy.acquire(2, now_ns=0).decision.allowed
    upgrade = [Config.gcra(4, 1), Config.fixed_window(10, 60)]
    policy.set_rules(upgrade, now_ns=0)
    assert policy.rules == tuple(upgrade)
    # The bucket's 0 tokens stay 0 (now 250 ms each); the window keeps its 2.
    assert policy.acquire(0, now_ns=0).rules[1].remaining == 8
    assert policy.acquire(1, now_ns=250_000_000).decision.allowed
    with pytest.raises(librate.InvalidConfig):
        policy.set_rules([Config.gcra(4, 1)])
    assert policy.rules == tuple(upgrade)


def test_a_keyed_policy_changes_plan(tmp_path: Path) -> None:
    from librate import KeyedRule

    # Per customer 2 a second (GCRA), everybody 100 a minute (fixed window).
    plan = [KeyedRule.per_key(Config.gcra(2, 1)), KeyedRule.global_(Config.fixed_window(100, 60))]
    site = librate.KeyedPolicy(plan, capacity=100)
    assert site.acquire("ann", 2, now_ns=0).decision.allowed
    assert site.acquire("bob", 1, now_ns=0).decision.allowed
    window = KeyedRule.global_(Config.fixed_window(10, 60))
    upgrade = [KeyedRule.per_key(Config.gcra(4, 1)), window]
    site.set_rules(upgrade, now_ns=0)
    assert site.rules == tuple(upgrade)
    # ann's 0 tokens stay 0 (now 250 ms each), bob keeps his 1; the window its 3 of 10.
    ann = site.acquire("ann", 0, now_ns=0)
    assert (ann.rules[0].remaining, ann.rules[1].remaining) == (0, 7)
    assert site.acquire("bob", 0, now_ns=0).rules[0].remaining == 1
    assert site.acquire("ann", 1, now_ns=250_000_000).decision.allowed
    # Refused, changing nothing: a per-key rule made global; not KeyedRules.
    swapped = [KeyedRule.global_(Config.gcra(4, 1)), window]
    with pytest.raises(librate.InvalidConfig):
        site.set_rules(swapped, now_ns=0)
    with pytest.raises(TypeError):
        site.set_rules([Config.gcra(4, 1)])  # type: ignore[list-item]
    assert site.rules == tuple(upgrade)
    shared = librate.KeyedPolicy.open(tmp_path / "site", upgrade, capacity=16)
    with pytest.raises(librate.Unsupported):
        shared.set_rules(upgrade, now_ns=0)
    site.close()
    with pytest.raises(librate.ClosedError):
        site.set_rules(upgrade)
