"""Real ``redis-server``s for the ``librate.redis`` tests, started by the tests on free
127.0.0.1 ports with their files in a temporary directory, and killed at the end; a
three-master Redis Cluster of them; and fixtures for both.

Where ``redis-server`` (or ``$REDIS_SERVER``) is not installed the tests are skipped with
the reason, and the run ends saying so (conftest.py), unless ``CI`` is set: CI installs
it, so there a missing server fails.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio

#: Long enough for any server to come up, or a cluster to agree, on a loaded machine.
_PATIENCE_S = 20


#: How a skip for want of a server ends its reason (conftest.py counts them by it).
NOT_INSTALLED = "is not installed (apt-get install redis-server)"


def _binary() -> str:
    """The ``redis-server`` to run; skips (fails under CI) where there is none."""
    binary = os.environ.get("REDIS_SERVER", "redis-server")
    if shutil.which(binary) is None:
        reason = f"{binary} {NOT_INSTALLED}"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}, and CI must run the Redis tests")
        pytest.skip(reason)
    return binary


def free_port(bus: bool = False) -> int:
    """A port the kernel just found free on 127.0.0.1; a server takes it a moment later.
    With ``bus``, a Cluster node's: its bus port, 10000 above, free as well, and both
    below the ephemeral range, where the kernel picks ports (Linux: from 32768)."""
    if not bus:
        return _bind(0)
    rng = random.Random()
    for _ in range(100):
        port = rng.randrange(10_000, 22_000)
        if _bind(port) and _bind(port + 10_000):
            return port
    raise AssertionError("no free pair of ports for a Cluster node")


def _bind(port: int) -> int:
    """``port`` (0: any) bound and released, or 0 if it is taken."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return 0
        return int(probe.getsockname()[1])


