//! Build script: gives `librate.so` its soname and generates `include/rate.h`.
//!
//! The header is generated into `$OUT_DIR/rate.h` on every build. When the committed
//! `include/rate.h` differs, a developer build (no `CI` variable) rewrites it and warns, so
//! the change shows up in `git status`; a CI build leaves it alone, so `ffi/tests/header.rs`
//! (which compares the two) and `git diff --exit-code include/rate.h` fail on drift.

use std::{env, fs, path::PathBuf};

/// ABI major version: bump when a change breaks existing C callers.
const SONAME: &str = "librate.so.0";

fn main() {
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=CI");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{SONAME}");
        link_soname_in_profile_dir();
    }

    let crate_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let generated = PathBuf::from(env::var("OUT_DIR").expect("set by cargo")).join("rate.h");
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("cbindgen.toml is valid");
    // Parse only this crate (cbindgen follows its `mod` items): the core knows nothing of
    // C, so it has nothing to export.
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(crate_dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen can parse src/")
        .write_to_file(&generated);
    println!(
        "cargo:rustc-env=RATE_GENERATED_HEADER={}",
        generated.display()
    );

    // The header lives at the repository's top, where C programs, the bindings and an
    // installation look for it.
    let committed = crate_dir.join("../include/rate.h");
    let fresh = fs::read(&generated).expect("header was just written");
    if fs::read(&committed).ok().as_deref() != Some(&fresh[..]) {
        if env::var_os("CI").is_some() {
            println!("cargo:warning=include/rate.h is stale; run a build outside CI and commit it");
        } else {
            fs::write(&committed, &fresh).expect("include/ is writable");
            println!("cargo:warning=include/rate.h regenerated; commit it");
        }
    }
}

/// A program linked with `-lrate` records the soname, not the file name, so an in-tree build
/// needs `librate.so.0` beside the `librate.so` cargo is about to write. OUT_DIR is
/// `<target>/<profile>/build/librate-<hash>/out`, so the profile directory is three levels
/// up. The link is relative and may dangle until the library is linked. `scripts/install.sh`
/// makes the proper versioned file and links for an installation.
fn link_soname_in_profile_dir() {
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("set by cargo"));
    let Some(profile_dir) = out_dir.ancestors().nth(3) else {
        return;
    };
    let link = profile_dir.join(SONAME);
    if fs::symlink_metadata(&link).is_err() {
        // Best effort: without the link only in-tree `-lrate` programs fail to start.
        let _ = std::os::unix::fs::symlink("librate.so", &link);
    }
}
