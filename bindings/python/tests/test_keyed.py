"""KeyedLimiter (docs/keyed.md) through the Python API, and the per-client middleware.

These need rate_keyed_* in librate.so; against a library without them every test here
fails with a LibraryError naming the missing function.
"""

from __future__ import annotations

import asyncio
import gc
import math
import re
import threading
from fractions import Fraction
from typing import Any

import pytest

import librate
from conftest import Serve
from helpers import MS, SECOND, THREADS, VirtualClock, count_frees, get, hammer
from librate import Decision, KeyedLimiter, _ffi, _limiter
from models import KEYED_CASES, Acquire, ModelCase
from test_errors import BAD_INTS
from test_header_sync import header_functions

HOUR = 3600
BAD_KEYS = [1, None, 1.5, bytearray(b"k"), memoryview(b"k"), ["k"]]


def keyed(**options: object) -> KeyedLimiter:
    return KeyedLimiter(**({"limit": 1, "period": 2, "capacity": 64} | options))  # type: ignore[arg-type]


def test_seed_bob_and_alice() -> None:
    limiter = keyed()  # GCRA, L=1 per 2 s, B=1
    assert limiter.acquire("Bob", now_ns=0).allowed
    denied = limiter.acquire("Bob", now_ns=999 * MS)
    assert not denied.allowed and denied.retry_after_ns == 1001 * MS
    assert limiter.acquire("Alice", now_ns=999 * MS).allowed  # keys are independent
    assert not limiter.acquire("Bob", now_ns=1000 * MS).allowed
    assert limiter.acquire("Bob", now_ns=2001 * MS).allowed
    assert not limiter.acquire("Alice", now_ns=2001 * MS).allowed  # TAT 2999 ms


def test_seed_one_per_second_burst_two() -> None:
    limiter = keyed(limit=1, period=1, burst=2)
    assert [limiter.acquire(b"k", now_ns=0).allowed for _ in range(3)] == [True, True, False]
    assert limiter.acquire(b"k", now_ns=SECOND).allowed


def test_key_forms() -> None:
    limiter = keyed(period=HOUR)
    assert limiter.acquire("caf\u00e9", now_ns=0).allowed
    assert not limiter.acquire("caf\u00e9".encode(), now_ns=0).allowed  # str is its UTF-8
    assert limiter.acquire(b"", now_ns=0).allowed  # the empty key is a key
    assert not limiter.acquire("", now_ns=0).allowed
    assert limiter.acquire(b"a", now_ns=0).allowed
    assert limiter.acquire(b"a\x00", now_ns=0).allowed  # NUL bytes count, in full
    assert limiter.acquire(b"a\x00b", now_ns=0).allowed
    assert limiter.acquire(b"x" * 10_000, now_ns=0).allowed
    assert not limiter.acquire(b"x" * 10_000, now_ns=0).allowed


def test_query_reports_without_inserting() -> None:
    limiter = keyed(limit=3, period=3)
    assert limiter.acquire("new", 0, now_ns=0) == Decision(True, 3, 3, 0, 0, 0)
    assert limiter.acquire("new", 2, now_ns=0).allowed
    assert limiter.acquire("new", 0, now_ns=0) == Decision(True, 3, 1, 0, 2 * SECOND, 0)


@pytest.mark.parametrize("case", KEYED_CASES, ids=str)
def test_matches_reference_model_per_key(case: ModelCase) -> None:
    def make(**config: Any) -> Acquire:
        limiter = KeyedLimiter(**config, capacity=16)
        return lambda key, n, t: limiter.acquire(key, n, now_ns=t)

    case.run(make)


def test_table_full_and_reclaim() -> None:
    capacity = 16
    limiter = keyed(period=HOUR, capacity=capacity)  # each key stays live for an hour
    # Fill at the library clock's now, so try_acquire (which reads that clock) sees live keys.
    start = librate.now_ns()
    for i in range(capacity):
        assert limiter.acquire(f"key{i}", now_ns=start).allowed  # up to capacity never fails
    with pytest.raises(librate.TableFull):
        # "Somewhat more" than capacity may fit, never unboundedly more.
        for i in range(capacity, 64 * capacity):
            limiter.acquire(f"key{i}", now_ns=start)
    with pytest.raises(librate.TableFull):
        limiter.try_acquire("yet another")
    assert not limiter.acquire("key0", now_ns=start).allowed  # known keys still decide
    assert limiter.acquire("not inserted", 0, now_ns=start).allowed  # a query never inserts
    # Two hours on, every key is back to fresh and may be reclaimed: new keys fit again.
    for i in range(capacity):
        assert limiter.acquire(f"later{i}", now_ns=start + 2 * HOUR * SECOND).allowed


