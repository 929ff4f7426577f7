//! Drives the C++ compiler over `include/rate.hpp`: the header must compile on its own as
//! C++17 and C++20, with and without exceptions, and every `tests/cpp/test_*.cpp` and
//! `examples/cpp/*.cpp` must compile against it with `-Wall -Wextra -Wpedantic -Werror`,
//! link to the `librate.so` cargo built for this test run, and exit 0: built plainly,
//! with `-fno-exceptions`, and with AddressSanitizer + UndefinedBehaviorSanitizer.
//!
//! `CXX` chooses the compiler (default `c++`). A toolchain without the sanitizer runtimes
//! fails `cpp_programs_pass_under_sanitizers`; set `RATE_NO_SANITIZERS=1` to skip that one
//! test knowingly.

mod native;

use native::{cxx, header_compiles, run, sources, work_dir, Build, STRICT_FLAGS};
use std::path::PathBuf;

const SANITIZE_FLAGS: &[&str] = &[
    "-fsanitize=address,undefined",
    "-fno-omit-frame-pointer",
    "-fno-sanitize-recover=all",
];

/// Sanitizer options for the programs: stop at the first report, and check for leaks
/// (a handle a wrapper forgot to free is one).
const SANITIZE_ENV: &[(&str, &str)] = &[
    (
        "ASAN_OPTIONS",
        "detect_leaks=1:halt_on_error=1:abort_on_error=0",
    ),
    ("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1"),
];

/// The C++ tests and examples: every `tests/cpp/test_*.cpp`, every `examples/cpp/*.cpp`.
fn all_sources() -> Vec<PathBuf> {
    let tests = sources("tests/cpp", "test_", "cpp");
    let examples = sources("examples/cpp", "", "cpp");
    for (found, expected) in [(&tests, "test_rate_hpp.cpp"), (&examples, "quickstart.cpp")] {
        assert!(
            found.iter().any(|path| path.ends_with(expected)),
            "{expected} is missing: {found:?}"
        );
    }
    tests.into_iter().chain(examples).collect()
}

/// The C++ standard every C++ program is built with (besides `STRICT_FLAGS`).
const CXX_STD: &str = "-std=c++17";

/// Builds and runs every C++ program with `-std=c++17`, `STRICT_FLAGS` and `extra` flags.
fn build_and_run_all(variant: &str, extra: &[&str], run_env: &[(&str, &str)]) {
    let flags: Vec<&str> = [CXX_STD]
        .iter()
        .chain(STRICT_FLAGS)
        .chain(extra)
        .copied()
        .collect();
    Build {
        suite: "cpp_api",
        variant,
        compiler: cxx,
        flags: &flags,
        include_dirs: &["tests/c", "tests/cpp"],
        run_env,
    }
    .build_and_run_all(&all_sources());
}

#[test]
fn cpp_programs_pass() {
    build_and_run_all("cxx17", &[], &[]);
}

#[test]
fn cpp_programs_pass_without_exceptions() {
    build_and_run_all("noexcept", &["-fno-exceptions"], &[]);
}

/// Proves the sanitizers are linked and catch a planted bug, so that a clean run of the
/// real programs means something.
fn sanitizers_catch_a_planted_bug() {
    let (work, _) = work_dir("cpp_api");
    let canary = work.join("asan_canary.cpp");
    std::fs::write(
        &canary,
        "#include <vector>\n\
         int main(int argc, char **) { std::vector<char> v(8); \
         volatile char c = v.data()[8 + argc - 1]; (void)c; return 0; }\n",
    )
    .expect("can write the canary");
    let program = work.join("asan_canary");
    let mut compile = cxx();
    compile
        .arg(CXX_STD)
        .args(STRICT_FLAGS)
        .args(SANITIZE_FLAGS)
        .arg(&canary)
        .arg("-o")
        .arg(&program);
    let (compiled, output) = run(compile, &work.join("asan_canary.cc.log"));
    assert!(
        compiled,
        "the C++ compiler cannot build with {SANITIZE_FLAGS:?} (set RATE_NO_SANITIZERS=1 to \
         skip the sanitizer run on such a toolchain):\n{output}"
    );
    let mut command = std::process::Command::new(&program);
    command.envs(SANITIZE_ENV.iter().copied());
    let (passed, output) = run(command, &work.join("asan_canary.run.log"));
    assert!(
        !passed && output.contains("heap-buffer-overflow"),
        "AddressSanitizer did not report a planted overflow:\n{output}"
    );
}

#[test]
fn cpp_programs_pass_under_sanitizers() {
    if std::env::var_os("RATE_NO_SANITIZERS").is_some() {
        println!("RATE_NO_SANITIZERS is set: sanitizer run skipped");
        return;
    }
    sanitizers_catch_a_planted_bug();
    build_and_run_all("asan", SANITIZE_FLAGS, SANITIZE_ENV);
}

#[test]
fn header_compiles_alone() {
    for (std, extra, log) in [
        ("-std=c++17", None, "rate-hpp-cpp17.log"),
        ("-std=c++20", None, "rate-hpp-cpp20.log"),
        (
            "-std=c++17",
            Some("-fno-exceptions"),
            "rate-hpp-noexcept.log",
        ),
    ] {
        let mut flags = vec![std, "-Wall", "-Wextra", "-Wpedantic", "-Werror"];
        flags.extend(extra);
        flags.extend(["-fsyntax-only", "-x", "c++"]);
        header_compiles(cxx(), &flags, "include/rate.hpp", log);
    }
}
