#!/usr/bin/env python3
"""Prints criterion's medians of one bench group, to the hundredth of a ns, as bencher
lines (`test GROUP/SUBJECT/... ... bench: 9.86 ns/iter`) that scripts/bench_data.py reads:
criterion's own bencher output rounds to whole ns, too coarse for ratios near 1.

Usage: scripts/criterion-medians.py CRITERION_DIR GROUP
  (CRITERION_DIR: target/criterion, or $CARGO_TARGET_DIR/criterion)
"""

import json
import pathlib
import sys

root, group = pathlib.Path(sys.argv[1]), sys.argv[2]
for estimates in sorted((root / group).glob("**/new/estimates.json")):
    subject = estimates.parent.parent.relative_to(root).as_posix()
    median = json.loads(estimates.read_text())["median"]["point_estimate"]
    print(f"test {subject} ... bench: {median:.2f} ns/iter")
