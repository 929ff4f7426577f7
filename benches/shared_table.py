#!/usr/bin/env python3
"""Prints the README's tables for `cargo bench --bench shared` from criterion's results:
each shared limiter's median against the private one's, and the Redis round trips against
the shared limiter's calls. Standard library only.

    cargo bench --bench shared && python3 benches/shared_table.py

Reads the latest results under $CARGO_TARGET_DIR/criterion (else target/criterion of this
checkout): criterion's median of its samples' per-call times, in ns.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIRED = ["shared_through_clock", "shared_at_frozen_time", "shared_contended_2_threads"]
VERSUS = "shared_vs_redis"


def medians(criterion: Path) -> dict[str, float]:
    """Every benchmark's full id and median ns per call."""
    found = {}
    for described in criterion.glob("**/new/benchmark.json"):
        full_id = json.loads(described.read_text())["full_id"]
        estimates = json.loads((described.parent / "estimates.json").read_text())
        found[full_id] = estimates["median"]["point_estimate"]
    return found


def paired_rows(results: dict[str, float]) -> list[str]:
    rows = [
        "| group | subject | call | private | shared | shared / private |",
        "|---|---|---|---:|---:|---:|",
    ]
    privates = [
        (PAIRED.index(group), group, subject, call)
        for group, subject, call, store in (
            full_id.split("/", 3) for full_id in results
        )
        if group in PAIRED and store == "private"
    ]
    for _, group, subject, call in sorted(privates):
        private = results[f"{group}/{subject}/{call}/private"]
        for other in ("shared", "shared_two_mappings"):
            shared = results.get(f"{group}/{subject}/{call}/{other}")
            if shared is None:
                continue
            label = call if other == "shared" else f"{call}, two mappings"
            rows.append(
                f"| {group} | {subject} | {label} | {private:.1f} | {shared:.1f} "
                f"| {shared / private:.2f} |"
            )
    return rows


def versus_rows(results: dict[str, float]) -> list[str]:
    try_acquire = results.get(f"{VERSUS}/gcra_busy/try_acquire/shared")
    acquire = results.get(f"{VERSUS}/gcra_busy/acquire/shared")
    if try_acquire is None or acquire is None:
        return [f"no {VERSUS} results (is redis-server installed?)"]
    rows = [
        f"shared `try_acquire` {try_acquire:.1f} ns, `acquire` {acquire:.1f} ns",
        "",
        "| Redis INCR + EXPIRE | ns | × shared try_acquire | × shared acquire |",
        "|---|---:|---:|---:|",
    ]
    for transport in ("tcp", "unix"):
        ns = results.get(f"{VERSUS}/redis_incr_expire/{transport}")
        if ns is not None:
            rows.append(
                f"| {transport} | {ns:,.0f} | {ns / try_acquire:,.0f} | {ns / acquire:,.0f} |"
            )
    return rows


def main() -> int:
    target = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    results = medians(target / "criterion")
    if not results:
        print(f"no criterion results under {target / 'criterion'}", file=sys.stderr)
        return 1
    print("\n".join(paired_rows(results) + [""] + versus_rows(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
