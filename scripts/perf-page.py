#!/usr/bin/env python3
"""Writes docs/performance.md and its plot, docs/bench.svg, from the benchmark outputs kept
in docs/bench/: per language and tier, one table of librate against its peers (medians
and ratios) with the machine, the date and the command that measured it. Standard
library only.

Usage:
  scripts/perf-page.py               writes docs/performance.md and docs/bench.svg
  scripts/perf-page.py --check       exits 1 if either is not what docs/bench/ gives
  scripts/perf-page.py --record NAME runs docs/bench/NAME.txt's command from the
                                     repository's root, saves its output under this
                                     machine's and today's metadata, then writes both

Each data file is a benchmark's output as its command printed it, below `# machine:`,
`# date:`, `# command:` and `# provenance:` lines (scripts/bench_data.py reads them, with
one parser per output format). A value a table needs and its file lacks stops the script
with the name it looked for, so a renamed benchmark cannot go unnoticed.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import bench_data
from bench_data import BenchFile, need, read, stop

ROOT = bench_data.ROOT
PAGE = ROOT / "docs" / "performance.md"
PLOT = ROOT / "docs" / "bench.svg"

# --- numbers -------------------------------------------------------------------------------


def ns(value: float) -> str:
    """A time as the tables show it: whole ns from 100 up (or when whole), else one decimal."""
    if value >= 100 or value.is_integer():
        return f"{value:,.0f}"
    return f"{value:.1f}"


def ratio(value: float) -> str:
    """A ratio to two or three significant digits."""
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 0.1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def paired_ratio(ours: list[float], theirs: list[float], name: str, path: Path) -> float:
    """The median of the ratios taken within each output of a file (one output: the ratio)."""
    if len(ours) != len(theirs):
        stop(f"{bench_data.shown(path)} holds {name!r} a different number of times than its peer")
    return statistics.median(a / b for a, b in zip(ours, theirs))


def runs_said(counts: set[int], what: str) -> str:
    """`the median of its 5 runs`, or of its runs when they differ in number."""
    if counts == {1}:
        return f"the {what}"
    if len(counts) == 1:
        return f"the median of its {counts.pop()} runs"
    return "the median of its runs"


# --- Markdown ------------------------------------------------------------------------------


def table(header: list[str], right: list[bool], rows: list[list[str]]) -> list[str]:
    """A Markdown table; `right` says which columns are numbers (right-aligned)."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if r else "---" for r in right) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def code(text: str) -> str:
    return f"`{text}`"


def about(file: BenchFile, page: Path) -> list[str]:
    """Where and when a table was measured, its output, and the command that measures it."""
    link = os.path.relpath(file.path, page.parent)
    return [
        f"Measured on {file.meta('machine')}, {file.meta('date')}; the output: "
        f"[docs/bench/{file.path.name}]({link}). To measure it again:",
        "",
        "```sh",
        file.meta("command"),
        "```",
        "",
    ]


# --- Rust: librate against governor, and the C entry points --------------------------------

# The librate calls of `cargo bench --bench gcra`; each is paired with the governor call
# of its group and subject (`governor_check`, `governor_check_fake_clock`, ...).
LIBRATE_CALLS = ("try_acquire", "acquire", "acquire_at", "rate_now_ns")
# The plot's rows: a file without them stops the script.
RUST_REQUIRED = [
    f"{case}/{call}"
    for case in ("acquire_allow/gcra_busy", "acquire_allow/gcra_idle", "acquire_deny/gcra_drained")
    for call in ("try_acquire", "governor_check")
]
# The C entry points of the `c_boundary` group and the Rust calls they wrap.
C_CALLS = {
    "ffi_acquire_out_null": "rust_try_acquire",
    "ffi_acquire_out": "rust_acquire",
    "ffi_acquire_at_out": "rust_acquire_at",
}


def by_case(runs: dict[str, list[float]]) -> dict[str, list[str]]:
    """Benchmark ids split at their last `/`: case -> calls, in the output's order."""
    found: dict[str, list[str]] = {}
    for name in runs:
        case, _, call = name.rpartition("/")
        found.setdefault(case, []).append(call)
    return found


def call_row(case: str, call: str, ours: float, peer: str, theirs: float) -> list[str]:
    """A row of two calls in one case: each call's time, then their ratio."""
    return [code(case), code(call), ns(ours), code(peer), ns(theirs), ratio(ours / theirs)]


