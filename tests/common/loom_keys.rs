//! What the loom models share (`tests/loom_*.rs`): `outcomes` of a model, and keyed tables:
//! capacity 1 (two slots), GCRA of 1 per `T`, and keys that are their own hashes, so a
//! model puts each key in the slot its race needs.

use librate::{Config, Decision, Instant, KeyedAcquireError, KeyedLimiter};
use loom::sync::Arc;
use loom::thread;
use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

pub use super::key_is_hash::KeyIsHash;

pub const T: u64 = 1_000;

/// Keys at home in slot 0 (top bit clear) and slot 1 (top bit set).
pub const A: u64 = 1;
pub const B: u64 = 2;
pub const C: u64 = 1 << 63 | 3;

pub type Table = KeyedLimiter<KeyIsHash>;

pub fn table() -> Arc<Table> {
    Arc::new(
        KeyedLimiter::with_hasher(&Config::gcra(1, Duration::from_nanos(T)), 1, KeyIsHash).unwrap(),
    )
}

pub fn acquire(table: &Table, key: u64, now: u64) -> Result<Decision, KeyedAcquireError> {
    table.acquire_at(&key.to_le_bytes(), 1, Instant::from_nanos(now))
}

/// Runs `first` and `second` on two threads against `table` and returns their results.
pub fn race<R: Send + 'static>(
    table: &Arc<Table>,
    first: impl FnOnce(&Table) -> R + Send + 'static,
    second: impl FnOnce(&Table) -> R + Send + 'static,
) -> (R, R) {
    let other = Arc::clone(table);
    let handle = thread::spawn(move || first(&other));
    let result = second(table);
    (handle.join().unwrap(), result)
}

/// The key's state is one slot whose TAT is `tat`: a request at `now < tat` is denied
/// with retry_after `tat − now` (burst 1, so τ = T and the retry is tat + T − now − T).
pub fn assert_single_state(table: &Table, key: u64, tat: u64, now: u64) {
    assert_eq!(table.slots_holding(&key.to_le_bytes()), 1, "key {key}");
    let denied = acquire(table, key, now).unwrap();
    assert!(!denied.allowed, "key {key}");
    assert_eq!(denied.retry_after_ns, tat - now, "key {key}");
}

/// Runs `model` under loom, and returns the outcomes it gave over all interleavings.
pub fn outcomes<O: Ord + Send + 'static>(model: fn() -> O) -> BTreeSet<O> {
    let seen = std::sync::Arc::new(Mutex::new(BTreeSet::new()));
    let outcomes = std::sync::Arc::clone(&seen);
    loom::model(move || {
        let outcome = model();
        outcomes.lock().unwrap().insert(outcome);
    });
    let mut seen = seen.lock().unwrap();
    std::mem::take(&mut *seen)
}
