//! Giving a key's units back: a keyed policy (`src/policy/keyed.rs`) takes a request from
//! each of its rules in turn, and when a later rule denies it, the per-key rules that took
//! it give their units back, as a policy's limiters do (`state/refund.rs`).
//!
//! # In place
//! A request decided on the key's state in its slot changed one word from `before` to
//! `after`; giving back is a CAS of that word from `after` to `before`. In a limiter's own
//! words that is exact (`Refund::apply`). In a slot it must also never land in another
//! key's state, which holds because the slot's first word (the word every algorithm that
//! gives back changes: GCRA's TAT, a window counter's current word) cannot hold `after`
//! again under another tenancy:
//! - **While the admission is not given back, the word is at least `after`.** Every
//!   change of it is an admission, which grows it, or a give-back, which puts back exactly
//!   what an admission changed: one ordered after ours started from at least `after`, and
//!   one ordered before ours expects a value at most our `before`, below what the word
//!   holds. A reset retires the slot without lowering it (`reset.rs`).
//! - **A reclaim installs a larger word.** A reclaimer claims the slot from the value `w`
//!   it judged fresh at its time `now` (so `w ≥ after` while our give-back is pending),
//!   and installs the state its request decides on a copy of `w` at that same `now`
//!   (`install`): GCRA's TAT becomes `max(w, now) + cost·T > w`; a window counter moves to
//!   the window of `now` or counts one more unit in it, either way a larger packed word
//!   (window above count); the log's head continues from `w`'s (and a log never gives
//!   back). A state installed into a `VACANT` slot is larger than nothing the slot held.
//! - **The new key never goes back below it.** Its own in-place give-backs put back values
//!   its tenancy held, and its insert's give-back does not lower the word (below).
//!
//! So the CAS from `after` fails once the slot changed tenancy, and the units stay with
//! the key that was evicted: it was fresh at the reclaimer's time, so nothing is lost.
//!
//! # An insert
//! A request that inserted its key cannot put the slot back as it was: the value the claim
//! replaced is an earlier tenancy's, which stale updaters and give-backs of the former key
//! may still expect. Its key was absent, which decides as a fresh state, so giving back
//! makes it absent again: the slot is **retired** as a reset retires it, while its first
//! word still holds the installed value, and given back one higher so that an updater of
//! the key that decided on the installed state (counting the units given back) fails its
//! swap and decides again. The former state keeps the slot, under no key, until it is
//! fresh, as a reset key's does.
//!
//! # Racing a reset
//! A reset of the key retires its slot. A give-back ordered after the retire either finds
//! the slot claimed, or (in place) lands in the retired state, which no key reads; either
//! way the key's next request is decided as a new key's, as after any reset, and the
//! units the denied request held are forgotten with the reset.

use super::claim::Installed;
use super::insert::Request;
use super::layout::Located;
use super::region::Region;
use super::KeyedLimiter;
use crate::error::{KeyedAcquireError, SharedError};
use crate::state::{self, owned, Owned, Refund};
use std::cell::Cell;
use std::hash::BuildHasher;

/// What giving a keyed admission back takes (module docs): the region it was taken in,
/// by serial (its address may be a later region's once it is freed), and where.
#[derive(Clone, Copy)]
pub(crate) struct KeyedRefund {
    region: u64,
    taken: Taken,
}

/// Where a keyed admission took its units.
#[derive(Clone, Copy)]
pub(super) enum Taken {
    /// The request was decided on the key's state in `slot`.
    InPlace { slot: usize, refund: Refund },
    /// The request inserted the key.
    Inserted { key: Located, installed: Installed },
}

/// The first of a keyed refund's words (`to_words`): where its units were taken.
const IN_PLACE: u64 = 0;
const INSERTED: u64 = 1;

impl KeyedRefund {
    pub(super) fn new(region: &Region, taken: Taken) -> Self {
        let region = region.serial;
        Self { region, taken }
    }

    /// The refund as plain words (`src/reservation.rs`).
    pub(crate) fn to_words(self) -> [u64; 6] {
        match self.taken {
            Taken::InPlace { slot, refund } => {
                let [word, before, after] = refund.to_words();
                [IN_PLACE, self.region, slot as u64, word, before, after]
            }
            Taken::Inserted { key, installed } => {
                let (home, slot) = (key.home as u64, installed.slot as u64);
                [
                    INSERTED,
                    self.region,
                    key.fingerprint,
                    home,
                    slot,
                    installed.first,
                ]
            }
        }
    }