def rust(data: Path, page: Path) -> list[str]:
    file = read(data / "rust.txt")
    runs = bench_data.criterion_bencher(file.body())
    for name in RUST_REQUIRED:
        need(runs, name, file.path)
    rows = []
    for case, calls in by_case(runs).items():
        peers = [call for call in calls if call.startswith("governor")]
        if case.startswith("c_boundary") or len(peers) != 1:
            continue
        theirs = statistics.median(runs[f"{case}/{peers[0]}"])
        for call in calls:
            if call in LIBRATE_CALLS:
                ours = statistics.median(runs[f"{case}/{call}"])
                rows.append(call_row(case, call, ours, peers[0], theirs))
    lines = [
        "## Rust: librate against governor",
        "",
        "`cargo bench --bench gcra` runs librate's `Limiter` and "
        "[governor](https://crates.io/crates/governor) (the version in `Cargo.lock`, on its "
        "default clock, which reads the TSC) on the same rule in the same criterion groups, "
        "every call inlined into the timing loop as it would be in a caller's code. A case "
        "is criterion's benchmark id, group and subject, which `benches/gcra.rs` describes: "
        "a busy bucket runs ahead of the clock, so librate decides on its coarse clock; an "
        "idle bucket is full at every call, so an admission stores a time only the precise "
        "clock gives; a drained bucket denies every call. `try_acquire` answers whether the "
        "call is admitted, `acquire` gives the full decision. Each time is criterion's "
        "estimate in ns a call, as its bencher format prints it (whole nanoseconds).",
        "",
        *about(file, page),
        *table(
            ["case", "librate", "librate ns", "governor", "governor ns", "librate ÷ governor"],
            [False, False, True, False, True, True],
            rows,
        ),
        "",
        "Below 1, librate takes less time than governor.",
        "",
    ]
    return lines + c_boundary(file, runs, page)


def c_boundary(file: BenchFile, runs: dict[str, list[float]], page: Path) -> list[str]:
    """The C entry points against the Rust calls they wrap, when the output has them."""
    rows = []
    for case, calls in by_case(runs).items():
        if not case.startswith("c_boundary/"):
            continue
        for call in calls:
            if call in C_CALLS:
                ours = statistics.median(runs[f"{case}/{call}"])
                theirs = statistics.median(need(runs, f"{case}/{C_CALLS[call]}", file.path))
                rows.append(call_row(case, call, ours, C_CALLS[call], theirs))
    if not rows:
        return []
    return [
        "## C: the entry points against the Rust calls they wrap",
        "",
        "The `c_boundary` group of the same run times `rate_limiter_acquire` (`out` NULL: "
        "the outcome alone; `out` set: the full decision copied out) and "
        "`rate_limiter_acquire_at`, called from Rust, against the Rust calls they wrap, on "
        "limiters of the same rule: what the boundary costs.",
        "",
        *table(
            ["case", "C entry point", "C ns", "Rust call", "Rust ns", "C ÷ Rust"],
            [False, False, True, False, True, True],
            rows,
        ),
        "",
    ]


# --- C: the C ABI against governor ---------------------------------------------------------

C_ABI = ["group", "librate", "governor", "librate ns", "governor ns", "librate / governor"]
C_ABI_FLOOR = ["floor", "what", "ns"]


def c_abi(data: Path, page: Path) -> list[str]:
    file = read(data / "c-abi.txt")
    rows = one_table(file, C_ABI).rows
    floors = one_table(file, C_ABI_FLOOR).rows
    return [
        "## C: the C ABI against governor",
        "",
        "`cargo bench --bench c_abi` calls the C entry points as a C program does, through "
        "a call the compiler cannot inline (a function pointer, as a call into librate.so "
        "goes through the PLT), `out` NULL, against governor's calls inlined into the same "
        "loop, in the same run: an idle bucket through each one's clock; the decision "
        "alone at a frozen time (governor on its `FakeRelativeClock`); and keyed tables of "
        "1,000 and 1,000,000 keys, every call a different key than the last, idle (every "
        "call admitted) and drained (every call denied). Keys are `u64`s: librate hashes "
        "their 8 bytes, governor the `u64`, SipHash-1-3 both. `benches/c_abi.rs` describes "
        "each group and `benches/c_abi_table.py` makes the table: a time is criterion's "
        "median, then the median over the runs; a ratio is taken within each run, then the "
        "median over the runs, with their smallest and largest in brackets. The floors are "
        "what no implementation of these calls goes below: the call itself, the clock "
        "reads and the hashes.",
        "",
        *about(file, page),
        *table(
            ["group", "librate", "governor", "librate ns", "governor ns", "librate ÷ governor"],
            [False, False, False, True, True, True],
            [
                [code(r["group"]), code(r["librate"]), r["governor"]]
                + [r[c] for c in C_ABI[3:]]
                for r in rows
            ],
        ),
        "",
        *table(
            ["floor", "what", "ns"],
            [False, False, True],
            [[code(r["floor"]), r["what"], r["ns"]] for r in floors],
        ),
        "",
        "Below 1, librate takes less time than governor.",
        "",
    ]


# --- Go: librate against golang.org/x/time/rate --------------------------------------------

GO_REQUIRED = [
    f"BenchmarkAllow/{state}/{who}"
    for state in ("busy", "idle", "deny")
    for who in ("librate", "xrate")
]


