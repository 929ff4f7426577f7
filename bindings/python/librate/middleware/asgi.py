"""ASGI middleware (ASGI 3): rate-limits HTTP requests by a key, answers 429 when denied.

Only ``http`` scopes are limited; ``websocket`` and ``lifespan`` pass through untouched.
The decision is one non-blocking C call, made directly on the event loop, or a call to
Redis awaited through an ``AsyncRedisLimiter``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ._gate import RateLimitMiddleware

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _encoded(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers]


class ASGIRateLimit(RateLimitMiddleware[ASGIApp, Scope]):
    """Wraps an ASGI app; the same behaviour as ``WSGIRateLimit``, with ``key(scope)``.

    ``ASGIRateLimit(app, limiter, *, key=None, cost=1, policy=None, rule_names=None,
    clock=None, fail_open=False, trusted_proxies=0, shadow=False, rule_header=None,
    log_level=logging.INFO)``: see ``RateLimitMiddleware`` for the arguments. In Starlette
    and FastAPI: ``app.add_middleware(ASGIRateLimit, limiter=...)``.
    """

    asynchronous = True

    @staticmethod
    def client_address(request: Scope) -> str | None:
        """The peer host from ``scope["client"]``, None if the server gives none. Behind
        a proxy this is the proxy: say how many run with ``trusted_proxies``."""
        client = request.get("client")
        return str(client[0]) if client else None

    @staticmethod
    def forwarded_for(request: Scope) -> list[str]:
        """The ``x-forwarded-for`` fields of ``scope["headers"]``, in order."""
        return [
            value.decode("latin-1")
            for name, value in request.get("headers", ())
            if name == b"x-forwarded-for"
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        verdict = None if scope["type"] != "http" else await self._gate.check_async(scope)
        if verdict is None:
            await self.app(scope, receive, send)
            return
        if verdict.status is not None:
            body = verdict.body
            await send(
                {
                    "type": "http.response.start",
                    "status": verdict.status,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                        *_encoded(verdict.headers),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        added = _encoded(verdict.headers)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                # A response that carries a field already (a route's own limit, from the
                # FastAPI dependency) keeps it: it reports the narrower limit.
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in added if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
