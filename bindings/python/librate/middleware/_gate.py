"""What the WSGI and ASGI middleware share: from a request to a verdict and headers."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._convert import u64
from .._decision import Decision, PolicyDecision
from .._errors import RedisError, TableFull
from .._keyed_policy import KeyedPolicy, KeyedRule
from .._limiter import Config, Key, KeyedLimiter, Limiter
from .._policy import Policy
from .._redis_core import RedisBase
from ._headers import (
    binding_rule,
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

#: Where the middleware reports a limiter that could not decide (Redis down or erring).
logger = logging.getLogger("librate.middleware")

#: What a middleware can limit with: in process (one limit, one per key, a policy of
#: several, or a keyed policy of per-key and global rules), or in Redis (librate.redis).
AnyLimiter = Limiter | KeyedLimiter | Policy | KeyedPolicy | RedisBase[Any, Any]
#: The limiters of several rules, whose headers name each rule.
_POLICIES = (Policy, KeyedPolicy)


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


class Gate(Generic[Request]):
    """Decides requests for a middleware (arguments: see ``RateLimitMiddleware``)."""

    def __init__(
        self,
        limiter: AnyLimiter,
        *,
        key: Callable[[Request], Key | None] | None,
        default_key: Callable[[Request], Key | None],
        cost: int,
        policy: str | None,
        rule_names: Sequence[str] | None,
        clock: Callable[[], int] | None,
        fail_open: bool,
        asynchronous: bool,
    ) -> None:
        if not isinstance(limiter, (Limiter, KeyedLimiter, Policy, KeyedPolicy, RedisBase)):
            raise TypeError(
                "limiter must be a Limiter, KeyedLimiter, Policy, KeyedPolicy, RedisLimiter "
                f"or AsyncRedisLimiter, not {type(limiter).__name__}"
            )
        if isinstance(limiter, (Limiter, Policy)) and key is not None:
            raise TypeError(
                f"key= needs a KeyedLimiter or KeyedPolicy; a {type(limiter).__name__} has "
                "one limit for all"
            )
        if isinstance(limiter, RedisBase) and limiter.asynchronous != asynchronous:
            raise TypeError(
                "ASGI takes an AsyncRedisLimiter (a RedisLimiter would block the event loop)"
                if asynchronous
                else "WSGI takes a RedisLimiter, not an AsyncRedisLimiter"
            )
        rules, names = _named_rules(limiter, policy, rule_names)
        capacity = min(rule.capacity for rule in rules)
        self._cost = u64(cost, "cost")
        if self._cost > capacity:
            raise ValueError(f"cost {self._cost} exceeds the limiter's capacity {capacity}")
        self._limiter = limiter
        self._key = key or default_key
        self._names = [sf_string(name) for name in names]
        self._clock = clock
        self._fail_open = fail_open
        self._policy = policies_header(self._names, rules)
        self._table_full = Verdict(
            SERVICE_UNAVAILABLE,
            [("Retry-After", str(max(seconds_up(rules[0].period_ns), 1)))],
        )

    def check(self, request: Request) -> Verdict | None:
        """The verdict for one request; None lets it through untouched."""
        now_ns = None if self._clock is None else self._clock()
        limiter = self._limiter
        if isinstance(limiter, Limiter):
            return self._verdict(limiter.acquire(self._cost, now_ns=now_ns))
        if isinstance(limiter, Policy):
            return self._policy_verdict(limiter.acquire(self._cost, now_ns=now_ns))
        key = self._key(request)
        if key is None:
            return None
        try:
            if isinstance(limiter, KeyedPolicy):
                return self._policy_verdict(limiter.acquire(key, self._cost, now_ns=now_ns))
            decision = limiter.acquire(key, self._cost, now_ns=now_ns)
        except TableFull:
            return None if self._fail_open else self._table_full
        except RedisError as error:
            return self._undecided(error)
        return self._verdict(decision)

    async def check_async(self, request: Request) -> Verdict | None:
        """``check`` for ASGI: awaits an ``AsyncRedisLimiter``; others decide at once."""
        limiter = self._limiter
        if not isinstance(limiter, RedisBase):
            return self.check(request)
        key = self._key(request)
        if key is None:
            return None
        now_ns = None if self._clock is None else self._clock()
        try:
            decision = await limiter.acquire(key, self._cost, now_ns=now_ns)
        except RedisError as error:
            return self._undecided(error)
        return self._verdict(decision)

    def _verdict(self, decision: Decision, rule: int = 0, own: Decision | None = None) -> Verdict:
        """The verdict on ``decision``, whose ``RateLimit`` reports rule ``rule`` with its
        own decision ``own`` (a single limiter's: ``decision`` itself)."""
        headers = [
            ("RateLimit-Policy", self._policy),
            ("RateLimit", ratelimit_header(self._names[rule], own or decision)),
        ]
        if decision.allowed:
            return Verdict(None, headers)
        return Verdict(TOO_MANY_REQUESTS, [("Retry-After", retry_after(decision)), *headers])

    def _policy_verdict(self, decision: PolicyDecision) -> Verdict:
        rule = binding_rule(decision)
        return self._verdict(decision.decision, rule, decision.rules[rule])

    def _undecided(self, error: RedisError) -> Verdict | None:
        """Redis gave no decision: let the request through unlimited (fail open), or
        answer it 503 (fail closed); logged either way."""
        if self._fail_open:
            logger.warning("librate: rate limiter failed, request served unlimited: %s", error)
            return None
        logger.error("librate: rate limiter failed, request refused with 503: %s", error)
        return _UNAVAILABLE


def _named_rules(
    limiter: AnyLimiter, policy: str | None, rule_names: Sequence[str] | None
) -> tuple[tuple[Config, ...], list[str]]:
    """The rules the headers advertise and their names: a (keyed) policy's rules named by
    ``rule_names`` ("rule0", "rule1"… by default), or a limiter's one rule named by
    ``policy`` ("default" by default)."""
    if not isinstance(limiter, _POLICIES):
        if rule_names is not None:
            raise TypeError("rule_names= names a Policy's rules; name a limiter's with policy=")
        return (limiter.config,), ["default" if policy is None else policy]
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
      or a limit per key kept in Redis, shared across hosts (``librate.redis``): a
      ``RedisLimiter`` for WSGI, an ``AsyncRedisLimiter`` for ASGI.
    - ``key``: a function of the request (WSGI environ / ASGI scope) giving its key, str
      or bytes, or None to let that request through unlimited and without headers.
      Default: the client address. Not with a ``Limiter`` or a ``Policy``. A
      ``KeyedPolicy`` takes ``cost`` units of each rule.
    - ``cost``: units each request takes (default 1).
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
      decision (``RedisError``: down, past the client's timeout, an error reply), let the
      request through without headers, logged as a warning to the ``librate.middleware``
      logger (True), or answer it 503, logged as an error (False, the default).
    """

    #: Whether the middleware runs in an event loop (ASGI): it then awaits its limiter.
    asynchronous = False

    @staticmethod
    def client_address(request: Any) -> Key | None:
        raise NotImplementedError

    def __init__(
        self,
        app: App,
        limiter: AnyLimiter,
        *,
        key: Callable[[Request], Key | None] | None = None,
        cost: int = 1,
        policy: str | None = None,
        rule_names: Sequence[str] | None = None,
        clock: Callable[[], int] | None = None,
        fail_open: bool = False,
    ) -> None:
        self.app = app
        self._gate: Gate[Request] = Gate(
            limiter,
            key=key,
            default_key=self.client_address,
            cost=cost,
            policy=policy,
            rule_names=rule_names,
            clock=clock,
            fail_open=fail_open,
            asynchronous=self.asynchronous,
        )
