//! What a limiter runs on the generation in force, one type an operation: each public
//! method's decision, made again on the next generation when a change of rule replaced
//! the words it ran on (`generations.rs`).

use super::RuleRefund;
use crate::decision::Decision;
use crate::generations::{Generation, Operation};
use crate::replaced::{Replaceable, Replaced};
use crate::state::Request;
use crate::time::{ClockHint, Hinted, TimeSource};
use crate::versions::Version;
use std::cell::Cell;

/// [`Limiter::try_acquire`](crate::Limiter::try_acquire) of `n` units, by `time`.
#[derive(Clone, Copy)]
pub(super) struct TryAcquire<'a, C> {
    pub(super) time: Hinted<C, &'a ClockHint>,
    pub(super) n: u64,
}

impl<C: TimeSource> Operation for TryAcquire<'_, C> {
    type Output = bool;

    #[inline(always)]
    fn run(self, rule: &Version<Generation>, tenancy: &Replaceable) -> Result<bool, Replaced> {
        (rule.decider).try_acquire(rule.state(), tenancy, self.time, self.n)
    }
}

/// An acquire (`max_wait_ns` `None`) or a reserve of `n` units at `now_ns`.
#[derive(Clone, Copy)]
pub(super) struct Acquire {
    pub(super) now_ns: u64,
    pub(super) n: u64,
    pub(super) max_wait_ns: Option<u64>,
}

impl Operation for Acquire {
    type Output = Decision;

    #[inline(always)]
    fn run(self, rule: &Version<Generation>, tenancy: &Replaceable) -> Result<Decision, Replaced> {
        let max_wait_ns = self.max_wait_ns.unwrap_or(0);
        (rule.decider).acquire_at(rule.state(), tenancy, self.now_ns, self.n, max_wait_ns)
    }
}

/// [`Limiter::reset`](crate::Limiter::reset).
#[derive(Clone, Copy)]
pub(super) struct Reset;

impl Operation for Reset {
    type Output = ();

    fn run(self, rule: &Version<Generation>, tenancy: &Replaceable) -> Result<(), Replaced> {
        (rule.decider).reset(rule.state(), tenancy)
    }
}

/// A [`Request`] (`state/request.rs`): a refundable acquire, a report-free acquire or a
/// settling of a policy's step, or a peek. What giving the units back takes, if the
/// decision stored an admission that can give them back, is put in `refund` when there is
/// one (and `refund` left as it was otherwise): a policy's outcome is then a `bool` in a
/// register, not a refund copied out through every layer of the decision.
#[derive(Clone, Copy)]
pub(super) struct Swap<'a, R> {
    pub(super) request: R,
    pub(super) refund: Option<&'a Cell<Option<RuleRefund>>>,
}

impl<R: Request> Operation for Swap<'_, R> {
    type Output = R::Out;

    #[inline(always)]
    fn run(self, rule: &Version<Generation>, tenancy: &Replaceable) -> Result<R::Out, Replaced> {
        // By reference: a copy of the decider would be one more on the stack.
        let (decider, state) = (&rule.decider, rule.state());
        let Some(into) = self.refund else {
            return decider.swap(state, tenancy, self.request);
        };
        let keep = |refund| RuleRefund::put(rule, refund, into);
        decider.swap_refundable(state, tenancy, self.request, keep)
    }
}
