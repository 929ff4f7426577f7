#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/) with libFuzzer's coverage instrumentation on the stable
# toolchain, and runs them.
# Usage: scripts/fuzz.sh build
#        scripts/fuzz.sh run TARGET [libFuzzer options…]   (e.g. -runs=10000000, -jobs=2)
#        scripts/fuzz.sh smoke                              (each target over its corpus, 15 s)
# Targets: abi_sequence, shared_bytes, config. Corpora: fuzz/corpus/TARGET (what a run
# finds new lands in target/fuzz/corpus/TARGET; merge it back with -merge=1). Needs a C++
# compiler: libfuzzer-sys builds libFuzzer with it.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(abi_sequence shared_bytes config)
export CARGO_TARGET_DIR="$PWD/target/fuzz"
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
BIN="$CARGO_TARGET_DIR/$TRIPLE/release"
# What cargo-fuzz passes, less the sanitizer (-Zsanitizer needs nightly). An explicit
# --target keeps these flags off build scripts and proc macros, which cannot link the
# coverage callbacks libFuzzer defines.
export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing"

build() {
    (cd fuzz && cargo build --release --locked --target "$TRIPLE" --bins)
}

# Options every run shares: short inputs (a sequence of some dozens of calls), a timeout
# above the second a shared table may wait on a slot a live process holds.
run() {
    local target=$1
    shift
    mkdir -p "target/fuzz/corpus/$target"
    "$BIN/$target" -max_len=512 -timeout=10 -rss_limit_mb=2048 "$@" \
        "target/fuzz/corpus/$target" "fuzz/corpus/$target"
}

case "${1:-}" in
    build) build ;;
    run)
        shift
        build
        run "$@"
        ;;
    smoke)
        build
        # Every corpus input, then mutations: 15 seconds a target in all. What they find
        # goes to a scratch directory, so the run depends on the committed corpus alone.
        scratch=$(mktemp -d)
        trap 'rm -rf "$scratch"' EXIT
        for target in "${TARGETS[@]}"; do
            mkdir "$scratch/$target"
            "$BIN/$target" -max_len=512 -timeout=10 -max_total_time=15 \
                "$scratch/$target" "fuzz/corpus/$target"
        done
        ;;
    *)
        sed -n '2,9p' "$0"
        exit 2
        ;;
esac
