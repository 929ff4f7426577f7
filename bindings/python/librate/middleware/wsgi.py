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
    ``RateLimit-Policy`` and ``RateLimit`` headers (those a response carries already,
    from a limit of its own, are kept); denied ones get ``429 Too Many Requests`` with
    ``Retry-After`` and the same headers, and never reach ``app``.

    ``WSGIRateLimit(app, limiter, *, key=None, cost=1, policy=None, rule_names=None,
    clock=None, fail_open=False, trusted_proxies=0, shadow=False, rule_header=None,
    log_level=logging.INFO)``: see ``RateLimitMiddleware`` for the arguments.
    """

    @staticmethod
    def client_address(request: Environ) -> str | None:
        """The peer address: ``REMOTE_ADDR``, None if the server gives none. Behind a
        proxy this is the proxy: say how many run with ``trusted_proxies``."""
        address = request.get("REMOTE_ADDR")
        return str(address) if address else None

    @staticmethod
    def forwarded_for(request: Environ) -> list[str]:
        """``HTTP_X_FORWARDED_FOR``: the server joins the field's lines with commas."""
        value = request.get("HTTP_X_FORWARDED_FOR")
        return [str(value)] if value else []

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
            # A response that carries a field already (an inner limit's) keeps it.
            present = {name.lower() for name, _ in headers}
            fields = [(name, value) for name, value in added if name.lower() not in present]
            return start_response(status, [*headers, *fields], exc_info)

        return self.app(environ, start_with_headers)