    /// The refund [`to_words`](Self::to_words) wrote, or `None` for words no refund
    /// writes. Any other words make one, which [`KeyedLimiter::refund`] checks: a region
    /// not in force or a slot out of its range gives nothing back.
    pub(crate) fn from_words([kind, region, a, b, c, d]: [u64; 6]) -> Option<Self> {
        let index = |word: u64| usize::try_from(word).unwrap_or(usize::MAX);
        let taken = match kind {
            IN_PLACE => Taken::InPlace {
                slot: index(a),
                refund: Refund::from_words([b, c, d]),
            },
            INSERTED => Taken::Inserted {
                key: Located {
                    fingerprint: a,
                    home: index(b),
                },
                installed: Installed {
                    slot: index(c),
                    first: d,
                },
            },
            _ => return None,
        };
        Some(Self { region, taken })
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// A keyed policy's step on this table: runs `request` (checked by the caller) for
    /// `key` (as [`locate`](Self::locate) found it), with what giving an admission back
    /// takes. A key in the table is decided on its state, a missing one by an insert of
    /// it (whose full report the request is told), or, for a request that never writes,
    /// on a fresh state (as it is if the table's file rule in force cannot be reached:
    /// the acquire that follows says why).
    ///
    /// # Errors
    /// As [`acquire_at`](Self::acquire_at).
    #[inline]
    pub(crate) fn step<R: state::Request>(
        &self,
        key: Located,
        request: R,
    ) -> Result<(R::Out, Option<KeyedRefund>), KeyedAcquireError> {
        if !R::WRITES {
            return Ok((self.peek(key, request), None));
        }
        self.acquire_routed(
            &self.view(),
            key,
            Request::new(request.time(), request.units(), None),
            None,
            |region, slot, state, tenant| {
                let into = Cell::new(None);
                let keep = |refund| into.set(Some(refund));
                let out = (region.decider).swap_refundable(state, tenant, request, keep)?;
                let refund = into.get();
                let taken = |refund| KeyedRefund::new(region, Taken::InPlace { slot, refund });
                Ok((out, refund.map(taken)))
            },
            |region, decision, installed| {
                let taken =
                    |installed| KeyedRefund::new(region, Taken::Inserted { key, installed });
                (request.of_report(decision), installed.map(taken))
            },
        )
    }

    /// [`step`](Self::step) of a request that never writes.
    fn peek<R: state::Request>(&self, key: Located, request: R) -> R::Out {
        let view = self.view();
        let found = self.on_key(
            &view,
            key,
            |_| Ok::<(), SharedError>(()),
            |region, _, state, tenant| region.decider.swap(state, tenant, request),
        );
        let fresh = |region: &Region| {
            region.with_fresh_state(|fresh| owned(region.decider.swap(fresh, &Owned, request)))
        };
        match found {
            Ok(Ok(out)) => out,
            Ok(Err(region)) => fresh(region),
            Err(_) => fresh(view.current()),
        }
    }

    /// Gives back an admission for a key, taken from this table, if nothing moved its
    /// state on since (module docs); else the units stay taken, as a limiter's do.
    ///
    /// A region that is neither the one in force nor the one a sweep still moves keys
    /// from had every slot moved: the units stay, carried over, as a give-back there
    /// would find the marker.
    ///
    /// Says whether the units were given back. A slot out of the region's range (a
    /// refund rebuilt from a caller's words, `KeyedRefund::from_words`) gives nothing.
    pub(crate) fn refund(&self, refund: KeyedRefund) -> bool {
        let view = self.view();
        let current = view.current();
        let region = if current.serial == refund.region {
            current
        } else if current.is_sweeping() {
            // SAFETY: read through `view`, which found it swept into.
            let old = unsafe { view.predecessor(current) };
            if old.serial != refund.region {
                return false;
            }
            old
        } else {
            return false;
        };
        match refund.taken {
            Taken::InPlace { slot, .. } if !region.holds_slot(slot) => false,
            Taken::Inserted { key, installed }
                if !region.holds_slot(key.home) || !region.holds_slot(installed.slot) =>
            {
                false
            }
            // A moved slot holds its marker, which the refund's CAS never expects: the
            // units stay, carried over (`change.rs`).
            Taken::InPlace { slot, refund } => refund.apply(region.state(slot)),
            // Without a claim (a shared table's registry stays busy) the units stay, and
            // `retire` leaves a moved slot as it is.
            Taken::Inserted { key, installed } => {
                let Some(claimant) = region.claimant(key.home) else {
                    return false;
                };
                let retired = region.retire(claimant, key, installed.slot, Some(installed.first));
                region.release(claimant);
                retired
            }
        }
    }
}
