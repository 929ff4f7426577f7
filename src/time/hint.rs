//! Which reading a limiter's or a keyed table's decisions take first, remembered from the
//! decisions before.
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
#[cfg(not(loom))]
use std::cell::Cell;

/// Where a memory of which reading to take first is kept: a limiter's [`ClockHint`], or
/// this thread's ([`ThreadHint`]).
pub(crate) trait Hint: Copy {
    /// Whether to read the exact clock before looking at the state.
    fn precise_first(self) -> bool;

    /// Remembers which clock the next decision should read first.
    fn set(self, precise_first: bool);
}

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

impl Hint for &ClockHint {
    #[inline(always)]
    fn precise_first(self) -> bool {
        ClockHint::precise_first(self)
    }

    #[inline(always)]
    fn set(self, precise_first: bool) {
        ClockHint::set(self, precise_first);
    }
}

/// Whether this thread's last decision on a keyed table's key needed the exact time: a
/// decision reads it once ([`ThreadHint::read`]) and passes on what it read as
/// `PRECISE_FIRST`, a constant to the code it picks.
///
/// A table's keys differ (some idle, some busy), so a hint kept in the table would flip
/// with its traffic, and each flip would be a write to a line that every call, on every
/// core, reads; this thread's hint is written by this thread alone.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ThreadHint<const PRECISE_FIRST: bool>;

#[cfg(not(loom))]
thread_local! {
    /// See [`ThreadHint`]. A `Cell` without a destructor: reading it never fails, even
    /// while the thread exits.
    static THREAD_PRECISE_FIRST: Cell<bool> = const { Cell::new(false) };
}

impl ThreadHint<false> {
    /// This thread's hint now. Under loom, always to peek first: a hint changes no
    /// outcome, only which clock is read first, and loom models no clock.
    #[inline(always)]
    pub(crate) fn read() -> bool {
        #[cfg(not(loom))]
        return THREAD_PRECISE_FIRST.with(Cell::get);
        #[cfg(loom)]
        return false;
    }
}

impl<const PRECISE_FIRST: bool> Hint for ThreadHint<PRECISE_FIRST> {
    #[inline(always)]
    fn precise_first(self) -> bool {
        PRECISE_FIRST
    }

    /// Writes only a change.
    #[inline(always)]
    fn set(self, precise_first: bool) {
        #[cfg(not(loom))]
        if precise_first != PRECISE_FIRST {
            THREAD_PRECISE_FIRST.with(|hint| hint.set(precise_first));
        }
        #[cfg(loom)]
        let _ = precise_first;
    }
}

/// A time source that consults a [`Hint`]: what a limiter (its own) or a keyed table (the
/// thread's) passes in, so its decisions learn which reading to take first. Its exact
/// reading is taken when asked for ([`Unread`]), or was taken first (a `u64`: see
/// [`read_first`](Self::read_first)).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hinted<S, H, R = Unread> {
    source: S,
    hint: H,
    read: R,
}

/// Where a [`Hinted`] source's exact time comes from: its source, when asked ([`Unread`]),
/// or a reading taken already (`u64`).
pub(crate) trait Reading: Copy {
    /// The exact time.
    fn now(self, source: impl TimeSource) -> u64;

    /// The exact time when it reads without a call ([`TimeSource::now_inline`]).
    fn now_inline(self, source: impl TimeSource) -> Option<u64>;
}

/// No reading taken yet: the exact time is read when asked for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unread;

impl Reading for Unread {
    #[inline(always)]
    fn now(self, source: impl TimeSource) -> u64 {
        source.now()
    }

    #[inline(always)]
    fn now_inline(self, source: impl TimeSource) -> Option<u64> {
        source.now_inline()
    }
}

impl Reading for u64 {
    #[inline(always)]
    fn now(self, _source: impl TimeSource) -> u64 {
        self
    }

    #[inline(always)]
    fn now_inline(self, _source: impl TimeSource) -> Option<u64> {
        Some(self)
    }
}

impl<S, H> Hinted<S, H> {
    #[inline(always)]
    pub(crate) fn new(source: S, hint: H) -> Self {
        Self {
            source,
            hint,
            read: Unread,
        }
    }
}

impl<S: TimeSource, H> Hinted<S, H, u64> {
    /// `source` with `hint`, its exact time read now, at the start of a decision, before
    /// the work that leads up to it (a keyed table's hashing of the key), so that the
    /// read overlaps that work: [`now`](TimeSource::now) is that reading, an instant
    /// within the call. A reading after bounds is taken afresh, since it must follow them.
    #[inline(always)]
    pub(crate) fn read_first(source: S, hint: H) -> Self {
        Self {
            read: source.now(),
            source,
            hint,
        }
    }
}

impl<S: TimeSource, H: Hint, R: Reading> TimeSource for Hinted<S, H, R> {
    #[inline(always)]
    fn now(self) -> u64 {
        self.read.now(self.source)
    }

    #[inline(always)]
    fn now_inline(self) -> Option<u64> {
        self.read.now_inline(self.source)
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
    fn slack_inline(self) -> Option<u64> {
        self.source.slack_inline()
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
