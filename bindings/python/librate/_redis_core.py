"""What the clients of ``librate.redis`` share, without redis-py: the script and its
arguments (from ``rate_redis_prepare`` and ``rate_redis_policy_prepare``, so every
language sends the same bytes), the checks made before anything is sent, the Redis keys
of a key, and the decision a reply holds. The clients in ``librate.redis`` only send;
the middleware recognizes the limiters by their base class, so it never imports redis-py.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Iterable, Sequence
from ctypes import byref, create_string_buffer
from typing import Any, Generic, TypeVar

from ._convert import U64_MAX, Duration, duration_ns, key_bytes, u64
from ._counts import Counts, Tally
from ._decision import Decision, PolicyDecision, shadow_of
from ._errors import InvalidConfig, RedisError, error_for
from ._ffi import (
    RATE_E_INSUFFICIENT_CAPACITY,
    RATE_E_INVALID_CONFIG,
    RATE_E_UNSUPPORTED,
    RATE_OK,
    RATE_POLICY_MAX_RULES,
    RATE_REASON_LEN,
    lib,
    rate_config,
    rate_redis_policy_script,
    rate_redis_script,
)
from ._limiter import Config, Key, _config, status_text
from ._policy import checked_rules
from ._renamed import renamed
from ._shadow import indices, shadow_mask

#: What a public method returns: a ``Decision`` (sync), or an awaitable of one (asyncio).
R = TypeVar("R")
#: What ``acquire_batch`` returns: a list (sync), or an awaitable of one (asyncio).
B = TypeVar("B")

#: One script call: the Redis key, and ARGV (now, n, max_wait_ns, the configuration's).
Call = tuple[bytes, list[bytes]]
#: A policy's script call: its rules' Redis keys, ARGV, and the shadow mask it sends.
PolicyCall = tuple[list[bytes], list[bytes], int]


def _prepared(script: Any) -> tuple[bytes, str, list[bytes], int]:
    """A prepared script's source, its SHA1, its arguments as ARGV takes them, and the
    largest cost it admits."""
    source: bytes = script.source
    args = [str(arg).encode() for arg in script.config_args[: script.config_args_len]]
    return source, hashlib.sha1(source).hexdigest(), args, script.limit


class Plan:
    """A configuration's script on Redis: its source and SHA1, the arguments every call
    ends with, the checks the in-process limiter makes, and the counts of the decisions
    its replies held."""

    __slots__ = (
        "config",
        "source",
        "sha",
        "config_args",
        "max_n",
        "one_now",
        "one_now_brief",
        "tally",
    )

    def __init__(self, config: Config) -> None:
        script = rate_redis_script()
        c_config = config.to_c()
        status = lib.rate_redis_prepare(byref(c_config), byref(script))
        if status != RATE_OK:
            raise error_for(status, _rejection(config, c_config))
        self.config = config
        self.source, self.sha, self.config_args, self.max_n = _prepared(script)
        self.tally = Tally()
        # The arguments of the commonest request, one unit now, built once (redis-py
        # only reads them): ARGV as ``args(1, None, 0)`` gives it.
        self.one_now = [b"", b"1", b"0", *self.config_args]
        self.one_now_brief = _brief(self.one_now)

    def check(self, n: int, reserve: bool) -> None:
        """Refuses a request as the in-process limiter does: a reserve (even one that
        would not wait) on a window algorithm, then ``n`` above ``max_n``."""
        if reserve and self.config.algorithm != "gcra":
            status = RATE_E_UNSUPPORTED
        elif n > self.max_n:
            status = RATE_E_INSUFFICIENT_CAPACITY
        else:
            return
        # The in-process limiter's message, word for word.
        raise error_for(status, f"{status_text(status)} (n={n}, {self.config})")

    def args(self, n: int, now_ns: int | None, max_wait_ns: int) -> list[bytes]:
        """ARGV: now ("" for the server's clock), n, max_wait_ns, the configuration's."""
        if n == 1 and now_ns is None and max_wait_ns == 0:
            return self.one_now
        now = b"" if now_ns is None else str(now_ns).encode()
        return [now, str(n).encode(), str(max_wait_ns).encode(), *self.config_args]

    def brief(self, args: list[bytes]) -> list[bytes]:
        """An acquire's ARGV (as ``args`` gives it) in the brief form, whose reply is the
        decision's ``allowed`` alone: max_wait ``""`` (the script's request.lua)."""
        if args is self.one_now:
            return self.one_now_brief
        return _brief(args)

    def decision(self, reply: object, args: list[bytes]) -> Decision:
        """The decision a script returned: ``[allowed, limit, remaining, retry_after_ns,
        reset_after_ns, wait_ns]``, integers or decimal strings (bytes, or str from a
        client with ``decode_responses``); anything else is a ``RedisError``. Counted,
        unless ``args`` (the call's ARGV) ask a query (``_counted``)."""
        decision = _decision(reply)
        if _counted(args):
            self.tally.count(None if decision.allowed else 0)
        return decision

    def admitted(self, reply: object, args: list[bytes]) -> bool:
        """Whether a brief call's reply (``brief``) admitted: the integer 1 or 0; anything
        else is a ``RedisError``. Counted as ``decision`` counts."""
        if type(reply) is int and 0 <= reply <= 1:
            if _counted(args):
                self.tally.count(None if reply == 1 else 0)
            return reply == 1
        raise RedisError(f"redis: unexpected reply {reply!r}")


def _counted(args: list[bytes]) -> bool:
    """Whether a call of ARGV ``args`` (now, n, …) is counted: not a query (n = 0), which
    decides nothing, as in process (docs/metrics.md)."""
    return args[1] != b"0"


def _brief(args: list[bytes]) -> list[bytes]:
    """ARGV with max_wait ``""``: the same acquire in the brief form."""
    return [*args[:2], b"", *args[3:]]


def _decision(reply: object) -> Decision:
    """One decision of a script's reply (see ``Plan.decision``)."""
    allowed, limit, remaining, retry_after, reset_after, wait = _fields(reply)
    return Decision(allowed == 1, limit, remaining, retry_after, reset_after, wait)


def _fields(reply: object) -> Sequence[int]:
    """The six fields of one decision of a script's reply (see ``Plan.decision``), each a
    u64, the first 0 or 1; anything else is a ``RedisError``."""
    if isinstance(reply, (list, tuple)) and len(reply) == 6:
        allowed, limit, remaining, retry_after, reset_after, wait = reply
        # Integer replies (nearly always every field) checked inline, one by one, which
        # is cheaper than a loop over them; the rest by _u64.
        if (
            (allowed == 1 or allowed == 0)
            and type(allowed) is int
            and type(limit) is int
            and type(remaining) is int
            and type(retry_after) is int
            and type(reset_after) is int
            and type(wait) is int
            and 0 <= limit <= U64_MAX
            and 0 <= remaining <= U64_MAX
            and 0 <= retry_after <= U64_MAX
            and 0 <= reset_after <= U64_MAX
            and 0 <= wait <= U64_MAX
        ):
            return reply
        fields = [_u64(field) for field in reply]
        if None not in fields and fields[0] in (0, 1):
            return fields  # type: ignore[return-value]
    raise RedisError(f"redis: unexpected reply {reply!r}")


class PolicyPlan:
    """A policy's script on Redis (``rate_redis_policy_prepare``): its source and SHA1,
    the arguments every call ends with, the largest cost it admits, and the counts of the
    decisions its replies held."""

    __slots__ = ("rules", "source", "sha", "config_args", "max_n", "tally")

    def __init__(self, rules: tuple[Config, ...]) -> None:
        script = rate_redis_policy_script()
        array = (rate_config * len(rules))(*(rule.to_c() for rule in rules))
        status = lib.rate_redis_policy_prepare(array, len(rules), byref(script))
        if status != RATE_OK:
            raise error_for(status, _policy_rejection(rules, status))
        self.rules = rules
        self.source, self.sha, self.config_args, self.max_n = _prepared(script)
        self.tally = Tally(len(rules))

    def check(self, n: int) -> None:
        """Refuses ``n`` above the least ``max_n``, as the in-process policy does."""
        if n > self.max_n:
            raise error_for(
                RATE_E_INSUFFICIENT_CAPACITY,
                f"{status_text(RATE_E_INSUFFICIENT_CAPACITY)} (n={n}, max_n {self.max_n})",
            )

    def args(self, n: int, now_ns: int | None, shadow: int = 0) -> list[bytes]:
        """ARGV: now ("" for the server's clock), n, 0 (no reserve), the rules', then the
        shadow mask unless 0 (docs/policies.md#shadow-rules)."""
        now = b"" if now_ns is None else str(now_ns).encode()
        mask = [str(shadow).encode()] if shadow else []
        return [now, str(n).encode(), b"0", *self.config_args, *mask]

    def decision(self, reply: object, args: list[bytes], shadow: int = 0) -> PolicyDecision:
        """The policy's decision from the rules' the script returned (one each, in rule
        order), combined as the in-process policy combines them: admitted iff every rule
        admitted, denied by the first that denied, ``limit`` and ``remaining`` the least,
        ``retry_after_ns`` and ``reset_after_ns`` the greatest, ``wait_ns`` 0; with the
        shadow rules of the mask ``shadow``, over the other rules alone. Counted as
        ``Plan.decision`` counts, each shadow rule that would have denied beside."""
        if not isinstance(reply, (list, tuple)) or len(reply) != len(self.rules):
            raise RedisError(f"redis: unexpected reply {reply!r}")
        rules = tuple(_decision(each) for each in reply)
        decided = _shadowed(rules, shadow) if shadow else self._enforced(rules)
        if _counted(args):
            would = [rule for rule in decided.shadow if not rules[rule].allowed]
            self.tally.count(decided.denied_by, would)
        return decided

    def _enforced(self, rules: tuple[Decision, ...]) -> PolicyDecision:
        """The decision of ``rules``, every one enforced."""
        denied_by = next((i for i, rule in enumerate(rules) if not rule.allowed), None)
        combined = Decision(
            denied_by is None,
            self.max_n,
            min(rule.remaining for rule in rules),
            max(rule.retry_after_ns for rule in rules),
            max(rule.reset_after_ns for rule in rules),
        )
        return PolicyDecision(combined, denied_by, rules)


def _shadowed(rules: tuple[Decision, ...], mask: int) -> PolicyDecision:
    """A policy's decision from its rules' own, the rules of ``mask`` in shadow: combined
    over the enforced rules (each its own ``limit``), admitting everything when none is."""
    enforced = [rules[i] for i in range(len(rules)) if not mask >> i & 1]
    denied_by = next((i for i, rule in enumerate(rules) if not mask >> i & 1 and not rule.allowed), None)
    combined = Decision(
        denied_by is None,
        min((rule.limit for rule in enforced), default=U64_MAX),
        min((rule.remaining for rule in enforced), default=U64_MAX),
        max((rule.retry_after_ns for rule in enforced), default=0),
        max((rule.reset_after_ns for rule in enforced), default=0),
    )
    return PolicyDecision(combined, denied_by, rules, *shadow_of(rules, mask))


def _policy_rejection(rules: tuple[Config, ...], status: int) -> str:
    """Why ``rate_redis_policy_prepare`` refused ``rules``: their count, or the first rule
    that a limiter on Redis refuses, with its reason."""
    if not 1 <= len(rules) <= RATE_POLICY_MAX_RULES:
        return f"a policy holds 1 to {RATE_POLICY_MAX_RULES} rules, not {len(rules)}"
    for index, rule in enumerate(rules):
        try:
            Plan(rule)
        except InvalidConfig as error:
            return f"rules[{index}]: {error}"
    return status_text(status)


def _u64(field: object) -> int | None:
    """A reply's field as a u64, or None."""
    if isinstance(field, (bytes, str)):
        text = field.decode("ascii", "replace") if isinstance(field, bytes) else field
        # Digits only: int() would also take "+1", " 1" or "1_0".
        field = int(text) if text.isascii() and text.isdigit() else None
    if isinstance(field, int) and not isinstance(field, bool) and 0 <= field <= U64_MAX:
        return field
    return None


def _rejection(config: Config, c_config: Any) -> str:
    """Why ``rate_redis_prepare`` refused ``config``: the in-process limiter's reason,
    or the bound of Lua's doubles."""
    reason = create_string_buffer(RATE_REASON_LEN)
    status = lib.rate_limiter_explain_config(byref(c_config), reason, RATE_REASON_LEN)
    if status == RATE_E_INVALID_CONFIG:
        return str(reason.value.decode())
    return (
        f"{config}: on Redis, burst x (period_ns / limit) and period_ns must be below "
        "2**53 ns (about 104 days), which Lua's numbers hold exactly"
    )


def _check_client(client: Any, asynchronous: bool, name: str) -> None:
    """Refuses a client that is not redis-py's, or not of the kind (sync or asyncio) the
    class ``name`` takes."""
    if not callable(getattr(client, "register_script", None)):
        raise TypeError(f"client must be a redis-py client, not {type(client).__name__}")
    execute = getattr(client, "execute_command", None)
    if execute is not None and inspect.iscoroutinefunction(execute) != asynchronous:
        raise TypeError(
            f"{name} takes "
            + ("an asyncio client (redis.asyncio.Redis)" if asynchronous else "a sync client")
            + f", not {type(client).__module__}.{type(client).__name__}"
        )


class _Sender:
    """What every client keeps: the redis-py client it sends through, and the prefix of
    the Redis keys it writes."""

    _client: Any
    _prefix: bytes
    _plan: Plan | PolicyPlan

    def enable_counts(self) -> None:
        """Turns on counting of the decisions this client receives, from now on (off by
        default, as in process). Counted here, in this process: each host counts its
        own, as a scraper expects of a per-process counter. A request Redis does not
        decide (``RedisError``) is not counted."""
        self._plan.tally.enable()

    def counts(self) -> Counts | None:
        """The counts since ``enable_counts()``, None if counting is off: ``admitted``,
        ``denied`` (a policy's per rule, by the first rule that denied), ``table_full``
        always 0."""
        return self._plan.tally.read()

    @property
    def prefix(self) -> bytes:
        """The prefix of every Redis key this writes."""
        return self._prefix

    @property
    def client(self) -> Any:
        """The redis-py client this sends through."""
        return self._client


class RedisBase(_Sender, Generic[R, B]):
    """The limiter API both clients share: each public method checks and encodes its
    request, then hands it to ``_decide`` or ``_decide_batch``, which the sync client
    runs and the asyncio one returns as a coroutine."""

    #: Whether the methods return awaitables (the middleware's ASGI side needs this).
    asynchronous = False

    _plan: Plan

    def __init__(
        self,
        client: Any,
        *,
        algorithm: str = "gcra",
        limit: int,
        period: Duration,
        burst: int | None = None,
        prefix: str | bytes,
    ) -> None:
        _check_client(client, self.asynchronous, type(self).__name__)
        if not isinstance(prefix, (str, bytes)):
            raise TypeError(f"prefix must be str or bytes, not {type(prefix).__name__}")
        self._plan = Plan(_config(algorithm, limit, period, burst))
        self._prefix = key_bytes(prefix)
        self._client = client
        self._script = client.register_script(self._plan.source)

    @property
    def config(self) -> Config:
        """The configuration every key follows."""
        return self._plan.config

    def redis_key(self, key: Key) -> bytes:
        """The Redis key holding ``key``'s state: the prefix, then ``{key}``, its Cluster
        hash tag (``str`` keys as UTF-8, as ``KeyedLimiter`` sends them)."""
        return b"%s{%s}" % (self._prefix, key_bytes(key))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._prefix!r} {self._plan.config}>"

    def _call(self, key: Key, n: object, now_ns: object, max_wait: object) -> Call:
        """A checked request: ``max_wait`` None for an acquire, else a reserve's."""
        if n.__class__ is int and n == 1 and now_ns is None and max_wait is None:
            # The commonest request, one unit now, which every limit admits (its
            # max_n is at least 1): nothing to check or convert.
            return self.redis_key(key), self._plan.one_now
        cost = u64(n, "n")
        now = None if now_ns is None else u64(now_ns, "now_ns")
        wait = 0 if max_wait is None else duration_ns(max_wait, "max_wait", saturate=True)
        self._plan.check(cost, max_wait is not None)
        return self.redis_key(key), self._plan.args(cost, now, wait)

    def _batch(self, keys: Iterable[Key], n: object, now_ns: object) -> list[Call]:
        cost = u64(n, "n")
        now = None if now_ns is None else u64(now_ns, "now_ns")
        self._plan.check(cost, False)
        args = self._plan.args(cost, now, 0)
        return [(self.redis_key(key), args) for key in keys]

    def _decide(self, call: Call) -> R:
        raise NotImplementedError

    def _decide_batch(self, calls: list[Call]) -> B:
        raise NotImplementedError

    def acquire(self, key: Key, n: int = 1, *, now_ns: int | None = None) -> R:
        """Acquires ``n`` units for ``key`` (``n == 0`` only reports the state) and
        returns the decision: by the Redis server's clock (``TIME``), or at ``now_ns`` on
        your own timeline (use one timeline per key).

        Raises ``InsufficientCapacity`` if ``n`` exceeds ``config.max_n`` (nothing is
        sent), ``RedisError`` if Redis gives no decision (never an admission)."""
        return self._decide(self._call(key, n, now_ns, None))

    def acquire_at(self, key: Key, n: int, now_ns: int) -> R:
        """``acquire(key, n, now_ns=now_ns)``."""
        return self._decide(self._call(key, n, now_ns, None))

    def reserve(self, key: Key, n: int = 1, *, max_wait: Duration, now_ns: int | None = None) -> R:
        """Reserves ``n`` units for ``key`` (GCRA only: the leaky bucket as a queue),
        admitted if the caller would wait at most ``max_wait`` (seconds, timedelta or
        ``math.inf``); ``decision.wait`` says how long. Window algorithms raise
        ``Unsupported``, whatever ``max_wait`` is, as in process."""
        return self._decide(self._call(key, n, now_ns, max_wait))

    def reserve_at(self, key: Key, n: int, now_ns: int, *, max_wait: Duration) -> R:
        """``reserve(key, n, max_wait=max_wait, now_ns=now_ns)``."""
        return self._decide(self._call(key, n, now_ns, max_wait))

    def acquire_batch(self, keys: Iterable[Key], n: int = 1, *, now_ns: int | None = None) -> B:
        """Acquires ``n`` units for each of ``keys`` in one round trip and one script
        call (on a Cluster client, one script call per hash slot, pipelined): one result
        per key, in order, each a ``Decision`` as ``acquire`` would decide it (all at one
        server time), or the ``RedisError`` (returned, not raised) of a
        key Redis could not decide, such as one holding something else. A key given
        twice is decided twice.

        Raises ``InsufficientCapacity`` (for every key alike) before sending, and
        ``RedisError`` when no reply came at all."""
        return self._decide_batch(self._batch(keys, n, now_ns))


