"""ns per rate-limit check: librate's Python binding against a bare ctypes call (the floor)
and the pure-Python limiters `limits` (MemoryStorage) and `pyrate-limiter` (in memory).

    python bench.py            # prints a Markdown table of medians and ratios

Every limiter enforces 1,000 requests per second; the checks are made as fast as the
loop goes, from one thread, so most are denials for every library (the "admitted" column
says how many were not). "1 key" hits one key; "1,000 keys" cycles through 1,000 keys.
Each row's time is the median of REPEATS runs, taken round-robin across rows so machine
noise spreads evenly, minus the median time of the same loop with an empty body.

Needs `pip install ./bindings/python[bench]` (limits, pyrate-limiter).
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from collections.abc import Callable
from ctypes import c_uint64, c_void_p
from dataclasses import dataclass, field

import librate
from librate import _ffi

LIMIT, PERIOD = 1_000, 1  # per second
KEYS = [f"user-{i}".encode() for i in range(1_000)]
BATCH = 100  # keys per try_acquire_many call
REPEATS = 15
TARGET_SECONDS = 0.02  # per timed run: short runs, many of them, for a robust median

#: A loop to time: runs its check once per item of ``items`` and returns how many of
#: those checks admitted.
Loop = Callable[[list[bytes]], int]


@dataclass
class Row:
    name: str
    keys: str  # "1 key" or "1,000 keys"
    loop: Loop | None  # None: not available, see ``missing``
    missing: str = ""
    samples: list[float] = field(default_factory=list)
    admitted: int = 0
    calls: int = 0

    @property
    def ns(self) -> float:
        return statistics.median(self.samples)


def empty(items: list[bytes]) -> int:
    for _key in items:
        pass
    return 0


# ---- librate --------------------------------------------------------------------------


def bare_direct() -> Loop:
    """The floor: the declared ctypes function called directly, no Python around it."""
    acquire = _ffi.lib.rate_limiter_acquire
    handle = c_void_p()
    config = _ffi.rate_config(_ffi.RATE_GCRA, LIMIT, PERIOD * 10**9, 0)
    assert _ffi.lib.rate_limiter_new(config, handle) == 0
    address = handle.value

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            admitted += acquire(address, 1, None) == 0
        return admitted

    return loop


def bare_unchecked() -> Loop:
    """For reference: the same call with no argtypes and ready-made ctypes arguments, the
    cheapest a ctypes call gets (what try_acquire uses inside)."""
    acquire = _ffi.lib.unchecked("rate_limiter_acquire")
    handle = c_void_p()
    config = _ffi.rate_config(_ffi.RATE_GCRA, LIMIT, PERIOD * 10**9, 0)
    assert _ffi.lib.rate_limiter_new(config, handle) == 0
    one = c_uint64(1)

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            admitted += acquire(handle, one, None) == 0
        return admitted

    return loop


def bare_keyed() -> Loop:
    acquire = _ffi.lib.rate_keyed_acquire
    handle = c_void_p()
    config = _ffi.rate_config(_ffi.RATE_GCRA, LIMIT, PERIOD * 10**9, 0)
    assert _ffi.lib.rate_keyed_new(config, 2 * len(KEYS), handle) == 0
    address = handle.value

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for key in items:
            admitted += acquire(address, key, len(key), 1, None) == 0
        return admitted

    return loop


def librate_direct(algorithm: str) -> Loop:
    try_acquire = librate.Limiter(algorithm=algorithm, limit=LIMIT, period=PERIOD).try_acquire

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            admitted += try_acquire()
        return admitted

    return loop


def librate_decision() -> Loop:
    acquire = librate.Limiter(limit=LIMIT, period=PERIOD).acquire

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for _key in items:
            admitted += acquire().allowed
        return admitted

    return loop


def librate_keyed(algorithm: str) -> Loop:
    limiter = librate.KeyedLimiter(
        algorithm=algorithm, limit=LIMIT, period=PERIOD, capacity=2 * len(KEYS)
    )
    try_acquire = limiter.try_acquire

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for key in items:
            admitted += try_acquire(key)
        return admitted

    return loop


def librate_keyed_many(algorithm: str) -> Loop:
    """try_acquire_many on consecutive slices of BATCH keys: per key, the ctypes call's
    cost is shared by the whole slice."""
    limiter = librate.KeyedLimiter(
        algorithm=algorithm, limit=LIMIT, period=PERIOD, capacity=2 * len(KEYS)
    )
    many = limiter.try_acquire_many

    def loop(items: list[bytes]) -> int:
        return sum(sum(many(items[i : i + BATCH])) for i in range(0, len(items), BATCH))

    return loop


# ---- peers ----------------------------------------------------------------------------


def limits_loop(strategy: str) -> Loop:
    from limits import RateLimitItemPerSecond, storage, strategies

    limiter = getattr(strategies, strategy)(storage.MemoryStorage())
    item = RateLimitItemPerSecond(LIMIT, PERIOD)
    hit = limiter.hit

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for key in items:
            admitted += hit(item, key.decode())
        return admitted

    return loop


def pyrate_loop() -> Loop:
    from pyrate_limiter import BucketFactory, Duration, InMemoryBucket, Limiter, Rate, RateItem

    rates = [Rate(LIMIT, Duration.SECOND * PERIOD)]

    class PerKey(BucketFactory):  # type: ignore[misc]
        """One in-memory bucket per key, as pyrate-limiter's docs suggest."""

        def __init__(self) -> None:
            self.buckets: dict[str, InMemoryBucket] = {}

        def wrap_item(self, name: str, weight: int = 1) -> RateItem:
            # The buckets' own clock (MonotonicClock): monotonic milliseconds.
            return RateItem(name, time.monotonic_ns() // 1_000_000, weight=weight)

        def get(self, item: RateItem) -> InMemoryBucket:
            bucket = self.buckets.get(item.name)
            if bucket is None:
                bucket = self.buckets[item.name] = self.create(InMemoryBucket, rates)
            return bucket

    try_acquire = Limiter(PerKey()).try_acquire

    def loop(items: list[bytes]) -> int:
        admitted = 0
        for key in items:
            admitted += try_acquire(key.decode(), blocking=False)
        return admitted

    return loop


# ---- running --------------------------------------------------------------------------


def available(name: str, keys: str, make: Callable[[], Loop]) -> Row:
    try:
        return Row(name, keys, make())
    except librate.LibraryError:
        return Row(name, keys, None, missing="this librate.so has no keyed table")
    except librate.Unsupported:
        return Row(name, keys, None, missing="this librate.so lacks the algorithm")
    except ImportError as error:
        return Row(name, keys, None, missing=f"{error.name} is not installed")


def rows() -> list[Row]:
    one, many = "1 key", "1,000 keys"
    windows = ["fixed_window", "sliding_window", "sliding_log"]
    limits = [
        ("fixed window", "FixedWindowRateLimiter"),
        ("moving window", "MovingWindowRateLimiter"),
        ("sliding window counter", "SlidingWindowCounterRateLimiter"),
    ]
    table = [
        available("bare ctypes call (floor)", one, bare_direct),
        available("bare ctypes call, unchecked", one, bare_unchecked),
        available("librate try_acquire, gcra", one, lambda: librate_direct("gcra")),
        *(
            available(f"librate try_acquire, {w}", one, lambda w=w: librate_direct(w))
            for w in windows
        ),
        available("librate acquire -> Decision, gcra", one, librate_decision),
        *(available(f"limits {n}", one, lambda s=s: limits_loop(s)) for n, s in limits),
        available("pyrate-limiter in-memory", one, pyrate_loop),
        available("bare ctypes call (floor)", many, bare_keyed),
        available("librate try_acquire, gcra", many, lambda: librate_keyed("gcra")),
        *(
            available(f"librate try_acquire, {w}", many, lambda w=w: librate_keyed(w))
            for w in windows
        ),
        available(
            f"librate try_acquire_many, gcra, {BATCH} keys a call",
            many,
            lambda: librate_keyed_many("gcra"),
        ),
        *(available(f"limits {n}", many, lambda s=s: limits_loop(s)) for n, s in limits),
        available("pyrate-limiter in-memory", many, pyrate_loop),
    ]
    return table


def items_for(row: Row, count: int) -> list[bytes]:
    pool = KEYS[:1] if row.keys == "1 key" else KEYS
    return (pool * (count // len(pool) + 1))[:count]


def calibrate(loop: Loop, items: list[bytes]) -> int:
    """How many calls make a run of about TARGET_SECONDS."""
    start = time.perf_counter()
    loop(items[:2_000])
    per_call = (time.perf_counter() - start) / 2_000
    return max(2_000, min(500_000, int(TARGET_SECONDS / per_call)))


def measure(table: list[Row]) -> float:
    """Fills each row's samples (ns per call, loop overhead included); returns the median
    ns per iteration of the empty loop."""
    live = [row for row in table if row.loop is not None]
    sizes = {id(row): calibrate(row.loop, items_for(row, 2_000)) for row in live}  # type: ignore[arg-type]
    overhead: list[float] = []
    for _ in range(REPEATS):
        for row in live:
            items = items_for(row, sizes[id(row)])
            start = time.perf_counter_ns()
            admitted = row.loop(items)  # type: ignore[misc]
            row.samples.append((time.perf_counter_ns() - start) / len(items))
            row.admitted += admitted
            row.calls += len(items)
        items = items_for(live[0], 200_000)
        start = time.perf_counter_ns()
        empty(items)
        overhead.append((time.perf_counter_ns() - start) / len(items))
    return statistics.median(overhead)


def setting(overhead: float, *more: str) -> str:
    """The line that says where and how a table was measured; ``more`` adds to it."""
    return (
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{platform.machine()}, librate {librate.library_version()}; "
        + "".join(f"{item}; " for item in more)
        + f"{LIMIT} per {PERIOD} s; median of {REPEATS}; empty-loop overhead "
        f"{overhead:.1f} ns subtracted."
    )


def report(table: list[Row], overhead: float) -> str:
    floors = {row.keys: row.ns - overhead for row in table if "floor" in row.name and row.samples}
    lines = [
        setting(overhead),
        "",
        "| limiter | keys | ns per check | × floor | admitted |",
        "|---|---|---:|---:|---:|",
    ]
    for row in table:
        if row.loop is None:
            lines.append(f"| {row.name} | {row.keys} | n/a: {row.missing} | | |")
            continue
        ns = row.ns - overhead
        floor = floors.get(row.keys)
        ratio = f"{ns / floor:.2f}" if floor else ""
        share = 100 * row.admitted / row.calls
        lines.append(f"| {row.name} | {row.keys} | {ns:,.0f} | {ratio} | {share:.1f}% |")
    lines.append("")
    for keys in ("1 key", "1,000 keys"):
        ours = next(
            (r for r in table if r.keys == keys and r.name.endswith(", gcra") and r.samples), None
        )
        peers = [
            r
            for r in table
            if r.keys == keys and not r.name.startswith(("librate", "bare")) and r.samples
        ]
        if ours is None or keys not in floors:
            continue
        mine = ours.ns - overhead
        fastest = min(peers, key=lambda r: r.ns) if peers else None
        summary = f"- {keys}: librate try_acquire = {mine / floors[keys]:.2f}× the bare ctypes call"
        if fastest is not None:
            speedup = (fastest.ns - overhead) / mine
            summary += f"; {speedup:.1f}× faster than the fastest peer ({fastest.name})"
        lines.append(summary + ".")
    decision = next((r for r in table if r.name.startswith("librate acquire") and r.samples), None)
    if decision is not None and "1 key" in floors:
        ratio = (decision.ns - overhead) / floors["1 key"]
        lines.append(f"- 1 key: librate acquire -> Decision = {ratio:.2f}× the bare ctypes call.")
    return "\n".join(lines)


def main() -> None:
    table = rows()
    overhead = measure(table)
    print(report(table, overhead))


if __name__ == "__main__":
    sys.exit(main())
