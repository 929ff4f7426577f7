//! loom model checks of the keyed table's races (see the protocol in `src/keyed/`: lookup.rs, claim.rs, insert.rs).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom cargo
//! test --release --test loom_keyed`
//!
//! Tables are tiny (capacity 1: two slots) and keys are their own hashes, so each model
//! places keys exactly where the race needs them: a key's home slot is the top bit of its
//! hash. Time is frozen; GCRA with L = 1 per T, burst 1, so every key admits one request
//! per T and its TAT after one admission at `now` is `now + T`.
//!
//! Inserts wait (spinning with `yield_now`) for inserts in flight that may be of their
//! key. With three threads and a bound of three preemptions, loom also explores schedules
//! no OS produces: two waiting threads handed the CPU back and forth forever while the
//! thread they wait for, preempted one step before publishing, never runs again. Those
//! trip loom's branch limit in the three-thread model; run it with the bound of two.

#![cfg(loom)]

use librate::{Decision, Instant, KeyedAcquireError};
use loom::sync::Arc;
use loom::thread;

mod common;

use common::loom_keys::{acquire, assert_single_state, race, table, Table, A, B, C, T};

/// B's request at 0, racing one at T, is admitted only if it comes first (TAT T; B at T
/// then admits too, TAT 2T); after B at T (TAT 2T) it is denied until 2T. Both orders are
/// valid histories; B fresh twice is not.
fn assert_b_at_0_took_its_turn(early: &Decision) {
    if early.allowed {
        assert_eq!(early.reset_after_ns, T, "B at 0 went first");
    } else {
        assert_eq!(early.retry_after_ns, 2 * T, "B at T went first");
    }
}

#[test]
fn two_inserts_of_one_new_key_make_one_state() {
    loom::model(|| {
        let table = table();
        let (first, second) = race(&table, |t| acquire(t, B, 0), |t| acquire(t, B, 0));
        let admitted = [first, second]
            .iter()
            .filter(|result| result.as_ref().unwrap().allowed)
            .count();
        assert_eq!(admitted, 1, "burst 1 at one instant");
        assert_single_state(&table, B, T, 0);
    });
}

#[test]
fn two_batches_of_the_same_new_keys_make_one_state_each() {
    // A batch decides each key as a single acquire does: racing batches over the same
    // two new keys (homes 0 and 1) admit each key once and leave one state per key.
    loom::model(|| {
        let table = table();
        let batch = |t: &Table| {
            let (b, c) = (B.to_le_bytes(), C.to_le_bytes());
            let mut admitted = 0;
            t.try_acquire_batch_at(&[&b, &c], 1, Instant::ZERO, |_, outcome| {
                admitted += usize::from(outcome.unwrap());
            })
            .unwrap();
            admitted
        };
        let (first, second) = race(&table, batch, batch);
        assert_eq!(first + second, 2, "each key's burst of 1, once");
        assert_single_state(&table, B, T, 0);
        assert_single_state(&table, C, T, 0);
    });
}

#[test]
fn two_inserts_whose_clocks_disagree_on_a_free_slot_make_one_state() {
    // Slot 0 holds A with TAT T: fresh at T, live at 0. B's home is slot 0, so the insert
    // at T may reclaim slot 0 while the one at 0 takes slot 1.
    loom::model(|| {
        let table = table();
        assert!(acquire(&table, A, 0).unwrap().allowed);
        let (late, early) = race(&table, |t| acquire(t, B, T), |t| acquire(t, B, 0));
        assert!(late.unwrap().allowed);
        assert_b_at_0_took_its_turn(&early.unwrap());
        assert_single_state(&table, B, 2 * T, T);
    });
}

/// A table whose slot 0 holds A with TAT T (fresh at T) and slot 1 C, live until 10T: a
/// new key at home in slot 0 can only have slot 0.
fn a_fresh_at_t_and_c_live() -> Arc<Table> {
    let table = table();
    assert!(acquire(&table, A, 0).unwrap().allowed);
    assert!(acquire(&table, C, 9 * T).unwrap().allowed);
    table
}

