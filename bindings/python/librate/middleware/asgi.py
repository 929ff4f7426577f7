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
    clock=None, fail_open=False)``: see ``RateLimitMiddleware`` for the arguments.
    """

    asynchronous = True

    @staticmethod
    def client_address(request: Scope) -> str:
        """The default key: the peer host from ``scope["client"]``, "" if the server gives
        none. Behind a proxy this is the proxy: pass a ``key`` that reads the forwarded
        address your proxy sets (and that clients cannot forge)."""
        client = request.get("client")
        return str(client[0]) if client else ""

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
                message = {**message, "headers": [*message.get("headers", ()), *added]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
