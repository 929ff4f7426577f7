"""Shadow rules of Policy and KeyedPolicy (docs/policies.md#shadow-rules): the enforced
rules decide, each shadow rule is acquired alone after an admission and only peeked after
a denial, and its would-be denials show as ``shadow_denied_by``. Expected values are worked
out from GCRA (L a second: L tokens, one back every 1/L s), as in tests/c/test_policy.c."""

from __future__ import annotations

from pathlib import Path

import pytest

import librate
from helpers import MS, SECOND
from librate import Config, KeyedRule


def test_shadow_rule_reports_then_enforces() -> None:
    # 2 a second enforced, 1 a second in shadow.
    policy = librate.Policy([Config.gcra(2, 1), Config.gcra(1, 1)], shadow=[1])
    assert policy.shadow == (1,)
    first = policy.acquire(now_ns=0)
    assert first.decision.allowed and first.shadow_denied_by is None
    assert first.shadow == (1,)
    # Combined over the enforced rule alone: 1 of its 2 left.
    assert (first.decision.limit, first.decision.remaining) == (2, 1)
    assert first.rules[1].remaining == 0
    # The second: admitted; the shadow rule would have denied it until 1 s.
    second = policy.acquire(now_ns=0)
    assert second.decision.allowed and second.denied_by is None
    assert second.shadow_denied_by == 1
    assert second.rules[1].retry_after_ns == SECOND
    # The third: the enforced rule denies until 0.5 s; the shadow rule is only peeked.
    third = policy.acquire(now_ns=0)
    assert (third.denied_by, third.shadow_denied_by) == (0, 1)
    assert third.decision.retry_after_ns == 500 * MS
    # Enforced at 1 s: the shadow rule took its one token at 0 only.
    policy.set_shadow([])
    assert policy.shadow == ()
    assert policy.acquire(now_ns=SECOND).decision.allowed
    denied = policy.acquire(now_ns=SECOND)
    assert (denied.denied_by, denied.shadow_denied_by, denied.shadow) == (1, None, ())


def test_enforced_denial_takes_nothing_from_shadow_rules() -> None:
    policy = librate.Policy([Config.gcra(1, 1), Config.gcra(5, 1)], shadow=[1])
    assert policy.acquire(now_ns=0).rules[1].remaining == 4
    for _ in range(3):
        denied = policy.acquire(now_ns=0)
        assert denied.denied_by == 0 and denied.shadow_denied_by is None
        assert denied.rules[1].remaining == 4


def test_all_shadow_admits_everything() -> None:
    policy = librate.Policy([Config.gcra(1, 1)], shadow=[0])
    policy.acquire(now_ns=0)
    d = policy.acquire(now_ns=0)
    assert d.decision.allowed and d.shadow_denied_by == 0
    assert (d.decision.limit, d.decision.remaining) == (2**64 - 1, 2**64 - 1)
    assert (d.decision.retry_after_ns, d.decision.reset_after_ns) == (0, 0)


def test_bad_shadow_rules() -> None:
    policy = librate.Policy([Config.gcra(1, 1), Config.gcra(1, 1)], shadow=[0])
    with pytest.raises(librate.InvalidConfig) as refused:
        policy.set_shadow([2])
    assert str(refused.value) == (
        "shadow rules [2] for 2 rules: a shadow mask names only rules the policy holds"
    )
    assert isinstance(refused.value, ValueError)
    with pytest.raises(ValueError):
        policy.set_shadow([-1])
    with pytest.raises(TypeError):
        policy.set_shadow(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        policy.set_shadow(["1"])  # type: ignore[list-item]
    assert policy.shadow == (0,)
    with pytest.raises(ValueError):
        librate.Policy([Config.gcra(1, 1)], shadow=[1])
    policy.close()
    with pytest.raises(librate.ClosedError):
        policy.set_shadow([1])


def test_keyed_shadow_rule() -> None:
    # Everybody 10 a second; per key 1 a second, in shadow.
    rules = [KeyedRule.global_(Config.gcra(10, 1)), KeyedRule.per_key(Config.gcra(1, 1))]
    policy = librate.KeyedPolicy(rules, capacity=16, shadow=[1])
    assert policy.acquire("alice", now_ns=0).shadow_denied_by is None
    second = policy.acquire("alice", now_ns=0)
    assert second.decision.allowed and second.shadow_denied_by == 1
    assert (second.decision.limit, second.decision.remaining) == (10, 8)
    assert policy.acquire("bob", now_ns=0).shadow_denied_by is None
    with pytest.raises(librate.InvalidConfig):
        policy.set_shadow([0, 2])
    policy.set_shadow([])
    assert policy.acquire("alice", now_ns=0).denied_by == 1


def test_shared_file_handles_apply_their_own_shadow_rules(tmp_path: Path) -> None:
    path = tmp_path / "policy"
    # Fixed windows of an hour: 2 and 1, shared by every handle of the file.
    rules = [
        KeyedRule.global_(Config.fixed_window(2, 3600)),
        KeyedRule.global_(Config.fixed_window(1, 3600)),
    ]
    shadowing = librate.KeyedPolicy.open(path, rules, capacity=4, shadow=[1])
    enforcing = librate.KeyedPolicy.open(path, rules, capacity=4)
    assert (shadowing.shadow, enforcing.shadow) == ((1,), ())
    now = 10 * SECOND
    assert shadowing.acquire("k", now_ns=now).decision.allowed
    assert enforcing.acquire("k", now_ns=now).denied_by == 1
    second = shadowing.acquire("k", now_ns=now)
    assert second.decision.allowed and second.shadow_denied_by == 1
    assert enforcing.acquire("k", now_ns=now).denied_by == 0
