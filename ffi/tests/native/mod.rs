//! Drives the native toolchain for the tests that build C and C++ programs against the
//! `librate.so` cargo built for this very test run (debug for `cargo test`, release for
//! `cargo test --release`): tests/c_api.rs, tests/cpp_api.rs and tests/install.rs.
//!
//! `CC` and `CXX` choose the compilers (default `cc` and `c++`); their values are split on
//! white space, so `ccache gcc` works. Build products and logs go to
//! `$CARGO_TARGET_TMPDIR/<suite>-<profile>/`.

#![allow(dead_code, unreachable_pub)] // each test crate uses a different subset

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository, which every relative path of the suites starts from.
pub const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// Warnings as errors, threads and debug info, for every C and C++ program of the suites
/// (after a `-std=` flag).
pub const STRICT_FLAGS: &[&str] = &[
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Werror",
    "-pthread",
    "-g",
];

/// Hang protection, not a speed check: a deadlocked program fails the test instead of
/// stalling `cargo test` forever. Every program of the suites finishes in well under a
/// second (the examples in a few hundred milliseconds); this is hundreds of times that.
pub const RUN_LIMIT: Duration = Duration::from_secs(300);

/// A compiler from the environment (`CC`, `CXX`), split on white space, or the default.
pub fn compiler(variable: &str, default: &str) -> Command {
    let value = std::env::var(variable).unwrap_or_default();
    let mut words = value.split_whitespace();
    let mut command = Command::new(words.next().unwrap_or(default));
    command.args(words);
    command
}

/// The C compiler (`CC`, default `cc`).
pub fn cc() -> Command {
    compiler("CC", "cc")
}

/// The C++ compiler (`CXX`, default `c++`).
pub fn cxx() -> Command {
    compiler("CXX", "c++")
}

/// The directory holding the `librate.so` cargo built for this run. The test binary lives
/// in `<target>/<profile>/deps/`, where cargo writes the library too; cargo copies it up to
/// `<target>/<profile>/` only when the library itself is a target of the command (a plain
/// `cargo test`, not `cargo test --test cpp_api`), so `deps/` is the one always current.
pub fn cargo_lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test knows its own path");
    let deps = exe.parent().expect("the test binary is in deps/");
    assert!(
        deps.join("librate.so").is_file(),
        "no librate.so in {}: cargo builds the cdylib for integration tests",
        deps.display()
    );
    deps.to_path_buf()
}

/// This suite's directory for build products, and in it a `lib/` holding `librate.so` and
/// `librate.so.0` as links to cargo's library. The second name is the soname the linker
/// records in each program (build.rs sets it).
pub fn work_dir(suite: &str) -> (PathBuf, PathBuf) {
    let lib = cargo_lib_dir();
    let profile_dir = lib.parent().expect("deps/ is in the profile directory");
    let profile = profile_dir
        .file_name()
        .expect("a profile name")
        .to_string_lossy();
    let work = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{suite}-{profile}"));
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

/// Sorted files in `dir` (relative to the manifest) named `<prefix>*.<extension>`.
pub fn sources(dir: &str, prefix: &str, extension: &str) -> Vec<PathBuf> {
    let dir = Path::new(ROOT).join(dir);
    let suffix = format!(".{extension}");
    let mut sources: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(prefix) && name.ends_with(&suffix)
        })
        .collect();
    sources.sort();
    sources
}

/// Runs a command to completion (killing it after `RUN_LIMIT`), returning whether it
/// succeeded and everything it printed. Output goes through files so a chatty program
/// cannot block on a full pipe while we wait.
pub fn run(mut command: Command, log: &Path) -> (bool, String) {
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

/// Runs a command that must succeed, panicking with its output otherwise.
pub fn run_ok(command: Command, log: &Path) -> String {
    let shown = format!("{command:?}");
    let (succeeded, output) = run(command, log);
    assert!(succeeded, "{shown} failed:\n{output}");
    output
}

/// One way of building a set of programs against this run's `librate.so`.
pub struct Build<'a> {
    /// Names the work directory (see `work_dir`).
    pub suite: &'a str,
    /// Tells this build's programs and logs apart from another build's of the same source.
    pub variant: &'a str,
    /// `cc` or `cxx`.
    pub compiler: fn() -> Command,
    /// Language, warning, sanitizer flags…; include and link flags are added.
    pub flags: &'a [&'a str],
    /// Include directories besides `include/`, relative to the manifest.
    pub include_dirs: &'a [&'a str],
    /// Environment for running the programs (sanitizer options).
    pub run_env: &'a [(&'a str, &'a str)],
}

impl Build<'_> {
    /// Compiles each source into its own program and runs it; fails with every failing
    /// program's compiler or run output. Programs get `RATE_EXPECTED_VERSION` defined as
    /// Cargo.toml's version.
    pub fn build_and_run_all(&self, sources: &[PathBuf]) {
        let (work, link_dir) = work_dir(self.suite);
        let mut failures = Vec::new();
        for source in sources {
            let stem = source.file_stem().expect("a file name").to_string_lossy();
            let name = format!("{}-{stem}", self.variant);
            let program = work.join(&name);
            let mut compile = (self.compiler)();
            compile.args(self.flags);
            for dir in ["include"].iter().chain(self.include_dirs) {
                compile.arg(format!("-I{}", Path::new(ROOT).join(dir).display()));
            }
            compile
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
            let (compiled, output) = run(compile, &work.join(format!("{name}.cc.log")));
            if !compiled {
                failures.push(format!("{} does not compile:\n{output}", source.display()));
                continue;
            }
            let mut command = Command::new(&program);
            // cargo runs tests with LD_LIBRARY_PATH naming <profile>/, whose librate.so.0
            // may be an older build than deps/ (cargo test does not refresh it), and
            // LD_LIBRARY_PATH outranks the program's RUNPATH: point it at this run's library.
            command.env("LD_LIBRARY_PATH", &link_dir);
            command.envs(self.run_env.iter().copied());
            let (passed, output) = run(command, &work.join(format!("{name}.run.log")));
            println!("{} ({}):\n{output}", source.display(), self.variant);
            if !passed {
                failures.push(format!(
                    "{} ({}) failed:\n{output}",
                    source.display(),
                    self.variant
                ));
            }
        }
        assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
    }
}

/// Compiles one header alone (`-fsyntax-only`), failing with the compiler's output.
pub fn header_compiles(mut compiler: Command, flags: &[&str], header: &str, log_name: &str) {
    let (work, _) = work_dir("headers");
    compiler.args(flags).arg(Path::new(ROOT).join(header));
    let (compiled, output) = run(compiler, &work.join(log_name));
    assert!(
        compiled,
        "{header} does not compile with {flags:?}:\n{output}"
    );
}
