//! Fixed window counter (DESIGN §4): at most L units in each window `[k·P, (k+1)·P)`.
//!
//! The whole state is one word, `(window index, count)` packed as described in
//! [`window`](crate::window), updated by the same read-decide-swap loop as GCRA's TAT. A
//! request of n units at t is decided against the window it falls in, k = ⌊t/P⌋: the
//! stored count if the word is at window k, 0 if the word is at an older window. A
//! request from a window *older* than the stored one (time went backwards) is counted in
//! the stored window, so it never admits more than the latest time seen would.
//!
//! Why nothing is ever mis-counted:
//! - **Roll-over racing with increments.** Moving to a new window and adding to the
//!   current one are both a single compare-and-swap of the whole word from the exact
//!   value the decision was made on. If an increment lands between a thread's read and
//!   its roll-over, the roll-over's CAS fails and it decides again on the new value; if a
//!   roll-over lands first, the increment's CAS fails and it re-decides in the new window.
//!   No count can be added to a window that has already been left, and none is lost.
//! - **Index wrap.** Impossible: the config bound makes every window of the u64 timeline
//!   fit the index field (see [`window`](crate::window)).
//! - **ABA.** Impossible: every write makes the word strictly larger.
//!
//! Decision fields, at the evaluated window k with `count` already in it:
//! `remaining = L − count` (after this decision), `retry_after_ns` for a denial is the
//! time until window k + 1 starts (where the count is 0 and any n ≤ L fits), and
//! `reset_after_ns` is that same time if anything is counted in window k, else 0.
//!
//! ```
//! use rate::{Config, Limiter};
//! const SECOND: u64 = 1_000_000_000;
//! // 2 per minute: 0:24 and 0:36 admitted, 0:49 denied until 1:00, 1:12 admitted.
//! let limiter = Limiter::new(&Config::fixed_window(2, 60 * SECOND)).unwrap();
//! assert!(limiter.acquire_at(1, 24 * SECOND).unwrap().allowed);
//! assert!(limiter.acquire_at(1, 36 * SECOND).unwrap().allowed);
//! let denied = limiter.acquire_at(1, 49 * SECOND).unwrap();
//! assert!(!denied.allowed);
//! assert_eq!(denied.retry_after_ns, 11 * SECOND);
//! assert!(limiter.acquire_at(1, 72 * SECOND).unwrap().allowed);
//! ```

use crate::gcra::Outcome;
use crate::window::{until, Counted, Windows};
use crate::{ConfigError, Decision};

/// A validated fixed window configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedWindow {
    windows: Windows,
}

impl FixedWindow {
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

    /// The window a request at `now` counts in and what it already holds there.
    fn current(&self, word: u64, now: u64) -> Counted {
        let stored = self.windows.unpack(word);
        let (index, _) = self.windows.locate(stored.index, now);
        let count = if index == stored.index {
            stored.count
        } else {
            0
        };
        Counted { index, count }
    }

    /// Decides `n ≤ L` units at `now` against the stored `word`. `n == 0` is a query and
    /// never writes; a denial never writes.
    pub(crate) fn decide(&self, word: u64, now: u64, n: u64) -> Outcome {
        let current = self.current(word, now);
        let allowed = current.count + n <= self.limit();
        let counted = if allowed {
            current.count + n
        } else {
            current.count
        };
        let next_window = until(self.windows.start(current.index, 1), now);
        let decision = Decision {
            allowed,
            limit: self.limit(),
            remaining: self.limit() - counted,
            retry_after_ns: if allowed { 0 } else { next_window },
            reset_after_ns: if counted > 0 { next_window } else { 0 },
            wait_ns: 0,
        };
        let next = (allowed && n > 0).then(|| {
            self.windows.pack(Counted {
                index: current.index,
                count: counted,
            })
        });
        (decision, next)
    }

    /// Decides a plain acquire of `n ≥ 1` for every instant in `[earliest, latest]` at
    /// once, as [`Gcra::settle`](crate::gcra::Gcra::settle) does: the outcome and the new
    /// word depend only on the window the request counts in, so when both bounds count
    /// in the same window every instant between them decides alike. `None` when the bounds
    /// straddle a window edge.
    pub(crate) fn settle(
        &self,
        word: u64,
        earliest: u64,
        latest: u64,
        n: u64,
    ) -> Option<Option<u64>> {
        let index = self.current(word, earliest).index;
        (index == self.current(word, latest).index).then(|| self.decide(word, earliest, n).1)
    }

    /// Fresh (DESIGN §5): nothing counted in the window of `now` nor in the one before.
    /// Only the current window affects a decision; sparing the previous one too keeps a
    /// key whose callers' clocks lag by up to one period from losing its count.
    pub(crate) fn is_fresh(&self, word: u64, now: u64) -> bool {
        let stored = self.windows.unpack(word);
        stored.count == 0 || stored.index.saturating_add(1) < now / self.windows.period_ns()
    }
}
