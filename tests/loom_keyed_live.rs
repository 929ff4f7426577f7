//! loom model of a keyed table's rule changing (`KeyedLimiter::set_config_at`) while
//! other threads acquire: a key already in the table and a new key each decide wholly
//! under one rule, the state after is the carry-over (GCRA keeps its tokens, capped at
//! the new burst) of the state at the key's sweep, and no key is ever in two slots of the
//! region in force.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!       cargo test --release --test loom_keyed_live`
//!
//! Tables have capacity 1 (two slots) and keys are their own hashes (`loom_keys.rs`):
//! A and B are at home in slot 0, C in slot 1. Time is frozen at `NOW`, so tokens only
//! move by admissions and by the change.
#![cfg(loom)]

use librate::{Config, Decision, KeyedLimiter};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

mod common;
use common::at;

use common::loom_keys::{KeyIsHash, A, B, C, T};

const NOW: u64 = 10 * T;

/// Old: T, burst 3. New: 2T, burst 4, so no state the models leave is full (fresh) under
/// it, and every key stays in the table.
fn rules() -> (Config, Config) {
    (
        Config::gcra(1, Duration::from_nanos(T)).with_burst(3),
        Config::gcra(1, Duration::from_nanos(2 * T)).with_burst(4),
    )
}

type Table = KeyedLimiter<KeyIsHash>;

fn acquire(table: &Table, key: u64, n: u64) -> Decision {
    table.acquire_at(&key.to_le_bytes(), n, at(NOW)).unwrap()
}

/// What `key` has left under the new rule once every thread is done, and that it is in
/// one slot, and no slot is left claimed.
fn tokens_left(table: &Table, key: u64) -> u64 {
    assert_eq!(table.slots_holding(&key.to_le_bytes()), 1, "key {key}");
    assert_eq!(table.claimed_slots(), 0);
    let state = acquire(table, key, 0);
    assert_eq!(state.limit, 4, "the new rule's burst");
    state.remaining
}

/// The tokens an existing key has left after taking 2 of its 2 before or after the
/// change: none either way, each decision made under the rule its `limit` names.
fn assert_existing_key(decision: &Decision, table: &Table) {
    assert!(decision.allowed, "2 tokens, before (of 3) or after (of 4)");
    assert!(decision.limit == 3 || decision.limit == 4);
    assert_eq!(tokens_left(table, A), 0);
}

/// A new key's one admission: under the old rule it leaves 2 tokens, which the change
/// keeps; under the new one (after the sweep, which it waited for), 3.
fn assert_new_key(decision: &Decision, table: &Table, key: u64) {
    assert!(decision.allowed);
    let expected = if decision.limit == 3 { 2 } else { 3 };
    assert_eq!(
        tokens_left(table, key),
        expected,
        "under limit {}",
        decision.limit
    );
}

fn table_with_a() -> Arc<Table> {
    let (old, _) = rules();
    let table = Arc::new(KeyedLimiter::with_hasher(&old, 1, KeyIsHash).unwrap());
    // A takes 1 of 3: 2 tokens left.
    assert!(acquire(&table, A, 1).allowed);
    table
}

/// Acquires `n` units for `key` on another thread while this one changes the rule.
fn race_a_change(table: &Arc<Table>, key: u64, n: u64) -> Decision {
    let acquirer = {
        let table = Arc::clone(table);
        thread::spawn(move || acquire(&table, key, n))
    };
    table.set_config_at(&rules().1, at(NOW)).unwrap();
    acquirer.join().unwrap()
}

#[test]
fn a_change_racing_an_acquire_of_an_existing_key() {
    loom::model(|| {
        let table = table_with_a();
        let decision = race_a_change(&table, A, 2);
        assert_existing_key(&decision, &table);
    });
}

#[test]
fn a_change_racing_an_insert_of_a_new_key_in_the_same_probe_chain() {
    loom::model(|| {
        let table = table_with_a();
        let decision = race_a_change(&table, B, 1);
        assert_new_key(&decision, &table, B);
        // A kept its 2 tokens.
        assert_eq!(tokens_left(&table, A), 2);
    });
}

/// One thread acquires for A (in the table) and then inserts C (at home in the other
/// slot) while the change sweeps: the acquire may meet A's slot unswept, moved or
/// carried over, and the insert may run before the change, during its sweep (waiting for
/// it) or after it. (Three threads, one per operation, take loom minutes.)
#[test]
fn a_change_racing_an_acquire_then_an_insert() {
    loom::model(|| {
        let table = table_with_a();
        let requests = {
            let table = Arc::clone(&table);
            thread::spawn(move || (acquire(&table, A, 2), acquire(&table, C, 1)))
        };
        table.set_config_at(&rules().1, at(NOW)).unwrap();
        let (existing, new) = requests.join().unwrap();
        assert_existing_key(&existing, &table);
        assert_new_key(&new, &table, C);
    });
}

/// A free racing a late reader: once a table's rule changed, every operation reads the
/// region in force pinned. A thread acquires an existing key on it while the main thread
/// changes the rule again, which sweeps the key out of that region, retires it and frees
/// it once no thread can still be reading it. Under loom every read of a region is
/// checked against its free (a free not ordered after a read is reported), and the key's
/// state after is exact.
#[test]
fn a_free_racing_a_late_reader() {
    // A has 2 tokens; a burst of 5 keeps them.
    let middle = Config::gcra(1, Duration::from_nanos(T)).with_burst(5);
    loom::model(move || {
        let table = table_with_a();
        table.set_config_at(&middle, at(NOW)).unwrap();
        let decision = race_a_change(&table, A, 2);
        assert!(decision.allowed, "2 tokens, before (of 5) or after (of 4)");
        assert!(decision.limit == 5 || decision.limit == 4);
        assert_eq!(tokens_left(&table, A), 0);
    });
}
