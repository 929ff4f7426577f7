//! A reserve that can be cancelled (docs/rust.md, Cancelling a reservation): the
//! `reserve_cancellable` calls of limiters and keyed tables, and the [`Reservation`] they
//! return, the decision and what giving its units back takes (`state/refund.rs`), held on
//! the limiter or the table that admitted it.
//!
//! Giving back is exact as far as no later request depends on the units: it puts the
//! word the admission changed back as it was if the word still holds what the admission
//! left; a word a later admission moved on keeps the units (taken, never admitted
//! twice). A change of rule since the reserve replaced the words: nothing is given back.
//!
//! The C ABI keeps a reservation in memory of its caller's: [`Reservation::to_words`]
//! writes it as plain words and `cancel_words` on the limiter or table takes them back.
//! Any words are safe there: a refund names a word of the rule or region it was taken
//! on, by serial, and an index out of range or a serial not in force gives nothing back.

use crate::decision::Decision;
use crate::error::{KeyedAcquireError, ReserveError};
use crate::keyed::{KeyedLimiter, KeyedRefund};
use crate::limiter::{Limiter, RuleRefund};
use crate::time::{self, Instant};
use std::hash::BuildHasher;
use std::time::Duration;

impl Limiter {
    /// [`reserve`](Self::reserve), whose admission [`Reservation::cancel`] gives back:
    /// for a caller that may not act after all (its context ended, a later step failed).
    /// A denial, or a query of 0 units, holds nothing to give back.
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub fn reserve_cancellable(
        &self,
        n: u64,
        max_wait: Duration,
    ) -> Result<Reservation<'_>, ReserveError> {
        self.reserve_cancellable_at(n, Instant::now(), max_wait)
    }

    /// [`reserve_cancellable`](Self::reserve_cancellable) at `at`.
    ///
    /// ```
    /// use librate::{Config, Instant, Limiter};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// // One unit a second, no burst beyond it.
    /// let limiter = Limiter::new(&Config::gcra(1, SECOND).with_burst(1)).unwrap();
    /// let first = limiter.reserve_cancellable_at(1, Instant::ZERO, Duration::ZERO).unwrap();
    /// assert!(first.decision().allowed);
    /// assert!(first.cancel()); // given back: the next reserve is admitted at once
    /// let again = limiter.reserve_cancellable_at(1, Instant::ZERO, SECOND).unwrap();
    /// assert_eq!(again.decision().wait(), Duration::ZERO);
    /// // A later reserve queued behind it: cancelling `again` gives nothing back.
    /// let later = limiter.reserve_cancellable_at(1, Instant::ZERO, SECOND).unwrap();
    /// assert_eq!(later.decision().wait(), SECOND);
    /// assert!(!again.cancel());
    /// ```
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub fn reserve_cancellable_at(
        &self,
        n: u64,
        at: Instant,
        max_wait: Duration,
    ) -> Result<Reservation<'_>, ReserveError> {
        let (decision, refund) =
            self.reserve_refundable_at(n, at.as_nanos(), time::nanos(max_wait))?;
        Ok(Reservation::of_rule(self, decision, refund))
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// [`Limiter::reserve_cancellable`](crate::Limiter::reserve_cancellable) for `key`:
    /// [`reserve`](Self::reserve), whose admission [`Reservation::cancel`] gives back. A
    /// key the reserve inserted is absent again once given back. (The hasher is `Sync`,
    /// as the default [`KeyHasher`](crate::KeyHasher) is, so that the reservation is
    /// `Send` and `Sync`.)
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub fn reserve_cancellable(
        &self,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<Reservation<'_>, ReserveError<KeyedAcquireError>>
    where
        S: Sync,
    {
        self.reserve_cancellable_at(key, n, Instant::now(), max_wait)
    }

    /// [`reserve_cancellable`](Self::reserve_cancellable) at `at`.
    ///
    /// ```
    /// use librate::{Config, Instant, KeyedLimiter};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// let table = KeyedLimiter::new(&Config::gcra(1, SECOND).with_burst(1), 16).unwrap();
    /// let held = table.reserve_cancellable_at(b"alice", 1, Instant::ZERO, SECOND).unwrap();
    /// assert!(held.decision().allowed);
    /// assert!(held.cancel());
    /// let again = table.reserve_at(b"alice", 1, Instant::ZERO, Duration::ZERO).unwrap();
    /// assert!(again.allowed);
    /// ```
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub fn reserve_cancellable_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
        max_wait: Duration,
    ) -> Result<Reservation<'_>, ReserveError<KeyedAcquireError>>
    where
        S: Sync,
    {
        let max_wait_ns = time::nanos(max_wait);
        let (decision, refund) =
            self.reserve_refundable_at(self.locate(key), n, at.as_nanos(), max_wait_ns)?;
        Ok(Reservation::of_key(self, decision, refund))
    }
}

