"""What the WSGI and ASGI middleware share: from a request to a verdict and headers."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .._convert import u64
from .._decision import Decision, PolicyDecision
from .._errors import RedisError, TableFull
from .._keyed_policy import KeyedPolicy, KeyedRule
from .._lease import Holder
from .._limiter import Config, Key, KeyedLimiter, Limiter
from .._policy import Policy
from .._redis_core import RedisBase, RedisPolicyBase
from ._client import client_key, trusted_hops

if TYPE_CHECKING:
    # Only for the types: the module needs redis-py, which librate.middleware never
    # imports (see `_keyed_leased`).
    from .._keyed_leased import _KeyedLeased
from ._headers import (
    binding_rule,
    field_name,
    policies_header,
    ratelimit_header,
    retry_after,
    seconds_up,
    sf_string,
)

Request = TypeVar("Request")
App = TypeVar("App")

TOO_MANY_REQUESTS = 429
SERVICE_UNAVAILABLE = 503
REASONS = {TOO_MANY_REQUESTS: "Too Many Requests", SERVICE_UNAVAILABLE: "Service Unavailable"}

#: Where the middleware reports each denial (and, in shadow, each would-be denial), and a
#: limiter that could not decide (Redis down or erring).
logger = logging.getLogger("librate.middleware")

#: What a middleware can limit with: in process (one limit, one per key, a policy of
#: several, or a keyed policy of per-key and global rules), in Redis (librate.redis:
#: one limit per key, or a policy of several per key), or leased from Redis
#: (librate.lease: one global limit, decided in process from this holder's share; or a
#: limit per key, its hot keys decided in process and the rest in Redis).
AnyLimiter = (
    Limiter
    | KeyedLimiter
    | Policy
    | KeyedPolicy
    | RedisBase[Any, Any]
    | RedisPolicyBase[Any]
    | Holder
    | "_KeyedLeased"
)
#: The limiters of several rules, whose headers name each rule.
_POLICIES = (Policy, KeyedPolicy, RedisPolicyBase)
#: The limiters of one limit (or policy) for all requests, which take no key.
_UNKEYED = (Limiter, Policy, Holder)


def _keyed_leased() -> tuple[type, ...]:
    """The keyed leased limiters' class, once ``librate.lease`` is imported: it needs
    redis-py, which the middleware never imports, and no such limiter exists before."""
    module = sys.modules.get("librate._keyed_leased")
    return () if module is None else (module._KeyedLeased,)


def _redis_kinds() -> tuple[type, ...]:
    """The limiters that may ask Redis for a request's decision, sync or asyncio."""
    return (RedisBase, RedisPolicyBase, *_keyed_leased())


def _leased_kinds() -> tuple[type, ...]:
    """The leased limiters, whose rule is a ``LeaseRule``."""
    return (Holder, *_keyed_leased())

#: How a gate asks its limiter: (the request's key, None for an unkeyed limiter; now_ns,
#: None for the limiter's clock) to a ``Decision`` or ``PolicyDecision``, or, from an
#: asyncio Redis limiter, an awaitable of one.
Acquire = Callable[[Any, int | None], Any]


@dataclass(frozen=True)
class Verdict:
    """Pass the request on with ``headers`` added (``status`` None), or answer it with
    ``status`` and ``headers``."""

    status: int | None
    headers: list[tuple[str, str]]

    @property
    def body(self) -> bytes:
        assert self.status is not None
        return f"{self.status} {REASONS[self.status]}\n".encode()


#: The answer when Redis gives no decision and the middleware fails closed.
_UNAVAILABLE = Verdict(SERVICE_UNAVAILABLE, [])
#: A request a limiter in shadow lets through with no field to add.
_SERVED = Verdict(None, [])

#: The log records of a denial: by a rule; by a rule of a middleware in shadow; by a
#: policy's shadow rule (docs/policies.md#shadow-rules), the request's fate the enforced
#: rules'. Each takes the rule's index and its name.
_DENIED = "librate: rule %d %s denied the request"
_WOULD_DENY = "librate: rule %d %s would deny the request (shadow)"
_SHADOW_RULE_WOULD_DENY = "librate: rule %d %s would deny the request (shadow rule)"


