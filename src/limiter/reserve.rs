//! A reserve that keeps what giving its admission back takes: the step of a wait
//! (`src/wait.rs`) that may be cancelled while it sleeps out its place in GCRA's queue,
//! and of a caller's reservation (`src/reservation.rs`).

use super::{Limiter, RuleRefund};
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::ReserveError;
use crate::generations::{Generation, Operation};
use crate::replaced::{Replaceable, Replaced};
use crate::state::Refund;
use crate::versions::Version;
use std::cell::Cell;

/// A reserve of `n` units at `now_ns`, putting what giving the admission back takes in
/// `refund` (left as it was for a denial or a query).
#[derive(Clone, Copy)]
struct Reserve<'a> {
    now_ns: u64,
    n: u64,
    max_wait_ns: u64,
    refund: &'a Cell<Option<RuleRefund>>,
}

impl Operation for Reserve<'_> {
    type Output = Decision;

    fn run(self, rule: &Version<Generation>, tenancy: &Replaceable) -> Result<Decision, Replaced> {
        let (decision, refund) = (rule.decider).reserve_refundable_at(
            rule.state(),
            tenancy,
            self.now_ns,
            self.n,
            self.max_wait_ns,
        )?;
        if let Some(refund) = refund {
            RuleRefund::put(rule, refund, self.refund);
        }
        Ok(decision)
    }
}

impl Limiter {
    /// [`reserve_at`](Self::reserve_at), with what giving the units back takes if they
    /// were admitted ([`refund`](Self::refund) gives them back).
    ///
    /// # Errors
    /// As [`reserve_at`](Self::reserve_at).
    pub(crate) fn reserve_refundable_at(
        &self,
        n: u64,
        now_ns: u64,
        max_wait_ns: u64,
    ) -> Result<(Decision, Option<RuleRefund>), ReserveError> {
        let refund = Cell::new(None);
        let reserve = Reserve {
            now_ns,
            n,
            max_wait_ns,
            refund: &refund,
        };
        let check = move |decider: &Decider| decider.check_reserve(n);
        let decision = self.generations.decide(check, reserve)?;
        Ok((decision, refund.get()))
    }
}

impl RuleRefund {
    /// The refund as plain words (`src/reservation.rs`).
    pub(crate) fn to_words(self) -> [u64; 4] {
        let [word, before, after] = self.refund.to_words();
        [self.generation, word, before, after]
    }

    /// The refund [`to_words`](Self::to_words) wrote; any words make one, which gives
    /// nothing back unless its generation is in force and its word holds its `after`.
    pub(crate) fn from_words([generation, word, before, after]: [u64; 4]) -> Self {
        let refund = Refund::from_words([word, before, after]);
        Self { refund, generation }
    }
}
