//! Sliding window log (docs/decision.md): exact. A request of n units at t is admitted iff the
//! units admitted in `(t − P, t]` plus n are at most L. Denied requests are not logged.
//!
//! # State: a ring of the last L admitted timestamps
//! Every admitted unit gets the next *position* 0, 1, 2, … and its timestamp is kept in
//! ring slot `position mod L` until position + L overwrites it. A decision reads the ring
//! through [`LogRead`]: the **head** (the next position, i.e. the units ever admitted),
//! the **latest** timestamp logged, and the timestamp at a position. An admission is a
//! [`Claim`] of positions `[head, head + n)` at one time. How the ring lives in atomic
//! words and how claims race is `state/ring/`.
//!
//! Memory: `24 + 16·L` bytes of state (a single limiter adds 256 bytes of
//! cache-line padding). L is capped at [`SlidingLog::MAX_LIMIT`] = 2²⁰ (16 MiB + 24 bytes);
//! a larger L is rejected (`LimitTooLarge`).
//!
//! # O(1) admission from the ring's order
//! A request is evaluated at `at = max(t, latest)` and its units are logged at `at`, so
//! timestamps never decrease along positions (a request from the past is moved forward
//! to the latest logged time, which is never more lenient than the latest time seen:
//! entries only expire as time passes). Then the entries alive at `at` are a suffix of
//! the positions, and n more units fit iff position `q = head + n − 1 − L` (the newest one
//! that must be gone) precedes the log or has expired, `ts(q) + P ≤ at`. One slot read.
//! `retry_after_ns` is `ts(q) + P − t`; `reset_after_ns` is `ts(head − 1) + P − t`;
//! `remaining` is L minus the length of the live suffix, found by galloping up from the
//! oldest kept position: O(1) when the log is full or empty, O(log L) slot reads at worst.
//!
//! # Reserved values and bounds
//! Along positions, `ts(p + L) ≥ ts(p) + P` (p had to expire before p + L was claimed),
//! so `ts(p) ≥ ⌊p/L⌋·P`, and as timestamps are u64 the head never exceeds
//! `L · (⌊(2⁶⁴−1)/P⌋ + 1)`. A config is accepted only if that is at most 2⁶⁴ − 257, so head
//! (the first word) never exceeds [`MAX_STATE`] and never wraps. Roughly: L < P, at most one unit per nanosecond.
//! A reset (below) lets up to L + 1 more positions pass without time passing; the head
//! still never passes [`MAX_STATE`], so a log reset some 2⁶⁴/(L + 1) times (2⁴⁴ at the
//! largest L) denies every request from then on rather than wrap.
//!
//! A state whose entries have all expired behaves as a fresh one and may be kept as it is.
//!
//! # Reset: the floor
//! Positions below the **floor** are not in the log. A reset raises the floor to the head
//! (after moving the head past one unused position, so that an admission decided before
//! the reset cannot claim after it: `state/ring/`), and the log then decides as a fresh
//! one from the latest time logged on. Entries stay in the ring beneath the floor, and the
//! head and every other word keep growing, so nothing of the ring's protocol changes.
//!
//! ```
//! use librate::{Config, Instant, Limiter};
//! use std::time::Duration;
//! const SECOND: Duration = Duration::from_secs(1);
//! // 2 per minute, exactly, over any 60 s.
//! let limiter = Limiter::new(&Config::sliding_log(2, 60 * SECOND)).unwrap();
//! assert!(limiter.acquire_at(1, Instant::ZERO + 24 * SECOND).unwrap().allowed);
//! assert!(limiter.acquire_at(1, Instant::ZERO + 36 * SECOND).unwrap().allowed);
//! let denied = limiter.acquire_at(1, Instant::ZERO + 72 * SECOND).unwrap();
//! assert!(!denied.allowed);
//! assert_eq!(denied.retry_after(), 12 * SECOND); // 0:24 leaves the log at 1:24
//! assert!(limiter.acquire_at(1, Instant::ZERO + 84 * SECOND).unwrap().allowed);
//! ```

use super::windows::until;
use super::{Algorithm, Outcome, Rule, Settled, MAX_STATE};
use crate::decision::Decision;
use crate::error::{Bound, Breach, Field};

/// A validated sliding window log configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlidingLog {
    limit: u64,
    period_ns: u64,
}

