"""ns per rate-limit check, for one limit shared by the processes of a host: librate's
shared limiter (``Limiter.open``, a file every process maps) against a private one, and
against what a user would build instead, a counter in a local Redis.

    python bench_shared.py     # prints a Markdown table of medians and ratios

The script starts its own ``redis-server`` (``$REDIS_SERVER``, else from PATH) on
127.0.0.1, on a free port, and on a Unix socket in a fresh temporary directory, with
nothing saved to disk, and stops it at the end; without one the Redis rows say n/a. The
Redis rows are:

- redis-py, the fixed-window counter users write by hand, keyed by the window's number:
  ``INCR`` and ``EXPIRE`` in one ``pipeline()`` (redis-py's default, a MULTI/EXEC
  transaction: one round trip per check), or ``INCR`` alone and ``EXPIRE`` only when the
  count is 1 (one round trip per check, two at each window's first);
- ``limits`` with its Redis storage: the fixed window (one Lua call doing INCR and
  EXPIRE), the moving window and the sliding window counter (one Lua call each).

Every limiter enforces 1,000 requests per second (GCRA for librate) from one thread, as
fast as the loop goes, so most checks are denials; Redis pays the same round trip either
way. Rows are timed as in bench.py (whose machinery this reuses): the median of REPEATS
runs taken round-robin, minus an empty loop's time.

Needs ``pip install ./bindings/python redis limits`` (hiredis optional: redis-py uses it
for parsing when installed) and ``redis-server``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Any

import librate
from bench import LIMIT, PERIOD, Loop, Row, available, measure, setting

#: How long redis-server may take to answer its first PING, in seconds.
STARTUP = 10.0


# ---- a redis-server of our own ----------------------------------------------------------


@dataclass
class Server:
    port: int
    socket: str
    version: str


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def local_redis() -> Iterator[Server | str]:
    """A redis-server on 127.0.0.1 and a Unix socket for the duration of the block, or
    the reason there is none."""
    program = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
    if program is None:
        yield "redis-server is not installed"
        return
    try:
        import redis
    except ImportError:
        yield "redis (redis-py) is not installed"
        return
    directory = tempfile.mkdtemp(prefix="librate-bench-redis-")
    port, path = free_port(), os.path.join(directory, "redis.sock")
    # fmt: off
    command = [
        program, "--bind", "127.0.0.1", "--port", str(port),
        "--unixsocket", path, "--unixsocketperm", "700",
        "--save", "", "--appendonly", "no", "--dir", directory,
    ]
    # fmt: on
    try:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    except OSError as error:
        shutil.rmtree(directory, ignore_errors=True)
        yield f"cannot start {program}: {error.strerror}"
        return
    try:
        deadline = time.monotonic() + STARTUP
        while True:
            try:
                version = redis.Redis(unix_socket_path=path).info("server")["redis_version"]
                break
            except (redis.ConnectionError, FileNotFoundError):
                if time.monotonic() > deadline or process.poll() is not None:
                    yield f"{program} did not start"
                    return
                time.sleep(0.02)
        yield Server(port, path, version)
    finally:
        process.terminate()
        try:
            process.wait(timeout=STARTUP)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(directory, ignore_errors=True)


# ---- librate ----------------------------------------------------------------------------


def librate_limiter(shared: Path | None) -> librate.Limiter:
    if shared is None:
        return librate.Limiter(limit=LIMIT, period=PERIOD)
    return librate.Limiter.open(shared, limit=LIMIT, period=PERIOD)


def librate_try_acquire(limiter: librate.Limiter) -> Loop:
    try_acquire = limiter.try_acquire

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            admitted += try_acquire()
        return admitted

    return loop


def librate_acquire(limiter: librate.Limiter) -> Loop:
    acquire = limiter.acquire

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            admitted += acquire().allowed
        return admitted

    return loop


# ---- Redis ------------------------------------------------------------------------------


def client(server: Server, transport: str) -> Any:
    import redis

    if transport == "tcp":
        return redis.Redis(host="127.0.0.1", port=server.port)
    return redis.Redis(unix_socket_path=server.socket)


def redis_pipeline(server: Server, transport: str) -> Loop:
    """INCR and EXPIRE of the window's key in one pipeline (MULTI/EXEC, the default)."""
    pipeline = client(server, transport).pipeline
    prefix = f"librate-bench:pipeline:{transport}:"

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            key = prefix + str(int(time.time()) // PERIOD)
            with pipeline() as pipe:
                count, _ = pipe.incr(key).expire(key, PERIOD).execute()
            admitted += count <= LIMIT
        return admitted

    return loop


def redis_incr_then_expire(server: Server, transport: str) -> Loop:
    """INCR of the window's key, and EXPIRE only when it was created (the count is 1)."""
    redis_client = client(server, transport)
    incr, expire = redis_client.incr, redis_client.expire
    prefix = f"librate-bench:incr:{transport}:"

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            key = prefix + str(int(time.time()) // PERIOD)
            count = incr(key)
            if count == 1:
                expire(key, PERIOD)
            admitted += count <= LIMIT
        return admitted

    return loop


def limits_redis(server: Server, transport: str, strategy: str) -> Loop:
    from limits import RateLimitItemPerSecond, strategies
    from limits.storage import storage_from_string

    if transport == "tcp":
        uri = f"redis://127.0.0.1:{server.port}"
    else:
        uri = f"redis+unix://{server.socket}"
    limiter = getattr(strategies, strategy)(storage_from_string(uri))
    item = RateLimitItemPerSecond(LIMIT, PERIOD)
    hit = limiter.hit

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            admitted += hit(item, "librate-bench", strategy, transport)
        return admitted

    return loop


# ---- running ----------------------------------------------------------------------------


def rows(directory: Path, server: Server | str) -> list[Row]:
    """The four librate rows (shared, private; try_acquire, acquire), then the Redis rows.
    Each shared limiter has a file of its own in ``directory``."""
    one = "1 key"
    table = [
        Row(
            "librate try_acquire, shared",
            one,
            librate_try_acquire(librate_limiter(directory / "try")),
        ),
        Row("librate try_acquire, private", one, librate_try_acquire(librate_limiter(None))),
        Row(
            "librate acquire -> Decision, shared",
            one,
            librate_acquire(librate_limiter(directory / "acquire")),
        ),
        Row("librate acquire -> Decision, private", one, librate_acquire(librate_limiter(None))),
    ]
    redis_rows: list[tuple[str, Callable[[Server, str], Loop]]] = [
        ("redis-py INCR+EXPIRE pipeline", redis_pipeline),
        ("redis-py INCR, EXPIRE when 1", redis_incr_then_expire),
    ]
    for name, strategy in [
        ("fixed window", "FixedWindowRateLimiter"),
        ("moving window", "MovingWindowRateLimiter"),
        ("sliding window counter", "SlidingWindowCounterRateLimiter"),
    ]:
        redis_rows.append(
            (f"limits {name}, Redis storage", partial(limits_redis, strategy=strategy))
        )
    for name, make in redis_rows:
        for transport in ("tcp", "unix"):
            label = f"{name}, {'loopback TCP' if transport == 'tcp' else 'Unix socket'}"
            if isinstance(server, str):
                table.append(Row(label, one, None, missing=server))
            else:
                table.append(available(label, one, partial(make, server, transport)))
    return table


def versions(server: Server | str) -> str:
    def version(name: str) -> str:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            return f"no {name}"

    redis_server = server if isinstance(server, str) else f"redis-server {server.version}"
    clients = ", ".join(version(name) for name in ("redis", "hiredis", "limits"))
    return f"{redis_server}; {clients}"


def report(table: list[Row], overhead: float, server: Server | str) -> str:
    shared_try, _, shared_acquire, _ = (row.ns - overhead for row in table[:4])
    lines = [
        setting(overhead, versions(server)),
        "",
        "| check | ns per check | × shared try_acquire | × shared acquire | admitted |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in table:
        if row.loop is None:
            lines.append(f"| {row.name} | n/a: {row.missing} | | | |")
            continue
        ns = row.ns - overhead
        share = 100 * row.admitted / row.calls
        lines.append(
            f"| {row.name} | {ns:,.0f} | {ns / shared_try:,.2f} | {ns / shared_acquire:,.2f} "
            f"| {share:.1f}% |"
        )
    private_try, private_acquire = (table[i].ns - overhead for i in (1, 3))
    lines += [
        "",
        f"- shared / private: try_acquire {shared_try / private_try:.2f}, "
        f"acquire {shared_acquire / private_acquire:.2f}.",
    ]
    redis = [row for row in table[4:] if row.samples]
    if redis:
        fastest = min(redis, key=lambda row: row.ns)
        ns = fastest.ns - overhead
        lines.append(
            f"- fastest Redis check: {fastest.name}, {ns / shared_try:,.0f}× a shared "
            f"try_acquire, {ns / shared_acquire:,.1f}× a shared acquire."
        )
    return "\n".join(lines)


def main() -> None:
    # The shared limiters' files: on a tmpfs where there is one, removed at the end.
    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with tempfile.TemporaryDirectory(prefix="librate-bench-", dir=tmpfs) as directory:
        with local_redis() as server:
            table = rows(Path(directory), server)
            overhead = measure(table)
        print(report(table, overhead, server))


if __name__ == "__main__":
    main()
