//! GCRA, the generic cell rate algorithm (DESIGN §4): pure arithmetic on the theoretical
//! arrival time (TAT). No atomics and no clock: the caller supplies the stored TAT and
//! `now`, and stores the new TAT if one is returned.
//!
//! With emission interval T = ⌊P / L⌋ and tolerance τ = B·T, a request of n units at t is
//! admitted iff `max(TAT, t) + n·T − t ≤ τ (+ max_wait for a reserve)`, and then
//! `TAT := max(TAT, t) + n·T`. A fresh cell has TAT = 0, which is full at any `t`.
//!
//! The TAT never exceeds [`MAX_STATE`] = 2^64 − 3 ns (year 2554 of `CLOCK_MONOTONIC`): the
//! two values above it mark keyed-table slots (see `cell.rs`), so a request whose new TAT
//! would pass it is denied, as if those last two nanoseconds were beyond the end of time.

use crate::cell::MAX_STATE;
use crate::divisor::Divisor;
use crate::{ConfigError, Decision};

/// A validated GCRA configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gcra {
    /// T: nanoseconds one unit occupies.
    emission_interval: u64,
    /// B: the most units admitted at once.
    burst: u64,
    /// τ = B·T: how far the TAT may run ahead of `now`.
    tolerance: u64,
    /// T again, prepared to turn nanoseconds of room into whole units without a `div`.
    units_in: Divisor,
}

/// How a decision changes the stored TAT.
pub(crate) type Outcome = (Decision, Option<u64>);

