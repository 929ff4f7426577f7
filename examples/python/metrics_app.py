"""A FastAPI app whose limits Prometheus can watch: each client address gets 3 requests a
minute (rule "minute") within 1,000 a second for everyone (rule "all"), and a stricter
limit under test, 2 a minute, runs in shadow: it decides and counts every request, logs
each request it would deny, and refuses none. /metrics serves the counts of both.

Run it from the repository root:

    python3 -m venv .venv && .venv/bin/pip install './bindings/python[fastapi,prometheus]' uvicorn
    .venv/bin/python examples/python/metrics_app.py      # serves http://127.0.0.1:8000/
    curl -i http://127.0.0.1:8000/                       # the 4th call in a minute: 429
    curl http://127.0.0.1:8000/metrics                   # ratelimit_requests_total{...}

It listens on 127.0.0.1 only, one process (counts are per process: Prometheus sums the
processes it scrapes).
"""

from __future__ import annotations

import argparse
import logging
import socket

import uvicorn
from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

import librate
from librate.middleware import ASGIRateLimit
from librate.prometheus import RateLimitCollector

# The limit in force: per client address, and for everyone.
api = librate.KeyedPolicy(
    [
        librate.KeyedRule.per_key(librate.Config.gcra(3, 60)),
        librate.KeyedRule.global_(librate.Config.gcra(1000, 1)),
    ],
    capacity=100_000,
)
# The limit under test: what would 2 a minute per address do?
proposed = librate.KeyedLimiter(limit=2, period=60, capacity=100_000)

# A registry of its own, so /metrics shows the limits alone; REGISTRY (the default)
# would add the process's own metrics.
registry = CollectorRegistry()
collector = RateLimitCollector()
collector.add("api", api, rule_names=["minute", "all"])
collector.add("proposed", proposed)
registry.register(collector)


def client_or_none(scope: dict) -> str | None:  # type: ignore[type-arg]
    """The client's address; None for /metrics, which no limit counts."""
    if scope["path"] == "/metrics":
        return None
    return scope["client"][0] if scope.get("client") else ""


app = FastAPI()
# Starlette runs the last middleware added first: the shadow limit sees every request,
# the enforced one after it.
app.add_middleware(ASGIRateLimit, limiter=api, key=client_or_none, rule_names=["minute", "all"])
app.add_middleware(
    ASGIRateLimit,
    limiter=proposed,
    key=client_or_none,
    policy="proposed",
    shadow=True,
    rule_header="X-Would-Deny",
)


@app.get("/")
async def hello() -> dict[str, str]:
    return {"message": "hello"}


@app.get("/metrics")
async def metrics() -> Response:
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    port = parser.parse_args().port
    # The middleware logs each denial (and each would-be denial) at INFO.
    logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen()  # connections wait in the backlog until uvicorn takes them
    print(f"listening on http://127.0.0.1:{listener.getsockname()[1]}/", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, proxy_headers=False)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
