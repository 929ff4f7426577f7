//! Fixed window counter (docs/decision.md): at most L units in each window `[k·P, (k+1)·P)`.
//!
//! The whole state is one word, `(window index, count)` packed as described in
//! [`windows`](super::windows), updated by the same read-decide-swap loop as GCRA's TAT. A
//! request of n units at t is decided against the window it falls in, k = ⌊t/P⌋: the
//! stored count if the word is at window k, 0 if the word is at an older window. A
//! request from a window *older* than the stored one (time went backwards) is counted in
//! the stored window, so it never admits more than the latest time seen would.
//!
//! The word is swapped by the state layer (`state/cell.rs`) as GCRA's TAT is: one
//! compare-and-swap from the exact value the decision was made on, so a roll-over racing
//! with increments loses no count and adds none to a window already left. Every write makes
//! the word strictly larger (a later window, or more in the same one), and the config
//! bound makes every window of the u64 timeline fit the index field: no wrap, no ABA.
//!
//! Decision fields, at the evaluated window k with `count` already in it:
//! `remaining = L − count` (after this decision), `retry_after_ns` for a denial is the
//! time until window k + 1 starts (where the count is 0 and any n ≤ L fits), and
//! `reset_after_ns` is that same time if anything is counted in window k, else 0.
//!
//! ```
//! use librate::{Config, Instant, Limiter};
//! use std::time::Duration;
//! const SECOND: Duration = Duration::from_secs(1);
//! // 2 per minute: 0:24 and 0:36 admitted, 0:49 denied until 1:00, 1:12 admitted.
//! let limiter = Limiter::new(&Config::fixed_window(2, 60 * SECOND)).unwrap();
//! assert!(limiter.acquire_at(1, Instant::ZERO + 24 * SECOND).unwrap().allowed);
//! assert!(limiter.acquire_at(1, Instant::ZERO + 36 * SECOND).unwrap().allowed);
//! let denied = limiter.acquire_at(1, Instant::ZERO + 49 * SECOND).unwrap();
//! assert!(!denied.allowed);
//! assert_eq!(denied.retry_after(), 11 * SECOND);
//! assert!(limiter.acquire_at(1, Instant::ZERO + 72 * SECOND).unwrap().allowed);
//! ```

use super::windows::{until, Counted, Windows};
use super::{Algorithm, Outcome, Rule, Settled};
use crate::decision::Decision;

/// A validated fixed window configuration: the windows it counts in.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedWindow(pub(crate) Windows);

impl FixedWindow {
    /// The window a request at `now` counts in and what it already holds there.
    #[inline(always)]
    fn current(&self, word: u64, now: u64) -> Counted {
        let stored = self.0.unpack(word);
        let (index, _) = self.0.locate(stored.index, now);
        let count = if index == stored.index {
            stored.count
        } else {
            0
        };
        Counted { index, count }
    }
}

impl Rule for FixedWindow {
    /// L: units per window.
    #[inline(always)]
    fn limit(&self) -> u64 {
        self.0.limit()
    }
}

impl Algorithm<u64> for FixedWindow {
    /// The new packed `(window, count)` word.
    type Update = u64;

    // Inlined into the swap loop: returned from a call, the decision would be written to
    // memory and read back on every pass.
    #[inline(always)]
    fn decide(&self, word: &u64, now: u64, n: u64) -> Outcome<u64> {
        let current = self.current(*word, now);
        let allowed = current.count + n <= self.limit();
        let counted = if allowed {
            current.count + n
        } else {
            current.count
        };
        let next_window = until(self.0.start(current.index, 1), now);
        let decision = Decision {
            allowed,
            limit: self.limit(),
            remaining: self.limit() - counted,
            retry_after_ns: if allowed { 0 } else { next_window },
            reset_after_ns: if counted > 0 { next_window } else { 0 },
            wait_ns: 0,
        };
        let update = (allowed && n > 0).then(|| {
            self.0.pack(Counted {
                index: current.index,
                count: counted,
            })
        });
        Outcome { decision, update }
    }

    #[inline(always)]
    fn try_decide(&self, word: &u64, now: u64, n: u64) -> Option<u64> {
        let current = self.current(*word, now);
        (current.count + n <= self.limit()).then(|| {
            self.0.pack(Counted {
                index: current.index,
                count: current.count + n,
            })
        })
    }

    /// The outcome and the new word depend only on the window the request counts in, so
    /// when both bounds count in the same window every instant between them decides
    /// alike. Undecided when the bounds straddle a window edge.
    #[inline(always)]
    fn settle(&self, word: &u64, earliest: u64, latest: u64, n: u64) -> Settled<u64> {
        if self.current(*word, earliest).index != self.current(*word, latest).index {
            return Settled::Undecided;
        }
        match self.try_decide(word, earliest, n) {
            Some(next) => Settled::Admit(next),
            None => Settled::Deny,
        }
    }

    /// The count alone leaves less than `n`, and `latest` (so every earlier instant,
    /// evaluated in the latest window) still lies in the word's window.
    #[inline(always)]
    fn denied_through(&self, word: &u64, latest: u64, n: u64) -> bool {
        self.0.full_through(*word, latest, n)
    }

    /// Fresh (docs/keyed.md, reclaim): nothing counted in the window of `now` nor in the one
    /// before. Only the current window affects a decision; sparing the previous one too keeps a
    /// key whose callers' clocks lag by up to one period from losing its count.
    fn is_fresh(&self, word: &u64, now: u64) -> bool {
        let stored = self.0.unpack(*word);
        stored.count == 0 || stored.index.saturating_add(1) < now / self.0.period_ns()
    }
}