/// What a decision reads of the log's ring: one moment of it, as the state layer sees it.
pub(crate) trait LogRead {
    /// The next position: the units ever admitted.
    fn head(&self) -> u64;
    /// The largest timestamp logged, or about to be.
    fn latest(&self) -> u64;
    /// The first position in the log: those below it were reset away (0 if none were).
    fn floor(&self) -> u64;
    /// The timestamp at `position` (below head, at least head − L), or an upper bound on
    /// it while its slot is not yet written: a bound only makes an entry look younger.
    fn logged(&self, position: u64) -> u64;
    /// The timestamp at `position` if its slot holds it already, without waiting.
    fn written(&self, position: u64) -> Option<u64>;
}

/// An admission: positions `[head, head + n)` logged at `at`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Claim {
    /// The time the units are logged at: the request's time, or the latest logged if later.
    pub(crate) at: u64,
}

/// Whether n more units fit at a time `at`.
enum Admission {
    Admit,
    /// The head cannot grow by n: no state this library wrote is this far along (see
    /// "Reserved values and bounds"), only one that another process wrote into a file.
    Never,
    /// Denied: position `oldest_kept`, logged at `ts`, has not expired.
    Deny {
        oldest_kept: u64,
        ts: u64,
    },
}

impl SlidingLog {
    /// The largest L: the ring takes 16 bytes per unit of L.
    pub(crate) const MAX_LIMIT: u64 = 1 << 20;

    pub(crate) fn new(limit: u64, period_ns: u64) -> Result<Self, Breach> {
        if limit == 0 {
            return Err(Breach::ZeroLimit);
        }
        if period_ns == 0 {
            return Err(Breach::ZeroPeriod);
        }
        // Windows per period of the timeline, as the head's bound counts them.
        let windows = u128::from(u64::MAX / period_ns) + 1;
        if limit > Self::MAX_LIMIT || u128::from(limit) * windows > u128::from(MAX_STATE) {
            return Err(Breach::LimitTooLarge(Self::fix(limit, windows)));
        }
        Ok(Self { limit, period_ns })
    }

    /// The field and bound that mend a rejected `limit`, the period giving `windows` =
    /// ⌊(2⁶⁴−1)/P⌋ + 1: the largest limit, `min(MAX_LIMIT, ⌊MAX_STATE / windows⌋)`, if it
    /// is at least 1; else (P = 1) the shortest period: `windows ≤ Q = ⌊MAX_STATE / L⌋`
    /// holds iff ⌊(2⁶⁴−1)/P⌋ ≤ Q − 1, from P = ⌊(2⁶⁴−1)/Q⌋ + 1 on (Q ≥ 2 for any L up to
    /// the cap). A limit above the cap takes only the period that never ends, which keeps
    /// no log ([`Config::FOREVER`](crate::Config::FOREVER), up to `MAX_STATE`).
    fn fix(limit: u64, windows: u128) -> Option<(Field, Bound)> {
        let most = (u128::from(MAX_STATE) / windows).min(u128::from(Self::MAX_LIMIT));
        if most >= 1 {
            return Some((Field::Limit, Bound::AtMost(most as u64)));
        }
        let least = match MAX_STATE / limit {
            0 => return None,
            _ if limit > Self::MAX_LIMIT => u64::MAX,
            most_windows => u64::MAX / most_windows + 1,
        };
        Some((Field::PeriodNs, Bound::AtLeast(least)))
    }

    /// The newest position that must have expired for n more units to fit,
    /// `head + n − 1 − L`; `None` if it precedes the log (or its floor).
    #[inline(always)]
    pub(crate) fn must_be_gone(&self, head: u64, floor: u64, n: u64) -> Option<u64> {
        let position = if head >= self.limit {
            Some(head - self.limit + (n - 1))
        } else {
            (head + n - 1).checked_sub(self.limit)
        };
        position.filter(|&position| position >= floor)
    }

    /// The oldest position a log with head `head` may still hold: L back, or its floor
    /// (never past `head`, whatever bytes a file holds).
    #[inline(always)]
    fn oldest_kept(&self, log: &impl LogRead, head: u64) -> u64 {
        head.saturating_sub(self.limit).max(log.floor().min(head))
    }

    /// Whether `n` more units fit at `at` (at least the latest time logged).
    #[inline(always)]
    pub(crate) fn admits(&self, log: &impl LogRead, at: u64, n: u64) -> bool {
        matches!(self.admission(log, at, n), Admission::Admit)
    }

