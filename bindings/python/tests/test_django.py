"""Django: DjangoRateLimit and @rate_limited configured from settings.LIBRATE, through
Django's own test client, on a virtual clock: the seed scenario, keys per client IP
behind trusted proxies, the shared header vectors, and Redis down (fail open or
closed)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

django = pytest.importorskip("django")

from django.conf import settings  # noqa: E402

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="librate tests",
        ALLOWED_HOSTS=["testserver"],
        ROOT_URLCONF=__name__,
        MIDDLEWARE=["librate.middleware.django.DjangoRateLimit"],
        LIBRATE={"default": {"limit": 1000, "period": 1, "capacity": 16}},
    )
    django.setup()

from django.core.exceptions import ImproperlyConfigured  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.test import Client, override_settings  # noqa: E402
from django.urls import path  # noqa: E402

import librate  # noqa: E402
from header_vectors import Case, cases  # noqa: E402
from helpers import MS, VirtualClock, closed_port  # noqa: E402
from librate.middleware.django import rate_limited  # noqa: E402

calls: list[str] = []


def hello(request: HttpRequest) -> HttpResponse:
    calls.append(request.path)
    return HttpResponse(b"hello", headers={"X-App": "yes"})


@rate_limited("login")
def login(request: HttpRequest) -> HttpResponse:
    calls.append(request.path)
    return HttpResponse(b"welcome")


@rate_limited("login")
async def login_async(request: HttpRequest) -> HttpResponse:
    calls.append(request.path)
    return HttpResponse(b"welcome")


urlpatterns = [
    path("", hello),
    path("a", hello),
    path("b", hello),
    path("c", hello),
    path("login", login),
    path("login-async", login_async),
]

#: No limit on the middleware's side: the view decorator's tests see only their own.
UNLIMITED = {"limit": 10**6, "period": 1, "capacity": 16}


@pytest.fixture(autouse=True)
def no_calls() -> Iterator[None]:
    calls.clear()
    yield


def fields(response: Any) -> tuple[str | None, str | None, str | None]:
    return (
        response.headers.get("RateLimit-Policy"),
        response.headers.get("RateLimit"),
        response.headers.get("Retry-After"),
    )


def test_seed_scenario() -> None:
    # L=1 per 2 s: admitted at 0, denied at 999 ms (Retry-After: ceil(1.001 s) = 2),
    # admitted at 2001 ms.
    clock = VirtualClock(now=0)
    entry = {"limit": 1, "period": 2, "capacity": 16, "clock": clock}
    with override_settings(LIBRATE={"default": entry}):
        client = Client()
        first = client.get("/a")
        assert (first.status_code, first.content, first["X-App"]) == (200, b"hello", "yes")
        # Full again in 2 s; the policy is named after the entry.
        assert fields(first) == ('"default";q=1;w=2', '"default";r=0;t=2', None)
        clock.now = 999 * MS
        denied = client.get("/b")
        assert (denied.status_code, denied.content) == (429, b"429 Too Many Requests\n")
        assert denied["Content-Type"] == "text/plain; charset=utf-8"
        assert fields(denied) == ('"default";q=1;w=2', '"default";r=0;t=2', "2")
        clock.now = 2001 * MS
        assert client.get("/c").status_code == 200
    assert calls == ["/a", "/c"]  # the denied request never reached the view


def test_per_client_ip_behind_trusted_proxies() -> None:
    # 1 an hour per client. One proxy runs: the client is the last X-Forwarded-For entry;
    # what the client wrote left of it is never read.
    entry = {"limit": 1, "period": 3600, "capacity": 16, "trusted_proxies": 1}
    with override_settings(LIBRATE={"default": entry}):
        client = Client()

        def status(peer: str, forwarded: str | None = None) -> int:
            extra = {"REMOTE_ADDR": peer}
            if forwarded is not None:
                extra["HTTP_X_FORWARDED_FOR"] = forwarded
            return int(client.get("/", **extra).status_code)

        assert status("10.0.0.1", "203.0.113.9, 198.51.100.7") == 200
        assert status("10.0.0.2", "forged, 198.51.100.7") == 429  # the same client
        assert status("10.0.0.1", "198.51.100.8") == 200  # another client
        # No header, or no address in it: the peer's address is the key.
        assert status("10.0.0.3") == 200
        assert status("10.0.0.3", "unknown") == 429
        assert status("::ffff:10.0.0.4") == 200
        assert status("10.0.0.4") == 429  # an IPv4-mapped address is the IPv4 one
    # No proxy trusted (the default): the header is ignored.
    with override_settings(LIBRATE={"default": {**entry, "trusted_proxies": 0}}):
        assert status("10.0.0.1", "1.1.1.1") == 200
        assert status("10.0.0.1", "2.2.2.2") == 429


@pytest.mark.parametrize("view", ["/login", "/login-async"])
@override_settings(MIDDLEWARE=[])
def test_view_decorator(view: str) -> None:
    # 2 a minute (GCRA, T = 30 s) for the login view, named "login" in the headers.
    clock = VirtualClock(now=0)
    login = {"limit": 2, "period": 60, "capacity": 16, "clock": clock}
    with override_settings(LIBRATE={"login": login}):
        client = Client()
        first = client.get(view)
        assert (first.status_code, first.content) == (200, b"welcome")
        assert fields(first)[:2] == ('"login";q=2;w=60', '"login";r=1;t=30')
        assert client.get(view).status_code == 200
        denied = client.get(view)
        # The next unit 30 s after the first: TAT 60 s, burst 2, so at 30 s.
        assert fields(denied) == ('"login";q=2;w=60', '"login";r=0;t=30', "30")
        assert denied.status_code == 429
        # Another client has a limit of its own.
        assert client.get(view, REMOTE_ADDR="192.0.2.1").status_code == 200
    assert calls == [view, view, view]


def test_the_middleware_keeps_a_view_s_headers() -> None:
    # Both limit /login: the response reports the view's own limit, the narrower one.
    limits = {"default": UNLIMITED, "login": {"limit": 2, "period": 60, "capacity": 16}}
    with override_settings(LIBRATE=limits):
        answer = Client().get("/login")
        assert answer["RateLimit-Policy"] == '"login";q=2;w=60'
        assert answer["RateLimit"].startswith('"login";r=1;t=')
        assert Client().get("/")["RateLimit-Policy"] == '"default";q=1000000;w=1'


@pytest.mark.parametrize("case", cases(), ids=lambda case: case.what)
def test_header_vectors_shared_with_go_and_rust(case: Case) -> None:
    entry = {"limiter": case.limiter, **case.options}
    with override_settings(LIBRATE={"default": entry}):
        answer = Client().get("/")
    assert answer.status_code == case.status
    assert fields(answer) == case.headers


@pytest.mark.parametrize("fail_open", [True, False])
@override_settings(MIDDLEWARE=[])
def test_redis_down(fail_open: bool, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("redis")
    entry = {
        "redis": f"redis://127.0.0.1:{closed_port()}/0?socket_connect_timeout=1",
        "limit": 5,
        "period": 60,
        "fail_open": fail_open,
    }
    with override_settings(LIBRATE={"login": entry}):
        with caplog.at_level(logging.WARNING, logger="librate.middleware"):
            answer = Client().get("/login")
    if fail_open:
        # Served unlimited, without headers.
        assert (answer.status_code, answer.content) == (200, b"welcome")
        assert fields(answer) == (None, None, None)
        assert "served unlimited" in caplog.text
    else:
        assert (answer.status_code, answer.content) == (503, b"503 Service Unavailable\n")
        assert "refused with 503" in caplog.text
    assert calls == (["/login"] if fail_open else [])


def test_settings_are_checked() -> None:
    client = Client()
    with override_settings(LIBRATE={"default": {"limit": 1, "period": 1}}):
        with pytest.raises(ImproperlyConfigured, match="needs a capacity"):
            client.get("/")
    with override_settings(LIBRATE={"default": {**UNLIMITED, "limt": 1}}):
        with pytest.raises(ImproperlyConfigured, match="unknown keys: limt"):
            client.get("/")
    with override_settings(LIBRATE={"other": UNLIMITED}):
        with pytest.raises(ImproperlyConfigured, match="no entry 'default'"):
            client.get("/")
    limiter = librate.Limiter(limit=1, period=1)
    with override_settings(LIBRATE={"default": {"limiter": limiter, "limit": 2}}):
        with pytest.raises(ImproperlyConfigured, match="takes no limit"):
            client.get("/")
    with pytest.raises(TypeError, match="with parentheses"):
        rate_limited(hello)  # type: ignore[arg-type]


def test_the_rule_that_denied_and_shadow(caplog: pytest.LogCaptureFixture) -> None:
    # 2 a minute: the third request is denied by rule 0, the entry's name; in shadow it is
    # served, without the fields, and logged as a would-be denial.
    caplog.set_level(logging.INFO, logger="librate.middleware")
    entry = {
        "algorithm": "fixed_window",
        "limit": 2,
        "period": 60,
        "capacity": 16,
        "clock": VirtualClock(now=0),
        "rule_header": "RateLimit-Rule",
    }
    with override_settings(LIBRATE={"default": entry}):
        client = Client()
        client.get("/a"), client.get("/b")
        denied = client.get("/c")
        assert (denied.status_code, denied["RateLimit-Rule"]) == (429, '"default"')
    with override_settings(LIBRATE={"default": {**entry, "shadow": True}}):
        client = Client()
        client.get("/a"), client.get("/b")
        served = client.get("/c")
        assert (served.status_code, served["RateLimit-Rule"]) == (200, '"default"')
        assert fields(served) == (None, None, None)
    assert [r.getMessage() for r in caplog.records if r.name == "librate.middleware"] == [
        'librate: rule 0 "default" denied the request',
        'librate: rule 0 "default" would deny the request (shadow)',
    ]
