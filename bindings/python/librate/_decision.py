"""The outcome of one acquire, reserve or query (docs/decision.md, the decision), and of
one acquire on a policy of several rules."""

from __future__ import annotations

import math
from ctypes import Structure, c_bool, c_uint64, sizeof
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from ._convert import NS_PER_SECOND, U64_MAX
from ._ffi import RATE_POLICY_NO_RULE, rate_decision, rate_policy_decision

#: The fields of a ``Decision``, in the C struct's order.
_FIELDS = ("allowed", "limit", "remaining", "retry_after_ns", "reset_after_ns", "wait_ns")


def seconds(ns: int) -> float:
    """Nanoseconds as float seconds; the saturated value 2**64-1 ("never") is ``inf``."""
    return math.inf if ns == U64_MAX else ns / NS_PER_SECOND


class Decision(Structure):
    """What a limiter decided, and what the caller may do next. Immutable: its fields
    cannot be set or deleted; equal decisions compare equal and hash alike.

    - ``allowed``: whether the request was admitted.
    - ``limit``: most units this limiter can ever admit at once (GCRA: burst; windows:
      limit), the C decision's field of that name.
    - ``remaining``: units that could be admitted right after this decision.
    - ``retry_after_ns``: 0 when admitted; else how long until the same request, with no
      other traffic, would be admitted.
    - ``reset_after_ns``: how long until, with no other traffic, ``remaining == limit``.
    - ``wait_ns``: reserve only, how long an admitted caller must wait before acting;
      else 0.

    Durations are measured from the time the decision was made. The ``*_ns`` fields are
    exact integers; ``retry_after``, ``reset_after`` and ``wait`` are the same values in
    float seconds, with 2**64-1 ns ("never") shown as ``math.inf``.

    It has the layout of the C ``struct rate_decision``, so that the C library writes a
    decision straight into it: ``acquire`` then costs one allocation besides the foreign
    call, where building a copy of the C fields would cost more than the call itself.
    """

    # ``allowed`` is C's uint8_t (0 or 1) read as a bool: c_bool has the same size.
    _fields_ = [
        ("allowed", c_bool),
        ("limit", c_uint64),
        ("remaining", c_uint64),
        ("retry_after_ns", c_uint64),
        ("reset_after_ns", c_uint64),
        ("wait_ns", c_uint64),
    ]

    if TYPE_CHECKING:
        # What type checkers see of the fields ctypes makes from _fields_: read-only.

        @property
        def allowed(self) -> bool:
            """Whether the request was admitted."""

        @property
        def limit(self) -> int:
            """Most units this limiter can ever admit at once (GCRA: burst; windows:
            limit)."""

        @property
        def remaining(self) -> int:
            """Units that could be admitted right after this decision."""

        @property
        def retry_after_ns(self) -> int:
            """0 when admitted; else how long until the same request, with no other
            traffic, would be admitted."""

        @property
        def reset_after_ns(self) -> int:
            """How long until, with no other traffic, ``remaining == limit`` again."""

        @property
        def wait_ns(self) -> int:
            """Reserve only: how long an admitted caller must wait before acting; else 0."""

    def __init__(
        self,
        allowed: bool,
        limit: int,
        remaining: int,
        retry_after_ns: int,
        reset_after_ns: int,
        wait_ns: int = 0,
    ) -> None:
        values = (allowed, limit, remaining, retry_after_ns, reset_after_ns, wait_ns)
        for name, value in zip(_FIELDS, values, strict=True):
            Structure.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"Decision is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"Decision is immutable: cannot delete {name!r}")

    def _values(self) -> tuple[bool, int, int, int, int, int]:
        return (
            self.allowed,
            self.limit,
            self.remaining,
            self.retry_after_ns,
            self.reset_after_ns,
            self.wait_ns,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Decision:
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        values = zip(_FIELDS, self._values(), strict=True)
        return "Decision(" + ", ".join(f"{name}={value!r}" for name, value in values) + ")"

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
        return cls.from_buffer_copy(out)


assert sizeof(Decision) == sizeof(rate_decision), "struct rate_decision changed"
assert all(
    getattr(Decision, name).offset == getattr(rate_decision, name).offset for name in _FIELDS
), "struct rate_decision changed"

#: Makes an all-zero ``Decision`` for the C library to fill in, without ``__init__``.
blank_decision: Any = Decision.__new__


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
    #: ``reset_after_ns`` of its state as it is, since nothing was taken. A shadow rule's
    #: is its own, made alone: ``allowed`` False is a denial it would have made.
    rules: tuple[Decision, ...]
    #: The shadow rules' indices (docs/policies.md#shadow-rules): ``decision`` and
    #: ``denied_by`` are the other rules' alone.
    shadow: tuple[int, ...] = ()
    #: The first shadow rule, in the order given, whose own decision denied the request
    #: (it would have, were the rule enforced); None when none did.
    shadow_denied_by: int | None = None

    @classmethod
    def from_c(cls, out: rate_policy_decision, shadow: int = 0) -> PolicyDecision:
        """Copies a C policy decision made with the shadow rules of the mask ``shadow``
        (bit i for rule i)."""
        denied_by = None if out.denied_by == RATE_POLICY_NO_RULE else out.denied_by
        rules = tuple(Decision.from_c(rule) for rule in out.rules[: out.rules_len])
        return cls(Decision.from_c(out.decision), denied_by, rules, *shadow_of(rules, shadow))


def shadow_of(rules: tuple[Decision, ...], mask: int) -> tuple[tuple[int, ...], int | None]:
    """A decision's ``shadow`` and ``shadow_denied_by``: the rules of ``mask`` (bit i for
    rule i), and the first of them whose own decision denied."""
    shadow = tuple(index for index in range(len(rules)) if mask >> index & 1)
    return shadow, next((index for index in shadow if not rules[index].allowed), None)
