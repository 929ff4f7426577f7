"""WSGI middleware (PEP 3333): rate-limits requests by a key, answers 429 when denied."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ._gate import REASONS, RateLimitMiddleware

Environ = dict[str, Any]
StartResponse = Callable[..., Any]
WSGIApp = Callable[[Environ, StartResponse], Iterable[bytes]]


class WSGIRateLimit(RateLimitMiddleware[WSGIApp, Environ]):
    """Wraps a WSGI app. Admitted requests reach ``app`` and their responses gain the
    ``RateLimit-Policy`` and ``RateLimit`` headers; denied ones get ``429 Too Many
    Requests`` with ``Retry-After`` and the same headers, and never reach ``app``.

    ``WSGIRateLimit(app, limiter, *, key=None, cost=1, policy=None, rule_names=None,
    clock=None, fail_open=False)``: see ``RateLimitMiddleware`` for the arguments.
    """

    @staticmethod
    def client_address(request: Environ) -> str:
        """The default key: the peer address (``REMOTE_ADDR``), "" if the server gives
        none. Behind a proxy this is the proxy: pass a ``key`` that reads the forwarded
        address your proxy sets (and that clients cannot forge)."""
        return str(request.get("REMOTE_ADDR") or "")

    def __call__(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        verdict = self._gate.check(environ)
        if verdict is None:
            return self.app(environ, start_response)
        if verdict.status is not None:
            body = verdict.body
            start_response(
                f"{verdict.status} {REASONS[verdict.status]}",
                [
                    ("Content-Type", "text/plain; charset=utf-8"),
                    ("Content-Length", str(len(body))),
                    *verdict.headers,
                ],
            )
            return [body]
        added = verdict.headers

        def start_with_headers(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            return start_response(status, [*headers, *added], exc_info)

        return self.app(environ, start_with_headers)
