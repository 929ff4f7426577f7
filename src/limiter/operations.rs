//! What a limiter runs on the generation in force, one type an operation: each public
//! method's decision, made again on the next generation when a change of rule replaced
//! the words it ran on (`generations.rs`).

use super::RuleRefund;
use crate::decision::Decision;
use crate::generations::{Generation, Operation};
use crate::replaced::{Replaceable, Replaced};
use crate::time::{Bounds, ClockHint, Hinted, TimeSource};
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

/// [`Limiter::acquire_refundable_at`](crate::Limiter::acquire_refundable_at) of `n` units at
/// `now_ns`.
#[derive(Clone, Copy)]
pub(super) struct AcquireRefundable {
    pub(super) now_ns: u64,
    pub(super) n: u64,
}

impl Operation for AcquireRefundable {
    type Output = (Decision, Option<RuleRefund>);

    #[inline(always)]
    fn run(
        self,
        rule: &Version<Generation>,
        tenancy: &Replaceable,
    ) -> Result<Self::Output, Replaced> {
        let state = rule.state();
        let (decision, refund) =
            (rule.decider).acquire_refundable_at(state, tenancy, self.now_ns, self.n)?;
        Ok((decision, RuleRefund::on(rule, refund)))
    }
}

/// [`Limiter::try_acquire_into`](crate::Limiter::try_acquire_into) of `n` units at `now_ns`, the
/// refund put in `refund`.
#[derive(Clone, Copy)]
pub(super) struct TryAcquireRefundable<'a> {
    pub(super) now_ns: u64,
    pub(super) n: u64,
    pub(super) refund: &'a Cell<Option<RuleRefund>>,
}

impl Operation for TryAcquireRefundable<'_> {
    type Output = bool;

    #[inline(always)]
    fn run(self, rule: &Version<Generation>, tenancy: &Replaceable) -> Result<bool, Replaced> {
        let refund = |refund| RuleRefund::put(rule, refund, self.refund);
        (rule.decider).try_acquire_into(rule.state(), tenancy, self.now_ns, self.n, refund)
    }
}

/// [`Limiter::settle_into`](crate::Limiter::settle_into) of `n` units within `bounds`, the refund
/// put in `refund`.
#[derive(Clone, Copy)]
pub(super) struct SettleRefundable<'a> {
    pub(super) bounds: Bounds,
    pub(super) n: u64,
    pub(super) refund: &'a Cell<Option<RuleRefund>>,
}

impl Operation for SettleRefundable<'_> {
    type Output = Option<bool>;

    #[inline(always)]
    fn run(
        self,
        rule: &Version<Generation>,
        tenancy: &Replaceable,
    ) -> Result<Option<bool>, Replaced> {
        let refund = |refund| RuleRefund::put(rule, refund, self.refund);
        (rule.decider).settle_into(rule.state(), tenancy, self.bounds, self.n, refund)
    }
}

/// [`Limiter::peek_at`](crate::Limiter::peek_at) of `n` units at `now_ns`.
#[derive(Clone, Copy)]
pub(super) struct Peek {
    pub(super) now_ns: u64,
    pub(super) n: u64,
}

impl Operation for Peek {
    type Output = Decision;

    #[inline(always)]
    fn run(self, rule: &Version<Generation>, tenancy: &Replaceable) -> Result<Decision, Replaced> {
        (rule.decider).peek_at(rule.state(), tenancy, self.now_ns, self.n)
    }
}
