"""Prefork workers sharing one per-IP limit: several processes serve one WSGI app on one
listening socket, as gunicorn's workers do, and every worker decides through the same
keyed table in a file (librate.KeyedLimiter.open), so each client address gets 5
requests a minute across all the workers together, not 5 per worker. Beyond that it is
answered 429 Too Many Requests with Retry-After; every response says in X-Worker which
worker answered.

Run it from the repository root (nothing to install but librate):

    python3 -m venv .venv && .venv/bin/pip install ./bindings/python
    .venv/bin/python examples/python/prefork_per_ip.py      # http://127.0.0.1:8000/
    for i in 1 2 3 4 5 6 7; do curl -si http://127.0.0.1:8000/ | head -1; done

The same app under gunicorn (which this program stands in for), from examples/python:

    gunicorn -w 4 -b 127.0.0.1:8000 'prefork_per_ip:create_app()'

It listens on 127.0.0.1 only. The table's file stays when the program stops, and so do
the limits: a client denied before a restart is still denied after it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

import librate
from librate.middleware import WSGIRateLimit

# A tmpfs, where the table lives in memory; any directory works.
SHM = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
TABLE = os.path.join(SHM, "librate-example-per-ip")


def hello(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The application: every request the limit admits gets here."""
    start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
    return [b"hello\n"]


def create_app(table: str = TABLE, limit: int = 5, period: float = 60.0) -> WSGIRateLimit:
    """The app behind a per-IP limit of ``limit`` requests per ``period`` seconds, kept in
    the keyed table in the file ``table``: every process that calls this shares it."""
    # Up to 100,000 client addresses over or near their limit at once, 32 bytes each.
    # The file is created (mode 0600) by the first process and opened by the others; one
    # of another configuration raises librate.Incompatible: pick another name for it.
    per_ip = librate.KeyedLimiter.open(table, limit=limit, period=period, capacity=100_000)
    # The default key is REMOTE_ADDR; behind a proxy, pass key= a function that reads
    # the address the proxy forwards.
    return WSGIRateLimit(hello, per_ip)


def answered_by(app: WSGIRateLimit, worker: int) -> Callable[..., Iterable[bytes]]:
    """``app`` with an X-Worker header naming the worker on every response, 429s too."""

    def tagged(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, [*headers, ("X-Worker", str(worker))], exc_info)

        return app(environ, start)

    return tagged


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _PreforkedServer(WSGIServer):
    """wsgiref's server on a socket the parent bound and listens on, shared by every
    worker: the kernel hands each connection to one of the workers waiting for one.
    Each worker serves one connection at a time."""

    def __init__(self, listener: socket.socket) -> None:
        super().__init__(listener.getsockname(), _QuietHandler, bind_and_activate=False)
        self.socket.close()
        self.socket = listener
        self.server_name, self.server_port = listener.getsockname()[:2]
        self.setup_environ()


def work(listener: socket.socket, worker: int, options: argparse.Namespace, ready: int) -> None:
    """A worker process: opens the shared table after the fork, as a gunicorn worker
    does when it loads the app, says so on the pipe ``ready``, and serves until it is
    terminated."""
    server = _PreforkedServer(listener)
    server.set_app(answered_by(create_app(options.table, options.limit, options.period), worker))
    os.write(ready, b".")
    os.close(ready)
    server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--table", default=TABLE, help=f"the table's file (default {TABLE})")
    parser.add_argument("--limit", type=int, default=5, help="requests per period per IP")
    parser.add_argument("--period", type=float, default=60.0, help="seconds")
    options = parser.parse_args()
    # Opened once before the workers start (what gunicorn's --preload would do) to fail
    # early and in one place if the file cannot be used.
    try:
        create_app(options.table, options.limit, options.period)
    except librate.Incompatible:
        sys.exit(f"{options.table} holds a table of another configuration: remove it")
    except OSError as error:
        sys.exit(f"cannot open the table: {error}")
    listener = socket.create_server(("127.0.0.1", options.port))
    workers: list[int] = []
    ready_read, ready_write = os.pipe()  # a byte from each worker that is ready

    def stop(signum: int, frame: object) -> None:
        for pid in workers:
            os.kill(pid, signal.SIGTERM)
        for pid in workers:
            os.waitpid(pid, 0)
        sys.exit(0)

    stopping = {signal.SIGTERM, signal.SIGINT}
    for signum in stopping:
        signal.signal(signum, stop)
    for worker in range(options.workers):
        # Held back across the fork, so that only the parent ever runs `stop`.
        signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
        pid = os.fork()
        if pid == 0:
            try:
                for signum in stopping:
                    signal.signal(signum, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, stopping)
                os.close(ready_read)
                work(listener, worker, options, ready_write)
            finally:
                os._exit(1)  # never back into the parent's code
        workers.append(pid)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stopping)
    os.close(ready_write)
    ready = b""
    while len(ready) < options.workers:
        byte = os.read(ready_read, 1)
        if not byte:  # every worker has gone
            stop(signal.SIGTERM, None)
        ready += byte
    os.close(ready_read)
    port = listener.getsockname()[1]
    print(f"{options.workers} workers listening on http://127.0.0.1:{port}/", flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
