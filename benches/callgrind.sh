#!/usr/bin/env bash
# Instructions per call of the hot paths (benches/calls.rs), counted by valgrind's callgrind
# on commit BASE and on this checkout: a count does not depend on the machine's load as a
# timing does, so a small change in the decision code shows. Each case runs N calls and 0
# calls; the difference over N is the calls' cost alone. Prints one row per case: base,
# this checkout, and their ratio.
# Usage: benches/callgrind.sh BASE [N] [CASE...]   (N: 100000 if not given; every case if none)
# With THIS=COMMIT in the environment, that commit is measured instead of the checkout (so
# the checkout may change while the script runs).
# calls.rs is built against each tree as a small package of its own under the temporary
# directory (the same source on both sides, whether or not BASE has it), in release.
set -euo pipefail
shopt -s inherit_errexit # a failed build inside $(…) stops the script
cd "$(dirname "$0")/.."
base=${1:?usage: benches/callgrind.sh BASE [N] [CASE...]}
calls=${2:-100000}
shift $(( $# < 2 ? $# : 2 ))
cases=("$@")
if [ ${#cases[@]} -eq 0 ]; then
    mapfile -t cases < <(grep -oE '^ +"[a-z_]+" =>' benches/calls.rs | tr -d ' "=>')
fi
tmp="${TMPDIR:-/tmp}"
tree="$tmp/librate-callgrind-base-$base"
[ -d "$tree" ] || git worktree add --detach "$tree" "$base" >&2

# Builds calls.rs against the library at $2 in the package directory $1; prints the binary.
build() {
    local dir=$1 library=$2
    mkdir -p "$dir/src"
    cp benches/calls.rs "$dir/src/main.rs"
    cat >"$dir/Cargo.toml" <<TOML
[package]
name = "calls"
version = "0.0.0"
edition = "2021"
publish = false
[dependencies]
librate = { path = "$library" }
librate-ffi = { path = "$library/ffi" }
[profile.release]
panic = "unwind"
[workspace]
TOML
    (cd "$dir" && cargo build --release --quiet >&2)
    echo "$dir/target/release/calls"
}

# Instructions of `$1 $2 $3` under callgrind.
count() {
    local out
    out=$(mktemp)
    valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >/dev/null 2>&1
    awk '/^summary:/ { print $2 }' "$out"
    rm -f "$out"
}

before=$(build "$tmp/librate-callgrind-calls-base" "$tree")
this=$PWD
if [ -n "${THIS:-}" ]; then
    this="$tmp/librate-callgrind-this"
    [ -d "$this" ] || git worktree add --detach "$this" "$THIS" >&2
    git -C "$this" checkout --quiet --detach "$THIS"
fi
after=$(build "$tmp/librate-callgrind-calls-this" "$this")
printf '%-36s %12s %12s %8s\n' case base this ratio
for case in "${cases[@]}"; do
    b=$(( ($(count "$before" "$case" "$calls") - $(count "$before" "$case" 0)) ))
    a=$(( ($(count "$after" "$case" "$calls") - $(count "$after" "$case" 0)) ))
    awk -v c="$case" -v b="$b" -v a="$a" -v n="$calls" \
        'BEGIN { printf "%-36s %12.1f %12.1f %8.4f\n", c, b / n, a / n, a / b }'
done
