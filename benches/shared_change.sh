#!/usr/bin/env bash
# Shared tables' decisions before and after their rules could change in their files: the
# never-changed shared limiter's busy `try_acquire` and frozen `acquire_at`, and the idle
# keyed table's `try_acquire` (and the private ones beside them) measured on commit BASE,
# then on this checkout, in turn, RUNS times;
# this checkout's runs also measure the `shared_changed` group (never changed against
# changed once). Prints benches/shared_table.py --change's tables.
# Usage: benches/shared_change.sh BASE [RUNS]   (BASE: a commit; RUNS: 3 if not given)
# BASE is checked out in a worktree under the temporary directory, built in a target
# directory of its own, and its results saved among this checkout's (CRITERION_HOME), so
# the two sides' runs sit in one place as before-N and after-N.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: benches/shared_change.sh BASE [RUNS]}
runs=${2:-3}
tree="${TMPDIR:-/tmp}/librate-base-$base"
[ -d "$tree" ] || git worktree add --detach "$tree" "$base" >&2
export CRITERION_HOME="$PWD/target/criterion"
before='^shared_(through_clock/gcra_busy/try_acquire|at_frozen_time/gcra_frozen/acquire_at|keyed/idle_1000_keys/try_acquire)/'
after='^shared_(through_clock/gcra_busy/try_acquire|at_frozen_time/gcra_frozen/acquire_at|keyed/idle_1000_keys/try_acquire|changed)/'
for run in $(seq "$runs"); do
    (cd "$tree" && CARGO_TARGET_DIR="$tree/target" cargo bench --bench shared -- \
        --save-baseline "before-$run" "$before") >&2
    cargo bench --bench shared -- --save-baseline "after-$run" "$after" >&2
done
python3 benches/shared_table.py --change "$runs"
