//! `scripts/install.sh` as a C or C++ user meets it: it installs into a temporary prefix,
//! and programs are then built with nothing but `pkg-config`'s flags, shared and static.
//! The installed shared object is checked for symbol hygiene: it exports only `rate_*`
//! symbols, exactly the functions `include/rate.h` declares; its soname carries Cargo.toml's
//! major version; and `rate_version()` is Cargo.toml's version.
//!
//! install.sh runs `cargo build --release` (a no-op when the release library is current, as
//! in scripts/test.sh, which builds it first) and asks cargo for rustc's native-static-libs.
//! Needs `pkg-config`, `readelf` and `nm` (binutils).

mod native;

use native::{cc, cxx, run_ok, work_dir, ROOT};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const MAJOR: &str = env!("CARGO_PKG_VERSION_MAJOR");

/// Where this test binary installs librate, and its work directory.
struct Install {
    work: PathBuf,
    prefix: PathBuf,
}

impl Install {
    fn lib(&self) -> PathBuf {
        self.prefix.join("lib")
    }
    fn shared_object(&self) -> PathBuf {
        self.lib().join(format!("librate.so.{VERSION}"))
    }
}

/// Runs scripts/install.sh [flags…] [prefix] with `env`, failing with its output.
fn install_sh(work: &Path, flags: &[&str], prefix: &Path, env: &[(&str, &Path)], log: &str) {
    let mut command = Command::new(Path::new(ROOT).join("scripts/install.sh"));
    command.args(flags).arg(prefix).envs(env.iter().copied());
    run_ok(command, &work.join(log));
}

/// Installs once per test binary into a fresh `<work>/prefix`.
fn installed() -> &'static Install {
    static INSTALL: OnceLock<Install> = OnceLock::new();
    INSTALL.get_or_init(|| {
        let (work, _) = work_dir("install");
        let prefix = work.join("prefix");
        let _ = fs::remove_dir_all(&prefix);
        install_sh(&work, &[], &prefix, &[], "install.log");
        Install { work, prefix }
    })
}

/// `pkg-config` (or `$PKG_CONFIG`) looking only at the installed librate.pc.
fn pkg_config(args: &[&str]) -> Vec<String> {
    let install = installed();
    pkg_config_in(&install.lib(), "librate", args)
}

/// `pkg-config ARGS MODULE` looking only at `lib/pkgconfig`.
fn pkg_config_in(lib: &Path, module: &str, args: &[&str]) -> Vec<String> {
    let mut command = Command::new(std::env::var("PKG_CONFIG").unwrap_or("pkg-config".into()));
    command
        .args(args)
        .arg(module)
        .env("PKG_CONFIG_PATH", lib.join("pkgconfig"))
        .env_remove("PKG_CONFIG_LIBDIR")
        .env_remove("PKG_CONFIG_SYSROOT_DIR");
    let name: String = args
        .concat()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let log = format!("pkg-config-{module}-{name}.log");
    let output = run_ok(command, &installed().work.join(log));
    output.split_whitespace().map(String::from).collect()
}

fn link_target(path: &Path) -> String {
    fs::read_link(path)
        .unwrap_or_else(|error| panic!("{} is not a link: {error}", path.display()))
        .to_string_lossy()
        .into_owned()
}

/// Builds `source` with `compiler` and then `pkg_flags` (pkg-config's output), into
/// `<work>/<name>`.
fn build(compiler: Command, name: &str, source: &str, pkg_flags: &[String]) -> PathBuf {
    let install = installed();
    let program = install.work.join(name);
    let mut compile = compiler;
    compile
        .args(["-Wall", "-Wextra", "-Werror"])
        .arg(Path::new(ROOT).join(source))
        .arg("-o")
        .arg(&program)
        .args(pkg_flags);
    run_ok(compile, &install.work.join(format!("{name}.cc.log")));
    program
}

/// The shared libraries a program names in its dynamic section (NEEDED).
fn needed(program: &Path) -> Vec<String> {
    let mut readelf = Command::new("readelf");
    readelf.arg("-d").arg(program);
    let name = program.file_name().expect("a file name").to_string_lossy();
    let dynamic = run_ok(
        readelf,
        &installed().work.join(format!("{name}.readelf.log")),
    );
    dynamic
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(|line| Some(line.split('[').nth(1)?.trim_end_matches(']').to_string()))
        .collect()
}

