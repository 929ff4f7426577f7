//! Which reading a single limiter's decisions take first, remembered from the decisions
//! before.
//!
//! A bucket the coarse clock can settle (a TAT well ahead of the clock: busy or denying)
//! is best decided by peeking at its state and reading the cheap coarse clock. A bucket at
//! or behind the clock (idle, or admitting near its rate) needs the exact time, since its
//! new TAT is `now + n·T`; peeking first then costs a coarse read and, when threads
//! contend, one more transfer of the state's cache line: the peek's, before the swap's.
//! Reading the exact clock first lets the swap fetch the line once. Both paths decide
//! exactly; the hint only picks the faster one.

use super::{Bounds, TimeSource};
use crate::sync::{AtomicBool, Ordering};

/// Whether the last decisions of one limiter needed the exact time.
///
/// It lives beside the limiter's configuration, a line read on every call and otherwise
/// written only when the hint changes, never beside the state, which every admission
/// writes.
#[derive(Debug, Default)]
pub(crate) struct ClockHint {
    precise_first: AtomicBool,
}

impl ClockHint {
    /// Whether to read the exact clock before looking at the state.
    #[inline(always)]
    pub(crate) fn precise_first(&self) -> bool {
        // Relaxed: the hint publishes nothing and either value leads to an exact decision.
        self.precise_first.load(Ordering::Relaxed)
    }

    /// Remembers which clock the next decision should read first. Writes only a change,
    /// so a steady hint stays in every core's cache.
    #[inline]
    pub(crate) fn set(&self, precise_first: bool) {
        if self.precise_first() != precise_first {
            // Relaxed: see `precise_first`.
            self.precise_first.store(precise_first, Ordering::Relaxed);
        }
    }
}

/// A time source that consults a limiter's [`ClockHint`]: what a single limiter passes
/// in, so its decisions learn which reading to take first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hinted<'a, S> {
    source: S,
    hint: &'a ClockHint,
}

impl<'a, S> Hinted<'a, S> {
    #[inline(always)]
    pub(crate) fn new(source: S, hint: &'a ClockHint) -> Self {
        Self { source, hint }
    }
}

impl<S: TimeSource> TimeSource for Hinted<'_, S> {
    #[inline(always)]
    fn now(self) -> u64 {
        self.source.now()
    }

    #[inline(always)]
    fn passed(self) -> u64 {
        self.source.passed()
    }

    #[inline(always)]
    fn slack(self) -> Option<u64> {
        self.source.slack()
    }

    #[inline(always)]
    fn bounds(self) -> Option<Bounds> {
        self.source.bounds()
    }

    #[inline(always)]
    fn now_after(self, bounds: Bounds) -> u64 {
        self.source.now_after(bounds)
    }

    #[inline(always)]
    fn precise_first(self) -> bool {
        self.hint.precise_first()
    }

    #[inline(always)]
    fn learn(self, precise_first: bool) {
        self.hint.set(precise_first);
    }
}
