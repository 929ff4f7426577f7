"""One share for a host (docs/leases.md): ``LeasedLimiter.open_host`` and
``AsyncLeasedLimiter.open_host`` in worker processes (lease_host_worker.py) on one file,
against a real ``redis-server`` whose MONITOR shows whose connection sends each call of
the lease script; and what an opener of the file is refused.

The rule is GCRA, 1,000 a second (T = 1 ms, B = 1,000), leased 1 s at a time and renewed
every 100 ms, so that a renewer killed is taken over well before its lease ends, however
slow the machine. The processes of a host are one holder under one name, so the script sees
one holder, alone: its fair share is the whole rule, a rate of 1,000,000 millionths and a
burst of 1,000, held 1,000,000 µs at a time.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
import redis

import librate
from librate import Config, LeaseRule
from librate.lease import Grant, HolderState, LeasedLimiter
from redis_server import RedisServer
from test_redis_lease import WHOLE, eventually

RULE = LeaseRule(Config.gcra(1000, 1), lease=1, renew_every=0.1)
#: The one grant the host's holder ever gets, but for the epoch (when Redis made the rule).
WHOLE_RULE = {
    "rate": WHOLE,
    "burst": 1000,
    "lease_us": 1_000_000,
    "held_rate": WHOLE,
    "held_burst": 1000,
    "holders": 1,
}
WORKER = str(Path(__file__).with_name("lease_host_worker.py"))


class Worker:
    """A worker process of the host, its renewals sent over a client named ``name``."""

    def __init__(self, server: RedisServer, key: str, path: Path, name: str, mode: str) -> None:
        self.name = name
        self.process = subprocess.Popen(
            [sys.executable, WORKER, str(server.port), key, str(path), name, mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.said() == "ready"

    def said(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        """Closes the worker's holder; the process lives on."""
        assert self.process.stdin is not None
        self.process.stdin.write("close\n")
        self.process.stdin.flush()
        assert self.said() == "closed"

    def kill(self) -> None:
        """SIGKILL, and reaped: the process is gone."""
        self.process.kill()
        self.process.wait()


class ScriptCalls:
    """The lease script's calls (EVALSHA, EVAL) Redis serves, in order, each as the name
    of the client that sent it: MONITOR, read on a thread of its own."""

    def __init__(self, server: RedisServer) -> None:
        self.server = server
        self.names: list[str] = []
        self._admin = server.client()
        self._monitor = server.client(socket_timeout=None).monitor()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> ScriptCalls:
        self._monitor.__enter__()
        self._thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._done.set()
        self._admin.ping()  # a command for the reader to see, so it sees it is done
        self._thread.join(timeout=10)
        self._monitor.__exit__()
        self._admin.close()

    def _read(self) -> None:
        names: dict[str, str] = {}
        while not self._done.is_set():
            command = self._monitor.next_command()
            if command["command"].split(" ", 1)[0].upper() not in ("EVALSHA", "EVAL"):
                continue
            address = f"{command['client_address']}:{command['client_port']}"
            if address not in names:  # the client is connected now: it is listed
                names.update(self._client_names())
            self.names.append(names.get(address, address))

    def _client_names(self) -> dict[str, str]:
        return {
            client["addr"]: client["name"] for client in self._admin.client_list() if client["name"]
        }


def grant_of(limiter: LeasedLimiter) -> Grant:
    grant = limiter.last_grant
    assert grant is not None
    return grant


def holders_in_redis(client: redis.Redis, key: str) -> list[bytes]:
    return [field for field in client.hkeys(key) if field.startswith(b"h:")]