def go(data: Path, page: Path) -> list[str]:
    file = read(data / "go.txt")
    runs = bench_data.go_test(file.body())
    for name in GO_REQUIRED:
        need(runs, name, file.path)
    rows, counts = [], set()
    for name, ours in runs.items():
        parts = name.split("/")
        if "librate" not in parts:
            continue
        index = parts.index("librate")
        peer = "/".join(parts[:index] + ["xrate"] + parts[index + 1 :])
        theirs = need(runs, peer, file.path)
        counts |= {len(ours), len(theirs)}
        case = "/".join(parts[:index] + parts[index + 1 :])
        a, b = statistics.median(ours), statistics.median(theirs)
        rows.append([code(case), ns(a), ns(b), ratio(a / b)])
    return [
        "## Go: librate against x/time/rate",
        "",
        "`go test -bench` in `bindings/go/peers` runs each benchmark for librate and for "
        "[golang.org/x/time/rate](https://pkg.go.dev/golang.org/x/time/rate) (the version "
        "`bindings/go/peers/go.mod` requires), configured alike so that every call of a run comes "
        "out the same: *busy*, a limiter running ahead of the clock; *idle*, a full bucket; "
        "*deny*, exhausted. `bindings/go/peers/bench_test.go` describes each benchmark. A case is "
        "the benchmark's name without the contender; each time is "
        f"{runs_said(counts, 'time go test printed')}, in ns a call. librate's time includes "
        "cgo's crossing into the library.",
        "",
        *about(file, page),
        *table(
            ["case", "librate ns", "x/time/rate ns", "librate ÷ x/time/rate"],
            [False, True, True, True],
            rows,
        ),
        "",
        "Below 1, librate takes less time than x/time/rate.",
        "",
    ]


# --- Python: librate against limits and pyrate-limiter -------------------------------------

# (keys, librate's row, the peer's row) in bench.py's table: each librate algorithm with the
# closest `limits` strategy, and GCRA with pyrate-limiter.
PYTHON_PAIRS = [
    ("1 key", "librate try_acquire, gcra", "limits moving window"),
    ("1 key", "librate try_acquire, gcra", "pyrate-limiter in-memory"),
    ("1 key", "librate try_acquire, fixed_window", "limits fixed window"),
    ("1 key", "librate try_acquire, sliding_window", "limits sliding window counter"),
    ("1 key", "librate try_acquire, sliding_log", "limits moving window"),
    ("1 key", "librate acquire -> Decision, gcra", "limits moving window"),
    ("1,000 keys", "librate try_acquire, gcra", "limits moving window"),
    ("1,000 keys", "librate try_acquire, gcra", "pyrate-limiter in-memory"),
    ("1,000 keys", "librate try_acquire, fixed_window", "limits fixed window"),
    ("1,000 keys", "librate try_acquire, sliding_window", "limits sliding window counter"),
    ("1,000 keys", "librate try_acquire, sliding_log", "limits moving window"),
    ("1,000 keys", "librate try_acquire_many, gcra, 100 keys a call", "limits moving window"),
]

# bench.py's floor, and the librate rows the page compares with it (1 key).
PYTHON_FLOOR = "bare ctypes call (floor)"
PYTHON_OVER_FLOOR = ["librate try_acquire, gcra", "librate acquire -> Decision, gcra"]


def outputs_said(count: int) -> str:
    if count == 1:
        return ""
    return (
        f" The file holds {count} outputs: a time is the median over them, a ratio the "
        "median of the ratios within each output."
    )


