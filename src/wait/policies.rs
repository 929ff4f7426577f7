//! Waiting on a [`Policy`] and on a key of a [`KeyedPolicy`]. A policy has no queue (its
//! rules may be windows, and a reserve of several rules could not wait in each at once):
//! a wait acquires, and while denied sleeps out the denial's `retry_after_ns`, the
//! longest over the rules that deny.

use super::{until_ready, until_ready_async, Acquiring};
use crate::error::{InsufficientCapacity, KeyedAcquireError, WaitError};
use crate::policy::{KeyedPolicy, Policy, PolicyDecision};
use crate::time::Instant;
use std::hash::BuildHasher;
use std::time::Duration;

impl Policy {
    /// Waits, sleeping the thread, until every rule admits `n` units, for at most
    /// `max_wait`: acquires, and while denied sleeps out the denial's `retry_after_ns`
    /// and acquires again. A wait that would outlast `max_wait` gives up at once, with
    /// that denial; nothing is taken from any rule while it waits or when it gives up.
    ///
    /// ```
    /// use librate::{Config, Policy};
    /// use std::time::Duration;
    /// const MS: Duration = Duration::from_millis(1);
    /// const HOUR: Duration = Duration::from_secs(3600);
    /// // One every 20 ms, and 2 in any hour.
    /// let policy = Policy::new(&[Config::gcra(1, 20 * MS), Config::sliding_log(2, HOUR)]).unwrap();
    /// assert!(policy.acquire(1).unwrap().decision.allowed);
    /// assert!(policy.until_ready(1, Duration::from_secs(1)).unwrap().decision.allowed);
    /// // The hour's 2 are taken: a wait of a second gives up at once.
    /// let gave_up = policy.until_ready(1, Duration::from_secs(1)).unwrap();
    /// assert!(!gave_up.decision.allowed);
    /// assert!(gave_up.decision.retry_after() > 1_000 * MS);
    /// ```
    ///
    /// # Errors
    /// [`InsufficientCapacity`] at once if `n` exceeds a rule's limit.
    pub fn until_ready(
        &self,
        n: u64,
        max_wait: Duration,
    ) -> Result<PolicyDecision, InsufficientCapacity> {
        until_ready(&self.acquiring(), n, max_wait)
    }

    /// [`until_ready`](Self::until_ready), sleeping the task, on any executor or on tokio
    /// as [`Limiter::until_ready_async`](crate::Limiter::until_ready_async). It holds no
    /// units while it sleeps, so dropping it gives nothing back.
    ///
    /// # Errors
    /// [`WaitError::Acquire`] as [`until_ready`](Self::until_ready); [`WaitError::Timer`]
    /// if librate's timer thread could not be started.
    pub async fn until_ready_async(
        &self,
        n: u64,
        max_wait: Duration,
    ) -> Result<PolicyDecision, WaitError<InsufficientCapacity>> {
        until_ready_async(&self.acquiring(), n, max_wait).await
    }

    fn acquiring(
        &self,
    ) -> Acquiring<impl Fn(u64, u64) -> Result<PolicyDecision, InsufficientCapacity> + '_> {
        Acquiring(|n, now_ns| self.acquire_at(n, Instant::from_nanos(now_ns)))
    }
}

impl<S: BuildHasher> KeyedPolicy<S> {
    /// [`Policy::until_ready`] for `key`.
    ///
    /// # Errors
    /// [`KeyedAcquireError::InsufficientCapacity`] at once if `n` exceeds a rule's limit;
    /// [`KeyedAcquireError::TableFull`] if `key` is new to a per-key rule whose table is
    /// full of live keys; [`KeyedAcquireError::Shared`] as [`acquire`](Self::acquire).
    pub fn until_ready(
        &self,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<PolicyDecision, KeyedAcquireError> {
        until_ready(&self.acquiring(key), n, max_wait)
    }

    /// [`until_ready`](Self::until_ready), sleeping the task, as
    /// [`Policy::until_ready_async`].
    ///
    /// # Errors
    /// [`WaitError::Acquire`] as [`until_ready`](Self::until_ready), and
    /// [`WaitError::Timer`] as [`Policy::until_ready_async`].
    pub async fn until_ready_async(
        &self,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<PolicyDecision, WaitError<KeyedAcquireError>> {
        until_ready_async(&self.acquiring(key), n, max_wait).await
    }

    fn acquiring<'a>(
        &'a self,
        key: &'a [u8],
    ) -> Acquiring<impl Fn(u64, u64) -> Result<PolicyDecision, KeyedAcquireError> + 'a> {
        Acquiring(move |n, now_ns| self.acquire_at(key, n, Instant::from_nanos(now_ns)))
    }
}
