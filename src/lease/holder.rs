//! A holder of a lease on a global rule (docs/leases.md), without I/O: it decides from its
//! share with atomics alone, counts its demand, says what to ask the lease script, and
//! applies the answer. A client (`librate::redis`, Python's, Go's) carries the calls.

use super::gcra_share::GcraShare;
use super::rule::{Divided, LeaseRule};
use super::stats::Books;
use super::window_share::{self, WindowShare};
use super::words::{self, Words};
use crate::config::Config;
use crate::counters::Counters;
use crate::decision::Decision;
use crate::error::{AcquireError, ConfigError};
use crate::limiter::Limiter;
use crate::sync::{AtomicU64, CountAtomicU64, Ordering::*};
use crate::time::{self, ClockHint, Instant};
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Mutex;

/// What a holder decides by when it holds no lease and Redis has not answered (it is down,
/// or the first renewal is on its way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Deny every request.
    Deny,
    /// Decide by this local rule (such as the global rule divided by the expected number
    /// of holders): the caller's choice, which the global rule's promise does not cover.
    Local(Config),
}

/// Where a holder's decisions come from at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HolderState {
    /// From its share, under a lease.
    Leased,
    /// Redis answered that it holds no share (the rule is taken, or quiet): denied.
    Unshared,
    /// No lease and no answer: from the [`Fallback`].
    Fallback,
}

/// A holder of a share of a [`LeaseRule`], deciding in process. `Send + Sync`: its
/// decisions are lock-free; its renewals are one caller's at a time.
///
/// ```
/// use librate::lease::{Fallback, Grant, HolderState, LeaseHolder};
/// use librate::{Config, Instant, LeaseRule};
/// use std::time::Duration;
/// let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(2)).unwrap();
/// let holder = LeaseHolder::new(&rule, Fallback::Deny).unwrap();
/// let renewal = holder.renewal_at(Instant::ZERO);
/// // The lease script's answer: half the rate, a burst of 500, for 2 s.
/// let fields = [500_000, 500, 2_000_000, 1, 500_000, 500, 2, 0];
/// let grant = Grant::from_fields(b"granted", fields).unwrap();
/// holder.apply_at(&renewal, &grant, Instant::ZERO).unwrap();
/// assert_eq!(holder.state_at(Instant::ZERO), HolderState::Leased);
/// // A share starts empty and fills at its rate: one unit every 2 ms.
/// assert!(!holder.try_acquire_at(1, Instant::ZERO).unwrap());
/// assert!(holder.try_acquire_at(1, Instant::ZERO + Duration::from_millis(2)).unwrap());
/// ```
#[derive(Debug)]
pub struct LeaseHolder {
    pub(super) rule: LeaseRule,
    pub(super) name: String,
    /// What decides from the share held.
    pub(super) local: Local,
    pub(super) fallback: Option<Limiter>,
    /// The lease's end, the demand, the renewals' books and a window's count
    /// (`words.rs`).
    pub(super) words: Words,
    /// This process's renewals, one at a time.
    pub(super) renewing: Mutex<()>,
    /// What this handle's renewals applied, for [`stats`](Self::stats).
    pub(super) books: Books,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    pub(super) counters: Counters,
    /// The most units a request may take ([`LeaseRule`]'s), for the decisions that do not
    /// take `inline_most`'s path, without matching on the rule's algorithm.
    most: u64,
    /// The most units `try_acquire` decides from a GCRA share inline, uncounted: `most`
    /// for a GCRA holder until counting is turned on, else 0. One word, read in place of
    /// the algorithm, the counts' state and `most`, beside what a decision reads anyway.
    pub(super) inline_most: CountAtomicU64,
    /// Which clock reading this holder's decisions take first, as a limiter's.
    hint: ClockHint,
}

/// What decides from a share, in the holder's words: a GCRA of the share's rate and
/// burst (`gcra_share.rs`), or a window's count (`window_share.rs`).
#[derive(Debug)]
pub(super) enum Local {
    Gcra,
    Window,
}

impl LeaseHolder {
    /// A holder of `rule` under a name of its own (random), deciding by `fallback` until
    /// its first lease.
    ///
    /// # Errors
    /// The [`ConfigError`] of a [`Fallback::Local`] rule.
    pub fn new(rule: &LeaseRule, fallback: Fallback) -> Result<Self, ConfigError> {
        Self::named(rule, fallback, &random_name())
    }

