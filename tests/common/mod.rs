//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)] // each test crate uses a different subset

use std::time::Duration;

pub mod exact;
pub mod key_is_hash;
#[cfg(loom)]
pub mod loom_keys;
pub mod models;
pub mod peer_vectors;
mod refused;
// Each test crate takes what it needs of this shared module.
#[allow(unused_imports)]
pub use refused::{refused, Refused};
#[cfg(not(loom))]
pub mod processes;

/// Asserts that opening the file at `path` was refused as not this table, naming it.
#[track_caller]
pub fn assert_incompatible(error: librate::OpenError, path: &std::path::Path) {
    match error {
        librate::OpenError::Incompatible { path: named } => assert_eq!(named, path),
        other => panic!("not Incompatible: {other:?}"),
    }
}

/// Asserts that the operating system refused the file at `path` with `errno`, and that
/// the error names the path.
#[track_caller]
pub fn assert_os_error(error: librate::OpenError, path: &std::path::Path, errno: i32) {
    match error {
        librate::OpenError::Io(error) => {
            assert_eq!((error.path(), error.raw_os_error()), (path, Some(errno)));
            assert!(
                error.to_string().contains(&*path.to_string_lossy()),
                "{error}"
            );
        }
        other => panic!("not an OS error: {other:?}"),
    }
}

/// SplitMix64: a tiny deterministic PRNG, so every property test is reproducible from its
/// seed without a dependency.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..bound` (bound > 0); the slight modulo bias is irrelevant here.
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// Uniform in `low..=high`.
    pub fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

pub const MS: u64 = 1_000_000;
pub const SECOND: u64 = 1_000_000_000;

/// The instant `ns` nanoseconds into a test's timeline: the time an `_at` call takes.
pub fn at(ns: u64) -> librate::Instant {
    librate::Instant::from_nanos(ns)
}

/// A random rule of any algorithm, for policies: small limits, so sequences reach them,
/// and periods of every shape the Redis window scripts treat apart (whole seconds,
/// divisors of a second, and neither).
pub fn random_rule(rng: &mut Rng) -> librate::Config {
    let limit = rng.range(1, 6);
    let period = [
        100 * MS,
        SECOND,
        7 * SECOND,
        60 * SECOND,
        1_234_567_891,
        rng.range(MS, 3 * SECOND),
    ][rng.below(6) as usize];
    match rng.below(4) {
        0 => librate::Config::gcra(limit, Duration::from_nanos(period)).with_burst(rng.range(1, 6)),
        1 => librate::Config::fixed_window(limit, Duration::from_nanos(period)),
        2 => librate::Config::sliding_window(limit, Duration::from_nanos(period)),
        _ => librate::Config::sliding_log(limit, Duration::from_nanos(period)),
    }
}

/// A decision with these fields and no wait: every decision but a reserve's.
pub fn decision(
    allowed: bool,
    limit: u64,
    remaining: u64,
    retry: u64,
    reset: u64,
) -> librate::Decision {
    librate::Decision {
        allowed,
        limit,
        remaining,
        retry_after_ns: retry,
        reset_after_ns: reset,
        wait_ns: 0,
    }
}
