//! loom model checks of a shared table's crash recovery (docs/shared.md; `src/keyed/recover.rs`).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom cargo
//! test --release --test loom_shared`
//!
//! A thread plays a process with a token of its own and, in turn, stops for good at each
//! crash point on its path (`librate::crashes::play`): after claiming a slot, after each
//! word an install writes, before giving its registry entry back, and at every step of a
//! recovery. The table is private memory with the claim registry a shared table has
//! (`KeyedLimiter::with_registry`); under loom a waiter asks whether a claimer lives after
//! its first wait, so recovery is tried against every step of the claimer.
//!
//! After every run: each key has exactly one state, its admissions counted once (none
//! lost to a dead process and none twice), every call of the live threads returned a
//! decision, and once the live thread has used every slot, none is left claimed.

#![cfg(loom)]

use librate::{crashes, Config, Decision, KeyedLimiter};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

mod common;

use common::loom_keys::{acquire, assert_single_state, KeyIsHash, Table, A, B, C, T};

/// More crash points than any path in these models passes: the last runs complete.
const STEPS: u32 = 6;

/// The token of the thread that stops; the others keep the default token, 1.
const DOOMED: u64 = 2;

fn shared_table() -> Arc<Table> {
    Arc::new(
        KeyedLimiter::with_registry(&Config::gcra(1, Duration::from_nanos(T)), 1, KeyIsHash)
            .unwrap(),
    )
}

/// Runs `doomed` on a thread that plays process `token` and stops at its crash point
/// `stop_at`, and `live` on this thread; returns `doomed`'s result (`None` if it stopped)
/// and `live`'s.
fn race_with_crash<R: Send + 'static>(
    table: &Arc<Table>,
    token: u64,
    stop_at: u32,
    doomed: impl FnOnce(&Table) -> R + Send + 'static,
    live: impl FnOnce(&Table) -> R,
) -> (Option<R>, R) {
    let other = Arc::clone(table);
    let handle = thread::spawn(move || crashes::play(token, Some(stop_at), || doomed(&other)));
    let result = live(table);
    (handle.join().unwrap(), result)
}

fn allowed(decision: Option<&Decision>) -> usize {
    usize::from(decision.is_some_and(|decision| decision.allowed))
}

#[test]
fn a_process_that_dies_inserting_a_key_leaves_one_state_for_it() {
    // Both insert B (home 0) at 0; one of them stops at step `k`. Burst 1 at one instant:
    // whichever admission took effect, B's TAT is T, and the live thread's later request
    // is denied. C then needs a slot too, so a slot left claimed must be put back.
    for stop_at in 0..STEPS {
        loom::model(move || {
            let table = shared_table();
            let (theirs, mine) = race_with_crash(
                &table,
                DOOMED,
                stop_at,
                |t| acquire(t, B, 0).unwrap(),
                |t| acquire(t, B, 0).unwrap(),
            );
            let again = acquire(&table, B, 0).unwrap();
            assert!(!again.allowed, "step {stop_at}");
            assert!(
                allowed(theirs.as_ref()) + allowed(Some(&mine)) <= 1,
                "step {stop_at}"
            );
            assert_single_state(&table, B, T, 0);
            assert!(acquire(&table, C, 0).unwrap().allowed, "step {stop_at}");
            assert_single_state(&table, C, T, 0);
            assert_eq!(table.claimed_slots(), 0, "step {stop_at}");
        });
    }
}

#[test]
fn a_process_that_dies_reclaiming_a_slot_loses_no_key() {
    // A (slot 0) and C (slot 1) were admitted at 0, so both are fresh at 2T. A process
    // inserting B (home 0) at 2T reclaims slot 0 and stops at step `k`, while A's own
    // request at 2T is in flight: A must keep exactly its one state, restored if the
    // reclaim died, and B gets exactly one, admitted once (by whichever process installed
    // it).
    for stop_at in 0..STEPS {
        loom::model(move || {
            let table = shared_table();
            assert!(acquire(&table, A, 0).unwrap().allowed);
            assert!(acquire(&table, C, 0).unwrap().allowed);
            let (theirs, mine) = race_with_crash(
                &table,
                DOOMED,
                stop_at,
                |t| acquire(t, B, 2 * T).unwrap(),
                |t| acquire(t, A, 2 * T).unwrap(),
            );
            assert!(mine.allowed, "A is fresh at 2T: step {stop_at}");
            assert_single_state(&table, A, 3 * T, 2 * T);
            let b = acquire(&table, B, 2 * T).unwrap();
            // A process that stops after installing B admitted it without telling anyone.
            assert!(
                allowed(theirs.as_ref()) + allowed(Some(&b)) <= 1,
                "step {stop_at}"
            );
            assert_single_state(&table, B, 3 * T, 2 * T);
            assert_eq!(table.claimed_slots(), 0, "step {stop_at}");
        });
    }
}

#[test]
fn a_process_that_dies_recovering_a_dead_claim_leaves_it_recoverable() {
    // A first process stops right after claiming a slot for B (its first crash point). A
    // second finds the claim, recovers it and inserts B, stopping at its step `k`; this
    // thread inserts B meanwhile. B ends with one state, and nothing stays claimed.
    for stop_at in 0..STEPS {
        loom::model(move || {
            let table = shared_table();
            assert!(crashes::play(DOOMED, Some(0), || acquire(&table, B, 0)).is_none());
            assert_eq!(table.claimed_slots(), 1);
            let (theirs, mine) = race_with_crash(
                &table,
                DOOMED + 1,
                stop_at,
                |t| acquire(t, B, 0).unwrap(),
                |t| acquire(t, B, 0).unwrap(),
            );
            assert!(
                allowed(theirs.as_ref()) + allowed(Some(&mine)) <= 1,
                "step {stop_at}"
            );
            assert!(!acquire(&table, B, 0).unwrap().allowed, "step {stop_at}");
            assert_single_state(&table, B, T, 0);
            assert!(acquire(&table, C, 0).unwrap().allowed, "step {stop_at}");
            assert_eq!(table.claimed_slots(), 0, "step {stop_at}");
        });
    }
}

#[test]
fn a_process_that_dies_resetting_a_key_leaves_it_reset_or_not() {
    // A (slot 0) used its unit at 0. A process resetting A stops at step `k` while this
    // thread's request for A at 0 is in flight: the request is denied (before the reset,
    // or the reset died first) or admitted (after it). Either way A then has one state,
    // and once A and C (home 1) are used at T, when every state so far is fresh, nothing
    // is left claimed.
    for stop_at in 0..STEPS {
        loom::model(move || {
            let table = shared_table();
            assert!(acquire(&table, A, 0).unwrap().allowed);
            let (_, mine) = race_with_crash(
                &table,
                DOOMED,
                stop_at,
                |t| t.reset(&A.to_le_bytes()).map(|()| None).unwrap(),
                |t| Some(acquire(t, A, 0).unwrap()),
            );
            if mine.is_some_and(|mine| mine.allowed) {
                assert_single_state(&table, A, T, 0);
            }
            assert!(acquire(&table, A, T).unwrap().allowed, "step {stop_at}");
            assert_single_state(&table, A, 2 * T, T);
            assert!(acquire(&table, C, T).unwrap().allowed, "step {stop_at}");
            assert_single_state(&table, C, 2 * T, T);
            assert_eq!(table.claimed_slots(), 0, "step {stop_at}");
        });
    }
}
