#!/usr/bin/env bash
# docs/bench/leases.txt: the lease simulation's measurements (redis-tests/tests/
# lease_sim_measure.rs, on a redis-server of its own: over-admission, utilization, how many
# renewals shares take to follow demand, Redis calls per holder, the decisions 1,000
# simulated holders sustain against a Redis call per decision), then RUNS runs of
# `cargo bench --bench lease` (a leased decision against an in-process one) and of
# `cargo bench --bench lease_pairs` (the two timed in turns).
# Usage: scripts/lease-sim.sh [RUNS]   (RUNS: 3 if not given)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
out=docs/bench/leases.txt
# shellcheck source=scripts/bench-machine.sh
source scripts/bench-machine.sh
{
    echo "# machine: $machine, shared with other jobs"
    echo "# date: $(date -u +%F)"
    echo "# command: scripts/lease-sim.sh $runs"
    echo "# provenance: redis-tests/tests/lease_sim_measure.rs on $(redis-server --version | cut -d' ' -f1-3), virtual time; then $runs runs of cargo bench --bench lease (criterion's medians, ns a call) and of cargo bench --bench lease_pairs (the two calls in turns), at the commit that last changed this file"
    cargo test --release -q -p librate-redis-tests --test lease_sim_measure -- --ignored --nocapture \
        | sed -n 's/^LEASES //p'
    for run in $(seq "$runs"); do
        echo
        echo "cargo bench --bench lease, run $run:"
        cargo bench -q -p librate-benches --bench lease > /dev/null
        python3 scripts/criterion-medians.py "${CARGO_TARGET_DIR:-target}/criterion" lease
    done
    for run in $(seq "$runs"); do
        echo
        echo "cargo bench --bench lease_pairs, run $run:"
        cargo bench -q -p librate-benches --bench lease_pairs
    done
} > "$out.new"
mv "$out.new" "$out"
echo "wrote $out"
