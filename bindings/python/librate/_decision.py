"""The outcome of one acquire, reserve or query (docs/decision.md, the decision), and of
one acquire on a policy of several rules."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._convert import NS_PER_SECOND, U64_MAX
from ._ffi import RATE_POLICY_NO_RULE, rate_decision, rate_policy_decision


def seconds(ns: int) -> float:
    """Nanoseconds as float seconds; the saturated value 2**64-1 ("never") is ``inf``."""
    return math.inf if ns == U64_MAX else ns / NS_PER_SECOND


@dataclass(frozen=True, slots=True)
class Decision:
    """What a limiter decided, and what the caller may do next.

    Durations are measured from the time the decision was made. The ``*_ns`` fields are
    exact integers; ``retry_after``, ``reset_after`` and ``wait`` are the same values in
    float seconds, with 2**64-1 ns ("never") shown as ``math.inf``.
    """

    #: Whether the request was admitted.
    allowed: bool
    #: Most units this limiter can ever admit at once (GCRA: burst; windows: limit).
    limit: int
    #: Units that could be admitted right after this decision.
    remaining: int
    #: 0 when admitted; else how long until the same request, with no other traffic,
    #: would be admitted.
    retry_after_ns: int
    #: How long until, with no other traffic, ``remaining == limit`` again.
    reset_after_ns: int
    #: Reserve only: how long an admitted caller must wait before acting; else 0.
    wait_ns: int = 0

    @property
    def retry_after(self) -> float:
        """``retry_after_ns`` in seconds."""
        return seconds(self.retry_after_ns)

    @property
    def reset_after(self) -> float:
        """``reset_after_ns`` in seconds."""
        return seconds(self.reset_after_ns)

    @property
    def wait(self) -> float:
        """``wait_ns`` in seconds."""
        return seconds(self.wait_ns)

    @classmethod
    def from_c(cls, out: rate_decision) -> Decision:
        """Copies a C decision."""
        return cls(
            bool(out.allowed),
            out.limit,
            out.remaining,
            out.retry_after_ns,
            out.reset_after_ns,
            out.wait_ns,
        )


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """What a ``Policy`` decided: the combined decision, which rule denied, and each
    rule's own decision."""

    #: ``allowed`` iff every rule admitted; ``limit`` and ``remaining`` the least over
    #: the rules, ``retry_after_ns`` and ``reset_after_ns`` the greatest; ``wait_ns`` 0.
    decision: Decision
    #: The index of the first rule, in the order given, that denied the request; None
    #: when admitted.
    denied_by: int | None
    #: Each rule's own decision, in the order given. Admitted: what each rule decided,
    #: units taken. Denied: what each rule would decide alone, with ``remaining`` and
    #: ``reset_after_ns`` of its state as it is, since nothing was taken.
    rules: tuple[Decision, ...]

    @classmethod
    def from_c(cls, out: rate_policy_decision) -> PolicyDecision:
        """Copies a C policy decision."""
        denied_by = None if out.denied_by == RATE_POLICY_NO_RULE else out.denied_by
        rules = tuple(Decision.from_c(rule) for rule in out.rules[: out.rules_len])
        return cls(Decision.from_c(out.decision), denied_by, rules)
