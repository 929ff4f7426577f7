"""Every error: each C status maps by number to its exception, and no Python input
(None, negative, huge, float, bool, wrong type) reaches C unchecked."""

from __future__ import annotations

import asyncio
import copy
import math
import pickle
from datetime import timedelta
from typing import Any

import pytest

import librate
from librate import _errors, _ffi, _limiter

# Values ctypes would mangle or accept as a uint64_t, and what each must raise instead.
BAD_INTS: list[tuple[Any, type[Exception]]] = [
    (-1, ValueError),
    (2**64, ValueError),
    (2**64 + 1, ValueError),  # ctypes would wrap this to 1
    (-(2**63), ValueError),
    (1.0, TypeError),
    (True, TypeError),
    (None, TypeError),
    ("1", TypeError),
    (b"1", TypeError),
]


@pytest.mark.parametrize(
    ("status", "error", "also"),
    [
        (_ffi.RATE_E_NULL, librate.ClosedError, ValueError),
        (_ffi.RATE_E_INVALID_CONFIG, librate.InvalidConfig, ValueError),
        (_ffi.RATE_E_INSUFFICIENT_CAPACITY, librate.InsufficientCapacity, ValueError),
        (_ffi.RATE_E_TABLE_FULL, librate.TableFull, librate.LibrateError),
        (_ffi.RATE_E_UNSUPPORTED, librate.Unsupported, ValueError),
        (_ffi.RATE_E_INTERNAL, librate.InternalError, RuntimeError),
    ],
)
def test_status_maps_by_number(status: int, error: type, also: type) -> None:
    raised = _errors.error_for(status, "some text")
    assert type(raised) is error and isinstance(raised, also)
    assert isinstance(raised, librate.LibrateError) and raised.code == status
    assert error.code == status
    # The text comes from the library; the class does not depend on it.
    assert _limiter.status_text(status) and _limiter.status_text(status) != "unknown status"


def test_unknown_status_is_still_an_error() -> None:
    raised = _errors.error_for(-99, "from a newer library")
    assert type(raised) is librate.LibrateError and raised.code == -99
    assert _limiter.status_text(-99) == "unknown status"


def test_status_constants_are_the_contract() -> None:
    assert (_ffi.RATE_OK, _ffi.RATE_LIMITED) == (0, 1)
    assert [
        _ffi.RATE_E_NULL,
        _ffi.RATE_E_INVALID_CONFIG,
        _ffi.RATE_E_INSUFFICIENT_CAPACITY,
        _ffi.RATE_E_TABLE_FULL,
        _ffi.RATE_E_UNSUPPORTED,
        _ffi.RATE_E_INTERNAL,
    ] == [-1, -2, -3, -4, -5, -6]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"algorithm": "token_bucket"}, ValueError),
        ({"algorithm": 0}, TypeError),
        ({"algorithm": None}, TypeError),
        ({"limit": 0}, librate.InvalidConfig),
        ({"period": 0}, librate.InvalidConfig),
        ({"period": timedelta(0)}, librate.InvalidConfig),
        ({"period": 1e-10}, librate.InvalidConfig),  # rounds to 0 ns
        ({"limit": 10, "period": 9e-9}, librate.InvalidConfig),  # > 1 unit per ns
        (
            {"limit": 1, "period": 18_446_744_073, "burst": 2},
            librate.InvalidConfig,
        ),  # B*T overflows
        ({"period": -1}, ValueError),
        ({"period": timedelta(microseconds=-1)}, ValueError),
        ({"period": math.nan}, ValueError),
        ({"period": math.inf}, ValueError),
        ({"period": 18_446_744_074}, ValueError),  # past 2**64-1 ns
        ({"period": 1e300}, ValueError),
        ({"period": "1"}, TypeError),
        ({"period": True}, TypeError),
        ({"period": None}, TypeError),
        ({"period": 1j}, TypeError),
        ({"burst": 0}, ValueError),
        ({"burst": 1.5}, TypeError),
        ({"burst": -1}, ValueError),
        ({"algorithm": "fixed_window", "burst": 2}, ValueError),
    ],
)
def test_bad_config(kwargs: dict[str, Any], error: type[Exception]) -> None:
    arguments = {"limit": 1, "period": 1} | kwargs
    with pytest.raises(error):
        librate.Limiter(**arguments)


