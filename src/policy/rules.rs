//! How the engine takes from a policy's own limiters (`engine.rs`), and a `try_acquire`
//! now on them: on the cheap clock's bounds where those settle every rule, at the exact
//! time where they do not.

use super::engine::{Cost, Rules, Taken};
use super::Policy;
use crate::limiter::{Limiter, RuleRefund};
use crate::state::{Request, Settle, TryAcquire};
use crate::time::{Bounds, Monotonic, TimeSource};
use std::cell::Cell;
use std::convert::Infallible;

impl Policy {
    /// A try_acquire of checked `costs` now.
    #[inline(always)]
    pub(super) fn try_acquire_now(&self, costs: impl Cost) -> bool {
        if self.engine.is_query(costs) {
            return true;
        }
        let time = Monotonic;
        // On the cheap clock's bounds where the rules settle there, as a limiter's
        // `try_acquire` does: each rule's outcome then holds at every instant within them.
        // A request whose sliding logs need asking first (see `Engine::take`) takes the
        // exact time.
        let bounds = if self.engine.takers(costs) <= 1 {
            time.bounds()
        } else {
            None
        };
        if let Some(bounds) = bounds {
            // A rule the bounds leave undecided (an idle GCRA bucket) is decided at the
            // exact time, and so are the rules after it, if that time lies within the
            // bounds: the rules settled before it hold at that instant too.
            let mut exact = None;
            let taken = self.engine.take_each(
                &*self.rules,
                costs,
                // Into each of the engine's loops: called, a step costs more than the
                // settling it makes.
                #[inline(always)]
                |index, n, refund| {
                    let rule = &self.rules[index];
                    Ok(match exact {
                        None => rule
                            .step(Settle { bounds, n }, Some(refund))
                            .or_else(|| exactly(rule, n, bounds, refund, &mut exact)),
                        Some(now) => Some(rule.step(TryAcquire { now, n }, Some(refund))),
                    })
                },
            );
            match taken {
                Ok(Taken::All) => return true,
                Ok(Taken::Denied(_)) => return false,
                // A limiter's steps never fail.
                Ok(Taken::Undecided) | Err(_) => {}
            }
        }
        // A limiter's steps never fail.
        self.engine
            .try_acquire_at(&*self.rules, costs, time.now())
            .unwrap_or(false)
    }
}

/// A policy's own limiters, as the engine takes from them.
impl Rules for [Limiter] {
    type Refund = RuleRefund;
    /// A policy's own limiters are in no file: a step of a checked request never fails.
    type Error = Infallible;

    #[inline]
    fn swap<R: Request>(
        &self,
        rule: usize,
        request: R,
        refund: Option<&Cell<Option<RuleRefund>>>,
    ) -> Result<R::Out, Infallible> {
        Ok(self[rule].step(request, refund))
    }

    #[inline]
    fn refund(&self, rule: usize, refund: RuleRefund) {
        self[rule].refund(refund);
    }
}

/// A rule's step of a `try_acquire` that the cheap clock's bounds left undecided, at the
/// exact time read after them, if it lies within them (then the rules after it are decided
/// at that time too: `exact`). Out of line, so that the busy path, where the bounds settle
/// every rule, is the bounds' settling alone.
#[cold]
#[inline(never)]
fn exactly(
    rule: &Limiter,
    n: u64,
    bounds: Bounds,
    refund: &Cell<Option<RuleRefund>>,
    exact: &mut Option<u64>,
) -> Option<bool> {
    let now = Monotonic.now_after(bounds);
    (now <= bounds.latest).then(|| {
        *exact = Some(now);
        rule.step(TryAcquire { now, n }, Some(refund))
    })
}
