//! Drives the C compiler: `include/rate.h` must compile on its own as C99 and as C++11,
//! and every `tests/c/test_*.c` and `examples/c/*.c` must compile against it with
//! `-Wall -Wextra -Wpedantic -Werror`, link to the `librate.so` cargo built for this very
//! test run (debug for `cargo test`, release for `cargo test --release`), and exit 0.
//!
//! `CC` and `CXX` choose the compilers (default `cc` and `c++`); tests/native/mod.rs drives
//! them. Build products go to `$CARGO_TARGET_TMPDIR/c_api-<profile>/`. scripts/c-tests.sh
//! runs the same programs under valgrind and the sanitizers.

mod native;

use native::{cc, cxx, header_compiles, sources, Build, STRICT_FLAGS};

/// Compiles each source into its own program with `-std=c99` and `STRICT_FLAGS`, runs it,
/// and fails with every failing program's compiler or run output.
fn build_and_run_all(sources: &[std::path::PathBuf]) {
    let flags: Vec<&str> = ["-std=c99"].iter().chain(STRICT_FLAGS).copied().collect();
    Build {
        suite: "c_api",
        variant: "c99",
        compiler: cc,
        flags: &flags,
        include_dirs: &[],
        run_env: &[],
    }
    .build_and_run_all(sources);
}

#[test]
fn c_tests_pass() {
    let sources = sources("tests/c", "test_", "c");
    assert!(
        sources.iter().any(|path| path.ends_with("test_limiter.c")),
        "tests/c/test_limiter.c is missing: {sources:?}"
    );
    build_and_run_all(&sources);
}

#[test]
fn c_examples_pass() {
    let sources = sources("examples/c", "", "c");
    assert!(
        sources.iter().any(|path| path.ends_with("quickstart.c")),
        "examples/c/quickstart.c is missing: {sources:?}"
    );
    build_and_run_all(&sources);
}

#[test]
fn header_compiles_as_c99() {
    header_compiles(
        cc(),
        &[
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Wpedantic",
            "-Werror",
            "-fsyntax-only",
            "-x",
            "c",
        ],
        "include/rate.h",
        "rate-h-c99.log",
    );
}

#[test]
fn header_compiles_as_cpp11() {
    header_compiles(
        cxx(),
        &[
            "-std=c++11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            "-x",
            "c++",
        ],
        "include/rate.h",
        "rate-h-cpp11.log",
    );
}