def test_the_processes_of_a_host_share_one_lease_renewed_by_one(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    key, path = "lease:{host}", tmp_path / "lease"
    client = redis_server.client()
    # This process decides from the host's share too, and never renews (no renewer of
    # its own, and it never asks to lead until the end).
    host = LeasedLimiter.open_host(client, key, path, RULE, background=False)
    workers: list[Worker] = []
    try:
        with ScriptCalls(redis_server) as calls:
            # Alone, the asyncio worker claims the renewing; a rule new to Redis is quiet
            # for a lease, then the whole rule is the host's.
            workers.append(Worker(redis_server, key, path, "worker-0", "asyncio"))
            eventually(lambda: host.state is HolderState.LEASED, "the host leased")
            epoch = grant_of(host).epoch
            assert grant_of(host) == Grant(**WHOLE_RULE, epoch=epoch)
            # Two more workers, renewing threads of their own: they decide from the one
            # share, and the first renewer renews alone, for one holder in Redis.
            workers += [Worker(redis_server, key, path, f"worker-{i}", "sync") for i in (1, 2)]
            seen = len(calls.names)
            eventually(lambda: len(calls.names) >= seen + 10, "ten renewals more")
            assert set(calls.names) == {"worker-0"}
            holders = holders_in_redis(client, key)
            assert len(holders) == 1
            assert grant_of(host) == Grant(**WHOLE_RULE, epoch=epoch)

            # The renewer killed: another process's renewer finds it dead and takes over,
            # before its last lease (sent before it died) ends, a lease after the kill.
            killed_at = time.monotonic()
            workers[0].kill()
            eventually(lambda: calls.names[-1] != "worker-0", "another renewer")
            taker = calls.names[-1]
            first = calls.names.index(taker)
            assert calls.names[:first] == ["worker-0"] * first
            time.sleep(max(0.0, killed_at + RULE.lease - time.monotonic()) + 0.1)
            assert set(calls.names[first:]) == {taker}
            assert host.state is HolderState.LEASED
            assert host.try_acquire()
            assert grant_of(host) == Grant(**WHOLE_RULE, epoch=epoch)
            assert holders_in_redis(client, key) == holders

            # A renewer that closes steps down, its process alive: the last worker takes
            # over; once it closes too, no live process renews, and this one may.
            closing = next(worker for worker in workers if worker.name == taker)
            last = next(worker for worker in workers[1:] if worker is not closing)
            closing.close()
            eventually(lambda: calls.names[-1] == last.name, "the last worker renewing")
            last.close()
            assert closing.process.poll() is None and last.process.poll() is None
            assert host.lead()
        host.close()
        assert host.closed
    finally:
        for worker in workers:
            worker.kill()
        client.close()


def test_what_an_opener_of_the_file_is_refused(tmp_path: Path) -> None:
    # No call is made: a client that never connects.
    client = redis.Redis(port=1)

    def open_host(path: Path, rule: LeaseRule = RULE, **options: Any) -> LeasedLimiter:
        return LeasedLimiter.open_host(client, "k", path, rule, background=False, **options)

    missing = tmp_path / "missing" / "lease"
    with pytest.raises(FileNotFoundError) as raised:
        open_host(missing)
    assert raised.value.filename == os.fspath(missing)

    # A file of another kind: a shared limiter's, left as it was.
    limiter = tmp_path / "limiter"
    librate.Limiter.open(limiter, limit=10, period=1).close()
    before = limiter.read_bytes()
    with pytest.raises(librate.Incompatible) as refused:
        open_host(limiter)
    held = "a librate limiter holding GCRA, limit 10, period_ns 1000000000, burst 10"
    assert str(refused.value) == f"{limiter}: {held}"
    assert limiter.read_bytes() == before

    # A host's holder made for a lease of 2 s: another lease, or another rule, is another
    # holder's file.
    lease = tmp_path / "lease"
    open_host(lease, LeaseRule(Config.gcra(1000, 1), lease=2)).close()
    before = lease.read_bytes()
    held = (
        "a librate lease holder for a host of GCRA, limit 1000, period_ns 1000000000, "
        "burst 1000, leased 2000000 us at a time"
    )
    for rule in (RULE, LeaseRule(Config.gcra(999, 1), lease=2)):
        with pytest.raises(librate.Incompatible) as refused:
            open_host(lease, rule)
        assert str(refused.value) == f"{lease}: {held}"
    assert lease.read_bytes() == before

    # What a holder of its own is refused, a host's is too.
    with pytest.raises(librate.InvalidConfig, match="^fallback: "):
        open_host(tmp_path / "other", fallback=Config.gcra(10, 1, burst=2**63))
    with pytest.raises(TypeError, match="rule"):
        open_host(tmp_path / "other", Config.gcra(10, 1))  # type: ignore[arg-type]


def test_a_host_holder_of_one_process_leads_and_steps_down(tmp_path: Path) -> None:
    client = redis.Redis(port=1)
    path = tmp_path / "lease"
    one = LeasedLimiter.open_host(client, "k", path, RULE, background=False)
    other = LeasedLimiter.open_host(client, "k", path, RULE, background=False)
    assert (one.path, other.path) == (path, path)
    # One process is one renewer: both lead, and closing one leaves the other leading.
    assert one.lead() and other.lead()
    one.close()
    assert other.lead()
    other.close()
    with pytest.raises(librate.ClosedError):
        other.lead()
    # A holder of its own always leads, and is no host's.
    own = LeasedLimiter(client, "k", RULE, name="own", background=False)
    assert own.lead() and own.path is None
    own.close()
