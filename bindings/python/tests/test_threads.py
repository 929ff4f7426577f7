"""Real threads on one limiter: ctypes releases the GIL for each call, and the C library
must still never admit more than the limit."""

from __future__ import annotations

import threading

import librate
from helpers import SECOND, THREADS, hammer


def test_four_threads_at_a_frozen_time_admit_exactly_the_limit() -> None:
    limiter = librate.Limiter(limit=100, period=3600)
    admitted = hammer(lambda: limiter.acquire(now_ns=7 * SECOND).allowed)
    assert sum(admitted) == 100
    assert not limiter.acquire(now_ns=7 * SECOND).allowed


def test_four_threads_with_bursts_and_costs() -> None:
    limiter = librate.Limiter(limit=10, period=3600, burst=90)
    admitted = hammer(lambda: limiter.acquire(3, now_ns=0).allowed)
    assert sum(admitted) == 30  # 90 units in costs of 3


def test_four_threads_try_acquire() -> None:
    # The real clock: one unit per hour, burst 50; the run takes far less than an hour,
    # so exactly the burst is admitted.
    limiter = librate.Limiter(limit=1, period=3600, burst=50)
    assert sum(hammer(limiter.try_acquire)) == 50


def test_close_while_threads_call() -> None:
    # Every call either completes or raises ClosedError: none runs on freed memory.
    limiter = librate.Limiter(limit=1_000_000, period=1)
    outcomes: list[str] = []
    started = threading.Barrier(THREADS + 1)

    def run() -> None:
        started.wait()
        for _ in range(100_000):
            try:
                limiter.try_acquire()
            except librate.ClosedError:
                outcomes.append("closed")
                return
        outcomes.append("finished")

    threads = [threading.Thread(target=run) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    started.wait()
    limiter.close()
    for thread in threads:
        thread.join()
    assert len(outcomes) == THREADS and set(outcomes) <= {"closed", "finished"}
