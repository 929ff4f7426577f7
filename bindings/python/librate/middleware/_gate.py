"""What the WSGI and ASGI middleware share: from a request to a verdict and headers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._convert import u64
from .._errors import TableFull
from .._limiter import Key, KeyedLimiter, Limiter
from ._headers import policy_header, ratelimit_header, retry_after, seconds_up, sf_string

Request = TypeVar("Request")
App = TypeVar("App")

TOO_MANY_REQUESTS = 429
SERVICE_UNAVAILABLE = 503
REASONS = {TOO_MANY_REQUESTS: "Too Many Requests", SERVICE_UNAVAILABLE: "Service Unavailable"}


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


class Gate(Generic[Request]):
    """Decides requests for a middleware (arguments: see ``RateLimitMiddleware``)."""

    def __init__(
        self,
        limiter: Limiter | KeyedLimiter,
        *,
        key: Callable[[Request], Key | None] | None,
        default_key: Callable[[Request], Key | None],
        cost: int,
        policy: str,
        clock: Callable[[], int] | None,
        fail_open: bool,
    ) -> None:
        if not isinstance(limiter, (Limiter, KeyedLimiter)):
            raise TypeError(
                f"limiter must be a Limiter or KeyedLimiter, not {type(limiter).__name__}"
            )
        if isinstance(limiter, Limiter) and key is not None:
            raise TypeError("key= needs a KeyedLimiter; a Limiter has one limit for all")
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
        if isinstance(limiter, KeyedLimiter):
            key = self._key(request)
            if key is None:
                return None
            try:
                decision = limiter.acquire(key, self._cost, now_ns=now_ns)
            except TableFull:
                return None if self._fail_open else self._table_full
        else:
            decision = limiter.acquire(self._cost, now_ns=now_ns)
        headers = [
            ("RateLimit-Policy", self._policy),
            ("RateLimit", ratelimit_header(self._name, decision)),
        ]
        if decision.allowed:
            return Verdict(None, headers)
        return Verdict(TOO_MANY_REQUESTS, [("Retry-After", retry_after(decision)), *headers])


class RateLimitMiddleware(Generic[App, Request]):
    """The constructor both middlewares share.

    - ``app``: the application to protect.
    - ``limiter``: a ``KeyedLimiter`` (one limit per key) or a ``Limiter`` (one limit for
      every request).
    - ``key``: a function of the request (WSGI environ / ASGI scope) giving its key, str
      or bytes, or None to let that request through unlimited and without headers.
      Default: the client address. Only with a ``KeyedLimiter``.
    - ``cost``: units each request takes (default 1).
    - ``policy``: the policy name in the ``RateLimit`` headers (default "default").
    - ``clock``: a function giving ``now_ns`` on the limiter's timeline (default: the
      library's CLOCK_MONOTONIC); for tests and simulations.
    - ``fail_open``: when a ``KeyedLimiter`` is full of live keys, let a request with a
      new key through without headers (True), or answer it 503 with ``Retry-After`` of
      one period (False, the default: an attacker who fills the table gains nothing).
    """

    @staticmethod
    def client_address(request: Any) -> Key | None:
        raise NotImplementedError

    def __init__(
        self,
        app: App,
        limiter: Limiter | KeyedLimiter,
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
        )