#[test]
fn an_insert_racing_a_reclaim_never_loses_a_live_key() {
    // Slot 0: A with TAT T (fresh at T). Slot 1: C, live until 10T. B (home 0) can only
    // have slot 0, and only while A is fresh; A's own request at T makes it live.
    loom::model(|| {
        let table = a_fresh_at_t_and_c_live();
        let (b, a) = race(&table, |t| acquire(t, B, T), |t| acquire(t, A, T));
        match (a, b) {
            (Ok(a), Err(KeyedAcquireError::TableFull)) => {
                assert!(a.allowed);
                assert_single_state(&table, A, 2 * T, T);
                assert_eq!(table.slots_holding(&B.to_le_bytes()), 0);
            }
            (Err(KeyedAcquireError::TableFull), Ok(b)) => {
                assert!(b.allowed);
                assert_single_state(&table, B, 2 * T, T);
                assert_eq!(table.slots_holding(&A.to_le_bytes()), 0);
            }
            other => panic!("one key gets the last slot, the other TableFull: {other:?}"),
        }
        assert_single_state(&table, C, 10 * T, T);
    });
}

#[test]
fn an_update_never_lands_in_a_reclaimed_slot() {
    // Slot 0: A with TAT T (fresh at T); slot 1 vacant. B (home 0) reclaims slot 0 while
    // A's own request at T is in flight there: A must end up in slot 1 or keep slot 0,
    // and each key's state must be exactly its own one admission.
    loom::model(|| {
        let table = table();
        assert!(acquire(&table, A, 0).unwrap().allowed);
        let (b, a) = race(&table, |t| acquire(t, B, T), |t| acquire(t, A, T));
        assert!(b.unwrap().allowed && a.unwrap().allowed);
        assert_single_state(&table, A, 2 * T, T);
        assert_single_state(&table, B, 2 * T, T);
    });
}

#[test]
fn two_inserts_and_an_update_of_the_key_they_may_evict() {
    // Slot 0: A with TAT T (fresh at T, live at 0); slot 1 vacant. B at T may reclaim
    // slot 0 while A's request at T is updating it and B at 0 takes slot 1. Every order
    // of the three admits A and B at T; B at 0 only if it comes before B at T.
    loom::model(|| {
        let table = table();
        assert!(acquire(&table, A, 0).unwrap().allowed);
        let early_b = {
            let table = Arc::clone(&table);
            thread::spawn(move || acquire(&table, B, 0))
        };
        let (late_b, a) = race(&table, |t| acquire(t, B, T), |t| acquire(t, A, T));
        let early_b = early_b.join().unwrap().unwrap();
        assert!(late_b.unwrap().allowed && a.unwrap().allowed);
        assert_b_at_0_took_its_turn(&early_b);
        assert_single_state(&table, A, 2 * T, T);
        assert_single_state(&table, B, 2 * T, T);
    });
}

#[test]
fn a_reset_racing_a_request_of_its_key_decides_it_before_or_after() {
    // A (slot 0) used its one unit at 0. Its request at 0 racing a reset is denied before
    // it (A is then absent) or admitted after it, as a new key: A's new state (TAT T) in
    // slot 1, while slot 0 keeps A's former state, under no key, until T.
    loom::model(|| {
        let table = table();
        assert!(acquire(&table, A, 0).unwrap().allowed);
        let (request, _) = race(
            &table,
            |t| Some(acquire(t, A, 0).unwrap()),
            |t| t.reset(&A.to_le_bytes()).map(|()| None).unwrap(),
        );
        if request.unwrap().allowed {
            assert_single_state(&table, A, T, 0);
        } else {
            assert_eq!(table.slots_holding(&A.to_le_bytes()), 0);
            assert_eq!(
                acquire(&table, A, 0).unwrap().remaining,
                0,
                "a new key's unit"
            );
        }
        assert_eq!(table.live_keys_at(Instant::ZERO), 1);
        assert_eq!(table.claimed_slots(), 0);
    });
}

#[test]
fn a_reset_racing_a_reclaim_of_its_slot_leaves_each_key_one_state() {
    // Slot 0: A, admitted at 0, so fresh at T. Slot 1: C, live until 10T. At T, B (home
    // 0) can only reclaim slot 0, which the reset of A claims too: whichever goes first,
    // the slot is fresh for B (A's state, or A's former state), B gets it, and A is gone.
    loom::model(|| {
        let table = a_fresh_at_t_and_c_live();
        let (b, _) = race(
            &table,
            |t| Some(acquire(t, B, T).unwrap()),
            |t| t.reset(&A.to_le_bytes()).map(|()| None).unwrap(),
        );
        assert!(b.unwrap().allowed);
        assert_single_state(&table, B, 2 * T, T);
        assert_eq!(table.slots_holding(&A.to_le_bytes()), 0);
        assert_single_state(&table, C, 10 * T, T);
        assert_eq!(table.claimed_slots(), 0);
    });
}
