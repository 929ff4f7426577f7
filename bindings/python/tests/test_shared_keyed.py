"""KeyedLimiter.open beyond what a limiter shares (test_shared.py runs the common tests on
both kinds): the capacity and the kind are part of a file's identity, and workers killed
(SIGKILL) in the middle of inserting keys leave a table every key still decides in, whose
every slot can be taken again."""

from __future__ import annotations

import faulthandler
import multiprocessing
import random
import threading
import time
from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest

import librate
from helpers import MS, SECOND
from shared_tables import (
    FROZEN,
    GCRA_10,
    HOUR,
    KEYED,
    LIMITER,
    PROCESSES,
    THREADS,
    make_table,
)


@pytest.mark.parametrize("capacity", [1, 63, 65, 128])
def test_another_capacity_is_refused_untouched(tmp_path: Path, capacity: int) -> None:
    path = tmp_path / "table"
    before = make_table(KEYED, path)  # capacity 64
    with pytest.raises(librate.Incompatible):
        librate.KeyedLimiter.open(path, **GCRA_10, capacity=capacity)
    assert path.read_bytes() == before


def test_a_limiter_and_a_keyed_table_are_not_each_other(tmp_path: Path) -> None:
    # The same configuration, of the other kind: refused both ways, both files unchanged.
    limiter = tmp_path / "limiter"
    limiter_bytes = make_table(LIMITER, limiter)
    table = tmp_path / "table"
    table_bytes = make_table(KEYED, table)
    with pytest.raises(librate.Incompatible):
        KEYED.open(limiter, **GCRA_10)
    with pytest.raises(librate.Incompatible):
        LIMITER.open(table, **GCRA_10)
    assert limiter.read_bytes() == limiter_bytes
    assert table.read_bytes() == table_bytes


def test_a_table_opened_before_a_fork_is_shared_by_the_children(tmp_path: Path) -> None:
    """The handle a process had when it forked (gunicorn's --preload) is the same shared
    table in every child: 4 children try 3 units of one key of limit 3 each, and 3 are
    admitted in all."""
    table = librate.KeyedLimiter.open(tmp_path / "table", limit=3, period=HOUR, capacity=8)
    context = multiprocessing.get_context("fork")
    admitted = context.Value("i", 0)

    def take() -> None:
        for _ in range(3):
            if table.acquire("203.0.113.7", now_ns=FROZEN).allowed:
                with admitted.get_lock():
                    admitted.value += 1

    children = [context.Process(target=take) for _ in range(PROCESSES)]
    for child in children:
        child.start()
    for child in children:
        child.join()
        assert child.exitcode == 0
    assert admitted.value == 3
    table.close()


#: The crash test's table: 2 units a second per key, so that a key inserted at t is fresh
#: again (reclaimable) 1 s later, or 2 s for the sliding window; the inserters' times move
#: on by 1/8 s a key, so they keep reclaiming slots as well as filling them.
KILL_LIMIT = 2
CAPACITY = 256
#: Slots of a table of CAPACITY: rate_keyed_new and rate_keyed_open document "capacity
#: keys whose state is not fresh, and up to twice that many".
MAX_KEYS = 2 * CAPACITY
#: Rounds of kills per algorithm. A process killed inside an insert leaves its entry in
#: the table's registry of claims (64 entries) taken: measured, about 2 of the 4 a round.
#: Over 40 rounds that is more than the registry holds, so later inserts must take over
#: the entries of dead processes or wait for good. The registry is the same for every
#: algorithm; the others run fewer rounds, for what a dead insert leaves in their state.
ROUNDS = {"gcra": 40, "fixed_window": 8, "sliding_window": 8, "sliding_log": 8}
#: Far enough after everything the inserters did (under an hour past FROZEN) that every
#: key is fresh, and a whole number of seconds: at the start of a window.
LATER = FROZEN + 1_000_000 * SECOND

#: The admission of a new key at LATER, worked out for L=2, P=1 s: remaining 1 for all.
#: reset_after: GCRA (B = L = 2, T = 500 ms) the debt T; the fixed window the next
#: window, 1 s away; the sliding window the start of window k+2, 2 s away (in window k+1
#: the 1 of window k still weighs: floor((2P - (P - e)) / P) = 1 for e < P); the log the
#: moment its entry leaves (t - P, t]: 1 s.
ADMITTED_AT_LATER = {
    "gcra": librate.Decision(True, 2, 1, 0, 500 * MS, 0),
    "fixed_window": librate.Decision(True, 2, 1, 0, SECOND, 0),
    "sliding_window": librate.Decision(True, 2, 1, 0, 2 * SECOND, 0),
    "sliding_log": librate.Decision(True, 2, 1, 0, SECOND, 0),
}
#: A query (n = 0) of a fresh key: admitted, all units left, nothing to wait for.
FRESH = librate.Decision(True, KILL_LIMIT, KILL_LIMIT, 0, 0, 0)