class Gate(Generic[Request]):
    """Decides requests for a middleware (arguments: see ``RateLimitMiddleware``)."""

    def __init__(
        self,
        limiter: AnyLimiter,
        *,
        key: Callable[[Request], Key | None] | None,
        default_key: Callable[[Request], Key | None],
        cost: int | Sequence[int],
        policy: str | None,
        rule_names: Sequence[str] | None,
        clock: Callable[[], int] | None,
        fail_open: bool,
        asynchronous: bool,
        shadow: bool = False,
        rule_header: str | None = None,
        log_level: int = logging.INFO,
    ) -> None:
        if not isinstance(limiter, (Limiter, KeyedLimiter, Policy, KeyedPolicy, Holder, *_redis_kinds())):
            raise TypeError(
                "limiter must be a Limiter, KeyedLimiter, Policy, KeyedPolicy, RedisLimiter, "
                "AsyncRedisLimiter, RedisPolicy, AsyncRedisPolicy, LeasedLimiter, "
                "AsyncLeasedLimiter, KeyedLeasedLimiter or AsyncKeyedLeasedLimiter, "
                f"not {type(limiter).__name__}"
            )
        if isinstance(limiter, _UNKEYED) and key is not None:
            raise TypeError(
                f"key= needs a KeyedLimiter or KeyedPolicy; a {type(limiter).__name__} has "
                "one limit for all"
            )
        if isinstance(limiter, _redis_kinds()) and limiter.asynchronous != asynchronous:
            kind = type(limiter).__name__.removeprefix("Async")
            raise TypeError(
                f"ASGI takes an Async{kind} (a {kind} would block the event loop)"
                if asynchronous
                else f"WSGI takes a {kind}, not an Async{kind}"
            )
        rules, names = _named_rules(limiter, policy, rule_names)
        self._acquire, self._counted = _acquirer(limiter, cost, rules)
        self._keyed = not isinstance(limiter, _UNKEYED)
        self._awaits = isinstance(limiter, _redis_kinds()) and limiter.asynchronous
        self._key = key or default_key
        self._names = [sf_string(name) for name in names]
        self._rule_names = names
        self._clock = clock
        # A limiter in shadow refuses nothing, not even a request it cannot decide.
        self._fail_open = fail_open or shadow
        self._shadow = shadow
        self._rule_header = None if rule_header is None else field_name(rule_header)
        self._log_level = log_level
        self._policy = policies_header(self._names, rules)
        self._table_full = Verdict(
            SERVICE_UNAVAILABLE,
            [("Retry-After", str(max(seconds_up(rules[0].period_ns), 1)))],
        )

    def check(self, request: Request) -> Verdict | None:
        """The verdict for one request; None lets it through untouched."""
        key = None
        if self._keyed:
            key = self._key(request)
            if key is None:
                return None
        now_ns = None if self._clock is None else self._clock()
        try:
            decision = self._acquire(key, now_ns)
        except TableFull:
            return None if self._fail_open else self._table_full
        except RedisError as error:
            return self._undecided(error)
        return self._decided(decision)

    async def check_async(self, request: Request) -> Verdict | None:
        """``check`` for ASGI: awaits an asyncio Redis limiter; others decide at once."""
        if not self._awaits:
            return self.check(request)
        key = self._key(request)
        if key is None:
            return None
        now_ns = None if self._clock is None else self._clock()
        try:
            decision = await self._acquire(key, now_ns)
        except RedisError as error:
            return self._undecided(error)
        return self._decided(decision)

    def _decided(self, decision: Decision | PolicyDecision) -> Verdict:
        """The verdict on a limiter's decision: a policy's ``RateLimit`` reports the rule
        that binds, of the enforced rules the request costs. In shadow the request always
        passes, without the fields of a limit that is not in force."""
        if not isinstance(decision, PolicyDecision):
            denied_by = None if decision.allowed else 0
            return self._verdict(decision, 0, decision, denied_by, None)
        counted = self._counted
        if decision.shadow:
            # A shadow rule binds nothing: RateLimit reports an enforced rule, if any.
            among = range(len(decision.rules)) if counted is None else counted
            counted = tuple(index for index in among if index not in decision.shadow)
        rule = None if counted == () else binding_rule(decision, counted)
        own = None if rule is None else decision.rules[rule]
        return self._verdict(
            decision.decision, rule, own, decision.denied_by, decision.shadow_denied_by
        )

    def _verdict(
        self,
        combined: Decision,
        rule: int | None,
        own: Decision | None,
        denied_by: int | None,
        shadow_denied_by: int | None,
    ) -> Verdict:
        """The verdict on ``combined``, whose ``RateLimit`` reports rule ``rule`` with
        its own decision ``own`` (None: no rule to report), denied by rule ``denied_by``,
        a shadow rule ``shadow_denied_by`` denying on its own."""
        named = []
        if denied_by is not None and not combined.allowed:
            named = self._denied_by(denied_by, _WOULD_DENY if self._shadow else _DENIED)
        if shadow_denied_by is not None:
            would = self._denied_by(shadow_denied_by, _SHADOW_RULE_WOULD_DENY)
            named = named or would
        fields = []
        if not self._shadow and rule is not None and own is not None:
            fields = [
                ("RateLimit-Policy", self._policy),
                ("RateLimit", ratelimit_header(self._names[rule], own)),
            ]
        if combined.allowed or self._shadow:
            return Verdict(None, [*fields, *named]) if fields or named else _SERVED
        return Verdict(TOO_MANY_REQUESTS, [("Retry-After", retry_after(combined)), *fields, *named])

    def _denied_by(self, rule: int, message: str) -> list[tuple[str, str]]:
        """Logs ``message`` of rule ``rule`` (it denied the request, or would have), and
        returns the rule header naming it, if the middleware sends one. The rule is the
        first that denied, in the order given: the one a policy's counts charge the
        denial to (``RateLimit`` may report another: of the rules that denied, the
        longest wait)."""
        name = self._names[rule]
        extra = {"rule": rule, "rule_name": self._rule_names[rule], "shadow": message != _DENIED}
        logger.log(self._log_level, message, rule, name, extra=extra)
        return [] if self._rule_header is None else [(self._rule_header, name)]

    def _undecided(self, error: RedisError) -> Verdict | None:
        """Redis gave no decision: let the request through unlimited (fail open), or
        answer it 503 (fail closed); logged either way."""
        if self._fail_open:
            logger.warning("librate: rate limiter failed, request served unlimited: %s", error)
            return None
        logger.error("librate: rate limiter failed, request refused with 503: %s", error)
        return _UNAVAILABLE


