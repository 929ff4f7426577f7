"""``Policy``: several rules over one subject, decided all or nothing (``rate_policy_*``)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from ctypes import Array, byref, c_uint64, create_string_buffer
from typing import Any, NamedTuple

from ._convert import u64
from ._counts import Counted
from ._decision import PolicyDecision
from ._errors import error_for
from ._ffi import (
    RATE_E_INVALID_CONFIG,
    RATE_LIMITED,
    RATE_OK,
    RATE_POLICY_MAX_RULES,
    RATE_REASON_LEN,
    lib,
    rate_config,
    rate_policy_decision,
)
from ._limiter import _C_ONE, _CLOSED, _ONE, Config, _Handle, _Owner, status_text
from ._renamed import renamed
from ._shadow import indices, set_shadow, shadow_mask


class _PolicyHandle(_Handle):
    __slots__ = ()

    @staticmethod
    def _free(handle: Any, _lib: Any = lib) -> None:
        # Bound as a default so it still works during interpreter shutdown.
        _lib.rate_policy_free(handle)


class _PolicyC(NamedTuple):
    """The C functions of a policy."""

    new: Any
    acquire: Any
    acquire_at: Any
    acquire_costs: Any
    acquire_costs_at: Any
    #: ``acquire`` unchecked (see ``Library.unchecked``), for ``try_acquire``.
    fast: Any


@functools.cache
def _policy_c() -> _PolicyC:
    # Looked up at the first Policy, not at import, as the keyed functions are: a library
    # without policies still serves the limiters, and Policy() names the missing symbol.
    return _PolicyC(
        lib.rate_policy_new,
        lib.rate_policy_acquire,
        lib.rate_policy_acquire_at,
        lib.rate_policy_acquire_costs,
        lib.rate_policy_acquire_costs_at,
        lib.unchecked("rate_policy_acquire"),
    )


def _rejection(rules: tuple[Config, ...], status: int) -> str:
    """The message for a failed ``rate_policy_new``: for an invalid configuration, the
    wrong number of rules or the first rule the C library rejects, with its reason."""
    if status == RATE_E_INVALID_CONFIG:
        if not 1 <= len(rules) <= RATE_POLICY_MAX_RULES:
            return f"a policy holds 1 to {RATE_POLICY_MAX_RULES} rules, not {len(rules)}"
        reason = create_string_buffer(RATE_REASON_LEN)
        for index, rule in enumerate(rules):
            explained = lib.rate_limiter_explain_config(byref(rule.to_c()), reason, RATE_REASON_LEN)
            if explained == RATE_E_INVALID_CONFIG:
                return f"rules[{index}]: {reason.value.decode()}"
    return status_text(status)


def cost_array(costs: Sequence[int]) -> tuple[Array[c_uint64], int]:
    """``costs`` as the C array and length the ``*_acquire_costs`` functions take (C
    checks the length against the rule count; a ``TypeError`` for a str, bytes or a
    cost that is not an int, a ``ValueError`` for one outside u64)."""
    if isinstance(costs, (str, bytes)):
        raise TypeError("costs must be a sequence of ints, one per rule")
    values = [u64(cost, "cost") for cost in costs]
    return (c_uint64 * max(len(values), 1))(*values), len(values)


def checked_rules(rules: Iterable[Config]) -> tuple[Config, ...]:
    """``rules`` as a tuple, each a ``Config`` (else ``TypeError``)."""
    if isinstance(rules, Config):
        raise TypeError("rules must be a sequence of Config: put one rule in a list")
    checked = tuple(rules)
    for index, rule in enumerate(checked):
        if not isinstance(rule, Config):
            raise TypeError(f"rules[{index}] must be a Config, not {type(rule).__name__}")
    return checked


class Policy(_Owner, Counted):
    """Several limits over one subject at once ("10 a second and 1,000 a day"): a request
    is admitted iff every rule admits it, and a denied request takes nothing from any
    rule. ``rules`` are 1 to 8 ``Config``s of any algorithms.

    >>> import librate
    >>> policy = librate.Policy([
    ...     librate.Config.gcra(2, 1),              # 2 a second
    ...     librate.Config.fixed_window(3, 60),     # and 3 a minute
    ... ])
    >>> [policy.acquire(now_ns=0).decision.allowed for _ in range(3)]
    [True, True, False]
    >>> denied = policy.acquire(now_ns=0)
    >>> denied.denied_by, denied.rules[1].remaining   # the minute rule gave its unit back
    (0, 1)

    Thread-safety: share one policy between any number of threads; every call is one
    lock-free C call, made with the GIL released. What concurrent callers may observe:

    - No rule ever admits past its limit.
    - From one thread at a time every decision is exact: a denial leaves every rule as
      it was, so the decisions are those of the rules' own limiters on the admitted
      requests alone.
    - A request takes from the rules one after the other. While it holds units of the
      rules it passed, before a later rule denies it and they are given back, another
      request can find one of those rules full and be denied (a denial it would not get
      a moment later).
    - A rule gives units back only if no other request changed it in between; otherwise
      the denied request's units stay taken, as if admitted, and expire as admitted
      units do. So do a sliding log's (logs take last and never give back) when a later
      sliding log denies because a concurrent request changed it after it was asked.
      Either way a rule only ever errs on the side of its limit.

    Times are nanoseconds on CLOCK_MONOTONIC (``librate.now_ns()``); ``now_ns=`` takes
    your own timeline (one per policy).

    ``shadow`` names rules (by index) to roll out in shadow: decided and reported
    (``PolicyDecision.shadow_denied_by``) but never denying; see ``set_shadow``.
    """

    __slots__ = ("_rules", "_c", "_shadow")

    def __init__(self, rules: Iterable[Config], *, shadow: Iterable[int] = ()) -> None:
        self._handle = _CLOSED
        self._shadow = 0
        checked = checked_rules(rules)
        self._rules = checked
        self._c = _policy_c()
        handle = _PolicyHandle()
        array = (rate_config * len(checked))(*(rule.to_c() for rule in checked))
        status = self._c.new(array, len(checked), byref(handle))
        if status != RATE_OK:
            raise error_for(status, _rejection(checked, status))
        self._handle = handle
        if shadow:
            self.set_shadow(shadow)

    def set_shadow(self, rules: Iterable[int]) -> None:
        """Makes the rules of these indices the policy's shadow rules, replacing the ones
        before (an empty list enforces every rule): a shadow rule is decided and reports
        its would-be denials (``shadow_denied_by``), but never denies a request and takes
        units only from requests the enforced rules admit (docs/policies.md#shadow-rules).
        A rule keeps its state whether shadow or enforced: roll a limit out in shadow,
        then enforce it, with one call each on a running policy.

        >>> import librate
        >>> policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.gcra(1, 1)],
        ...                         shadow=[1])
        >>> policy.acquire(now_ns=0).shadow_denied_by is None
        True
        >>> second = policy.acquire(now_ns=0)
        >>> second.decision.allowed, second.shadow_denied_by
        (True, 1)
        >>> policy.set_shadow([])
        >>> policy.acquire(now_ns=10**9).decision.allowed, policy.acquire(now_ns=10**9).denied_by
        (True, 1)

        Raises ``InvalidConfig`` (a ``ValueError``) for an index outside the rules (the
        shadow rules stay as they were), ``ClosedError`` once closed."""
        set_shadow(self, lib.rate_policy_set_shadow, shadow_mask(rules, len(self._rules)))

    @property
    def shadow(self) -> tuple[int, ...]:
        """The shadow rules' indices, in order: empty when every rule is enforced."""
        return indices(self._shadow)

    def set_rules(self, rules: Iterable[Config], *, now_ns: int | None = None) -> None:
        """Replaces the rules (a customer changes plan), now or at ``now_ns``: as many
        as before, each of the same algorithm as the one it replaces, each keeping what
        was consumed as ``Limiter.set_config`` does. Each rule's step of a racing request
        is decided wholly under that rule's old or new configuration. ``rules`` then
        reports the new ones.

        Raises ``InvalidConfig`` (another number of rules, an invalid rule, or one that
        cannot carry its state over) and ``ClosedError`` once closed; nothing changes."""
        checked = tuple(rules)
        for index, rule in enumerate(checked):
            if not isinstance(rule, Config):
                raise TypeError(f"rules[{index}] must be a Config, not {type(rule).__name__}")
        array = (rate_config * len(checked))(*(rule.to_c() for rule in checked))
        now, at = lib.rate_policy_set_rules, lib.rate_policy_set_rules_at
        replace_rules(self, array, now_ns, now, at)
        self._rules = checked

    @property
    def rules(self) -> tuple[Config, ...]:
        """The rules, in the order given."""
        return self._rules

    @property
    def max_n(self) -> int:
        """The largest ``n`` the policy can ever admit: the least of its rules'
        ``max_n`` (a larger one is an ``InsufficientCapacity`` error)."""
        return min(rule.max_n for rule in self._rules)

    @property
    def capacity(self) -> int:
        """Deprecated alias of ``max_n``: ``capacity`` now means only the keys a table
        holds."""
        renamed("Policy.capacity", "Policy.max_n")
        return self.max_n

    def _enforces(self) -> str:
        return ", ".join(map(str, self._rules))

    def _count_functions(self) -> tuple[Any, Any]:
        return lib.rate_policy_enable_counts, lib.rate_policy_read_counts

    def _counted_rules(self) -> int:
        return len(self._rules)

    def try_acquire(self, n: int = _ONE) -> bool:
        """Acquires ``n`` units now from every rule, or from none, and says only whether
        they were admitted.

        Raises ``InsufficientCapacity`` if ``n`` exceeds ``max_n``."""
        units = _C_ONE if n is _ONE else c_uint64(u64(n, "n"))
        status = self._c.fast(self._handle, units, None)
        if status == RATE_OK:
            return True
        if status == RATE_LIMITED:
            return False
        raise self._fail(status, n)

    def acquire(self, n: int = 1, *, now_ns: int | None = None) -> PolicyDecision:
        """Acquires ``n`` units from every rule, or from none (``n == 0`` only reports
        the state), and returns the combined decision, which rule denied and each
        rule's own; at ``now_ns`` if given, else now.

        Raises ``InsufficientCapacity`` if ``n`` exceeds ``max_n``."""
        n = u64(n, "n")
        out = rate_policy_decision()
        if now_ns is None:
            status = self._c.acquire(self._handle, n, out)
        else:
            status = self._c.acquire_at(self._handle, n, u64(now_ns, "now_ns"), out)
        if status == RATE_OK or status == RATE_LIMITED:
            return PolicyDecision.from_c(out, self._shadow)
        raise self._fail(status, n)

    def acquire_costs(
        self, costs: Sequence[int], *, now_ns: int | None = None
    ) -> PolicyDecision:
        """Acquires ``costs[i]`` units of rule ``i``, for every rule, or nothing: a rule
        of cost 0 takes no part (its entry in ``rules`` only reports its state, and the
        combined decision leaves it out); all costs 0 is a query. At ``now_ns`` if
        given, else now.

        >>> import librate
        >>> site = librate.Policy([
        ...     librate.Config.fixed_window(1, 60),   # posts: 1 a minute
        ...     librate.Config.fixed_window(5, 60),   # likes: 5 a minute
        ...     librate.Config.fixed_window(5, 60),   # anything: 5 a minute
        ... ])
        >>> post, like = [1, 0, 1], [0, 1, 1]
        >>> site.acquire_costs(post, now_ns=0).decision.allowed
        True
        >>> site.acquire_costs(post, now_ns=0).denied_by      # the post rule
        0
        >>> decision = site.acquire_costs(like, now_ns=0)
        >>> decision.decision.allowed, decision.rules[1].remaining, decision.rules[2].remaining
        (True, 4, 3)

        Raises ``InvalidConfig`` unless there is one cost per rule, and
        ``InsufficientCapacity`` for a cost above its rule's ``max_n``."""
        array, count = cost_array(costs)
        out = rate_policy_decision()
        if now_ns is None:
            status = self._c.acquire_costs(self._handle, array, count, out)
        else:
            status = self._c.acquire_costs_at(self._handle, array, count, u64(now_ns, "now_ns"), out)
        if status == RATE_OK or status == RATE_LIMITED:
            return PolicyDecision.from_c(out, self._shadow)
        raise self._fail(status, list(costs))


def replace_rules(owner: _Owner, array: Array[Any], now_ns: object, now: Any, at: Any) -> None:
    """The body of every ``set_rules``: the C call ``now`` on ``owner``'s handle with the
    rules in ``array``, or ``at`` with ``now_ns`` checked; raises what the status says."""
    if now_ns is None:
        status = now(owner._handle, array, len(array))
    else:
        status = at(owner._handle, array, len(array), u64(now_ns, "now_ns"))
    if status != RATE_OK:
        raise owner._fail(status)
