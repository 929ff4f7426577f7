#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/) with libFuzzer's coverage instrumentation on the stable
# toolchain, and runs them.
# Usage: scripts/fuzz.sh build
#        scripts/fuzz.sh run TARGET [libFuzzer options…]   (e.g. -runs=10000000, -jobs=2)
#        scripts/fuzz.sh smoke                              (each target over its corpus, 12 s;
#                                                            libFuzzer's progress to a log,
#                                                            shown only on a failure)
# Targets: abi_sequence, exact, shared_bytes, shared_rules, config. Corpora: fuzz/corpus/TARGET
# (what a run finds new lands in target/fuzz/corpus/TARGET; merge it back with
# -set_cover_merge=1 -use_counters=0, a set of inputs covering every edge). Needs a C++
# compiler: libfuzzer-sys builds libFuzzer with it.
set -euo pipefail
cd "$(dirname "$0")/.."

# The smoke run's: every target.
TARGETS=(abi_sequence exact shared_bytes shared_rules config)
export CARGO_TARGET_DIR="$PWD/target/fuzz"
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
BIN="$CARGO_TARGET_DIR/$TRIPLE/release"
# The coverage flags go to the code under test alone (scripts/fuzz-rustc); `fuzzing` to
# every crate, the library's fuzz build included. An explicit --target keeps it off build
# scripts and proc macros.
export RUSTC_WRAPPER="$PWD/scripts/fuzz-rustc"
export RUSTFLAGS="--cfg fuzzing"

build() {
    (cd fuzz && cargo build --release --locked --target "$TRIPLE" --bins)
}

# Options every run shares: short inputs (a sequence of some dozens of calls), a timeout
# far above any wait of the fuzz build (a millisecond on a slot a live process holds).
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
        # Every corpus input, then mutations: 12 seconds a target in all. What they find
        # goes to a scratch directory, so the run depends on the committed corpus alone.
        # libFuzzer's progress (thousands of lines) goes to a log each; a failure shows
        # the log's end, where libFuzzer reports the crash and the input that caused it.
        scratch=$(mktemp -d)
        trap 'rm -rf "$scratch"' EXIT
        logs=target/fuzz/smoke
        mkdir -p "$logs"
        for target in "${TARGETS[@]}"; do
            mkdir "$scratch/$target"
            log="$logs/$target.log"
            if ! "$BIN/$target" -max_len=512 -timeout=10 -max_total_time=12 \
                "$scratch/$target" "fuzz/corpus/$target" >"$log" 2>&1; then
                tail -n 60 "$log"
                echo "fuzz: $target FAILED (above: the end of $log)"
                exit 1
            fi
            # "#123 DONE cov: … ft: … corp: …" and "Done 123 runs in 12 second(s)".
            echo "fuzz: $target ok: $(grep -E '^Done [0-9]+ runs' "$log" | tail -n 1)," \
                "$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -n 1) (log: $log)"
        done
        ;;
    *)
        sed -n '2,11p' "$0"
        exit 2
        ;;
esac
