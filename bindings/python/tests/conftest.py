"""Shared fixtures: a virtual clock, real HTTP servers on loopback for the middleware, and
real Redis servers (redis_server.py)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
import uvicorn

from helpers import VirtualClock, hello_asgi, hello_wsgi
from librate import _ffi, _waiting
from librate.middleware import ASGIRateLimit, WSGIRateLimit
from redis_server import (  # noqa: F401
    NOT_INSTALLED,
    clients,
    own_redis_server,
    redis_client,
    redis_server,
)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Ends the run saying, where there is no redis-server, how many Redis tests it
    skipped: in the count of skips alone they pass unnoticed."""
    reasons = [
        str(report.longrepr[2])
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and str(report.longrepr[2]).endswith(NOT_INSTALLED)
    ]
    if reasons:
        reason = reasons[0].removeprefix("Skipped: ")
        terminalreporter.write_sep(
            "!", f"SKIPPED {len(reasons)} Redis tests: {reason}; under CI=true they fail", red=True
        )


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> VirtualClock:
    """Virtual time for everything that reads the clock in Python (wait, wait_async,
    reserve without now_ns) and sleeps (time.sleep, asyncio.sleep in librate)."""
    virtual = VirtualClock()
    monkeypatch.setattr(_ffi.lib, "rate_now_ns", virtual)
    monkeypatch.setattr(_waiting.time, "sleep", virtual.sleep)
    monkeypatch.setattr(_waiting.asyncio, "sleep", virtual.async_sleep)
    return virtual


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture
def wsgi_server() -> Iterator[Callable[[object], int]]:
    """Serves a WSGI app with wsgiref on 127.0.0.1; returns its port."""
    servers = []

    def serve(app: object) -> int:
        server = make_server("127.0.0.1", 0, app, handler_class=_QuietHandler)  # type: ignore[arg-type]
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return int(server.server_address[1])

    yield serve
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def asgi_server() -> Iterator[Callable[[object], int]]:
    """Serves an ASGI app with uvicorn on 127.0.0.1; returns its port."""
    servers = []

    def serve(app: object) -> int:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        # proxy_headers off: uvicorn would otherwise put X-Forwarded-For's client in the
        # scope, where the middleware's own trusted_proxies should read it.
        config = uvicorn.Config(
            app, lifespan="off", log_level="warning", access_log=False, proxy_headers=False
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        servers.append((server, thread, sock))
        for _ in range(1000):  # bounded: at most ~10 s for the server to come up
            if server.started:
                break
            time.sleep(0.01)
        assert server.started, "uvicorn did not start"
        return int(sock.getsockname()[1])

    yield serve
    for server, thread, sock in servers:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


Serve = Callable[..., int]


@pytest.fixture(params=["wsgi", "asgi"])
def serve(request: pytest.FixtureRequest) -> Serve:
    """serve(limiter, calls, **options) -> port of the wrapped hello app."""
    if request.param == "wsgi":
        server = request.getfixturevalue("wsgi_server")
        return lambda limiter, calls, **options: server(
            WSGIRateLimit(hello_wsgi(calls), limiter, **options)
        )
    server = request.getfixturevalue("asgi_server")
    return lambda limiter, calls, **options: server(
        ASGIRateLimit(hello_asgi(calls), limiter, **options)
    )
