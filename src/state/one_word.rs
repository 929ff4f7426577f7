//! States of one word: GCRA's TAT, the fixed window's packed `(window, count)` and an
//! allowance's units used. Every
//! operation is one [`decide_and_swap`] on the word, deciding with the algorithm's pure
//! rule on the value it read; a denial or a query never writes.
//!
//! A reset swaps in 0, the fresh word, which decides as a new limiter at any time. A
//! decision is a function of the value it read alone, so an acquire racing the reset is
//! decided before it (its swap came first, and the reset erased it) or after it (its swap
//! failed and it decided again on the value it then read), even if that value equals one
//! it saw before the reset.

use super::cell::{decide_and_swap, Tenancy};
use super::request::{Request, Settle, Swapped, TryAcquire};
use super::{Refund, Stored};
use crate::algorithm::{Algorithm, Allowance, FixedWindow, Gcra};
use crate::decision::Decision;
use crate::sync::{AtomicU64, Ordering};
use crate::time::{Bounds, TimeSource};

/// An algorithm whose whole state is one word, and whether its decisions read a clock
/// hint first.
pub(crate) trait OneWord: Algorithm<u64, Update = u64> {
    /// Whether `try_acquire` peeks at the word before reading any clock, and keeps the
    /// time source's hint: worth it where the word alone can show that only the exact time
    /// will do ([`Algorithm::needs_exact`]), as an idle GCRA bucket's does.
    const HINTED: bool;
}

impl OneWord for Gcra {
    const HINTED: bool = true;
}

impl OneWord for FixedWindow {
    const HINTED: bool = false;
}

impl OneWord for Allowance {
    const HINTED: bool = false;
}

/// GCRA's reserve (the leaky bucket as a queue): acquires `n` units at `now` if the caller
/// would wait at most `max_wait` before acting. With `max_wait == 0` it is exactly an
/// acquire.
#[inline(always)]
pub(crate) fn reserve_at<T: Tenancy>(
    gcra: &Gcra,
    state: &[AtomicU64],
    tenancy: &T,
    now: u64,
    n: u64,
    max_wait: u64,
) -> Result<Decision, T::Evicted> {
    decide_and_swap(&state[0], tenancy, |tat| {
        let outcome = gcra.reserve(tat, now, n, max_wait);
        (outcome.decision, outcome.update)
    })
}

impl<A: OneWord> Stored for A {
    const HINTED: bool = <A as OneWord>::HINTED;

    #[inline(always)]
    fn state_words(&self) -> usize {
        1
    }

    #[inline(always)]
    fn swap<T: Tenancy, R: Request>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        request: R,
    ) -> Result<Swapped<R::Out>, T::Evicted> {
        let mut refund = None;
        let out = decide_and_swap(&state[0], tenancy, |word| {
            let (out, next) = request.decide(self, &word);
            refund = next.map(|after| Refund::new(0, word, after));
            (out, next)
        })?;
        Ok(Swapped { out, refund })
    }

    /// Straight-line code inlined into the caller, with the exact decisions that follow a
    /// coarse read out of line: the common decisions (a busy or a drained bucket) are a
    /// peek, a coarse read and one swap, and an idle bucket's a clock read and one swap.
    #[inline(always)]
    fn try_acquire<T: Tenancy, C: TimeSource>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        if A::HINTED {
            if time.precise_first() {
                return precise_first(self, &state[0], tenancy, time, n);
            }
            // Relaxed: a peek that only picks the clock; the decision reads the word again.
            let peek = state[0].load(Ordering::Relaxed);
            if self.needs_exact(&peek, time.passed(), n) {
                // Inlined, unlike the exact decisions below: an idle bucket takes this
                // path on every request, and has nothing but the clock read left to do.
                time.learn(true);
                return try_acquire_at(self, state, tenancy, time.now(), n);
            }
        }
        // `TimeSource::decide`'s strategy, written out: passed as a closure, the settling
        // is not always inlined, and this path is the one every busy caller takes.
        let Some(bounds) = time.bounds() else {
            return exact(self, state, tenancy, time, None, n);
        };
        if !A::HINTED {
            // A counter's common denial, from one load that never swaps.
            let denied = decide_and_swap(&state[0], tenancy, |word| {
                (self.denied_through(&word, bounds.latest, n), None)
            })?;
            if denied {
                return Ok(false);
            }
        }
        match self.swap(state, tenancy, Settle { bounds, n })?.out {
            Some(allowed) => Ok(allowed),
            None => exact(self, state, tenancy, time, Some(bounds), n),
        }
    }

    fn reset<T: Tenancy>(&self, state: &[AtomicU64], tenancy: &T) -> Result<(), T::Evicted> {
        // A swap rather than a store, so that words a change replaced stay replaced.
        decide_and_swap(&state[0], tenancy, |word| ((), (word != 0).then_some(0)))
    }

    #[inline]
    fn is_fresh(&self, _state: &[AtomicU64], first: u64, now: u64) -> bool {
        Algorithm::is_fresh(self, &first, now)
    }
}

/// Acquires `1 ≤ n` units at `now`: whether they were admitted, and the word the decision
/// was made on.
#[inline(always)]
fn swap_seen<A: OneWord, T: Tenancy>(
    algorithm: &A,
    word: &AtomicU64,
    tenancy: &T,
    now: u64,
    n: u64,
) -> Result<(bool, u64), T::Evicted> {
    decide_and_swap(word, tenancy, |seen| {
        let next = algorithm.try_decide(&seen, now, n);
        ((next.is_some(), seen), next)
    })
}

/// [`Stored::try_acquire`] at the exact time, read after `bounds` if there were any. A
/// hinted algorithm's time source learns that this decision needed the exact time.
#[inline(never)]
fn exact<A: OneWord, T: Tenancy, C: TimeSource>(
    algorithm: &A,
    state: &[AtomicU64],
    tenancy: &T,
    time: C,
    bounds: Option<Bounds>,
    n: u64,
) -> Result<bool, T::Evicted> {
    if A::HINTED {
        time.learn(true);
    }
    try_acquire_at(algorithm, state, tenancy, time.now_after_any(bounds), n)
}

/// A [`TryAcquire`] of `1 ≤ n` units at `now`.
#[inline(always)]
fn try_acquire_at<A: OneWord, T: Tenancy>(
    algorithm: &A,
    state: &[AtomicU64],
    tenancy: &T,
    now: u64,
    n: u64,
) -> Result<bool, T::Evicted> {
    Ok(algorithm.swap(state, tenancy, TryAcquire { now, n })?.out)
}

/// [`Stored::try_acquire`] when the hint says to read the exact clock first: the swap then
/// reads the word once, and the decision is the one at that time. A word the bounds could
/// have settled (a TAT further ahead of the clock than the bounds reach) hands back to
/// peeking first.
// Inlined: while the hint holds, this is the whole decision, a clock read and one swap
// (and a keyed table's thread hint is a constant to the code it picks).
#[inline(always)]
fn precise_first<A: OneWord, T: Tenancy, C: TimeSource>(
    algorithm: &A,
    word: &AtomicU64,
    tenancy: &T,
    time: C,
    n: u64,
) -> Result<bool, T::Evicted> {
    let now = time.now();
    let (allowed, seen) = swap_seen(algorithm, word, tenancy, now, n)?;
    if time
        .slack()
        .is_some_and(|slack| !algorithm.needs_exact(&seen, now.saturating_add(slack), n))
    {
        time.learn(false);
    }
    Ok(allowed)
}
