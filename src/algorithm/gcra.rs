//! GCRA, the generic cell rate algorithm (docs/decision.md): pure arithmetic on the theoretical
//! arrival time (TAT). No atomics and no clock: the caller supplies the stored TAT and
//! `now`, and stores the new TAT if one is returned.
//!
//! With emission interval T = ⌊P / L⌋ and tolerance τ = B·T, a request of n units at t is
//! admitted iff `max(TAT, t) + n·T − t ≤ τ (+ max_wait for a reserve)`, and then
//! `TAT := max(TAT, t) + n·T`. A fresh cell has TAT = 0, which is full at any `t`.
//!
//! The TAT never exceeds [`MAX_STATE`] = 2^64 − 257 ns (year 2554 of `CLOCK_MONOTONIC`): the
//! values above it are the state layer's (see `algorithm/mod.rs`), so a request whose
//! new TAT would pass it is denied, as if those last nanoseconds were beyond the end of
//! time.

use super::divisor::Divisor;
use super::{Algorithm, Outcome, Rule, Settled, MAX_STATE};
use crate::decision::Decision;
use crate::error::{Bound, Breach, Field};

/// A validated GCRA configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gcra {
    /// T: nanoseconds one unit occupies.
    pub(super) emission_interval: u64,
    /// B: the most units admitted at once.
    burst: u64,
    /// τ = B·T: how far the TAT may run ahead of `now`.
    pub(super) tolerance: u64,
    /// T again, prepared to turn nanoseconds of room into whole units without a `div`.
    units_in: Divisor,
}

/// The largest limit GCRA accepts with `period_ns` P and `burst` B (0: the limit), for a
/// limit above P, whose emission interval T = ⌊P / L⌋ is 0.
///
/// Every L ≤ P has T ≥ 1, and L = P the least T, 1. With a burst, τ = B·1 there: the
/// bound is P if B ≤ [`MAX_STATE`], else no limit will do. With burst 0, τ = L·T: if
/// P ≤ MAX_STATE, L = P gives τ = P, accepted; else (P < 2·MAX_STATE) every L in
/// (MAX_STATE, P] has T = 1 and τ = L, rejected, and L = MAX_STATE has T = 1, τ =
/// MAX_STATE, accepted.
fn most_limit(period_ns: u64, burst: u64) -> Option<(Field, Bound)> {
    let most = match burst {
        0 => period_ns.min(MAX_STATE),
        burst if burst <= MAX_STATE => period_ns,
        _ => return None,
    };
    Some((Field::Limit, Bound::AtMost(most)))
}

/// The field and bound that mend a tolerance B·T above [`MAX_STATE`], with T =
/// `emission_interval` ≥ 1 from `limit` L and some period P.
///
/// With a burst B: the largest B, ⌊MAX_STATE / T⌋, if it is at least 1; else the largest
/// period, P ≤ (⌊MAX_STATE / B⌋ + 1)·L − 1 (⌊P / L⌋ ≤ ⌊MAX_STATE / B⌋), if B ≤ MAX_STATE.
/// With burst 0 (B = L): the largest period, P ≤ (⌊MAX_STATE / L⌋ + 1)·L − 1, if L ≤
/// MAX_STATE. Each bound lies below the period rejected, so it is one that ends.
fn tolerance_fix(limit: u64, emission_interval: u64, burst: u64) -> Option<(Field, Bound)> {
    if burst > 0 && MAX_STATE / emission_interval >= 1 {
        return Some((Field::Burst, Bound::AtMost(MAX_STATE / emission_interval)));
    }
    let units = if burst == 0 { limit } else { burst };
    let intervals = MAX_STATE / units; // the largest T accepted
    if intervals == 0 {
        return None;
    }
    let most = u64::try_from((u128::from(intervals) + 1) * u128::from(limit) - 1).ok()?;
    Some((Field::PeriodNs, Bound::AtMost(most)))
}

impl Gcra {
    pub(crate) fn new(limit: u64, period_ns: u64, burst: u64) -> Result<Self, Breach> {
        if limit == 0 {
            return Err(Breach::ZeroLimit);
        }
        if period_ns == 0 {
            return Err(Breach::ZeroPeriod);
        }
        let emission_interval = period_ns / limit;
        if emission_interval == 0 {
            return Err(Breach::RateTooHigh(most_limit(period_ns, burst)));
        }
        let units = if burst == 0 { limit } else { burst };
        // τ ≤ MAX_STATE, so a fresh bucket is full at t = 0: its B units fit below the
        // largest storable TAT.
        let tolerance = units
            .checked_mul(emission_interval)
            .filter(|&tolerance| tolerance <= MAX_STATE)
            .ok_or_else(|| {
                Breach::ToleranceTooLarge(tolerance_fix(limit, emission_interval, burst))
            })?;
        Ok(Self {
            emission_interval,
            burst: units,
            tolerance,
            units_in: Divisor::new(emission_interval),
        })
    }

    /// The words of a rule as [`to_words`](Self::to_words) gives them.
    pub(crate) const WORDS: usize = 5;

