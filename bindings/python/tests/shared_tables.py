"""What the tests of tables in shared files use: the two kinds of table (``Limiter.open``,
``KeyedLimiter.open``) behind one interface, a small table to refuse or copy, and a
forked child to run a test's other process in."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import librate
from helpers import SECOND

HOUR = 3600
#: The instant every process decides at: 1000 s into the first hour-long window.
FROZEN = 1_000 * SECOND
PROCESSES = 4
THREADS = 4

Table = librate.Limiter | librate.KeyedLimiter
Key = str | bytes


@dataclass(frozen=True)
class Kind:
    """A kind of table in a file: how to open one and take units from it. ``keys`` are
    the limits a test takes units of: a limiter has one (written None), a keyed table
    one per key, among them the empty key and bytes that are not UTF-8."""

    name: str
    opener: Callable[..., Table]
    keys: tuple[Key | None, ...]
    #: What ``opener`` takes beside the configuration (a keyed table's capacity).
    extra: dict[str, Any] = field(default_factory=dict)

    def open(self, path: str | Path, **config: Any) -> Table:
        return self.opener(path, **config, **self.extra)

    def acquire(
        self, table: Table, key: Key | None, n: int = 1, *, now_ns: int
    ) -> librate.Decision:
        """``acquire(n)`` of a limiter (``key`` None), ``acquire(key, n)`` of a table."""
        if isinstance(table, librate.KeyedLimiter):
            assert key is not None
            return table.acquire(key, n, now_ns=now_ns)
        return table.acquire(n, now_ns=now_ns)

    def __str__(self) -> str:
        return self.name


LIMITER = Kind("limiter", librate.Limiter.open, (None,))
KEYED = Kind(
    "keyed", librate.KeyedLimiter.open, ("alice", "bob", "", b"\x00\xff"), {"capacity": 64}
)
KINDS = (LIMITER, KEYED)

#: The configuration of the refusal tests' tables: L=10, P=1 s, B=0 meaning 10.
GCRA_10: dict[str, Any] = {"limit": 10, "period": 1}


def make_table(kind: Kind, path: Path) -> bytes:
    """A GCRA_10 table of ``kind`` at ``path`` with 3 units of its first key taken at
    1 s (so its state is not all zero): its bytes."""
    with kind.open(path, **GCRA_10) as table:
        assert kind.acquire(table, kind.keys[0], 3, now_ns=SECOND).allowed
    return path.read_bytes()


def in_child(body: Callable[..., None], *args: Any) -> None:
    """Runs ``body(*args)`` in a forked process, which must exit 0 (an assertion that
    fails there makes it exit 1, its traceback on stderr)."""
    child = multiprocessing.get_context("fork").Process(target=body, args=args)
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0
