//! What a dashboard reads of a table: its sizes, its live keys and its refusals.

use super::layout::NO_KEY;
use super::markers::is_marker;
use super::region::Region;
use super::KeyedLimiter;
use crate::sync::Ordering;
use crate::time::Instant;

/// A keyed table's statistics, from [`KeyedLimiter::stats`] or
/// [`stats_at`](KeyedLimiter::stats_at).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedStats {
    /// The capacity the table was built for: this many live keys always fit.
    pub capacity: u64,
    /// The most keys the table holds at once: its slots, `2 × capacity`.
    pub max_keys: u64,
    /// Keys whose state was not fresh at the time asked ([`KeyedLimiter::live_keys_at`]).
    pub live_keys: u64,
    /// Requests for new keys refused with
    /// [`KeyedAcquireError::TableFull`](crate::KeyedAcquireError::TableFull) since the
    /// table was built; for a shared table, since its file was created, by
    /// every process that opened it.
    pub table_full: u64,
}

impl Region {
    /// How many slots of this region hold a key's state not fresh at `now_ns` (moved slots
    /// hold a marker, and are not counted).
    fn live_keys_at(&self, now_ns: u64) -> u64 {
        (0..self.layout.slot_count)
            .filter(|&slot| {
                // Relaxed, both: a snapshot with no ordering promise; is_fresh says no to
                // markers.
                let first = self.first_word(slot).load(Ordering::Relaxed);
                let fingerprint = self.fingerprint_word(slot).load(Ordering::Relaxed);
                !is_marker(first)
                    && fingerprint != NO_KEY
                    && !self.decider.is_fresh(self.state(slot), now_ns)
            })
            .count() as u64
    }
}

impl<S> KeyedLimiter<S> {
    /// How many keys hold a state that is not fresh at `at`: a snapshot taken by
    /// reading every slot (O(slots); for tests and metrics, not hot paths). A reset key's
    /// former state is no key's, and not counted. During a change of rule it counts the
    /// keys moved into the new region and those not moved yet.
    pub fn live_keys_at(&self, at: Instant) -> u64 {
        let now_ns = at.as_nanos();
        let view = self.view();
        let region = view.current();
        let moving = if region.is_sweeping() {
            // SAFETY: read through `view`, which found it swept into.
            unsafe { view.predecessor(region) }.live_keys_at(now_ns)
        } else {
            0
        };
        region.live_keys_at(now_ns) + moving
    }

    /// The table's statistics with its live keys at `at`: a snapshot, O(slots).
    ///
    /// ```
    /// use librate::{Config, Instant, KeyedAcquireError, KeyedLimiter};
    /// use std::time::Duration;
    /// // Capacity 1: two slots.
    /// let table = KeyedLimiter::new(&Config::gcra(1, Duration::from_secs(1)), 1).unwrap();
    /// for key in [b"a", b"b"] {
    ///     assert!(table.acquire_at(key, 1, Instant::ZERO).unwrap().allowed);
    /// }
    /// assert_eq!(
    ///     table.acquire_at(b"c", 1, Instant::ZERO),
    ///     Err(KeyedAcquireError::TableFull)
    /// );
    /// let stats = table.stats_at(Instant::ZERO);
    /// assert_eq!((stats.capacity, stats.max_keys), (1, 2));
    /// assert_eq!((stats.live_keys, stats.table_full), (2, 1));
    /// ```
    pub fn stats_at(&self, at: Instant) -> KeyedStats {
        KeyedStats {
            capacity: self.capacity,
            max_keys: self.max_keys(),
            live_keys: self.live_keys_at(at),
            table_full: self.table_full(),
        }
    }

    /// Requests for new keys refused with `TableFull`, in every region the table has had
    /// (each counts in the first's word: `region.rs`).
    fn table_full(&self) -> u64 {
        // Relaxed: a statistic; nothing else is read with it.
        self.first().table_full().load(Ordering::Relaxed)
    }

    /// [`stats_at`](Self::stats_at) now (`CLOCK_MONOTONIC`).
    pub fn stats(&self) -> KeyedStats {
        self.stats_at(Instant::now())
    }
}
