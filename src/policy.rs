//! One enum over the algorithms: it validates a [`Config`] and runs the chosen algorithm on
//! a slice of state words, so the direct limiter and the keyed table share every line of
//! decision code and differ only in where the words live.

use crate::cell::decide_and_swap;
use crate::clock::CoarseNow;
use crate::gcra::Gcra;
use crate::sync::{AtomicU64, Ordering};
use crate::{Algorithm, Config, Decision, Error};

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

    /// How many `AtomicU64` words of state one limiter of this policy needs.
    pub(crate) fn state_words(&self) -> usize {
        match self {
            Self::Gcra(_) => 1,
        }
    }

    /// The decision's `limit`: the largest cost that can ever be admitted.
    pub(crate) fn limit(&self) -> u64 {
        match self {
            Self::Gcra(gcra) => gcra.burst(),
        }
    }

    fn check_cost(&self, n: u64) -> Result<(), Error> {
        if n > self.limit() {
            Err(Error::InsufficientCapacity)
        } else {
            Ok(())
        }
    }

    /// Acquires `n` units at `now_ns` (`n == 0` queries).
    pub(crate) fn acquire(
        &self,
        state: &[AtomicU64],
        now_ns: u64,
        n: u64,
    ) -> Result<Decision, Error> {
        self.check_cost(n)?;
        match self {
            Self::Gcra(gcra) => Ok(decide_and_swap(&state[0], |tat| {
                gcra.decide(tat, now_ns, n, 0)
            })),
        }
    }

    /// Reserves `n` units at `now_ns`, admitting if the caller would wait at most
    /// `max_wait_ns`; GCRA only.
    pub(crate) fn reserve(
        &self,
        state: &[AtomicU64],
        now_ns: u64,
        n: u64,
        max_wait_ns: u64,
    ) -> Result<Decision, Error> {
        self.check_cost(n)?;
        match self {
            Self::Gcra(gcra) => Ok(decide_and_swap(&state[0], |tat| {
                gcra.decide(tat, now_ns, n, max_wait_ns)
            })),
        }
    }

    /// Acquires `n` units now, reporting only whether they were admitted. Decides on the
    /// coarse clock when its bounds settle the outcome and the new state, and reads the
    /// precise clock only when they do not; either way the result is the one a precise
    /// read at the same instant would give.
    pub(crate) fn try_acquire(&self, state: &[AtomicU64], n: u64) -> Result<bool, Error> {
        self.check_cost(n)?;
        if n == 0 {
            return Ok(true);
        }
        let Some(coarse) = CoarseNow::read() else {
            return Ok(self.admit(state, crate::clock::now_ns(), n));
        };
        let settled = match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], |tat| {
                match gcra.settle(tat, coarse.earliest, coarse.latest, n) {
                    Some(Some(new_tat)) => (Some(true), Some(new_tat)),
                    Some(None) => (Some(false), None),
                    None => (None, None),
                }
            }),
        };
        match settled {
            Some(allowed) => Ok(allowed),
            None => Ok(self.admit(state, coarse.precise(), n)),
        }
    }

    /// Acquires `1 ≤ n ≤ limit` units at `now_ns`, reporting only whether they were
    /// admitted (no decision fields to compute).
    fn admit(&self, state: &[AtomicU64], now_ns: u64, n: u64) -> bool {
        match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], |tat| {
                let new_tat = gcra.admit(tat, now_ns, n, 0);
                (new_tat.is_some(), new_tat)
            }),
        }
    }

    /// Whether `state` is indistinguishable from a fresh limiter's at `now_ns` (DESIGN §5),
    /// so its slot may be reclaimed.
    #[allow(dead_code)] // used by the keyed table
    pub(crate) fn is_fresh(&self, state: &[AtomicU64], now_ns: u64) -> bool {
        match self {
            // Relaxed: a snapshot; the reclaimer's own CAS revalidates it.
            Self::Gcra(_) => state[0].load(Ordering::Relaxed) <= now_ns,
        }
    }
}
