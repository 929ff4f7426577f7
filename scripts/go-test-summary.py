#!/usr/bin/env python3
"""Reads `go test -json` on standard input and prints what a person needs from it: each
package's result line and what its process said outside any test (a TestMain's notes), a
failed test's whole output, the skipped tests grouped by reason, and last one line

    go test: N passed, N failed, N skipped

counting top-level tests (a failed subtest fails its parent). scripts/test.sh sums that
line into its own. The exit status is go test's, which the caller takes from the pipe.

Usage: go test -json ./... | scripts/go-test-summary.py
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict

# "    limiter_test.go:56: the reason\n": the location a t.Skip gives its message.
LOCATION = re.compile(r"^\s*\S+\.go:\d+: ")


def main() -> None:
    counts = {"pass": 0, "fail": 0, "skip": 0}
    output: dict[tuple[str, str], list[str]] = defaultdict(list)
    skipped: dict[tuple[str, str], int] = defaultdict(int)
    for line in sys.stdin:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            print(line, end="")  # not test2json's: pass it on as it came
            continue
        action = event.get("Action")
        package = event.get("Package") or event.get("ImportPath") or ""
        test = event.get("Test")
        text = event.get("Output", "")
        if action == "build-output":
            print(text, end="")
        elif test is None:
            if action == "output" and text not in ("PASS\n", "FAIL\n"):
                print(text, end="")
        elif action == "output":
            output[(package, test)].append(text)
        elif action in counts:
            lines = output.pop((package, test), [])
            if action == "fail":
                print("".join(lines), end="")
            if "/" in test:
                continue
            counts[action] += 1
            if action == "skip":
                said = [LOCATION.sub("", t).strip() for t in lines if LOCATION.match(t)]
                skipped[(package, said[-1] if said else "no reason given")] += 1
    for (package, test), lines in output.items():  # never ended: the process died in it
        print(f"--- {package} {test} did not finish:\n{''.join(lines)}", end="")
    for (package, reason), n in sorted(skipped.items()):
        print(f"skipped {n} test{'s' if n > 1 else ''} of {package}: {reason}")
    print(f"go test: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")


if __name__ == "__main__":
    main()
