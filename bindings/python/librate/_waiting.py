"""Runs a wait plan blockingly or in asyncio.

A limiter describes a wait as a generator (``Plan``) that yields how many nanoseconds to
sleep and finally returns the ``Decision``; the same plan is run by ``block`` (time.sleep)
for ``wait()`` and by ``pause`` (asyncio.sleep) for ``wait_async()``, so the two can never
disagree about when a caller is admitted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Generator
from typing import TypeVar

from ._convert import NS_PER_SECOND

T = TypeVar("T")

#: Yields sleeps in ns, returns the outcome.
Plan = Generator[int, None, T]

# time.sleep rejects durations past ~292 years (int64 ns), so long sleeps go in steps
# of a day; a saturated "never" then sleeps forever, as asked, without an OverflowError.
_LONGEST_SLEEP_NS = 86_400 * NS_PER_SECOND


def _in_steps(plan: Plan[T]) -> Generator[float, None, T]:
    """``plan`` with each sleep cut into steps in seconds, none longer than a day."""
    while True:
        try:
            ns = next(plan)
        except StopIteration as finished:
            return finished.value  # type: ignore[no-any-return]
        while ns > 0:
            step = min(ns, _LONGEST_SLEEP_NS)
            yield step / NS_PER_SECOND
            ns -= step


def block(plan: Plan[T]) -> T:
    """Runs ``plan``, sleeping the thread."""
    steps = _in_steps(plan)
    try:
        while True:
            time.sleep(next(steps))
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]


async def pause(plan: Plan[T]) -> T:
    """Runs ``plan``, sleeping the task."""
    steps = _in_steps(plan)
    try:
        while True:
            await asyncio.sleep(next(steps))
    except StopIteration as finished:
        return finished.value  # type: ignore[no-any-return]
