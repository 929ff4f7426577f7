//! Counting a table's requests (docs/metrics.md, counters): admitted, denied, or refused
//! for a full table.

use super::insert::Refusal;
use super::KeyedLimiter;
use crate::counters::{Counts, Outcome};
use std::hash::BuildHasher;

impl<S: BuildHasher> KeyedLimiter<S> {
    /// `outcome`, a request of `n` units, counted if counting is on (docs/metrics.md):
    /// a full table apart.
    #[inline(always)]
    pub(super) fn counted<T: Outcome, E: Refusal>(
        &self,
        n: u64,
        outcome: Result<T, E>,
    ) -> Result<T, E> {
        self.counters.count_keyed(n, &outcome, E::is_table_full);
        outcome
    }

    /// Turns on counting of this handle's requests, from this call on (docs/metrics.md,
    /// counters): one atomic add a request, which is why it is off until asked for. For a
    /// shared table, this process's requests through this handle. Counting that is on
    /// stays on.
    pub fn enable_counts(&self) {
        self.counters.enable();
    }

    /// How many requests this handle admitted, denied and refused for a full table since
    /// [`enable_counts`](Self::enable_counts); `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(1)
    }
}