def _acquirer(
    limiter: AnyLimiter, cost: int | Sequence[int], rules: tuple[Config, ...]
) -> tuple[Acquire, tuple[int, ...] | None]:
    """How a gate asks ``limiter`` for ``cost`` (units of every rule, or a sequence of
    one cost per rule), and the rules a request costs (None: every rule). The cost is
    checked here, once, so that no request meets a cost error."""
    if isinstance(cost, Sequence) and not isinstance(cost, (str, bytes)):
        costs = _per_rule_costs(limiter, cost, rules)
        counted = tuple(index for index, each in enumerate(costs) if each)
        if isinstance(limiter, Policy):
            return (lambda key, now_ns: limiter.acquire_costs(costs, now_ns=now_ns)), counted
        assert isinstance(limiter, KeyedPolicy)
        return (lambda key, now_ns: limiter.acquire_costs(key, costs, now_ns=now_ns)), counted
    n = u64(cost, "cost")
    max_n = min(rule.max_n for rule in rules)
    if n > max_n:
        raise ValueError(f"cost {n} exceeds the limiter's max_n {max_n}")
    if isinstance(limiter, _UNKEYED):
        return (lambda key, now_ns: limiter.acquire(n, now_ns=now_ns)), None
    return (lambda key, now_ns: limiter.acquire(key, n, now_ns=now_ns)), None


