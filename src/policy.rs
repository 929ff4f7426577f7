//! One enum over the algorithms: it validates a [`Config`] and runs the chosen algorithm on
//! a slice of state words, so the direct limiter and the keyed table share every line of
//! decision code and differ only in where the words live and who else may repurpose them
//! (the [`Tenancy`]: nobody for a limiter, another key for a keyed slot). Every write any
//! algorithm makes to its state goes through a tenancy check of the first word first.

use crate::cell::{decide_and_swap, is_marker, Tenancy};
use crate::clock::{self, CoarseNow};
use crate::clock_hint::ClockHint;
use crate::fixed_window::FixedWindow;
use crate::gcra::Gcra;
use crate::sliding_log::SlidingLog;
use crate::sliding_window::SlidingWindow;
use crate::sync::{AtomicU64, Ordering};
use crate::window::Windows;
use crate::{Algorithm, Config, Decision, Error};

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

    /// How many `AtomicU64` words of state one limiter of this policy needs. A fresh state
    /// is all zeros.
    #[inline]
    pub(crate) fn state_words(&self) -> usize {
        match self {
            Self::Gcra(_) | Self::FixedWindow(_) => 1,
            Self::SlidingWindow(_) => SlidingWindow::STATE_WORDS,
            Self::SlidingLog(log) => log.state_words(),
        }
    }

    /// The decision's `limit`: the largest cost that can ever be admitted.
    #[inline]
    pub(crate) fn limit(&self) -> u64 {
        match self {
            Self::Gcra(gcra) => gcra.burst(),
            Self::FixedWindow(fixed) => fixed.limit(),
            Self::SlidingWindow(sliding) => sliding.limit(),
            Self::SlidingLog(log) => log.limit(),
        }
    }

    /// Checks a request before it is run: `Err(Unsupported)` for a reserve (`max_wait_ns`
    /// given) on an algorithm without a queue, `Err(InsufficientCapacity)` if `n` can never
    /// be admitted. [`acquire`](Self::acquire), [`reserve`](Self::reserve) and
    /// [`try_acquire`](Self::try_acquire) run only requests that passed, so once the state
    /// is touched nothing can fail but the tenancy.
    #[inline]
    pub(crate) fn check(&self, n: u64, max_wait_ns: Option<u64>) -> Result<(), Error> {
        if max_wait_ns.is_some() && !matches!(self, Self::Gcra(_)) {
            // The window algorithms have no queue to wait in, whatever `n` is.
            Err(Error::Unsupported)
        } else if n > self.limit() {
            Err(Error::InsufficientCapacity)
        } else {
            Ok(())
        }
    }

    /// Acquires `n` units at `now_ns` (`n == 0` queries), as a reserve willing to wait
    /// `max_wait_ns` (0: a plain acquire). The request passed [`check`](Self::check), so
    /// only GCRA ever sees a non-zero `max_wait_ns`.
    // Inlined into its callers (the limiter, the keyed table), as it was when GCRA was
    // the only arm: measured, the extra call level cost GCRA's acquire ~15%. The window
    // algorithms' big bodies stay out of line (`#[inline(never)]` there).
    #[inline(always)]
    pub(crate) fn acquire<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now_ns: u64,
        n: u64,
        max_wait_ns: u64,
    ) -> Result<Decision, T::Evicted> {
        debug_assert!(self
            .check(n, Some(max_wait_ns).filter(|&wait| wait > 0))
            .is_ok());
        match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], tenancy, |tat| {
                gcra.decide(tat, now_ns, n, max_wait_ns)
            }),
            Self::FixedWindow(fixed) => {
                decide_and_swap(&state[0], tenancy, |word| fixed.decide(word, now_ns, n))
            }
            Self::SlidingWindow(sliding) => sliding.acquire(state, tenancy, now_ns, n),
            Self::SlidingLog(log) => log.acquire(state, tenancy, now_ns, n),
        }
    }

    /// Acquires `n` units now, reporting only whether they were admitted. Decides on the
    /// coarse clock when its bounds settle the outcome and the new state, and reads the
    /// precise clock only when they do not; either way the result is the one a precise
    /// read at the same instant would give.
    ///
    /// GCRA's and the fixed window's paths are kept to straight-line code inlined into the
    /// caller, with everything that costs a precise clock read (~23 ns) out of line:
    /// measured, a shared path that matched the algorithm at every step took a third
    /// longer to decide a busy bucket.
    ///
    /// A single limiter passes its [`ClockHint`], which lets a GCRA bucket that keeps
    /// needing the precise time read it first; a keyed slot, which has no room for one,
    /// passes `None`.
    #[inline(always)]
    pub(crate) fn try_acquire<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        hint: Option<&ClockHint>,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        debug_assert!(self.check(n, None).is_ok());
        if n == 0 {
            return Ok(true);
        }
        let gcra = match self {
            Self::Gcra(gcra) => gcra,
            // Single-word like GCRA's: inlined too (measured: 13.1 -> 11.5 ns admitting).
            Self::FixedWindow(_) => return self.decide_by_clock(state, tenancy, None, n),
            Self::SlidingWindow(_) => return self.try_acquire_window(state, tenancy, n),
            Self::SlidingLog(log) => return try_acquire_log(log, state, tenancy, n),
        };
        if let Some(hint) = hint.filter(|hint| hint.precise_first()) {
            return admit_precise_first(gcra, state, tenancy, hint, n);
        }
        let word = &state[0];
        // Relaxed: a peek that only picks the clock; the decision reads the word again.
        // An idle bucket (TAT ≤ now) admits, and its new TAT, now + n·T, depends on the
        // exact time: no coarse bounds could settle that, so it goes straight to the clock.
        if word.load(Ordering::Relaxed) <= clock::passed_ns() {
            return self.admit(state, tenancy, None, hint, n);
        }
        self.decide_by_clock(state, tenancy, hint, n)
    }

    /// [`try_acquire`](Self::try_acquire) for the sliding window, whose settling is too
    /// big to inline.
    #[inline(never)]
    fn try_acquire_window<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        self.decide_by_clock(state, tenancy, None, n)
    }

    /// Acquires `1 ≤ n ≤ limit` units on the coarse clock if its bounds settle the
    /// decision, else at the precise time (noted in `hint`, if any).
    #[inline(always)]
    fn decide_by_clock<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        hint: Option<&ClockHint>,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        // Matched before the clock read, an opaque call after which the compiler would
        // load the variant again: GCRA's inlined path then carries none of this.
        let counter = self.counter_windows();
        let Some(coarse) = CoarseNow::read() else {
            return self.admit(state, tenancy, None, hint, n);
        };
        if let Some(windows) = counter {
            // A client over its limit: the current count alone denies, at every instant
            // up to `latest`, with neither the sliding window's previous count nor its
            // weighted test. A decision that never swaps: one load, shown to the tenancy.
            let full = decide_and_swap(&state[0], tenancy, |word| {
                (windows.full_through(word, coarse.latest, n), None)
            })?;
            if full {
                return Ok(false);
            }
        }
        match self.settle(state, tenancy, coarse.earliest, coarse.latest, n)? {
            Some(allowed) => Ok(allowed),
            None => self.admit(state, tenancy, Some(coarse), hint, n),
        }
    }

    /// Acquires `1 ≤ n ≤ limit` units at the precise time (checked against `coarse`, the
    /// coarse read it follows, if any), reporting only whether they were admitted. GCRA
    /// and the log skip the decision's report (a division; a search of the ring); the
    /// counters' reports are by-products of deciding, so they decide in full. A `hint`
    /// learns that this decision needed the precise time.
    #[inline(never)]
    fn admit<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        coarse: Option<CoarseNow>,
        hint: Option<&ClockHint>,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        if let Some(hint) = hint {
            hint.set(true);
        }
        let now_ns = coarse.map_or_else(clock::now_ns, CoarseNow::precise);
        self.admit_at(state, tenancy, now_ns, n)
    }

    /// Acquires `1 ≤ n ≤ limit` units at `now_ns`, reporting only whether they were
    /// admitted (see [`admit`](Self::admit)).
    #[inline]
    pub(crate) fn admit_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now_ns: u64,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        debug_assert!(n >= 1 && self.check(n, None).is_ok());
        match self {
            Self::Gcra(gcra) => {
                gcra_admit_at(gcra, state, tenancy, now_ns, n).map(|(allowed, _)| allowed)
            }
            // The log's report needs a search its admission does not.
            Self::SlidingLog(log) => log.admit(state, tenancy, now_ns, n),
            _ => self
                .acquire(state, tenancy, now_ns, n, 0)
                .map(|decision| decision.allowed),
        }
    }

    /// The windows of a window counter (fixed or sliding), whose packed current word
    /// alone can show a request denied; `None` for the other algorithms.
    #[inline(always)]
    fn counter_windows(&self) -> Option<&Windows> {
        match self {
            Self::FixedWindow(fixed) => Some(fixed.windows()),
            Self::SlidingWindow(sliding) => Some(sliding.windows()),
            Self::Gcra(_) | Self::SlidingLog(_) => None,
        }
    }

    /// Acquires `1 ≤ n ≤ limit` units for every instant in `[earliest, latest]` at once:
    /// `Some(allowed)` if every instant gives that outcome and the same new state (which
    /// is then stored), `None` (nothing written) if they do not.
    // Inlined always, so GCRA's arm becomes straight-line code in `try_acquire`.
    #[inline(always)]
    fn settle<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        earliest: u64,
        latest: u64,
        n: u64,
    ) -> Result<Option<bool>, T::Evicted> {
        match self {
            Self::Gcra(gcra) => decide_and_swap(&state[0], tenancy, |tat| {
                swap_settled(gcra.settle(tat, earliest, latest, n))
            }),
            Self::FixedWindow(fixed) => decide_and_swap(&state[0], tenancy, |word| {
                swap_settled(fixed.settle(word, earliest, latest, n))
            }),
            Self::SlidingWindow(sliding) => sliding.settle(state, tenancy, earliest, latest, n),
            // The log settles what bounds can settle inside its own `try_acquire`, on
            // the same read of the ring as the rest of its decision (never through here).
            Self::SlidingLog(_) => Ok(None),
        }
    }

    /// Whether `state` is indistinguishable from a fresh limiter's at `now_ns` (DESIGN §5),
    /// so its keyed slot may be reclaimed. A slot marker is never fresh.
    #[inline]
    pub(crate) fn is_fresh(&self, state: &[AtomicU64], now_ns: u64) -> bool {
        // Acquire: pairs with the Release swap or store that installed this value, so the
        // other words it publishes (window records, the log's `latest`) are read at least
        // as new as it. A snapshot: the reclaimer's CAS on the first word revalidates it
        // (the first word only grows, so an unchanged first word means an unchanged state).
        let first = state[0].load(Ordering::Acquire);
        !is_marker(first)
            && match self {
                Self::Gcra(_) => first <= now_ns,
                Self::FixedWindow(fixed) => fixed.is_fresh(first, now_ns),
                Self::SlidingWindow(sliding) => sliding.is_fresh(state, first, now_ns),
                Self::SlidingLog(log) => log.is_fresh(state, first, now_ns),
            }
    }
}

