//! Sliding window counter (docs/decision.md): the previous window's count, weighted by how much
//! of it still overlaps the sliding period, plus the current window's count. A request
//! of n units at t, with k = ⌊t/P⌋ and e = t − k·P, is admitted iff
//! `prev·(P − e) + (cur + n)·P ≤ L·P`, computed exactly in u128 (no floating point).
//!
//! # State
//! [`Counts`]: the latest window anything was admitted in, its count, and the final count
//! of the window before it. An admission stores the window it counted in and its new count
//! ([`Counted`]); the count of the window before that is then the old current count (a
//! roll-over to the next window) or 0. How those counts live in atomic words, and how a
//! roll-over closes a window's count in one atomic step, is `state/window_records/`.
//!
//! # Decision fields
//! With the request evaluated at window k, elapsed e (a request from a window older than
//! the current word's is evaluated at the start of that window, the strictest instant in
//! it, so time going backwards never admits more):
//! - `remaining = L − cur − ⌈prev·(P − e)/P⌉` (at least 0), after this decision.
//! - `retry_after_ns`: admission only gets easier as time passes, so it is the first
//!   instant it holds: the smallest e' ≥ e in window k with
//!   `prev·(P − e') ≤ (L − cur − n)·P`, i.e. `e' = P − ⌊(L − cur − n)·P / prev⌋`, if that is
//!   below P; else the smallest e' in window k + 1, where `prev` is now `cur` and `cur` 0:
//!   `e' = P − min(P, ⌊(L − n)·P / cur⌋)` (e' = P is the start of window k + 2, where both
//!   counts are 0).
//! - `reset_after_ns`: `remaining == L` needs both counts to be 0 (the weight `P − e` is
//!   never 0): the start of window k + 2 if `cur > 0`, else of window k + 1 if
//!   `prev > 0`, else now.
//!
//! ```
//! use librate::{Config, Instant, Limiter};
//! use std::time::Duration;
//! const SECOND: Duration = Duration::from_secs(1);
//! // 10 per minute; 9 admitted in the first minute.
//! let limiter = Limiter::new(&Config::sliding_window(10, 60 * SECOND)).unwrap();
//! assert!(limiter.acquire_at(9, Instant::ZERO + 30 * SECOND).unwrap().allowed);
//! // 15 s into the next minute the previous 9 weigh 9·45/60 = 6.75: 3 more fit, not 4.
//! let at = Instant::ZERO + 75 * SECOND;
//! assert_eq!(limiter.acquire_at(0, at).unwrap().remaining, 3);
//! assert!(!limiter.acquire_at(4, at).unwrap().allowed);
//! assert!(limiter.acquire_at(3, at).unwrap().allowed);
//! ```

use super::windows::{until, Counted, Windows};
use super::{Algorithm, Outcome, Rule, Settled};
use crate::decision::Decision;

/// A validated sliding window counter configuration: the windows it counts in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlidingWindow(pub(crate) Windows);

/// What a decision reads: the latest window anything was admitted in, with its count, and
/// the final count of the window before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    /// k: the window `[k·P, (k+1)·P)` of the latest admission (0 when fresh).
    pub(crate) index: u64,
    /// Units admitted in window k.
    pub(crate) cur: u64,
    /// Units admitted in window k − 1 (0 for k = 0).
    pub(crate) prev: u64,
}

/// What a request sees: the window it is evaluated in, the time elapsed in it, and the
/// two counts the estimate weighs.
#[derive(Clone, Copy, Debug)]
pub(super) struct View {
    pub(super) index: u64,
    pub(super) elapsed: u64,
    pub(super) prev: u64,
    pub(super) cur: u64,
}

impl Rule for SlidingWindow {
    /// L: units per sliding period.
    #[inline(always)]
    fn limit(&self) -> u64 {
        self.0.limit()
    }
}

impl Algorithm<Counts> for SlidingWindow {
    /// The window the admission counted in, and its count after it.
    type Update = Counted;

    fn decide(&self, counts: &Counts, now: u64, n: u64) -> Outcome<Counted> {
        let update = if n == 0 {
            None
        } else {
            self.try_decide(counts, now, n)
        };
        Outcome {
            decision: self.report(counts, now, n, n == 0 || update.is_some()),
            update,
        }
    }

    #[inline]
    fn try_decide(&self, counts: &Counts, now: u64, n: u64) -> Option<Counted> {
        let view = self.view(counts, now);
        self.fits(&view, view.cur + n).then_some(Counted {
            index: view.index,
            count: view.cur + n,
        })
    }

    /// Admission only gets easier as time passes within a window, and the new state
    /// depends only on the window, so when both bounds fall in the same window an
    /// admission at `earliest` or a denial at `latest` settles every instant between.
    #[inline]
    fn settle(&self, counts: &Counts, earliest: u64, latest: u64, n: u64) -> Settled<Counted> {
        let first = self.view(counts, earliest);
        let (index, elapsed) = self.0.locate(first.index, latest);
        let last = View { elapsed, ..first };
        if index != first.index {
            Settled::Undecided
        } else if self.fits(&first, first.cur + n) {
            Settled::Admit(Counted {
                index: first.index,
                count: first.cur + n,
            })
        } else if !self.fits(&last, last.cur + n) {
            Settled::Deny
        } else {
            Settled::Undecided
        }
    }

