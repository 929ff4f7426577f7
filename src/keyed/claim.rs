//! Claiming a slot for a new key: a `VACANT` one near home, else the first claimable one
//! (`VACANT`, or holding a fresh state, which is reclaimed); then the scans around a
//! claim: that no other slot holds or is getting the key, and that a table is truly full.
//!
//! Invariants kept here, each argued at its function:
//! - A slot is claimed by one CAS of its first word to an `installing` marker, and only the
//!   claimer writes the slot until it installs or backs out ([`Region::claim`]), or
//!   in a shared table, once the claimer's process died, a recovery (`recover.rs`).
//! - The rival scan resolves every other slot of the key's probe range, which makes
//!   **No duplicates** hold ([`Region::rival`]; the ordering it needs is argued at
//!   `insert`).
//! - `TableFull` only when every slot held a live key of another key
//!   ([`Region::confirm_full`]).

use super::layout::Located;
use super::markers::{is_installing, is_marker, VACANT};
use super::recover::Claimant;
use super::region::Region;
use crate::decision::Decision;
use crate::shared::owner::crash_point;
use crate::sync::Ordering;

/// How far from home an insert looks for a `VACANT` slot before it reclaims a fresh one,
/// at least: keys sharing a home would otherwise take the home slot from each other in
/// turn, each insert evicting the other key (see `claim`). Lookups of absent keys probe
/// this far once an insert has used it. At the table's load of ½ (`SLOTS_PER_KEY`), runs
/// of occupied slots longer than 8 are common enough in a table of a thousand keys that a
/// handful of keys that go fresh between requests kept evicting each other for good; runs
/// past 16 are rare.
const VACANT_REACH: u64 = 15;

/// What one insert attempt did.
pub(super) enum Insert {
    /// The key's state is now in the table, after this decision, installed by this insert
    /// where `Installed` says (`None`: the request changed nothing and needs no slot).
    Done(Decision, Option<Installed>),
    /// Another thread holds or is installing the key, or claimed a slot first: look again.
    Retry,
    /// Every slot held a live key of another key.
    Full,
    /// This slot is in flight: wait for it, holding nothing (see `settled`), and look
    /// again.
    Wait(usize),
    /// A slot of the key's probe range was moved into a next region (`change.rs`): look
    /// again there.
    Moved,
}

/// Where an insert installed its key, and the first word it installed: what giving its
/// units back needs (`give_back.rs`).
#[derive(Clone, Copy)]
pub(super) struct Installed {
    pub(super) slot: usize,
    pub(super) first: u64,
}

/// What stands in the way of an insert (see `KeyedLimiter::rival`).
pub(super) enum Rival {
    /// A slot holds the key.
    Holds,
    /// A slot was moved into a next region, which may hold the key.
    Moved,
    /// This slot is in flight, and may be installing the key.
    InFlight(usize),
}

