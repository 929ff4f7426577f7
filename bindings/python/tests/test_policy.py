"""librate.Policy: several rules decided all or nothing, over rate_policy_*. Expected
values are worked out in the comments from docs/decision.md, as in tests/c/test_policy.c:
GCRA with limit L per period P, burst B has T = P / L; a fixed window of L per P counts
units in [kP, (k+1)P)."""

from __future__ import annotations

import doctest
import gc
import pickle
import threading
from typing import Any

import pytest

import librate
from helpers import MS, SECOND, THREADS, count_frees
from librate import _ffi, _policy

MINUTE = 60 * SECOND


def two_rules() -> librate.Policy:
    """2 a second (GCRA, burst 2) and 3 a minute (fixed window), as in test_policy.c."""
    return librate.Policy([librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)])


def test_all_or_nothing() -> None:
    policy = two_rules()
    # At 0 the first unit leaves the GCRA rule 1 of 2 (TAT 0.5 s), the window 2 of 3.
    first = policy.acquire(now_ns=0)
    assert first == librate.PolicyDecision(
        librate.Decision(True, 2, 1, 0, MINUTE),
        None,
        (librate.Decision(True, 2, 1, 0, 500 * MS), librate.Decision(True, 3, 2, 0, MINUTE)),
    )
    assert policy.acquire(now_ns=0).decision.allowed
    # The GCRA rule is empty until 0.5 s and denies; the window gives its unit back.
    denied = policy.acquire(now_ns=0)
    assert denied == librate.PolicyDecision(
        librate.Decision(False, 2, 0, 500 * MS, MINUTE),
        0,
        (
            librate.Decision(False, 2, 0, 500 * MS, SECOND),
            librate.Decision(True, 3, 1, 0, MINUTE),
        ),
    )
    # At 1 s the third unit fits both; at 2 s the window denies until 1:00.
    assert policy.acquire(now_ns=SECOND).decision.allowed
    denied = policy.acquire(now_ns=2 * SECOND)
    assert denied.denied_by == 1
    assert denied.rules[0].allowed and not denied.rules[1].allowed
    assert denied.decision.retry_after_ns == 58 * SECOND
    assert denied.decision.retry_after == 58.0
    # A query: admitted, nothing taken. GCRA is full again (TAT 1.5 s), the window empty.
    query = policy.acquire(0, now_ns=2 * SECOND)
    assert query.decision.allowed and query.denied_by is None
    assert [rule.remaining for rule in query.rules] == [2, 0]
    assert policy.acquire(0, now_ns=2 * SECOND) == query


def test_try_acquire_and_the_real_clock() -> None:
    # 1 an hour and 5 a day: one unit now, then the hourly rule denies.
    policy = librate.Policy([librate.Config.gcra(1, 3600), librate.Config.sliding_log(5, 86400)])
    assert policy.try_acquire()
    assert not policy.try_acquire()
    denied = policy.acquire()
    assert denied.denied_by == 0
    assert 3590 * SECOND < denied.decision.retry_after_ns <= 3600 * SECOND
    assert denied.rules[1].remaining == 4


def test_properties_and_repr() -> None:
    rules = (librate.Config.gcra(10, 1, burst=4), librate.Config.sliding_window(7, 60))
    policy = librate.Policy(list(rules))
    assert policy.rules == rules
    assert policy.max_n == 4  # the least of burst 4 and limit 7
    assert repr(policy) == (
        "<Policy Config(algorithm='gcra', limit=10, period_ns=1000000000, burst=4), "
        "Config(algorithm='sliding_window', limit=7, period_ns=60000000000, burst=None)>"
    )
    policy.close()
    assert repr(policy).startswith("<Policy closed Config(")


