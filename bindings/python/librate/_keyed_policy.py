"""``KeyedPolicy``: per-key and global rules decided together for one key, all or nothing
(``rate_keyed_policy_*``)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from ctypes import byref
from dataclasses import dataclass
from typing import Any

from ._convert import key_bytes, u64
from ._counts import Counted
from ._decision import PolicyDecision
from ._errors import InvalidConfig, error_for
from ._ffi import (
    RATE_LIMITED,
    RATE_OK,
    RATE_RULE_GLOBAL,
    RATE_RULE_PER_KEY,
    lib,
    rate_keyed_rule,
    rate_keyed_stats,
    rate_policy_decision,
)
from ._limiter import _CLOSED, Config, Key, _Handle, _Owner, config_from_c, opened
from ._policy import _rejection, cost_array, replace_rules
from ._shadow import indices, set_shadow, shadow_mask
from ._stats import KeyedStats


class _KeyedPolicyHandle(_Handle):
    __slots__ = ()

    @staticmethod
    def _free(handle: Any, _lib: Any = lib) -> None:
        # Bound as a default so it still works during interpreter shutdown.
        _lib.rate_keyed_policy_free(handle)


@dataclass(frozen=True)
class KeyedRule:
    """One rule of a ``KeyedPolicy``: a ``Config`` kept per key (``scope`` "per_key": each
    key its own state, in a bounded table) or globally ("global": one state for every
    key). Made by ``KeyedRule.per_key(config)`` or ``KeyedRule.global_(config)``."""

    config: Config
    scope: str

    def __post_init__(self) -> None:
        if not isinstance(self.config, Config):
            raise TypeError(f"config must be a Config, not {type(self.config).__name__}")
        if self.scope not in _SCOPES:
            raise ValueError(f"scope must be 'per_key' or 'global', not {self.scope!r}")

    @classmethod
    def per_key(cls, config: Config) -> KeyedRule:
        """A rule each key has its own state of."""
        return cls(config, "per_key")

    @classmethod
    def global_(cls, config: Config) -> KeyedRule:
        """A rule every key shares one state of (``global`` is a Python keyword)."""
        return cls(config, "global")

    def to_c(self) -> rate_keyed_rule:
        """The rule as the C library takes it, a ``struct rate_keyed_rule``."""
        return rate_keyed_rule(self.config.to_c(), _SCOPES[self.scope])

    def __str__(self) -> str:
        return f"{self.scope} {self.config}"


_SCOPES = {"per_key": RATE_RULE_PER_KEY, "global": RATE_RULE_GLOBAL}
#: The scopes by their C number, as ``rate_keyed_policy_get_rules`` reports them.
_SCOPE_NAMES = {number: name for name, number in _SCOPES.items()}


class KeyedPolicy(_Owner, Counted):
    """Per-key and global rules over one request at once: a request for a key is
    admitted iff every rule admits it (a per-key rule on the key's own state, a global
    rule on the state all keys share), and a denied request takes nothing from any rule.
    ``rules`` are 1 to 8 ``KeyedRule``s; each per-key rule is a table of ``capacity``
    keys, as a ``KeyedLimiter``'s (a new key that finds one full of live keys raises
    ``TableFull``, and nothing is taken).

    >>> import librate
    >>> from librate import Config, KeyedRule
    >>> site = librate.KeyedPolicy([
    ...     KeyedRule.per_key(Config.gcra(1, 1)),         # per customer: 1 post a second
    ...     KeyedRule.per_key(Config.gcra(5, 1)),         # and 5 likes a second
    ...     KeyedRule.global_(Config.fixed_window(3, 1)), # everybody: 3 a second
    ... ], capacity=1000)
    >>> post, like = [1, 0, 1], [0, 1, 1]
    >>> site.acquire_costs("alice", post, now_ns=0).decision.allowed
    True
    >>> denied = site.acquire_costs("alice", post, now_ns=0)
    >>> denied.denied_by, denied.rules[2].remaining   # the global rule gave its unit back
    (0, 2)
    >>> site.acquire_costs("alice", like, now_ns=0).decision.allowed
    True

    A cost of 0 leaves a rule out of the request: its entry in ``rules`` only reports its
    state, and the combined decision leaves it out. Thread-safety and what concurrent
    callers may observe: as ``Policy``, rule by rule.

    ``shadow`` names rules (by index) to roll out in shadow, as ``Policy``'s does; see
    ``set_shadow``.
    """

    __slots__ = ("_rules", "_shadow")

    def __init__(
        self, rules: Iterable[KeyedRule], *, capacity: int, shadow: Iterable[int] = ()
    ) -> None:
        self._handle = _CLOSED
        self._shadow = 0
        checked = _checked(rules)
        self._create(checked, capacity, lib.rate_keyed_policy_new)
        if shadow:
            self.set_shadow(shadow)

    def set_shadow(self, rules: Iterable[int]) -> None:
        """Makes the rules of these indices this handle's shadow rules, as
        ``Policy.set_shadow`` does, rule by rule (docs/policies.md#shadow-rules). A shadow
        per-key rule whose table is full cannot decide a new key: the request is decided
        by the enforced rules, never failed for it. For a policy opened from a file, the
        shadow rules are this handle's alone: every process names its own (name the same
        ones everywhere).

        Raises ``InvalidConfig`` (a ``ValueError``) for an index outside the rules (the
        shadow rules stay as they were), ``ClosedError`` once closed."""
        set_shadow(self, lib.rate_keyed_policy_set_shadow, shadow_mask(rules, len(self._rules)))

    @property
    def shadow(self) -> tuple[int, ...]:
        """The shadow rules' indices, in order: empty when every rule is enforced."""
        return indices(self._shadow)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        rules: Iterable[KeyedRule],
        *,
        capacity: int,
        replace: bool = False,
        shadow: Iterable[int] = (),
    ) -> KeyedPolicy:
        """Opens the keyed policy whose rules live in the file at ``path``, creating it
        (mode 0600) if it does not exist: every process that opens the same file with the
        same rules (in the same order) and ``capacity`` shares one policy. As
        ``KeyedLimiter.open`` otherwise.

        A file that exists must hold these rules: those it was made with, or the last
        ones any process set in it (``set_rules``). With ``replace=True`` a file holding
        other rules of the same number, scopes and algorithms is given these instead
        (``rate_keyed_policy_open_replacing``), as ``set_rules`` would change them, now,
        for every process attached.

        Raises ``Incompatible`` if the file holds other rules (the message says which, as
        ``describe_file`` does; with ``replace=True`` only for a file of another kind,
        rule count, scopes or capacity), ``InvalidConfig`` also when ``replace=True``
        cannot carry a rule's state over (another algorithm, a sliding log's rule), and
        ``OSError`` as ``KeyedLimiter.open``. ``shadow``: as ``set_shadow``, this
        handle's own."""
        if not isinstance(replace, bool):
            raise TypeError(f"replace must be a bool, not {type(replace).__name__}")
        policy = cls.__new__(cls)
        policy._handle = _CLOSED
        policy._shadow = 0
        encoded = os.fsencode(path)
        name = "rate_keyed_policy_open_replacing" if replace else "rate_keyed_policy_open"
        opener = lib.with_errno(name)

        def make(array: Any, *rest: Any) -> int:
            return opened(opener(encoded, array, *rest), path)

        policy._create(_checked(rules), capacity, make)
        if shadow:
            policy.set_shadow(shadow)
        return policy

    def set_rules(self, rules: Iterable[KeyedRule], *, now_ns: int | None = None) -> None:
        """Replaces the rules (a customer changes plan), now or at ``now_ns``: as many as
        before, each per key or global as the one it replaces and of the same algorithm.
        Each per-key rule carries every key's state over as ``KeyedLimiter.set_config``
        does (a key fresh at the change starts anew), each global rule as
        ``Limiter.set_config``. Each rule's step of a racing request is decided wholly
        under that rule's old or new configuration. ``rules`` then reports the new ones.

        A policy opened from a file (``KeyedPolicy.open``) changes in its file, once, for
        every process: each decides under the new rules from its next decision, and later
        openers must give them (or ``replace=True``). ``rules``, through any handle in any
        process, reports the file's rules in force, whichever process set them.

        Raises ``InvalidConfig`` (another number of rules, another scope, an invalid rule,
        or one that cannot carry its state over) and ``ClosedError`` once closed; nothing
        changes."""
        checked = _checked(rules)
        array = (rate_keyed_rule * len(checked))(*(rule.to_c() for rule in checked))
        replace_rules(
            self,
            array,
            now_ns,
            lib.rate_keyed_policy_set_rules,
            lib.rate_keyed_policy_set_rules_at,
        )
        self._rules = checked

    def _create(self, rules: tuple[KeyedRule, ...], capacity: object, make: Any) -> None:
        self._rules = rules
        count = u64(capacity, "capacity", least=1, error=InvalidConfig)
        handle = _KeyedPolicyHandle()
        array = (rate_keyed_rule * len(rules))(*(rule.to_c() for rule in rules))
        status = make(array, len(rules), count, byref(handle))
        if status != RATE_OK:
            raise error_for(status, _rejection(tuple(rule.config for rule in rules), status))
        self._handle = handle

    @property
    def rules(self) -> tuple[KeyedRule, ...]:
        """The rules in force, in the order given: those this policy was made with, or
        the last ``set_rules`` gave; for a policy opened from a file, the file's rules in
        force, which ``set_rules`` in any process attached, or an opener's
        ``replace=True``, may have changed. A closed policy reports the last ones it
        knew."""
        count = len(self._rules)  # a change keeps the number of rules
        out = (rate_keyed_rule * count)()
        if lib.rate_keyed_policy_get_rules(self._handle, out, count) != RATE_OK:
            return self._rules
        held = tuple(
            KeyedRule(config_from_c(rule.config), _SCOPE_NAMES[rule.scope]) for rule in out
        )
        self._rules = held
        return held

    def _enforces(self) -> str:
        return ", ".join(map(str, self.rules))

    def _count_functions(self) -> tuple[Any, Any]:
        return lib.rate_keyed_policy_enable_counts, lib.rate_keyed_policy_read_counts

    def _counted_rules(self) -> int:
        return len(self.rules)

    def acquire(self, key: Key, n: int = 1, *, now_ns: int | None = None) -> PolicyDecision:
        """Acquires ``n`` units of every rule for ``key``, or nothing (``n == 0`` only
        reports, and inserts no key); at ``now_ns`` if given, else now."""
        return self.acquire_costs(key, [n] * len(self._rules), now_ns=now_ns)

    def acquire_costs(
        self, key: Key, costs: Sequence[int], *, now_ns: int | None = None
    ) -> PolicyDecision:
        """Acquires ``costs[i]`` units of rule ``i`` for ``key``, for every rule, or
        nothing: a rule of cost 0 takes no part. Raises ``InvalidConfig`` unless there is
        one cost per rule, ``InsufficientCapacity`` for a cost above its rule's limit, and
        ``TableFull`` for a new key a per-key rule's full table refuses."""
        out = rate_policy_decision()
        status = self._call(key, costs, now_ns, out)
        if status == RATE_OK or status == RATE_LIMITED:
            return PolicyDecision.from_c(out, self._shadow)
        raise self._fail(status, list(costs))

    def try_acquire(self, key: Key, n: int = 1) -> bool:
        """``acquire`` now, saying only whether it was admitted."""
        return self.try_acquire_costs(key, [n] * len(self._rules))

    def try_acquire_costs(self, key: Key, costs: Sequence[int]) -> bool:
        """``acquire_costs`` now, saying only whether it was admitted."""
        status = self._call(key, costs, None, None)
        if status == RATE_OK or status == RATE_LIMITED:
            return status == RATE_OK
        raise self._fail(status, list(costs))

    def _call(self, key: Key, costs: Sequence[int], now_ns: int | None, out: Any) -> int:
        data = key_bytes(key)
        array, count = cost_array(costs)
        if now_ns is None:
            return int(
                lib.rate_keyed_policy_acquire_costs(self._handle, data, len(data), array, count, out)
            )
        now = u64(now_ns, "now_ns")
        return int(
            lib.rate_keyed_policy_acquire_costs_at(
                self._handle, data, len(data), array, count, now, out
            )
        )

    def reset(self, key: Key) -> None:
        """Resets ``key`` in every per-key rule: its next request is decided by them as a
        new key's. The global rules keep their counts."""
        data = key_bytes(key)
        status = lib.rate_keyed_policy_reset(self._handle, data, len(data))
        if status != RATE_OK:
            raise self._fail(status)

    def stats(self, *, now_ns: int | None = None) -> KeyedStats:
        """The per-key rules' tables: their capacity and slots, the live keys of the
        fullest, and the requests refused with ``TableFull``. Reads every slot."""
        out = rate_keyed_stats()
        if now_ns is None:
            status = lib.rate_keyed_policy_read_stats(self._handle, out)
        else:
            status = lib.rate_keyed_policy_read_stats_at(self._handle, u64(now_ns, "now_ns"), out)
        if status != RATE_OK:
            raise self._fail(status)
        return KeyedStats.from_c(out)


def _checked(rules: Iterable[KeyedRule]) -> tuple[KeyedRule, ...]:
    if isinstance(rules, KeyedRule):
        raise TypeError("rules must be a sequence of KeyedRule: put one rule in a list")
    checked = tuple(rules)
    for index, rule in enumerate(checked):
        if not isinstance(rule, KeyedRule):
            raise TypeError(f"rules[{index}] must be a KeyedRule, not {type(rule).__name__}")
    return checked