#[test]
fn installs_headers_libraries_links_and_pc_file() {
    let install = installed();
    for header in ["rate.h", "rate.hpp"] {
        let installed_header = fs::read(install.prefix.join("include").join(header)).unwrap();
        let source = fs::read(Path::new(ROOT).join("include").join(header)).unwrap();
        assert!(
            installed_header == source,
            "installed {header} differs from include/{header}"
        );
    }
    let lib = install.lib();
    assert!(install.shared_object().is_file(), "no librate.so.{VERSION}");
    assert!(lib.join("librate.a").is_file(), "no librate.a");
    // The soname link names the versioned file; the dev link names the soname link.
    assert_eq!(
        link_target(&lib.join(format!("librate.so.{MAJOR}"))),
        format!("librate.so.{VERSION}")
    );
    assert_eq!(
        link_target(&lib.join("librate.so")),
        format!("librate.so.{MAJOR}")
    );

    assert_eq!(pkg_config(&["--modversion"]), [VERSION]);
    let include = format!("-I{}", install.prefix.join("include").display());
    assert_eq!(pkg_config(&["--cflags"]), [include]);
    let libdir = format!("-L{}", lib.display());
    assert_eq!(pkg_config(&["--libs"]), [libdir.as_str(), "-lrate"]);
    // --static adds the system libraries rustc reports for a staticlib, after a
    // -Wl,-Bdynamic that lets `-Wl,-Bstatic $(pkg-config --static --libs rate)` work.
    let static_libs = pkg_config(&["--static", "--libs"]);
    assert_eq!(
        static_libs[..3],
        [libdir.as_str(), "-lrate", "-Wl,-Bdynamic"]
    );
    for system_lib in ["-lgcc_s", "-lpthread", "-lm", "-ldl"] {
        assert!(
            static_libs.iter().any(|flag| flag == system_lib),
            "{static_libs:?} lacks {system_lib}"
        );
    }
}

#[test]
fn destdir_stages_the_install_under_a_root() {
    let install = installed();
    let stage = install.work.join("stage");
    let _ = fs::remove_dir_all(&stage);
    let prefix = Path::new("/opt/librate-test");
    install_sh(
        &install.work,
        &[],
        prefix,
        &[("DESTDIR", &stage)],
        "install-destdir.log",
    );
    let root = stage.join("opt/librate-test");
    for file in [
        "include/rate.h",
        "include/rate.hpp",
        "lib/librate.a",
        "lib/pkgconfig/librate.pc",
    ] {
        assert!(root.join(file).is_file(), "DESTDIR install lacks {file}");
    }
    assert!(root.join(format!("lib/librate.so.{VERSION}")).is_file());
    assert_eq!(
        link_target(&root.join("lib/librate.so")),
        format!("librate.so.{MAJOR}")
    );
    // librate.pc names the final prefix, not the staging root.
    let pc = fs::read_to_string(root.join("lib/pkgconfig/librate.pc")).unwrap();
    assert!(
        pc.lines().any(|line| line == "prefix=/opt/librate-test"),
        "librate.pc:\n{pc}"
    );
    assert!(
        !Path::new("/opt/librate-test").exists(),
        "DESTDIR install wrote outside the root"
    );
}

#[test]
fn rate_pc_of_earlier_releases_names_the_same_library() {
    let lib = installed().lib();
    assert_eq!(
        link_target(&lib.join("pkgconfig/rate.pc")),
        "librate.pc",
        "rate.pc is kept as a link to librate.pc"
    );
    for args in [["--modversion"], ["--cflags"], ["--libs"]] {
        assert_eq!(
            pkg_config_in(&lib, "rate", &args),
            pkg_config(&args),
            "{args:?}"
        );
    }
}

#[test]
fn a_relocatable_install_works_wherever_it_is_moved() {
    let install = installed();
    let built = install.work.join("relocatable-built");
    let moved = install.work.join("relocatable-moved");
    for dir in [&built, &moved] {
        let _ = fs::remove_dir_all(dir);
    }
    install_sh(
        &install.work,
        &["--relocatable"],
        &built,
        &[],
        "install-relocatable.log",
    );
    fs::rename(&built, &moved).unwrap();
    // pkg-config reads the prefix from where it found librate.pc: the moved tree.
    let lib = moved.join("lib");
    let pc_dir = lib.join("pkgconfig");
    assert_eq!(
        pkg_config_in(&lib, "librate", &["--cflags"]),
        [format!("-I{}/../../include", pc_dir.display())]
    );
    assert_eq!(
        pkg_config_in(&lib, "librate", &["--libs"]),
        [format!("-L{}/../../lib", pc_dir.display()), "-lrate".into()]
    );
    // And a prefix given on the command line wins.
    let defined = [
        "--define-variable=prefix=/opt/elsewhere",
        "--cflags",
        "--libs",
    ];
    assert_eq!(
        pkg_config_in(&lib, "librate", &defined),
        ["-I/opt/elsewhere/include", "-L/opt/elsewhere/lib", "-lrate"]
    );
}

