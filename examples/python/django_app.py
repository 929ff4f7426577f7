"""A small Django app behind per-IP limits set in its settings: each client address gets
5 requests a minute (the middleware, entry "default"), and the login view 2 a minute of
its own (@rate_limited("login")); beyond that a request is answered 429 Too Many
Requests with Retry-After, and every response carries RateLimit-Policy and RateLimit.

Run it from the repository root:

    python3 -m venv .venv && .venv/bin/pip install './bindings/python[django]'
    .venv/bin/python examples/python/django_app.py       # serves http://127.0.0.1:8000/
    curl -i http://127.0.0.1:8000/login                  # the 3rd call in a minute: 429

It listens on 127.0.0.1 only, one process (an in-process limit is per process: see the
middleware section of docs/python.md for several).
"""

from __future__ import annotations

import argparse
from wsgiref.simple_server import WSGIRequestHandler, make_server

import django
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from django.http import HttpRequest, JsonResponse
from django.urls import path

from librate.middleware.django import rate_limited

settings.configure(
    ROOT_URLCONF=__name__,
    SECRET_KEY="an example, never a deployment",
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    MIDDLEWARE=["librate.middleware.django.DjangoRateLimit"],
    LIBRATE={
        # Every request: 5 a minute per client address, in a table of up to 100,000
        # addresses allocated once. Behind proxies, add "trusted_proxies": N.
        "default": {"limit": 5, "period": 60, "capacity": 100_000},
        # The login view: 2 a minute per client address, on top of the above.
        "login": {"limit": 2, "period": 60, "capacity": 100_000},
    },
)


def hello(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"message": "hello"})


@rate_limited("login")
def login(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"message": "welcome"})


urlpatterns = [path("", hello), path("login", login)]


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    port = parser.parse_args().port
    django.setup()
    server = make_server("127.0.0.1", port, get_wsgi_application(), handler_class=QuietHandler)
    print(f"listening on http://127.0.0.1:{server.server_port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
