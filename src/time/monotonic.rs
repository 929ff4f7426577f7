//! The library's time source: `CLOCK_MONOTONIC` exactly, `CLOCK_MONOTONIC_COARSE` for bounds.

use super::slack::Slack;
use super::tsc::MAX_ERROR_NS;
use super::{clock, Bounds, TimeSource};

/// `CLOCK_MONOTONIC`, the timeline of every `now_ns` in this crate, read as cheaply as a
/// decision allows. What it learns (the coarse slack, the published `passed` time) is
/// process-wide: every limiter and table reads the same clocks.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Monotonic;

/// The coarse clock's slack, for the whole process.
static SLACK: Slack = Slack::new();

impl TimeSource for Monotonic {
    #[inline(always)]
    fn now(self) -> u64 {
        clock::now_ns()
    }

    #[inline(always)]
    fn now_inline(self) -> Option<u64> {
        clock::now_ns_inline()
    }

    #[inline(always)]
    fn passed(self) -> u64 {
        clock::passed_ns()
    }

    #[inline(always)]
    fn slack(self) -> Option<u64> {
        SLACK.get(clock::coarse_resolution_ns)
    }

    #[inline(always)]
    fn slack_inline(self) -> Option<u64> {
        SLACK.calibrated()
    }

    /// The coarse reading bounds `CLOCK_MONOTONIC` to `[coarse, coarse + slack]`; the
    /// exact reading (through the TSC, where it serves) may be off that clock by up to
    /// `tsc::MAX_ERROR_NS`, so the bounds are that much wider on each side.
    #[inline(always)]
    fn bounds(self) -> Option<Bounds> {
        let slack = self.slack()?;
        let coarse = clock::coarse_ns();
        Some(Bounds {
            earliest: coarse.saturating_sub(MAX_ERROR_NS),
            latest: coarse.saturating_add(slack + MAX_ERROR_NS),
        })
    }

    #[inline]
    fn now_after(self, bounds: Bounds) -> u64 {
        let now = clock::now_ns();
        SLACK.check(bounds, now, clock::coarse_ns);
        now
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn coarse_bounds_contain_the_exact_time() {
        for _ in 0..1000 {
            if let Some(bounds) = Monotonic.bounds() {
                let now = Monotonic.now_after(bounds);
                assert!(
                    bounds.earliest <= now,
                    "coarse clock ran ahead of the exact one"
                );
            }
        }
    }
}