def python(data: Path, page: Path) -> list[str]:
    file = read(data / "python.txt")
    runs = bench_data.table_runs(file, ["limiter", "keys"], "ns per check")
    outputs = len(bench_data.tables_with(file, ["limiter", "keys", "ns per check"]))
    rows = []
    for keys, ours_name, peer_name in PYTHON_PAIRS:
        ours = need(runs, f"{ours_name} | {keys}", file.path)
        theirs = need(runs, f"{peer_name} | {keys}", file.path)
        rows.append(
            [
                keys,
                ours_name.removeprefix("librate "),
                peer_name,
                ns(statistics.median(ours)),
                ns(statistics.median(theirs)),
                ratio(paired_ratio(ours, theirs, ours_name, file.path)),
            ]
        )
    floor = need(runs, f"{PYTHON_FLOOR} | 1 key", file.path)
    floor_rows = []
    for name in PYTHON_OVER_FLOOR:
        ours = need(runs, f"{name} | 1 key", file.path)
        floor_rows.append(
            [
                name.removeprefix("librate "),
                ns(statistics.median(ours)),
                ns(statistics.median(floor)),
                ratio(paired_ratio(ours, floor, name, file.path)),
            ]
        )
    return [
        "## Python: librate against limits and pyrate-limiter",
        "",
        "`bindings/python/bench.py` times each check from one thread, at one limit of 1,000 "
        "a second, on 1 key and on 1,000 keys: librate, "
        "[limits](https://pypi.org/project/limits/) with its in-memory storage, and "
        "[pyrate-limiter](https://pypi.org/project/pyrate-limiter/) with in-memory buckets, "
        "one per key. Each time is bench.py's median of 15 runs taken round-robin across "
        "the rows, an empty loop's time subtracted."
        + outputs_said(outputs)
        + " Each librate algorithm is paired with the closest `limits` strategy: GCRA and "
        "the sliding log with the moving window (a log of admission times, `limits`' limit "
        "without window edges), the fixed window with the fixed window, the sliding window "
        "with the sliding window counter. `try_acquire` is one ctypes call; `acquire` builds "
        "a full `Decision`; `try_acquire_many` decides 100 keys a call and is timed per key.",
        "",
        *about(file, page),
        *table(
            ["keys", "librate", "peer", "librate ns", "peer ns", "librate ÷ peer"],
            [False, False, False, True, True, True],
            rows,
        ),
        "",
        "Below 1, librate takes less time than the peer.",
        "",
        "Against the floor, the declared ctypes function called directly with no Python "
        "around it (one key):",
        "",
        *table(
            ["librate", "librate ns", "floor ns", "librate ÷ floor"],
            [False, True, True, True],
            floor_rows,
        ),
        "",
    ]


# --- Sharing a limit between processes -----------------------------------------------------

SHARED_RUST_PAIRED = ["group", "subject", "call", "private ns", "shared ns", "shared / private"]
SHARED_RUST_REDIS = ["call", "ns", "Redis / shared `try_acquire`", "Redis / shared `acquire`"]


def one_table(file: BenchFile, columns: list[str]) -> bench_data.Table:
    found = bench_data.tables_with(file, columns)
    if len(found) != 1:
        stop(
            f"{bench_data.shown(file.path)} holds {len(found)} tables with the columns "
            f"{columns!r}, not one"
        )
    if not found[0].rows:
        stop(f"{bench_data.shown(file.path)} has a table with the columns {columns!r} but no rows")
    return found[0]


def shared_rust(data: Path, page: Path) -> list[str]:
    file = read(data / "shared-rust.txt")
    paired = one_table(file, SHARED_RUST_PAIRED)
    redis = one_table(file, SHARED_RUST_REDIS)
    return [
        "### Rust: shared against private and against Redis",
        "",
        "`cargo bench --bench shared` measures each private limiter and then the same "
        "limiter opened from a file in `/dev/shm`, one after the other in one process, and "
        "an `INCR` + `EXPIRE` round trip to a `redis-server` the bench starts on 127.0.0.1 "
        "and on a Unix socket, through the least client there can be (both commands in one "
        "write, both replies read, nothing parsed beyond the count). "
        "`benches/shared_table.py` reads criterion's saved runs: a time is criterion's "
        "median, then the median over the runs; a ratio is taken within each run, then the "
        "median over the runs, with their smallest and largest in brackets.",
        "",
        *about(file, page),
        *table(
            ["group", "subject", "call", "private ns", "shared ns", "shared ÷ private"],
            [False, False, False, True, True, True],
            [
                [code(row[c]) for c in SHARED_RUST_PAIRED[:3]]
                + [row[c] for c in SHARED_RUST_PAIRED[3:]]
                for row in paired.rows
            ],
        ),
        "",
        *table(
            ["call", "ns", "Redis ÷ shared `try_acquire`", "Redis ÷ shared `acquire`"],
            [False, True, True, True],
            [[code(r["call"])] + [r[c] for c in SHARED_RUST_REDIS[1:]] for r in redis.rows],
        ),
        "",
        "Near 1, a shared limiter costs what a private one does; a Redis row says how many "
        "shared calls one round trip costs.",
        "",
    ]


SHARED_CHANGE_BEFORE = ["call", "before ns", "after ns", "after / before"]
SHARED_CHANGE_ONCE = [
    "subject",
    "call",
    "never changed ns",
    "changed once ns",
    "changed once / never changed",
]


def shared_change_rust(data: Path, page: Path) -> list[str]:
    file = read(data / "shared-change-rust.txt")
    before = one_table(file, SHARED_CHANGE_BEFORE)
    once = one_table(file, SHARED_CHANGE_ONCE)
    return [
        "### Rust: shared tables whose rules can change",
        "",
        "`benches/shared_change.sh` measures a shared limiter and a shared keyed table of "
        "1,000 idle keys whose rules never changed, and the private ones beside them, on "
        "the commit before their rules could change in their files and on this one, in "
        "turn; then, on this one, each shared one whose rule changed once in its file, "
        "whose decisions read the rule in force through the file's pins. "
        "A time is criterion's median, then the median over the runs; a ratio is taken "
        "within each pair of runs, then the median, with the smallest and largest in "
        "brackets.",
        "",
        *about(file, page),
        *table(
            ["call", "before ns", "after ns", "after ÷ before"],
            [False, True, True, True],
            [[code(r["call"])] + [r[c] for c in SHARED_CHANGE_BEFORE[1:]] for r in before.rows],
        ),
        "",
        *table(
            ["subject", "call", "never changed ns", "changed once ns", "changed once ÷ never changed"],
            [False, False, True, True, True],
            [
                [code(r["subject"]), code(r["call"])]
                + [r[c] for c in SHARED_CHANGE_ONCE[2:]]
                for r in once.rows
            ],
        ),
        "",
    ]


