"""Test helpers: units, a virtual clock, a loopback HTTP client, tiny apps."""

from __future__ import annotations

import gc
import http.client
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
