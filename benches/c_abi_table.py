#!/usr/bin/env python3
"""Prints the tables of `cargo bench --bench c_abi` from criterion's results: each C entry
point against governor's call in its group, and the floors. Standard library only.

    for run in 1 2 3 4 5; do cargo bench --bench c_abi -- --save-baseline c-abi-$run; done
    python3 benches/c_abi_table.py c-abi-1 c-abi-2 c-abi-3 c-abi-4 c-abi-5

Each argument names a run saved with criterion's `--save-baseline` (none: the latest run,
criterion's `new`). A time is criterion's median ns per call, then the median over the
runs; a ratio is taken within each run, then the median over the runs, with the runs'
smallest and largest in brackets (shared_table.py's rules).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shared_table import ROOT, Run, load, ratio, time

#: (group, librate's call, governor's call), as benches/c_abi.rs measures them.
ROWS = [
    ("idle", "rate_limiter_acquire(l, 1, NULL)", "`check()` on its default clock"),
    ("frozen", "rate_limiter_acquire_at(l, 1, t, NULL)", "`check()` on a `FakeRelativeClock`"),
] + [
    (f"keyed/{count}_{traffic}_keys", "rate_keyed_acquire(k, key, 8, 1, NULL)", "`check_key(&key)`")
    for count in ("1000", "1000000")
    for traffic in ("idle", "drained")
]
#: The floor group's rows and what each is.
FLOORS = [
    ("empty_c_call", "an empty `extern \"C\"` function, through the same pointer"),
    ("rate_now_ns", "`rate_now_ns()` through a pointer: the clock `rate_limiter_acquire` reads"),
    ("governor_clock", "governor's default clock, inlined"),
    ("librate_hash", "SipHash-1-3 of 8 bytes, as librate's table hashes a key"),
    ("governor_hash", "std's `RandomState` hash of a `u64`, as governor's `DashMap` hashes a key"),
]


def rows(runs: list[Run]) -> list[str]:
    lines = [
        "| group | librate | governor | librate ns | governor ns | librate / governor |",
        "|---|---|---|---:|---:|---:|",
    ]
    for group, ours, theirs in ROWS:
        mine, peer = f"{group}/librate", f"{group}/governor"
        lines.append(
            f"| {group} | {ours} | {theirs} | {time(runs, mine)} | {time(runs, peer)} "
            f"| {ratio(runs, mine, peer)} |"
        )
    lines += ["", "| floor | what | ns |", "|---|---|---:|"]
    for name, what in FLOORS:
        lines.append(f"| {name} | {what} | {time(runs, f'floor/{name}')} |")
    return lines


def main() -> int:
    criterion = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "criterion"
    baselines = sys.argv[1:] or ["new"]
    runs = [load(criterion, baseline) for baseline in baselines]
    if not all(runs):
        print(f"no results for every one of {baselines} under {criterion}", file=sys.stderr)
        return 1
    print(f"medians over {len(runs)} run(s): {', '.join(baselines)}\n")
    print("\n".join(rows(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
