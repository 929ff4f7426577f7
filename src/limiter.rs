//! A single limiter: a [`Decider`] over its own padded block of state words.

use crate::config::Config;
use crate::counters::{Counters, Counts};
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::{AcquireError, ConfigError, ReserveError};
use crate::generations::{Generation, Generations};
use crate::state::{self, Refund, Request};
use crate::time::{self, ClockHint, Hinted, Instant, Monotonic, TimeSource};
use std::cell::Cell;
use std::time::Duration;

mod change;
mod file;
mod operations;
mod reserve;
use operations::{Acquire, Reset, Swap, TryAcquire};

/// One rate limiter: at most `limit` units per period, by the configured algorithm.
///
/// A `Limiter` is `Send + Sync`: share it between threads by reference or `Arc`; every
/// operation is lock-free. Times are [`Instant`]s on `CLOCK_MONOTONIC`
/// ([`Instant::now`]), periods and waits [`Duration`]s; the `_at` forms take the time
/// from the caller.
///
/// ```
/// use librate::{Config, Instant, Limiter};
/// use std::time::Duration;
/// const SECOND: Duration = Duration::from_secs(1);
/// // One request per second, bursts of 2.
/// let limiter = Limiter::new(&Config::gcra(1, SECOND).with_burst(2)).unwrap();
/// assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
/// assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
/// let denied = limiter.acquire_at(1, Instant::ZERO).unwrap();
/// assert!(!denied.allowed);
/// assert_eq!(denied.retry_after(), SECOND);
/// assert!(limiter.acquire_at(1, Instant::ZERO + SECOND).unwrap().allowed);
/// ```
#[derive(Debug)]
pub struct Limiter {
    /// The rule in force and its state words, replaced whole by a change of rule.
    generations: Generations,
    /// Which clock `try_acquire` reads first. Beside the rule's address, read on every call
    /// too, and away from the state words, which admissions write.
    hint: ClockHint,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    counters: Counters,
}

/// What giving back an admission of one of a limiter's rules takes: the words' own
/// [`Refund`], on the generation it was admitted in (a refund on words since replaced
/// gives nothing back: the admission was carried over).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RuleRefund {
    refund: Refund,
    /// The generation admitted on, by serial: compared with the one in force (an address
    /// could be a later generation's, once the one admitted on was freed).
    generation: u64,
}

impl Limiter {
    /// Builds a limiter, full at any time, or says why `config` is invalid.
    pub fn new(config: &Config) -> Result<Self, ConfigError> {
        let decider = Decider::new(config)?;
        time::prepare();
        Ok(Self::of(Generation::private(decider, config)))
    }

    fn of(generation: Generation) -> Self {
        Self::with(Generations::new(generation))
    }

    fn with(generations: Generations) -> Self {
        Self {
            generations,
            hint: ClockHint::default(),
            counters: Counters::default(),
        }
    }

    /// The configuration in force: the one this limiter was built from, or the last
    /// [`set_config`](Self::set_config) gave.
    pub fn config(&self) -> &Config {
        self.generations.config()
    }

    /// Acquires `n` units now. `n == 0` only reports the current state.
    ///
    /// # Errors
    /// [`AcquireError::InsufficientCapacity`] if `n` exceeds the decision's `limit`;
    /// [`AcquireError::Shared`] only in a shared file whose rule changed (docs/shared.md).
    #[inline]
    pub fn acquire(&self, n: u64) -> Result<Decision, AcquireError> {
        self.acquire_at(n, Instant::now())
    }

    /// Acquires `n` units at `at`. An earlier `at` than one already seen never
    /// admits more than the latest time would.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    #[inline]
    pub fn acquire_at(&self, n: u64, at: Instant) -> Result<Decision, AcquireError> {
        let now_ns = at.as_nanos();
        let max_wait_ns = None;
        let acquire = Acquire {
            now_ns,
            n,
            max_wait_ns,
        };
        let decided = self.generations.decide(acquiring(n), acquire);
        self.counters.count(n, &decided);
        decided
    }

    /// Acquires `n` units now and says only whether they were admitted: the fastest path.
    /// It decides on the cheap coarse clock whenever the coarse clock's bounds settle the
    /// outcome, and reads the precise clock only when they do not; the outcome is always
    /// the one [`acquire`](Self::acquire) would give at the same instant. A GCRA limiter
    /// whose last decision needed the precise time (an idle bucket, or one admitting near
    /// its rate) reads it first, until its TAT runs ahead of the coarse bounds again.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    #[inline(always)]
    pub fn try_acquire(&self, n: u64) -> Result<bool, AcquireError> {
        self.try_acquire_by(Monotonic, n)
    }

