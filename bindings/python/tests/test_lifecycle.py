"""Each native handle is freed exactly once: by close(), by the context manager, or by
the finalizer, and never while a call on it is in flight."""

from __future__ import annotations

import gc

import pytest

import librate
from helpers import count_frees
from librate import _limiter


@pytest.fixture
def frees(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Addresses passed to the free function, in order."""
    return count_frees(monkeypatch, _limiter._LimiterHandle)


def address(limiter: librate.Limiter) -> int:
    return limiter._handle.value


def test_close_frees_once(frees: list[int]) -> None:
    limiter = librate.Limiter(limit=1, period=1)
    handle = address(limiter)
    limiter.close()
    assert frees == [handle]
    limiter.close()
    del limiter
    gc.collect()
    assert frees == [handle]


def test_context_manager_frees_once(frees: list[int]) -> None:
    with librate.Limiter(limit=1, period=1) as limiter:
        handle = address(limiter)
        assert limiter.acquire(now_ns=0).allowed
        assert frees == []
    assert frees == [handle] and limiter.closed
    limiter.close()
    assert frees == [handle]


def test_finalizer_frees_once(frees: list[int]) -> None:
    limiter = librate.Limiter(limit=1, period=1)
    handle = address(limiter)
    del limiter
    gc.collect()
    assert frees == [handle]


def test_finalizer_in_a_cycle(frees: list[int]) -> None:
    limiter = librate.Limiter(limit=1, period=1)
    handle = address(limiter)
    cycle: list[object] = [limiter]
    cycle.append(cycle)
    del limiter, cycle
    gc.collect()
    assert frees == [handle]


def test_close_waits_for_calls_in_flight(frees: list[int]) -> None:
    # A call in flight holds the handle, as ctypes holds its arguments during a call.
    limiter = librate.Limiter(limit=1, period=1)
    in_flight = limiter._handle
    limiter.close()
    assert frees == []  # not freed under the running call
    with pytest.raises(librate.ClosedError):
        limiter.try_acquire()
    del in_flight
    assert len(frees) == 1


def test_failed_construction_frees_nothing(frees: list[int]) -> None:
    with pytest.raises(librate.InvalidConfig):
        librate.Limiter(limit=0, period=1)
    gc.collect()
    assert frees == []