@pytest.mark.parametrize(
    ("capacity", "error"),
    [
        (0, librate.InvalidConfig),
        (2**63, librate.InvalidConfig),  # cannot be allocated
        (2**64 - 1, librate.InvalidConfig),
        (-1, ValueError),
        (2**64, ValueError),
        (1.5, TypeError),
        (True, TypeError),
        (None, TypeError),
    ],
)
def test_bad_capacity(capacity: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        keyed(capacity=capacity)


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys(key: object) -> None:
    limiter = keyed()
    for call in (
        lambda: limiter.try_acquire(key),  # type: ignore[arg-type]
        lambda: limiter.acquire(key),  # type: ignore[arg-type]
        lambda: limiter.reserve(key, max_wait=1),  # type: ignore[arg-type]
        lambda: limiter.wait(key),  # type: ignore[arg-type]
        lambda: asyncio.run(limiter.wait_async(key)),  # type: ignore[arg-type]
        lambda: limiter.rate_limited(key),  # type: ignore[arg-type]
        lambda: limiter.rate_limited(lambda: key)(lambda: None)(),
        lambda: limiter.try_acquire_many(["ok", key]),  # type: ignore[list-item]
    ):
        with pytest.raises(TypeError, match="key must be str or bytes"):
            call()


def test_lone_surrogate_key_is_its_three_bytes() -> None:
    # UTF-8 cannot encode U+DCFF; it is sent as its three-byte form ED B3 BF
    # ("surrogatepass"), so it is a key of its own and never an error.
    limiter = keyed()
    assert limiter.acquire("\udcff", now_ns=0).allowed
    assert not limiter.acquire(b"\xed\xb3\xbf", now_ns=0).allowed  # the same key
    assert limiter.acquire("\udcfe", now_ns=0).allowed  # another one
    assert limiter.try_acquire_many(["a\ud800", "a"], now_ns=0) == [True, True]
    assert limiter.try_acquire("\ud800\udc00") is True  # a pair, not U+10000
    assert limiter.try_acquire("\U00010000") is True


@pytest.mark.parametrize(("value", "error"), BAD_INTS)
def test_bad_cost(value: object, error: type[Exception]) -> None:
    limiter = keyed(limit=5)
    for call in (
        lambda: limiter.try_acquire("k", value),  # type: ignore[arg-type]
        lambda: limiter.acquire("k", value),  # type: ignore[arg-type]
        lambda: limiter.reserve("k", value, max_wait=1),  # type: ignore[arg-type]
        lambda: limiter.try_acquire_many(["k"], value),  # type: ignore[arg-type]
    ):
        with pytest.raises(error):
            call()
    assert limiter.acquire("k", 0, now_ns=0).remaining == 5


def test_insufficient_capacity() -> None:
    limiter = keyed(limit=5, burst=2)
    for call in (
        lambda: limiter.try_acquire("k", 3),
        lambda: limiter.acquire("k", 3, now_ns=0),
        lambda: limiter.reserve("k", 3, max_wait=math.inf, now_ns=0),
        lambda: limiter.try_acquire_many(["k", "j"], 3),
        lambda: limiter.try_acquire_many([], 3, now_ns=0),
    ):
        with pytest.raises(librate.InsufficientCapacity, match="n=3"):
            call()
    assert limiter.acquire("k", 0, now_ns=0).remaining == 2  # nothing was charged


def test_try_acquire() -> None:
    limiter = keyed(period=HOUR)
    assert limiter.try_acquire("Bob") is True
    assert limiter.try_acquire("Bob") is False
    assert limiter.try_acquire(b"Alice") is True
    assert limiter.try_acquire("Carol", 0) is True


@pytest.mark.parametrize("algorithm", ["gcra", "fixed_window", "sliding_window", "sliding_log"])
def test_try_acquire_many_decides_as_single_calls_do(algorithm: str) -> None:
    # Twin tables see the same requests, one as batches at one instant, one key by key.
    options = {"algorithm": algorithm, "limit": 3, "period": Fraction(100, SECOND)}
    batched, single = keyed(**options), keyed(**options)
    random = __import__("random").Random(algorithm)
    now, denied = 0, 0
    for _ in range(300):
        now += random.choice((0, 5, 30, 120))
        n = random.choice((1, 1, 2))
        keys = [random.choice(("a", b"b", "", "d\0")) for _ in range(random.randint(0, 40))]
        expected = [single.acquire(key, n, now_ns=now).allowed for key in keys]
        assert batched.try_acquire_many(keys, n, now_ns=now) == expected
        denied += expected.count(False)
    assert denied > 300


def test_try_acquire_many_on_a_full_table() -> None:
    limiter = keyed(period=HOUR, capacity=2)  # four slots at most
    names = [f"key{i}" for i in range(40)]
    admitted = limiter.try_acquire_many(names, now_ns=0)
    assert 2 <= admitted.count(True) <= 4 and admitted[:2] == [True, True]
    # The keys refused for a full table count as `when_full`; the admitted ones, now
    # spent, are denied either way.
    assert limiter.try_acquire_many(names, now_ns=1) == [False] * 40
    assert limiter.try_acquire_many(names, now_ns=1, when_full=True) == [not a for a in admitted]


def test_try_acquire_many_on_the_library_clock() -> None:
    limiter = keyed(period=HOUR)
    assert limiter.try_acquire_many(["Bob", b"Alice", "Bob"]) == [True, True, False]
    assert limiter.try_acquire_many(("Alice", "Carol")) == [False, True]
    assert limiter.try_acquire_many(iter(["Dave"]), 0) == [True]  # a query
    assert limiter.try_acquire_many([]) == []
    limiter.close()
    with pytest.raises(librate.ClosedError):
        limiter.try_acquire_many(["Bob"])


def test_reserve() -> None:
    shaper = keyed(limit=10, period=1, burst=1)
    assert [shaper.reserve("s", max_wait=0.5, now_ns=0).wait_ns for _ in range(3)] == [
        0,
        100 * MS,
        200 * MS,
    ]
    assert shaper.reserve("other", max_wait=0.5, now_ns=0).wait_ns == 0
    with pytest.raises(librate.Unsupported):
        keyed(algorithm="fixed_window").reserve("s", max_wait=1, now_ns=0)


def test_wait_and_decorators(clock: VirtualClock) -> None:
    limiter = keyed()  # 1 per 2 s per key
    assert limiter.wait("u").allowed and limiter.wait("u").wait_ns == 2 * SECOND
    assert asyncio.run(limiter.wait_async("v")).wait_ns == 0
    assert clock.slept == [2.0]

    @limiter.rate_limited(lambda user, item: user)
    def fetch(user: str, item: int) -> int:
        return item

    assert fetch("alice", 1) == 1
    assert fetch("bob", 2) == 2
    with pytest.raises(librate.RateLimited):
        fetch("alice", 3)

    @limiter.rate_limited(b"shared", wait=True)
    async def shared() -> str:
        return "ok"

    assert asyncio.run(shared()) == "ok" and asyncio.run(shared()) == "ok"
    assert clock.slept == [2.0, 2.0]


def test_four_threads_one_key_and_many() -> None:
    limiter = keyed(limit=100, period=HOUR, capacity=64)
    assert sum(hammer(lambda: limiter.acquire("hot", now_ns=0).allowed)) == 100
    # A key per thread: each thread gets the whole limit of its own key.
    mine = lambda: limiter.acquire(str(threading.get_ident()), now_ns=0).allowed  # noqa: E731
    assert hammer(mine) == [100] * THREADS


@pytest.fixture
def keyed_frees(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    return count_frees(monkeypatch, _limiter._KeyedHandle)


def test_freed_exactly_once(keyed_frees: list[int]) -> None:
    with keyed() as limiter:
        handle = limiter._handle.value
    assert keyed_frees == [handle]
    limiter.close()
    with pytest.raises(librate.ClosedError, match="KeyedLimiter is closed"):
        limiter.try_acquire("k")
    other = keyed()
    handle = other._handle.value
    del other
    gc.collect()
    assert keyed_frees[-1] == handle and len(keyed_frees) == 2


def test_every_declared_function_is_in_the_header() -> None:
    # The reverse of test_header_sync: nothing in _ffi.py is stale or misspelled.
    assert set(_ffi.SIGNATURES) <= set(header_functions())


# ---- the middleware, one limit per client -------------------------------------------


def test_per_client_address(serve: Serve) -> None:
    clock = VirtualClock(now=0)
    port = serve(keyed(period=HOUR), [], clock=clock)
    assert get(port, source="127.0.0.1").status == 200
    assert get(port, source="127.0.0.1").status == 429
    other = get(port, source="127.0.0.2")  # another client, its own limit
    assert other.status == 200
    assert other.headers["RateLimit"] == '"default";r=0;t=3600'


def test_key_function_and_exemption(serve: Serve) -> None:
    def user(request: object) -> str | None:
        if isinstance(request, dict) and "HTTP_X_USER" in request:  # WSGI environ
            return str(request["HTTP_X_USER"])
        headers = (
            dict(request.get("headers", ())) if isinstance(request, dict) else {}
        )  # ASGI scope
        value = headers.get(b"x-user")
        return value.decode() if value is not None else None

    calls: list[str] = []
    port = serve(keyed(period=HOUR), calls, key=user, clock=VirtualClock(now=0))
    assert get(port, headers={"X-User": "ann"}).status == 200
    assert get(port, headers={"X-User": "ann"}).status == 429
    assert get(port, headers={"X-User": "ben"}).status == 200
    free = get(port)  # no user: exempt, no headers
    assert free.status == 200 and "RateLimit" not in free.headers
    assert len(calls) == 3


@pytest.mark.parametrize("fail_open", [False, True])
def test_table_full(serve: Serve, fail_open: bool) -> None:
    calls: list[str] = []
    port = serve(
        keyed(period=HOUR, capacity=1),
        calls,
        key=lambda request: re.sub(r"\D", "", str(request.get("PATH_INFO") or request.get("path"))),
        clock=VirtualClock(now=0),
        fail_open=fail_open,
    )
    statuses = [get(port, f"/{i}").status for i in range(64)]
    assert statuses[0] == 200
    full = statuses.index(503) if 503 in statuses else None
    if fail_open:
        assert statuses == [200] * 64 and len(calls) == 64
    else:
        assert full is not None and set(statuses[full:]) == {503}
        refused = get(port, "/999")
        assert refused.headers["Retry-After"] == str(HOUR)
        assert len(calls) == full
