"""Test helpers: units, a virtual clock, a loopback HTTP client, tiny apps."""

from __future__ import annotations

import gc
import http.client
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import librate

MS = 1_000_000
SECOND = 1_000_000_000


@dataclass
class VirtualClock:
    """A clock that only moves when told to, or when code under test sleeps on it."""

    now: int = 10**15
    slept: list[float] = field(default_factory=list)

    def __call__(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += round(seconds * SECOND)

    async def async_sleep(self, seconds: float) -> None:
        self.sleep(seconds)


@dataclass
class Response:
    status: int
    headers: http.client.HTTPMessage
    body: bytes


def get(
    port: int, path: str = "/", *, source: str = "127.0.0.1", headers: dict[str, str] | None = None
) -> Response:
    """One GET over a fresh loopback connection from ``source`` (any 127.x address)."""
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=10, source_address=(source, 0)
    )
    try:
        connection.request("GET", path, headers=headers or {})
        reply = connection.getresponse()
        return Response(reply.status, reply.headers, reply.read())
    finally:
        connection.close()


def hello_wsgi(calls: list[str]) -> Callable[..., list[bytes]]:
    """A WSGI app that records each call and answers 200 "hello"."""

    def app(environ: dict, start_response: Callable) -> list[bytes]:  # type: ignore[type-arg]
        calls.append(environ["PATH_INFO"])
        start_response("200 OK", [("Content-Type", "text/plain"), ("X-App", "yes")])
        return [b"hello"]

    return app


def hello_asgi(calls: list[str]) -> Callable[..., object]:
    """An ASGI app that records each call and answers 200 "hello"."""

    async def app(scope: dict, receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        calls.append(scope["path"])
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"x-app", b"yes")],
            }
        )
        await send({"type": "http.response.body", "body": b"hello"})

    return app


THREADS = 4
ATTEMPTS = 400  # per thread, well over the limit in total


def hammer(attempt: Callable[[], bool]) -> list[int]:
    """Runs ``attempt`` ATTEMPTS times in each of THREADS threads started together;
    returns how many each admitted."""
    start = threading.Barrier(THREADS)
    admitted = [0] * THREADS

    def run(index: int) -> None:
        start.wait()
        admitted[index] = sum(attempt() for _ in range(ATTEMPTS))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return admitted


def count_frees(monkeypatch: Any, handle_class: Any) -> list[int]:
    """Records each address ``handle_class`` frees (and still frees it). Collects other
    tests' garbage first, so only frees from here on are counted."""
    gc.collect()
    freed: list[int] = []
    real = handle_class._free

    def counting_free(handle: Any) -> None:
        freed.append(handle.value)
        real(handle)

    monkeypatch.setattr(handle_class, "_free", staticmethod(counting_free))
    return freed


#: One request of a scripted exchange with a middleware: (its time on the middleware's
#: clock, the status, RateLimit and Retry-After expected).
Step = tuple[int, int, str, "str | None"]


def replay(port: int, clock: VirtualClock, advertised: str, steps: list[Step]) -> None:
    """Sends request ``/i`` of ``steps[i]`` at its time, and checks its answer: the
    status and body (the hello app's, or the 429's), ``RateLimit-Policy`` (``advertised``
    every time), ``RateLimit`` and ``Retry-After``."""
    for index, (now, status, ratelimit, retry) in enumerate(steps):
        clock.now = now
        answer = get(port, f"/{index}")
        body = b"hello" if status == 200 else b"429 Too Many Requests\n"
        assert (answer.status, answer.body) == (status, body), index
        assert answer.headers["RateLimit-Policy"] == advertised, index
        assert answer.headers["RateLimit"] == ratelimit, index
        assert answer.headers["Retry-After"] == retry, index


#: A policy of 2 a second (GCRA, T = 500 ms) and 3 a minute (a fixed window), its rules
#: named "second" and "minute" (``SECOND_AND_MINUTE_NAMES``), as its RateLimit-Policy
#: advertises them, and its exchange from time 0 (``replay``), requests 0, 1 and 3
#: admitted: the same in process and on Redis.
SECOND_AND_MINUTE = [librate.Config.gcra(2, 1), librate.Config.fixed_window(3, 60)]
SECOND_AND_MINUTE_NAMES = ["second", "minute"]
SECOND_AND_MINUTE_ADVERTISED = '"second";q=2;w=1, "minute";q=3;w=60'
SECOND_AND_MINUTE_STEPS: list[Step] = [
    # (time, status, RateLimit, Retry-After)
    # The per-second rule has the least left: 1 (full again in 0.5 s), then 0 (1 s).
    (0, 200, '"second";r=1;t=1', None),
    (0, 200, '"second";r=0;t=1', None),
    # Denied by the per-second rule for 0.5 s; the minute rule gave its unit back.
    (0, 429, '"second";r=0;t=1', "1"),
    # At 1 s the minute rule has 0 left, until 1:00; the per-second rule 1.
    (SECOND, 200, '"minute";r=0;t=59', None),
    # Denied by the minute rule for 58 s.
    (2 * SECOND, 429, '"minute";r=0;t=58', "58"),
]


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (a Redis that is down)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
