"""A small FastAPI app behind per-IP limits: each client address gets 5 requests a minute
(the ASGI middleware, for the whole app), and the login route 2 a minute of its own (the
RateLimit dependency); beyond that a request is answered 429 Too Many Requests with
Retry-After, and every response carries RateLimit-Policy and RateLimit.

Run it from the repository root:

    python3 -m venv .venv && .venv/bin/pip install './bindings/python[fastapi]' uvicorn
    .venv/bin/python examples/python/fastapi_app.py      # serves http://127.0.0.1:8000/
    curl -i http://127.0.0.1:8000/login                  # the 3rd call in a minute: 429

It listens on 127.0.0.1 only, one process (an in-process limit is per process: see the
middleware section of docs/python.md for several).
"""

from __future__ import annotations

import argparse
import socket

import uvicorn
from fastapi import Depends, FastAPI

import librate
from librate.middleware.fastapi import ASGIRateLimit, RateLimit

# Every request: 5 a minute per client address, in a table of up to 100,000 addresses
# allocated once. Behind proxies, add trusted_proxies=N (and leave uvicorn's
# proxy_headers off, or it rewrites the client address itself).
per_ip = librate.KeyedLimiter(limit=5, period=60, capacity=100_000)
# The login route: 2 a minute per client address, on top of the above.
login_limit = RateLimit(librate.KeyedLimiter(limit=2, period=60, capacity=100_000), policy="login")

app = FastAPI()
app.add_middleware(ASGIRateLimit, limiter=per_ip)


@app.get("/")
async def hello() -> dict[str, str]:
    return {"message": "hello"}


@app.get("/login", dependencies=[Depends(login_limit)])
async def login() -> dict[str, str]:
    return {"message": "welcome"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    port = parser.parse_args().port
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen()  # connections wait in the backlog until uvicorn takes them
    print(f"listening on http://127.0.0.1:{listener.getsockname()[1]}/", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, proxy_headers=False)
    uvicorn.Server(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
