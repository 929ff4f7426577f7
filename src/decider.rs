//! One enum over the algorithms: it validates a [`Config`] and dispatches every operation
//! to the chosen algorithm's store (`src/state/`), so the direct limiter and the keyed
//! table share every line of decision code and differ only in where the words live, who
//! else may repurpose them (the [`Tenancy`]) and the time source they pass in.

use crate::algorithm::{Allowance, FixedWindow, Gcra, Rule, SlidingLog, SlidingWindow, Windows};
use crate::config::Algorithm;
use crate::config::Config;
use crate::decision::Decision;
use crate::error::{Breach, ConfigError, InsufficientCapacity, ReserveError};
use crate::state::{
    gcra_now, is_marker, replaced_counts, reserve_at, reserve_refundable_at, store_counts,
    window_acquire_at, Acquire, Owned, Refund, Refundable, Request, Stored, Tenancy,
};
use crate::sync::{AtomicU64, Ordering};
use crate::time::{self, TimeSource, Timed};

/// A validated algorithm with its parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Decider {
    Gcra(Gcra),
    FixedWindow(FixedWindow),
    SlidingWindow(SlidingWindow),
    SlidingLog(SlidingLog),
    /// Any algorithm with a period of [`Config::FOREVER`]: a rate of zero.
    Allowance(Allowance),
}

/// Runs `$body` with `$algorithm` bound to the decider's algorithm, whichever it is.
macro_rules! dispatch {
    ($decider:expr, $algorithm:ident => $body:expr) => {
        match $decider {
            Decider::Gcra($algorithm) => $body,
            Decider::FixedWindow($algorithm) => $body,
            Decider::SlidingWindow($algorithm) => $body,
            Decider::SlidingLog($algorithm) => $body,
            Decider::Allowance($algorithm) => $body,
        }
    };
}

impl Config {
    /// Checks this configuration as every limiter, table and policy does before it
    /// allocates anything, and says which bound it breaks, if one.
    ///
    /// ```
    /// use librate::{Config, ConfigError};
    /// use std::time::Duration;
    /// assert!(Config::gcra(10, Duration::from_secs(1)).validate().is_ok());
    /// assert_eq!(Config::gcra(0, Duration::from_secs(1)).validate(), Err(ConfigError::ZeroLimit));
    /// ```
    ///
    /// # Errors
    /// The [`ConfigError`] saying what is wrong.
    pub fn validate(&self) -> Result<(), ConfigError> {
        Decider::new(self).map(drop)
    }
}

impl Decider {
    /// # Errors
    /// The [`ConfigError`] naming the field, the value and the bound `config` broke.
    pub(crate) fn new(config: &Config) -> Result<Self, ConfigError> {
        Self::checked(config).map_err(|breach| breach.of(config))
    }

    /// The decider of `config`, or what its algorithm's constructor found wrong.
    fn checked(config: &Config) -> Result<Self, Breach> {
        let (limit, period_ns) = (config.limit, config.period_ns);
        if config.period() == Config::FOREVER {
            let allowance = Allowance::new(config.algorithm, limit, config.burst)?;
            return Ok(Self::Allowance(allowance));
        }
        Ok(match config.algorithm {
            Algorithm::Gcra => Self::Gcra(Gcra::new(limit, period_ns, config.burst)?),
            Algorithm::FixedWindow => {
                Self::FixedWindow(FixedWindow(Windows::new(limit, period_ns)?))
            }
            Algorithm::SlidingWindow => {
                Self::SlidingWindow(SlidingWindow(Windows::new(limit, period_ns)?))
            }
            Algorithm::SlidingLog => Self::SlidingLog(SlidingLog::new(limit, period_ns)?),
        })
    }

    /// How many `AtomicU64` words of state one limiter of this decider needs. A fresh state
    /// is all zeros.
    #[inline]
    pub(crate) fn state_words(&self) -> usize {
        dispatch!(self, algorithm => algorithm.state_words())
    }

    /// The decision's `limit`: the largest cost that can ever be admitted.
    #[inline]
    pub(crate) fn limit(&self) -> u64 {
        dispatch!(self, algorithm => algorithm.limit())
    }

