"""What the WSGI and ASGI middleware share: from a request to a verdict and headers."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._convert import u64
from .._decision import Decision
from .._errors import RedisError, TableFull
from .._limiter import Key, KeyedLimiter, Limiter
from .._redis_core import RedisBase
from ._headers import policy_header, ratelimit_header, retry_after, seconds_up, sf_string

Request = TypeVar("Request")
App = TypeVar("App")

TOO_MANY_REQUESTS = 429
SERVICE_UNAVAILABLE = 503
REASONS = {TOO_MANY_REQUESTS: "Too Many Requests", SERVICE_UNAVAILABLE: "Service Unavailable"}

#: Where the middleware reports a limiter that could not decide (Redis down or erring).
logger = logging.getLogger("librate.middleware")

#: What a middleware can limit with: in process, or in Redis (librate.redis).
AnyLimiter = Limiter | KeyedLimiter | RedisBase[Any, Any]


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
        policy: str,
        clock: Callable[[], int] | None,
        fail_open: bool,
        asynchronous: bool,
    ) -> None:
        if not isinstance(limiter, (Limiter, KeyedLimiter, RedisBase)):
            raise TypeError(
                "limiter must be a Limiter, KeyedLimiter, RedisLimiter or AsyncRedisLimiter, "
                f"not {type(limiter).__name__}"
            )
        if isinstance(limiter, Limiter) and key is not None:
            raise TypeError("key= needs a KeyedLimiter; a Limiter has one limit for all")
        if isinstance(limiter, RedisBase) and limiter.asynchronous != asynchronous:
            raise TypeError(
                "ASGI takes an AsyncRedisLimiter (a RedisLimiter would block the event loop)"
                if asynchronous
                else "WSGI takes a RedisLimiter, not an AsyncRedisLimiter"
            )
        self._cost = u64(cost, "cost")
        if self._cost > limiter.config.capacity:
            raise ValueError(
                f"cost {self._cost} exceeds the limiter's capacity {limiter.config.capacity}"
            )
        self._limiter = limiter
        self._key = key or default_key
        self._name = sf_string(policy)
        self._clock = clock
        self._fail_open = fail_open
        self._policy = policy_header(self._name, limiter.config)
        self._table_full = Verdict(
            SERVICE_UNAVAILABLE,
            [("Retry-After", str(max(seconds_up(limiter.config.period_ns), 1)))],
        )

    def check(self, request: Request) -> Verdict | None:
        """The verdict for one request; None lets it through untouched."""
        now_ns = None if self._clock is None else self._clock()
        limiter = self._limiter
        if isinstance(limiter, Limiter):
            return self._verdict(limiter.acquire(self._cost, now_ns=now_ns))
        key = self._key(request)
        if key is None:
            return None
        try:
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

    def _verdict(self, decision: Decision) -> Verdict:
        headers = [
            ("RateLimit-Policy", self._policy),
            ("RateLimit", ratelimit_header(self._name, decision)),
        ]
        if decision.allowed:
            return Verdict(None, headers)
        return Verdict(TOO_MANY_REQUESTS, [("Retry-After", retry_after(decision)), *headers])

    def _undecided(self, error: RedisError) -> Verdict | None:
        """Redis gave no decision: let the request through unlimited (fail open), or
        answer it 503 (fail closed); logged either way."""
        if self._fail_open:
            logger.warning("librate: rate limiter failed, request served unlimited: %s", error)
            return None
        logger.error("librate: rate limiter failed, request refused with 503: %s", error)
        return _UNAVAILABLE


class RateLimitMiddleware(Generic[App, Request]):
    """The constructor both middlewares share.

    - ``app``: the application to protect.
    - ``limiter``: a ``KeyedLimiter`` (one limit per key), a ``Limiter`` (one limit for
      every request), or a limit per key kept in Redis, shared across hosts
      (``librate.redis``): a ``RedisLimiter`` for WSGI, an ``AsyncRedisLimiter`` for ASGI.
    - ``key``: a function of the request (WSGI environ / ASGI scope) giving its key, str
      or bytes, or None to let that request through unlimited and without headers.
      Default: the client address. Not with a ``Limiter``.
    - ``cost``: units each request takes (default 1).
    - ``policy``: the policy name in the ``RateLimit`` headers (default "default").
    - ``clock``: a function giving ``now_ns`` on the limiter's timeline (default: the
      library's CLOCK_MONOTONIC; for a Redis limiter, the Redis server's clock); for
      tests and simulations.
    - ``fail_open``: what to do with a request the limiter cannot decide. When a
      ``KeyedLimiter`` is full of live keys, let a request with a new key through
      without headers (True), or answer it 503 with ``Retry-After`` of one period (False,
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
        policy: str = "default",
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
            clock=clock,
            fail_open=fail_open,
            asynchronous=self.asynchronous,
        )
