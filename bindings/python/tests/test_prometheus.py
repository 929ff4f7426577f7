"""librate.prometheus: the collector's exposition, line by line, through a registry of
its own; counts worked by hand as in test_counts.py."""

from __future__ import annotations

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client import CollectorRegistry, generate_latest  # noqa: E402

import librate  # noqa: E402
from helpers import SECOND  # noqa: E402
from librate.prometheus import RateLimitCollector  # noqa: E402

HEAD = [
    "# HELP ratelimit_requests_total Requests decided by a rate limiter, by result and by"
    " the rule that denied",
    "# TYPE ratelimit_requests_total counter",
]


def scrape(collector: RateLimitCollector) -> list[str]:
    registry = CollectorRegistry()
    registry.register(collector)
    return generate_latest(registry).decode().splitlines()


def sample(limiter: str, result: str, rule: str, value: int) -> str:
    return (
        f'ratelimit_requests_total{{limiter="{limiter}",result="{result}",rule="{rule}"}} {value}.0'
    )


def test_a_limiter_a_keyed_table_and_a_policy() -> None:
    limiter = librate.Limiter(algorithm="fixed_window", limit=2, period=60)
    table = librate.KeyedLimiter(algorithm="fixed_window", limit=1, period=60, capacity=1)
    policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)])
    collector = RateLimitCollector()
    collector.add("one", limiter)
    collector.add("per_key", table)
    collector.add("site", policy, rule_names=["second", "minute"])
    # Counting is on from add: 2 admitted and 1 denied of 2 a minute.
    for _ in range(3):
        limiter.acquire(now_ns=0)
    # a admitted, a denied, b admitted, c refused: the table's 2 slots hold a and b.
    for key in ["a", "a", "b", "c"]:
        try:
            table.acquire(key, now_ns=0)
        except librate.TableFull:
            pass
    # 3 admitted; the third at 0 denied by "second", the one at 2 s by "minute".
    for at in [0, 0, 0, SECOND, 2 * SECOND]:
        policy.acquire(now_ns=at)
    assert scrape(collector) == [
        *HEAD,
        sample("one", "admitted", "", 2),
        sample("one", "table_full", "", 0),
        sample("one", "denied", "", 1),
        sample("per_key", "admitted", "", 2),
        sample("per_key", "table_full", "", 1),
        sample("per_key", "denied", "", 1),
        sample("site", "admitted", "", 3),
        sample("site", "table_full", "", 0),
        sample("site", "denied", "second", 1),
        sample("site", "denied", "minute", 1),
        sample("site", "shadow_denied", "second", 0),
        sample("site", "shadow_denied", "minute", 0),
    ]


def test_rules_default_to_their_index_and_closed_limiters_go() -> None:
    policy = librate.KeyedPolicy(
        [
            librate.KeyedRule.per_key(librate.Config.fixed_window(1, 60)),
            librate.KeyedRule.global_(librate.Config.fixed_window(10, 60)),
        ],
        capacity=4,
    )
    # A policy of one rule not named is reported as a limiter is.
    single = librate.Policy([librate.Config.gcra(1, 1)])
    limiter = librate.Limiter(limit=1, period=1)
    collector = RateLimitCollector()
    collector.add("keyed_policy", policy)
    collector.add("gone", limiter)
    collector.add("single", single)
    policy.acquire("a", now_ns=0)
    policy.acquire("a", now_ns=0)
    limiter.close()
    assert scrape(collector) == [
        *HEAD,
        sample("keyed_policy", "admitted", "", 1),
        sample("keyed_policy", "table_full", "", 0),
        sample("keyed_policy", "denied", "0", 1),
        sample("keyed_policy", "denied", "1", 0),
        sample("keyed_policy", "shadow_denied", "0", 0),
        sample("keyed_policy", "shadow_denied", "1", 0),
        sample("single", "admitted", "", 0),
        sample("single", "table_full", "", 0),
        sample("single", "denied", "", 0),
    ]
    collector.remove("keyed_policy")
    collector.remove("single")
    assert scrape(collector) == HEAD


def test_add_checks_its_arguments() -> None:
    collector = RateLimitCollector()
    policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.gcra(5, 60)])
    with pytest.raises(ValueError, match="rule_names has 1 names for 2 rules"):
        collector.add("p", policy, rule_names=["second"])
    with pytest.raises(TypeError, match="a limiter has one rule"):
        collector.add("l", librate.Limiter(limit=1, period=1), rule_names=["x"])
    collector.add("p", policy)
    with pytest.raises(ValueError, match="a limiter named 'p' is exported already"):
        collector.add("p", policy)
