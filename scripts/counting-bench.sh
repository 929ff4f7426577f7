#!/usr/bin/env bash
# docs/bench/counting.txt: what counting requests costs (docs/metrics.md), RUNS runs of
# `cargo bench --bench gcra -- counting` (try_acquire counted against uncounted, busy,
# idle and denying), criterion's medians to the hundredth of a ns.
# Usage: scripts/counting-bench.sh [RUNS]   (RUNS: 3 if not given)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=docs/bench/counting.txt
# shellcheck source=scripts/bench-machine.sh
source scripts/bench-machine.sh
{
    echo "# machine: $machine, shared with other jobs"
    echo "# date: $(date -u +%F)"
    echo "# command: scripts/counting-bench.sh $runs"
    echo "# provenance: $runs runs of cargo bench --bench gcra -- counting (criterion's medians, ns a call), at the commit that last changed this file"
    for run in $(seq "$runs"); do
        echo
        echo "cargo bench --bench gcra -- counting, run $run:"
        cargo bench -q -p librate-benches --bench gcra -- counting > /dev/null
        python3 scripts/criterion-medians.py "${CARGO_TARGET_DIR:-target}/criterion" counting
    done
} > "$out.new"
mv "$out.new" "$out"
echo "wrote $out"
