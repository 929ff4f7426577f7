#!/usr/bin/env python3
"""Prints benches/pairs.sh's table: every criterion row measured in runs pair-before-1 …
pair-before-RUNS (the base commit) and pair-after-1 … pair-after-RUNS (this checkout),
before against after. Standard library only.

    python3 benches/pairs_table.py RUNS

A time is criterion's median ns per call, then the median over the runs; a ratio
(after / before) is taken within each run, then the median over the runs, with the runs'
smallest and largest in brackets (shared_table.py's rules). Only rows both sides measured
in every run are shown.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from shared_table import ROOT, Run, load, ratio, time


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print("usage: benches/pairs_table.py RUNS", file=sys.stderr)
        return 2
    runs = int(sys.argv[1])
    criterion = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target") / "criterion"
    before = [load(criterion, f"pair-before-{run}") for run in range(1, runs + 1)]
    after = [load(criterion, f"pair-after-{run}") for run in range(1, runs + 1)]
    ids = sorted(set.intersection(*(set(run) for run in before + after)))
    if not ids:
        print(f"no row measured in every pair-before/after run under {criterion}", file=sys.stderr)
        return 1
    # One run holds both sides, keyed apart, so the shared helpers pair them.
    paired: list[Run] = [
        {**{f"before {row}": b[row] for row in ids}, **{f"after {row}": a[row] for row in ids}}
        for b, a in zip(before, after)
    ]
    print(f"medians over {runs} paired run(s)\n")
    print("| row | before ns | after ns | after / before |")
    print("|---|---:|---:|---:|")
    for row in ids:
        print(
            f"| {row} | {time(paired, f'before {row}')} | {time(paired, f'after {row}')} "
            f"| {ratio(paired, f'after {row}', f'before {row}')} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