/// How many words [`Reservation::to_words`] writes.
#[doc(hidden)]
pub const RESERVATION_WORDS: usize = 7;

/// The first of a reservation's words: what the others hold.
const NOTHING: u64 = 0;
const RULE: u64 = 1;
const KEY: u64 = 2;

/// An admission of a reserve, which [`cancel`](Self::cancel) gives back: from
/// [`Limiter::reserve_cancellable`] and [`KeyedLimiter::reserve_cancellable`]. It borrows
/// the limiter or table that decided it, so it can only be given back there.
#[must_use = "a reservation that is dropped keeps its units; cancel gives them back"]
pub struct Reservation<'a> {
    decision: Decision,
    held: Option<Held<'a>>,
}

/// What a reservation gives back, and where.
enum Held<'a> {
    Rule(&'a Limiter, RuleRefund),
    // Sync, so that a reservation is Send and Sync: held across an await, or sent.
    Key(&'a (dyn GivesBackKeys + Sync), KeyedRefund),
}

/// A keyed table of any hasher, as a reservation holds it.
trait GivesBackKeys {
    fn refund(&self, refund: KeyedRefund) -> bool;
}

impl<S: BuildHasher> GivesBackKeys for KeyedLimiter<S> {
    fn refund(&self, refund: KeyedRefund) -> bool {
        KeyedLimiter::refund(self, refund)
    }
}

impl<'a> Reservation<'a> {
    pub(crate) fn of_rule(
        limiter: &'a Limiter,
        decision: Decision,
        refund: Option<RuleRefund>,
    ) -> Self {
        let held = refund.map(|refund| Held::Rule(limiter, refund));
        Self { decision, held }
    }

    pub(crate) fn of_key<S: BuildHasher + Sync>(
        table: &'a KeyedLimiter<S>,
        decision: Decision,
        refund: Option<KeyedRefund>,
    ) -> Self {
        let held = refund.map(|refund| Held::Key(table as &(dyn GivesBackKeys + Sync), refund));
        Self { decision, held }
    }

    /// The reserve's decision: `allowed`, and if so the `wait_ns` before acting.
    pub fn decision(&self) -> Decision {
        self.decision
    }

    /// Gives the units back, as far as no later request depends on them, and says whether
    /// it did. `false`: nothing was held (a denial, a query of 0 units), a later
    /// admission moved the state on since (its units stay taken), or a change of rule
    /// replaced the state the units were taken from.
    ///
    /// Given back, the limiter decides as if the reserve had never been made, with one
    /// race that is not exact: a [`Limiter::reset`] since the reserve, whose later
    /// admissions bring GCRA's state back to exactly the value the reserve left, has
    /// those admissions' units given back. A keyed table's reset has no such race.
    pub fn cancel(self) -> bool {
        match self.held {
            None => false,
            Some(Held::Rule(limiter, refund)) => limiter.refund(refund),
            Some(Held::Key(table, refund)) => table.refund(refund),
        }
    }

    /// The reservation as plain words, for a caller that keeps it in memory of its own
    /// (the C ABI) and gives it back with `cancel_words` on the same limiter or table.
    #[doc(hidden)]
    pub fn to_words(self) -> [u64; RESERVATION_WORDS] {
        let mut words = [0; RESERVATION_WORDS];
        match self.held {
            None => words[0] = NOTHING,
            Some(Held::Rule(_, refund)) => {
                words[0] = RULE;
                words[1..5].copy_from_slice(&refund.to_words());
            }
            Some(Held::Key(_, refund)) => {
                words[0] = KEY;
                words[1..].copy_from_slice(&refund.to_words());
            }
        }
        words
    }
}

impl std::fmt::Debug for Reservation<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reservation")
            .field("decision", &self.decision)
            .field("held", &self.held.is_some())
            .finish()
    }
}

impl Limiter {
    /// [`Reservation::cancel`] of the reservation [`Reservation::to_words`] wrote, made on
    /// this limiter; words of anything else give nothing back (module docs).
    #[doc(hidden)]
    pub fn cancel_words(&self, words: &[u64; RESERVATION_WORDS]) -> bool {
        let mut refund = [0; 4];
        refund.copy_from_slice(&words[1..5]);
        words[0] == RULE && self.refund(RuleRefund::from_words(refund))
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// [`Limiter::cancel_words`] for a reservation made on this table.
    #[doc(hidden)]
    pub fn cancel_words(&self, words: &[u64; RESERVATION_WORDS]) -> bool {
        let mut refund = [0; 6];
        refund.copy_from_slice(&words[1..]);
        words[0] == KEY && KeyedRefund::from_words(refund).is_some_and(|r| self.refund(r))
    }
}
