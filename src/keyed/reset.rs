//! Resetting a key: its state leaves the table, so its next request is decided as a new
//! key's, at any time (as deleting a key from a Redis rate limiter does).
//!
//! # Retire, not rewind
//! A reset cannot make the key's state fresh where it lies: a fresh state's first word is
//! below the one it replaces (GCRA's TAT goes back), and an updater of the key still
//! holding an older value could then land its CAS in another key's state, once the slot
//! is reclaimed and that key's first word climbs back to the value (the first word's
//! promise, `state/cell.rs`). So a reset **retires** the key's slot: it claims the slot as
//! an insert does, names it [`NO_KEY`], and gives it back with its first word unchanged.
//! - **The key** is then absent: lookups skip the slot, and its next request inserts it
//!   afresh, decided on a fresh state.
//! - **The former state** stays in the slot, under no key, until it is fresh; the slot is
//!   then reclaimed as any fresh one (`claim.rs`), and the first word keeps growing across
//!   the retired state as across any tenancy. Until then the slot is taken, as by a live
//!   key.
//! - **Updaters in flight.** One that passed its tenancy check (`Tenant`) before the claim
//!   swaps before it, or fails while the slot is claimed, or swaps after the slot is given
//!   back: into the retired state, which nobody reads. It decided on the key's state as it
//!   was when the reset claimed the slot, so it is decided before the reset, which forgets
//!   it. One that checks after the claim finds a marker or [`NO_KEY`], and looks the key
//!   up again.
//! - **A change of rule** (`change.rs`) moves the slot into the next region, or waits
//!   while the reset holds it and then drops the retired state; a reset that finds the
//!   slot moved resets the key in the next region. A key absent from a region still
//!   being swept into is looked for in the region before, as every operation does
//!   (`regions.rs`).
//! - **Crashes.** The claim is an insert's, registered in a shared table's file: a
//!   recovery puts back the key's fingerprint and first word (`recover.rs`), so a reset
//!   whose process died did not happen.

use super::layout::{Located, NO_KEY};
use super::markers::is_marker;
use super::recover::Claimant;
use super::region::Region;
use super::KeyedLimiter;
use crate::error::ResetError;
use crate::shared::owner::crash_point;
use crate::sync::{Backoff, Ordering};
use std::hash::BuildHasher;

impl<S: BuildHasher> KeyedLimiter<S> {
    /// Resets `key` (arbitrary bytes, as for [`acquire`](Self::acquire)): its next request
    /// is decided as a new key's would be, at any time. A key not in the table is left
    /// absent, not inserted. It reads no clock, so it has no `_at` form; in a shared table
    /// it resets the key for every process.
    ///
    /// Each acquire of the key racing a reset is decided wholly before it (and forgotten by
    /// it) or wholly after it; requests for the key wait out the few instructions the reset
    /// holds its slot, as they do while another key takes over a fresh slot of theirs. The
    /// key's former state keeps its slot, under no key, until
    /// it is fresh (at most a period, or GCRA's burst, after its last admission), then the
    /// slot is reused: resets of busy keys can fill a table for that long.
    ///
    /// ```
    /// use librate::{Config, Instant, KeyedLimiter};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// let users = KeyedLimiter::new(&Config::gcra(1, 60 * SECOND), 1000).unwrap();
    /// assert!(users.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed);
    /// assert!(!users.acquire_at(b"bob", 1, Instant::ZERO + SECOND).unwrap().allowed);
    /// users.reset(b"bob").unwrap(); // support lifted bob's limit
    /// assert!(users.acquire_at(b"bob", 1, Instant::ZERO + SECOND).unwrap().allowed);
    /// users.reset(b"carol").unwrap(); // not in the table: nothing to do
    /// assert_eq!(users.live_keys_at(Instant::ZERO + SECOND), 1);
    /// ```
    ///
    /// # Errors
    /// Only in a shared table: [`ResetError::TableFull`] if the slot the reset needs stays
    /// claimed by a live process for about a second, as an acquire would report;
    /// [`ResetError::Shared`] where a change is moving the table's rule, as a decision
    /// there ([`set_config`](Self::set_config)).
    pub fn reset(&self, key: &[u8]) -> Result<(), ResetError> {
        let key = self.locate(key);
        let mut backoff = Backoff::default();
        let view = self.view();
        let mut region = view.current();
        loop {
            let outcome = match region.reset_located(key)? {
                // Absent from a region being swept into: the key may not be moved yet.
                Reset::Absent if region.is_sweeping() => {
                    // SAFETY: read through `view`, which found it swept into.
                    unsafe { view.predecessor(region) }.reset_located(key)?
                }
                outcome => outcome,
            };
            if outcome != Reset::Moved {
                return Ok(());
            }
            // The key's slot was moved into a next region: reset it there.
            backoff.snooze();
            region = view.latest()?;
        }
    }
}

