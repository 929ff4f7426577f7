//! One enum over the algorithms: it validates a [`Config`] and runs the chosen algorithm on
//! a slice of state words, so the direct limiter and the keyed table share every line of
//! decision code and differ only in where the words live and who else may repurpose them
//! (the [`Tenancy`]: nobody for a limiter, another key for a keyed slot).

use crate::cell::{decide_and_swap, is_marker, Tenancy};
use crate::clock::CoarseNow;
use crate::gcra::Gcra;
use crate::sync::{AtomicU64, Ordering};
use crate::{Algorithm, Config, Decision, Error};

/// The result of an operation on state words that may be repurposed mid-operation: the
/// outer error is the request's fault; the inner one says the words stopped being the
/// caller's state before anything was written (look the key up again).
pub(crate) type Attempt<R, T> = Result<Result<R, <T as Tenancy>::Evicted>, Error>;

/// A validated algorithm with its parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Policy {
    Gcra(Gcra),
}

impl Policy {
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        match config.algorithm {
            Algorithm::Gcra => Ok(Self::Gcra(Gcra::new(
                config.limit,
                config.period_ns,
                config.burst,
            )?)),
            _ => Err(Error::Unsupported),
        }
    }

    /// How many `AtomicU64` words of state one limiter of this policy needs. A fresh state
    /// is all zeros.
    #[inline]
    pub(crate) fn state_words(&self) -> usize {
        match self {
            Self::Gcra(_) => 1,
        }
    }

    /// The decision's `limit`: the largest cost that can ever be admitted.
    #[inline]
    pub(crate) fn limit(&self) -> u64 {
        match self {
            Self::Gcra(gcra) => gcra.burst(),
        }
    }

    /// `Err(InsufficientCapacity)` if `n` can never be admitted.
    #[inline]
    pub(crate) fn check_cost(&self, n: u64) -> Result<(), Error> {
        if n > self.limit() {
            Err(Error::InsufficientCapacity)
        } else {
            Ok(())
        }
    }

    /// Acquires `n` units at `now_ns` (`n == 0` queries).
    #[inline]
    pub(crate) fn acquire<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now_ns: u64,
        n: u64,
    ) -> Attempt<Decision, T> {
        self.check_cost(n)?;
        match self {
            Self::Gcra(gcra) => Ok(decide_and_swap(&state[0], tenancy, |tat| {
                gcra.decide(tat, now_ns, n, 0)
            })),
        }
    }

    /// Reserves `n` units at `now_ns`, admitting if the caller would wait at most
    /// `max_wait_ns`; GCRA only.
    #[inline]
    pub(crate) fn reserve<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now_ns: u64,
        n: u64,
        max_wait_ns: u64,
    ) -> Attempt<Decision, T> {
        self.check_cost(n)?;
        match self {
            Self::Gcra(gcra) => Ok(decide_and_swap(&state[0], tenancy, |tat| {
                gcra.decide(tat, now_ns, n, max_wait_ns)
            })),
        }
    }

    /// Acquires `n` units now, reporting only whether they were admitted. Decides on the
    /// coarse clock when its bounds settle the outcome and the new state, and reads the
    /// precise clock only when they do not; either way the result is the one a precise
    /// read at the same instant would give.
    #[inline]
    pub(crate) fn try_acquire<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        n: u64,
    ) -> Attempt<bool, T> {
        self.check_cost(n)?;
        if n == 0 {
            return Ok(Ok(true));
        }
        let Some(coarse) = CoarseNow::read() else {
            return self.acquire_allowed(state, tenancy, crate::clock::now_ns(), n);
        };
        let settled = match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], tenancy, |tat| {
                match gcra.settle(tat, coarse.earliest, coarse.latest, n) {
                    Some(Some(new_tat)) => (Some(true), Some(new_tat)),
                    Some(None) => (Some(false), None),
                    None => (None, None),
                }
            }),
        };
        match settled {
            Ok(Some(allowed)) => Ok(Ok(allowed)),
            Ok(None) => self.acquire_allowed(state, tenancy, coarse.precise(), n),
            Err(evicted) => Ok(Err(evicted)),
        }
    }

    #[inline]
    fn acquire_allowed<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now_ns: u64,
        n: u64,
    ) -> Attempt<bool, T> {
        Ok(self
            .acquire(state, tenancy, now_ns, n)?
            .map(|decision| decision.allowed))
    }

    /// Whether `state` is indistinguishable from a fresh limiter's at `now_ns` (DESIGN §5),
    /// so its keyed slot may be reclaimed. A slot marker is never fresh.
    #[inline]
    pub(crate) fn is_fresh(&self, state: &[AtomicU64], now_ns: u64) -> bool {
        // Relaxed: a snapshot; the reclaimer's CAS on the first word revalidates it (the
        // first word only grows, so an unchanged first word means an unchanged state).
        let first = state[0].load(Ordering::Relaxed);
        !is_marker(first)
            && match self {
                Self::Gcra(_) => first <= now_ns,
            }
    }
}