impl Gcra {
    pub(crate) fn new(limit: u64, period_ns: u64, burst: u64) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if period_ns == 0 {
            return Err(ConfigError::ZeroPeriod);
        }
        let emission_interval = period_ns / limit;
        if emission_interval == 0 {
            return Err(ConfigError::RateTooHigh);
        }
        let burst = if burst == 0 { limit } else { burst };
        // τ ≤ MAX_STATE, so a fresh bucket is full at t = 0: its B units fit below the
        // largest storable TAT.
        let tolerance = burst
            .checked_mul(emission_interval)
            .filter(|&tolerance| tolerance <= MAX_STATE)
            .ok_or(ConfigError::ToleranceTooLarge)?;
        Ok(Self {
            emission_interval,
            burst,
            tolerance,
            units_in: Divisor::new(emission_interval),
        })
    }

    /// B: the decision's `limit`, and the largest `n` that can ever be admitted.
    #[inline]
    pub(crate) fn burst(&self) -> u64 {
        self.burst
    }

    /// The new TAT if `1 ≤ n ≤ burst` units at `now` are admitted with at most `max_wait`
    /// of waiting: the admission rule alone, without the decision's report.
    #[inline]
    pub(crate) fn admit(&self, tat: u64, now: u64, n: u64, max_wait: u64) -> Option<u64> {
        self.next_tat(tat, now, n)
            .filter(|&new_tat| new_tat - now <= self.tolerance.saturating_add(max_wait))
    }

    /// `max(tat, now) + n·T` for `n ≤ burst`, the TAT an admission would store, if it is
    /// storable: at most [`MAX_STATE`].
    #[inline]
    fn next_tat(&self, tat: u64, now: u64, n: u64) -> Option<u64> {
        // n ≤ B, so n·T ≤ B·T = τ, which fits in u64.
        let cost = n * self.emission_interval;
        tat.max(now)
            .checked_add(cost)
            .filter(|&new_tat| new_tat <= MAX_STATE)
    }

    /// Decides `n ≤ burst` units at `now` against the stored `tat`, waiting at most
    /// `max_wait` (0 for a plain acquire). `n == 0` is a query and never writes.
    #[inline(always)]
    pub(crate) fn decide(&self, tat: u64, now: u64, n: u64, max_wait: u64) -> Outcome {
        debug_assert!(n <= self.burst, "callers reject n > burst first");
        if n == 0 {
            // A query: admitted, changes nothing, even when a reserve has queued the
            // bucket past its tolerance.
            return (
                Decision {
                    allowed: true,
                    ..self.report(tat, now)
                },
                None,
            );
        }
        match self.admit(tat, now, n, max_wait) {
            Some(new_tat) => {
                let wait_ns = (new_tat - now).saturating_sub(self.tolerance);
                let decision = Decision {
                    allowed: true,
                    wait_ns,
                    ..self.report(new_tat, now)
                };
                (decision, Some(new_tat))
            }
            None => {
                // At now + d the same request is admitted iff
                // max(tat, now + d) + n·T − (now + d) ≤ τ + max_wait and the new TAT is
                // at most MAX_STATE.
                let retry_after_ns = match self.next_tat(tat, now, n) {
                    // Denied with a storable TAT means tat > now: the smallest d solves
                    // tat + n·T − (now + d) = τ + max_wait.
                    Some(due) => (due - now)
                        .saturating_sub(self.tolerance)
                        .saturating_sub(max_wait),
                    // max(tat, now + d) + n·T only grows with d: never storable.
                    None => u64::MAX,
                };
                let decision = Decision {
                    retry_after_ns,
                    ..self.report(tat, now)
                };
                (decision, None)
            }
        }
    }

    /// The fields that follow from the TAT after a decision: `allowed`, `retry_after_ns`
    /// and `wait_ns` are left at their "denied, no wait" defaults.
    #[inline(always)]
    fn report(&self, tat: u64, now: u64) -> Decision {
        // `debt` is how far the bucket is drained: the TAT's lead over now.
        let debt = tat.saturating_sub(now);
        let mut remaining = self.units_in.divide(self.tolerance.saturating_sub(debt));
        let mut reset_after_ns = debt;
        let start = tat.max(now);
        if start.saturating_add(self.tolerance) > MAX_STATE {
            // The end of the timeline: a TAT past MAX_STATE cannot be stored, so only the
            // units that fit can be admitted, and the bucket can never be full again.
            remaining = remaining.min(self.units_in.divide(MAX_STATE.saturating_sub(start)));
            reset_after_ns = u64::MAX;
        }
        Decision {
            allowed: false,
            limit: self.burst,
            remaining,
            retry_after_ns: 0,
            reset_after_ns,
            wait_ns: 0,
        }
    }

    /// Decides a plain acquire of `1 ≤ n ≤ burst` for every instant in
    /// `[earliest, latest]` at once: `Some(None)` if all of them deny, `Some(Some(tat'))`
    /// if all of them admit and store the same `tat'`, `None` if the outcome depends on
    /// where in the interval `now` lies.
    #[inline]
    pub(crate) fn settle(
        &self,
        tat: u64,
        earliest: u64,
        latest: u64,
        n: u64,
    ) -> Option<Option<u64>> {
        // n ≤ B, so n·T ≤ B·T = τ, which fits in u64. A TAT that cannot be stored (past
        // MAX_STATE, or past u64::MAX) is left to the precise path, which denies it.
        let new_tat = tat
            .checked_add(n * self.emission_interval)
            .filter(|&new_tat| new_tat <= MAX_STATE)?;
        // Admission at t ⟺ t ≥ tat + n·T − τ (for t < tat; for t ≥ tat it always holds).
        let due = new_tat.saturating_sub(self.tolerance);
        if latest < due {
            return Some(None);
        }
        // While now ≤ tat the new TAT is tat + n·T whatever now is exactly.
        (latest <= tat && earliest >= due).then_some(Some(new_tat))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn rejects_invalid_configs() {
        assert_eq!(Gcra::new(0, SECOND, 0).unwrap_err(), ConfigError::ZeroLimit);
        assert_eq!(Gcra::new(1, 0, 0).unwrap_err(), ConfigError::ZeroPeriod);
        assert_eq!(Gcra::new(10, 9, 0).unwrap_err(), ConfigError::RateTooHigh);
        assert_eq!(
            Gcra::new(1, u64::MAX, 2).unwrap_err(),
            ConfigError::ToleranceTooLarge
        );
    }

    #[test]
    fn the_tat_never_passes_max_state() {
        // T = 10, τ = 10.
        let gcra = Gcra::new(1, 10, 0).unwrap();
        let (last, new_tat) = gcra.decide(0, MAX_STATE - 10, 1, 0);
        assert!(last.allowed);
        assert_eq!(new_tat, Some(MAX_STATE));
        let (past, new_tat) = gcra.decide(0, MAX_STATE - 9, 1, 0);
        assert!(!past.allowed);
        assert_eq!((new_tat, past.retry_after_ns), (None, u64::MAX));
        // Even a reserve willing to wait forever cannot reach the slot markers.
        let (reserve, new_tat) = gcra.decide(MAX_STATE, MAX_STATE, 1, u64::MAX);
        assert!(!reserve.allowed);
        assert_eq!((new_tat, reserve.retry_after_ns), (None, u64::MAX));
        // A query is always admitted and never writes.
        let (query, new_tat) = gcra.decide(0, u64::MAX, 0, 0);
        assert!(query.allowed);
        assert_eq!(new_tat, None);
        // The coarse-clock shortcut leaves the capped case to the precise path.
        assert_eq!(gcra.settle(MAX_STATE, MAX_STATE, MAX_STATE, 1), None);
    }

    #[test]
    fn settle_agrees_with_decide_at_every_instant() {
        // L=4 per 400 ns: T=100, τ=400. Sweep TATs and intervals across the edges.
        let gcra = Gcra::new(4, 400, 0).unwrap();
        let (mut admits, mut denials) = (0, 0);
        for tat in [0u64, 50, 300, 500, 1000] {
            for earliest in (0..1100).step_by(25) {
                for width in [0u64, 10, 100, 300] {
                    for n in 1..=4 {
                        let latest = earliest + width;
                        let mut each = (earliest..=latest).map(|t| gcra.decide(tat, t, n, 0).1);
                        match gcra.settle(tat, earliest, latest, n) {
                            Some(None) => {
                                denials += 1;
                                assert!(each.all(|new_tat| new_tat.is_none()));
                            }
                            Some(Some(settled)) => {
                                admits += 1;
                                assert!(each.all(|new_tat| new_tat == Some(settled)));
                            }
                            None => {}
                        }
                    }
                }
            }
        }
        assert!(admits > 100 && denials > 100, "both shortcuts exercised");
    }
}
