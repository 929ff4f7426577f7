//! One enum over the algorithms: it validates a [`Config`] and runs the chosen algorithm on
//! a slice of state words, so the direct limiter and the keyed table share every line of
//! decision code and differ only in where the words live.

use crate::cell::decide_and_swap;
use crate::clock::CoarseNow;
use crate::fixed_window::FixedWindow;
use crate::gcra::Gcra;
use crate::sliding_log::SlidingLog;
use crate::sliding_window::SlidingWindow;
use crate::sync::{AtomicU64, Ordering};
use crate::{Algorithm, Config, Decision, Error};

/// The largest value the first state word of a window algorithm ever holds (fixed
/// window, sliding window counter, sliding log): their configs are bounded so that it is
/// never `u64::MAX` or `u64::MAX − 1`, which the keyed table uses as slot-status sentinels.
pub(crate) const FIRST_WORD_MAX: u64 = u64::MAX - 2;

/// A validated algorithm with its parameters.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Policy {
    Gcra(Gcra),
    FixedWindow(FixedWindow),
    SlidingWindow(SlidingWindow),
    SlidingLog(SlidingLog),
}

impl Policy {
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        let (limit, period_ns) = (config.limit, config.period_ns);
        Ok(match config.algorithm {
            Algorithm::Gcra => Self::Gcra(Gcra::new(limit, period_ns, config.burst)?),
            Algorithm::FixedWindow => Self::FixedWindow(FixedWindow::new(limit, period_ns)?),
            Algorithm::SlidingWindow => Self::SlidingWindow(SlidingWindow::new(limit, period_ns)?),
            Algorithm::SlidingLog => Self::SlidingLog(SlidingLog::new(limit, period_ns)?),
        })
    }

    /// How many `AtomicU64` words of state one limiter of this policy needs.
    pub(crate) fn state_words(&self) -> usize {
        match self {
            Self::Gcra(_) | Self::FixedWindow(_) => 1,
            Self::SlidingWindow(_) => SlidingWindow::STATE_WORDS,
            Self::SlidingLog(log) => log.state_words(),
        }
    }

    /// The decision's `limit`: the largest cost that can ever be admitted.
    pub(crate) fn limit(&self) -> u64 {
        match self {
            Self::Gcra(gcra) => gcra.burst(),
            Self::FixedWindow(fixed) => fixed.limit(),
            Self::SlidingWindow(sliding) => sliding.limit(),
            Self::SlidingLog(log) => log.limit(),
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
    // Inlined into its callers (the limiter, the keyed table), as it was when GCRA was
    // the only arm: measured, the extra call level cost GCRA's acquire ~15%. The window
    // algorithms' big bodies stay out of line (`#[inline(never)]` there).
    #[inline(always)]
    pub(crate) fn acquire(
        &self,
        state: &[AtomicU64],
        now_ns: u64,
        n: u64,
    ) -> Result<Decision, Error> {
        self.check_cost(n)?;
        Ok(match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], |tat| gcra.decide(tat, now_ns, n, 0)),
            Self::FixedWindow(fixed) => {
                decide_and_swap(&state[0], |word| fixed.decide(word, now_ns, n))
            }
            Self::SlidingWindow(sliding) => sliding.acquire(state, now_ns, n),
            Self::SlidingLog(log) => log.acquire(state, now_ns, n),
        })
    }

    /// Reserves `n` units at `now_ns`, admitting if the caller would wait at most
    /// `max_wait_ns`. GCRA only: the window algorithms have no queue to wait in, so they
    /// return `Unsupported` whatever `n` is.
    pub(crate) fn reserve(
        &self,
        state: &[AtomicU64],
        now_ns: u64,
        n: u64,
        max_wait_ns: u64,
    ) -> Result<Decision, Error> {
        let Self::Gcra(gcra) = self else {
            return Err(Error::Unsupported);
        };
        self.check_cost(n)?;
        Ok(decide_and_swap(&state[0], |tat| {
            gcra.decide(tat, now_ns, n, max_wait_ns)
        }))
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
        match self.settle(state, coarse.earliest, coarse.latest, n) {
            Some(allowed) => Ok(allowed),
            None => Ok(self.admit(state, coarse.precise(), n)),
        }
    }

    /// Acquires `1 ≤ n ≤ limit` units at `now_ns`, reporting only whether they were
    /// admitted. GCRA skips the decision's report (a division); the windows' reports are
    /// by-products of deciding, so they decide in full.
    fn admit(&self, state: &[AtomicU64], now_ns: u64, n: u64) -> bool {
        match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], |tat| {
                let new_tat = gcra.admit(tat, now_ns, n, 0);
                (new_tat.is_some(), new_tat)
            }),
            _ => matches!(self.acquire(state, now_ns, n), Ok(decision) if decision.allowed),
        }
    }

    /// Acquires `1 ≤ n ≤ limit` units for every instant in `[earliest, latest]` at once:
    /// `Some(allowed)` if every instant gives that outcome and the same new state (which
    /// is then stored), `None` (nothing written) if they do not.
    fn settle(&self, state: &[AtomicU64], earliest: u64, latest: u64, n: u64) -> Option<bool> {
        match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], |tat| {
                swap_settled(gcra.settle(tat, earliest, latest, n))
            }),
            Self::FixedWindow(fixed) => decide_and_swap(&state[0], |word| {
                swap_settled(fixed.settle(word, earliest, latest, n))
            }),
            Self::SlidingWindow(sliding) => sliding.settle(state, earliest, latest, n),
            Self::SlidingLog(log) => log.settle(state, earliest, latest, n),
        }
    }

    /// Whether `state` is indistinguishable from a fresh limiter's at `now_ns` (DESIGN §5),
    /// so its slot may be reclaimed.
    #[allow(dead_code)] // used by the keyed table
    pub(crate) fn is_fresh(&self, state: &[AtomicU64], now_ns: u64) -> bool {
        match self {
            // Relaxed: a snapshot; the reclaimer's own CAS revalidates it.
            Self::Gcra(_) => state[0].load(Ordering::Relaxed) <= now_ns,
            Self::FixedWindow(fixed) => fixed.is_fresh(state[0].load(Ordering::Relaxed), now_ns),
            Self::SlidingWindow(sliding) => sliding.is_fresh(state, now_ns),
            Self::SlidingLog(log) => log.is_fresh(state, now_ns),
        }
    }
}

