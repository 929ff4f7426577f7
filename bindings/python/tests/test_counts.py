"""Counts (docs/metrics.md): off until ``enable_counts()``, then each request counted once,
as admitted, denied (a policy's by the first rule that denied) or refused for a full
table. Values worked by hand from docs/decision.md."""

from __future__ import annotations

import threading

import pytest

import librate
from helpers import SECOND
from librate import Counts, RuleCounts


def test_a_limiter_counts_once_enabled() -> None:
    limiter = librate.Limiter(algorithm="fixed_window", limit=2, period=60)
    limiter.acquire(now_ns=0)
    assert limiter.counts() is None  # off by default: nothing counted
    limiter.enable_counts()
    # 1 of 2 left: one admitted, then two denied; a query (n=0) is not counted.
    assert [limiter.acquire(now_ns=0).allowed for _ in range(3)] == [True, False, False]
    limiter.acquire(0, now_ns=0)
    assert limiter.counts() == Counts(admitted=1, denied=2, table_full=0)
    limiter.enable_counts()  # on stays on, the counts kept
    assert not limiter.acquire(now_ns=0).allowed
    assert limiter.counts() == Counts(1, 3, 0)


def test_a_keyed_limiter_counts_a_full_table() -> None:
    # One live key fills a table of capacity 1 (2 slots hold at most 2 keys, but a third
    # key finds no slot while both are live).
    table = librate.KeyedLimiter(algorithm="fixed_window", limit=1, period=60, capacity=1)
    table.enable_counts()
    outcomes = []
    for key in ["a", "a", "b", "c"]:
        try:
            outcomes.append(table.acquire(key, now_ns=0).allowed)
        except librate.TableFull:
            outcomes.append(None)
    assert outcomes == [True, False, True, None]
    assert table.counts() == Counts(admitted=2, denied=1, table_full=1)


def test_a_policy_counts_the_first_rule_that_denied() -> None:
    # 2 a second and 3 a minute: at 0, two admitted and the third denied by the
    # per-second rule (rule 0); at 1 s one admitted, the minute's third; at 2 s the
    # per-second rule admits again and the minute rule (rule 1) denies.
    policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)])
    policy.enable_counts()
    at = [0, 0, 0, SECOND, 2 * SECOND]
    assert [policy.acquire(now_ns=t).decision.allowed for t in at] == [
        True,
        True,
        False,
        True,
        False,
    ]
    assert policy.counts() == Counts(
        admitted=3, denied=2, table_full=0, rules=(RuleCounts(1, 0), RuleCounts(1, 0))
    )


def test_a_policy_reads_its_shadow_rule_s_counts() -> None:
    # The minute rule in shadow: the third request at 0 is denied by the per-second
    # rule; the one at 2 s is admitted, and the minute rule (its fourth of 3, having taken
    # one unit of each admitted request) would have denied it.
    rules = [librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)]
    policy = librate.Policy(rules, shadow=[1])
    policy.enable_counts()
    for t in [0, 0, 0, SECOND, 2 * SECOND]:
        policy.acquire(now_ns=t)
    assert policy.counts() == Counts(4, 1, 0, (RuleCounts(1, 0), RuleCounts(0, 1)))


def test_a_keyed_policy_counts_per_rule_and_table_full() -> None:
    rules = [
        librate.KeyedRule.per_key(librate.Config.fixed_window(1, 60)),
        librate.KeyedRule.global_(librate.Config.fixed_window(3, 60)),
    ]
    policy = librate.KeyedPolicy(rules, capacity=1)
    policy.enable_counts()
    # a: admitted; a: denied by its own rule; b: admitted (the global rule's second);
    # c: no slot while a and b are live (capacity 1: 2 slots).
    assert policy.acquire("a", now_ns=0).decision.allowed
    assert policy.acquire("a", now_ns=0).denied_by == 0
    assert policy.acquire("b", now_ns=0).decision.allowed
    with pytest.raises(librate.TableFull):
        policy.acquire("c", now_ns=0)
    assert policy.counts() == Counts(2, 1, 1, (RuleCounts(1, 0), RuleCounts(0, 0)))


def test_threads_count_every_request() -> None:
    # 8 threads × 1,000 requests of a limit of 100 a minute at one instant: exactly 100
    # admitted and 7,900 denied, whatever the interleaving.
    limiter = librate.Limiter(algorithm="fixed_window", limit=100, period=60)
    limiter.enable_counts()

    def run() -> None:
        for _ in range(1000):
            limiter.acquire(now_ns=0)

    threads = [threading.Thread(target=run) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert limiter.counts() == Counts(100, 7900, 0)


def test_closed_raises() -> None:
    for made in (
        lambda: librate.Limiter(limit=1, period=1),
        lambda: librate.Policy([librate.Config.gcra(1, 1)]),
    ):
        limiter = made()
        limiter.enable_counts()
        limiter.close()
        with pytest.raises(librate.ClosedError):
            limiter.counts()
        with pytest.raises(librate.ClosedError):
            limiter.enable_counts()
