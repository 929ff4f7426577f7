//! The width of the bounds a coarse reading gives: how far the exact clock may run ahead
//! of the coarse one. Calibrated once from the coarse clock's resolution, then widened
//! whenever an exact reading proves it too narrow.
//!
//! The coarse clock is the exact clock as of the last scheduler tick, so the exact time is
//! at least the coarse one and at most one tick later. The slack starts at two ticks
//! (interrupt latency). A tick can be later than that on a virtual machine whose host
//! deschedules the CPU that keeps time; widening then keeps the shortcut for the rest of
//! the process instead of giving it up at the first stall.

use super::Bounds;
use crate::sync::{Ordering, ProcessAtomicU64};

/// Not yet calibrated.
const UNKNOWN: u64 = 0;
/// The coarse clock proved unusable: no bounds are given.
const DISTRUSTED: u64 = u64::MAX;
/// A coarse clock coarser than this saves too little to be worth the bookkeeping.
const MAX_RESOLUTION_NS: u64 = 20_000_000;
/// The widest slack worth keeping: past it so few decisions settle on the coarse clock
/// that reading it is wasted.
const MAX_SLACK_NS: u64 = 256_000_000;

/// The slack of one time source: `UNKNOWN`, `DISTRUSTED`, or the width in ns. It only grows.
#[derive(Debug)]
pub(super) struct Slack {
    ns: ProcessAtomicU64,
}

impl Slack {
    pub(super) const fn new() -> Self {
        Self {
            ns: ProcessAtomicU64::new(UNKNOWN),
        }
    }

    /// The slack, calibrated on first use from the coarse clock's `resolution` (`None`:
    /// it has none to trust); `None` when the coarse clock cannot be trusted.
    #[inline(always)]
    pub(super) fn get(&self, resolution: impl FnOnce() -> Option<u64>) -> Option<u64> {
        // Relaxed: the slack is a number that only grows, read by itself; no other memory
        // depends on it.
        match self.ns.load(Ordering::Relaxed) {
            UNKNOWN => Some(self.calibrate(resolution())).filter(|&slack| slack != DISTRUSTED),
            DISTRUSTED => None,
            slack => Some(slack),
        }
    }

    /// The slack once calibrated, and `None` before, without calibrating it (or when the
    /// coarse clock cannot be trusted).
    #[inline(always)]
    pub(super) fn calibrated(&self) -> Option<u64> {
        // Relaxed: as in `get`.
        match self.ns.load(Ordering::Relaxed) {
            UNKNOWN | DISTRUSTED => None,
            slack => Some(slack),
        }
    }

    /// Sets the first slack. Racing first calls compute the same value; `fetch_max` keeps
    /// a late one from undoing a widening.
    fn calibrate(&self, resolution: Option<u64>) -> u64 {
        let slack = match resolution {
            Some(resolution) if resolution > 0 && resolution <= MAX_RESOLUTION_NS => 2 * resolution,
            _ => DISTRUSTED,
        };
        // Relaxed: as in `get`.
        self.ns.fetch_max(slack, Ordering::Relaxed).max(slack)
    }

    /// Checks an exact reading `now` taken after `bounds`. A reading past `latest` means
    /// either that this thread was descheduled between the two reads, or that the coarse
    /// clock lags by more than the slack; `recheck`, a second coarse reading, tells them
    /// apart: the exact time at that reading is at least `now`, so if even this fresher
    /// coarse reading is more than the slack behind `now`, the lag is proven.
    #[inline]
    pub(super) fn check(&self, bounds: Bounds, now: u64, recheck: impl FnOnce() -> u64) {
        if now > bounds.latest {
            let recheck = recheck();
            let slack = bounds.latest - bounds.earliest;
            if now > recheck.saturating_add(slack) {
                // Relaxed: as in `get`.
                self.ns
                    .fetch_max(widened(slack, now - recheck), Ordering::Relaxed);
            }
        }
    }
}

/// The slack to use after the coarse clock was seen `lag` ns behind the exact one, beyond
/// the current `slack`: twice the lag (a stall seen once can recur a little longer), at
/// least twice the slack, or [`DISTRUSTED`] past [`MAX_SLACK_NS`].
fn widened(slack: u64, lag: u64) -> u64 {
    let wider = slack.saturating_mul(2).max(lag.saturating_mul(2));
    if wider > MAX_SLACK_NS {
        DISTRUSTED
    } else {
        wider
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn a_late_tick_widens_the_slack_until_it_is_not_worth_keeping() {
        assert_eq!(widened(8 * MS, 9 * MS), 18 * MS);
        assert_eq!(widened(8 * MS, 1), 16 * MS);
        assert_eq!(widened(100 * MS, 120 * MS), 240 * MS);
        assert_eq!(widened(200 * MS, 1), DISTRUSTED);
        assert_eq!(widened(8 * MS, u64::MAX), DISTRUSTED);
        assert_eq!(widened(DISTRUSTED, 1), DISTRUSTED);
    }

    #[test]
    fn calibrated_from_the_resolution_once() {
        let slack = Slack::new();
        assert_eq!(slack.get(|| Some(4 * MS)), Some(8 * MS));
        assert_eq!(
            slack.get(|| unreachable!("calibrated already")),
            Some(8 * MS)
        );
        for unusable in [None, Some(0), Some(MAX_RESOLUTION_NS + 1)] {
            assert_eq!(Slack::new().get(|| unusable), None, "{unusable:?}");
        }
    }

    #[test]
    fn only_a_proven_lag_widens() {
        let slack = Slack::new();
        slack.get(|| Some(4 * MS));
        let bounds = Bounds {
            earliest: 100 * MS,
            latest: 108 * MS,
        };
        // Within the bounds: nothing to check.
        slack.check(bounds, 108 * MS, || {
            unreachable!("no recheck inside the bounds")
        });
        // Past them, but a fresh coarse reading is within the slack: descheduled, not late.
        slack.check(bounds, 120 * MS, || 115 * MS);
        assert_eq!(slack.get(|| None), Some(8 * MS));
        // Past them and the fresh coarse reading lags 10 ms: twice that.
        slack.check(bounds, 130 * MS, || 120 * MS);
        assert_eq!(slack.get(|| None), Some(20 * MS));
    }
}
