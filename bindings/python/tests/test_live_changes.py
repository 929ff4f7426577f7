"""Changing rules at run time through the Python API: ``Limiter.set_config``,
``KeyedLimiter.set_config``, ``Policy.set_rules`` and ``KeyedPolicy.set_rules``, in
process and in a file, carrying the state over (expected values worked out by hand)."""

from __future__ import annotations

from pathlib import Path

import pytest

import librate
from librate import Config, Decision

MS = 1_000_000
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


def test_a_shared_table_changes_in_its_file(tmp_path: Path) -> None:
    path = tmp_path / "users"
    users = librate.KeyedLimiter.open(path, capacity=16, limit=10, period=1)
    # 10 a second (T = 100 ms, tau = 1 s): ann takes 8 at 0, TAT 800 ms, 2 tokens.
    assert users.acquire("ann", 8, now_ns=0) == Decision(True, 10, 2, 0, 800 * MS, 0)
    users.set_config(Config.gcra(5, 1), now_ns=0)
    assert users.config == Config.gcra(5, 1)
    # 5 a second (T' = 200 ms, tau' = 1 s): ann keeps her 2 tokens, TAT' = 1 s - 400 ms.
    assert users.acquire("ann", 0, now_ns=0) == Decision(True, 5, 2, 0, 600 * MS, 0)
    # A new key starts with the new burst.
    assert users.acquire("bob", 0, now_ns=0) == Decision(True, 5, 5, 0, 0, 0)
    # The file holds the new rule: an opener of the old one is refused, one of the new
    # one shares ann's state (2 more at 0: TAT 1 s, none left).
    with pytest.raises(librate.Incompatible):
        librate.KeyedLimiter.open(path, capacity=16, limit=10, period=1)
    with librate.KeyedLimiter.open(path, capacity=16, limit=5, period=1) as again:
        assert again.acquire("ann", 2, now_ns=0) == Decision(True, 5, 0, 0, SECOND, 0)
        # A change through either handle is what the other's config reports, and what
        # its repr and errors name (9 is above the new burst of 8).
        again.set_config(Config.gcra(4, 1, burst=8), now_ns=0)
        with pytest.raises(librate.InsufficientCapacity) as refused:
            users.acquire("ann", 9, now_ns=0)
        assert str(refused.value).endswith(f" (n=9, {Config.gcra(4, 1, burst=8)})")
        assert repr(users) == f"<KeyedLimiter {Config.gcra(4, 1, burst=8)}>"
        assert users.config == Config.gcra(4, 1, burst=8)
        users.set_config(Config.gcra(3, 1), now_ns=0)
        assert again.config == Config.gcra(3, 1)
        # A closed handle reports the last rule it knew, not one set since.
        users.close()
        again.set_config(Config.gcra(6, 1), now_ns=0)
        assert users.config == Config.gcra(3, 1)
        assert again.config == Config.gcra(6, 1)


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
    # A policy in a file changes in its file. 4 a second (T = 250 ms): ann takes 3 at 0,
    # 1 token left; the window 3 of 10, 7 left.
    shared = librate.KeyedPolicy.open(tmp_path / "site", upgrade, capacity=16)
    took = shared.acquire("ann", 3, now_ns=0)
    assert (took.rules[0].remaining, took.rules[1].remaining) == (1, 7)
    shared.set_rules(plan, now_ns=0)
    assert shared.rules == tuple(plan)
    # 2 a second: ann keeps her 1 token (TAT' = 1 s - 500 ms); the window its 3 of 100.
    ann = shared.acquire("ann", 0, now_ns=0)
    assert ann.rules[0] == Decision(True, 2, 1, 0, 500 * MS, 0)
    assert ann.rules[1].remaining == 97
    with pytest.raises(librate.Incompatible):
        librate.KeyedPolicy.open(tmp_path / "site", upgrade, capacity=16)
    with librate.KeyedPolicy.open(tmp_path / "site", plan, capacity=16) as again:
        assert again.acquire("ann", 0, now_ns=0).rules[1].remaining == 97
        # A change through either handle is what the other's rules report, and what its
        # repr names.
        again.set_rules(upgrade, now_ns=0)
        assert repr(shared) == f"<KeyedPolicy {upgrade[0]}, {upgrade[1]}>"
        assert shared.rules == tuple(upgrade)
        third = [
            KeyedRule.per_key(Config.gcra(3, 1)),
            KeyedRule.global_(Config.fixed_window(50, 60)),
        ]
        shared.set_rules(third, now_ns=0)
        assert again.rules == tuple(third)
        # A closed handle reports the last rules it knew, not those set since.
        shared.close()
        again.set_rules(plan, now_ns=0)
        assert shared.rules == tuple(third)
        assert again.rules == tuple(plan)
    site.close()
    with pytest.raises(librate.ClosedError):
        site.set_rules(upgrade)
