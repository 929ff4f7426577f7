//! Where a keyed policy's rules keep their state (a keyed table or a limiter each), and
//! how the engine takes from them for one key.

use super::super::engine::Rules;
use crate::decider::Decider;
use crate::error::KeyedAcquireError;
use crate::keyed::{KeyedLimiter, KeyedRefund, Located};
use crate::limiter::{Limiter, RuleRefund};
use crate::state::Request;
use std::cell::Cell;
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

impl<S: BuildHasher> Rules for ForKey<'_, S> {
    type Refund = ScopedRefund;
    type Error = KeyedAcquireError;

    fn swap<R: Request>(
        &self,
        rule: usize,
        request: R,
        refund: Option<&Cell<Option<ScopedRefund>>>,
    ) -> Result<R::Out, KeyedAcquireError> {
        Ok(match &self.rules[rule] {
            Scoped::PerKey(table) => {
                let (out, taken) = table.step(self.key, request)?;
                if let (Some(refund), Some(taken)) = (refund, taken) {
                    refund.set(Some(ScopedRefund::PerKey(taken)));
                }
                out
            }
            Scoped::Global(limiter) => {
                let Some(refund) = refund else {
                    return Ok(limiter.step(request, None));
                };
                let taken = Cell::new(None);
                let out = limiter.step(request, Some(&taken));
                if let Some(taken) = taken.get() {
                    refund.set(Some(ScopedRefund::Global(taken)));
                }
                out
            }
        })
    }

    fn refund(&self, rule: usize, refund: ScopedRefund) {
        match (&self.rules[rule], refund) {
            (Scoped::PerKey(table), ScopedRefund::PerKey(refund)) => {
                table.refund(refund);
            }
            (Scoped::Global(limiter), ScopedRefund::Global(refund)) => {
                limiter.refund(refund);
            }
            // A rule's refunds are its own kind: the engine gives each back to its rule.
            _ => {}
        }
    }
}