def _insert_until_killed(
    path: str, algorithm: str, round_: int, worker: int, progress: Any
) -> None:
    """A child process that opens the table and runs THREADS threads inserting new keys
    without pause, thread t's i-th key at FROZEN + i/8 s, until it is killed. Before each
    insert it records in ``progress`` how many keys the thread has begun; a key refused
    by a table full of live keys is simply skipped."""
    table = librate.KeyedLimiter.open(
        path, algorithm=algorithm, limit=KILL_LIMIT, period=1, capacity=CAPACITY
    )

    def insert(thread: int) -> None:
        slot = worker * THREADS + thread
        for i in count():
            progress[slot] = i + 1
            try:
                table.acquire(f"{round_}-{worker}-{thread}-{i}", now_ns=FROZEN + i * SECOND // 8)
            except librate.TableFull:
                pass

    threads = [threading.Thread(target=insert, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _kill_inserters(path: str, algorithm: str, round_: int, rng: random.Random) -> list[str]:
    """One round: PROCESSES inserting processes, killed (SIGKILL) together at a random
    moment once every thread is inserting. Returns every key any thread began."""
    context = multiprocessing.get_context("fork")
    progress = context.RawArray("Q", PROCESSES * THREADS)
    workers = [
        context.Process(
            target=_insert_until_killed, args=(path, algorithm, round_, worker, progress)
        )
        for worker in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    try:
        # Bounded: a worker that died or never started its threads fails the test.
        deadline = time.monotonic() + 60
        while not all(progress) and time.monotonic() < deadline:
            assert all(worker.is_alive() for worker in workers), "an inserter died"
            time.sleep(0.001)
        assert all(progress), "the inserters did not all start"
        time.sleep(rng.uniform(0, 0.02))
    finally:
        for worker in workers:
            worker.kill()
        for worker in workers:
            worker.join()
    assert all(worker.exitcode == -9 for worker in workers)
    return [
        f"{round_}-{slot // THREADS}-{slot % THREADS}-{i}"
        for slot, begun in enumerate(progress)
        for i in range(begun)
    ]


@pytest.fixture
def watchdog() -> Iterator[None]:
    """Ends the whole run, printing every thread's traceback, if the test runs for two
    minutes (it takes seconds): a table left waiting for good (on a slot or a registry
    entry that no live process will free) hangs a call inside C, where no Python timeout
    reaches, and a hang must not pass for a slow test."""
    faulthandler.dump_traceback_later(120, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.mark.usefixtures("watchdog")
@pytest.mark.parametrize("algorithm", librate.ALGORITHMS)
def test_killed_inserters_leave_a_usable_table(tmp_path: Path, algorithm: str) -> None:
    """4 processes x 4 threads insert new keys while they are killed at random moments,
    ROUNDS[algorithm] times over. Afterwards every key they began still decides (a query at LATER,
    when each is fresh: FRESH, without waiting on a slot a dead process claimed), and the
    table takes MAX_KEYS new keys, each admitted as a new key is, then refuses one more:
    no slot is left claimed for good by a killed process."""
    path = str(tmp_path / "table")
    seed = random.randrange(2**32)
    print("seed", seed)
    rng = random.Random(seed)
    config: dict[str, Any] = {"algorithm": algorithm, "limit": KILL_LIMIT, "period": 1}
    librate.KeyedLimiter.open(path, **config, capacity=CAPACITY).close()
    rounds = range(ROUNDS[algorithm])
    began = [key for round_ in rounds for key in _kill_inserters(path, algorithm, round_, rng)]
    print(f"{len(began)} keys begun over {len(rounds)} rounds")
    with librate.KeyedLimiter.open(path, **config, capacity=CAPACITY) as table:
        for key in began:
            assert table.acquire(key, 0, now_ns=LATER) == FRESH, key
        for i in range(MAX_KEYS):
            assert table.acquire(f"after-{i}", now_ns=LATER) == ADMITTED_AT_LATER[algorithm], i
        with pytest.raises(librate.TableFull):
            table.acquire("one too many", now_ns=LATER)
        # A full table still decides every key: queries never insert.
        assert table.acquire(began[0], 0, now_ns=LATER) == FRESH
        assert table.acquire("after-0", now_ns=LATER).remaining == 0
