#!/usr/bin/env bash
# Runs every test in every language: Rust (unit, integration, example and doc tests, the C
# and C++ tests driven by cargo, the Redis tier), the fuzz smoke run, the loom models, the
# C tests under valgrind and sanitizers, Python and Go.
#
# Usage: scripts/test.sh            (from anywhere in the repository)
#        scripts/test.sh --quick    the inner loop, within two minutes with a warm build:
#                                   the docs check, Rust's unit, integration and example
#                                   tests but those that drive the C and C++ compilers,
#                                   and the Python and Go tests that need no Redis. It
#                                   leaves out the doc tests, the native-toolchain tests,
#                                   the Redis tier, fuzzing, loom, valgrind and the
#                                   sanitizers, Go's race, GC-stress and dynamic-link
#                                   runs, and the API reference's build.
#
# Every step runs, even after one has failed. The run ends with a table of the steps, what
# was skipped and why, and one line, "N passed, N failed": the tests of every language
# (cargo's, the C programs', pytest's, go test's top-level ones), a failed step that counts
# no failed test counting as one. The exit status is non-zero when any step failed.
#
# Redis: the Redis tier's tests (Rust, Python, Go) start their own redis-server on
# 127.0.0.1: $REDIS_SERVER, or redis-server on PATH. Where there is none they are skipped,
# said when it happens and again at the end; under CI (CI set, not empty) a missing
# redis-server fails the run.
#
# Needs: Rust >= 1.77, cc (C99) and c++ (C++17) with libasan/libubsan, binutils, pkg-config,
#        valgrind, redis-server (with redis-cli, for the Cluster tests), python3 >= 3.10
#        with venv, go >= 1.24. Installs pytest, uvicorn, Flask, redis-py, Django, FastAPI,
#        httpx and prometheus_client from PyPI into .venv (the package's `test` extra); the
#        fuzz step fetches libfuzzer-sys from crates.io and builds libFuzzer with the C++
#        compiler; the dist step installs ziglang, cargo-zigbuild, auditwheel and build from PyPI into
#        target/dist/venv.
set -uo pipefail # not -e: a failed step is recorded and the next one runs
cd "$(dirname "$0")/.."
root=$PWD

quick=false
case "${1:-}" in
    --quick) quick=true ;;
    "") ;;
    *)
        sed -n '2,14p' "$0"
        exit 2
        ;;
esac

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
started=$SECONDS
passed=0 failed=0 failed_steps=0
table=() notes=()

# count LOG: "passed failed skipped", summed over the test runners' own summaries in LOG.
count() {
    python3 - "$1" <<'EOF'
import re
import sys

passed = failed = skipped = 0
with open(sys.argv[1], errors="replace") as log:
    for line in log:
        line = line.strip()
        # cargo test, each test binary and the doc tests
        m = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", line)
        if m:
            passed, failed, skipped = passed + int(m[1]), failed + int(m[2]), skipped + int(m[3])
            continue
        # scripts/go-test-summary.py, scripts/c-tests.sh
        m = re.match(r"(?:go test|c-tests|dist-check): (\d+) passed, (\d+) failed(?:, (\d+) skipped)?$", line)
        if m:
            passed, failed = passed + int(m[1]), failed + int(m[2])
            skipped += int(m[3] or 0)
            continue
        # pytest's last line: "3 failed, 410 passed, 111 skipped in 27.64s"
        if re.fullmatch(r"=*\s*\d+ \w+(, \d+ \w+)* in [\d.]+s( \([\d:.]+\))?\s*=*", line):
            for n, what in re.findall(r"(\d+) (\w+)", line):
                if what == "passed":
                    passed += int(n)
                elif what in ("failed", "error", "errors"):
                    failed += int(n)
                elif what == "skipped":
                    skipped += int(n)
print(passed, failed, skipped)
EOF
}

# step LABEL COMMAND...: runs COMMAND (a function of this script or a program) under
# `set -e`, shows its output and keeps it to count the tests. With ok_as=skipped before it,
# a step that succeeds is listed as skipped (built, not run).
step() {
    local label=$1 log="$logs/${#table[@]}.log" start=$SECONDS status p f s result
    shift
    printf '\n=== %s\n' "$label"
    (set -e; "$@") 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    read -r p f s < <(count "$log")
    passed=$((passed + p)) failed=$((failed + f))
    if [ "$status" -ne 0 ]; then
        result=FAILED
        failed_steps=$((failed_steps + 1))
        [ "$f" -gt 0 ] || failed=$((failed + 1)) # a failure no test counted
    else
        result=${ok_as:-ok}
    fi
    local row
    row=$(printf '%-7s %5ss  %s' "$result" $((SECONDS - start)) "$label")
    if [ $((p + f + s)) -gt 0 ]; then
        row=$(printf '%-88s %s' "$row" "$p passed, $f failed")
        [ "$s" -eq 0 ] || row+=", $s skipped"
    fi
    table+=("$row")
    return 0
}

