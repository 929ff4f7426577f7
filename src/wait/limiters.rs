//! Waiting on a [`Limiter`] and on a key of a [`KeyedLimiter`].

use super::{until_ready, until_ready_async, Waited};
use crate::decision::Decision;
use crate::error::{AcquireError, KeyedAcquireError, ReserveError, WaitError};
use crate::keyed::{KeyedLimiter, KeyedRefund, Located};
use crate::limiter::{Limiter, RuleRefund};
use crate::time::Instant;
use std::hash::BuildHasher;
use std::time::Duration;

impl Limiter {
    /// Waits, sleeping the thread, until `n` units are admitted, for at most `max_wait`.
    /// GCRA books a place in its queue with one [`reserve`](Self::reserve) and sleeps out
    /// its `wait_ns`; the window algorithms and the log acquire, and while denied sleep out
    /// the denial's `retry_after_ns` and acquire again. A wait that would outlast
    /// `max_wait` gives up at once, having taken nothing.
    ///
    /// Returns the decision that admitted the units (GCRA's reserve: its `wait_ns` is the
    /// wait slept), or the denial the wait gave up on (`allowed == false`: for GCRA a
    /// reserve's, whose `retry_after_ns` is for the same wait). `n == 0` reports at once.
    ///
    /// ```
    /// use librate::{Config, Limiter};
    /// use std::time::Duration;
    /// const MS: Duration = Duration::from_millis(1);
    /// // One unit every 20 ms.
    /// let limiter = Limiter::new(&Config::gcra(1, 20 * MS)).unwrap();
    /// assert!(limiter.acquire(1).unwrap().allowed);
    /// let admitted = limiter.until_ready(1, Duration::from_secs(1)).unwrap();
    /// assert!(admitted.allowed && admitted.wait() <= 20 * MS);
    /// // One unit an hour: a wait of a second gives up at once, taking nothing.
    /// let hourly = Limiter::new(&Config::per_hour(1)).unwrap();
    /// assert!(hourly.acquire(1).unwrap().allowed);
    /// assert!(!hourly.until_ready(1, Duration::from_secs(1)).unwrap().allowed);
    /// ```
    ///
    /// # Errors
    /// [`AcquireError::InsufficientCapacity`] at once if `n` exceeds the limit: no wait
    /// admits it; [`AcquireError::Shared`] as [`acquire`](Self::acquire).
    pub fn until_ready(&self, n: u64, max_wait: Duration) -> Result<Decision, AcquireError> {
        until_ready(self, n, max_wait)
    }

    /// [`until_ready`](Self::until_ready), sleeping the task: on any executor (a timer
    /// thread of librate's wakes it), or with the `tokio` feature on tokio's timer when
    /// a tokio runtime polls it. Dropped before its wait ends (the task cancelled, a
    /// timeout), a GCRA wait gives the units of its reserve back, unless a later request
    /// moved the limiter on since (a reserve queued behind it): then they stay taken.
    ///
    /// # Errors
    /// [`WaitError::Acquire`] as [`until_ready`](Self::until_ready); [`WaitError::Timer`]
    /// if librate's timer thread could not be started (the units are then given back).
    pub async fn until_ready_async(
        &self,
        n: u64,
        max_wait: Duration,
    ) -> Result<Decision, WaitError> {
        until_ready_async(self, n, max_wait).await
    }
}

impl Waited for Limiter {
    type Decided = Decision;
    type Refund = RuleRefund;
    type Error = AcquireError;

    fn reserve_at(
        &self,
        n: u64,
        now_ns: u64,
        max_wait_ns: u64,
    ) -> Result<(Decision, Option<RuleRefund>), ReserveError> {
        self.reserve_refundable_at(n, now_ns, max_wait_ns)
    }

    fn acquire_at(&self, n: u64, now_ns: u64) -> Result<Decision, AcquireError> {
        Limiter::acquire_at(self, n, Instant::from_nanos(now_ns))
    }

    fn refund(&self, refund: RuleRefund) {
        Limiter::refund(self, refund);
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// [`Limiter::until_ready`] for `key`: waits, sleeping the thread, until `n` units are
    /// admitted for `key`, for at most `max_wait`, and a wait that gives up takes nothing
    /// (a new key is not inserted).
    ///
    /// # Errors
    /// [`KeyedAcquireError::InsufficientCapacity`] at once if `n` exceeds the limit;
    /// [`KeyedAcquireError::TableFull`] if `key` is new and the table is full of live
    /// keys; [`KeyedAcquireError::Shared`] as [`acquire`](Self::acquire).
    pub fn until_ready(
        &self,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<Decision, KeyedAcquireError> {
        until_ready(&self.waiting(key), n, max_wait)
    }

    /// [`until_ready`](Self::until_ready), sleeping the task, as
    /// [`Limiter::until_ready_async`]: dropped before its wait ends, a GCRA wait gives
    /// the key's units back (a key its reserve inserted is absent again).
    ///
    /// # Errors
    /// [`WaitError::Acquire`] as [`until_ready`](Self::until_ready), and
    /// [`WaitError::Timer`] as [`Limiter::until_ready_async`].
    pub async fn until_ready_async(
        &self,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<Decision, WaitError<KeyedAcquireError>> {
        until_ready_async(&self.waiting(key), n, max_wait).await
    }

    fn waiting(&self, key: &[u8]) -> Key<'_, S> {
        Key {
            table: self,
            key: self.locate(key),
        }
    }
}

/// A key of a table, located once for every step of a wait.
struct Key<'a, S> {
    table: &'a KeyedLimiter<S>,
    key: Located,
}

impl<S: BuildHasher> Waited for Key<'_, S> {
    type Decided = Decision;
    type Refund = KeyedRefund;
    type Error = KeyedAcquireError;

    fn reserve_at(
        &self,
        n: u64,
        now_ns: u64,
        max_wait_ns: u64,
    ) -> Result<(Decision, Option<KeyedRefund>), ReserveError<KeyedAcquireError>> {
        (self.table).reserve_refundable_at(self.key, n, now_ns, max_wait_ns)
    }

    fn acquire_at(&self, n: u64, now_ns: u64) -> Result<Decision, KeyedAcquireError> {
        self.table.acquire_located_at(self.key, n, now_ns)
    }

    fn refund(&self, refund: KeyedRefund) {
        self.table.refund(refund);
    }
}