SHARED_PYTHON_CALLS = ["librate try_acquire", "librate acquire -> Decision"]


def shared_python(data: Path, page: Path) -> list[str]:
    file = read(data / "shared-python.txt")
    runs = bench_data.table_runs(file, ["check"], "ns per check")
    outputs = len(bench_data.tables_with(file, ["check", "ns per check"]))
    shared = {
        call: need(runs, f"{call}, shared", file.path) for call in SHARED_PYTHON_CALLS
    }
    paired = []
    for call in SHARED_PYTHON_CALLS:
        private = need(runs, f"{call}, private", file.path)
        paired.append(
            [
                call.removeprefix("librate "),
                ns(statistics.median(private)),
                ns(statistics.median(shared[call])),
                ratio(paired_ratio(shared[call], private, call, file.path)),
            ]
        )
    redis = []
    for name, theirs in runs.items():
        if name.startswith("librate "):
            continue
        redis.append(
            [name, ns(statistics.median(theirs))]
            + [
                ratio(paired_ratio(theirs, shared[call], name, file.path))
                for call in SHARED_PYTHON_CALLS
            ]
        )
    if not redis:
        stop(f"{bench_data.shown(file.path)} has no Redis rows (any check not named 'librate ...')")
    return [
        "### Python: shared against private and against Redis",
        "",
        "`bindings/python/bench_shared.py` times a shared limiter (`Limiter.open`) against "
        "the same limiter private, and against the checks a Python service makes on a local "
        "Redis: redis-py's `INCR` + `EXPIRE` (in a MULTI/EXEC pipeline, or `EXPIRE` only "
        "when the count is 1) and [limits](https://pypi.org/project/limits/) with its Redis "
        "storage, over loopback TCP and a Unix socket, on a `redis-server` it starts itself, "
        "all at one limit of 1,000 a second. Each time is bench_shared.py's median of 15 "
        "runs taken round-robin across the rows." + outputs_said(outputs),
        "",
        *about(file, page),
        *table(
            ["call", "private ns", "shared ns", "shared ÷ private"],
            [False, True, True, True],
            paired,
        ),
        "",
        *table(
            ["Redis check", "ns", "Redis ÷ shared `try_acquire`", "Redis ÷ shared `acquire`"],
            [False, True, True, True],
            redis,
        ),
        "",
    ]


def shared(data: Path, page: Path) -> list[str]:
    return [
        "## Sharing a limit between processes",
        "",
        "A limiter opened from a file decides on the same atomics as a private one, in a "
        "mapped file in place of the heap. On one host, what it replaces is usually a "
        "counter in a local Redis, so both are measured against it.",
        "",
        *shared_rust(data, page),
        *shared_change_rust(data, page),
        *shared_python(data, page),
    ]


# --- The Redis tier ------------------------------------------------------------------------

REDIS_PYTHON = [
    "connections", "keys a call", "librate", "`limits`",
    "librate decisions/s", "`limits` decisions/s", "librate / `limits`",
]
REDIS_GO = [
    "connections",
    "keys a call",
    "librate decisions/s",
    "redis_rate decisions/s",
    "librate / redis_rate",
]


def redis_python(data: Path, page: Path) -> list[str]:
    file = read(data / "redis-python.txt")
    rows = one_table(file, REDIS_PYTHON).rows
    return [
        "### Python: librate.redis against limits",
        "",
        "`bindings/python/bench_redis.py` pairs each librate algorithm with the closest "
        "strategy of [limits](https://pypi.org/project/limits/) on its Redis storage: GCRA "
        "and the sliding log with the moving window, the fixed window with the fixed "
        "window, the sliding window with the sliding window counter. One connection is one "
        "thread on a client whose pool holds one connection; the pool is 8 threads sharing "
        "a client of 8. Every key allows 1,000 a second; one key a call goes round 1,000 keys.",
        "",
        *about(file, page),
        *table(
            ["connections", "keys a call", "librate", "`limits`", "librate decisions/s",
             "`limits` decisions/s", "librate ÷ `limits`"],
            [True, True, False, False, True, True, True],
            [[row[column] for column in REDIS_PYTHON] for row in rows],
        ),
        "",
        "Above 1, librate makes more decisions a second than `limits`.",
        "",
    ]


