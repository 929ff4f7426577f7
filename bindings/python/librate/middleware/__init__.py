"""WSGI and ASGI middleware: per-client rate limits (or one limit, or a policy of several,
for all clients) with 429, ``Retry-After`` and the IETF ``RateLimit`` /
``RateLimit-Policy`` headers (see ``_headers`` for the format). ``librate.middleware.django``
and ``librate.middleware.fastapi`` bring the same to Django and FastAPI."""

from ._gate import RateLimitMiddleware
from .asgi import ASGIRateLimit
from .wsgi import WSGIRateLimit

__all__ = ["ASGIRateLimit", "RateLimitMiddleware", "WSGIRateLimit"]