/// Acquires `1 ≤ n ≤ burst` units of a GCRA bucket at `now_ns`: whether they were
/// admitted, and the TAT the decision saw.
#[inline(always)]
fn gcra_admit_at<T: Tenancy>(
    gcra: &Gcra,
    state: &[AtomicU64],
    tenancy: &T,
    now_ns: u64,
    n: u64,
) -> Result<(bool, u64), T::Evicted> {
    decide_and_swap(&state[0], tenancy, |tat| {
        let new_tat = gcra.admit(tat, now_ns, n, 0);
        ((new_tat.is_some(), tat), new_tat)
    })
}

/// [`Policy::try_acquire`] for a GCRA bucket whose hint says to read the precise clock
/// first: the swap then reads the TAT once, and the decision is the one at that time. A
/// TAT found further ahead of the clock than the coarse bounds reach is one the coarse
/// clock could settle, so the hint goes back to peeking first.
#[inline(never)]
fn admit_precise_first<T: Tenancy>(
    gcra: &Gcra,
    state: &[AtomicU64],
    tenancy: &T,
    hint: &ClockHint,
    n: u64,
) -> Result<bool, T::Evicted> {
    let now_ns = clock::now_ns();
    let (allowed, tat) = gcra_admit_at(gcra, state, tenancy, now_ns, n)?;
    if clock::coarse_slack_ns().is_some_and(|slack| tat > now_ns.saturating_add(slack)) {
        hint.set(false);
    }
    Ok(allowed)
}

