//! A share of a global rule (docs/leases.md): the rate and burst one lease grants, and the
//! local GCRA that decides from it.

use super::rule::{Divided, SCALE};
use crate::config::Config;
use crate::limiter::Limiter;
use crate::time::Instant;
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
}

/// Leaves `limiter` (a GCRA) without a token at `at`: its tokens then are the
/// fraction of one below 0 at most. A lease that starts afresh starts so, for the tokens
/// a holder saved before are no longer counted in Redis; and a holder's threads that
/// decided before `at` on a lease then valid find nothing more from after it.
pub(crate) fn empty(limiter: &Limiter, at: Instant) {
    // A query, then a reserve that waits as long as it takes: one unit more than the
    // whole tokens left takes the fraction too (a full bucket holds no fraction).
    // Another thread's admission in between only leaves fewer.
    if let Ok(query) = limiter.acquire_at(0, at) {
        let units = query.remaining.saturating_add(1).min(query.limit);
        // Only n above the limit fails, which `units` is not.
        let _ = limiter.reserve_at(units, at, Duration::MAX);
    }
}
