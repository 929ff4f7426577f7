//! Counting a keyed policy's requests (docs/metrics.md, counters), as a policy's are
//! counted (`policy/counts.rs`), and besides them the requests a full table refused.

use super::super::engine::Costs;
use super::super::PolicyDecision;
use super::KeyedPolicy;
use crate::counters::Counts;
use crate::error::KeyedAcquireError;
use std::hash::BuildHasher;

impl<S: BuildHasher> KeyedPolicy<S> {
    /// `decided`, a request of `costs`, counted if counting is on and the request was not
    /// a query (docs/metrics.md).
    pub(super) fn counted(
        &self,
        costs: &Costs,
        decided: Result<PolicyDecision, KeyedAcquireError>,
    ) -> Result<PolicyDecision, KeyedAcquireError> {
        match &decided {
            Ok(decision) if !self.engine.is_query(costs) => {
                self.counters
                    .count_policy(decision.denied_by, decision.shadow_denials());
            }
            Err(KeyedAcquireError::TableFull) => self.counters.count_table_full(),
            _ => {}
        }
        decided
    }

    /// Turns on counting of this handle's requests, from this call on (docs/metrics.md,
    /// counters): one atomic add a request, and the `try_acquire` forms then decide as
    /// `acquire` does, to learn which rule denied. For a shared policy, this process's
    /// requests through this handle. Counting that is on stays on.
    pub fn enable_counts(&self) {
        self.counters.enable();
    }

    /// How many requests this handle admitted, how many each rule denied first, and
    /// how many a full table refused, since [`enable_counts`](Self::enable_counts);
    /// `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(self.rules.len())
    }
}
