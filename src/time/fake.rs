//! A time source for tests: its readings are whatever the test sets, and it counts them,
//! so a test can drive every path of a decision (coarse bounds, a late tick, the hint) at
//! chosen instants and see which clock each path read.

use super::slack::Slack;
use super::{Bounds, TimeSource};
use crate::sync::{Ordering, ProcessAtomicU64};

/// A clock the test moves: an exact time, a coarse time at most that, and the coarse
/// clock's resolution.
#[derive(Debug)]
pub(crate) struct FakeTime {
    exact: ProcessAtomicU64,
    coarse: ProcessAtomicU64,
    /// Read again by `now_after` when the exact time is past the bounds.
    coarse_later: ProcessAtomicU64,
    resolution: Option<u64>,
    slack: Slack,
    exact_reads: ProcessAtomicU64,
    coarse_reads: ProcessAtomicU64,
}

impl FakeTime {
    /// A clock at 0 whose coarse clock has `resolution` (`None`: no coarse clock to trust).
    pub(crate) fn new(resolution: Option<u64>) -> Self {
        Self {
            exact: ProcessAtomicU64::new(0),
            coarse: ProcessAtomicU64::new(0),
            coarse_later: ProcessAtomicU64::new(0),
            resolution,
            slack: Slack::new(),
            exact_reads: ProcessAtomicU64::new(0),
            coarse_reads: ProcessAtomicU64::new(0),
        }
    }

    /// Sets the exact time and the coarse reading (also the one a recheck gives).
    pub(crate) fn set(&self, coarse: u64, exact: u64) {
        self.set_with_recheck(coarse, exact, coarse);
    }

    /// Sets the exact time, the coarse reading and the coarse reading a recheck after
    /// the exact read gives.
    pub(crate) fn set_with_recheck(&self, coarse: u64, exact: u64, recheck: u64) {
        // Relaxed: test-only state, read by the thread that set it.
        self.coarse.store(coarse, Ordering::Relaxed);
        self.exact.store(exact, Ordering::Relaxed);
        self.coarse_later.store(recheck, Ordering::Relaxed);
    }

    /// How many coarse and exact readings were taken since the last call.
    pub(crate) fn take_reads(&self) -> (u64, u64) {
        (
            self.coarse_reads.swap(0, Ordering::Relaxed),
            self.exact_reads.swap(0, Ordering::Relaxed),
        )
    }
}

impl TimeSource for &FakeTime {
    fn now(self) -> u64 {
        self.exact_reads.fetch_add(1, Ordering::Relaxed);
        self.exact.load(Ordering::Relaxed)
    }

    /// The exact time itself: a fake clock has published every reading.
    fn passed(self) -> u64 {
        self.exact.load(Ordering::Relaxed)
    }

    fn slack(self) -> Option<u64> {
        self.slack.get(|| self.resolution)
    }

    fn bounds(self) -> Option<Bounds> {
        let slack = self.slack()?;
        self.coarse_reads.fetch_add(1, Ordering::Relaxed);
        let earliest = self.coarse.load(Ordering::Relaxed);
        Some(Bounds {
            earliest,
            latest: earliest.saturating_add(slack),
        })
    }

    fn now_after(self, bounds: Bounds) -> u64 {
        let now = self.now();
        self.slack.check(bounds, now, || {
            self.coarse_reads.fetch_add(1, Ordering::Relaxed);
            self.coarse_later.load(Ordering::Relaxed)
        });
        now
    }
}
