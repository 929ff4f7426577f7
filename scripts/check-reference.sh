#!/usr/bin/env bash
# The Rust API reference's checks: every crate denies missing docs, and the docs build
# without a warning.
#
#   Rust    each crate root (the library, each benchmark, the fuzz library and targets)
#           says #![deny(missing_docs)]; `cargo doc --no-deps` with RUSTDOCFLAGS="-D
#           warnings" builds clean with default features (what `cargo doc --open`
#           shows), with every feature, with private items (the contributors' reference),
#           and for the fuzz library.
#   Go, Python  TestDocComments (bindings/go/doc_test.go) and tests/test_docstrings.py
#           check that every exported Go identifier and public Python name is documented;
#           they are part of the Go and Python suites, which scripts/test.sh runs (--quick
#           too), so they are not run again here.
#
# Usage: scripts/check-reference.sh. Set LIBRATE_SKIP_FUZZ_DOC=1 to leave out the fuzz
# library's docs, whose first build compiles libFuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s\n' "$*"; }

step "Rust: every crate root denies missing docs"
roots=(src/lib.rs ffi/src/lib.rs)
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