def _per_rule_costs(
    limiter: AnyLimiter, cost: Sequence[int], rules: tuple[Config, ...]
) -> tuple[int, ...]:
    """``cost``, a sequence of one cost per rule, checked: for an in-process policy,
    each within its rule's ``max_n``, not all zero."""
    if isinstance(limiter, RedisPolicyBase):
        raise TypeError(
            f"cost= per rule is not supported on Redis: a {type(limiter).__name__} takes "
            "one cost for every rule (cost=n)"
        )
    if not isinstance(limiter, (Policy, KeyedPolicy)):
        raise TypeError(
            f"cost= per rule needs a Policy or KeyedPolicy; a {type(limiter).__name__} "
            "has one rule (cost=n)"
        )
    costs = tuple(u64(each, f"cost[{index}]") for index, each in enumerate(cost))
    if len(costs) != len(rules):
        raise ValueError(f"cost has {len(costs)} costs for {len(rules)} rules: give one per rule")
    for index, (each, rule) in enumerate(zip(costs, rules, strict=True)):
        if each > rule.max_n:
            raise ValueError(f"cost[{index}] {each} exceeds rule {index}'s max_n {rule.max_n}")
    if not any(costs):
        raise ValueError("cost is all zero: a request would take from no rule")
    return costs


def _named_rules(
    limiter: AnyLimiter, policy: str | None, rule_names: Sequence[str] | None
) -> tuple[tuple[Config, ...], list[str]]:
    """The rules the headers advertise and their names: a (keyed) policy's rules named by
    ``rule_names`` ("rule0", "rule1"… by default), or a limiter's one rule named by
    ``policy`` ("default" by default): a leased limiter's, the global rule."""
    if not isinstance(limiter, _POLICIES):
        if rule_names is not None:
            raise TypeError("rule_names= names a Policy's rules; name a limiter's with policy=")
        config = limiter.rule.config if isinstance(limiter, _leased_kinds()) else limiter.config
        return (config,), ["default" if policy is None else policy]
    if policy is not None:
        raise TypeError("policy= names a limiter's one rule; name a Policy's with rule_names=")
    rules = tuple(
        rule.config if isinstance(rule, KeyedRule) else rule for rule in limiter.rules
    )
    if rule_names is None:
        return rules, [f"rule{index}" for index in range(len(rules))]
    if isinstance(rule_names, str):
        raise TypeError("rule_names must be a sequence of names, one per rule, not a str")
    names = list(rule_names)
    if len(names) != len(rules):
        raise ValueError(f"rule_names has {len(names)} names for {len(rules)} rules")
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"rule names must be str, not {type(name).__name__}")
    return rules, names