def test_config_fields_are_checked() -> None:
    assert librate.Config("gcra", 5, 1500 * MS, 2) == librate.Config.gcra(5, 1.5, burst=2)
    assert librate.Config.sliding_log(3, 2).period_ns == 2 * SECOND
    with pytest.raises(librate.InvalidConfig, match="^limit 0: must be at least 1$"):
        librate.Config("gcra", 0, SECOND)
    with pytest.raises(librate.InvalidConfig, match="^period_ns 0: must be at least 1$"):
        librate.Config("fixed_window", 1, 0)
    with pytest.raises(librate.InvalidConfig, match="^limit -1: must be at least 1$"):
        librate.Config("gcra", -1, SECOND)
    with pytest.raises(librate.InvalidConfig, match="applies to gcra only"):
        librate.Config("sliding_log", 1, SECOND, 2)
    with pytest.raises(librate.InvalidConfig, match="must be one of"):
        librate.Config("token_bucket", 1, SECOND)
    with pytest.raises(TypeError, match="limit must be an int, not float"):
        librate.Config("gcra", 1.5, SECOND)  # type: ignore[arg-type]
    with pytest.raises(librate.InvalidConfig, match="period 0 s"):
        librate.Config.fixed_window(1, 0)


@pytest.mark.parametrize(
    ("rules", "error", "message"),
    [
        ([], librate.InvalidConfig, "^a policy holds 1 to 8 rules, not 0$"),
        (
            [librate.Config.gcra(1, 1)] * 9,
            librate.InvalidConfig,
            "^a policy holds 1 to 8 rules, not 9$",
        ),
        (
            # Valid fields, but more than one unit per ns: the C library's reason.
            [librate.Config.gcra(1, 1), librate.Config("gcra", 10, 9)],
            librate.InvalidConfig,
            r"^rules\[1\]: limit 10: must be at most 9 for GCRA with period_ns 9",
        ),
        (librate.Config.gcra(1, 1), TypeError, "put one rule in a list"),
        (
            [librate.Config.gcra(1, 1), {"limit": 1}],
            TypeError,
            r"^rules\[1\] must be a Config, not dict$",
        ),
        ("gcra", TypeError, r"^rules\[0\] must be a Config, not str$"),
        (None, TypeError, "not iterable"),
    ],
)
def test_bad_rules(rules: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as raised:
        librate.Policy(rules)
    if error is librate.InvalidConfig:
        assert raised.value.code == _ffi.RATE_E_INVALID_CONFIG  # type: ignore[attr-defined]


def test_eight_rules_of_every_algorithm() -> None:
    algorithms = ["gcra", "fixed_window", "sliding_window", "sliding_log"]
    policy = librate.Policy(
        [
            librate.Config(algorithms[i % 4], 3 + i, SECOND)
            for i in range(_ffi.RATE_POLICY_MAX_RULES)
        ]
    )
    decisions = [policy.acquire(now_ns=0) for _ in range(4)]
    # The tightest rule (rule 0, limit 3) admits three, then denies alone.
    assert [d.decision.allowed for d in decisions] == [True, True, True, False]
    assert decisions[3].denied_by == 0
    assert [rule.remaining for rule in decisions[3].rules] == list(range(8))


def test_bad_costs_and_times() -> None:
    policy = two_rules()
    # Rule 0 admits at most 2 at once: 3 can never be admitted, whatever the time.
    for call in (lambda: policy.acquire(3, now_ns=0), lambda: policy.try_acquire(3)):
        with pytest.raises(librate.InsufficientCapacity, match=r"\(n=3, Config\(algorithm='gcra'"):
            call()
    with pytest.raises(ValueError, match="n -1"):
        policy.acquire(-1)
    with pytest.raises(ValueError, match="n 18446744073709551616"):
        policy.try_acquire(2**64)
    with pytest.raises(TypeError):
        policy.acquire(1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        policy.try_acquire(True)
    with pytest.raises(ValueError, match="now_ns -1"):
        policy.acquire(now_ns=-1)
    # Nothing above was taken.
    assert [rule.remaining for rule in policy.acquire(0, now_ns=0).rules] == [2, 3]


def test_costs_per_rule() -> None:
    policy = two_rules()
    # [0, 1]: the minute rule alone takes 1 (2 of 3 left, the window full again at
    # 1:00), and alone makes the combined decision (limit 3); the GCRA rule only
    # reports, full (2, nothing to reset).
    first = policy.acquire_costs([0, 1], now_ns=0)
    assert first.decision == librate.Decision(True, 3, 2, 0, MINUTE)
    assert [(rule.remaining, rule.reset_after_ns) for rule in first.rules] == [(2, 0), (2, MINUTE)]
    # [2, 2] at 0: both rules take 2; the minute rule has 2 left: admitted, 0 left, and
    # the GCRA rule empty until 1 s (TAT 2 x 500 ms).
    both = policy.acquire_costs([2, 2], now_ns=0)
    assert both.decision == librate.Decision(True, 2, 0, 0, MINUTE)
    # [2, 0] at 1 s: the GCRA rule is full again and admits; the spent minute rule is
    # left out of the request, and of the combined decision.
    second = policy.acquire_costs([2, 0], now_ns=SECOND)
    assert (second.decision.allowed, second.decision.remaining) == (True, 0)
    assert second.rules[1] == librate.Decision(True, 3, 0, 0, MINUTE - SECOND)
    # [0, 1] at 1 s: denied by the minute rule until 1:00; the GCRA rule untouched.
    denied = policy.acquire_costs([0, 1], now_ns=SECOND)
    assert (denied.decision.allowed, denied.denied_by) == (False, 1)
    assert denied.decision.retry_after_ns == MINUTE - SECOND
    # All 0 is a query.
    query = policy.acquire_costs([0, 0], now_ns=SECOND)
    assert [rule.remaining for rule in query.rules] == [0, 0]
    with pytest.raises(librate.InvalidConfig):
        policy.acquire_costs([1])
    with pytest.raises(librate.InsufficientCapacity, match=r"n=\[3, 0\]"):
        policy.acquire_costs([3, 0])
    with pytest.raises(ValueError, match="cost -1"):
        policy.acquire_costs([0, -1])
    with pytest.raises(TypeError, match="sequence of ints"):
        policy.acquire_costs(b"\x01\x01")


def test_closed_policy() -> None:
    with two_rules() as policy:
        assert policy.try_acquire()
    assert policy.closed
    for call in (policy.try_acquire, policy.acquire, lambda: policy.acquire(now_ns=0)):
        with pytest.raises(librate.ClosedError, match="^Policy is closed$"):
            call()
    policy.close()  # idempotent
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(policy)


def test_each_handle_freed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    frees = count_frees(monkeypatch, _policy._PolicyHandle)
    closed = two_rules()
    closed_address = closed._handle.value
    closed.close()
    dropped = two_rules()
    dropped_address = dropped._handle.value
    del dropped
    gc.collect()
    with pytest.raises(librate.InvalidConfig):
        librate.Policy([])
    closed.close()
    gc.collect()
    assert frees == [closed_address, dropped_address]


@pytest.mark.parametrize(
    "rules",
    [
        [librate.Config.gcra(50, 1), librate.Config.gcra(20, 1)],
        [librate.Config.gcra(20, 1), librate.Config.gcra(50, 1)],
        [librate.Config.fixed_window(30, 1), librate.Config.sliding_window(25, 1)],
        [librate.Config.sliding_log(40, 1), librate.Config.gcra(35, 1)],
    ],
    ids=["tighter second", "tighter first", "windows", "log and gcra"],
)
def test_threads_at_a_frozen_time_admit_exactly_the_tighter_limit(
    rules: list[librate.Config],
) -> None:
    # Each thread takes one unit at a time until it is denied. A denial only comes from a
    # rule that is full, and each thread gives up at its first, so at most THREADS units
    # fail to be given back: never enough to fill the looser rule first.
    for _ in range(20):
        policy = librate.Policy(rules)
        assert admitted_until_denied(policy) == policy.max_n
        for rule in policy.acquire(0, now_ns=SECOND).rules:
            # Within its limit, and holding at least the admitted units.
            assert rule.limit - rule.remaining >= policy.max_n


def admitted_until_denied(policy: librate.Policy) -> int:
    """Units THREADS threads, started together, admit at 1 s, each until its first
    denial."""
    start = threading.Barrier(THREADS)
    admitted = [0] * THREADS

    def run(index: int) -> None:
        start.wait()
        while policy.acquire(now_ns=SECOND).decision.allowed:
            admitted[index] += 1

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(admitted)


def test_docstring_example() -> None:
    assert doctest.testmod(_policy).failed == 0