    /// Whether n more units fit at `at`: the newest position that must be gone precedes
    /// the log or has expired.
    #[inline(always)]
    fn admission(&self, log: &impl LogRead, at: u64, n: u64) -> Admission {
        if log
            .head()
            .checked_add(n)
            .map_or(true, |head| head > MAX_STATE)
        {
            return Admission::Never;
        }
        let Some(position) = self.must_be_gone(log.head(), log.floor(), n) else {
            return Admission::Admit;
        };
        let ts = log.logged(position);
        if self.expired(ts, at) {
            Admission::Admit
        } else {
            Admission::Deny {
                oldest_kept: position,
                ts,
            }
        }
    }

    /// Whether an entry logged at `ts` has left the window `(at − P, at]`.
    #[inline(always)]
    pub(crate) fn expired(&self, ts: u64, at: u64) -> bool {
        u128::from(ts) + u128::from(self.period_ns) <= u128::from(at)
    }

    /// Nanoseconds from `now` until an entry logged at `ts` expires.
    fn expiry(&self, ts: u64, now: u64) -> u64 {
        until(u128::from(ts) + u128::from(self.period_ns), now)
    }

    /// `remaining` and `reset_after_ns` at `now` (evaluated at `at`) of a log left as it
    /// is, given a position `known_live` that is live if anything is (the newest, or the
    /// one a denial found).
    fn standing(&self, log: &impl LogRead, at: u64, now: u64, known_live: u64) -> (u64, u64) {
        let head = log.head();
        if head <= log.floor() {
            return (self.limit, 0);
        }
        let newest = log.logged(head - 1);
        if self.expired(newest, at) {
            return (self.limit, 0);
        }
        let first_live = self.first_live(log, at, self.oldest_kept(log, head), known_live);
        (self.limit - (head - first_live), self.expiry(newest, now))
    }

