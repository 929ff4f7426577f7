//! The algorithms of docs/decision.md as pure rules: from what a decision reads of the state, a
//! time and a cost, to a decision and the state to store. No atomics, no clock, no keys.
//!
//! Each algorithm implements [`Algorithm`] over the state it reads: one word for GCRA
//! (its TAT) and the fixed window (its packed window and count), the two counts of the
//! current and previous windows for the sliding window counter, and a read-only view of
//! its ring for the sliding log. How those states live in atomic words, are read
//! consistently and are swapped is the state layer's business (`src/state/`).
//!
//! - `gcra.rs`: GCRA, the leaky bucket as a meter and (with a wait) as a queue.
//! - `windows.rs`: the timeline cut into windows, and the packed `(window, count)` word.
//! - `fixed_window.rs`, `sliding_window.rs`: the two window counters.
//! - `sliding_log.rs`: the exact log of admitted timestamps.
//! - `allowance.rs`: any of them with a period that never ends (a rate of zero).
//! - `carry.rs`: what a state holds when its rule is replaced, and the new rule's state
//!   holding the same.
//! - `divisor.rs`: division by a constant without a `div`, for GCRA's `remaining`.

mod allowance;
mod carry;
mod divisor;
mod fixed_window;
mod gcra;
mod sliding_log;
mod sliding_window;
mod windows;

pub(crate) use allowance::Allowance;
pub(crate) use fixed_window::FixedWindow;
pub(crate) use gcra::Gcra;
pub(crate) use sliding_log::{Claim, LogRead, SlidingLog};
pub(crate) use sliding_window::{Counts, SlidingWindow};
pub(crate) use windows::{Counted, Windows};

use crate::decision::Decision;

/// The largest value an algorithm ever stores in its state's first word.
///
/// Every algorithm promises two things of that word, on which the state layer builds:
/// 1. It never exceeds `MAX_STATE`, so the values above it are free for the state layer's
///    own use (a keyed table marks its slots with them).
/// 2. It strictly grows with every change, so a value it held once never comes back (a
///    compare-and-swap that expects it cannot be fooled: no ABA).
pub(crate) const MAX_STATE: u64 = u64::MAX - 256;

/// What a decision does: its report, and the state to store if it changes the state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Outcome<U> {
    pub(crate) decision: Decision,
    /// `None` for a denial or a query, which never write.
    pub(crate) update: Option<U>,
}

/// What deciding one request for every instant of an interval at once gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Settled<U> {
    /// Every instant admits, and stores the same update.
    Admit(U),
    /// Every instant denies.
    Deny,
    /// The outcome or the update depends on where in the interval the time lies.
    Undecided,
}

impl<U> Settled<U> {
    /// Whether the interval decided (`Some(admitted)`), and the update an admission
    /// stores: the shape of one step of a store's swap loop.
    #[inline(always)]
    pub(crate) fn into_parts(self) -> (Option<bool>, Option<U>) {
        match self {
            Self::Admit(update) => (Some(true), Some(update)),
            Self::Deny => (Some(false), None),
            Self::Undecided => (None, None),
        }
    }
}

/// What every algorithm has whatever state it reads: its decisions' `limit`.
pub(crate) trait Rule {
    /// The decision's `limit`: the largest cost that can ever be admitted.
    fn limit(&self) -> u64;
}

/// One algorithm's decision rule over the state `S` it reads, as pure arithmetic.
///
/// Requests reach it checked: `n ≤ limit`. Every method is a function of its arguments
/// alone, so the state layer may call it again on the state it ends up swapping, and a
/// test may call it on a plain value.
pub(crate) trait Algorithm<S: ?Sized>: Rule {
    /// What an admission stores.
    type Update: Copy;

    /// Decides `n` units at `now` with the full report. `n == 0` is a query: admitted,
    /// and no update. A denial has no update either.
    fn decide(&self, state: &S, now: u64, n: u64) -> Outcome<Self::Update>;

    /// Decides `1 ≤ n` units at `now` without the report: the update if admitted.
    fn try_decide(&self, state: &S, now: u64, n: u64) -> Option<Self::Update>;

    /// Decides `1 ≤ n` units for every instant in `[earliest, latest]` at once.
    fn settle(&self, state: &S, earliest: u64, latest: u64, n: u64) -> Settled<Self::Update>;

    /// Whether `state` decides every request at `now` and later as a fresh one does
    /// (docs/keyed.md, reclaim), so that a keyed table may drop it.
    fn is_fresh(&self, state: &S, now: u64) -> bool;

    /// Whether `state` alone denies `n ≥ 1` units at every instant up to `latest`: a
    /// cheap test of the common denial (a client over its limit) that a store may try
    /// before anything else. `false` when unsure.
    #[inline(always)]
    fn denied_through(&self, _state: &S, _latest: u64, _n: u64) -> bool {
        false
    }

    /// Whether [`needs_exact`](Self::needs_exact) ever says `true`: only then is a look at
    /// the state before any clock is read worth its load.
    const PEEKS: bool = false;

    /// Whether a decision of `n ≥ 1` units on `state` needs the exact time once the clock
    /// has reached `passed`, whatever bounds on it say: no interval of instants settles it
    /// (an idle GCRA bucket, whose new TAT is `now + n·T`). `false` when bounds may.
    #[inline(always)]
    fn needs_exact(&self, _state: &S, _passed: u64, _n: u64) -> bool {
        false
    }
}

/// The fix a window algorithm's constructor `new` names for a limit too large for its
/// period, checked exact: the field at the bound is accepted and one past it rejected (a
/// bound of `u64::MAX` is the period that never ends, which the decider takes for an
/// allowance: only the step past it is checked).
#[cfg(test)]
pub(crate) fn checked_fix<A>(
    new: impl Fn(u64, u64) -> Result<A, crate::error::Breach>,
    limit: u64,
    period_ns: u64,
) -> Option<(crate::error::Field, crate::error::Bound)> {
    use crate::error::{Bound, Breach, Field};
    let Err(Breach::LimitTooLarge(fix)) = new(limit, period_ns) else {
        panic!("{limit}/{period_ns} is not too large");
    };
    match fix {
        Some((Field::Limit, Bound::AtMost(most))) => {
            assert!(new(most, period_ns).is_ok());
            assert!(new(most + 1, period_ns).is_err());
        }
        Some((Field::PeriodNs, Bound::AtLeast(least))) => {
            assert!(least == u64::MAX || new(limit, least).is_ok());
            assert!(new(limit, least - 1).is_err());
        }
        other => assert_eq!(other, None),
    }
    fix
}
