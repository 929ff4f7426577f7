//! A share of a global rule (docs/leases.md): the rate and burst one lease grants, the
//! local GCRA that decides from it, and what a renewal makes of its state.

use super::rule::{Divided, SCALE};
use crate::algorithm::{Algorithm, Outcome};
use crate::config::Config;
use crate::decider::Decider;
use crate::sync::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// A share: `rate` millionths of the rule's rate, bursts of `burst` units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Share {
    /// Millionths of the rule's rate (0 to 1,000,000).
    pub rate: u64,
    /// Units at once.
    pub burst: u64,
}

impl Share {
    /// The local rule of this share of a GCRA rule whose emission interval is T: one unit
    /// every ⌈T·10⁶ / rate⌉ ns, never faster than the share, so the shares' rates never
    /// sum past the rule's; `None` for no share, one no local limiter holds (its burst
    /// times its interval past the timeline), which decides nothing, or a window's.
    pub(crate) fn config(self, divided: Divided) -> Option<Config> {
        let Divided::Gcra { interval_ns, .. } = divided else {
            return None;
        };
        if self.rate == 0 || self.burst == 0 {
            return None;
        }
        let interval =
            (u128::from(interval_ns) * u128::from(SCALE)).div_ceil(u128::from(self.rate));
        // Past the timeline: a rate of zero (Config::FOREVER), slower still than the share.
        let interval = u64::try_from(interval).unwrap_or(u64::MAX);
        let config = Config::gcra(1, Duration::from_nanos(interval)).with_burst(self.burst);
        config.validate().ok().map(|()| config)
    }

    /// [`config`](Self::config)'s rule.
    pub(crate) fn rule(self, divided: Divided) -> Option<Decider> {
        Decider::new(&self.config(divided)?).ok()
    }
}

/// The local rule of a GCRA share before its first lease, which empties it before it
/// decides: the rule's own interval, bursts of 1.
pub(crate) fn placeholder(divided: Divided) -> Decider {
    let Divided::Gcra { interval_ns, .. } = divided else {
        unreachable!("a GCRA share's rule is a GCRA's");
    };
    let config = Config::gcra(1, Duration::from_nanos(interval_ns));
    // The rule's T is valid with its burst B ≥ 1 (τ = B·T), so with a burst of 1.
    Decider::new(&config).expect("a rule's own interval, a burst of 1")
}

/// The state of a share's `rule` that `state` leaves without a token at `at`: its tokens
/// then are the fraction of one below 0 at most. A lease that starts afresh starts so, for
/// the tokens a holder saved before are no longer counted in Redis; and a holder's threads
/// that decided before `at` on a lease then valid find nothing more from after it.
pub(crate) fn emptied(rule: &Decider, state: u64, at: u64) -> u64 {
    // A query, then a reserve that waits as long as it takes: one unit more than the
    // whole tokens left takes the fraction too (a full bucket holds no fraction).
    let query = decide(rule, state, at, 0, 0).decision;
    let units = query.remaining.saturating_add(1).min(query.limit);
    decide(rule, state, at, units, u64::MAX)
        .update
        .unwrap_or(state)
}

/// The state of `new` that holds at `at` what `state` of `old` holds: a change of rule's
/// carry-over (docs/live-changes.md: GCRA keeps the tokens).
pub(crate) fn carried(old: &Decider, state: u64, at: u64, new: &Decider) -> u64 {
    let word = [AtomicU64::new(0)];
    // A one-word state: its words beyond the first are none.
    old.carry_over(&[], state, at, new, &word);
    // Relaxed: this thread's own word.
    word[0].load(Relaxed)
}

/// Decides `n ≤ limit` units at `now` on `state` by a share's rule, as a reserve willing
/// to wait `max_wait` (GCRA's; an allowance never waits): `Limiter::reserve_at`'s arithmetic.
pub(crate) fn decide(rule: &Decider, state: u64, now: u64, n: u64, max_wait: u64) -> Outcome<u64> {
    match rule {
        Decider::Gcra(gcra) => gcra.reserve(state, now, n, max_wait),
        Decider::Allowance(allowance) => allowance.decide(&state, now, n),
        _ => unreachable!("a share's rule is a GCRA's"),
    }
}