def redis_go(data: Path, page: Path) -> list[str]:
    file = read(data / "redis-go.txt")
    rows = one_table(file, REDIS_GO).rows
    return [
        "### Go: librateredis against redis_rate",
        "",
        "`TestRedisBenchTable` in `bindings/go/redis` runs `BenchmarkRedis`'s cases over "
        "several rounds, after a warm-up round that is not counted: librate's `Allow` (for "
        "100 keys, `AcquireMany`) against the `AllowN` of "
        "[redis_rate](https://github.com/go-redis/redis_rate), GCRA both, through the same "
        "go-redis client. One connection is one goroutine on a client with `PoolSize: 1`; "
        "the pool is 8 goroutines on one with `PoolSize: 8`. Every key allows one a second "
        "with a burst of 10⁶; one key a call goes round 1,000 keys.",
        "",
        *about(file, page),
        *table(
            ["connections", "keys a call", "librate decisions/s", "redis_rate decisions/s",
             "librate ÷ redis_rate"],
            [True, True, True, True, True],
            [[row[column] for column in REDIS_GO] for row in rows],
        ),
        "",
        "Above 1, librate makes more decisions a second than redis_rate.",
        "",
    ]


def redis(data: Path, page: Path) -> list[str]:
    return [
        "## The Redis tier",
        "",
        "Each client is measured against its language's usual Redis rate limiter on a "
        "`redis-server` the benchmark starts on 127.0.0.1 (TCP), through one connection and "
        "through a pool of 8, one key a call and 100 keys a call. 100 keys a call is "
        "librate's batch, one script call for the 100 keys, against 100 single calls of the "
        "peer, which has no batch call. Every decision admits, so every one writes. A "
        "decision from Redis costs a round trip; what a limiter adds to it is its script's "
        "time on the server and its work in the client. Decisions a second are medians over "
        "the rounds; each ratio is taken within a round, then the median over the rounds, "
        "with their smallest and largest in brackets.",
        "",
        *redis_python(data, page),
        *redis_go(data, page),
    ]


# --- Leases ---------------------------------------------------------------------------------

# The columns of the simulation's table in docs/bench/leases.txt.
LEASE_COLUMNS = ["scenario (rule 10,000/s, B 1,000, leases 2 s renewed every 500 ms)", "holders",
                 "demand / rule", "over-admission (units)", "utilization after 10 s",
                 "decisions without a share", "Redis calls / holder / s"]
# `cargo bench --bench lease`'s subjects, each group's leased decision against these.
LEASE_SUBJECTS = ("in_process", "in_process_counted", "in_process_at_now", "in_process_changed_at_now")
# `cargo bench --bench lease_pairs`'s line for a group: the fastest rounds' times, their
# ratio, and the median round's ratio with its quartiles.
LEASE_PAIRS = re.compile(
    r"^pairs lease/(\S+): in_process ([\d.]+) ns, leased ([\d.]+) ns .*?"
    r"([\d.]+) fastest, ([\d.]+) median round \(quartiles ([\d.]+) to ([\d.]+)\)$", re.M)


def lease_pairs(file: BenchFile) -> list[list[str]]:
    """The table of `lease_pairs`' runs: each figure's median over the runs, per group."""
    runs: dict[str, list[list[float]]] = {}
    for group, *figures in LEASE_PAIRS.findall(file.body()):
        runs.setdefault(group, []).append([float(figure) for figure in figures])
    if not runs:
        stop(f"{file.path}: no `pairs lease/...` line of cargo bench --bench lease_pairs")
    rows = []
    for group, figures in runs.items():
        in_process, leased, fastest, median, low, high = (
            statistics.median(column) for column in zip(*figures))
        rows.append([code(group), ns(in_process), ns(leased), f"{fastest:.3f}",
                     f"{median:.3f} ({low:.3f} to {high:.3f})"])
    return rows


