"""FastAPI and Starlette: the RateLimit dependency and the ASGI middleware through
Starlette's own test client, on a virtual clock: the seed scenario, keys per client IP
behind trusted proxies, the shared header vectors, and Redis down (fail open or
closed)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi import Depends, FastAPI  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

import librate  # noqa: E402
from header_vectors import Case, cases  # noqa: E402
from helpers import MS, VirtualClock, closed_port  # noqa: E402
from librate.middleware.fastapi import ASGIRateLimit, RateLimit  # noqa: E402


def guarded(dependency: RateLimit, calls: list[str]) -> FastAPI:
    """An app whose route /{name} the dependency guards, and /open, which it does not."""
    app = FastAPI()

    @app.get("/open")
    async def unguarded() -> dict[str, str]:
        return {"open": "yes"}

    @app.get("/{name}", dependencies=[Depends(dependency)])
    async def hello(name: str) -> dict[str, str]:
        calls.append(name)
        return {"hello": name}

    return app


def behind_middleware(calls: list[str], limiter: Any, **options: Any) -> FastAPI:
    app = FastAPI()

    @app.get("/{name}")
    async def hello(name: str) -> dict[str, str]:
        calls.append(name)
        return {"hello": name}

    app.add_middleware(ASGIRateLimit, limiter=limiter, **options)
    return app


def fields(response: Any) -> tuple[str | None, str | None, str | None]:
    return (
        response.headers.get("RateLimit-Policy"),
        response.headers.get("RateLimit"),
        response.headers.get("Retry-After"),
    )


@pytest.mark.parametrize("mode", ["dependency", "middleware"])
def test_seed_scenario(mode: str) -> None:
    # L=1 per 2 s: admitted at 0, denied at 999 ms (Retry-After: ceil(1.001 s) = 2),
    # admitted at 2001 ms.
    clock = VirtualClock(now=0)
    calls: list[str] = []
    limiter = librate.Limiter(limit=1, period=2)
    if mode == "dependency":
        app = guarded(RateLimit(limiter, clock=clock), calls)
    else:
        app = behind_middleware(calls, limiter, clock=clock)
    client = TestClient(app)
    first = client.get("/a")
    assert (first.status_code, first.json()) == (200, {"hello": "a"})
    assert fields(first) == ('"default";q=1;w=2', '"default";r=0;t=2', None)
    clock.now = 999 * MS
    denied = client.get("/b")
    assert denied.status_code == 429
    assert fields(denied) == ('"default";q=1;w=2', '"default";r=0;t=2', "2")
    if mode == "dependency":
        assert denied.json() == {"detail": "Too Many Requests"}
        # A route the dependency does not guard is not limited, and has no headers.
        assert fields(client.get("/open")) == (None, None, None)
    else:
        assert denied.content == b"429 Too Many Requests\n"
    clock.now = 2001 * MS
    assert client.get("/c").status_code == 200
    assert calls == ["a", "c"]  # the denied request never reached the route


@pytest.mark.parametrize("mode", ["dependency", "middleware"])
def test_per_client_ip_behind_trusted_proxies(mode: str) -> None:
    # 1 an hour per client. One proxy runs: the client is the last X-Forwarded-For entry;
    # what the client wrote left of it is never read. The test client's peer is
    # "testclient", no address: kept as the key when the header names no client.
    per_ip = librate.KeyedLimiter(limit=1, period=3600, capacity=16)
    calls: list[str] = []
    if mode == "dependency":
        app = guarded(RateLimit(per_ip, trusted_proxies=1), calls)
    else:
        app = behind_middleware(calls, per_ip, trusted_proxies=1)
    client = TestClient(app)

    def status(*forwarded: str) -> int:
        headers = [("x-forwarded-for", line) for line in forwarded]
        return int(client.get("/x", headers=headers).status_code)

    assert status("203.0.113.9, 198.51.100.7") == 200
    assert status("forged", "198.51.100.7") == 429  # the same client, on two lines
    assert status("198.51.100.7", "[2001:db8::1]:443") == 200  # another client
    assert status("2001:db8::1") == 429
    assert status() == 200  # the peer, "testclient"
    assert status("not an address") == 429  # the peer again
    assert per_ip.acquire("testclient", 0).remaining == 0


@pytest.mark.parametrize("mode", ["dependency", "middleware"])
@pytest.mark.parametrize("case", cases(), ids=lambda case: case.what)
def test_header_vectors_shared_with_go_and_rust(case: Case, mode: str) -> None:
    calls: list[str] = []
    if mode == "dependency":
        app = guarded(RateLimit(case.limiter, **case.options), calls)
    else:
        app = behind_middleware(calls, case.limiter, **case.options)
    answer = TestClient(app).get("/x")
    assert answer.status_code == case.status
    assert fields(answer) == case.headers


@pytest.mark.parametrize("mode", ["dependency", "middleware"])
@pytest.mark.parametrize("fail_open", [True, False])
def test_redis_down(mode: str, fail_open: bool, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("redis")
    from redis.asyncio import Redis

    from librate.redis import AsyncRedisLimiter

    client = Redis(host="127.0.0.1", port=closed_port(), socket_connect_timeout=1)
    limiter = AsyncRedisLimiter(client, limit=5, period=60, prefix="test:")
    calls: list[str] = []
    if mode == "dependency":
        app = guarded(RateLimit(limiter, fail_open=fail_open), calls)
    else:
        app = behind_middleware(calls, limiter, fail_open=fail_open)
    with caplog.at_level(logging.WARNING, logger="librate.middleware"):
        answer = TestClient(app).get("/x")
    if fail_open:
        # Served unlimited, without headers.
        assert (answer.status_code, answer.json()) == (200, {"hello": "x"})
        assert fields(answer) == (None, None, None)
        assert "served unlimited" in caplog.text
    else:
        assert answer.status_code == 503
        assert "refused with 503" in caplog.text
    assert calls == (["x"] if fail_open else [])


def test_dependency_arguments() -> None:
    limiter = librate.Limiter(limit=2, period=1)
    with pytest.raises(TypeError, match="KeyedLimiter"):
        RateLimit(limiter, key=lambda request: "x")
    with pytest.raises(ValueError, match="max_n"):
        RateLimit(limiter, cost=3)
    with pytest.raises(ValueError, match="trusted_proxies -1"):
        RateLimit(limiter, trusted_proxies=-1)
    with pytest.raises(TypeError, match="trusted_proxies must be an int"):
        ASGIRateLimit(FastAPI(), limiter, trusted_proxies=True)


def test_the_middleware_keeps_a_route_s_headers() -> None:
    # Both limit the route: the response reports the route's own limit, the narrower one.
    login = RateLimit(librate.KeyedLimiter(limit=2, period=60, capacity=8), policy="login")
    everything = librate.KeyedLimiter(limit=1000, period=1, capacity=8)
    calls: list[str] = []
    app = guarded(login, calls)
    app.add_middleware(ASGIRateLimit, limiter=everything)
    client = TestClient(app)
    answer = client.get("/x")
    assert answer.headers.get_list("RateLimit-Policy") == ['"login";q=2;w=60']
    assert answer.headers.get_list("RateLimit")[0].startswith('"login";r=1;t=')
    assert client.get("/open").headers["RateLimit-Policy"] == '"default";q=1000;w=1'


def test_the_rule_that_denied_and_shadow(caplog: pytest.LogCaptureFixture) -> None:
    # 2 a minute: the third request is denied by rule 0; in shadow it is served, without
    # the fields, and logged as a would-be denial.
    caplog.set_level(logging.INFO, logger="librate.middleware")
    for shadow, status in [(False, 429), (True, 200)]:
        limiter = librate.Limiter(algorithm="fixed_window", limit=2, period=60)
        dependency = RateLimit(
            limiter, clock=VirtualClock(now=0), shadow=shadow, rule_header="RateLimit-Rule"
        )
        client = TestClient(guarded(dependency, []))
        client.get("/a"), client.get("/b")
        third = client.get("/c")
        assert (third.status_code, third.headers.get("RateLimit-Rule")) == (status, '"default"')
        if shadow:
            assert fields(third) == (None, None, None)
    assert [r.getMessage() for r in caplog.records if r.name == "librate.middleware"] == [
        'librate: rule 0 "default" denied the request',
        'librate: rule 0 "default" would deny the request (shadow)',
    ]