    /// [`try_acquire`](Self::try_acquire)'s decision when it needs no call: an idle GCRA
    /// limiter's, read on the clock's inline path, as most of its decisions are. `None`
    /// when it would need one (another algorithm or state, `n` zero or above the limit, a
    /// change of rule, the clock's slow path); then nothing was decided, and
    /// `try_acquire` decides. For a caller that keeps its own function a leaf on the
    /// common path, as the C ABI's `rate_limiter_acquire` does; Rust code calls
    /// `try_acquire`, which takes the same path inline.
    #[doc(hidden)]
    #[inline(always)]
    pub fn try_acquire_inline(&self, n: u64) -> Option<bool> {
        let time = Hinted::new(Monotonic, &self.hint);
        let admitted = self.generations.try_acquire_inline(time, n)?;
        self.counters.count(n, &Ok::<_, ()>(admitted));
        Some(admitted)
    }

    /// Acquires `n` units at `at` and says only whether they were admitted: the
    /// outcome [`acquire_at`](Self::acquire_at) gives, without the report's work. A
    /// query (`n == 0`) is decided as `acquire_at` decides it.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    #[inline]
    pub fn try_acquire_at(&self, n: u64, at: Instant) -> Result<bool, AcquireError> {
        if n == 0 {
            return self.acquire_at(0, at).map(|decision| decision.allowed);
        }
        // No refund is kept: an outcome-only caller has no way to give the units back.
        let now = at.as_nanos();
        let admitted = self.swap(state::TryAcquire { now, n }, None);
        self.counters.count(n, &admitted);
        admitted
    }

    /// [`try_acquire`](Self::try_acquire) on the time source `time`, with this limiter's
    /// clock hint.
    #[inline(always)]
    fn try_acquire_by(&self, time: impl TimeSource, n: u64) -> Result<bool, AcquireError> {
        let time = Hinted::new(time, &self.hint);
        let try_acquire = TryAcquire { time, n };
        let admitted = self.generations.decide(acquiring(n), try_acquire);
        self.counters.count(n, &admitted);
        admitted
    }

    /// Reserves `n` units now: the leaky bucket as a queue. Admits if the caller would
    /// have to wait at most `max_wait` before acting, and says how long in `wait_ns`.
    ///
    /// # Errors
    /// [`ReserveError::Acquire`] as [`acquire`](Self::acquire) (`n` above the burst);
    /// [`ReserveError::Unsupported`] for the window algorithms, which have no queue.
    pub fn reserve(&self, n: u64, max_wait: Duration) -> Result<Decision, ReserveError> {
        self.reserve_at(n, Instant::now(), max_wait)
    }

    /// [`reserve`](Self::reserve) at `at`. With `max_wait` zero it is exactly
    /// [`acquire_at`](Self::acquire_at).
    ///
    /// ```
    /// use librate::{Config, Instant, Limiter};
    /// use std::time::Duration;
    /// const MS: Duration = Duration::from_millis(1);
    /// // 10 per second, no burst beyond 1: a unit every 100 ms.
    /// let shaper = Limiter::new(&Config::gcra(10, 1000 * MS).with_burst(1)).unwrap();
    /// assert_eq!(shaper.reserve_at(1, Instant::ZERO, 500 * MS).unwrap().wait(), Duration::ZERO);
    /// assert_eq!(shaper.reserve_at(1, Instant::ZERO, 500 * MS).unwrap().wait(), 100 * MS);
    /// assert_eq!(shaper.reserve_at(1, Instant::ZERO, 500 * MS).unwrap().wait(), 200 * MS);
    /// ```
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    #[inline]
    pub fn reserve_at(
        &self,
        n: u64,
        at: Instant,
        max_wait: Duration,
    ) -> Result<Decision, ReserveError> {
        let now_ns = at.as_nanos();
        let max_wait_ns = Some(time::nanos(max_wait));
        let check = move |decider: &Decider| decider.check_reserve(n);
        let acquire = Acquire {
            now_ns,
            n,
            max_wait_ns,
        };
        let decided = self.generations.decide(check, acquire);
        self.counters.count(n, &decided);
        decided
    }

    /// Turns on counting of this handle's requests, from this call on (docs/metrics.md,
    /// counters): one atomic add a request, which is why it is off until asked for. For a
    /// shared limiter, this process's requests through this handle. Counting that is on
    /// stays on.
    pub fn enable_counts(&self) {
        self.counters.enable();
    }