def leases(data: Path, page: Path) -> list[str]:
    file = read(data / "leases.txt")
    rows = one_table(file, LEASE_COLUMNS).rows
    # The simulation's lines of prose: what the table's columns do not hold.
    notes = [
        line for line in file.body().splitlines()
        if line and not line.startswith(("|", "test ", "cargo bench", "pairs "))
    ]
    runs = bench_data.criterion_bencher(file.body())
    bench_rows = []
    for group in ("gcra_busy", "gcra_idle"):
        leased = bench_data.median(runs, f"lease/{group}/leased", file.path)
        for subject in LEASE_SUBJECTS:
            theirs = bench_data.median(runs, f"lease/{group}/{subject}", file.path)
            bench_rows.append([code(group), code(subject), ns(theirs), ns(leased), ratio(leased / theirs)])
    return [
        "## Leases: a limit across hosts, decided in process",
        "",
        "`redis-tests/tests/lease_sim_measure.rs` runs holders of a lease (docs/leases.md) "
        "on a virtual timeline against a real `redis-server`, each renewing through the lease "
        "script and deciding its requests from its share, and replays every admission "
        "through a GCRA of the global rule: a unit it would not admit is over-admission. "
        "Utilization is the units admitted over what the rule could admit while the demand "
        "exceeds it. Then `cargo bench --bench lease` times a leased decision against an "
        "in-process `Limiter`'s: its `try_acquire`, its `try_acquire_at` on a clock read, "
        "and the same on a limiter whose rule was changed once, whose decisions take the "
        "changed rule's path (a share's rule changes at every renewal, in place in the "
        "holder's words, and its decisions stay on the path of a rule never changed).",
        "",
        *about(file, page),
        *table(
            LEASE_COLUMNS,
            [False, True, True, True, True, True, True],
            [[row[column] for column in LEASE_COLUMNS] for row in rows],
        ),
        "",
        *[f"- {note}" for note in notes],
        "",
        *table(
            ["group", "in process", "in-process ns", "leased ns", "leased ÷ in process"],
            [False, False, True, True, True],
            bench_rows,
        ),
        "",
        "Times are medians over the runs of criterion's estimates. Each row is timed on its "
        "own, seconds apart from the others, so on a machine shared with other jobs its two "
        "times may meet different loads. `cargo bench --bench lease_pairs` times the two "
        "calls in turns instead, a batch of each per round (400 rounds of 250,000 calls "
        "each), so that both meet the same moment's load: the fastest round of each (the "
        "one the other jobs disturbed least), their ratio, and the median of the rounds' own "
        "ratios with its quartiles; each figure the median over the runs.",
        "",
        *table(
            ["group", "in-process ns, fastest round", "leased ns, fastest round",
             "leased ÷ in process, fastest rounds", "leased ÷ in process, median round (quartiles)"],
            [False, True, True, True, True],
            lease_pairs(file),
        ),
        "",
    ]


def counting(data: Path, page: Path) -> list[str]:
    file = read(data / "counting.txt")
    runs = bench_data.criterion_bencher(file.body())
    rows = []
    for shape in ("gcra_busy", "gcra_idle", "gcra_drained"):
        uncounted = bench_data.median(runs, f"counting/{shape}/try_acquire_uncounted", file.path)
        counted = bench_data.median(runs, f"counting/{shape}/try_acquire_counted", file.path)
        rows.append([code(shape), f"{uncounted:.2f}", f"{counted:.2f}", ratio(counted / uncounted)])
    return [
        "## Counting requests",
        "",
        "`cargo bench --bench gcra -- counting` times `try_acquire` on a limiter that counts "
        "its requests (docs/metrics.md) against the same limiter uncounted, in one run, busy, "
        "idle and denying. Counting is an atomic add a request, more than a twentieth of "
        "the decision where the decision does not write (denying) or is settled on the "
        "coarse clock (busy): so counting is off until a handle asks for it, and an "
        "uncounted handle pays one load and a branch.",
        "",
        *about(file, page),
        *table(
            ["shape", "uncounted ns", "counted ns", "counted ÷ uncounted"],
            [False, True, True, True],
            rows,
        ),
        "",
        "Times are medians over the runs of criterion's estimates.",
        "",
    ]


# --- The page ------------------------------------------------------------------------------


def opening(page: Path, data: Path, plot: Path) -> list[str]:
    return [
        "# Performance",
        "",
        "<!-- Generated by scripts/perf-page.py from docs/bench/: edit those files or the "
        "script, never this page. -->",
        "",
        "What a rate-limit check costs with librate, next to the usual limiter for the "
        "same job in each language: governor in Rust, x/time/rate in Go, limits and "
        "pyrate-limiter in Python; and, for a limit shared between processes or hosts, a "
        "counter in Redis, limits' Redis storage and redis_rate. It is for anyone choosing a "
        "limiter or sizing a service, and every number on it comes from a benchmark output "
        f"kept in [docs/bench/]({os.path.relpath(data, page.parent)}/).",
        "",
        "How to read it:",
        "",
        "- In process, a number is the time of one check in nanoseconds, the clock read "
        "included: lower is better. Through Redis, it is decisions a second: higher is "
        "better.",
        "- Each table comes from one run of one benchmark that measured librate and what it "
        "is compared with together, on the machine and the date given with the table. Each "
        "ratio divides two numbers of that run, as its column says: librate ÷ governor "
        "below 1 means librate takes less time. Compare ratios, not numbers from different "
        "tables: those were measured on different machines and days.",
        "- The command with each table measures it again; [Measuring again](#measuring-again) "
        "says how to save its output and regenerate this page.",
        "",
        f"![ns per check: librate against governor (Rust), x/time/rate (Go), limits and "
        f"pyrate-limiter (Python)]({os.path.relpath(plot, page.parent)})",
        "",
        "Every bar of the plot is a number of the Rust, Go and Python tables below.",
        "",
    ]


