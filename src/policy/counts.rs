//! Counting a policy's requests (docs/metrics.md, counters): each one decided, as
//! admitted or by the rule that denied it first, and each shadow rule's would-be denial.
//!
//! Only the report says which rule denied, so a handle that counts decides its
//! `try_acquire` forms as the `acquire` forms do; one that does not pays the check alone.

use super::engine::Cost;
use super::{Policy, PolicyDecision};
use crate::counters::Counts;

impl Policy {
    /// `decision`, of a request of `costs`, counted if counting is on and the request
    /// was not a query (docs/metrics.md).
    pub(super) fn counted(&self, costs: impl Cost, decision: PolicyDecision) -> PolicyDecision {
        if !self.engine.is_query(costs) {
            self.counters
                .count_policy(decision.denied_by, decision.shadow_denials());
        }
        decision
    }

    /// Turns on counting of this handle's requests, from this call on (docs/metrics.md,
    /// counters): one atomic add a request, and the `try_acquire` forms then decide as
    /// `acquire` does, to learn which rule denied. Counting that is on stays on.
    pub fn enable_counts(&self) {
        self.counters.enable();
    }

    /// How many requests this handle admitted, and how many each rule denied first,
    /// since [`enable_counts`](Self::enable_counts); `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(self.rules.len())
    }
}
