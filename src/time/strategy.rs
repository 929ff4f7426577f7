//! When to read which clock for a decision: the coarse reading first where bounds on the
//! time can settle it, the exact one where only it can (or where the hint says the
//! decisions before needed it). A store describes its decision as a [`Timed`] (pure
//! "decide for bounds" and "decide at a time" steps, and what a peek at its state shows);
//! [`decide`] alone picks the readings and keeps the hint ([`precise_first`], its hinted
//! branch, is for a caller that asked the hint itself, ahead of its own dispatch).

use super::{Bounds, TimeSource};

/// A decision of `1 ≤ n` units that can be made for bounds on the time or at the exact
/// time, as a store offers it: the store reads and swaps its state, the strategy picks the
/// time each step decides at.
pub(crate) trait Timed {
    /// Why the state turned out to belong to someone else (the store's tenancy).
    type Evicted;

    /// Whether the decision keeps its time source's hint ([`super::ClockHint`]): worth it
    /// where a peek at the state can show that only the exact time will do, as an idle
    /// GCRA bucket's does. A limiter or keyed table asks it of its rule's decision (through
    /// the store's `Stored::Now`) before it reads the hint itself.
    const HINTED: bool = false;

    /// Whether [`needs_exact`](Self::needs_exact) looks at anything: otherwise the
    /// strategy never asks, and reads no time for it.
    const PEEKS: bool;

    /// Whether, from a look at the state before any clock is read, the decision needs the
    /// exact time once the clock has reached `passed()`, whatever bounds on it say.
    fn needs_exact(&self, passed: impl FnOnce() -> u64) -> bool;

    /// Whether the state alone denies at every instant up to `latest`: a cheap test of the
    /// common denial, which never writes. `false` when unsure.
    fn denied_through(&self, latest: u64) -> Result<bool, Self::Evicted>;

    /// Decides for every instant within `bounds` at once: `Some(allowed)` (an admission
    /// stored), or `None` (nothing written) when the instants disagree.
    fn settle(&self, bounds: Bounds) -> Result<Option<bool>, Self::Evicted>;

    /// Decides at the exact time `now`.
    fn at(&self, now: u64) -> Result<bool, Self::Evicted>;

    /// [`at`](Self::at), and whether bounds `slack()` wide (if any) would have settled the
    /// state it decided on: a hinted decision then goes back to the coarse reading first.
    /// `slack` is read only when the state did not need the exact time at `now` already.
    #[inline(always)]
    fn at_learning(
        &self,
        now: u64,
        _slack: impl FnOnce() -> Option<u64>,
    ) -> Result<(bool, bool), Self::Evicted> {
        Ok((self.at(now)?, false))
    }
}

/// Decides `decision` by `time`, reading the time only as far as it needs: on the bounds
/// when they settle it, else at the exact time (read after the bounds, so the outcome is
/// the decision's at some instant within the call). Straight-line code inlined into the
/// caller, with the exact decisions that follow a coarse read out of line: the common
/// decisions (a busy or a drained state) are a peek, a coarse read and one swap, and an
/// idle bucket's a clock read and one swap.
#[inline(always)]
pub(crate) fn decide<C: TimeSource, D: Timed>(time: C, decision: D) -> Result<bool, D::Evicted> {
    if D::HINTED && time.precise_first() {
        return precise_first(time, decision);
    }
    if D::PEEKS && decision.needs_exact(|| time.passed()) {
        // Inlined, unlike the exact decisions below: an idle bucket takes this path on
        // every request, and has nothing but the clock read left to do.
        if D::HINTED {
            time.learn(true);
        }
        return decision.at(time.now());
    }
    let Some(bounds) = time.bounds() else {
        return exact(time, decision, None);
    };
    if decision.denied_through(bounds.latest)? {
        return Ok(false);
    }
    match decision.settle(bounds)? {
        Some(allowed) => Ok(allowed),
        None => exact(time, decision, Some(bounds)),
    }
}

/// [`decide`] at the exact time, read after `bounds` if there were any. A hinted decision's
/// time source learns that it needed the exact time.
#[inline(never)]
// The decision by value: its fields stay in registers on the paths that never get here.
fn exact<C: TimeSource, D: Timed>(
    time: C,
    decision: D,
    bounds: Option<Bounds>,
) -> Result<bool, D::Evicted> {
    if D::HINTED {
        time.learn(true);
    }
    decision.at(time.now_after_any(bounds))
}

/// [`decide`] when the hint says to read the exact clock first: the swap then reads the
/// state once, and the decision is the one at that time. A state the bounds could have
/// settled hands back to peeking first. A caller that knows its decision is hinted may
/// call it directly, ahead of the work that picks the decision (a limiter's dispatch on
/// its algorithm), after asking `time.precise_first()` itself.
// Inlined: while the hint holds, this is the whole decision, a clock read and one swap
// (and a keyed table's thread hint is a constant to the code it picks).
#[inline(always)]
pub(crate) fn precise_first<C: TimeSource, D: Timed>(
    time: C,
    decision: D,
) -> Result<bool, D::Evicted> {
    at_learning(time, decision, time.now(), || time.slack())
}

/// [`precise_first`] when the exact time reads without a call
/// ([`TimeSource::now_inline`]); `None`, having decided nothing, when it does not. With
/// nothing out of line, a caller's whole decision can be a leaf function that saves no
/// registers, and the call it makes otherwise a jump.
#[inline(always)]
pub(crate) fn precise_first_inline<C: TimeSource, D: Timed>(
    time: C,
    decision: D,
) -> Option<Result<bool, D::Evicted>> {
    let now = time.now_inline()?;
    Some(at_learning(time, decision, now, || time.slack_inline()))
}

/// Decides `decision` at `now`, read first, and learns whether bounds `slack()` wide
/// would have settled it.
#[inline(always)]
fn at_learning<C: TimeSource, D: Timed>(
    time: C,
    decision: D,
    now: u64,
    slack: impl FnOnce() -> Option<u64>,
) -> Result<bool, D::Evicted> {
    let (allowed, settles) = decision.at_learning(now, slack)?;
    if settles {
        time.learn(false);
    }
    Ok(allowed)
}
