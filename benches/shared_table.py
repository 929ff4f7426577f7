#!/usr/bin/env python3
"""Prints the tables for `cargo bench --bench shared` from criterion's results:
each shared limiter's time against the private one's, and the Redis round trips against
the shared limiter's calls. Standard library only.

    for run in 1 2 3; do cargo bench --bench shared -- --save-baseline shared-$run; done
    python3 benches/shared_table.py shared-1 shared-2 shared-3

With `--change RUNS`, the tables of benches/shared_change.sh instead, from its runs
before-1 … before-RUNS (the commit before a rule could change in a file) and after-1 …
after-RUNS (this checkout): each never-changed call before against after, and the
`shared_changed` group's limiter changed once against the one never changed.

Each argument names a run saved with criterion's `--save-baseline` (none: the latest run,
criterion's `new`). A time is criterion's median ns per call, then the median over the
runs; a ratio is taken within each run (both sides measured minutes apart), then the
median over the runs, with the runs' smallest and largest in brackets. Results are read
under $CARGO_TARGET_DIR/criterion, else target/criterion of this checkout.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRED = [
    "shared_through_clock",
    "shared_at_frozen_time",
    "shared_keyed",
    "shared_contended_2_threads",
]
VERSUS = "shared_vs_redis"
#: One run's results: full benchmark id -> median ns per call.
Run = dict[str, float]


def load(criterion: Path, baseline: str) -> Run:
    found = {}
    for described in criterion.glob(f"**/{baseline}/benchmark.json"):
        full_id = json.loads(described.read_text())["full_id"]
        estimates = json.loads((described.parent / "estimates.json").read_text())
        found[full_id] = estimates["median"]["point_estimate"]
    return found


def time(runs: list[Run], full_id: str) -> str:
    ns = statistics.median(run[full_id] for run in runs)
    return f"{ns:,.1f}" if ns < 1_000 else f"{ns:,.0f}"


def ratio(runs: list[Run], over: str, under: str, digits: int = 2) -> str:
    ratios = sorted(run[over] / run[under] for run in runs)
    median = f"{statistics.median(ratios):,.{digits}f}"
    if len(ratios) == 1:
        return median
    return f"{median} ({ratios[0]:,.{digits}f}–{ratios[-1]:,.{digits}f})"


def paired_rows(runs: list[Run]) -> list[str]:
    rows = [
        "| group | subject | call | private ns | shared ns | shared / private |",
        "|---|---|---|---:|---:|---:|",
    ]
    privates = []
    for full_id in runs[0]:
        group, _, rest = full_id.partition("/")
        if group in PAIRED and rest.endswith("/private"):
            subject, call, _ = rest.split("/")
            privates.append((PAIRED.index(group), group, subject, call))
    for _, group, subject, call in sorted(privates):
        private = f"{group}/{subject}/{call}/private"
        for store in ("shared", "shared_two_mappings"):
            shared = f"{group}/{subject}/{call}/{store}"
            if all(shared in run for run in runs):
                label = call if store == "shared" else f"{call}, two mappings"
                rows.append(
                    f"| {group} | {subject} | {label} | {time(runs, private)} "
                    f"| {time(runs, shared)} | {ratio(runs, shared, private)} |"
                )
    return rows


def versus_rows(runs: list[Run]) -> list[str]:
    ours = [f"{VERSUS}/gcra_busy/{call}/shared" for call in ("try_acquire", "acquire")]
    theirs = [
        f"{VERSUS}/redis_incr_expire/{transport}" for transport in ("tcp", "unix")
    ]
    if not all(full_id in run for run in runs for full_id in ours + theirs):
        return [f"no {VERSUS} results in every run (is redis-server installed?)"]
    rows = [
        "| call | ns | Redis / shared `try_acquire` | Redis / shared `acquire` |",
        "|---|---:|---:|---:|",
    ]
    for full_id in ours:
        rows.append(f"| {full_id} | {time(runs, full_id)} | | |")
    for full_id in theirs:
        per_call = [ratio(runs, full_id, mine, digits=0) for mine in ours]
        rows.append(f"| {full_id} | {time(runs, full_id)} | {' | '.join(per_call)} |")
    return rows


#: The calls benches/shared_change.sh measures on both sides.
CHANGE_CALLS = [
    "shared_through_clock/gcra_busy/try_acquire",
    "shared_at_frozen_time/gcra_frozen/acquire_at",
    "shared_keyed/idle_1000_keys/try_acquire",
]
CHANGED = "shared_changed"


def change_rows(befores: list[Run], afters: list[Run]) -> list[str]:
    rows = [
        "| call | before ns | after ns | after / before |",
        "|---|---:|---:|---:|",
    ]
    for call in CHANGE_CALLS:
        for store in ("shared", "private"):
            full_id = f"{call}/{store}"
            ratios = sorted(a[full_id] / b[full_id] for a, b in zip(afters, befores))
            spread = f" ({ratios[0]:.2f}–{ratios[-1]:.2f})" if len(ratios) > 1 else ""
            rows.append(
                f"| {full_id} | {time(befores, full_id)} | {time(afters, full_id)} "
                f"| {statistics.median(ratios):.2f}{spread} |"
            )
    rows += [
        "",
        "| subject | call | never changed ns | changed once ns | changed once / never changed |",
        "|---|---|---:|---:|---:|",
    ]
    for subject, call in (
        ("gcra_busy", "try_acquire"),
        ("gcra_frozen", "acquire_at"),
        ("idle_1000_keys", "keyed_try_acquire"),
    ):
        never = f"{CHANGED}/{subject}/{call}/never_changed"
        once = f"{CHANGED}/{subject}/{call}/changed_once"
        rows.append(
            f"| {subject} | {call} | {time(afters, never)} | {time(afters, once)} "
            f"| {ratio(afters, once, never)} |"
        )
    return rows


def main() -> int:
    criterion = (
        Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "criterion"
    )
    if sys.argv[1:2] == ["--change"]:
        count = int(sys.argv[2])
        sides = [
            [load(criterion, f"{side}-{run}") for run in range(1, count + 1)]
            for side in ("before", "after")
        ]
        if not all(run for side in sides for run in side):
            print(f"no before-N and after-N runs under {criterion}", file=sys.stderr)
            return 1
        print(f"medians over {count} run(s) a side: before-1…{count}, after-1…{count}\n")
        print("\n".join(change_rows(*sides)))
        return 0
    baselines = sys.argv[1:] or ["new"]
    runs = [load(criterion, baseline) for baseline in baselines]
    if not all(runs):
        print(
            f"no results for every one of {baselines} under {criterion}",
            file=sys.stderr,
        )
        return 1
    print(f"medians over {len(runs)} run(s): {', '.join(baselines)}\n")
    print("\n".join(paired_rows(runs) + [""] + versus_rows(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
