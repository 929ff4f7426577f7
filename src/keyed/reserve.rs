//! What a wait (`src/wait.rs`) asks of a key it located once: a reserve that keeps what
//! giving its admission back takes, as the policy's refundable acquires do
//! (`give_back.rs`), for a wait that may be cancelled while it sleeps out its place in
//! the key's GCRA queue; and a plain acquire. A caller's [`Reservation`]
//! (`src/reservation.rs`) is that reserve.

use super::give_back::{KeyedRefund, Taken};
use super::insert::Request;
use super::layout::Located;
use super::KeyedLimiter;
use crate::decision::Decision;
use crate::error::{KeyedAcquireError, ReserveError};
use crate::reservation::Reservation;
use crate::time::{self, Instant};
use std::hash::BuildHasher;
use std::time::Duration;

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

    /// [`reserve_at`](Self::reserve_at) for `key` (as [`locate`](Self::locate) found it),
    /// with what giving the units back takes if they were admitted
    /// ([`refund`](Self::refund) gives them back).
    ///
    /// # Errors
    /// As [`reserve_at`](Self::reserve_at).
    pub(crate) fn reserve_refundable_at(
        &self,
        key: Located,
        n: u64,
        now_ns: u64,
        max_wait_ns: u64,
    ) -> Result<(Decision, Option<KeyedRefund>), ReserveError<KeyedAcquireError>> {
        self.acquire_routed(
            &self.view(),
            key,
            Request::new(now_ns, n, Some(max_wait_ns)),
            None,
            |region, slot, state, tenant| {
                let (decision, refund) = (region.decider).reserve_refundable_at(
                    state,
                    tenant,
                    now_ns,
                    n,
                    max_wait_ns,
                )?;
                let taken = |refund| KeyedRefund::new(region, Taken::InPlace { slot, refund });
                Ok((decision, refund.map(taken)))
            },
            |region, decision, installed| {
                let taken =
                    |installed| KeyedRefund::new(region, Taken::Inserted { key, installed });
                (decision, installed.map(taken))
            },
        )
    }

    /// [`acquire_at`](Self::acquire_at) for `key` (as [`locate`](Self::locate) found it).
    ///
    /// # Errors
    /// As [`acquire_at`](Self::acquire_at).
    pub(crate) fn acquire_located_at(
        &self,
        key: Located,
        n: u64,
        now_ns: u64,
    ) -> Result<Decision, KeyedAcquireError> {
        let request = Request::new(now_ns, n, None);
        self.acquire_located(&self.view(), key, request, None)
    }
}