class RedisPolicyBase(_Sender, Generic[R]):
    """The policy API both clients share: each public method checks and encodes its
    request, then hands it to ``_decide`` (or ``_reset``), which the sync client runs and
    the asyncio one returns as a coroutine."""

    asynchronous = False

    _plan: PolicyPlan

    def __init__(
        self,
        client: Any,
        rules: Iterable[Config],
        *,
        prefix: str | bytes,
        shadow: Iterable[int] = (),
    ) -> None:
        _check_client(client, self.asynchronous, type(self).__name__)
        checked = checked_rules(rules)
        self._shadow = shadow_mask(shadow, len(checked))
        if not isinstance(prefix, (str, bytes)):
            raise TypeError(f"prefix must be str or bytes, not {type(prefix).__name__}")
        self._prefix = key_bytes(prefix)
        if b"{" in self._prefix or b"}" in self._prefix:
            # The prefix would hold (part of) the Cluster hash tag of the rules' keys.
            raise InvalidConfig(f"a Redis policy's prefix must not contain '{{' or '}}': {prefix!r}")
        self._plan = PolicyPlan(checked)
        self._client = client
        self._script = client.register_script(self._plan.source)

    @property
    def rules(self) -> tuple[Config, ...]:
        """The rules, in the order given."""
        return self._plan.rules

    @property
    def max_n(self) -> int:
        """The largest ``n`` the policy can ever admit: the least of its rules'
        ``max_n`` (a larger one is an ``InsufficientCapacity`` error)."""
        return self._plan.max_n

    def set_shadow(self, rules: Iterable[int]) -> None:
        """Makes the rules of these indices this client's shadow rules, as
        ``Policy.set_shadow`` does: the script decides them and reports their would-be
        denials (``shadow_denied_by``), and they never deny (docs/policies.md#shadow-rules).
        The shadow rules are this client's, sent with each call, never stored in Redis:
        give every client of the policy the same. Raises ``InvalidConfig`` (a
        ``ValueError``) for an index outside the rules; nothing changes then."""
        self._shadow = shadow_mask(rules, len(self._plan.rules))

    @property
    def shadow(self) -> tuple[int, ...]:
        """The shadow rules' indices, in order: empty when every rule is enforced."""
        return indices(self._shadow)

    @property
    def capacity(self) -> int:
        """Deprecated alias of ``max_n``: ``capacity`` now means only the keys a table
        holds."""
        renamed(f"{type(self).__name__}.capacity", f"{type(self).__name__}.max_n")
        return self.max_n

    def redis_keys(self, key: Key) -> list[bytes]:
        """The Redis keys holding ``key``'s rules' states, in rule order: rule ``i`` at
        ``prefix{=key}:i``, all with the hash tag ``=key``, so in one Cluster slot."""
        common = b"%s{=%s}:" % (self._prefix, key_bytes(key))
        return [common + str(index).encode() for index in range(len(self._plan.rules))]

    def __repr__(self) -> str:
        rules = ", ".join(map(str, self._plan.rules))
        return f"<{type(self).__name__} {self._prefix!r} [{rules}]>"

    def _decide(self, call: PolicyCall) -> R:
        raise NotImplementedError

    def _reset(self, redis_keys: list[bytes]) -> Any:
        raise NotImplementedError

    def acquire(self, key: Key, n: int = 1, *, now_ns: int | None = None) -> R:
        """Acquires ``n`` units for ``key`` from every rule, or from none (``n == 0`` only
        reports), in one script call deciding every rule at one time: by the Redis
        server's clock (``TIME``), or at ``now_ns`` on your own timeline (one per key).
        Returns a ``PolicyDecision``, the in-process ``Policy``'s for the same times.

        Raises ``InsufficientCapacity`` if ``n`` exceeds ``max_n`` (nothing is sent),
        ``RedisError`` if Redis gives no decision (never an admission; a rule's key
        holding something else is one, and nothing is written)."""
        cost = u64(n, "n")
        now = None if now_ns is None else u64(now_ns, "now_ns")
        self._plan.check(cost)
        shadow = self._shadow
        return self._decide((self.redis_keys(key), self._plan.args(cost, now, shadow), shadow))

    def acquire_at(self, key: Key, n: int, now_ns: int) -> R:
        """``acquire(key, n, now_ns=now_ns)``."""
        return self.acquire(key, n, now_ns=now_ns)

    def reset(self, key: Key) -> Any:
        """Deletes ``key``'s state in every rule (one ``DEL`` of its rules' keys), so its
        next request finds every rule full; other keys keep theirs. Raises ``RedisError``
        if Redis does not answer."""
        return self._reset(self.redis_keys(key))
