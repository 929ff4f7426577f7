"""``Counts``: how many requests a limiter admitted and denied, and which rule denied
them (docs/metrics.md), read from the C counters of an in-process limiter or kept here
for one in Redis."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from ctypes import byref
from dataclasses import dataclass
from typing import Any

from ._ffi import RATE_E_UNSUPPORTED, RATE_OK, rate_counts, rate_rule_counts


@dataclass(frozen=True)
class RuleCounts:
    """One policy rule's counts (``Counts.rules``)."""

    #: Requests this rule denied first, in the order the rules were given: the rule a
    #: denial's ``denied_by`` names.
    denied: int
    #: A shadow rule's would-be denials; 0 for an enforced rule.
    shadow_denied: int


@dataclass(frozen=True)
class Counts:
    """A limiter's counts since ``enable_counts()``: each request counted once, in one of
    ``admitted``, ``denied`` or ``table_full``, so a reading is consistent."""

    #: Requests admitted.
    admitted: int
    #: Requests denied by the limit; for a policy, the sum of its rules' ``denied``.
    denied: int
    #: Keyed tables and keyed policies: requests for a new key refused with
    #: ``TableFull``; 0 for the others.
    table_full: int
    #: A policy's rules' own counts, in the order given; empty for a limiter.
    rules: tuple[RuleCounts, ...] = ()


class Counted:
    """``enable_counts()`` and ``counts()`` of an object over a C handle whose counting
    functions ``_count_functions`` gives."""

    __slots__ = ()

    _handle: Any

    def _count_functions(self) -> tuple[Any, Any]:
        """``rate_*_enable_counts`` and ``rate_*_read_counts`` of this kind of handle."""
        raise NotImplementedError

    def _counted_rules(self) -> int:
        """The rules whose own counts ``counts()`` reads: a policy's; 0 for a limiter."""
        return 0

    def _fail(self, status: int, n: object = None) -> Exception:
        raise NotImplementedError

    def enable_counts(self) -> None:
        """Turns on counting of this limiter's requests, from now on (off by default: it
        costs an atomic add a request). Counting that is on stays on, its counts kept.
        Raises ``ClosedError`` once closed."""
        enable, _ = self._count_functions()
        status = enable(self._handle)
        if status != RATE_OK:
            raise self._fail(status)

    def counts(self) -> Counts | None:
        """The counts since ``enable_counts()``, None if counting is off. Raises
        ``ClosedError`` once closed."""
        _, read = self._count_functions()
        out = rate_counts()
        rules = self._counted_rules()
        per_rule = (rate_rule_counts * rules)()
        if rules:
            status = read(self._handle, byref(out), per_rule, rules)
        else:
            status = read(self._handle, byref(out))
        if status == RATE_E_UNSUPPORTED:
            return None
        if status != RATE_OK:
            raise self._fail(status)
        own = tuple(RuleCounts(rule.denied, rule.shadow_denied) for rule in per_rule)
        return Counts(out.admitted, out.denied, out.table_full, own)


class Tally:
    """Counts kept in Python, for a limiter whose decisions Redis makes: off until
    ``enable``; a lock makes each count exact under threads (and without the GIL), at a
    cost far below the Redis round trip it follows."""

    __slots__ = ("_lock", "_on", "_admitted", "_denied", "_shadow_denied", "_per_rule")

    def __init__(self, rules: int = 0) -> None:
        """Counts of a policy of ``rules`` rules, or of a limiter (0)."""
        self._lock = threading.Lock()
        self._on = False
        self._admitted = 0
        self._denied = [0] * max(rules, 1)
        self._shadow_denied = [0] * max(rules, 1)
        self._per_rule = rules > 0

    def enable(self) -> None:
        """Starts counting; counting that is on stays on."""
        self._on = True

    def count(self, denied_by: int | None, shadow_denied: Iterable[int] = ()) -> None:
        """Counts one decision: admitted (``denied_by`` None), or denied by that rule (a
        limiter's: 0); and beside it each shadow rule of ``shadow_denied``, which would
        have denied it (docs/metrics.md)."""
        if not self._on:
            return
        with self._lock:
            if denied_by is None:
                self._admitted += 1
            else:
                self._denied[denied_by] += 1
            for rule in shadow_denied:
                self._shadow_denied[rule] += 1

    def read(self) -> Counts | None:
        """The counts, None if off; a policy's with each rule's."""
        if not self._on:
            return None
        with self._lock:
            admitted, denied = self._admitted, list(self._denied)
            shadow_denied = list(self._shadow_denied)
        rules: tuple[RuleCounts, ...] = ()
        if self._per_rule:
            rules = tuple(map(RuleCounts, denied, shadow_denied))
        return Counts(admitted, sum(denied), 0, rules)