def measuring_again() -> list[str]:
    return [
        "## Measuring again",
        "",
        "Each file in `docs/bench/` is one benchmark's output as its command printed it, "
        "below four lines of metadata:",
        "",
        "```text",
        "# machine: the CPU, how many, and whether a VM",
        "# date: the day it was measured (YYYY-MM-DD)",
        "# command: the command, run from the repository's root, whose output follows",
        "# provenance: where the output came from (read by people only)",
        "```",
        "",
        "```sh",
        "python3 scripts/perf-page.py              # writes this page and docs/bench.svg",
        "python3 scripts/perf-page.py --check      # exits 1 if either differs from docs/bench/",
        "python3 scripts/perf-page.py --record go  # runs go.txt's command again, saves its output",
        "```",
        "",
        "`--record NAME` runs the command of `docs/bench/NAME.txt` and, if it succeeds, "
        "saves its standard output with this machine and today's date, then writes the page "
        "and the plot. The Go benchmarks link `target/release/librate.a` (run "
        "`cargo build --release` first); the Python ones run in `.venv` "
        "(`python3 -m venv .venv && .venv/bin/pip install './bindings/python[bench,test]' "
        "redis hiredis limits`); the shared and Redis ones start their own `redis-server` "
        "(install it, or set `REDIS_SERVER` to its path). A quiet machine gives steadier "
        "ratios.",
        "",
        "`docs/bench/rust.txt` may hold any of `cargo bench --bench gcra`'s groups "
        "(`-- --output-format bencher` alone runs them all): every librate call with a "
        "governor call in its group becomes a row, and the `c_boundary` group adds a table "
        "of the C entry points. `docs/bench/c-abi.txt` is `benches/c_abi_table.py`'s "
        "output over several runs of `cargo bench --bench c_abi`. `docs/bench/go.txt` may "
        "hold any of the benchmarks of "
        "`bindings/go/peers` (`-bench .`): every librate benchmark becomes a row with its "
        "x/time/rate twin.",
        "",
    ]


def render(data: Path, page: Path, plot: Path) -> str:
    lines = [
        *opening(page, data, plot),
        *rust(data, page),
        *counting(data, page),
        *c_abi(data, page),
        *go(data, page),
        *python(data, page),
        *shared(data, page),
        *redis(data, page),
        *leases(data, page),
        *measuring_again(),
    ]
    return "\n".join(lines).rstrip("\n") + "\n"


def draw(data: Path) -> str:
    """docs/bench.svg, as scripts/plot-bench.py draws it."""
    return importlib.import_module("plot-bench").draw(data)


# --- --record ------------------------------------------------------------------------------


def this_machine() -> str:
    """`AMD EPYC, 2 vCPUs (VM)`: the CPU's model, how many, whether a hypervisor runs it."""
    model, vm = "unknown CPU", False
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown CPU":
                model = value.strip()
            if key.strip() == "flags" and "hypervisor" in value.split():
                vm = True
    count = os.cpu_count() or 0
    return f"{model}, {count} vCPUs (VM)" if vm else f"{model}, {count} CPUs"


def record(data: Path, name: str) -> None:
    path = data / f"{name}.txt"
    command = read(path).meta("command")
    print(f"perf-page: running {command}", file=sys.stderr)
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        stop(f"the command exited with {done.returncode}; {bench_data.shown(path)} is unchanged")
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    path.write_text(
        f"# machine: {this_machine()}\n# date: {today}\n# command: {command}\n"
        f"# provenance: recorded by scripts/perf-page.py --record {name}\n" + done.stdout
    )
    print(f"perf-page: wrote {bench_data.shown(path)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=bench_data.DATA)
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--plot", type=Path, default=PLOT)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if a file is not up to date")
    mode.add_argument("--record", metavar="NAME", help="run docs/bench/NAME.txt's command again")
    args = parser.parse_args()
    data, page, plot = (path.resolve() for path in (args.data, args.page, args.plot))
    if args.record:
        record(data, args.record)
    wanted = {page: render(data, page, plot), plot: draw(data)}
    if args.check:
        stale = [
            path for path, text in wanted.items() if not path.is_file() or path.read_text() != text
        ]
        if stale:
            names = " and ".join(bench_data.shown(path) for path in stale)
            verb = "is" if len(stale) == 1 else "are"
            sys.exit(
                f"perf-page: {names} {verb} not what docs/bench/ gives; run "
                "`python3 scripts/perf-page.py` and commit the result (edit docs/bench/ or "
                "the script, never the page or the plot)"
            )
        print(f"perf-page: {' and '.join(bench_data.shown(path) for path in wanted)} up to date")
        return
    for path, text in wanted.items():
        path.write_text(text)
        print(f"perf-page: wrote {bench_data.shown(path)}")


if __name__ == "__main__":
    main()
