"""A worker process of test_redis_lease_host.py: opens the host's holder of a rule
(``open_host``) and renews it in the background, on a thread (``sync``) or an asyncio task
(``asyncio``), over a client named after the worker, so that the test's MONITOR tells
whose connection sent each script call.

``python lease_host_worker.py PORT KEY PATH NAME MODE``: says "ready" once open; at the
first line on stdin closes the holder (it stops renewing, and steps down) and says
"closed", then lives on until stdin ends or it is killed.
"""

from __future__ import annotations

import asyncio
import sys

import redis
import redis.asyncio

from librate import Config, LeaseRule
from librate.lease import AsyncLeasedLimiter, LeasedLimiter

#: test_redis_lease_host.RULE: 1,000 a second, leased 1 s at a time, renewed every 100 ms.
RULE = LeaseRule(Config.gcra(1000, 1), lease=1, renew_every=0.1)
#: A call slower than a renewal interval only delays the next renewal: more patience than
#: the docs advise, for a loaded machine.
TIMEOUT_S = 0.5


def say(line: str) -> None:
    print(line, flush=True)


def on_a_thread(port: int, key: str, path: str, name: str) -> None:
    client = redis.Redis(port=port, client_name=name, socket_timeout=TIMEOUT_S)
    limiter = LeasedLimiter.open_host(client, key, path, RULE)
    say("ready")
    sys.stdin.readline()
    limiter.close()
    say("closed")
    sys.stdin.read()


async def on_a_task(port: int, key: str, path: str, name: str) -> None:
    client = redis.asyncio.Redis(port=port, client_name=name, socket_timeout=TIMEOUT_S)
    limiter = AsyncLeasedLimiter.open_host(client, key, path, RULE)
    say("ready")
    loop = asyncio.get_running_loop()
    # Read on another thread: the event loop keeps renewing meanwhile.
    await loop.run_in_executor(None, sys.stdin.readline)
    await limiter.aclose()
    say("closed")
    await loop.run_in_executor(None, sys.stdin.read)


def main() -> None:
    port, key, path, name, mode = sys.argv[1:]
    if mode == "sync":
        on_a_thread(int(port), key, path, name)
    else:
        asyncio.run(on_a_task(int(port), key, path, name))


if __name__ == "__main__":
    main()
