//! A rule that never refills: a period of [`Config::FOREVER`](crate::Config::FOREVER), the
//! rate of zero. Every algorithm means the same by it: an allowance of C units over the
//! whole timeline, then nothing ever (GCRA: its burst B, so C = B, as a token bucket of
//! rate 0; the window algorithms and the log: their limit, so C = L, one window or one
//! period that never ends).
//!
//! The state is one word, the units used so far, `u ≤ C ≤` [`MAX_STATE`]: it only grows
//! and no time is in it. A request of n units is admitted iff `u + n ≤ C`, computed as
//! `n ≤ C − u` (`u + n` may not fit in 64 bits).
//!
//! Decision fields, "never" being `u64::MAX` (no `now + d` reaches it):
//! `remaining = C − u` after the decision; `retry_after_ns` is 0 when admitted, else
//! `u64::MAX`; `reset_after_ns` is `u64::MAX` once anything was used, else 0. A GCRA
//! reserve never waits: it is admitted with `wait_ns` 0 or denied as an acquire is.
//!
//! ```
//! use librate::{Config, Decision, Instant, Limiter};
//! use std::time::Duration;
//! // Three units, ever.
//! let trial = Limiter::new(&Config::gcra(3, Config::FOREVER)).unwrap();
//! assert!(trial.acquire_at(2, Instant::ZERO).unwrap().allowed);
//! let last = trial.acquire_at(1, Instant::ZERO + Duration::from_micros(1)).unwrap();
//! assert_eq!((last.remaining, last.reset_after()), (0, Decision::NEVER));
//! let denied = trial.acquire_at(1, Instant::MAX).unwrap();
//! assert_eq!((denied.allowed, denied.retry_after()), (false, Decision::NEVER));
//! ```

use super::{Algorithm, Outcome, Rule, Settled, MAX_STATE};
use crate::config::Algorithm as Configured;
use crate::decision::Decision;
use crate::error::{Bound, Breach, Field};

/// A validated rule of rate zero: C units, never refilled.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allowance {
    /// C: the units ever admitted.
    capacity: u64,
    /// The algorithm the configuration named: GCRA keeps its reserve.
    configured: Configured,
}

impl Allowance {
    /// The allowance of a configuration whose period is `FOREVER`: GCRA's burst (0 means
    /// `limit`), the others' `limit`.
    pub(crate) fn new(configured: Configured, limit: u64, burst: u64) -> Result<Self, Breach> {
        if limit == 0 {
            return Err(Breach::ZeroLimit);
        }
        let (field, capacity) = match configured {
            Configured::Gcra if burst > 0 => (Field::Burst, burst),
            _ => (Field::Limit, limit),
        };
        if capacity > MAX_STATE {
            return Err(Breach::LimitTooLarge(Some((
                field,
                Bound::AtMost(MAX_STATE),
            ))));
        }
        Ok(Self {
            capacity,
            configured,
        })
    }

    /// The algorithm the configuration named.
    pub(crate) fn configured(&self) -> Configured {
        self.configured
    }

    /// The units used, `u` read as at most C (a word from a file another process writes
    /// may hold anything).
    #[inline(always)]
    pub(crate) fn used(&self, word: u64) -> u64 {
        word.min(self.capacity)
    }
}

impl Rule for Allowance {
    /// C: the units ever admitted.
    #[inline(always)]
    fn limit(&self) -> u64 {
        self.capacity
    }
}

impl Algorithm<u64> for Allowance {
    /// The units used after the admission.
    type Update = u64;

    #[inline(always)]
    fn decide(&self, word: &u64, _now: u64, n: u64) -> Outcome<u64> {
        let used = self.used(*word);
        // `n` against what is left, never `used + n` against C: both may pass 2⁶³.
        let allowed = n <= self.capacity - used;
        let after = if allowed { used + n } else { used };
        let decision = Decision {
            allowed,
            limit: self.capacity,
            remaining: self.capacity - after,
            retry_after_ns: if allowed { 0 } else { u64::MAX },
            reset_after_ns: if after > 0 { u64::MAX } else { 0 },
            wait_ns: 0,
        };
        Outcome {
            decision,
            update: (allowed && n > 0).then_some(after),
        }
    }

    #[inline(always)]
    fn try_decide(&self, word: &u64, _now: u64, n: u64) -> Option<u64> {
        let used = self.used(*word);
        // As in `decide`: the sum is formed only once it is known to be at most C.
        (n <= self.capacity - used).then(|| used + n)
    }