    /// Fresh (docs/keyed.md, reclaim): nothing counted in the window of `now` nor in the one
    /// before.
    fn is_fresh(&self, counts: &Counts, now: u64) -> bool {
        let view = self.view(counts, now);
        view.prev == 0 && view.cur == 0
    }
}

impl SlidingWindow {
    /// The view of a request at `now`: in the window of the latest admission, the next
    /// one, or a later one (both counts 0). A `now` in an older window is evaluated at
    /// the start of the latest one, the strictest instant in it.
    #[inline(always)]
    pub(super) fn view(&self, counts: &Counts, now: u64) -> View {
        let (index, elapsed) = self.0.locate(counts.index, now);
        let (prev, cur) = if index == counts.index {
            (counts.prev, counts.cur)
        } else if index == counts.index + 1 {
            (counts.cur, 0)
        } else {
            (0, 0)
        };
        View {
            index,
            elapsed,
            prev,
            cur,
        }
    }

    /// Whether `cur` units in the view's window (including a request) pass the test
    /// `prev·(P − e) + cur·P ≤ L·P`. Split so no side exceeds u128: `cur ≤ L` first, then
    /// `prev·(P − e) ≤ (L − cur)·P`, both below 2¹²⁸.
    #[inline(always)]
    fn fits(&self, view: &View, cur: u64) -> bool {
        let limit = self.limit();
        cur <= limit
            && weighted(view.prev, self.period() - view.elapsed)
                <= weighted(limit - cur, self.period())
    }

    fn period(&self) -> u64 {
        self.0.period_ns()
    }

    /// The decision for `n` units on `counts` at `now`, admitted (as [`try_decide`]
    /// decides, or a query) or not. A query, `n == 0`, is admitted even when the counts
    /// are over the limit: time went backwards into the start of the latest window.
    ///
    /// [`try_decide`]: Algorithm::try_decide
    pub(crate) fn report(&self, counts: &Counts, now: u64, n: u64, allowed: bool) -> Decision {
        let view = &self.view(counts, now);
        let cur = if allowed { view.cur + n } else { view.cur };
        let after = View { cur, ..*view };
        Decision {
            allowed,
            limit: self.limit(),
            remaining: self.remaining(&after),
            retry_after_ns: if allowed {
                0
            } else {
                self.retry_after(view, now, n)
            },
            reset_after_ns: self.reset_after(&after, now),
            wait_ns: 0,
        }
    }

    /// `L − cur − ⌈prev·(P − e)/P⌉`, at least 0: the largest m with `fits(cur + m)`.
    pub(super) fn remaining(&self, view: &View) -> u64 {
        let weight = scale(
            view.prev,
            self.period() - view.elapsed,
            self.period(),
            Round::Up,
        );
        self.limit().saturating_sub(view.cur).saturating_sub(weight)
    }

    /// The first instant a denied request of `n` on `view` would be admitted (module docs).
    fn retry_after(&self, view: &View, now: u64, n: u64) -> u64 {
        let limit = self.limit();
        let this_window = match (limit - view.cur).checked_sub(n) {
            Some(room) => self.first_fit(view.prev, room),
            None => self.period(),
        };
        let at = if this_window < self.period() {
            self.0.start(view.index, 0) + u128::from(this_window)
        } else {
            self.0.start(view.index, 1) + u128::from(self.first_fit(view.cur, limit - n))
        };
        until(at, now)
    }

    /// The smallest e in `[0, P]` with `prev·(P − e) ≤ room·P`.
    fn first_fit(&self, prev: u64, room: u64) -> u64 {
        if prev == 0 {
            return 0;
        }
        // ⌊room·P / prev⌋ ≥ P once room ≥ prev: the whole window fits.
        if room >= prev {
            return 0;
        }
        // room < prev, so ⌊room·P / prev⌋ < P.
        self.period() - scale(room, self.period(), prev, Round::Down)
    }

    /// The first instant both counts are 0 (module docs).
    fn reset_after(&self, view: &View, now: u64) -> u64 {
        let windows_later = match (view.cur, view.prev) {
            (0, 0) => return 0,
            (0, _) => 1,
            _ => 2,
        };
        until(self.0.start(view.index, windows_later), now)
    }
}

/// `count · ns` in u128: both factors are below 2⁶⁴, so it cannot overflow.
fn weighted(count: u64, ns: u64) -> u128 {
    u128::from(count) * u128::from(ns)
}

enum Round {
    Down,
    Up,
}

/// `count·ns / divisor`, rounded, for `count·ns / divisor < 2⁶⁴`. In u64 when the product
/// fits (the common case): a u128 division is a library call several times slower.
fn scale(count: u64, ns: u64, divisor: u64, round: Round) -> u64 {
    let quotient = match (count.checked_mul(ns), round) {
        (Some(product), Round::Down) => return product / divisor,
        (Some(product), Round::Up) => return product.div_ceil(divisor),
        (None, Round::Down) => weighted(count, ns) / u128::from(divisor),
        (None, Round::Up) => weighted(count, ns).div_ceil(u128::from(divisor)),
    };
    // Below 2⁶⁴ by the caller's bound.
    quotient as u64
}
