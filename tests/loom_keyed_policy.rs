//! loom models of a keyed policy's give-back (`src/keyed/give_back.rs`): a denied request
//! leaves every rule as it was, or holds units (never fewer than were admitted), and its
//! give-back never lands in another key's state.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!       cargo test --release --test loom_keyed_policy`
//!
//! Tables of capacity 1 (two slots) with keys that are their own hashes (the top bit is
//! the home slot), GCRA of 1 per `T` per key, at frozen times.
#![cfg(loom)]

use librate::{Config, Instant, KeyedPolicy, KeyedRule};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

mod common;

use common::loom_keys::{outcomes, KeyIsHash, A, B, C, T};

type Policy = KeyedPolicy<KeyIsHash>;

/// [1 per T per key with a burst of `burst`, 1 per 100 T per key, 10 per 100 T for
/// everybody], the global rule given first (so it takes first, and gives back too).
fn policy(burst: u64) -> Arc<Policy> {
    let rules = [
        KeyedRule::global(Config::fixed_window(10, Duration::from_nanos(100 * T))),
        KeyedRule::per_key(Config::gcra(1, Duration::from_nanos(T)).with_burst(burst)),
        KeyedRule::per_key(Config::fixed_window(1, Duration::from_nanos(100 * T))),
    ];
    Arc::new(KeyedPolicy::with_hasher(&rules, 1, KeyIsHash).unwrap())
}

fn acquire(policy: &Policy, key: u64, costs: [u64; 3], now: u64) -> Option<bool> {
    match policy.acquire_costs_at(&key.to_le_bytes(), &costs, Instant::from_nanos(now)) {
        Ok(decision) => Some(decision.decision.allowed),
        Err(librate::CostsError::Acquire(librate::KeyedAcquireError::TableFull)) => None,
        Err(other) => panic!("{other:?}"),
    }
}

/// A's request at T takes the global rule and A's GCRA state in place (TAT T → 2T), then
/// A's window denies it and both give back. Meanwhile B, at 3T, where A's TAT 2T is
/// fresh, reclaims A's slot (C holds the other slot, live): B's install is TAT 4T, above
/// every value A's give-back can expect, so the give-back fails there and B keeps exactly
/// its own admission. Every other rule ends as it was.
#[test]
fn a_give_back_never_lands_in_another_keys_state() {
    loom::model(|| {
        let policy = policy(1);
        // A: in the GCRA table (slot 0, TAT T) and full in its window; C: slot 1 of the
        // GCRA table, live until 4T.
        assert_eq!(acquire(&policy, A, [1, 1, 1], 0), Some(true));
        assert_eq!(acquire(&policy, C, [1, 1, 0], 3 * T), Some(true));
        let other = Arc::clone(&policy);
        let denied = thread::spawn(move || acquire(&other, A, [1, 1, 1], T));
        let b = acquire(&policy, B, [0, 1, 0], 3 * T);
        // Denied by its window, or refused: B took A's slot before A's request looked.
        let denied = denied.join().unwrap();
        assert!(denied == Some(false) || denied.is_none() && b == Some(true));
        // B either reclaimed A's slot (A fresh at 3T, or A's give-back done) or found the
        // table full (A's TAT 2T held at B's look, before the give-back).
        let at = |key: u64, now| {
            let state = policy.acquire_at(&key.to_le_bytes(), 0, now).unwrap();
            state
                .rules()
                .iter()
                .map(|rule| rule.remaining)
                .collect::<Vec<_>>()
        };
        // Global: A and C counted, the denied request given back; A's GCRA state as it
        // was (TAT T, fresh at T) or dropped for B (fresh), its window full.
        assert_eq!(at(A, Instant::from_nanos(T)), [8, 1, 0]);
        match b {
            Some(true) => {
                // B holds exactly its own unit until 4T: at 4T − 1 it has none left.
                assert_eq!(at(B, Instant::from_nanos(4 * T - 1))[1], 0);
                assert_eq!(at(B, Instant::from_nanos(4 * T))[1], 1);
            }
            None => assert_eq!(at(B, Instant::from_nanos(3 * T))[1], 1),
            Some(false) => panic!("B is new: its GCRA state is fresh"),
        }
    });
}

/// A's request at T inserts A into the GCRA table (burst 2), then A's window denies it
/// and the insert is given back by retiring A's slot, racing another request of A's for
/// the GCRA rule alone, which is admitted either way (on a fresh state, or on one holding
/// the denied request's unit). It is never forgotten: A then holds exactly that one unit,
/// so one more request at T is admitted and the next denied.
#[test]
fn a_given_back_insert_forgets_no_admission() {
    let rooms = outcomes(|| {
        let policy = policy(2);
        // A is full in its window, and not in the GCRA table.
        assert_eq!(acquire(&policy, A, [0, 0, 1], 0), Some(true));
        let other = Arc::clone(&policy);
        let denied = thread::spawn(move || acquire(&other, A, [0, 1, 1], T));
        let alone = acquire(&policy, A, [0, 1, 0], T);
        assert_eq!(denied.join().unwrap(), Some(false));
        assert_eq!(alone, Some(true));
        // What A holds of its burst of 2: its admitted unit, and the denied request's if
        // the admitted one moved the state on before the give-back (then it stays taken).
        (0..3)
            .take_while(|_| acquire(&policy, A, [0, 1, 0], T) == Some(true))
            .count()
    });
    // Both happen; no schedule forgets the admitted unit (room 2).
    assert_eq!(rooms, [0, 1].into());
}
