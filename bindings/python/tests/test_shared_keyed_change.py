"""A shared keyed table's and keyed policy's rules changed in their file (docs/shared.md,
changing the rule): ``KeyedLimiter.set_config`` and ``KeyedPolicy.set_rules`` in one
process are every process's rules at its next decision, each key carried over as in
process; ``open(..., replace=True)`` gives the file the opener's rules; a refused opener
is told the rule the file holds. Real files, real processes (fork).

GCRA with limit L, period P, burst B (None: L): T = P / L, tau = B*T; after a decision,
debt = max(0, TAT - t), remaining = floor((tau - debt) / T), reset_after = debt. A change
at t keeps each key's tokens, (tau - debt) / T, capped at the new burst:
TAT' = t + tau' - min(tau', floor(tokens * T')); a key whose tokens fill the new bucket is
fresh and starts anew, as a new key does (docs/live-changes.md). A fixed window keeps its
count in the window of the new period holding t.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import librate
from helpers import MS, SECOND
from librate import FOREVER, Config, Decision, KeyedRule
from shared_tables import HOUR, in_child

#: What describe_file says of a keyed table of capacity 100 once changed to 5 a second.
FIVE_A_SECOND = (
    ": a librate keyed table of capacity 100 holding GCRA, limit 5, period_ns 1000000000, "
    "burst 5 (its rule changed 1 time since it was made)"
)


def change_table_to_five(path: Path) -> None:
    """The child of the set_config test: attaches with the file's rule, 10 a second, and
    changes it to 5 a second at 0. ann's 6 tokens are capped at 5: a full bucket."""
    with librate.KeyedLimiter.open(path, limit=10, period=1, capacity=100) as there:
        there.set_config(Config.gcra(5, 1), now_ns=0)
        assert there.config == Config.gcra(5, 1)
        assert there.acquire("ann", 0, now_ns=0) == Decision(True, 5, 5, 0, 0, 0)


def test_a_change_in_one_process_is_seen_by_every_process(tmp_path: Path) -> None:
    path = tmp_path / "users"
    here = librate.KeyedLimiter.open(path, limit=10, period=1, capacity=100)
    # 10 a second, T = 100 ms, tau = 1 s: ann takes 4 at 0 (TAT 400 ms, 6 tokens), bob 9
    # (TAT 900 ms, 1 token).
    assert here.acquire("ann", 4, now_ns=0) == Decision(True, 10, 6, 0, 400 * MS, 0)
    assert here.acquire("bob", 9, now_ns=0) == Decision(True, 10, 1, 0, 900 * MS, 0)
    in_child(change_table_to_five, path)
    # This process's handle reports the file's rule in force, as the child gave it.
    assert here.config == Config.gcra(5, 1)
    # Here at the next decision: 5 a second, T' = 200 ms, tau' = 1 s. ann's min(6, 5) = 5
    # tokens are a full bucket; bob keeps his 1 token, TAT' = 1 s - 200 ms; a new key
    # starts with the new burst.
    assert here.acquire("ann", 0, now_ns=0) == Decision(True, 5, 5, 0, 0, 0)
    assert here.acquire("bob", 0, now_ns=0) == Decision(True, 5, 1, 0, 800 * MS, 0)
    assert here.acquire("cid", 0, now_ns=0) == Decision(True, 5, 5, 0, 0, 0)
    # bob takes his token (TAT 1 s, none left); his next is due in TAT + T' - tau' - t.
    assert here.acquire("bob", 1, now_ns=0) == Decision(True, 5, 0, 0, SECOND, 0)
    assert here.acquire("bob", 1, now_ns=0) == Decision(False, 5, 0, 200 * MS, SECOND, 0)
    here.close()
    # Closed, the handle reports the last rule it knew.
    assert here.config == Config.gcra(5, 1)
    # The file holds the new rule: the old one is refused, and told what the file holds.
    with pytest.raises(librate.Incompatible) as refused:
        librate.KeyedLimiter.open(path, limit=10, period=1, capacity=100)
    assert str(refused.value) == f"{path}{FIVE_A_SECOND}"
    assert refused.value.code == -8
    assert librate.describe_file(path) == f"{path}{FIVE_A_SECOND}"
    # A later opener of the new rule decides on the state the processes left: ann's 5.
    with librate.KeyedLimiter.open(path, limit=5, period=1, capacity=100) as again:
        assert again.acquire("ann", 5, now_ns=0) == Decision(True, 5, 0, 0, SECOND, 0)
        assert again.acquire("bob", 1, now_ns=0).allowed is False