    /// No time is in the state: every interval decides as any instant in it.
    #[inline(always)]
    fn settle(&self, word: &u64, earliest: u64, _latest: u64, n: u64) -> Settled<u64> {
        match self.try_decide(word, earliest, n) {
            Some(after) => Settled::Admit(after),
            None => Settled::Deny,
        }
    }

    /// Fresh only while nothing was used: the units never come back.
    fn is_fresh(&self, word: &u64, _now: u64) -> bool {
        self.used(*word) == 0
    }

    #[inline(always)]
    fn denied_through(&self, word: &u64, _latest: u64, n: u64) -> bool {
        n > self.capacity - self.used(*word)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capacity_is_the_burst_for_gcra_and_the_limit_otherwise() {
        let gcra = Allowance::new(Configured::Gcra, 10, 3).unwrap();
        assert_eq!(gcra.limit(), 3);
        assert_eq!(Allowance::new(Configured::Gcra, 10, 0).unwrap().limit(), 10);
        let log = Allowance::new(Configured::SlidingLog, 10, 3).unwrap();
        assert_eq!(log.limit(), 10);
        assert_eq!(
            Allowance::new(Configured::FixedWindow, 0, 0).unwrap_err(),
            Breach::ZeroLimit
        );
    }

    #[test]
    fn the_capacity_is_at_most_max_state() {
        let at_most = |field| Breach::LimitTooLarge(Some((field, Bound::AtMost(MAX_STATE))));
        assert!(Allowance::new(Configured::Gcra, u64::MAX, MAX_STATE).is_ok());
        assert_eq!(
            Allowance::new(Configured::Gcra, 1, MAX_STATE + 1).unwrap_err(),
            at_most(Field::Burst)
        );
        assert!(Allowance::new(Configured::Gcra, MAX_STATE, 0).is_ok());
        assert_eq!(
            Allowance::new(Configured::Gcra, MAX_STATE + 1, 0).unwrap_err(),
            at_most(Field::Limit)
        );
        // The log's cap does not apply: no log is kept.
        assert!(Allowance::new(Configured::SlidingLog, MAX_STATE, 9).is_ok());
        assert_eq!(
            Allowance::new(Configured::SlidingLog, MAX_STATE + 1, 9).unwrap_err(),
            at_most(Field::Limit)
        );
    }

    #[test]
    fn admits_the_capacity_once_and_reports_never() {
        let allowance = Allowance::new(Configured::FixedWindow, 5, 0).unwrap();
        let first = allowance.decide(&0, 7, 0);
        assert_eq!(first.update, None);
        assert_eq!(
            (first.decision.remaining, first.decision.reset_after_ns),
            (5, 0)
        );
        let taken = allowance.decide(&0, 7, 4);
        assert_eq!(taken.update, Some(4));
        assert_eq!(taken.decision.remaining, 1);
        assert_eq!(taken.decision.reset_after_ns, u64::MAX);
        let denied = allowance.decide(&4, u64::MAX, 2);
        assert_eq!(denied.update, None);
        assert!(!denied.decision.allowed);
        assert_eq!(denied.decision.retry_after_ns, u64::MAX);
        assert_eq!(denied.decision.remaining, 1);
        assert_eq!(allowance.settle(&4, 0, u64::MAX, 1), Settled::Admit(5));
        assert_eq!(allowance.settle(&5, 0, 0, 1), Settled::Deny);
        assert!(allowance.is_fresh(&0, u64::MAX) && !allowance.is_fresh(&1, 0));
    }

    #[test]
    fn a_capacity_past_half_the_range_never_overflows() {
        // C = 2^64 - 257: after 2^63 units, a request of 2^63 would sum to 2^64, past u64.
        // What is left is 2^63 - 257, so it is denied, and 2^63 - 257 is admitted.
        let allowance = Allowance::new(Configured::Gcra, 1, MAX_STATE).unwrap();
        let used = 1 << 63;
        let denied = allowance.decide(&used, 0, 1 << 63);
        assert!(!denied.decision.allowed);
        assert_eq!(denied.decision.remaining, (1 << 63) - 257);
        assert_eq!(denied.update, None);
        assert_eq!(allowance.try_decide(&used, 0, 1 << 63), None);
        assert!(allowance.denied_through(&used, 0, 1 << 63));
        assert_eq!(allowance.settle(&used, 0, 0, 1 << 63), Settled::Deny);
        let last = (1 << 63) - 257;
        let admitted = allowance.decide(&used, 0, last);
        assert_eq!(admitted.update, Some(MAX_STATE));
        assert_eq!(admitted.decision.remaining, 0);
        assert_eq!(allowance.try_decide(&used, 0, last), Some(MAX_STATE));
        assert!(!allowance.denied_through(&used, 0, last));
    }
}