@pytest.mark.parametrize(("value", "error"), BAD_INTS)
def test_bad_limit(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        librate.Limiter(limit=value, period=1)


def test_invalid_config_message_names_the_config() -> None:
    with pytest.raises(librate.InvalidConfig, match="limit=0"):
        librate.Limiter(limit=0, period=1)


@pytest.mark.parametrize(("value", "error"), BAD_INTS)
def test_bad_cost(value: Any, error: type[Exception]) -> None:
    limiter = librate.Limiter(limit=5, period=1)
    calls = [
        lambda: limiter.try_acquire(value),
        lambda: limiter.acquire(value),
        lambda: limiter.acquire(value, now_ns=0),
        lambda: limiter.reserve(value, max_wait=1),
        lambda: limiter.wait(value),
        lambda: asyncio.run(limiter.wait_async(value)),
        lambda: limiter.limit(value),
    ]
    for call in calls:
        with pytest.raises(error):
            call()
    assert limiter.acquire(0, now_ns=0).remaining == 5  # nothing was taken


@pytest.mark.parametrize(("value", "error"), [bad for bad in BAD_INTS if bad[0] is not None])
def test_bad_now(value: Any, error: type[Exception]) -> None:
    limiter = librate.Limiter(limit=5, period=1)  # (now_ns=None means "now")
    with pytest.raises(error):
        limiter.acquire(now_ns=value)
    with pytest.raises(error):
        limiter.reserve(max_wait=1, now_ns=value)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (-1, ValueError),
        (math.nan, ValueError),
        (None, TypeError),
        ("1", TypeError),
        (True, TypeError),
    ],
)
def test_bad_durations(value: Any, error: type[Exception]) -> None:
    limiter = librate.Limiter(limit=5, period=1)
    with pytest.raises(error):
        limiter.reserve(max_wait=value, now_ns=0)
    if value is not None:  # timeout=None means "no timeout"
        with pytest.raises(error):
            limiter.wait(timeout=value)
        with pytest.raises(error):
            limiter.limit(timeout=value)


def test_bad_decorator_arguments() -> None:
    limiter = librate.Limiter(limit=5, period=1)
    with pytest.raises(TypeError, match="parentheses"):
        limiter.limit(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        limiter.limit(wait=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        limiter.limit()(42)  # type: ignore[type-var]


def test_insufficient_capacity_everywhere() -> None:
    limiter = librate.Limiter(limit=5, period=1, burst=2)
    for call in (
        lambda: limiter.try_acquire(3),
        lambda: limiter.acquire(3),
        lambda: limiter.acquire(3, now_ns=0),
        lambda: limiter.reserve(3, max_wait=math.inf, now_ns=0),
        lambda: limiter.wait(3),
        lambda: asyncio.run(limiter.wait_async(3)),
        lambda: limiter.limit(3)(lambda: None)(),
    ):
        with pytest.raises(librate.InsufficientCapacity, match="n=3"):
            call()
    assert limiter.try_acquire(2)


def test_closed_limiter_raises_on_every_call() -> None:
    limiter = librate.Limiter(limit=5, period=1)
    limited = limiter.limit()(lambda: "ran")
    limiter.close()
    assert limiter.closed
    for call in (
        limiter.try_acquire,
        limiter.acquire,
        lambda: limiter.acquire(now_ns=0),
        lambda: limiter.reserve(max_wait=1),
        limiter.wait,
        lambda: asyncio.run(limiter.wait_async()),
        limited,
    ):
        with pytest.raises(librate.ClosedError, match="Limiter is closed"):
            call()
    assert "closed" in repr(limiter)


def test_cannot_copy_or_pickle() -> None:
    limiter = librate.Limiter(limit=5, period=1)
    for attempt in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="cannot be pickled or copied"):
            attempt(limiter)


def test_missing_symbol_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(_ffi.SIGNATURES, "rate_from_the_future", (None, ()))
    library = _ffi.Library(_ffi.lib._cdll, _ffi.lib.path)
    with pytest.raises(
        librate.LibraryError, match="has no function rate_from_the_future"
    ) as raised:
        library.rate_from_the_future  # noqa: B018
    assert str(_ffi.lib.path) in str(raised.value)
    with pytest.raises(librate.LibraryError, match="rate_from_the_future"):
        library.unchecked("rate_from_the_future")
    with pytest.raises(AttributeError):
        library.not_a_rate_function  # noqa: B018


def test_unchecked_twin() -> None:
    # The fast path's function: the declared restype, no argtypes, a separate object.
    twin = _ffi.lib.unchecked("rate_limiter_acquire")
    assert twin is not _ffi.lib.rate_limiter_acquire
    assert twin.restype is _ffi.SIGNATURES["rate_limiter_acquire"][0] and twin.argtypes is None
    assert _ffi.lib.rate_limiter_acquire.argtypes is not None
