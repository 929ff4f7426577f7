//! The committed `include/rate.h` must be exactly what cbindgen generates from ffi/src.
//!
//! build.rs writes a fresh header to `$OUT_DIR/rate.h` on every build and, outside CI,
//! refreshes `include/rate.h` too; under `CI` it leaves the committed file alone, so a
//! stale header fails here (and `git diff --exit-code include/rate.h` fails in .ci/run).

#[test]
fn committed_header_matches_a_fresh_generation() {
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../include/rate.h"))
            .expect("include/rate.h is committed");
    let fresh = std::fs::read_to_string(env!("RATE_GENERATED_HEADER"))
        .expect("build.rs generated a header");
    assert!(
        committed == fresh,
        "include/rate.h is stale: build outside CI (which regenerates it) and commit it"
    );
}

#[test]
fn header_declares_every_function_of_the_contract() {
    let header =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../include/rate.h")).unwrap();
    // The names every binding relies on (docs/c.md).
    for name in [
        "rate_limiter_new(",
        "rate_limiter_free(",
        "rate_limiter_acquire(",
        "rate_limiter_acquire_at(",
        "rate_limiter_reserve_at(",
        "rate_now_ns(",
        "rate_status_str(",
        "rate_version(",
    ] {
        assert!(header.contains(name), "rate.h lacks {name}");
    }
}
