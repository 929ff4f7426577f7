//! loom models of a policy of two rules shared by two threads at a frozen time: what the
//! module documentation of `src/policy.rs` says concurrent callers may observe, and no more.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!       cargo test --release --test loom_policy`
#![cfg(loom)]

use librate::{Config, Policy};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

mod common;

use common::{at, loom_keys::outcomes};

const T: u64 = 100; // emission interval: 1 per 100 ns
const NOW: u64 = 1000;

/// Runs one request of `n` units per entry of `costs`, each on its own thread, against
/// `policy`, and returns whether each was admitted.
fn race(policy: &Arc<Policy>, costs: &[u64]) -> Vec<bool> {
    let handles: Vec<_> = costs
        .iter()
        .map(|&n| {
            let policy = Arc::clone(policy);
            thread::spawn(move || policy.try_acquire_at(n, at(NOW)).unwrap())
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Each rule's remaining units after the race.
fn remaining(policy: &Policy) -> Vec<u64> {
    let state = policy.acquire_at(0, at(NOW)).unwrap();
    state.rules().iter().map(|rule| rule.remaining).collect()
}

/// Burst 2 then burst 1: exactly one request is admitted; the second rule is full; the
/// first holds the admitted unit, plus the denied one's if the admitted one changed the
/// first rule between the denied one's taking and its giving back.
#[test]
fn never_past_a_limit_and_at_most_a_unit_kept() {
    let seen = outcomes(|| {
        let policy = Arc::new(
            Policy::new(&[
                Config::gcra(1, Duration::from_nanos(T)).with_burst(2),
                Config::gcra(1, Duration::from_nanos(T)).with_burst(1),
            ])
            .unwrap(),
        );
        let admitted = race(&policy, &[1, 1]);
        assert_eq!(admitted.iter().filter(|&&a| a).count(), 1);
        let left = remaining(&policy);
        assert!(left == [1, 0] || left == [0, 0], "{left:?}");
        left
    });
    // Both happen: the exact outcome, and the kept unit.
    assert_eq!(seen.len(), 2);
}

/// A request of 2 that the second rule denies holds the first rule's 2 units for a moment:
/// a request of 1 racing it may find the first rule full and be denied, though either
/// order alone would admit it. Nothing is kept either way.
#[test]
fn a_denied_request_can_deny_another_for_a_moment() {
    let seen = outcomes(|| {
        let policy = Arc::new(
            Policy::new(&[
                Config::gcra(1, Duration::from_nanos(T)).with_burst(2),
                Config::fixed_window(2, Duration::from_nanos(10 * T)),
            ])
            .unwrap(),
        );
        // The window holds 1 of 2: a request of 2 is denied by it, one of 1 is not.
        assert!(policy.try_acquire_at(1, at(NOW)).unwrap());
        let first = policy.acquire_at(0, at(NOW)).unwrap();
        // The GCRA rule drains by NOW + T: it is full again when the race runs.
        assert_eq!(first.rules()[0].remaining, 1);
        let admitted = {
            let other = Arc::clone(&policy);
            let later = thread::spawn(move || other.try_acquire_at(2, at(NOW + T)).unwrap());
            let one = policy.try_acquire_at(1, at(NOW + T)).unwrap();
            (later.join().unwrap(), one)
        };
        assert!(!admitted.0, "2 units never fit the window");
        let left = {
            let state = policy.acquire_at(0, at(NOW + T)).unwrap();
            state
                .rules()
                .iter()
                .map(|rule| rule.remaining)
                .collect::<Vec<_>>()
        };
        if admitted.1 {
            assert_eq!(left, [1, 0]);
        } else {
            assert_eq!(left, [2, 1]);
        }
        admitted.1
    });
    assert_eq!(seen.len(), 2);
}