impl Region {
    /// Claims a slot for a new key by CASing its first word to the claimant's marker, and returns
    /// the slot, its distance and the value it replaced: a `VACANT` slot within the lookup
    /// bound or [`VACANT_REACH`] if there is one, else the first claimable slot from home
    /// (`VACANT`, or fresh at `now_ns`). Else `Retry` if the key itself turned up (with
    /// `max_distance` raised to its distance, should it say less) or a slot was in flight
    /// (after waiting for it: it may free up, or be the key), and `Full` if every slot
    /// held a live key.
    ///
    /// Either choice is correct (the caller's rival check does not depend on it), but
    /// reclaiming a fresh slot evicts its key, whose next request must then be inserted
    /// again and may evict another: with keys that go fresh between requests, preferring
    /// fresh slots nearer home would keep the table churning while vacant slots sit unused.
    ///
    /// **Reclaim.** A slot is *claimable* if it is `VACANT` or its state is fresh at the
    /// claimer's `now`. The second pass claims the first claimable slot from home by
    /// CASing its first word from the value it judged to claimed (`installing`), searching the whole
    /// table, so up to `2 × capacity` live keys fit. What the claim of a fresh slot means
    /// for its old key is argued at [`install`](Self::install).
    pub(super) fn claim(
        &self,
        key: Located,
        now_ns: u64,
        claimant: Claimant,
    ) -> Result<(usize, usize, u64), Insert> {
        // Relaxed: any bound is correct here; this pass only prefers some slots to others.
        let bound = self.max_distance().load(Ordering::Relaxed);
        for distance in self.distances(bound.max(VACANT_REACH)) {
            let slot = self.probe(key.home, distance);
            // Relaxed: a filter; the CAS is the claim. AcqRel on success, as below.
            if self.first_word(slot).load(Ordering::Relaxed) == VACANT {
                self.announce(claimant, slot, VACANT);
                if self
                    .first_word(slot)
                    .compare_exchange(VACANT, claimant.marker, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    crash_point();
                    return Ok((slot, distance, VACANT));
                }
            }
        }
        let mut in_flight = None;
        for distance in 0..self.layout.slot_count {
            let slot = self.probe(key.home, distance);
            // Acquire: pairs with the store that installed this value, so `is_fresh` and
            // the fingerprint read below see the rest of the same state.
            let mut first = self.first_word(slot).load(Ordering::Acquire);
            loop {
                if self.moved(first) {
                    return Err(Insert::Moved);
                }
                if is_installing(first) {
                    in_flight.get_or_insert(slot);
                    break;
                }
                if first != VACANT && !self.decider.is_fresh_on(self.state(slot), first, now_ns) {
                    // Relaxed: ordered after the Acquire load of `first`.
                    if self.fingerprint_word(slot).load(Ordering::Relaxed) == key.fingerprint {
                        // The bound only grows, but a shared file's bytes may have been
                        // overwritten with less: lookups bound by it would miss the key,
                        // and its inserts find it here, for ever. Restored, the lookup
                        // that follows (and every later one) reaches it. Relaxed: this
                        // thread's next load sees its own RMW; another's sees it, or
                        // finds the key here as this one did.
                        self.max_distance()
                            .fetch_max(distance as u64, Ordering::Relaxed);
                        return Err(Insert::Retry);
                    }
                    break;
                }
                // Acquire on success: so a back-out's Release store of `first` passes on
                // the slot's fingerprint and state words to whoever reads it next; Release
                // (a shared table's) so a recovery that reads the marker reads the claim's
                // announcement. A failure re-examines the new value.
                self.announce(claimant, slot, first);
                match self.first_word(slot).compare_exchange(
                    first,
                    claimant.marker,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        crash_point();
                        return Ok((slot, distance, first));
                    }
                    Err(actual) => first = actual,
                }
            }
        }
        match in_flight {
            Some(slot) => Err(Insert::Wait(slot)),
            None => Err(Insert::Full),
        }
    }

    /// Looks over the key's probe range, after this thread's AcqRel RMW on `max_distance`,
    /// for a rival to an insert of the key: a slot holding the key, or a slot in flight
    /// (which may be installing it). A slot in flight above `claimed` (this insert's own
    /// slot, skipped) is waited for and looked at again: the insert there backs out or
    /// completes. Any other rival is returned; the caller backs out of its claim, if it has
    /// one, then waits for a slot in flight, and starts over.
    ///
    /// **No duplicates**, continued (see [`insert`](Self::insert)). The scan resolves every
    /// other slot: a complete slot of the key means back out and use it; an claimed (`installing`)
    /// slot (whose key cannot be known yet) at a lower index means back out, wait for it,
    /// and start over; one at a higher index means wait for it and look again. An insert
    /// waits only for slots of higher index, so waits form no cycle, and of two claims of
    /// one key at most one completes.
    ///
    /// **Moved.** A slot of the range moved into a next region (a change of rule in
    /// flight, `change.rs`) may have taken the key there: the insert gives up and looks
    /// again in the table's current region. A slot moved after this scan read it was
    /// swapped after this insert's claim, which the change then waits out and moves too.
    pub(super) fn rival(&self, key: Located, bound: u64, claimed: Option<usize>) -> Option<Rival> {
        for distance in self.distances(bound) {
            let slot = self.probe(key.home, distance);
            if Some(slot) == claimed {
                continue;
            }
            // Acquire: pairs with the store that installed the slot's key (fingerprint
            // below); a claim ordered before ours is visible through `max_distance`.
            let mut first = self.first_word(slot).load(Ordering::Acquire);
            if is_installing(first) && !self.moved(first) {
                if !claimed.is_some_and(|claimed| slot > claimed) {
                    return Some(Rival::InFlight(slot));
                }
                match self.settled_soon(slot) {
                    Some(settled) => first = settled,
                    None => return Some(Rival::InFlight(slot)),
                }
            }
            if self.moved(first) {
                return Some(Rival::Moved);
            }
            // Relaxed: ordered after the Acquire load of `first`.
            if !is_marker(first)
                && self.fingerprint_word(slot).load(Ordering::Relaxed) == key.fingerprint
            {
                return Some(Rival::Holds);
            }
        }
        None
    }

    /// Confirms a claim scan that found every slot live: `Full` unless the key itself was
    /// installed meanwhile, or is being installed, by an insert whose claim this thread
    /// can see.
    ///
    /// **Full.** With no slot claimable, an insert that saw a slot in flight waits for it
    /// and looks again ([`claim`](Self::claim)). Only when every slot held a live key of
    /// another key does it report `TableFull`, after one more look over its probe range
    /// behind an RMW on `max_distance`: the RMW (which changes nothing) orders this check
    /// among the inserts' own (see [`insert`](Self::insert)), so an insert of the same key
    /// that completed before it, into a slot the scan had already passed, is found
    /// instead.
    pub(super) fn confirm_full(&self, key: Located, known_bound: &mut u64) -> Insert {
        // AcqRel: as in `insert`.
        *known_bound = self.max_distance().fetch_max(0, Ordering::AcqRel);
        match self.rival(key, *known_bound, None) {
            None => Insert::Full,
            Some(Rival::Holds) => Insert::Retry,
            Some(Rival::InFlight(slot)) => Insert::Wait(slot),
            Some(Rival::Moved) => Insert::Moved,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::config::Config;
    use crate::keyed::KeyedLimiter;
    use crate::sync::Ordering;
    use crate::time::Instant;
    use std::hash::{BuildHasher, Hasher};
    use std::time::Duration;

    /// Hashes an 8-byte key to itself, so a test picks each key's home slot.
    #[derive(Clone, Default)]
    struct Transparent(u64);

    impl Hasher for Transparent {
        fn write(&mut self, bytes: &[u8]) {
            let mut word = [0; 8];
            word[..bytes.len().min(8)].copy_from_slice(&bytes[..bytes.len().min(8)]);
            self.0 = u64::from_le_bytes(word);
        }
        fn finish(&self) -> u64 {
            self.0
        }
    }

    impl BuildHasher for Transparent {
        type Hasher = Self;
        fn build_hasher(&self) -> Self {
            Self::default()
        }
    }

    /// Keys that share a home slot and go fresh between requests do not take the home slot
    /// from each other while a vacant slot is within reach: each keeps its slot, and a
    /// request finds its key where it left it instead of inserting it again.
    #[test]
    fn a_new_key_takes_a_vacant_slot_before_evicting_a_fresh_key() {
        // Capacity 4: 8 slots. Fingerprints 1, 2 and 3 all have home slot 0.
        let table = KeyedLimiter::with_hasher(
            &Config::gcra(1, Duration::from_nanos(10)),
            4,
            Transparent(0),
        )
        .unwrap();
        let keys = [1u64, 2, 3].map(u64::to_le_bytes);
        for round in 0..4u64 {
            for (index, key) in keys.iter().enumerate() {
                // T = 10: every key is fresh again by its next request.
                let now = 100 * round + 20 * index as u64;
                assert!(
                    table
                        .acquire_at(key, 1, Instant::from_nanos(now))
                        .unwrap()
                        .allowed
                );
            }
        }
        let slots: Vec<u64> = (0..3)
            .map(|slot| {
                table
                    .view()
                    .current()
                    .fingerprint_word(slot)
                    .load(Ordering::Relaxed)
            })
            .collect();
        assert_eq!(
            slots,
            [1, 2, 3],
            "each key kept the slot it was first given"
        );
    }
}
