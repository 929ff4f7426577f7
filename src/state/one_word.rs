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
use super::request::{Request, Settle, TryAcquire};
use super::{Refund, Stored};
use crate::algorithm::{Algorithm, Allowance, FixedWindow, Gcra};
use crate::decision::Decision;
use crate::sync::{AtomicU64, Ordering};
use crate::time::{self, Bounds, TimeSource, Timed};

/// An algorithm whose whole state is one word.
pub(crate) trait OneWord: Algorithm<u64, Update = u64> {}

impl OneWord for Gcra {}

impl OneWord for FixedWindow {}

impl OneWord for Allowance {}

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

/// [`reserve_at`], with what giving an admission back takes (`None` for a denial or a
/// query): a waiter that gives up its place in the queue before its wait ends (docs/rust.md,
/// Waiting) gives the units back as a policy's step does. A function of its own rather than
/// one `reserve_at` calls dropping the refund: the plain reserve's code stays as it was.
#[inline(always)]
pub(crate) fn reserve_refundable_at<T: Tenancy>(
    gcra: &Gcra,
    state: &[AtomicU64],
    tenancy: &T,
    now: u64,
    n: u64,
    max_wait: u64,
) -> Result<(Decision, Option<Refund>), T::Evicted> {
    decide_and_swap(&state[0], tenancy, |tat| {
        let outcome = gcra.reserve(tat, now, n, max_wait);
        let refund = outcome.update.map(|after| Refund::new(0, tat, after));
        ((outcome.decision, refund), outcome.update)
    })
}

impl<A: OneWord> Stored for A {
    type Now<'a, T: Tenancy + 'a>
        = Now<'a, A, T>
    where
        A: 'a;

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
    ) -> Result<R::Out, T::Evicted> {
        // The refund comes out with the result rather than through a variable the loop
        // writes: a denial then returns straight from the loop, nothing kept in memory.
        let (out, refund) = decide_and_swap(&state[0], tenancy, |word| {
            let (out, next) = request.decide(self, &word);
            let refund = next
                .filter(|_| R::REFUNDS)
                .map(|after| Refund::new(0, word, after));
            ((out, refund), next)
        })?;
        if let Some(refund) = refund {
            request.keep(refund);
        }
        Ok(out)
    }

    #[inline(always)]
    fn try_acquire<T: Tenancy, C: TimeSource>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        let word = &state[0];
        time::decide(
            time,
            Now {
                algorithm: self,
                word,
                tenancy,
                n,
            },
        )
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

/// GCRA's try-acquire of `1 ≤ n` units on its `word`, for the time strategy to decide when
/// the hint says to read the exact clock first ([`time::precise_first`]): for a limiter
/// to take before its dispatch on the algorithm, since an idle bucket takes it on every
/// call.
#[inline(always)]
pub(crate) fn gcra_now<'a, T: Tenancy>(
    gcra: &'a Gcra,
    word: &'a AtomicU64,
    tenancy: &'a T,
    n: u64,
) -> Now<'a, Gcra, T> {
    Now {
        algorithm: gcra,
        word,
        tenancy,
        n,
    }
}

/// A try-acquire of `1 ≤ n` units on one word, for the time strategy to decide.
pub(crate) struct Now<'a, A, T> {
    algorithm: &'a A,
    word: &'a AtomicU64,
    tenancy: &'a T,
    n: u64,
}

impl<A: OneWord, T: Tenancy> Timed for Now<'_, A, T> {
    type Evicted = T::Evicted;
    /// Hinted where the word alone can show that only the exact time will do, as an idle
    /// GCRA bucket's does.
    const HINTED: bool = A::PEEKS;
    const PEEKS: bool = A::PEEKS;

    #[inline(always)]
    fn needs_exact(&self, passed: impl FnOnce() -> u64) -> bool {
        // Relaxed: a peek that only picks the clock; the decision reads the word again.
        let peek = self.word.load(Ordering::Relaxed);
        self.algorithm.needs_exact(&peek, passed(), self.n)
    }

    /// A counter's common denial, from one load that never swaps. (A hinted algorithm's
    /// peek already picked the clock: it has none to try.)
    #[inline(always)]
    fn denied_through(&self, latest: u64) -> Result<bool, T::Evicted> {
        if A::PEEKS {
            return Ok(false);
        }
        decide_and_swap(self.word, self.tenancy, |word| {
            (self.algorithm.denied_through(&word, latest, self.n), None)
        })
    }

    #[inline(always)]
    fn settle(&self, bounds: Bounds) -> Result<Option<bool>, T::Evicted> {
        decide_and_swap(self.word, self.tenancy, |word| {
            Settle { bounds, n: self.n }.decide(self.algorithm, &word)
        })
    }

    #[inline(always)]
    fn at(&self, now: u64) -> Result<bool, T::Evicted> {
        decide_and_swap(self.word, self.tenancy, |word| {
            TryAcquire { now, n: self.n }.decide(self.algorithm, &word)
        })
    }

    /// The swap reads the word once: a word the bounds could have settled (a TAT further
    /// ahead of the clock than the bounds reach) is the one it decided on. A word that
    /// needs the exact time once the clock reached `now` needs it at every later time too
    /// (the idle bucket's `tat ≤ now`), so the slack is read only for one that did not.
    #[inline(always)]
    fn at_learning(
        &self,
        now: u64,
        slack: impl FnOnce() -> Option<u64>,
    ) -> Result<(bool, bool), T::Evicted> {
        let (algorithm, n) = (self.algorithm, self.n);
        let (allowed, seen) = decide_and_swap(self.word, self.tenancy, |seen| {
            let next = algorithm.try_decide(&seen, now, n);
            ((next.is_some(), seen), next)
        })?;
        let settles = !algorithm.needs_exact(&seen, now, n)
            && slack()
                .is_some_and(|slack| !algorithm.needs_exact(&seen, now.saturating_add(slack), n));
        Ok((allowed, settles))
    }
}