    /// Checks an acquire before it is run: `Err` if `n` can never be admitted. The
    /// operations below run only requests that passed, so once the state is touched
    /// nothing can fail but the tenancy.
    #[inline]
    pub(crate) fn check(&self, n: u64) -> Result<(), InsufficientCapacity> {
        if n > self.limit() {
            Err(InsufficientCapacity)
        } else {
            Ok(())
        }
    }

    /// Checks a reserve as [`check`](Self::check) an acquire, on an algorithm with a
    /// queue: the error of an acquire of the subject (`E`) if `n` can never be admitted.
    #[inline]
    pub(crate) fn check_reserve<E: From<InsufficientCapacity>>(
        &self,
        n: u64,
    ) -> Result<(), ReserveError<E>> {
        if self.algorithm() != Algorithm::Gcra {
            // The window algorithms have no queue to wait in, whatever `n` is.
            return Err(ReserveError::Unsupported);
        }
        self.check(n)
            .map_err(|why| ReserveError::Acquire(E::from(why)))
    }

    /// Acquires `n` units at `now_ns` (`n == 0` queries), as a reserve willing to wait
    /// `max_wait_ns` (0: a plain acquire), with the full report. The request passed
    /// [`check`](Self::check), so only GCRA ever sees a non-zero `max_wait_ns`.
    #[inline(always)]
    pub(crate) fn acquire_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now_ns: u64,
        n: u64,
        max_wait_ns: u64,
    ) -> Result<Decision, T::Evicted> {
        debug_assert!(self.check(n).is_ok());
        debug_assert!(max_wait_ns == 0 || self.algorithm() == Algorithm::Gcra);
        match self {
            Self::Gcra(gcra) => reserve_at(gcra, state, tenancy, now_ns, n, max_wait_ns),
            Self::SlidingWindow(sliding) => window_acquire_at(sliding, state, tenancy, now_ns, n),
            _ => self.swap(state, tenancy, Acquire { now: now_ns, n }),
        }
    }

    /// [`acquire_at`](Self::acquire_at) of a reserve, with what giving its admission back
    /// takes: GCRA's queue keeps it (`state/one_word.rs`), for a waiter that leaves the
    /// queue before its turn; any other rule decides as `acquire_at` does and keeps none.
    #[inline(always)]
    pub(crate) fn reserve_refundable_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now_ns: u64,
        n: u64,
        max_wait_ns: u64,
    ) -> Result<(Decision, Option<Refund>), T::Evicted> {
        match self {
            Self::Gcra(gcra) => reserve_refundable_at(gcra, state, tenancy, now_ns, n, max_wait_ns),
            _ => self
                .acquire_at(state, tenancy, now_ns, n, max_wait_ns)
                .map(|decision| (decision, None)),
        }
    }

    /// Runs `request` (checked by the caller) on `state` through its store's one
    /// read-decide-swap primitive ([`Stored::swap`]): the report, and what giving the units
    /// back takes (`None` for a denial, a query, a peek, or the sliding log, which cannot
    /// give back).
    #[inline(always)]
    pub(crate) fn swap<T: Tenancy, R: Request>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        request: R,
    ) -> Result<R::Out, T::Evicted> {
        debug_assert!(self.check(request.units()).is_ok());
        dispatch!(self, algorithm => algorithm.swap(state, tenancy, request))
    }

    /// [`swap`](Self::swap) of `request` made [`Refundable`] with `keep`, which is handed
    /// what giving the units back takes, if there is one. The request is put together in
    /// each arm of the dispatch: the stores called out of line (the window's, the log's)
    /// take it in memory, and put together before the dispatch it would be written there
    /// on every store's path, the inlined ones' too.
    #[inline(always)]
    pub(crate) fn swap_refundable<T: Tenancy, R: Request, K: Fn(Refund) + Copy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        request: R,
        keep: K,
    ) -> Result<R::Out, T::Evicted> {
        debug_assert!(self.check(request.units()).is_ok());
        dispatch!(self, algorithm => {
            algorithm.swap(state, tenancy, Refundable { request, keep })
        })
    }

    /// Whether [`try_acquire`](Self::try_acquire) consults its time source's hint (its
    /// store's decision's [`Timed::HINTED`]): only then can reading the exact time first pay.
    #[inline]
    pub(crate) fn follows_hint(&self) -> bool {
        fn hinted<A: Stored + 'static>(_: &A) -> bool {
            <A::Now<'static, Owned> as Timed>::HINTED
        }
        dispatch!(self, algorithm => hinted(algorithm))
    }

    /// The algorithm the configuration named.
    #[inline]
    pub(crate) fn algorithm(&self) -> Algorithm {
        match self {
            Self::Gcra(_) => Algorithm::Gcra,
            Self::FixedWindow(_) => Algorithm::FixedWindow,
            Self::SlidingWindow(_) => Algorithm::SlidingWindow,
            Self::SlidingLog(_) => Algorithm::SlidingLog,
            Self::Allowance(allowance) => allowance.configured(),
        }
    }

    /// Whether an admission can be given back ([`Request::keep`]): all but the sliding
    /// log's. A log that never refills could, but keeps the log's place in a policy's
    /// order, so that a policy's rules can change between the two (`policy.rs`).
    pub(crate) fn gives_back(&self) -> bool {
        self.algorithm() != Algorithm::SlidingLog
    }

    /// Acquires `n` units now, by `time`, reporting only whether they were admitted: on
    /// the cheap bounds when they settle the outcome, else at the exact time, and either
    /// way the outcome an exact reading at some instant within the call would give.
    #[inline(always)]
    pub(crate) fn try_acquire<T: Tenancy, C: TimeSource>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        debug_assert!(self.check(n).is_ok());
        if n == 0 {
            return Ok(true);
        }
        // An idle GCRA bucket's whole decision, ahead of the dispatch: a clock read and one
        // swap, reached without the dispatch's jump table.
        if let Self::Gcra(gcra) = self {
            if time.precise_first() {
                return time::precise_first(time, gcra_now(gcra, &state[0], tenancy, n));
            }
        }
        self.try_acquire_peeking(state, tenancy, time, n)
    }

    /// [`try_acquire`](Self::try_acquire) of `n` units when it is an idle GCRA bucket's
    /// decision and needs no call: `1 ≤ n ≤ limit` (so [`check`](Self::check) passes),
    /// the hint says to read the exact clock first, and the clock reads inline. `None`,
    /// having decided nothing, otherwise. `word` is the state's first (GCRA's only) word.
    #[inline(always)]
    pub(crate) fn try_acquire_inline<T: Tenancy, C: TimeSource>(
        &self,
        word: &AtomicU64,
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Option<Result<bool, T::Evicted>> {
        // The algorithm before `n`: GCRA's limit is then one field, not the dispatch's.
        let Self::Gcra(gcra) = self else {
            return None;
        };
        if n == 0 || n > gcra.limit() || !time.precise_first() {
            return None;
        }
        time::precise_first_inline(time, gcra_now(gcra, word, tenancy, n))
    }

    /// [`try_acquire`](Self::try_acquire) of `1 ≤ n` units by every other path: the
    /// strategy's peek and coarse reads (`time::decide`), on any algorithm. Inlined (out
    /// of line, the busy and drained decisions would pay a call and lose the inlining
    /// across it), yet a function of its own: written in place, the dispatch compiles to
    /// longer paths for the idle and the drained decisions alike.
    #[inline(always)]
    fn try_acquire_peeking<T: Tenancy, C: TimeSource>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        dispatch!(self, algorithm => algorithm.try_acquire(state, tenancy, time, n))
    }

    /// Makes a limiter's own `state` decide as a fresh one from the latest time it has
    /// seen on; acquires racing it are each decided before or after it (`Stored::reset`).
    /// `Err` if `tenancy` refuses the words (a change of rule replaced them).
    pub(crate) fn reset<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
    ) -> Result<(), T::Evicted> {
        dispatch!(self, algorithm => algorithm.reset(state, tenancy))
    }

    /// Whether a change of rule may replace states of this rule by states of `new` carried
    /// over (`algorithm/carry.rs`): the same algorithm, a period that never ends counting
    /// as the same, and no sliding log with a period that ends on either side (its ring's
    /// entries are not carried).
    ///
    /// # Errors
    /// [`ConfigError::LiveChange`] for a pair that does not carry over.
    pub(crate) fn check_change(&self, new: &Decider) -> Result<(), ConfigError> {
        let log = |decider: &Decider| matches!(decider, Self::SlidingLog(_));
        if self.algorithm() != new.algorithm() || log(self) || log(new) {
            return Err(ConfigError::LiveChange);
        }
        Ok(())
    }

    /// Writes into `new_state`, fresh (all zeros) and not yet shared, the state of `new`
    /// holding at `now` what `state` holds, whose first word last held `first` before it
    /// was replaced (the carry-over rules, `algorithm/carry.rs`). A pair that
    /// [`check_change`](Self::check_change) refuses leaves `new_state` fresh.
    pub(crate) fn carry_over(
        &self,
        state: &[AtomicU64],
        first: u64,
        now: u64,
        new: &Decider,
        new_state: &[AtomicU64],
    ) {
        let first_word = match (self, new) {
            (Self::Gcra(old), Self::Gcra(new)) => new.holding(old.tokens(first, now), now),
            (Self::Gcra(old), Self::Allowance(new)) => new.holding_tokens(old.tokens(first, now)),
            (Self::Allowance(old), Self::Gcra(new)) => new.holding(old.tokens(first), now),
            (Self::Allowance(old), Self::Allowance(new)) if old.configured() == Algorithm::Gcra => {
                new.holding_tokens(old.tokens(first))
            }
            (Self::Allowance(old), Self::Allowance(new)) => {
                new.holding_tally(old.tally(first, now))
            }
            (Self::FixedWindow(old), Self::FixedWindow(new)) => new.holding(old.tally(first, now)),
            (Self::FixedWindow(old), Self::Allowance(new)) => {
                new.holding_tally(old.tally(first, now))
            }
            (Self::Allowance(old), Self::FixedWindow(new)) => new.holding(old.tally(first, now)),
            (Self::SlidingWindow(old), _) => {
                let tally = old.tally(&replaced_counts(old, state, first), now);
                match new {
                    Self::SlidingWindow(new) => {
                        return store_counts(new, new_state, new.holding(tally))
                    }
                    Self::Allowance(new) => new.holding_tally(tally),
                    _ => return,
                }
            }
            (Self::Allowance(old), Self::SlidingWindow(new)) => {
                let counts = new.holding(old.tally(first, now));
                return store_counts(new, new_state, counts);
            }
            _ => return,
        };
        // Relaxed: the new words are published by the release of their address.
        new_state[0].store(first_word, Ordering::Relaxed);
    }

    /// Whether `state` is indistinguishable from a fresh limiter's at `now_ns` (docs/keyed.md,
    /// reclaim), so its keyed slot may be reclaimed. A slot marker is never fresh.
    #[inline]
    pub(crate) fn is_fresh(&self, state: &[AtomicU64], now_ns: u64) -> bool {
        // Acquire: pairs with the Release swap or store that installed this value, so the
        // other words it publishes (window records, the log's `latest`) are read at least
        // as new as it.
        let first = state[0].load(Ordering::Acquire);
        self.is_fresh_on(state, first, now_ns)
    }

    /// [`is_fresh`](Self::is_fresh) on the first word `first`, which the caller loaded with
    /// `Acquire` and will revalidate by a CAS from it: so a slot claimed since the load
    /// (a reset's claim gives a fresh state back) is judged as it was, not as a marker.
    #[inline]
    pub(crate) fn is_fresh_on(&self, state: &[AtomicU64], first: u64, now_ns: u64) -> bool {
        !is_marker(first) && dispatch!(self, algorithm => algorithm.is_fresh(state, first, now_ns))
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