class RedisServer:
    """A running ``redis-server``; ``close()`` kills it and removes its directory."""

    def __init__(self, *extra: str) -> None:
        self.binary = _binary()
        self.extra = extra
        self.port = free_port(bus="--cluster-enabled" in extra)
        self.dir = tempfile.mkdtemp(prefix="librate-redis-")
        self.process: subprocess.Popen[bytes] | None = None
        try:
            self.start()
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        """Starts the server on its port, empty, and waits until it answers PING."""
        self.process = subprocess.Popen(
            [self.binary, "--bind", "127.0.0.1", "--port", str(self.port)]
            + ["--save", "", "--appendonly", "no", "--dir", self.dir, *self.extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + _PATIENCE_S
        with self.client(socket_timeout=1) as probe:
            while True:
                try:
                    if probe.ping():
                        return
                except redis.ConnectionError:
                    pass
                assert self.process.poll() is None, "redis-server exited"
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.01)

    def stop(self) -> None:
        """Kills the server (SIGKILL: nothing saved); ``start()`` brings it back, empty,
        on the same port, as a crashed Redis comes back."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def client(self, **options: Any) -> redis.Redis:
        options.setdefault("socket_timeout", 5)
        return redis.Redis(host="127.0.0.1", port=self.port, **options)

    def async_client(self, **options: Any) -> Any:
        options.setdefault("socket_timeout", 5)
        return redis.asyncio.Redis(host="127.0.0.1", port=self.port, **options)


class RedisCluster:
    """Three masters on loopback ports, their slots assigned by ``redis-cli --cluster
    create``; ``close()`` stops them all."""

    def __init__(self) -> None:
        self.nodes: list[RedisServer] = []
        try:
            for _ in range(3):
                self.nodes.append(RedisServer("--cluster-enabled", "yes"))
            subprocess.run(
                ["redis-cli", "--cluster", "create"]
                + [f"127.0.0.1:{node.port}" for node in self.nodes]
                + ["--cluster-replicas", "0", "--cluster-yes"],
                check=True,
                stdout=subprocess.DEVNULL,
                timeout=_PATIENCE_S,
            )
            deadline = time.monotonic() + _PATIENCE_S
            while not all(b"cluster_state:ok" in self._info(node) for node in self.nodes):
                assert time.monotonic() < deadline, "the cluster did not form"
                time.sleep(0.05)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _info(node: RedisServer) -> bytes:
        with node.client() as client:
            return bytes(client.execute_command("CLUSTER", "INFO"))

    def client(self) -> Any:
        from redis.cluster import ClusterNode
        from redis.cluster import RedisCluster as Client

        nodes = [ClusterNode("127.0.0.1", node.port) for node in self.nodes]
        return Client(startup_nodes=nodes, socket_timeout=5)

    def close(self) -> None:
        for node in self.nodes:
            node.close()


class Blocking:
    """An ``AsyncRedisLimiter`` driven from sync code: each awaitable a method returns is
    run to completion on ``loop``. So one test body checks both clients."""

    def __init__(self, limiter: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.limiter = limiter
        self.loop = loop

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.limiter, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            return self.loop.run_until_complete(result) if inspect.isawaitable(result) else result

        return call


class Clients:
    """Makes limiters (and policies) of one kind, ``RedisLimiter`` ("sync") or
    ``AsyncRedisLimiter`` behind ``Blocking`` ("asyncio"), each on a client of its own;
    closes them all."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.loop = asyncio.new_event_loop()
        self.clients: list[Any] = []

    def limiter(
        self, port: int, client_options: dict[str, Any] | None = None, **config: Any
    ) -> Any:
        """A limiter of ``config`` over a new client of the server on ``port``."""
        from librate.redis import AsyncRedisLimiter, RedisLimiter

        return self._made(port, client_options, RedisLimiter, AsyncRedisLimiter, config)

    def policy(self, port: int, rules: list[Any], prefix: str) -> Any:
        """A policy of ``rules`` over a new client of the server on ``port``."""
        from librate.redis import AsyncRedisPolicy, RedisPolicy

        config = {"rules": rules, "prefix": prefix}
        return self._made(port, None, RedisPolicy, AsyncRedisPolicy, config)

    def _made(
        self,
        port: int,
        client_options: dict[str, Any] | None,
        sync: Any,
        asynchronous: Any,
        config: dict[str, Any],
    ) -> Any:
        options = {"host": "127.0.0.1", "port": port, "socket_timeout": 5, **(client_options or {})}
        if self.kind == "sync":
            self.clients.append(redis.Redis(**options))
            return sync(self.clients[-1], **config)
        self.clients.append(redis.asyncio.Redis(**options))
        return Blocking(asynchronous(self.clients[-1], **config), self.loop)

    def close(self) -> None:
        for client in self.clients:
            if self.kind == "sync":
                client.close()
            else:
                self.loop.run_until_complete(client.aclose())
        self.loop.close()


@pytest.fixture(params=["sync", "asyncio"])
def clients(request: pytest.FixtureRequest) -> Iterator[Clients]:
    """Runs a test with each client: ``clients.limiter(port, **config)``."""
    made = Clients(request.param)
    yield made
    made.close()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One server for the session: tests keep apart by prefix."""
    server = RedisServer()
    yield server
    server.close()


@pytest.fixture
def own_redis_server() -> Iterator[RedisServer]:
    """A server of the test's own, which it may stop and start."""
    server = RedisServer()
    yield server
    server.close()


@pytest.fixture
def redis_client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    with redis_server.client() as client:
        yield client


def hammer_process(port: int, config: dict[str, Any], start: Any, results: Any) -> None:
    """One process of the multi-process test (run by ``multiprocessing``): 4 threads,
    each with a connection of its own, take one unit of 10 keys in turn 80 times at one
    frozen time, after every process is ready (``start``, a barrier); puts how many each
    key admitted on ``results``."""
    import threading
    from collections import Counter

    from librate.redis import RedisLimiter

    admitted: Counter[str] = Counter()
    lock = threading.Lock()

    def run(thread: int) -> None:
        with redis.Redis(host="127.0.0.1", port=port, socket_timeout=5) as client:
            limiter = RedisLimiter(client, **config)
            client.ping()
            start.wait()
            for i in range(80):
                key = f"user-{(i + thread) % 10}"
                if limiter.acquire(key, now_ns=7 * 10**9).allowed:
                    with lock:
                        admitted[key] += 1

    threads = [threading.Thread(target=run, args=(thread,)) for thread in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(dict(admitted))