def change_window(path: Path) -> None:
    """The child of the window test: 10 a second becomes 8 per 2 s at 0.5 s."""
    with librate.KeyedLimiter.open(
        path, algorithm="fixed_window", limit=10, period=1, capacity=10
    ) as there:
        there.set_config(Config.fixed_window(8, 2), now_ns=SECOND // 2)


def test_a_window_change_carries_each_count(tmp_path: Path) -> None:
    path = tmp_path / "windows"
    here = librate.KeyedLimiter.open(
        path, algorithm="fixed_window", limit=10, period=1, capacity=10
    )
    # Counted in [0, 1 s): ann 7, bob 2.
    assert here.acquire("ann", 7, now_ns=SECOND // 2).remaining == 3
    assert here.acquire("bob", 2, now_ns=SECOND // 2).remaining == 8
    in_child(change_window, path)
    # The counts move to the new window holding 0.5 s, [0, 2 s), capped at 8: at 1.5 s
    # ann has 8 - 7 = 1 left, bob 8 - 2 = 6, a key that counted nothing 8; each window
    # ends at 2 s.
    at = SECOND + SECOND // 2
    assert here.acquire("ann", 0, now_ns=at) == Decision(True, 8, 1, 0, SECOND // 2, 0)
    assert here.acquire("bob", 0, now_ns=at).remaining == 6
    assert here.acquire("cid", 0, now_ns=at).remaining == 8
    assert not here.acquire("ann", 2, now_ns=at).allowed
    here.close()


def restart_table_with_twenty(path: Path) -> None:
    """The child of the replace test, a worker restarted with a new limit, 20 an hour:
    refused without ``replace`` (told the file's rule), given the file with it. ann's 6
    tokens fit the new burst of 20; bob's 0 stay 0 (T' = 3 min: none refills while the
    test runs); a new key starts with 20."""
    with pytest.raises(librate.Incompatible) as refused:
        librate.KeyedLimiter.open(path, limit=20, period=HOUR, capacity=10)
    assert str(refused.value) == (
        f"{path}: a librate keyed table of capacity 10 holding GCRA, limit 10, period_ns "
        "3600000000000, burst 10"
    )
    with librate.KeyedLimiter.open(
        path, limit=20, period=HOUR, capacity=10, replace=True
    ) as worker:
        assert worker.config == Config.gcra(20, HOUR)
        ann = worker.acquire("ann", 0)
        assert (ann.limit, ann.remaining) == (20, 6)
        assert worker.acquire("bob", 0).remaining == 0
        assert worker.acquire("cid", 0).remaining == 20


def test_an_opener_replaces_the_tables_rule(tmp_path: Path) -> None:
    # On the real clock, since an opener's change is made now: 10 an hour (T = 6 min),
    # in which nothing refills while the test runs. ann takes 4 (6 tokens), bob 10 (0).
    path = tmp_path / "users"
    old = librate.KeyedLimiter.open(path, limit=10, period=HOUR, capacity=10, replace=True)
    took = old.acquire("ann", 4)
    assert (took.allowed, took.limit, took.remaining) == (True, 10, 6)
    assert old.acquire("bob", 10).remaining == 0
    in_child(restart_table_with_twenty, path)
    # The process still on the old rule reports the opener's, and follows it at its next
    # decision.
    assert old.config == Config.gcra(20, HOUR)
    ann = old.acquire("ann", 0)
    assert (ann.limit, ann.remaining) == (20, 6)
    assert old.acquire("ann", 6).remaining == 0
    assert not old.try_acquire("ann")
    assert not old.try_acquire("bob")
    held = (
        f"{path}: a librate keyed table of capacity 10 holding GCRA, limit 20, period_ns "
        "3600000000000, burst 20 (its rule changed 1 time since it was made)"
    )
    assert librate.describe_file(path) == held
    # The rule the file holds changes nothing (burst 20 is what None means).
    with librate.KeyedLimiter.open(
        path, limit=20, period=HOUR, burst=20, capacity=10, replace=True
    ) as same:
        assert not same.try_acquire("ann")
    assert librate.describe_file(path) == held
    assert old.config == Config.gcra(20, HOUR)
    old.close()


def test_refused_replacements_change_nothing(tmp_path: Path) -> None:
    path = tmp_path / "users"
    with librate.KeyedLimiter.open(path, limit=10, period=HOUR, capacity=10) as table:
        assert table.acquire("ann", 4).remaining == 6
    before = path.read_bytes()
    # Another algorithm cannot carry the state over; another capacity is another table.
    with pytest.raises(librate.InvalidConfig):
        librate.KeyedLimiter.open(
            path, algorithm="fixed_window", limit=10, period=HOUR, capacity=10, replace=True
        )
    with pytest.raises(librate.Incompatible) as refused:
        librate.KeyedLimiter.open(path, limit=20, period=HOUR, capacity=11, replace=True)
    assert str(refused.value) == (
        f"{path}: a librate keyed table of capacity 10 holding GCRA, limit 10, period_ns "
        "3600000000000, burst 10"
    )
    with pytest.raises(TypeError):
        librate.KeyedLimiter.open(
            path,
            limit=20,
            period=HOUR,
            capacity=10,
            replace=1,  # type: ignore[arg-type]
        )
    assert path.read_bytes() == before
    # replace=True makes a file that does not exist, as open does.
    new = tmp_path / "new"
    with librate.KeyedLimiter.open(new, limit=10, period=1, capacity=64, replace=True) as made:
        # 3 at 1 s: TAT 1.3 s, remaining floor(700 ms / 100 ms) = 7, reset 300 ms.
        assert made.acquire("ann", 3, now_ns=SECOND) == Decision(True, 10, 7, 0, 300 * MS, 0)
    assert librate.describe_file(new) == (
        f"{new}: a librate keyed table of capacity 64 holding GCRA, limit 10, period_ns "
        "1000000000, burst 10"
    )
    with pytest.raises(FileNotFoundError):
        librate.KeyedLimiter.open(
            tmp_path / "none" / "users", limit=10, period=1, capacity=64, replace=True
        )


#: The keyed policy of the set_rules test, before and after: per customer 10 then 5 a
#: second (GCRA), everybody 100 then 1,000 a minute (fixed window).
PLAN = [KeyedRule.per_key(Config.gcra(10, 1)), KeyedRule.global_(Config.fixed_window(100, 60))]
UPGRADE = [
    KeyedRule.per_key(Config.gcra(5, 1)),
    KeyedRule.global_(Config.fixed_window(1000, 60)),
]


def change_policy(path: Path) -> None:
    """The child of the set_rules test: attaches with the file's rules and sets UPGRADE
    at 0."""
    with librate.KeyedPolicy.open(path, PLAN, capacity=10) as there:
        there.set_rules(UPGRADE, now_ns=0)
        assert there.rules == tuple(UPGRADE)


def test_set_rules_on_a_file_policy_carries_each_rule(tmp_path: Path) -> None:
    path = tmp_path / "site"
    here = librate.KeyedPolicy.open(path, PLAN, capacity=10)
    # ann takes 4 at 0 (6 tokens), bob 9 (1 token); the window counts 13 of 100.
    ann = here.acquire("ann", 4, now_ns=0)
    assert (ann.rules[0].remaining, ann.rules[1].remaining) == (6, 96)
    bob = here.acquire("bob", 9, now_ns=0)
    assert (bob.rules[0].remaining, bob.rules[1].remaining) == (1, 87)
    in_child(change_policy, path)
    # This process's handle reports the file's rules in force, as the child gave them.
    assert here.rules == tuple(UPGRADE)
    # The per-key rule carries each key as a table does (ann min(6, 5) = 5, a full
    # bucket; bob 1 token, TAT' = 1 s - 200 ms; cid new), the global rule its count:
    # 13 of 1,000 in [0, 60 s), which ends in 60 s.
    ann = here.acquire("ann", 0, now_ns=0)
    assert ann.rules == (
        Decision(True, 5, 5, 0, 0, 0),
        Decision(True, 1000, 987, 0, 60 * SECOND, 0),
    )
    assert here.acquire("bob", 0, now_ns=0).rules[0] == Decision(True, 5, 1, 0, 800 * MS, 0)
    assert here.acquire("cid", 0, now_ns=0).rules[0] == Decision(True, 5, 5, 0, 0, 0)
    # bob's last token and 1 of the window's units; then the per-key rule denies him,
    # and the window gives its unit back.
    assert here.acquire("bob", 1, now_ns=0).decision.allowed
    denied = here.acquire("bob", 1, now_ns=0)
    assert (denied.decision.allowed, denied.denied_by) == (False, 0)
    assert denied.rules[1].remaining == 986
    here.close()
    # Closed, the handle reports the last rules it knew.
    assert here.rules == tuple(UPGRADE)
    # The file holds the new rules: the old ones are refused, the new ones open.
    with pytest.raises(librate.Incompatible) as refused:
        librate.KeyedPolicy.open(path, PLAN, capacity=10)
    assert str(refused.value).startswith(f"{path}: a librate keyed policy of capacity 10")
    with librate.KeyedPolicy.open(path, UPGRADE, capacity=10) as again:
        assert again.acquire("ann", 0, now_ns=0).rules[1].remaining == 986


def restart_policy(path: Path, rules: list[KeyedRule]) -> None:
    """The child of the policy's replace test: a worker restarted with ``rules``, refused
    without ``replace``, given the file with it."""
    with pytest.raises(librate.Incompatible):
        librate.KeyedPolicy.open(path, rules, capacity=10)
    with librate.KeyedPolicy.open(path, rules, capacity=10, replace=True) as worker:
        assert worker.rules == tuple(rules)


def test_an_opener_replaces_the_policys_rules(tmp_path: Path) -> None:
    # On the real clock, since an opener's change is made now: per customer 10 an hour
    # (GCRA, T = 6 min, nothing refills while the test runs), everybody 100 (a window that
    # never ends). ann takes 4: 6 tokens, 96 units.
    path = tmp_path / "site"
    old = [
        KeyedRule.per_key(Config.gcra(10, HOUR)),
        KeyedRule.global_(Config.fixed_window(100, FOREVER)),
    ]
    new = [
        KeyedRule.per_key(Config.gcra(20, HOUR)),
        KeyedRule.global_(Config.fixed_window(10, FOREVER)),
    ]
    here = librate.KeyedPolicy.open(path, old, capacity=10, replace=True)
    ann = here.acquire("ann", 4)
    assert (ann.rules[0].remaining, ann.rules[1].remaining) == (6, 96)
    in_child(restart_policy, path, new)
    # The handle still on the old rules reports the opener's.
    assert here.rules == tuple(new)
    # ann keeps her 6 tokens under a burst of 20; the window's 4 of now 10 leave 6.
    ann = here.acquire("ann", 0)
    assert [(rule.limit, rule.remaining) for rule in ann.rules] == [(20, 6), (10, 6)]
    assert here.acquire("bob", 0).rules[0].remaining == 20
    # Another scope in a rule's place is refused even when replacing, and another
    # algorithm cannot carry its state over: the file keeps the rules it holds.
    with pytest.raises(librate.Incompatible):
        librate.KeyedPolicy.open(path, [new[1], new[0]], capacity=10, replace=True)
    other = [KeyedRule.per_key(Config.fixed_window(20, HOUR)), new[1]]
    with pytest.raises(librate.InvalidConfig):
        librate.KeyedPolicy.open(path, other, capacity=10, replace=True)
    with pytest.raises(TypeError):
        librate.KeyedPolicy.open(path, new, capacity=10, replace="yes")  # type: ignore[arg-type]
    assert here.rules == tuple(new)
    with librate.KeyedPolicy.open(path, new, capacity=10) as again:
        assert again.acquire("ann", 6).decision.allowed
        assert not again.try_acquire("ann")
    here.close()