/// What a reset found in one region.
#[derive(PartialEq, Eq)]
pub(super) enum Reset {
    /// The key's slot is retired.
    Done,
    /// The key is not in the region.
    Absent,
    /// The key's slot was moved into a next region.
    Moved,
}

impl Region {
    /// Resets `key` in this region: retires its slot if it holds the key.
    ///
    /// # Errors
    /// As [`KeyedLimiter::reset`].
    fn reset_located(&self, key: Located) -> Result<Reset, ResetError> {
        loop {
            // AcqRel, an RMW that changes nothing: it reads the latest bound, so a key
            // installed before this call is found, and it orders this lookup among the
            // inserts' own RMWs (`insert`), as `confirm_full` does.
            let bound = self.max_distance().fetch_max(0, Ordering::AcqRel);
            let Some(slot) = self.find(key, bound) else {
                return Ok(Reset::Absent);
            };
            let Some(claimant) = self.claimant(key.home) else {
                return Err(ResetError::TableFull);
            };
            let retired = self.retire(claimant, key, slot, None);
            self.release(claimant);
            if retired {
                return Ok(Reset::Done);
            }
            if self.is_moved(slot) {
                return Ok(Reset::Moved);
            }
        }
    }

    /// Retires `slot` if it holds `key`'s state (module docs), and if `only_from` is given,
    /// only while its first word is that value, which it then gives back one higher;
    /// `false` if it no longer does, or another thread got there first.
    ///
    /// A reset gives the first word back unchanged: an updater of the key that checked its
    /// tenancy before the claim may land its swap in the retired state, decided before the
    /// reset, which forgets it. A give-back of an insert (`give_back.rs`) must not forget
    /// such an update, whose decision counted the units given back: one higher, the word
    /// holds no value any updater of the key expects, and still only grows.
    pub(super) fn retire(
        &self,
        claimant: Claimant,
        key: Located,
        slot: usize,
        only_from: Option<u64>,
    ) -> bool {
        // Acquire: pairs with the store that installed this value, so the fingerprint read
        // next is its key's or a later tenant's.
        let first = self.first_word(slot).load(Ordering::Acquire);
        // Relaxed: ordered after the Acquire load above.
        if is_marker(first)
            || self.fingerprint_word(slot).load(Ordering::Relaxed) != key.fingerprint
        {
            return false;
        }
        let given_back = match only_from {
            None => first,
            // Not a marker, so one more does not overflow.
            Some(from) if from == first && !is_marker(first + 1) => first + 1,
            Some(_) => return false,
        };
        self.announce(claimant, slot, first);
        // AcqRel on success, as an insert's claim: Release so a recovery that reads the
        // marker reads the announcement (`recover.rs`). Relaxed on failure: the caller
        // looks again.
        if self
            .first_word(slot)
            .compare_exchange(first, claimant.marker, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        crash_point();
        // Relaxed: the claim holds the slot and only a claimer changes its fingerprint. A
        // retire of the key that came first gave the same first word back, so the claim
        // alone does not show the slot is still the key's; this does.
        if self.fingerprint_word(slot).load(Ordering::Relaxed) != key.fingerprint {
            self.back_out(slot, first);
            return false;
        }
        // Release: orders the claim before the new fingerprint, as an install does, for
        // `Tenant::check`.
        self.fingerprint_word(slot).store(NO_KEY, Ordering::Release);
        crash_point();
        // Release: as a back-out's, publishes the fingerprint with the first word.
        self.first_word(slot).store(given_back, Ordering::Release);
        true
    }
}