    /// How many requests this handle admitted and denied since
    /// [`enable_counts`](Self::enable_counts); `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(1)
    }

    /// Makes the limiter new again (a customer's limit lifted once their ticket is
    /// resolved): from the latest time it has seen on, it decides exactly as a new limiter
    /// of the same configuration would. GCRA and the fixed window are new at any time; the
    /// sliding window counter and the log judge a request from before that latest time as
    /// made at it, as every decision does. It reads no clock, so it has no `_at` form. A
    /// shared limiter is reset for every process that maps it.
    ///
    /// Each acquire racing a reset is decided wholly before it (and forgotten by it) or
    /// wholly after it, never half counted: together they admit no more than some order
    /// of them would. In two rare races a request may be denied where that order would
    /// admit it, never the reverse: on the log, a request that comes while the resetting
    /// thread is stalled between the reset's two writes; on the sliding window counter, the
    /// first request of a new window racing the reset, which may record the old window's
    /// count as it stood before the reset, to weigh in the new window.
    ///
    /// ```
    /// use librate::{Config, Instant, Limiter};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// let limiter = Limiter::new(&Config::sliding_log(2, 60 * SECOND)).unwrap();
    /// assert!(limiter.acquire_at(2, Instant::ZERO + 10 * SECOND).unwrap().allowed);
    /// assert!(!limiter.acquire_at(1, Instant::ZERO + 20 * SECOND).unwrap().allowed);
    /// limiter.reset();
    /// let fresh = limiter.acquire_at(2, Instant::ZERO + 20 * SECOND).unwrap();
    /// assert!(fresh.allowed);
    /// assert_eq!(fresh.reset_after(), 60 * SECOND);
    /// ```
    pub fn reset(&self) {
        // A request of 0 units: no rule refuses it. In a file whose rule changed, the
        // reset can fail as a decision there can (a changer stopped mid-change, every
        // registry entry taken, words that hold no rule): it then resets nothing.
        let reset = self.generations.decide(acquiring(0), Reset);
        debug_assert!(!matches!(reset, Err(AcquireError::InsufficientCapacity)));
    }

    /// The rule this limiter enforces, for a policy of several ([`crate::Policy`]).
    #[inline]
    pub(crate) fn rule(&self) -> Decider {
        self.generations
            .with_current(|generation| generation.decider)
    }

    /// A policy's step on this rule: runs `request` (checked by the caller) on the rule in
    /// force, putting what giving an admission back takes (see [`Refund`]) in `refund` if
    /// asked for and there is one, and leaving `refund` as it was otherwise (a denial, a
    /// query, a peek): the outcome is then a `bool` in a register, not a refund copied
    /// out through every layer of the decision. A request beyond the limit of the rule in
    /// force, which a change lowered since the caller's check, is denied for good.
    // Inlined: called, a request of more than two words (a settle's bounds and cost) would
    // be written to memory by the caller and read back here.
    #[inline(always)]
    pub(crate) fn step<R: Request>(
        &self,
        request: R,
        refund: Option<&Cell<Option<RuleRefund>>>,
    ) -> R::Out {
        self.swap(request, refund)
            .unwrap_or_else(|_| request.of_report(self.beyond_limit(request.time())))
    }

    /// The decision on a request of more units than the rule in force ever admits: one a
    /// policy checked against the rule before a change lowered its limit. A [`step`]
    /// takes the rule's refusal as this denial for good, with the state's report.
    ///
    /// [`step`]: Self::step
    #[cold]
    fn beyond_limit(&self, now_ns: u64) -> Decision {
        let peek = state::Peek(state::Acquire { now: now_ns, n: 0 });
        Decision {
            allowed: false,
            retry_after_ns: u64::MAX,
            ..self.step(peek, None)
        }
    }

    /// Gives back an admission of this limiter's, if nothing moved its state on since.
    #[inline]
    pub(crate) fn refund(&self, refund: RuleRefund) -> bool {
        // Words a change replaced since hold the marker, so the refund's swap fails there
        // even if the change comes between the comparison and the swap.
        self.generations.with_current(|generation| {
            generation.serial == refund.generation && refund.refund.apply(generation.state())
        })
    }

    /// Runs `request` on the generation in force (see [`Swap`]).
    #[inline(always)]
    fn swap<R: Request>(
        &self,
        request: R,
        refund: Option<&Cell<Option<RuleRefund>>>,
    ) -> Result<R::Out, AcquireError> {
        let n = request.units();
        self.generations
            .decide(acquiring(n), Swap { request, refund })
    }
}

/// The check of an acquire of `n` units against a rule (a limiter's error).
#[inline(always)]
fn acquiring(n: u64) -> impl Fn(&Decider) -> Result<(), AcquireError> + Copy {
    move |decider| Ok(decider.check(n)?)
}

impl RuleRefund {
    /// Puts the refund of an admission on `generation`'s words in `into`.
    #[inline(always)]
    fn put(generation: &Generation, refund: Refund, into: &Cell<Option<Self>>) {
        let generation = generation.serial;
        into.set(Some(Self { refund, generation }));
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