/// A single-word settle result (`Some(Some(new))` admit and store, `Some(None)` deny,
/// `None` undecided) as a [`decide_and_swap`] step.
fn swap_settled(settled: Option<Option<u64>>) -> (Option<bool>, Option<u64>) {
    match settled {
        Some(Some(next)) => (Some(true), Some(next)),
        Some(None) => (Some(false), None),
        None => (None, None),
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// For every algorithm, from several states: whenever `settle` decides an interval,
    /// acquiring at each instant in it gives the same outcome and the same new state.
    #[test]
    fn settle_agrees_with_acquire_at_every_instant() {
        let configs = [
            Config::gcra(4, 400),
            Config::fixed_window(3, 100),
            Config::sliding_window(4, 100),
            Config::sliding_log(3, 100),
        ];
        let histories: [&[(u64, u64)]; 5] = [
            &[],
            &[(40, 1)],
            &[(40, 1), (90, 1)],
            &[(50, 3), (150, 1)],
            &[(120, 2), (130, 1)],
        ];
        for config in configs {
            let policy = Policy::new(&config).unwrap();
            let prepared = |history: &[(u64, u64)]| {
                let state: Vec<AtomicU64> = (0..policy.state_words())
                    .map(|_| AtomicU64::new(0))
                    .collect();
                for &(t, n) in history {
                    policy.acquire(&state, t, n).unwrap();
                }
                state
            };
            let words = |state: &[AtomicU64]| -> Vec<u64> {
                state.iter().map(|w| w.load(Ordering::Relaxed)).collect()
            };
            let (mut admits, mut denials) = (0, 0);
            for history in histories {
                for earliest in (0..450).step_by(11) {
                    for width in [0u64, 6, 40, 150] {
                        for n in 1..=3 {
                            let latest = earliest + width;
                            let state = prepared(history);
                            let Some(settled) = policy.settle(&state, earliest, latest, n) else {
                                continue;
                            };
                            if settled {
                                admits += 1;
                            } else {
                                denials += 1;
                            }
                            let after = words(&state);
                            for t in earliest..=latest {
                                let state = prepared(history);
                                let precise = policy.acquire(&state, t, n).unwrap();
                                assert_eq!(precise.allowed, settled, "{config:?} {t}");
                                assert_eq!(words(&state), after, "{config:?} {t}");
                            }
                        }
                    }
                }
            }
            assert!(
                admits >= 20 && denials >= 20,
                "{config:?}: {admits} {denials}"
            );
        }
    }

    /// DESIGN §5: windows are fresh once nothing is counted in the current or previous
    /// window, the log once every entry has expired.
    #[test]
    fn freshness_of_the_window_algorithms() {
        let cases: [(Config, &[u64], &[u64]); 3] = [
            // One unit admitted at 150 (window 1 of 100 ns).
            (Config::fixed_window(4, 100), &[0, 150, 299], &[300, 1000]),
            (Config::sliding_window(4, 100), &[0, 150, 299], &[300, 1000]),
            (Config::sliding_log(2, 100), &[0, 150, 249], &[250, 1000]),
        ];
        for (config, live, fresh) in cases {
            let policy = Policy::new(&config).unwrap();
            let state: Vec<AtomicU64> = (0..policy.state_words())
                .map(|_| AtomicU64::new(0))
                .collect();
            assert!(policy.is_fresh(&state, 0) && policy.is_fresh(&state, 150));
            assert!(policy.acquire(&state, 150, 1).unwrap().allowed);
            for &now in live {
                assert!(!policy.is_fresh(&state, now), "{config:?} live at {now}");
            }
            for &now in fresh {
                assert!(policy.is_fresh(&state, now), "{config:?} fresh at {now}");
            }
        }
    }
}
