#!/usr/bin/env bash
# Criterion rows of this checkout against commit BASE, measured in turn RUNS times (each
# run: BASE's bench, then this checkout's, so both sides see the same machine minutes
# apart), then printed by benches/pairs_table.py as before / after with each run's ratio.
# Usage: benches/pairs.sh BASE RUNS BENCH [FILTER [OPTION…]]
#   BENCH: a bench of benches/ (gcra, keyed, policy…); FILTER: criterion's regex of ids;
#   OPTIONs: more of criterion's (e.g. --warm-up-time 1 --measurement-time 2).
# BASE is checked out in a worktree under the temporary directory and built in a target
# directory of its own; its results are saved among this checkout's (CRITERION_HOME) as
# pair-before-N, this checkout's as pair-after-N (an earlier pairing's are removed first).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:?usage: benches/pairs.sh BASE RUNS BENCH [FILTER]}
runs=${2:?usage: benches/pairs.sh BASE RUNS BENCH [FILTER]}
bench=${3:?usage: benches/pairs.sh BASE RUNS BENCH [FILTER]}
filter=${4:-.}
shift $(($# < 4 ? $# : 4))
tree="${TMPDIR:-/tmp}/librate-base-$base"
[ -d "$tree" ] || git worktree add --detach "$tree" "$base" >&2
export CRITERION_HOME="$PWD/target/criterion"
# An earlier pairing's rows would otherwise be printed beside this one's, stale.
[ -d "$CRITERION_HOME" ] && find "$CRITERION_HOME" -type d -name 'pair-*' -prune -exec rm -rf {} +
for run in $(seq "$runs"); do
    (cd "$tree" && CARGO_TARGET_DIR="$tree/target" cargo bench --bench "$bench" -- \
        --save-baseline "pair-before-$run" "$filter" "$@") >&2
    cargo bench --bench "$bench" -- --save-baseline "pair-after-$run" "$filter" "$@" >&2
done
python3 benches/pairs_table.py "$runs"
