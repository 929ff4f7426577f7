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
        (_ffi.RATE_E_INCOMPATIBLE, librate.Incompatible, librate.LibrateError),
        (_ffi.RATE_E_REPLY, librate.ReplyError, librate.RedisError),
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
        _ffi.RATE_E_IO,
        _ffi.RATE_E_INCOMPATIBLE,
        _ffi.RATE_E_REPLY,
    ] == [-1, -2, -3, -4, -5, -6, -7, -8, -9]


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


# Each message names the field, its value and the bound it broke. The bounds follow from
# the rules in docs/decision.md; the numbers are worked out in the comments.
TOLERANCE = "(burst x (period_ns / limit) must be at most 2^64 - 257 ns)"
CONFIG_MESSAGES: list[tuple[dict[str, Any], str]] = [
    ({"limit": 0}, "limit 0: must be at least 1"),
    ({"limit": -1}, "limit -1: must be at least 1"),
    ({"limit": 2**64}, "limit 18446744073709551616: must be at most 2**64-1"),
    # GCRA: T = floor(P / L) >= 1, so L <= P = 10**9.
    (
        {"limit": 10**9 + 1},
        "limit 1000000001: must be at most 1000000000 for GCRA with period_ns 1000000000"
        " (at most one unit per ns)",
    ),
    # 1e-12 s is 0.001 ns, which would round to a period of 0.
    ({"period": 1e-12}, "period 1e-12 s: must be at least 1 ns"),
    ({"period": 0}, "period 0 s: must be at least 1 ns"),
    ({"period": -1}, "period -1 s: must be at least 1 ns"),
    ({"period": timedelta(0)}, "period 0:00:00: must be at least 1 ns"),
    (
        {"period": 18_446_744_074},
        "period 18446744074 s: must be at most 2**64-1 ns (about 584 years)",
    ),
    ({"burst": 0}, "burst 0: must be at least 1 (None means limit)"),
    # T = P = 18446744073 s; 2 * T passes 2**64 - 257 ns, 1 * T does not.
    (
        {"limit": 1, "period": 18_446_744_073, "burst": 2},
        f"burst 2: must be at most 1 for GCRA with limit 1 and period_ns 18446744073000000000"
        f" {TOLERANCE}",
    ),
    # floor((2**64-1) / 10**9) * 2**bits(L) + L <= 2**64-257 holds for 29 bits, not 30.
    (
        {"algorithm": "fixed_window", "limit": 10**9},
        "limit 1000000000: must be at most 536870911 for the fixed window with period_ns"
        " 1000000000",
    ),
    # The log's ring holds at most 2**20 timestamps.
    (
        {"algorithm": "sliding_log", "limit": 2**20 + 1},
        "limit 1048577: must be at most 1048576 for the sliding log with period_ns 1000000000",
    ),
    (
        {"algorithm": "token_bucket"},
        "algorithm 'token_bucket': must be one of fixed_window, gcra, sliding_log, sliding_window",
    ),
    ({"algorithm": "fixed_window", "burst": 2}, "burst 2: applies to gcra only, not fixed_window"),
]


@pytest.mark.parametrize(("kwargs", "message"), CONFIG_MESSAGES)
def test_invalid_config_names_the_field_and_the_bound(kwargs: dict[str, Any], message: str) -> None:
    for make in (
        lambda: librate.Limiter(**({"limit": 1, "period": 1} | kwargs)),
        lambda: librate.KeyedLimiter(**({"limit": 1, "period": 1, "capacity": 8} | kwargs)),
    ):
        with pytest.raises(librate.InvalidConfig) as raised:
            make()
        assert str(raised.value) == message
        assert raised.value.code == _ffi.RATE_E_INVALID_CONFIG


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        (0, "capacity 0: must be at least 1"),
        (-1, "capacity -1: must be at least 1"),
        (2**64, "capacity 18446744073709551616: must be at most 2**64-1"),
        # GCRA takes 32 bytes per key; (2**64 - 1) * 32 bytes fit no address space.
        (
            2**64 - 1,
            "capacity 18446744073709551615: its table needs 590295810358705651680 bytes"
            " (32 per key), more than can be allocated",
        ),
    ],
)
def test_invalid_capacity_names_the_bound(capacity: int, message: str) -> None:
    with pytest.raises(librate.InvalidConfig) as raised:
        librate.KeyedLimiter(limit=10, period=1, capacity=capacity)
    assert str(raised.value) == message


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
        lambda: limiter.rate_limited(value),
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
            limiter.rate_limited(timeout=value)


def test_bad_decorator_arguments() -> None:
    limiter = librate.Limiter(limit=5, period=1)
    with pytest.raises(TypeError, match="parentheses"):
        limiter.rate_limited(lambda: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        limiter.rate_limited(wait=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        limiter.rate_limited()(42)  # type: ignore[type-var]


def test_insufficient_capacity_everywhere() -> None:
    limiter = librate.Limiter(limit=5, period=1, burst=2)
    for call in (
        lambda: limiter.try_acquire(3),
        lambda: limiter.acquire(3),
        lambda: limiter.acquire(3, now_ns=0),
        lambda: limiter.reserve(3, max_wait=math.inf, now_ns=0),
        lambda: limiter.wait(3),
        lambda: asyncio.run(limiter.wait_async(3)),
        lambda: limiter.rate_limited(3)(lambda: None)(),
    ):
        with pytest.raises(librate.InsufficientCapacity, match="n=3"):
            call()
    assert limiter.try_acquire(2)


def test_closed_limiter_raises_on_every_call() -> None:
    limiter = librate.Limiter(limit=5, period=1)
    limited = limiter.rate_limited()(lambda: "ran")
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


def test_renamed_names_warn_and_still_work() -> None:
    # One meaning per word (docs/python.md, Names across languages): the old names work
    # for one release, each with a DeprecationWarning pointing at the caller's line.
    limiter = librate.Limiter(limit=2, period=3600, burst=3)
    with pytest.warns(DeprecationWarning, match=r"Config\.capacity .*: use Config\.max_n") as seen:
        assert limiter.config.capacity == 3
    assert seen[0].filename == __file__
    policy = librate.Policy([librate.Config.gcra(2, 1), librate.Config.fixed_window(5, 60)])
    with pytest.warns(DeprecationWarning, match=r"Policy\.capacity .*: use Policy\.max_n"):
        assert policy.capacity == 2
    with pytest.warns(DeprecationWarning, match=r"Limiter\.limit\(\) .*: use Limiter\.rate_"):
        decorate = limiter.limit(2)
    limited = decorate(lambda: "ran")
    assert limited() == "ran"
    with pytest.raises(librate.RateLimited):
        limited()  # 2 of the burst of 3 taken, within the hour: 2 more do not fit
    keyed = librate.KeyedLimiter(limit=1, period=3600, capacity=2)
    with pytest.warns(DeprecationWarning, match=r"KeyedLimiter\.limit\(\) is deprecated"):
        per_user = keyed.limit(lambda user: user)(lambda user: user)
    assert per_user("ann") == "ann"
    with pytest.raises(librate.RateLimited):
        per_user("ann")
