#!/usr/bin/env bash
# Runs every test in every language: Rust (unit, integration, doc, the C tests driven by
# cargo), the loom models, the C tests under valgrind and sanitizers, Python and Go.
# Usage: scripts/test.sh            (from anywhere in the repository)
# Needs: Rust >= 1.77, cc (C99) and c++ (C++17) with libasan/libubsan, binutils, pkg-config,
#        valgrind, redis-server (the Redis tier's tests start their own on 127.0.0.1),
#        python3 >= 3.10 with venv, go >= 1.24. Installs pytest, uvicorn and Flask from PyPI
#        into .venv; the fuzz step fetches libfuzzer-sys from crates.io and builds libFuzzer
#        with the C++ compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "Docs: links stay inside the repository, no internal notes, the plot is the script's"
python3 scripts/check-docs.py
# docs/bench.svg is the plot script's drawing of docs/bench/, never edited by hand.
plot=$(mktemp)
python3 scripts/plot-bench.py --out "$plot" >/dev/null
cmp "$plot" docs/bench.svg || { echo "docs/bench.svg: redraw it with scripts/plot-bench.py"; exit 1; }
rm -f "$plot"

step "Rust: build the release library the bindings link"
cargo build --release

step "Rust: live changes keep memory bounded (a table changed 1,000 times: optimized)"
cargo test --release --test live_memory

step "Rust: unit, integration, doc and C tests (tests/c_api.rs drives the C compiler), the Redis tier (blocking and async) against a redis-server of its own"
cargo test --features testing,redis,redis-async

step "Rust: the blocking Redis tier builds without the async one (the release build above has neither)"
cargo build --quiet --features redis

step "Fuzz: each libFuzzer target over its committed corpus, then 12 s of mutations (a build failure fails here)"
scripts/fuzz.sh smoke

step "Rust: loom models"
RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
    cargo test --release $(for t in tests/loom_*.rs; do printf -- '--test %s ' "$(basename "$t" .rs)"; done)

step "C: every C test under valgrind memcheck and ASan/UBSan"
scripts/c-tests.sh

step "Python: install the package into .venv (it bundles librate.so) and run pytest (examples/python too)"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade './bindings/python[test]'
.venv/bin/python -m pytest -q bindings/python/tests

step "Go: vet, race tests, GC stress with a GC before every C call, dynamic link"
(cd bindings/go \
  && go vet ./... \
  && go test -race -count=1 ./... \
  && GOGC=1 GODEBUG=cgocheck=1 go test -short -count=1 -tags debug ./... \
  && go test -count=1 -tags librate_dynamic ./...)

step "Go: the example service (examples/go), over HTTP on 127.0.0.1"
(cd examples/go && go vet ./... && go test -count=1 ./...)