    /// A holder named `name`, which no other holder of the rule may share: two holders of
    /// one name are one holder to Redis, and could decide from one share twice.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn named(rule: &LeaseRule, fallback: Fallback, name: &str) -> Result<Self, ConfigError> {
        let fallback = match fallback {
            Fallback::Deny => None,
            Fallback::Local(config) => Some(Limiter::new(&config)?),
        };
        Ok(Self::with(
            rule,
            name.to_owned(),
            Local::of(rule),
            fallback,
            Words::new(),
        ))
    }

    /// A holder of `rule` named `name`, on `words`.
    pub(super) fn with(
        rule: &LeaseRule,
        name: String,
        local: Local,
        fallback: Option<Limiter>,
        words: Words,
    ) -> Self {
        let inline_most = if matches!(local, Local::Gcra) {
            rule.most()
        } else {
            0
        };
        Self {
            rule: *rule,
            name,
            local,
            fallback,
            words,
            renewing: Mutex::default(),
            books: Books::default(),
            counters: Counters::default(),
            most: rule.most(),
            inline_most: CountAtomicU64::new(inline_most),
            hint: ClockHint::default(),
        }
    }

    /// The rule held.
    pub fn rule(&self) -> &LeaseRule {
        &self.rule
    }

    /// The lease script of the rule's algorithm ([`LeaseRule::script`]).
    pub fn script(&self) -> &'static str {
        self.rule.script()
    }

    /// [`script`](Self::script) with a NUL, for C.
    #[doc(hidden)]
    pub fn script_with_nul(&self) -> &'static str {
        self.rule.script_with_nul()
    }

    /// The holder's name in the rule's hash.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Admits `n` units now or not, as [`Limiter::try_acquire`] does.
    ///
    /// # Errors
    /// [`AcquireError::InsufficientCapacity`] if `n` exceeds the global rule's burst (a
    /// window's limit).
    #[inline(always)]
    pub fn try_acquire(&self, n: u64) -> Result<bool, AcquireError> {
        // Relaxed: a decision racing `enable_counts` may go uncounted, as one just before
        // it would. One word and one comparison (`n - 1` wraps for 0) pick the common case.
        if n.wrapping_sub(1) < self.inline_most.load(Relaxed) {
            return Ok(self.try_acquire_share_now(n));
        }
        self.try_acquire_otherwise(n)
    }

    /// [`try_acquire`](Self::try_acquire) of `1 ≤ n ≤ most` units from a GCRA share, or
    /// beside it, uncounted.
    #[inline(always)]
    fn try_acquire_share_now(&self, n: u64) -> bool {
        // Acquire: as `try_acquire_at`'s.
        let lease_end = self.lease_end().load(Acquire);
        let admitted = match self.gcra_share().try_acquire_now(n, lease_end, &self.hint) {
            Some(admitted) => admitted,
            None => self.beside_share_now(n),
        };
        // After the decision, whose clock reading it would otherwise hold up: the demand
        // is read once a renewal, and which decisions it counted by then does not matter.
        self.count_demand(n);
        admitted
    }

    /// [`try_acquire`](Self::try_acquire) but for its common case: counted, a window's,
    /// a query or a request past the rule.
    #[inline(never)]
    fn try_acquire_otherwise(&self, n: u64) -> Result<bool, AcquireError> {
        let admitted = match (&self.local, n) {
            (Local::Gcra, 1..) if n <= self.most => Ok(self.try_acquire_share_now(n)),
            _ => self.try_acquire_uncounted_at(n, Instant::now()),
        };
        self.counters.count(n, &admitted);
        admitted
    }

    /// [`try_acquire`](Self::try_acquire) at `at`.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    #[inline]
    pub fn try_acquire_at(&self, n: u64, at: Instant) -> Result<bool, AcquireError> {
        let admitted = self.try_acquire_uncounted_at(n, at);
        self.counters.count(n, &admitted);
        admitted
    }

    /// [`try_acquire_at`](Self::try_acquire_at), uncounted.
    #[inline]
    fn try_acquire_uncounted_at(&self, n: u64, at: Instant) -> Result<bool, AcquireError> {
        Ok(match self.try_acquire_leased_at(n, at)? {
            Some(admitted) => admitted,
            None => self.beside_share(n, at).allowed,
        })
    }

    /// Counts `n` units in the demand and decides them from the share if one is held at
    /// `at`; `None` if none is.
    #[inline]
    pub(super) fn try_acquire_leased_at(
        &self,
        n: u64,
        at: Instant,
    ) -> Result<Option<bool>, AcquireError> {
        self.ask(n)?;
        Ok(match &self.local {
            // Acquire: a lease end read is one whose share was set before it was published.
            Local::Gcra if at.as_nanos() < self.lease_end().load(Acquire) => {
                self.gcra_share().try_acquire(n, at.as_nanos())
            }
            Local::Window => self
                .window()
                .decide(n, at.as_nanos())
                .map(|decision| decision.allowed),
            Local::Gcra => None,
        })
    }

    /// Decides `n` units now, with the decision's fields (docs/decision.md), which are
    /// the share's: exact for it, conservative for the global rule.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn acquire(&self, n: u64) -> Result<Decision, AcquireError> {
        self.acquire_at(n, Instant::now())
    }

    /// [`acquire`](Self::acquire) at `at`.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn acquire_at(&self, n: u64, at: Instant) -> Result<Decision, AcquireError> {
        let decided = (self.acquire_leased_at(n, at))
            .map(|decided| decided.unwrap_or_else(|| self.beside_share(n, at)));
        self.counters.count(n, &decided);
        decided
    }

    /// [`try_acquire_leased_at`](Self::try_acquire_leased_at) with the share's decision.
    pub(super) fn acquire_leased_at(
        &self,
        n: u64,
        at: Instant,
    ) -> Result<Option<Decision>, AcquireError> {
        self.ask(n)?;
        Ok(match &self.local {
            // Acquire: as `try_acquire_leased_at`'s.
            Local::Gcra if at.as_nanos() < self.lease_end().load(Acquire) => {
                self.gcra_share().acquire(n, at.as_nanos())
            }
            Local::Window => self.window().decide(n, at.as_nanos()),
            Local::Gcra => None,
        })
    }

    /// Counts a request of `n` units in the demand, if the global rule can ever admit it.
    #[inline(always)]
    pub(super) fn ask(&self, n: u64) -> Result<(), AcquireError> {
        if n > self.most {
            return Err(AcquireError::InsufficientCapacity);
        }
        self.count_demand(n);
        Ok(())
    }

    /// Counts `n` units in the demand.
    #[inline(always)]
    fn count_demand(&self, n: u64) {
        // Relaxed: a count read once a renewal, whose exactness is a renewal's.
        self.words.get(words::REQUESTED).fetch_add(n, Relaxed);
    }

    /// [`beside_share`](Self::beside_share) now, whether it admits.
    #[cold]
    fn beside_share_now(&self, n: u64) -> bool {
        self.beside_share(n, Instant::now()).allowed
    }

    /// The decision without a share that admits `n`: the fallback's, or a denial until
    /// the next renewal (a query is admitted).
    #[cold]
    fn beside_share(&self, n: u64, at: Instant) -> Decision {
        if self.state_at(at) == HolderState::Fallback {
            if let Some(local) = &self.fallback {
                if let Ok(decision) = local.acquire_at(n, at) {
                    return decision;
                }
            }
        }
        without_share(&self.rule, n, self.granted().burst)
    }

    /// Where decisions come from now.
    pub fn state(&self) -> HolderState {
        self.state_at(Instant::now())
    }

    /// Where decisions come from at `at`.
    pub fn state_at(&self, at: Instant) -> HolderState {
        let now = at.as_nanos();
        if now < self.lease_end().load(Acquire) {
            HolderState::Leased
        } else if now < self.words.get(words::UNSHARED_UNTIL).load(Relaxed) {
            HolderState::Unshared
        } else {
            HolderState::Fallback
        }
    }

    /// The units asked for since the last renewal.
    pub(super) fn asked(&self) -> u64 {
        // Relaxed: a count, as `ask`'s.
        self.words.get(words::REQUESTED).load(Relaxed)
    }

    /// Whether the holder's words are its own (not a host's).
    pub(crate) fn holds_own_words(&self) -> bool {
        self.words.own()
    }

    /// The word of the lease's end.
    #[inline(always)]
    pub(super) fn lease_end(&self) -> &AtomicU64 {
        self.words.get(words::LEASE_END)
    }

    /// A window's count, in the holder's words.
    pub(super) fn window(&self) -> WindowShare<'_> {
        WindowShare::on(self.words.range(words::WINDOW, window_share::WORDS))
    }

    /// A GCRA share, in the holder's words.
    #[inline(always)]
    pub(super) fn gcra_share(&self) -> GcraShare<'_> {
        GcraShare::on(self.words.array(words::GCRA))
    }
}

/// The decision on `n` units of `rule` with no share to decide them (whose last burst was
/// `limit`): a denial until the next renewal; a query is admitted.
pub(super) fn without_share(rule: &LeaseRule, n: u64, limit: u64) -> Decision {
    Decision {
        allowed: n == 0,
        limit,
        remaining: 0,
        retry_after_ns: if n == 0 {
            0
        } else {
            time::nanos(rule.renew_every())
        },
        reset_after_ns: 0,
        wait_ns: 0,
    }
}

/// A holder's name of its own: 16 random hex digits.
pub(super) fn random_name() -> String {
    let random = RandomState::new().hash_one(std::process::id());
    format!("{random:016x}")
}

impl Local {
    /// What decides from a share of `rule`.
    pub(super) fn of(rule: &LeaseRule) -> Self {
        match rule.divided() {
            Divided::Gcra { .. } => Self::Gcra,
            Divided::FixedWindow { .. } => Self::Window,
        }
    }
}
