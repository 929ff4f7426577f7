//! Time, the one input every decision takes: a [`TimeSource`] owns how it is read.
//!
//! A decision needs the time `now`. Reading it exactly (`CLOCK_MONOTONIC`) costs several
//! times more than the decision itself, while a coarse clock is cheap and gives
//! [`Bounds`] on it; a decision that every instant within the bounds makes alike needs no
//! more. A time source offers both readings, the slack that makes the bounds hold (widened
//! when the host proves it too narrow), a time the clock has certainly passed, and a
//! limiter's hint of which reading to take first. Algorithms never see a time source, nor
//! do stores choose among its readings: a store describes its decision as steps at a time
//! or for bounds ([`Timed`]), and [`decide`] picks the readings, on behalf of the edge (a
//! limiter, a keyed table) that passes the source in once.
//!
//! - `clock.rs`: the reads of the host's clocks and the published `passed` time.
//! - `tsc.rs`: `CLOCK_MONOTONIC` read through the TSC, where the kernel keeps it so.
//! - `slack.rs`: the width of the coarse bounds, calibrated once and widened after a late tick.
//! - `monotonic.rs`: [`Monotonic`], the library's time source.
//! - `strategy.rs`: [`decide`], which picks the readings a decision takes (coarse first,
//!   exact when needed or hinted) for a store's [`Timed`] decision.
//! - `hint.rs`: [`ClockHint`], a limiter's memory of which reading its decisions needed,
//!   [`ThreadHint`], a thread's for its keyed decisions, and [`Hinted`], a time source
//!   that consults one (and may take its exact reading first).
//! - `instant.rs`: [`Instant`], an explicit time as the public API takes it.
//! - `fake.rs` (tests only): a time source whose readings a test sets.

mod clock;
#[cfg(all(test, not(loom)))]
pub(crate) mod fake;
mod hint;
mod instant;
mod monotonic;
mod slack;
mod strategy;
mod tsc;

pub(crate) use clock::prepare;
pub use clock::{clock_reads_inline, clock_source, now_ns, ClockSource};
pub(crate) use hint::{ClockHint, Hinted, ThreadHint};
pub(crate) use instant::nanos;
pub use instant::Instant;
pub(crate) use monotonic::Monotonic;
pub(crate) use strategy::{decide, precise_first, precise_first_inline, Timed};

/// Bounds on the exact time from one cheap reading: `earliest ≤ now ≤ latest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// The exact clock has reached at least this.
    pub(crate) earliest: u64,
    /// The exact clock has reached at most this.
    pub(crate) latest: u64,
}

/// Where a decision gets its time, and the strategy for reading it cheaply. A source is a
/// small `Copy` value (a handle on the clocks and a hint), passed in registers.
///
/// Every reading is on one timeline (the library's is `CLOCK_MONOTONIC`). A caller that
/// decides on [`bounds`](Self::bounds) must decide exactly as it would at every instant
/// within them, and otherwise read [`now_after`](Self::now_after) those bounds.
pub(crate) trait TimeSource: Copy {
    /// The exact time.
    fn now(self) -> u64;

    /// The exact time when it reads without a call, as [`now`](Self::now) reads it most
    /// of the time; `None` when only the call would do (then nothing was read).
    #[inline(always)]
    fn now_inline(self) -> Option<u64> {
        Some(self.now())
    }

    /// A time the exact clock has certainly reached; cheap, and possibly long past.
    fn passed(self) -> u64;

    /// How wide [`bounds`](Self::bounds) are, or `None` when this source has no cheap
    /// reading to trust.
    fn slack(self) -> Option<u64>;

    /// [`slack`](Self::slack) when it reads without a call; `None` also where only a call
    /// would tell (before the first calibration), which costs a decision no more than the
    /// chance to learn from it.
    #[inline(always)]
    fn slack_inline(self) -> Option<u64> {
        self.slack()
    }

    /// Bounds on the exact time from one cheap reading, or `None` as for `slack`.
    fn bounds(self) -> Option<Bounds>;

    /// The exact time, read after `bounds` were: checks that they held, and widens the
    /// slack of later bounds when a late tick proves them too narrow.
    fn now_after(self, bounds: Bounds) -> u64;

    /// The exact time, read after `bounds` if a decision read any.
    #[inline(always)]
    fn now_after_any(self, bounds: Option<Bounds>) -> u64 {
        match bounds {
            Some(bounds) => self.now_after(bounds),
            None => self.now(),
        }
    }

    /// Whether to read the exact time before looking at the state: the decisions before
    /// needed it (see [`ClockHint`]). Sources without a hint never do.
    #[inline(always)]
    fn precise_first(self) -> bool {
        false
    }

    /// Remembers which reading the next decision should take first; sources without a
    /// hint forget it.
    #[inline(always)]
    fn learn(self, _precise_first: bool) {}
}
