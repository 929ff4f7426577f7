//! Drives the C compiler: `include/rate.h` must compile on its own as C99 and as C++11,
//! and every `tests/c/test_*.c` and `examples/c/*.c` must compile against it with
//! `-Wall -Wextra -Wpedantic -Werror`, link to the `librate.so` cargo built for this very
//! test run (debug for `cargo test`, release for `cargo test --release`), and exit 0.
//!
//! `CC` and `CXX` choose the compilers (default `cc` and `c++`). Build products go to
//! `$CARGO_TARGET_TMPDIR/c_api-<profile>/`. scripts/c-tests.sh runs the same programs under
//! valgrind and the sanitizers.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// Flags every C program of the suite is built with (besides include and link flags).
const C_FLAGS: &[&str] = &[
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Werror",
    "-pthread",
    "-g",
];

/// Hang protection, not a speed check: a deadlocked program fails the test instead of
/// stalling `cargo test` forever. Every program of the suite finishes in well under a
/// second; this is hundreds of times that.
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// A compiler from the environment (`CC`, `CXX`), split on white space so that values
/// such as `ccache gcc` work, or the default.
fn compiler(variable: &str, default: &str) -> Command {
    let value = std::env::var(variable).unwrap_or_default();
    let mut words = value.split_whitespace();
    let mut command = Command::new(words.next().unwrap_or(default));
    command.args(words);
    command
}

/// The directory cargo put this run's `librate.so` in: the test binary lives in
/// `<target>/<profile>/deps/`, the library in `<target>/<profile>/`.
fn cargo_lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let deps = exe.parent().expect("the test binary is in deps/");
    let profile_dir = deps.parent().expect("deps/ is in the profile directory");
    assert!(
        profile_dir.join("librate.so").is_file(),
        "no librate.so next to {}: cargo builds the cdylib for integration tests",
        deps.display()
    );
    profile_dir.to_path_buf()
}

/// Where this profile's build products go, with a `lib/` holding `librate.so` and
/// `librate.so.0` as links to cargo's library. The second name is the soname the linker
/// records in each program (build.rs sets it), which cargo itself does not create.
fn work_dir() -> (PathBuf, PathBuf) {
    let lib = cargo_lib_dir();
    let profile = lib.file_name().expect("a profile name").to_string_lossy();
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("c_api-{profile}"));
    let link_dir = work.join("lib");
    fs::create_dir_all(&link_dir).expect("the target tmpdir is writable");
    for name in ["librate.so", "librate.so.0"] {
        let link = link_dir.join(name);
        // Another test of this binary may be making the same link at the same time: the
        // rename is atomic, and either link is right.
        let staging = link_dir.join(format!(".{name}.{:?}", std::thread::current().id()));
        let _ = fs::remove_file(&staging);
        std::os::unix::fs::symlink(lib.join("librate.so"), &staging).expect("can make links");
        fs::rename(&staging, &link).expect("can place links");
    }
    (work, link_dir)
}

/// Sorted `*.c` files in `dir` whose name starts with `prefix`.
fn c_sources(dir: &str, prefix: &str) -> Vec<PathBuf> {
    let dir = Path::new(MANIFEST_DIR).join(dir);
    let mut sources: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(".c")
        })
        .collect();
    sources.sort();
    sources
}

/// Runs a command to completion (killing it after `RUN_LIMIT`), returning whether it
/// succeeded and everything it printed. Output goes through files so a chatty program
/// cannot block on a full pipe while we wait.
fn run(mut command: Command, log: &Path) -> (bool, String) {
    let stdout = fs::File::create(log).expect("can create the log");
    let stderr = stdout.try_clone().expect("can share the log");
    let mut child = command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {command:?}: {error}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("can wait for the child") {
            break Some(status);
        }
        if started.elapsed() > RUN_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut output = fs::read_to_string(log).unwrap_or_default();
    match status {
        Some(status) if status.success() => (true, output),
        Some(status) => {
            output.push_str(&format!("\n[{status}]"));
            (false, output)
        }
        None => {
            output.push_str(&format!("\n[killed after {RUN_LIMIT:?}: hung?]"));
            (false, output)
        }
    }
}

/// Compiles each source into its own program, runs it, and fails with every failing
/// program's compiler or run output.
fn build_and_run_all(sources: &[PathBuf]) {
    let (work, link_dir) = work_dir();
    let include = Path::new(MANIFEST_DIR).join("include");
    let mut failures = Vec::new();
    for source in sources {
        let stem = source.file_stem().expect("a file name").to_string_lossy();
        let program = work.join(&*stem);
        let mut cc = compiler("CC", "cc");
        cc.args(C_FLAGS)
            .arg(format!("-I{}", include.display()))
            .arg(format!(
                "-DRATE_EXPECTED_VERSION=\"{}\"",
                env!("CARGO_PKG_VERSION")
            ))
            .arg(source)
            .arg("-o")
            .arg(&program)
            .arg(format!("-L{}", link_dir.display()))
            .arg("-lrate")
            .arg(format!("-Wl,-rpath,{}", link_dir.display()));
        let (compiled, output) = run(cc, &work.join(format!("{stem}.cc.log")));
        if !compiled {
            failures.push(format!("{} does not compile:\n{output}", source.display()));
            continue;
        }
        let (passed, output) = run(
            Command::new(&program),
            &work.join(format!("{stem}.run.log")),
        );
        println!("{}:\n{output}", source.display());
        if !passed {
            failures.push(format!("{} failed:\n{output}", source.display()));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
}

#[test]
fn c_tests_pass() {
    let sources = c_sources("tests/c", "test_");
    assert!(
        sources.iter().any(|path| path.ends_with("test_limiter.c")),
        "tests/c/test_limiter.c is missing: {sources:?}"
    );
    build_and_run_all(&sources);
}

#[test]
fn c_examples_pass() {
    let sources = c_sources("examples/c", "");
    assert!(
        sources.iter().any(|path| path.ends_with("quickstart.c")),
        "examples/c/quickstart.c is missing: {sources:?}"
    );
    build_and_run_all(&sources);
}

/// Compiles `include/rate.h` alone (`-fsyntax-only`) with the given compiler and flags.
fn header_compiles(mut compiler: Command, flags: &[&str], log_name: &str) {
    let (work, _) = work_dir();
    compiler
        .args(flags)
        .arg(Path::new(MANIFEST_DIR).join("include/rate.h"));
    let (compiled, output) = run(compiler, &work.join(log_name));
    assert!(compiled, "include/rate.h does not compile:\n{output}");
}

#[test]
fn header_compiles_as_c99() {
    header_compiles(
        compiler("CC", "cc"),
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
        "header-c99.log",
    );
}

#[test]
fn header_compiles_as_cpp11() {
    header_compiles(
        compiler("CXX", "c++"),
        &[
            "-std=c++11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-fsyntax-only",
            "-x",
            "c++",
        ],
        "header-cpp11.log",
    );
}
