"""A small Flask app behind a per-IP limit: each client address gets 5 requests a
minute (GCRA, bursts of up to 5); beyond that it is answered 429 Too Many Requests with
Retry-After, and every response carries RateLimit-Policy and RateLimit.

Run it from the repository root:

    python3 -m venv .venv && .venv/bin/pip install ./bindings/python flask
    .venv/bin/python examples/python/flask_app.py        # serves http://127.0.0.1:8000/
    curl -i http://127.0.0.1:8000/                       # the 6th call in a minute: 429

It listens on 127.0.0.1 only. The limit is per process: run it as one process (see the
middleware section of docs/python.md).
"""

from __future__ import annotations

import argparse

from flask import Flask, jsonify
from werkzeug.serving import make_server

import librate
from librate.middleware import WSGIRateLimit


def create_app(limit: int = 5, period: float = 60.0) -> Flask:
    """The app, with ``limit`` requests per ``period`` seconds for each client address."""
    app = Flask(__name__)

    @app.get("/")
    def hello() -> object:
        return jsonify(message="hello")

    # One table for up to 100,000 client addresses that are over or near their limit,
    # allocated once (32 bytes each). The middleware's default key is REMOTE_ADDR; behind
    # a proxy, pass key= a function that reads the address the proxy forwards.
    per_ip = librate.KeyedLimiter(limit=limit, period=period, capacity=100_000)
    app.wsgi_app = WSGIRateLimit(app.wsgi_app, per_ip)  # type: ignore[method-assign]
    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    port = parser.parse_args().port
    server = make_server("127.0.0.1", port, create_app(), threaded=True)
    print(f"listening on http://127.0.0.1:{server.server_port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
