//! The lock-free half of the protocol: find the slot holding a key, and update its state
//! there without a lock.
//!
//! Invariants this half relies on (the insert half, `insert.rs`, keeps them):
//! - A slot's fingerprint word changes only while its first word is claimed (`installing`), and only
//!   the thread that claimed the slot changes it.
//! - A key is installed by storing its first word (Release) after its fingerprint and
//!   other state words, so an Acquire load of a state sees the key it belongs to.
//! - A slot's first word only grows across tenancies, so a value it held once under one
//!   key never comes back under another.
//! - `max_distance` only grows, and bounds how far from home any key was ever installed.

use super::layout::Located;
use super::markers::{is_installing, is_marker, VACANT};
use super::region::Region;
use crate::state::Tenancy;
use crate::sync::{AtomicU64, Ordering};

/// The state in a slot turned out not to be (or to be no longer) the caller's key's.
#[derive(Debug)]
pub(super) struct Evicted;

/// A key's claim on a slot: its state is the key's while the slot's first word is a state
/// and the slot's fingerprint is the key's.
///
/// **Update.** An update of the key reads the first word (Acquire, pairing with the
/// Release store that installed the slot's key), then the fingerprint (Acquire, pairing
/// with the Release store of a later tenant's fingerprint, which follows that tenant's
/// claim), then the first word again: equal reads and the key's fingerprint make a
/// consistent snapshot, as in a seqlock ([`check`](Tenancy::check)). It decides on that
/// snapshot, and CASes the first word if the decision changes it. Denials and queries
/// never write, so the snapshot alone makes them exact; a CAS that succeeds lands in the
/// same tenancy, because the first word only grows. A marker, another fingerprint or a
/// changed word means: look the key up again (see [`Region::on_existing`]).
pub(super) struct Tenant<'a> {
    fingerprint: &'a AtomicU64,
    first_word: &'a AtomicU64,
    expected: u64,
}

impl Tenancy for Tenant<'_> {
    type Evicted = Evicted;
    /// Acquire: pairs with the Release store that installed the slot's current key, so the
    /// fingerprint read in `check` is that key's, or a later tenant's.
    const LOAD: Ordering = Ordering::Acquire;

    /// Accepts `first_word` only as part of a consistent snapshot with the fingerprint,
    /// like a seqlock reader: the fingerprint is read between two reads of the first word.
    /// A later tenant's fingerprint is stored (Release) after its claim CASed the first
    /// word away from every value of earlier tenancies, so reading it (Acquire) means the
    /// second read cannot return `first_word` again; equal reads mean the fingerprint is
    /// that of `first_word`'s tenancy. A denial or query decides on this snapshot without
    /// writing, so it must be exact.
    #[inline]
    fn check(&self, first_word: u64) -> Result<(), Evicted> {
        if is_marker(first_word)
            || self.fingerprint.load(Ordering::Acquire) != self.expected
            // Relaxed: ordered after the Acquire load above, which is all it needs.
            || self.first_word.load(Ordering::Relaxed) != first_word
        {
            Err(Evicted)
        } else {
            Ok(())
        }
    }
}

impl Region {
    #[inline]
    fn tenant(&self, slot: usize, fingerprint: u64) -> Tenant<'_> {
        Tenant {
            fingerprint: self.fingerprint_word(slot),
            first_word: self.first_word(slot),
            expected: fingerprint,
        }
    }

    /// The slot holding `key`, probing `bound` slots past its home.
    ///
    /// **Lookup.** The probe runs from the key's home slot up to `max_distance` (the
    /// caller's `bound`), the largest distance from home at which any key was ever
    /// installed. A slot matches when its fingerprint is the key's and its first word is a
    /// state; one that is claimed (`installing`) under the key's fingerprint may be handed back to
    /// the key (a reclaim of the key's own fresh slot that backs out), so the lookup waits
    /// for it to settle. Nothing relies on a `VACANT` slot ending the probe. A slot moved
    /// into a next region (settled: `settled` returns its marker) matches under its key's
    /// fingerprint: the caller's operation fails on it, and looks in the next region.
    // Always inlined: it is the whole lookup of a key already in the table, on every
    // acquire's path, and as a call it made keyed acquires measurably slower (the
    // `keyed/1000_*` groups of benches/keyed.rs).
    #[inline(always)]
    pub(super) fn find(&self, key: Located, bound: u64) -> Option<usize> {
        for distance in self.distances(bound) {
            let slot = self.probe(key.home, distance);
            // Relaxed: a filter; the update re-checks the fingerprint after its Acquire load.
            if self.fingerprint_word(slot).load(Ordering::Relaxed) != key.fingerprint {
                continue;
            }
            // Acquire: pairs with the Release store that installed the slot's key.
            let mut first = self.first_word(slot).load(Ordering::Acquire);
            if is_installing(first) {
                // A reclaim of this key's own (fresh) slot is in flight: it may back out.
                // A wait that gives up (a shared table's claim of a live process that does
                // not end) leaves the key looking absent; an insert of it then finds the
                // same slot in flight and reports the table full.
                match self.settled(slot) {
                    Some(settled) => first = settled,
                    None => continue,
                }
                if self.fingerprint_word(slot).load(Ordering::Relaxed) != key.fingerprint {
                    continue;
                }
            }
            if first != VACANT {
                return Some(slot);
            }
        }
        None
    }

    /// Runs `op` on the key's state if the key is in this region, looking the key up
    /// again whenever its slot is repurposed under it (`op` returns [`Evicted`]: see
    /// [`Tenant`]): [`Lookup::Moved`] if the slot was moved into a next region.
    #[inline]
    pub(super) fn on_existing<R>(
        &self,
        key: Located,
        known_bound: u64,
        op: impl Fn(&Region, &[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
    ) -> Lookup<R> {
        self.on_existing_slot(key, known_bound, |region, _, state, tenant| {
            op(region, state, tenant)
        })
    }

    /// [`on_existing`](Self::on_existing), telling `op` the slot it runs on.
    #[inline(always)]
    pub(super) fn on_existing_slot<R>(
        &self,
        key: Located,
        known_bound: u64,
        op: impl Fn(&Region, usize, &[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
    ) -> Lookup<R> {
        loop {
            // Relaxed: a stale bound only makes a present key look absent, and the insert
            // that follows then finds it through its AcqRel fetch_max (a lookup during a
            // change then looks in the region before: `regions.rs`).
            let bound = known_bound.max(self.max_distance().load(Ordering::Relaxed));
            let Some(slot) = self.find(key, bound) else {
                return Lookup::Absent;
            };
            let tenant = self.tenant(slot, key.fingerprint);
            match op(self, slot, self.state(slot), &tenant) {
                Ok(result) => return Lookup::Found(result),
                Err(Evicted) if self.is_moved(slot) => return Lookup::Moved,
                Err(Evicted) => {}
            }
        }
    }
}

/// Where a lookup of a key in one region ended.
pub(super) enum Lookup<R> {
    /// The key's state was there, and this is what the operation on it returned.
    Found(R),
    /// The key is not in the region.
    Absent,
    /// The key's slot was moved into a next region (`change.rs`): look again there.
    Moved,
}