#[test]
fn c_program_builds_with_pkg_config_alone() {
    let install = installed();
    let program = build(
        cc(),
        "app-shared",
        "tests/install/app.c",
        &pkg_config(&["--cflags", "--libs"]),
    );
    assert!(
        needed(&program).contains(&format!("librate.so.{MAJOR}")),
        "the program does not load librate by its soname"
    );
    let mut command = Command::new(&program);
    command.env("LD_LIBRARY_PATH", install.lib());
    let output = run_ok(command, &install.work.join("app-shared.run.log"));
    // rate_version() is Cargo.toml's version.
    assert_eq!(output, format!("librate {VERSION}\n"));
}

#[test]
fn c_program_links_statically_with_pkg_config_static() {
    let install = installed();
    let mut flags = pkg_config(&["--cflags"]);
    flags.push("-Wl,-Bstatic".into());
    flags.extend(pkg_config(&["--static", "--libs"]));
    let program = build(cc(), "app-static", "tests/install/app.c", &flags);
    let needed = needed(&program);
    assert!(
        !needed.iter().any(|lib| lib.starts_with("librate")),
        "a static build still loads librate: {needed:?}"
    );
    // No LD_LIBRARY_PATH: nothing of librate is loaded at run time.
    let output = run_ok(
        Command::new(&program),
        &install.work.join("app-static.run.log"),
    );
    assert_eq!(output, format!("librate {VERSION}\n"));
}

#[test]
fn cpp_program_builds_with_pkg_config_alone() {
    let install = installed();
    let mut compiler = cxx();
    compiler.arg("-std=c++17");
    let program = build(
        compiler,
        "quickstart-cpp",
        "examples/cpp/quickstart.cpp",
        &pkg_config(&["--cflags", "--libs"]),
    );
    let mut command = Command::new(&program);
    command.env("LD_LIBRARY_PATH", install.lib());
    let output = run_ok(command, &install.work.join("quickstart-cpp.run.log"));
    assert!(
        output.starts_with("request 1: allowed, 4 left\n"),
        "{output}"
    );
}

/// The functions include/rate.h declares: cbindgen starts each declaration at column 0
/// with its return type (`int32_t rate_limiter_new(…`), where comments are indented.
fn declared_functions() -> BTreeSet<String> {
    let header = fs::read_to_string(Path::new(ROOT).join("include/rate.h")).unwrap();
    header
        .lines()
        .filter(|line| line.starts_with(|c: char| c.is_ascii_alphabetic()))
        .filter_map(|line| line.split_once('('))
        .filter_map(|(before, _)| {
            let start = before.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            Some(before[start + 1..].to_string())
        })
        .collect()
}

#[test]
fn shared_object_exports_only_the_declared_rate_functions() {
    let install = installed();
    let mut nm = Command::new("nm");
    nm.args(["-D", "--defined-only"])
        .arg(install.shared_object());
    let listing = run_ok(nm, &install.work.join("nm.log"));
    // Lines are `<address> <type> <name>`.
    let exported: BTreeSet<String> = listing
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2))
        .map(String::from)
        .collect();
    let foreign: Vec<&String> = exported
        .iter()
        .filter(|name| !name.starts_with("rate_"))
        .collect();
    assert!(
        foreign.is_empty(),
        "librate.so exports symbols without the rate_ prefix: {foreign:?}"
    );
    let declared = declared_functions();
    assert!(
        declared.contains("rate_limiter_new"),
        "could not read rate.h: {declared:?}"
    );
    assert_eq!(
        exported, declared,
        "exported symbols differ from rate.h's functions"
    );
}

#[test]
fn soname_carries_the_major_version() {
    let install = installed();
    let mut readelf = Command::new("readelf");
    readelf.arg("-d").arg(install.shared_object());
    let dynamic = run_ok(readelf, &install.work.join("readelf-soname.log"));
    let soname = dynamic
        .lines()
        .find(|line| line.contains("(SONAME)"))
        .and_then(|line| line.split('[').nth(1))
        .map(|rest| rest.trim_end_matches(']'))
        .unwrap_or_else(|| panic!("no SONAME in:\n{dynamic}"));
    assert_eq!(soname, format!("librate.so.{MAJOR}"));
}
