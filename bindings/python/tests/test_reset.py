"""Limiter.reset, KeyedLimiter.reset and KeyedLimiter.stats: a reset limiter of each
algorithm decides as a new one, a reset key as a new key, a key not in the table stays
out, refusals are counted (across processes for a shared table), and threads racing
resets never get more than a limit between two resets. Expected values are worked out by
hand from the contract."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest

import librate
from helpers import MS, SECOND
from shared_tables import FROZEN, HOUR

#: (algorithm, limit, period s, burst, fill units, fill at, n, at, remaining, reset_after)
#: after the fill, one unit at `at` is denied; after a reset, `n` units at `at` are
#: admitted as by a new limiter, leaving `remaining`, full again `reset_after` later.
CASES = [
    # GCRA 1/s, burst 2: TAT 0.5 + 1 s after the reset, 1 left, full 1 s later.
    ("gcra", 1, 1, 2, 2, 0, 1, 500 * MS, 1, SECOND),
    # Fixed window 2/min: 1 of 2 in the window that ends at 60 s.
    ("fixed_window", 2, 60, None, 2, 24 * SECOND, 1, 36 * SECOND, 1, 24 * SECOND),
    # Sliding window 10/min, 10 at 30 s: at 65 s they weigh 10·55/60 = 9.17; after the
    # reset all 10 fit, both counts 0 from window 3 (180 s).
    ("sliding_window", 10, 60, None, 10, 30 * SECOND, 10, 65 * SECOND, 0, 115 * SECOND),
    # Sliding log 2/min, full at 10 s: after the reset 2 fit at 20 s, gone at 80 s.
    ("sliding_log", 2, 60, None, 2, 10 * SECOND, 2, 20 * SECOND, 0, 60 * SECOND),
]


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_a_reset_limiter_decides_as_a_new_one(case: tuple) -> None:
    algorithm, limit, period, burst, fill, fill_at, n, at, remaining, reset_after = case
    with librate.Limiter(algorithm=algorithm, limit=limit, period=period, burst=burst) as limiter:
        assert limiter.acquire(fill, now_ns=fill_at).allowed
        assert not limiter.acquire(now_ns=at).allowed
        limiter.reset()
        decision = limiter.acquire(n, now_ns=at)
        capacity = burst or limit
        assert decision == librate.Decision(True, capacity, remaining, 0, reset_after, 0)


def test_a_reset_key_and_the_statistics() -> None:
    # GCRA 1 per 10 s, burst 1, capacity 1 (two slots): a TAT 10 s after an admission.
    table = librate.KeyedLimiter(limit=1, period=10, capacity=1)
    assert table.stats(now_ns=0) == librate.KeyedStats(1, 2, 0, 0)
    assert table.acquire("a", now_ns=0).allowed
    assert table.acquire(b"b", now_ns=0).allowed
    with pytest.raises(librate.TableFull):
        table.acquire("c", now_ns=0)
    table.reset("c")  # not in the table: stays out
    with pytest.raises(librate.TableFull):
        table.acquire("c", now_ns=0)
    # a is new again, but its former state keeps its slot until 10 s: a query needs no
    # slot, an admission does.
    table.reset("a")
    assert table.acquire("a", 0, now_ns=SECOND).remaining == 1
    with pytest.raises(librate.TableFull):
        table.acquire("a", now_ns=SECOND)
    assert table.acquire("a", now_ns=10 * SECOND) == librate.Decision(True, 1, 0, 0, 10 * SECOND)
    # At 10 s: a live (TAT 20 s), b fresh; three refusals.
    assert table.stats(now_ns=10 * SECOND) == librate.KeyedStats(1, 2, 1, 3)
    assert table.stats().table_full == 3


def test_the_readme_example(capsys: pytest.CaptureFixture[str]) -> None:
    # The README's lines, as they are there (scripts/check-docs.py checks them).
    users = librate.KeyedLimiter(limit=10, period=60, capacity=100_000)
    users.reset("customer-42")  # support lifted their limit
    stats = users.stats()
    print(f"{stats.live_keys}/{stats.capacity} live, {stats.table_full} refused")
    assert capsys.readouterr().out == "0/100000 live, 0 refused\n"


def test_a_closed_limiter_cannot_be_reset_or_read() -> None:
    limiter = librate.Limiter(limit=1, period=1)
    table = librate.KeyedLimiter(limit=1, period=1, capacity=1)
    limiter.close()
    table.close()
    with pytest.raises(librate.ClosedError):
        limiter.reset()
    with pytest.raises(librate.ClosedError):
        table.reset("a")
    with pytest.raises(librate.ClosedError):
        table.stats()


def test_threads_racing_resets_admit_at_most_a_limit_between_resets() -> None:
    # 8 units at a frozen time; 4 threads take units while this one resets 50 times:
    # every acquire is decided before or after some reset, so at most 8 get through
    # between two resets, and the state left agrees with itself.
    resets = 50
    limiter = librate.Limiter(algorithm="sliding_log", limit=8, period=HOUR)
    table = librate.KeyedLimiter(limit=8, period=HOUR, capacity=resets)
    admitted = [0, 0]
    lock = threading.Lock()

    def take() -> None:
        mine = [0, 0]
        for _ in range(500):
            mine[0] += limiter.acquire(now_ns=FROZEN).allowed
            mine[1] += table.acquire("k", now_ns=FROZEN).allowed
        with lock:
            admitted[0] += mine[0]
            admitted[1] += mine[1]

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for _ in range(resets):
        limiter.reset()
        table.reset("k")
    for thread in threads:
        thread.join()
    assert admitted[0] <= 8 * (resets + 1)
    assert admitted[1] <= 8 * (resets + 1)
    left = limiter.acquire(0, now_ns=FROZEN).remaining
    assert sum(limiter.acquire(now_ns=FROZEN).allowed for _ in range(9)) == left


def test_a_shared_tables_resets_and_refusals_hold_across_processes(tmp_path: Path) -> None:
    # Capacity 1 (two slots), full of live keys. Two forked processes each have two new
    # keys refused; one of them resets key a and a shared limiter.
    table = librate.KeyedLimiter.open(tmp_path / "table", limit=1, period=HOUR, capacity=1)
    limiter = librate.Limiter.open(tmp_path / "limiter", limit=1, period=HOUR)
    assert table.acquire("a", now_ns=FROZEN).allowed
    assert table.acquire("b", now_ns=FROZEN).allowed
    assert limiter.acquire(now_ns=FROZEN).allowed
    context = multiprocessing.get_context("fork")

    def child(index: int) -> None:
        mine = librate.KeyedLimiter.open(tmp_path / "table", limit=1, period=HOUR, capacity=1)
        for key in (f"c{index}", f"d{index}"):
            with pytest.raises(librate.TableFull):
                mine.acquire(key, now_ns=FROZEN)
        if index == 1:
            mine.reset("a")
            librate.Limiter.open(tmp_path / "limiter", limit=1, period=HOUR).reset()

    for index in range(2):
        process = context.Process(target=child, args=(index,))
        process.start()
        process.join()
        assert process.exitcode == 0
    assert limiter.acquire(now_ns=FROZEN).allowed
    # a's former state holds its slot for the hour, so a is refused as a new key.
    with pytest.raises(librate.TableFull):
        table.acquire("a", now_ns=FROZEN)
    assert table.stats(now_ns=FROZEN) == librate.KeyedStats(1, 2, 1, 5)
