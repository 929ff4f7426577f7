//! Sliding window counter (DESIGN §4): the previous window's count, weighted by how much
//! of it still overlaps the sliding period, plus the current window's count. A request
//! of n units at t, with k = ⌊t/P⌋ and e = t − k·P, is admitted iff
//! `prev·(P − e) + (cur + n)·P ≤ L·P`, computed exactly in u128 (no floating point).
//!
//! # State: three words
//! - `state[0]`, **current**: `(k, cur)` packed as in [`window`](crate::window): the
//!   latest window anything was admitted in, and its count. It is the only word a
//!   decision swaps, so it alone orders all admissions.
//! - `state[1 + j % 2]`, **closed windows**: `(j, final count of window j)`, written once
//!   the current word leaves window j. Two words, by parity, so closing window j never
//!   touches the record of window j − 1 that readers of window j still need.
//!
//! A reader that finds the current word at window k takes `prev` from the record of
//! parity k − 1 if it is tagged k − 1, else 0 (the current word skipped window k − 1, so
//! nothing was admitted in it). The current word at window k − 1 (read at a time in
//! window k) gives `prev` = its count directly.
//!
//! # Roll-over is one atomic step
//! To move from `(k−1, c)` to `(k, n)` a thread first raises the record of parity k − 1
//! to `(k−1, c)` with `fetch_max`, then swaps the current word from exactly `(k−1, c)`.
//! - The swap is the roll-over: before it every reader sees window k − 1 as current (and
//!   takes its count directly); after it every reader sees window k with its record
//!   complete, because the record was written before the `Release` swap and readers load
//!   the current word with `Acquire` (`cell::decide_and_publish`).
//! - The record holds the final count: a roll-over only succeeds from the current word's
//!   last value in window k − 1, every count a thread can have seen there is at most that,
//!   and `fetch_max` keeps the largest. Racing roll-overs and late ones (whose swap
//!   fails) only ever write a value the record already has or a smaller one.
//! - Packed words grow with (window, count), so `fetch_max` also keeps a newer window's
//!   record over an older one's of the same parity.
//! - A reader whose current word is stale can find the record of its parity already
//!   reused for a later window (tag ≥ k + 1). It then loads the current word again
//!   rather than decide on a record that no longer describes window k − 1.
//!
//! Every word only ever grows, and the current word obeys the packed word's bound, so it
//! never holds `u64::MAX` or `u64::MAX − 1` (the keyed table's sentinels).
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
//! use rate::{Config, Limiter};
//! const SECOND: u64 = 1_000_000_000;
//! // 10 per minute; 9 admitted in the first minute.
//! let limiter = Limiter::new(&Config::sliding_window(10, 60 * SECOND)).unwrap();
//! assert!(limiter.acquire_at(9, 30 * SECOND).unwrap().allowed);
//! // 15 s into the next minute the previous 9 weigh 9·45/60 = 6.75: 3 more fit, not 4.
//! let at = 75 * SECOND;
//! assert_eq!(limiter.acquire_at(0, at).unwrap().remaining, 3);
//! assert!(!limiter.acquire_at(4, at).unwrap().allowed);
//! assert!(limiter.acquire_at(3, at).unwrap().allowed);
//! ```

use crate::cell::{decide_and_publish, Tenancy};
use crate::sync::{AtomicU64, Ordering};
use crate::window::{until, Counted, Windows};
use crate::{ConfigError, Decision};

/// Index of the current word in the state.
const CURRENT: usize = 0;
/// Index of the first of the two closed-window records.
const CLOSED: usize = 1;

/// A validated sliding window counter configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlidingWindow {
    windows: Windows,
}

/// What a request sees: the window it is evaluated in, the time elapsed in it, and the
/// two counts the estimate weighs.
#[derive(Clone, Copy, Debug)]
struct View {
    index: u64,
    elapsed: u64,
    prev: u64,
    cur: u64,
}

impl SlidingWindow {
    /// Words of state: the current window and two closed-window records.
    pub(crate) const STATE_WORDS: usize = 3;