class RateLimitMiddleware(Generic[App, Request]):
    """The constructor both middlewares share.

    - ``app``: the application to protect.
    - ``limiter``: a ``KeyedLimiter`` (one limit per key), a ``Limiter`` (one limit for
      every request), a ``Policy`` (several limits, all or nothing, for every request),
      a ``KeyedPolicy`` (per-key and global rules, all or nothing, for the request's key),
      or limits per key kept in Redis, shared across hosts (``librate.redis``): one
      limit, a ``RedisLimiter`` for WSGI, an ``AsyncRedisLimiter`` for ASGI; or a policy
      of several, a ``RedisPolicy`` for WSGI, an ``AsyncRedisPolicy`` for ASGI; or a
      global limit leased from Redis (``librate.lease``, docs/leases.md), a
      ``LeasedLimiter`` or ``AsyncLeasedLimiter``: one limit for every request, decided
      in process from this holder's share (or its fallback) without waiting on Redis,
      so either serves WSGI and ASGI alike; or a limit per key leased from Redis, a
      ``KeyedLeasedLimiter`` for WSGI, an ``AsyncKeyedLeasedLimiter`` for ASGI (a key not
      hot here is decided in Redis). With ``shadow``, a whole leased limiter is trialled
      before it is enforced.
    - ``key``: a function of the request (WSGI environ / ASGI scope) giving its key, str
      or bytes, or None to let that request through unlimited and without headers.
      Default: the client's IP address (see ``trusted_proxies``). Not with a ``Limiter``,
      a ``Policy`` or a leased limiter.
    - ``trusted_proxies``: how many proxies the operator runs in front of the app, each
      appending the address it received the request from to ``X-Forwarded-For``. The
      default key is then the entry that many from the right (1: the last), or the peer
      address if the header has fewer entries or that one is no IP address; entries
      further left were written by the client and are never read. 0 (the default)
      trusts no header: the key is the peer address.
    - ``cost``: units each request takes of every rule (default 1), at most the least
      rule's ``max_n``. Or, for a ``Policy`` or ``KeyedPolicy``, a sequence of one cost
      per rule (``[1, 0, 0, 1]``), each at most its rule's ``max_n`` and not all 0: a rule
      of cost 0 takes no part, and ``RateLimit`` reports the binding rule of those the
      request costs. A Redis policy takes one cost for every rule (a sequence is a
      ``TypeError``).
    - ``policy``: the policy name in the ``RateLimit`` headers (default "default"). Not
      with a ``Policy``, whose rules each have a name:
    - ``rule_names``: a (keyed) policy's rules' names, one per rule, in order (default
      "rule0", "rule1"…). ``RateLimit-Policy`` lists every rule; ``RateLimit`` reports
      the one that binds: on a denial, the rule that denied with the longest
      ``retry_after`` (so its ``t`` is ``Retry-After``); when admitted, the rule with the
      least ``remaining``, of those the one with the longest ``reset_after``.
    - ``clock``: a function giving ``now_ns`` on the limiter's timeline (default: the
      library's CLOCK_MONOTONIC; for a Redis limiter, the Redis server's clock); for
      tests and simulations.
    - ``fail_open``: what to do with a request the limiter cannot decide. When a
      ``KeyedLimiter`` (or a ``KeyedPolicy``'s table) is full of live keys, let a
      request with a new key through without headers (True), or answer it 503 with
      ``Retry-After`` of one period (False,
      the default: an attacker who fills the table gains nothing). When Redis gives no
      decision (``RedisError``: down, past the client's timeout, an error reply; for a
      limiter or a policy alike), let the
      request through without headers, logged as a warning to the ``librate.middleware``
      logger (True), or answer it 503, logged as an error (False, the default).
    - ``shadow``: run the limiter without enforcing it (False: enforce, the default). It
      still decides, and counts, every request, and logs each would-be denial; every
      request is served, without ``RateLimit`` fields (the limit is not in force, so no
      client should slow down for it), and a request it cannot decide is served too.
      Use it to see what a new limit would do before it is enforced.
    - ``rule_header``: the name of a response field that names the rule that denied
      (default None: no such field). The IETF draft has no field for it: choose one,
      such as ``"RateLimit-Rule"``. Its value is the rule's name as an sf-string
      (``"minute"``), on a 429, and in shadow on a request that would have been denied.
    - ``log_level``: the level of the record logged to the ``librate.middleware`` logger
      for each denial (default ``logging.INFO``): ``librate: rule 1 "minute" denied the
      request``, or in shadow ``librate: rule 1 "minute" would deny the request
      (shadow)``, with the attributes ``rule`` (the index), ``rule_name`` and
      ``shadow``. The rule named (log and ``rule_header``) is the first, in the order
      given, that denied: the rule a policy's counts charge the denial to. ``RateLimit``
      reports the one with the longest wait, which may be another.
    """

    #: Whether the middleware runs in an event loop (ASGI): it then awaits its limiter.
    asynchronous = False

    @staticmethod
    def client_address(request: Any) -> str | None:
        """The peer address of a request, as the server gives it, None if it gives none.
        ``WSGIRateLimit`` and ``ASGIRateLimit`` say where they read it."""
        raise NotImplementedError

    @staticmethod
    def forwarded_for(request: Any) -> list[str]:
        """The request's ``X-Forwarded-For`` lines, in order (latin-1 text)."""
        raise NotImplementedError

    def __init__(
        self,
        app: App,
        limiter: AnyLimiter,
        *,
        key: Callable[[Request], Key | None] | None = None,
        cost: int | Sequence[int] = 1,
        policy: str | None = None,
        rule_names: Sequence[str] | None = None,
        clock: Callable[[], int] | None = None,
        fail_open: bool = False,
        trusted_proxies: int = 0,
        shadow: bool = False,
        rule_header: str | None = None,
        log_level: int = logging.INFO,
    ) -> None:
        self.app = app
        self._gate: Gate[Request] = Gate(
            limiter,
            key=key,
            default_key=client_key(
                self.client_address, self.forwarded_for, trusted_hops(trusted_proxies)
            ),
            cost=cost,
            policy=policy,
            rule_names=rule_names,
            clock=clock,
            fail_open=fail_open,
            asynchronous=self.asynchronous,
            shadow=shadow,
            rule_header=rule_header,
            log_level=log_level,
        )