    /// The rule as words (T, B, τ and the prepared divisor), for a state that keeps its
    /// rule beside it in atomic words, where a change of rule writes them (a lease's
    /// share, `lease/gcra_share.rs`).
    pub(crate) fn to_words(self) -> [u64; Self::WORDS] {
        let [magic, shift] = self.units_in.to_words();
        [
            self.emission_interval,
            self.burst,
            self.tolerance,
            magic,
            shift,
        ]
    }

    /// The rule [`to_words`](Self::to_words) gave `words` for. T ≥ 1 is the caller's
    /// check: words of no rule decide nothing.
    pub(crate) fn from_words(words: [u64; Self::WORDS]) -> Self {
        let [emission_interval, burst, tolerance, magic, shift] = words;
        Self {
            emission_interval,
            burst,
            tolerance,
            units_in: Divisor::from_words([magic, shift]),
        }
    }

    /// The new TAT if `1 ≤ n ≤ burst` units at `now` are admitted with at most `max_wait`
    /// of waiting: the admission rule alone, without the decision's report.
    #[inline(always)]
    fn admitted(&self, tat: u64, now: u64, n: u64, max_wait: u64) -> Option<u64> {
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

    /// Decides `n ≤ burst` units at `now` against the stored `tat`, as a reserve willing
    /// to wait at most `max_wait` (0: exactly an acquire). `n == 0` is a query and never
    /// writes.
    #[inline(always)]
    pub(crate) fn reserve(&self, tat: u64, now: u64, n: u64, max_wait: u64) -> Outcome<u64> {
        debug_assert!(n <= self.burst, "callers reject n > burst first");
        if n == 0 {
            // A query: admitted, changes nothing, even when a reserve has queued the
            // bucket past its tolerance.
            return Outcome {
                decision: Decision {
                    allowed: true,
                    ..self.report(tat, now)
                },
                update: None,
            };
        }
        match self.admitted(tat, now, n, max_wait) {
            Some(new_tat) => {
                let wait_ns = (new_tat - now).saturating_sub(self.tolerance);
                let decision = Decision {
                    allowed: true,
                    wait_ns,
                    ..self.report(new_tat, now)
                };
                Outcome {
                    decision,
                    update: Some(new_tat),
                }
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
                Outcome {
                    decision,
                    update: None,
                }
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
}

impl Rule for Gcra {
    /// B: the most units admitted at once.
    #[inline(always)]
    fn limit(&self) -> u64 {
        self.burst
    }
}

impl Algorithm<u64> for Gcra {
    /// The new TAT.
    type Update = u64;
    const PEEKS: bool = true;

    #[inline(always)]
    fn decide(&self, tat: &u64, now: u64, n: u64) -> Outcome<u64> {
        self.reserve(*tat, now, n, 0)
    }

    #[inline(always)]
    fn try_decide(&self, tat: &u64, now: u64, n: u64) -> Option<u64> {
        self.admitted(*tat, now, n, 0)
    }

    /// While `now ≤ tat` the new TAT is `tat + n·T` whatever `now` is exactly, and
    /// admission at t ⟺ t ≥ tat + n·T − τ: so an interval ending before that instant
    /// denies throughout, and one lying between it and the TAT admits throughout.
    #[inline(always)]
    fn settle(&self, tat: &u64, earliest: u64, latest: u64, n: u64) -> Settled<u64> {
        // n ≤ B, so n·T ≤ B·T = τ, which fits in u64. A TAT that cannot be stored (past
        // MAX_STATE, or past u64::MAX) is left to the exact path, which denies it.
        let Some(new_tat) = tat
            .checked_add(n * self.emission_interval)
            .filter(|&new_tat| new_tat <= MAX_STATE)
        else {
            return Settled::Undecided;
        };
        let due = new_tat.saturating_sub(self.tolerance);
        if latest < due {
            Settled::Deny
        } else if latest <= *tat && earliest >= due {
            Settled::Admit(new_tat)
        } else {
            Settled::Undecided
        }
    }

    /// Fresh once the TAT is not ahead of `now`: the bucket is full.
    #[inline]
    fn is_fresh(&self, tat: &u64, now: u64) -> bool {
        *tat <= now
    }

    /// An idle bucket (TAT ≤ now) admits, and its new TAT, `now + n·T`, depends on the
    /// exact time.
    #[inline(always)]
    fn needs_exact(&self, tat: &u64, passed: u64, _n: u64) -> bool {
        *tat <= passed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    /// The reserve's outcome as a pair, as the tests below read it.
    fn decide(gcra: &Gcra, tat: u64, now: u64, n: u64, max_wait: u64) -> (Decision, Option<u64>) {
        let outcome = gcra.reserve(tat, now, n, max_wait);
        (outcome.decision, outcome.update)
    }

    /// `settle` as the nested option the tests below read: `Some(None)` deny,
    /// `Some(Some(tat))` admit, `None` undecided.
    fn settle(gcra: &Gcra, tat: u64, earliest: u64, latest: u64, n: u64) -> Option<Option<u64>> {
        match gcra.settle(&tat, earliest, latest, n) {
            Settled::Admit(new_tat) => Some(Some(new_tat)),
            Settled::Deny => Some(None),
            Settled::Undecided => None,
        }
    }

    #[test]
    fn rejects_invalid_configs() {
        assert_eq!(Gcra::new(0, SECOND, 0).unwrap_err(), Breach::ZeroLimit);
        assert_eq!(Gcra::new(1, 0, 0).unwrap_err(), Breach::ZeroPeriod);
    }

    /// `Gcra::new(limit, period_ns, burst)`'s fix, checked exact: the field at the bound
    /// is accepted and one past it rejected.
    fn fix(limit: u64, period_ns: u64, burst: u64) -> Option<(Field, Bound)> {
        let fix = match Gcra::new(limit, period_ns, burst).unwrap_err() {
            Breach::RateTooHigh(fix) | Breach::ToleranceTooLarge(fix) => fix,
            other => panic!("{other:?}"),
        };
        if let Some((field, Bound::AtMost(most))) = fix {
            let with = |value| match field {
                Field::Limit => Gcra::new(value, period_ns, burst),
                Field::PeriodNs => Gcra::new(limit, value, burst),
                _ => Gcra::new(limit, period_ns, value),
            };
            assert!(with(most).is_ok(), "{fix:?}");
            assert!(with(most + 1).is_err(), "{fix:?}");
        }
        fix
    }

    #[test]
    fn a_rate_above_one_unit_per_ns_names_the_largest_limit() {
        let limit = |most| Some((Field::Limit, Bound::AtMost(most)));
        // T = ⌊P / L⌋ ≥ 1 up to L = P.
        assert_eq!(fix(10, 9, 0), limit(9));
        assert_eq!(fix(SECOND + 1, SECOND, 3), limit(SECOND));
        assert!(matches!(Gcra::new(10, 9, 0), Err(Breach::RateTooHigh(_))));
        // P = 2⁶⁴ − 2 (above MAX_STATE = 2⁶⁴ − 257), burst 0: L = P would make τ = P.
        assert_eq!(fix(u64::MAX, u64::MAX - 1, 0), limit(MAX_STATE));
        // A burst past MAX_STATE: τ ≥ B for every limit.
        assert_eq!(fix(5, 3, u64::MAX), None);
    }

    #[test]
    fn a_tolerance_too_large_names_the_burst_or_the_period() {
        // T = 18446744073·10⁹ ≤ MAX_STATE < 2·T: one unit of burst.
        assert_eq!(
            fix(1, 18_446_744_073 * SECOND, 2),
            Some((Field::Burst, Bound::AtMost(1)))
        );
        // T = 2⁶⁴ − 2 > MAX_STATE: no burst; 2·⌊P / 1⌋ ≤ 2⁶⁴ − 257 up to P = 2⁶³ − 129.
        assert_eq!(
            fix(1, u64::MAX - 1, 2),
            Some((Field::PeriodNs, Bound::AtMost((1 << 63) - 129)))
        );
        // Burst 0 (B = L = 2): 2·⌊P / 2⌋ ≤ 2⁶⁴ − 257 up to P = 2⁶⁴ − 257.
        assert_eq!(
            fix(2, u64::MAX - 1, 0),
            Some((Field::PeriodNs, Bound::AtMost(MAX_STATE)))
        );
        assert_eq!(
            fix(1, u64::MAX - 1, 0),
            Some((Field::PeriodNs, Bound::AtMost(MAX_STATE)))
        );
        // L = P = 2⁶⁴ − 2: T = 1 at best, τ = L > MAX_STATE whatever the period.
        assert_eq!(fix(u64::MAX - 1, u64::MAX - 1, 0), None);
    }

    #[test]
    fn the_tat_never_passes_max_state() {
        // T = 10, τ = 10.
        let gcra = Gcra::new(1, 10, 0).unwrap();
        let (last, new_tat) = decide(&gcra, 0, MAX_STATE - 10, 1, 0);
        assert!(last.allowed);
        assert_eq!(new_tat, Some(MAX_STATE));
        let (past, new_tat) = decide(&gcra, 0, MAX_STATE - 9, 1, 0);
        assert!(!past.allowed);
        assert_eq!((new_tat, past.retry_after_ns), (None, u64::MAX));
        // Even a reserve willing to wait forever cannot reach the slot markers.
        let (reserve, new_tat) = decide(&gcra, MAX_STATE, MAX_STATE, 1, u64::MAX);
        assert!(!reserve.allowed);
        assert_eq!((new_tat, reserve.retry_after_ns), (None, u64::MAX));
        // A query is always admitted and never writes.
        let (query, new_tat) = decide(&gcra, 0, u64::MAX, 0, 0);
        assert!(query.allowed);
        assert_eq!(new_tat, None);
        // The coarse-clock shortcut leaves the capped case to the precise path.
        assert_eq!(settle(&gcra, MAX_STATE, MAX_STATE, MAX_STATE, 1), None);
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
                        let mut each = (earliest..=latest).map(|t| decide(&gcra, tat, t, n, 0).1);
                        match settle(&gcra, tat, earliest, latest, n) {
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
