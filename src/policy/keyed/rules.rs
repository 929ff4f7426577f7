//! Where a keyed policy's rules keep their state (a keyed table or a limiter each), and
//! how the engine takes from them for one key.

use super::super::engine::Rules;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::Error;
use crate::keyed::{KeyedLimiter, KeyedRefund, Located};
use crate::limiter::{Limiter, RuleRefund};
use std::hash::BuildHasher;

/// Where a rule of a keyed policy keeps its state.
// A policy has a few rules, in one boxed slice: the bytes a smaller variant leaves unused
// cost less than a pointer to follow to a boxed limiter on every decision.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(in crate::policy) enum Scoped<S> {
    PerKey(KeyedLimiter<S>),
    Global(Limiter),
}

impl<S> Scoped<S> {
    pub(in crate::policy) fn decider(&self) -> Decider {
        match self {
            Self::PerKey(table) => table.decider(),
            Self::Global(limiter) => limiter.rule(),
        }
    }
}

/// What giving back an admission of a keyed policy's rule takes.
#[derive(Clone, Copy)]
pub(super) enum ScopedRefund {
    PerKey(KeyedRefund),
    Global(RuleRefund),
}

/// A keyed policy's rules, for one key.
pub(super) struct ForKey<'a, S> {
    pub(super) rules: &'a [Scoped<S>],
    /// The key as the per-key rules' tables locate it: they share one hasher and one slot
    /// count, so one location (one hash of the key) serves them all.
    pub(super) key: Located,
}

impl<S: BuildHasher> ForKey<'_, S> {
    /// A step on rule `rule`: `per_key` on its table, `global` on its limiter.
    #[inline(always)]
    fn take<A>(
        &self,
        rule: usize,
        per_key: impl FnOnce(&KeyedLimiter<S>) -> Result<(A, Option<KeyedRefund>), Error>,
        global: impl FnOnce(&Limiter) -> (A, Option<RuleRefund>),
    ) -> Result<(A, Option<ScopedRefund>), Error> {
        Ok(match &self.rules[rule] {
            Scoped::PerKey(table) => {
                let (outcome, refund) = per_key(table)?;
                (outcome, refund.map(ScopedRefund::PerKey))
            }
            Scoped::Global(limiter) => {
                let (outcome, refund) = global(limiter);
                (outcome, refund.map(ScopedRefund::Global))
            }
        })
    }
}

impl<S: BuildHasher> Rules for ForKey<'_, S> {
    type Refund = ScopedRefund;

    fn peek_at(&self, rule: usize, n: u64, now_ns: u64) -> Decision {
        match &self.rules[rule] {
            Scoped::PerKey(table) => table.peek_at(self.key, n, now_ns),
            Scoped::Global(limiter) => limiter.peek_at(n, now_ns),
        }
    }

    fn acquire_refundable_at(
        &self,
        rule: usize,
        n: u64,
        now_ns: u64,
    ) -> Result<(Decision, Option<ScopedRefund>), Error> {
        self.take(
            rule,
            |table| table.acquire_refundable_at(self.key, n, now_ns),
            |limiter| limiter.acquire_refundable_at(n, now_ns),
        )
    }

    fn try_acquire_refundable_at(
        &self,
        rule: usize,
        n: u64,
        now_ns: u64,
    ) -> Result<(bool, Option<ScopedRefund>), Error> {
        self.take(
            rule,
            |table| table.try_acquire_refundable_at(self.key, n, now_ns),
            |limiter| limiter.try_acquire_refundable_at(n, now_ns),
        )
    }

    fn refund(&self, rule: usize, refund: ScopedRefund) {
        match (&self.rules[rule], refund) {
            (Scoped::PerKey(table), ScopedRefund::PerKey(refund)) => table.refund(refund),
            (Scoped::Global(limiter), ScopedRefund::Global(refund)) => {
                limiter.refund(refund);
            }
            // A rule's refunds are its own kind: the engine gives each back to its rule.
            _ => {}
        }
    }
}