# A step that is no command: a check this script makes itself (redis-server under CI).
failed_check() {
    printf '\n=== %s\nFAILED: %s\n' "$1" "$2"
    table+=("$(printf '%-7s %5ss  %s' FAILED 0 "$1")")
    failed=$((failed + 1)) failed_steps=$((failed_steps + 1))
}

summary() {
    printf '\n=== Summary: scripts/test.sh%s, %dm %02ds\n' "$($quick && echo ' --quick')" \
        $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60))
    printf '%s\n' "${table[@]}"
    [ ${#notes[@]} -eq 0 ] || printf '%s\n' "${notes[@]}"
    echo "$passed passed, $failed failed"
}

# ---- what the steps run ------------------------------------------------------------------

# Cargo's view of the Rust tests: the library with every feature the tests use, and the
# packages of the Redis tier's tests (redis-tests/), the tower layer's (tower-tests/,
# which turns on the library's `tower` feature) and the async waits' on tokio
# (async-tests/) beside it, always all, so that every cargo command below builds the
# library the same way and a warm build serves them all.
cargo_test() { cargo test -p librate -p librate-ffi -p librate-redis-tests -p librate-tower-tests -p librate-async-tests --features testing,redis,redis-async,metrics "$@"; }
tests_of() { for t in "$@"; do printf -- '--test %s ' "$(basename "$t" .rs)"; done; }
# The library's integration tests, the C ABI's (ffi/tests), the tower layer's
# (tower-tests/tests, in process and on 127.0.0.1) and the async waits' on tokio
# (async-tests/tests). --quick leaves out those that drive the C and C++ compilers
# (through ffi/tests/native), and the loom models, empty without `--cfg loom`.
root_tests=$(tests_of tests/*.rs ffi/tests/*.rs tower-tests/tests/*.rs async-tests/tests/*.rs)
in_process_tests=$(tests_of $(grep -L '^mod native;' tests/*.rs ffi/tests/*.rs tower-tests/tests/*.rs async-tests/tests/*.rs | grep -v '^tests/loom_'))
redis_tests=$(tests_of redis-tests/tests/*.rs)

go_test() { go test -json "$@" | python3 -u "$root/scripts/go-test-summary.py"; }

docs() {
    python3 scripts/check-docs.py
    # docs/performance.md and docs/bench.svg are the script's, from docs/bench/, never
    # edited by hand.
    python3 scripts/perf-page.py --check
}

rust_tests() {
    # shellcheck disable=SC2086 # word lists of --test NAME
    cargo_test --lib --examples $root_tests
    cargo_test --doc
}

rust_quick() {
    # shellcheck disable=SC2086
    cargo_test --lib --examples $in_process_tests
}

# The Redis tier's Rust tests; with --no-run, built only (no redis-server, outside CI).
rust_redis() {
    # shellcheck disable=SC2086
    cargo_test $redis_tests "$@"
}

loom() {
    RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
        cargo test --release $(tests_of tests/loom_*.rs)
}

# The package bundles librate.so: installed again whenever the library or the package's
# files changed (--quick), or always (the full run, which also proves the install works).
python_install() {
    [ -x .venv/bin/python ] || python3 -m venv .venv
    local stamp=.venv/librate-installed fingerprint
    fingerprint=$(find bindings/python/librate bindings/python/setup.py bindings/python/pyproject.toml \
        "${CARGO_TARGET_DIR:-target}/release/librate.so" -type f ! -name '*.pyc' -print0 |
        sort -z | xargs -0 sha256sum | sha256sum)
    if $quick && [ "$(cat "$stamp" 2>/dev/null)" = "$fingerprint" ]; then
        echo "the installed package is current"
        return
    fi
    rm -f "$stamp"
    .venv/bin/pip install -q --upgrade './bindings/python[test]'
    echo "$fingerprint" >"$stamp"
}

python_tests() {
    python_install
    if $quick; then
        .venv/bin/python -m pytest -q bindings/python/tests --ignore-glob='*/test_redis*.py'
    else
        .venv/bin/python -m pytest -q bindings/python/tests
    fi
}

# The Go modules, each with its own go.mod: the binding (the standard library only), its
# Redis client, its Prometheus collector, the benchmarks against its peers, the example
# service, the framework examples (net/http, chi, gin, echo) and the /metrics example.
go_binding_modules="bindings/go bindings/go/redis bindings/go/prometheus bindings/go/peers"
go_example_modules="examples/go examples/go/frameworks examples/go/metrics"

go_tests() {
    for module in $go_binding_modules; do
        (
            cd "$module"
            go vet ./...
            go_test -race -count=1 ./...
            GOGC=1 GODEBUG=cgocheck=1 go_test -short -count=1 -tags debug ./...
            go_test -count=1 -tags librate_dynamic ./...
        )
    done
}

go_quick() {
    # Every module but the Redis client's, the examples included.
    for module in bindings/go bindings/go/prometheus bindings/go/peers $go_example_modules; do
        (cd "$module" && go_test -count=1 ./...)
    done
}

go_example() {
    for module in $go_example_modules; do
        (cd "$module" && go vet ./... && go_test -count=1 ./...)
    done
}

# The release artifacts for x86_64 (scripts/dist.sh: wheel, sdist, C tarball), installed
# and run as a user would, without cargo (scripts/dist-check.sh). The aarch64 ones are a
# release check of their own (docs/install.md).
dist() {
    local out=$root/target/dist/out
    DIST_TARGETS=x86_64-unknown-linux-gnu scripts/dist.sh "$out" && scripts/dist-check.sh "$out"
}

# ---- the run ----------------------------------------------------------------------------

redis_server=${REDIS_SERVER:-redis-server}
have_redis=true
no_redis="$redis_server is not installed (apt-get install redis-server, or set REDIS_SERVER)"
if ! $quick && ! command -v "$redis_server" >/dev/null; then
    have_redis=false
    if [ -n "${CI:-}" ]; then
        failed_check "Redis: a redis-server for the Redis tier's tests" \
            "$no_redis, and CI must run the Redis tests (they run and fail below)"
        notes+=("FAILED: $no_redis, and CI (CI=$CI) must run the Redis tier's tests")
    else
        notes+=("SKIPPED: the Redis tier's tests (Rust: built, not run; Python, Go: skipped): $no_redis; under CI=true they fail")
        printf '\n!!! %s\n' "${notes[-1]}"
    fi
fi

step "Docs: links, snippets, no internal notes, the performance page is the script's" docs
step "Rust: build the release library the bindings link" cargo build --release
if $quick; then
    step "Rust: unit, integration and example tests (in process)" rust_quick
    step "Python: the tests that need no Redis" python_tests
    step "Go: the tests that need no Redis, the example service" go_quick
    notes+=("Left out of --quick: doc tests, the C/C++ toolchain tests, the Redis tier, fuzzing, loom, valgrind and sanitizers, Go -race/GC stress/dynamic link, the API reference's build; scripts/test.sh runs them all.")
else
    step "Rust: unit, integration, example and doc tests, C and C++ via cargo" rust_tests
    step "Rust: live changes keep memory bounded (a table changed 1,000 times, optimized)" \
        cargo test --release -p librate --test live_memory
    if $have_redis || [ -n "${CI:-}" ]; then
        step "Rust: the Redis tier (blocking and async, one server and a Cluster)" rust_redis
    else
        ok_as=skipped step "Rust: the Redis tier (built, not run: no redis-server)" rust_redis --no-run
    fi
    step "Rust: the blocking Redis tier builds without the async one" cargo build --quiet --features redis
    step "Fuzz: each libFuzzer target over its corpus, then 12 s of mutations" scripts/fuzz.sh smoke
    step "Rust: loom models" loom
    step "C: every C test under valgrind memcheck and ASan/UBSan" scripts/c-tests.sh
    step "Python: install the package into .venv (it bundles librate.so), pytest" python_tests
    step "Reference: cargo doc -D warnings, every crate denying missing docs" \
        scripts/check-reference.sh
    step "Go: vet, race tests, GC stress with a GC before every C call, dynamic link" go_tests
    step "Go: the example service (examples/go) over HTTP on 127.0.0.1, the framework examples" go_example
    step "Dist: the x86_64 wheel, sdist and C tarball, installed and run as a user would" dist
fi

summary
[ "$failed_steps" -eq 0 ]
