#!/usr/bin/env bash
# The API reference's checks: every public item of every language documented, and the
# Rust docs building without a warning.
#
#   Rust    each crate root (the library, each benchmark, the fuzz library and targets)
#           says #![deny(missing_docs)]; `cargo doc --no-deps` with RUSTDOCFLAGS="-D
#           warnings" builds clean with default features (what `cargo doc --open`
#           shows), with every feature, with private items (the contributors' reference),
#           and for the fuzz library.
#   Go      TestDocComments (bindings/go/doc_test.go): every exported identifier of the
#           packages under bindings/go and examples/go has a doc comment. Runs after
#           `cargo build --release`, since the Go package links target/release/librate.a.
#   Python  tests/test_docstrings.py: every public name of the librate package has a
#           docstring. Runs on the package in the tree (PYTHONPATH=bindings/python, its
#           library from target/release), with $PYTHON, else .venv/bin/python, else
#           python3; that interpreter needs pytest (and redis-py, or librate.redis is
#           skipped, which the run reports).
#
# Usage: scripts/check-reference.sh. Set LIBRATE_SKIP_FUZZ_DOC=1 to leave out the fuzz
# library's docs, whose first build compiles libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "Rust: every crate root denies missing docs"
roots=(src/lib.rs)
roots+=($(sed -n 's/^path = "\(.*\)"$/benches\/\1/p' benches/Cargo.toml))
roots+=(fuzz/src/lib.rs $(sed -n 's/^path = "\(.*\)"$/fuzz\/\1/p' fuzz/Cargo.toml))
missing=0
for root in "${roots[@]}"; do
    if ! grep -qx '#!\[deny(missing_docs)\]' "$root"; then
        echo "$root: no #![deny(missing_docs)]"
        missing=1
    fi
done
[ "$missing" = 0 ] || exit 1
echo "${#roots[@]} crate roots"

step "Rust: cargo doc with RUSTDOCFLAGS=\"-D warnings\""
export RUSTDOCFLAGS="-D warnings"
all_features=(--all-features)
cargo doc --no-deps --quiet
cargo doc --no-deps --quiet "${all_features[@]}"
cargo doc --no-deps --quiet "${all_features[@]}" --document-private-items
if [ "${LIBRATE_SKIP_FUZZ_DOC:-0}" != 1 ]; then
    (cd fuzz && CARGO_TARGET_DIR=../target/fuzz cargo doc --no-deps --quiet --locked --lib)
fi
unset RUSTDOCFLAGS
echo "clean"

step "Go: every exported identifier has a doc comment"
cargo build --release --quiet
(cd bindings/go && go vet ./... && go test -count=1 -run '^TestDocComments$' .)

step "Python: every public name has a docstring"
python=${PYTHON:-}
if [ -z "$python" ]; then
    if [ -x .venv/bin/python ]; then python=.venv/bin/python; else python=python3; fi
fi
# --noconftest: the suite's fixtures need uvicorn and redis-server, this test neither.
PYTHONPATH=bindings/python "$python" -m pytest -q -rs --noconftest -p no:cacheprovider \
    bindings/python/tests/test_docstrings.py
