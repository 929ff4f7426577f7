"""FastAPI and Starlette: a dependency that limits the routes it guards, and the ASGI
middleware for a whole app, with the headers, keys and failure modes of the WSGI and
ASGI middleware (needs FastAPI: ``pip install 'librate[fastapi]'``).

::

    from fastapi import Depends, FastAPI
    from librate.middleware.fastapi import ASGIRateLimit, RateLimit

    per_ip = librate.KeyedLimiter(limit=100, period=60, capacity=100_000)
    app = FastAPI()
    app.add_middleware(ASGIRateLimit, limiter=per_ip, trusted_proxies=1)  # every request

    login = RateLimit(librate.KeyedLimiter(limit=5, period=60, capacity=10_000))

    @app.post("/login", dependencies=[Depends(login)])  # this route only
    async def log_in(): ...

``ASGIRateLimit`` is ``librate.middleware.ASGIRateLimit``: Starlette middleware is ASGI
middleware, and ``add_middleware`` passes it the app.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from fastapi import HTTPException, Request, Response

from .._limiter import Key
from ._client import client_key, trusted_hops
from ._gate import REASONS, AnyLimiter, Gate
from .asgi import ASGIRateLimit

__all__ = ["ASGIRateLimit", "RateLimit"]


# A Starlette request carries its ASGI scope.
def _peer(request: Request) -> str | None:
    return ASGIRateLimit.client_address(request.scope)


def _forwarded_for(request: Request) -> list[str]:
    return ASGIRateLimit.forwarded_for(request.scope)


class RateLimit:
    """A FastAPI dependency, ``Depends(RateLimit(limiter, ...))``: each request to a
    route it guards first asks ``limiter``. Admitted, the route's response gains
    ``RateLimit-Policy`` and ``RateLimit``; denied, it raises ``HTTPException(429)``
    with ``Retry-After`` and both headers, and the route never runs; undecided (a full
    table, Redis down), it passes or raises ``HTTPException(503)`` as ``fail_open``
    says. A route that returns a ``Response`` of its own gets no headers on admission
    (FastAPI adds a dependency's headers to the response it builds).

    The arguments are ``RateLimitMiddleware``'s, ``key`` a function of the Starlette
    ``Request``. Asks an in-process limiter on the event loop (one non-blocking C call),
    a Redis one through an ``AsyncRedisLimiter`` or ``AsyncRedisPolicy``.
    """

    def __init__(
        self,
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
        self._gate: Gate[Request] = Gate(
            limiter,
            key=key,
            default_key=client_key(_peer, _forwarded_for, trusted_hops(trusted_proxies)),
            cost=cost,
            policy=policy,
            rule_names=rule_names,
            clock=clock,
            fail_open=fail_open,
            asynchronous=True,
            shadow=shadow,
            rule_header=rule_header,
            log_level=log_level,
        )

    async def __call__(self, request: Request, response: Response) -> None:
        verdict = await self._gate.check_async(request)
        if verdict is None:
            return
        if verdict.status is not None:
            raise HTTPException(
                verdict.status, REASONS[verdict.status], headers=dict(verdict.headers)
            )
        for name, value in verdict.headers:
            response.headers[name] = value
