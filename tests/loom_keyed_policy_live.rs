//! loom models of a keyed policy's rules changing (`KeyedPolicy::set_rules_at`) while
//! another thread acquires: the request is decided by each rule under that rule's old or
//! new configuration, an admission is counted once by every rule, and a denied request's
//! give-back racing the move of its key's state either lands or leaves the units held
//! (carried over), never fewer tokens than before and never more than it took.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!       cargo test --release --test loom_keyed_policy_live`
//!
//! Per-key tables have capacity 1 (two slots) and keys are their own hashes
//! (`loom_keys.rs`). Time is frozen at `NOW`, so tokens only move by admissions and by
//! the change.
#![cfg(loom)]

use librate::{Config, KeyedPolicy, KeyedRule};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

mod common;
use common::at;

use common::loom_keys::{outcomes, KeyIsHash, A, B, T};

const NOW: u64 = 10 * T;
const WINDOW: u64 = 100 * T;

type Policy = KeyedPolicy<KeyIsHash>;

/// A per-key GCRA of 1 per `interval` with `burst`, then a global fixed window of
/// `global` per `WINDOW` (listed in that order, so the per-key rule takes first).
fn rules(interval: u64, burst: u64, global: u64) -> [KeyedRule; 2] {
    [
        KeyedRule::per_key(Config::gcra(1, Duration::from_nanos(interval)).with_burst(burst)),
        KeyedRule::global(Config::fixed_window(global, Duration::from_nanos(WINDOW))),
    ]
}

/// The old rules: 1 per T, burst 3 per key; 10 a window for everybody.
fn old() -> [KeyedRule; 2] {
    rules(T, 3, 10)
}

/// A raise: 1 per 2T, burst 4 per key (no state the models leave is fresh under it, so
/// every key stays in its table); 20 a window for everybody.
fn raised() -> [KeyedRule; 2] {
    rules(2 * T, 4, 20)
}

/// A's request takes 1 of its 3 tokens and 1 of the window's 10 before the race.
fn policy_with_a() -> Arc<Policy> {
    let policy = Arc::new(Policy::with_hasher(&old(), 1, KeyIsHash).unwrap());
    assert!(policy.try_acquire_at(&A.to_le_bytes(), 1, at(NOW)).unwrap());
    policy
}

/// `(limit, remaining)` of each rule for `key` at `NOW`, with nothing taken.
fn fields(policy: &Policy, key: u64) -> [(u64, u64); 2] {
    let decision = policy.acquire_at(&key.to_le_bytes(), 0, at(NOW)).unwrap();
    let rules = decision.rules();
    [
        (rules[0].limit, rules[0].remaining),
        (rules[1].limit, rules[1].remaining),
    ]
}

/// Changes the rules to `new` at `NOW` on this thread while another acquires `costs` (one
/// per rule) for `key`; returns whether it was admitted and the limits its rules decided
/// under.
fn race_a_change(
    policy: &Arc<Policy>,
    key: u64,
    costs: [u64; 2],
    new: [KeyedRule; 2],
) -> (bool, [u64; 2]) {
    let acquirer = {
        let policy = Arc::clone(policy);
        thread::spawn(move || {
            let decision = policy
                .acquire_costs_at(&key.to_le_bytes(), &costs, at(NOW))
                .unwrap();
            let rules = decision.rules();
            (decision.decision.allowed, [rules[0].limit, rules[1].limit])
        })
    };
    policy.set_rules_at(&new, at(NOW)).unwrap();
    acquirer.join().unwrap()
}

#[test]
fn a_raise_racing_an_acquire_of_an_existing_key() {
    loom::model(|| {
        let policy = policy_with_a();
        // A takes its other 2 tokens, under the old burst (of 3) or the new (of 4, with
        // the 2 tokens carried over): none left either way; the window counts 3 of 10 or
        // of 20 whichever rule counted the request.
        let (allowed, limits) = race_a_change(&policy, A, [2, 2], raised());
        assert!(allowed);
        assert!(limits[0] == 3 || limits[0] == 4, "{limits:?}");
        assert!(limits[1] == 10 || limits[1] == 20, "{limits:?}");
        assert_eq!(fields(&policy, A), [(4, 0), (20, 17)]);
    });
}

#[test]
fn a_raise_racing_an_insert_of_a_new_key() {
    loom::model(|| {
        let policy = policy_with_a();
        // B is new: 1 of 3 under the old rule leaves 2, which the change keeps; 1 of 4
        // under the new (its insert waits for the sweep) leaves 3.
        let (allowed, limits) = race_a_change(&policy, B, [1, 1], raised());
        assert!(allowed);
        let b_left = if limits[0] == 3 { 2 } else { 3 };
        assert_eq!(fields(&policy, B), [(4, b_left), (20, 18)]);
        // A kept its 2 tokens; the window counts A's unit and B's.
        assert_eq!(fields(&policy, A), [(4, 2), (20, 18)]);
    });
}

/// A per-key GCRA of 1 per `interval` with `burst`, then a per-key fixed window of 1 per
/// `WINDOW`: both give units back, so both are taken in the order given (a global rule
/// would be asked before any takes, and deny before the GCRA took).
fn two_per_key(interval: u64, burst: u64) -> [KeyedRule; 2] {
    [
        KeyedRule::per_key(Config::gcra(1, Duration::from_nanos(interval)).with_burst(burst)),
        KeyedRule::per_key(Config::fixed_window(1, Duration::from_nanos(WINDOW))),
    ]
}

/// A's request for 2 units of its GCRA and 1 of its window racing a change of its GCRA rule (the window's stays) while
/// A's window is full: the GCRA takes 2 (under the old rule or the new), the window
/// denies, and the GCRA gives the 2 back. A give-back that finds A's state moved to the
/// new rule's region leaves the units there, carried over: A then has 0 tokens, not 2.
/// Both outcomes occur; none other does.
#[test]
fn a_denied_requests_give_back_racing_the_move_of_its_key() {
    let tokens_left = outcomes(|| {
        let policy = Arc::new(Policy::with_hasher(&two_per_key(T, 3), 1, KeyIsHash).unwrap());
        // A takes 1 of its 3 tokens and fills its window.
        assert!(policy.try_acquire_at(&A.to_le_bytes(), 1, at(NOW)).unwrap());
        let (allowed, _) = race_a_change(&policy, A, [2, 1], two_per_key(2 * T, 4));
        assert!(!allowed, "A's window is full under either rule");
        let [(burst, left), window] = fields(&policy, A);
        assert_eq!((burst, window), (4, (1, 0)));
        left
    });
    assert_eq!(tokens_left, [0, 2].into());
}