/// [`Policy::try_acquire`] for the log, out of line like the sliding window's. The log
/// reads the clocks itself, only as far as its one read of the ring needs: an admission it
/// is sure of skips the coarse read (measured: 55.7 -> 50 ns).
#[inline(never)]
fn try_acquire_log<T: Tenancy>(
    log: &SlidingLog,
    state: &[AtomicU64],
    tenancy: &T,
    n: u64,
) -> Result<bool, T::Evicted> {
    log.try_acquire(
        state,
        tenancy,
        n,
        CoarseNow::read,
        |coarse| coarse.latest,
        |coarse| coarse.map_or_else(clock::now_ns, CoarseNow::precise),
    )
}

/// A single-word settle result (`Some(Some(new))` admit and store, `Some(None)` deny,
/// `None` undecided) as a [`decide_and_swap`] step.
#[inline]
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
    use crate::cell::{owned, Owned};

    /// Histories (time, units) the settling tests start from.
    const HISTORIES: [&[(u64, u64)]; 5] = [
        &[],
        &[(40, 1)],
        &[(40, 1), (90, 1)],
        &[(50, 3), (150, 1)],
        &[(120, 2), (130, 1)],
    ];

    /// A fresh state of `policy` after `history`'s acquires.
    fn prepared(policy: &Policy, history: &[(u64, u64)]) -> Vec<AtomicU64> {
        let state: Vec<AtomicU64> = (0..policy.state_words())
            .map(|_| AtomicU64::new(0))
            .collect();
        for &(t, n) in history {
            owned(policy.acquire(&state, &Owned, t, n, 0));
        }
        state
    }

    fn words(state: &[AtomicU64]) -> Vec<u64> {
        state.iter().map(|w| w.load(Ordering::Relaxed)).collect()
    }

    /// For every algorithm but the log (next test), from several states: whenever
    /// `settle` decides an interval, acquiring at each instant in it gives the same
    /// outcome and the same new state; and whenever a counter's `full_through` denies, so
    /// does an acquire at every instant.
    #[test]
    fn settle_agrees_with_acquire_at_every_instant() {
        let configs = [
            Config::gcra(4, 400),
            Config::fixed_window(3, 100),
            Config::sliding_window(4, 100),
        ];
        for config in configs {
            let policy = Policy::new(&config).unwrap();
            let prepared = |history: &[(u64, u64)]| prepared(&policy, history);
            let (mut admits, mut denials, mut shortcut_denials) = (0, 0, 0);
            for history in HISTORIES {
                for earliest in (0..450).step_by(11) {
                    for width in [0u64, 6, 40, 150] {
                        for n in 1..=3 {
                            let latest = earliest + width;
                            let state = prepared(history);
                            let full = policy.counter_windows().is_some_and(|windows| {
                                windows.full_through(state[0].load(Ordering::Relaxed), latest, n)
                            });
                            if full {
                                shortcut_denials += 1;
                                for t in earliest..=latest {
                                    let state = prepared(history);
                                    let precise = owned(policy.acquire(&state, &Owned, t, n, 0));
                                    assert!(!precise.allowed, "{config:?} {t}");
                                }
                            }
                            let Some(settled) =
                                owned(policy.settle(&state, &Owned, earliest, latest, n))
                            else {
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
                                let precise = owned(policy.acquire(&state, &Owned, t, n, 0));
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
            // Only the counters have the shortcut, and it is used.
            let counter = matches!(policy, Policy::FixedWindow(_) | Policy::SlidingWindow(_));
            assert_eq!(
                shortcut_denials > 0,
                counter,
                "{config:?}: {shortcut_denials}"
            );
        }
    }

    /// The log's `try_acquire`, from several states, with the time known to lie in
    /// `[earliest, latest]` and to be exactly `t`: whenever it decides without reading the
    /// exact time, every `t` in the bounds gives that outcome and new state, and whenever
    /// it reads it, the result is an acquire's at `t`. Both shortcuts are exercised.
    #[test]
    fn the_log_decides_as_an_acquire_at_the_exact_time() {
        let policy = Policy::new(&Config::sliding_log(3, 100)).unwrap();
        let Policy::SlidingLog(log) = policy else {
            unreachable!("a log config makes a log policy")
        };
        let (mut bounds_unread, mut exact_unread) = (0, 0);
        for history in HISTORIES {
            for earliest in (0..450).step_by(11) {
                for width in [0u64, 6, 40, 150] {
                    for n in 1..=3 {
                        let latest = earliest + width;
                        for t in earliest..=latest {
                            let state = prepared(&policy, history);
                            let (mut bounds_read, mut exact_read) = (false, false);
                            let allowed = owned(log.try_acquire(
                                &state,
                                &Owned,
                                n,
                                || {
                                    bounds_read = true;
                                    Some(latest)
                                },
                                |latest| latest,
                                |_| {
                                    exact_read = true;
                                    t
                                },
                            ));
                            let expected = prepared(&policy, history);
                            let at_t = owned(policy.acquire(&expected, &Owned, t, n, 0));
                            let case = format!("{history:?} [{earliest}, {latest}] n={n} t={t}");
                            assert_eq!(allowed, at_t.allowed, "{case}");
                            assert_eq!(words(&state), words(&expected), "{case}");
                            bounds_unread += u64::from(!bounds_read);
                            exact_unread += u64::from(!exact_read);
                        }
                    }
                }
            }
        }
        assert!(
            bounds_unread > 1000 && exact_unread > 1000,
            "{bounds_unread} {exact_unread}"
        );
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
            assert!(policy.acquire(&state, &Owned, 150, 1, 0).unwrap().allowed);
            for &now in live {
                assert!(!policy.is_fresh(&state, now), "{config:?} live at {now}");
            }
            for &now in fresh {
                assert!(policy.is_fresh(&state, now), "{config:?} fresh at {now}");
            }
        }
    }
}