    pub(crate) fn new(limit: u64, period_ns: u64) -> Result<Self, ConfigError> {
        Windows::new(limit, period_ns).map(|windows| Self { windows })
    }

    /// The windows it counts in.
    pub(crate) fn windows(&self) -> &Windows {
        &self.windows
    }

    /// L: the decision's `limit`.
    pub(crate) fn limit(&self) -> u64 {
        self.windows.limit()
    }

    /// Acquires `n ≤ L` units at `now` (`n == 0` queries and never writes).
    // Not inlined into `Policy::acquire`: its size would cost the other algorithms'
    // paths there a larger stack frame and their own inlining.
    #[inline(never)]
    pub(crate) fn acquire<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<Decision, T::Evicted> {
        let (allowed, view) = self.swap(state, tenancy, now, n, |view| {
            let allowed = n == 0 || self.fits(view, view.cur + n);
            (allowed, allowed)
        })?;
        Ok(self.decide(&view, now, n, allowed))
    }

    /// Decides a plain acquire of `n ≥ 1` for every instant in `[earliest, latest]` at
    /// once. Admission only gets easier as time passes within a window, and the new state
    /// depends only on the window, so when both bounds fall in the same window an
    /// admission at `earliest` or a denial at `latest` settles every instant between.
    /// `None` when the bounds do not settle it.
    pub(crate) fn settle<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        earliest: u64,
        latest: u64,
        n: u64,
    ) -> Result<Option<bool>, T::Evicted> {
        let (settled, _) = self.swap(state, tenancy, earliest, n, |first| {
            let (index, elapsed) = self.windows.locate(first.index, latest);
            let last = View { elapsed, ..*first };
            let settled = if index != first.index {
                None
            } else if self.fits(first, first.cur + n) {
                Some(true)
            } else if !self.fits(&last, last.cur + n) {
                Some(false)
            } else {
                None
            };
            (settled, settled == Some(true))
        })?;
        Ok(settled)
    }

    /// Fresh (DESIGN §5): nothing counted in the window of `now` nor in the one before.
    /// `current` is the current word, loaded with Acquire (pairing with the Release swap
    /// that installed it, so the closed record it needs is visible). A snapshot: the
    /// reclaimer's own CAS revalidates it.
    pub(crate) fn is_fresh(&self, state: &[AtomicU64], current: u64, now: u64) -> bool {
        self.view(state, current, now, false)
            .is_some_and(|view| view.prev == 0 && view.cur == 0)
    }

    /// The read-decide-swap loop. `decide` maps the view at `now` to a result and whether
    /// it admits `n` units there; an admission of `n ≥ 1` swaps the current word,
    /// recording the closed window first when it rolls over. Returns the result and the
    /// view it was decided on. (The decision's fields are computed by the caller, outside
    /// the loop: a `Decision` carried through it costs more than the decision itself.)
    ///
    /// Every value of the current word is shown to `tenancy` before anything is decided
    /// or written on it, the record of a roll-over included (`cell::decide_and_publish`).
    fn swap<T: Tenancy, R: Copy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
        decide: impl Fn(&View) -> (R, bool),
    ) -> Result<(R, View), T::Evicted> {
        // The current word last found stale: see `view`.
        let mut stale = None;
        loop {
            let step = decide_and_publish(&state[CURRENT], tenancy, |current| {
                let Some(view) = self.view(state, current, now, stale == Some(current)) else {
                    // A stale current word: load it again.
                    stale = Some(current);
                    return (None, None);
                };
                let (result, allowed) = decide(&view);
                if !allowed || n == 0 {
                    return (Some((result, view)), None);
                }
                let stored = self.windows.unpack(current);
                if stored.index + 1 == view.index && stored.count > 0 {
                    // Roll-over from the previous window: record its final count before
                    // the swap. Relaxed: the Release swap publishes it (module docs).
                    state[CLOSED + parity(stored.index)].fetch_max(current, Ordering::Relaxed);
                }
                let next = self.windows.pack(Counted {
                    index: view.index,
                    count: view.cur + n,
                });
                (Some((result, view)), Some(next))
            })?;
            if let Some(decided) = step {
                return Ok(decided);
            }
        }
    }

    /// The view of a request at `now` given the current word, or `None` if the record it
    /// needs has already been reused for a later window (the current word moved on).
    ///
    /// With `reloaded`, the current word was found stale before and loaded again with the
    /// same value, so the record's later window did not come from a roll-over of this
    /// state (the words were reset under an old writer still in flight). Rather than loop
    /// forever, the view then takes the previous window as full, the strictest reading.
    fn view(&self, state: &[AtomicU64], current: u64, now: u64, reloaded: bool) -> Option<View> {
        let stored = self.windows.unpack(current);
        let (index, elapsed) = self.windows.locate(stored.index, now);
        let (prev, cur) = if index == stored.index {
            let prev = match self.closed_count(state, index) {
                Some(prev) => prev,
                None if reloaded => self.limit(),
                None => return None,
            };
            (prev, stored.count)
        } else if index == stored.index + 1 {
            (stored.count, 0)
        } else {
            (0, 0)
        };
        Some(View {
            index,
            elapsed,
            prev,
            cur,
        })
    }

    /// The final count of window `index − 1`, for a reader whose current word is at
    /// window `index`; `None` if the record has been reused for a later window.
    fn closed_count(&self, state: &[AtomicU64], index: u64) -> Option<u64> {
        let Some(previous) = index.checked_sub(1) else {
            return Some(0);
        };
        // Relaxed: ordered after the Acquire load of the current word (module docs).
        let record = self
            .windows
            .unpack(state[CLOSED + parity(previous)].load(Ordering::Relaxed));
        match record.index {
            i if i == previous => Some(record.count),
            i if i < previous => Some(0),
            _ => None,
        }
    }

    /// Whether `cur` units in the view's window (including a request) pass the test
    /// `prev·(P − e) + cur·P ≤ L·P`. Split so no side exceeds u128: `cur ≤ L` first, then
    /// `prev·(P − e) ≤ (L − cur)·P`, both below 2¹²⁸.
    fn fits(&self, view: &View, cur: u64) -> bool {
        let limit = self.limit();
        cur <= limit
            && weighted(view.prev, self.period() - view.elapsed)
                <= weighted(limit - cur, self.period())
    }

    fn period(&self) -> u64 {
        self.windows.period_ns()
    }

    /// The decision for `n` units on `view` at `now`, admitted or not. (A query,
    /// `n == 0`, is admitted even when the view is over its limit: time went backwards
    /// into the start of the latest window.)
    fn decide(&self, view: &View, now: u64, n: u64, allowed: bool) -> Decision {
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
    fn remaining(&self, view: &View) -> u64 {
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
            self.windows.start(view.index, 0) + u128::from(this_window)
        } else {
            self.windows.start(view.index, 1) + u128::from(self.first_fit(view.cur, limit - n))
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
        until(self.windows.start(view.index, windows_later), now)
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

/// Which closed-window record window `index` uses.
fn parity(index: u64) -> usize {
    (index % 2) as usize
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::cell::{owned, Owned};

    #[test]
    fn a_record_from_a_later_window_under_an_unmoved_current_word_does_not_hang() {
        // L = 4 per 100 ns. Current word: window 2 with 1 unit; the record of window 1's
        // parity claims window 3, which this state never reached (words reset under a
        // late writer). Decisions fall back to a full previous window instead of looping.
        let sliding = SlidingWindow::new(4, 100).unwrap();
        let state: Vec<AtomicU64> = [
            sliding.windows.pack(Counted { index: 2, count: 1 }),
            0,
            sliding.windows.pack(Counted { index: 3, count: 2 }),
        ]
        .into_iter()
        .map(AtomicU64::new)
        .collect();
        // At 250: 4·(100 − 50)/100 = 2 weigh, plus 1 counted: 1 left.
        let acquire = |n| owned(sliding.acquire(&state, &Owned, 250, n));
        assert_eq!(acquire(0).remaining, 1);
        assert!(acquire(1).allowed);
        assert!(!acquire(1).allowed);
        let current = state[CURRENT].load(Ordering::Relaxed);
        assert!(!sliding.is_fresh(&state, current, 250));
    }
}