    /// The first position in `[low, high)` live at `at`, or `high` if all have expired
    /// (`high` itself is live or the end). Gallops up from `low`, then bisects: O(1) when
    /// the boundary is near `low`, O(log(high − low)) reads at worst.
    fn first_live(&self, log: &impl LogRead, at: u64, mut low: u64, mut high: u64) -> u64 {
        let live = |position| !self.expired(log.logged(position), at);
        let mut step = 1u64;
        while low < high {
            let probe = low + (step - 1).min(high - low - 1);
            if live(probe) {
                high = probe;
                break;
            }
            low = probe + 1;
            step = step.saturating_mul(2);
        }
        while low < high {
            let middle = low + (high - low) / 2;
            if live(middle) {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        low
    }
}

impl Rule for SlidingLog {
    /// L: units in any period.
    #[inline(always)]
    fn limit(&self) -> u64 {
        self.limit
    }
}

impl<R: LogRead> Algorithm<R> for SlidingLog {
    type Update = Claim;
    const PEEKS: bool = true;

    fn decide(&self, log: &R, now: u64, n: u64) -> Outcome<Claim> {
        let at = now.max(log.latest());
        let head = log.head();
        if n == 0 {
            // The newest position, if any, is the one live if anything is.
            let (remaining, reset_after_ns) = self.standing(log, at, now, head.saturating_sub(1));
            let decision = Decision {
                allowed: true,
                limit: self.limit,
                remaining,
                retry_after_ns: 0,
                reset_after_ns,
                wait_ns: 0,
            };
            return Outcome {
                decision,
                update: None,
            };
        }
        match self.admission(log, at, n) {
            Admission::Admit => {
                let new_head = head + n;
                // The new units are live (P ≥ 1); search the older positions still kept.
                let first_live = self.first_live(log, at, self.oldest_kept(log, new_head), head);
                let decision = Decision {
                    allowed: true,
                    limit: self.limit,
                    remaining: self.limit - (new_head - first_live),
                    retry_after_ns: 0,
                    reset_after_ns: self.expiry(at, now),
                    wait_ns: 0,
                };
                Outcome {
                    decision,
                    update: Some(Claim { at }),
                }
            }
            Admission::Never => Outcome {
                decision: Decision {
                    allowed: false,
                    limit: self.limit,
                    remaining: 0,
                    retry_after_ns: u64::MAX,
                    reset_after_ns: u64::MAX,
                    wait_ns: 0,
                },
                update: None,
            },
            Admission::Deny { oldest_kept, ts } => {
                let (remaining, reset_after_ns) = self.standing(log, at, now, oldest_kept);
                let decision = Decision {
                    allowed: false,
                    limit: self.limit,
                    remaining,
                    retry_after_ns: self.expiry(ts, now),
                    reset_after_ns,
                    wait_ns: 0,
                };
                Outcome {
                    decision,
                    update: None,
                }
            }
        }
    }

    /// One slot read: O(1) whatever the log holds, with no search for `remaining`.
    #[inline(always)]
    fn try_decide(&self, log: &R, now: u64, n: u64) -> Option<Claim> {
        let at = now.max(log.latest());
        self.admits(log, at, n).then_some(Claim { at })
    }

    /// Every instant up to `latest` is evaluated at `max(t, latest logged)`. A denial at
    /// the upper bound is a denial at every instant before it (admission only gets easier
    /// with time). An admission there is settled too when the bound is at most the latest
    /// time logged: every instant is then moved forward to that same time.
    #[inline(always)]
    fn settle(&self, log: &R, _earliest: u64, latest: u64, n: u64) -> Settled<Claim> {
        let logged = log.latest();
        match self.admission(log, latest.max(logged), n) {
            Admission::Deny { .. } | Admission::Never => Settled::Deny,
            Admission::Admit if latest <= logged => Settled::Admit(Claim { at: logged }),
            Admission::Admit => Settled::Undecided,
        }
    }

    /// Fresh (docs/keyed.md, reclaim): every entry has expired at `now`, or none is above the
    /// floor. Reads only `latest`, an upper bound on every timestamp logged, so it may say "not
    /// fresh" of a state that is.
    fn is_fresh(&self, log: &R, now: u64) -> bool {
        log.head() <= log.floor()
            || u128::from(log.latest()) + u128::from(self.period_ns) <= u128::from(now)
    }

    /// Admission is certain at any time once the entry that must be gone left before the
    /// latest time logged (or there is none): only the exact time to log remains to read.
    #[inline(always)]
    fn needs_exact(&self, log: &R, _passed: u64, n: u64) -> bool {
        match self.must_be_gone(log.head(), log.floor(), n) {
            None => true,
            Some(position) => log
                .written(position)
                .is_some_and(|ts| self.expired(ts, log.latest())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::checked_fix;

    fn fix(limit: u64, period_ns: u64) -> Option<(Field, Bound)> {
        checked_fix(SlidingLog::new, limit, period_ns)
    }

    #[test]
    fn rejects_zero() {
        assert_eq!(SlidingLog::new(0, 10).unwrap_err(), Breach::ZeroLimit);
        assert_eq!(SlidingLog::new(1, 0).unwrap_err(), Breach::ZeroPeriod);
    }

    #[test]
    fn a_limit_too_large_names_the_cap_or_the_period_s_bound() {
        let limit = |most| Some((Field::Limit, Bound::AtMost(most)));
        assert_eq!(fix((1 << 20) + 1, 1_000_000_000), limit(1 << 20));
        // P = 3: ⌊(2⁶⁴−1)/3⌋ + 1 = 0x5555…56 windows, twice that is past 2⁶⁴ − 257.
        assert_eq!(fix(3, 3), limit(2));
        assert_eq!(fix(2, 2), limit(1));
        // P = 2⁶⁴ − 2: 2 windows, and L·2 ≤ 2⁶⁴ − 257 holds far above the cap.
        assert_eq!(fix(u64::MAX, u64::MAX - 1), limit(1 << 20));
    }

    #[test]
    fn a_period_too_short_for_any_limit_names_the_shortest_period() {
        let period = |least| Some((Field::PeriodNs, Bound::AtLeast(least)));
        // P = 1: 2⁶⁴ windows. L = 1 needs at most 2⁶⁴ − 257, P ≥ 2.
        assert_eq!(fix(1, 1), period(2));
        // L = 2²⁰: at most ⌊(2⁶⁴ − 257)/2²⁰⌋ = 2⁴⁴ − 1 windows, P ≥ ⌊(2⁶⁴−1)/(2⁴⁴ − 1)⌋ + 1
        // = 2²⁰ + 1 (2⁶⁴ − 1 = (2⁴⁴ − 1)·2²⁰ + 2²⁰ − 1).
        assert_eq!(fix(1 << 20, 1), period((1 << 20) + 1));
        // Above the cap: only the period that never ends, which keeps no log.
        assert_eq!(fix((1 << 20) + 1, 1), period(u64::MAX));
        assert_eq!(fix(u64::MAX, 1), None);
    }
}
