"""Prometheus exposition of librate's counts (docs/metrics.md): a ``prometheus_client``
collector that reads each limiter's counts when Prometheus scrapes (needs
prometheus_client: ``pip install 'librate[prometheus]'``).

::

    from prometheus_client import REGISTRY
    from librate.prometheus import RateLimitCollector

    collector = RateLimitCollector()
    collector.add("api", per_ip)                                   # a KeyedLimiter
    collector.add("site", policy, rule_names=["second", "minute"])  # a Policy
    REGISTRY.register(collector)

Every limiter is one family, ``ratelimit_requests_total`` (OpenTelemetry's
``ratelimit.requests``, in Prometheus's words), a counter labelled ``limiter`` (the name
given to ``add``), ``result`` and ``rule``:

- ``result="admitted"``, ``rule=""``: the requests admitted;
- ``result="table_full"``, ``rule=""``: the requests for a new key refused for a full
  table (a ``KeyedLimiter``'s or ``KeyedPolicy``'s; 0 for the others);
- ``result="denied"``: a limiter's denials with ``rule=""``; a policy's per rule, each
  labelled with the rule's name (or its index, "0", "1"…), counting the requests that
  rule denied first, so the rules' series add up to the policy's denials;
- ``result="shadow_denied"``, a policy's, per rule: a shadow rule's would-be denials.

A policy of one rule whose rule is not named is reported as a limiter is, as Rust's
``librate::metrics::Reporter`` reports it. Labels never hold a key: a limiter has at most
2 + 2 × its rules series.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

try:
    from prometheus_client.core import CounterMetricFamily
    from prometheus_client.registry import Collector
except ImportError as error:  # pragma: no cover - what a user without the extra sees
    raise ImportError(
        "librate.prometheus needs prometheus_client: pip install 'librate[prometheus]'"
    ) from error

from ._counts import Counts
from ._errors import ClosedError

__all__ = ["METRIC", "Countable", "RateLimitCollector"]

#: The family's name; ``prometheus_client`` writes its samples ``ratelimit_requests_total``.
METRIC = "ratelimit_requests"
# The help text of every language's exporter (Rust's librate::metrics).
_HELP = "Requests decided by a rate limiter, by result and by the rule that denied"
_LABELS = ("limiter", "result", "rule")


class Countable(Protocol):
    """What the collector reads: every librate limiter, policy and Redis client."""

    def enable_counts(self) -> None:
        """Turns counting on."""

    def counts(self) -> Counts | None:
        """The counts, None while counting is off."""


@dataclass(frozen=True)
class _Entry:
    limiter: Countable
    #: The ``rule`` label of each rule of a policy; None for a limiter.
    rules: tuple[str, ...] | None


class RateLimitCollector(Collector):
    """A custom collector over the limiters ``add`` names; register it with a
    ``prometheus_client`` registry. Each scrape reads every limiter's counts (a few
    loads each, never a pass over a table's keys). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def add(
        self, name: str, limiter: Countable, *, rule_names: Sequence[str] | None = None
    ) -> None:
        """Exports ``limiter``'s counts labelled ``limiter=name``, turning its counting on
        (``enable_counts()``). ``rule_names`` labels a policy's rules, one name per rule
        (default: their indices, "0", "1"…). A name already added is a ``ValueError``;
        rule names for a limiter of one rule, a ``TypeError``."""
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, not {type(name).__name__}")
        limiter.enable_counts()
        counts = limiter.counts()
        rules = None if counts is None or not counts.rules else len(counts.rules)
        entry = _Entry(limiter, _rule_labels(rules, rule_names))
        with self._lock:
            if name in self._entries:
                raise ValueError(f"a limiter named {name!r} is exported already")
            self._entries[name] = entry

    def remove(self, name: str) -> None:
        """Stops exporting the limiter added as ``name`` (``KeyError`` if none is)."""
        with self._lock:
            del self._entries[name]

    def describe(self) -> Iterator[CounterMetricFamily]:
        """The family this collects, without samples (``registry.register`` reads it)."""
        yield CounterMetricFamily(METRIC, _HELP, labels=_LABELS)

    def collect(self) -> Iterator[CounterMetricFamily]:
        """The family, a sample per limiter and result (and rule), read now. A limiter
        closed since it was added has no samples."""
        family = CounterMetricFamily(METRIC, _HELP, labels=_LABELS)
        with self._lock:
            entries = list(self._entries.items())
        for name, entry in entries:
            try:
                counts = entry.limiter.counts()
            except ClosedError:
                continue
            if counts is not None:
                _add_samples(family, name, entry, counts)
        yield family


def _rule_labels(rules: int | None, names: Sequence[str] | None) -> tuple[str, ...] | None:
    """The ``rule`` label of each of a policy's ``rules`` (None: a limiter's, which has
    none), ``names`` checked against them; None too for one rule not named."""
    if rules is None:
        if names is not None:
            raise TypeError("rule_names labels a policy's rules; a limiter has one rule")
        return None
    if names is None:
        return None if rules == 1 else tuple(str(index) for index in range(rules))
    if isinstance(names, str):
        raise TypeError("rule_names must be a sequence of names, one per rule, not a str")
    labels = tuple(names)
    if len(labels) != rules:
        raise ValueError(f"rule_names has {len(labels)} names for {rules} rules")
    return labels


def _add_samples(family: CounterMetricFamily, name: str, entry: _Entry, counts: Counts) -> None:
    family.add_metric([name, "admitted", ""], counts.admitted)
    family.add_metric([name, "table_full", ""], counts.table_full)
    if entry.rules is None:
        family.add_metric([name, "denied", ""], counts.denied)
    else:
        for label, own in zip(entry.rules, counts.rules, strict=True):
            family.add_metric([name, "denied", label], own.denied)
        for label, own in zip(entry.rules, counts.rules, strict=True):
            family.add_metric([name, "shadow_denied", label], own.shadow_denied)
