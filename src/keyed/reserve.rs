//! What a wait (`src/wait.rs`) asks of a key it located once: a reserve that keeps what
//! giving its admission back takes, as the policy's refundable acquires do
//! (`give_back.rs`), for a wait that may be cancelled while it sleeps out its place in
//! the key's GCRA queue; and a plain acquire. A caller's reservation
//! (`src/reservation.rs`) is that reserve.

use super::give_back::{KeyedRefund, Taken};
use super::insert::Request;
use super::layout::Located;
use super::KeyedLimiter;
use crate::decision::Decision;
use crate::error::{KeyedAcquireError, ReserveError};
use std::hash::BuildHasher;

impl<S: BuildHasher> KeyedLimiter<S> {
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
