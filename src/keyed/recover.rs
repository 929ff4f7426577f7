//! A shared table's claims, and what happens to a claim whose process died (docs/shared.md).
//!
//! In a private table an insert's claim cannot outlive it: threads do not die alone. In a
//! shared table a process can be killed between its claim of a slot and its install, and
//! the slot would stay claimed for good, its probe range blocked. So each claim is
//! registered in the file first, and a waiter that finds a slot claimed for longer than a
//! live insert ever takes puts it back when the claimer's process is gone.
//!
//! # The registry
//! [`CLAIMS`] entries of one line each: `[owner, slot, replaced, fingerprint, …]`. An insert
//! takes a free entry (`owner` 0 → its process's token) before it claims anything, writes
//! the slot it is about to claim, the first word it expects there and the slot's
//! fingerprint, then claims the slot by a CAS to `installing(entry)` (Release, so whoever
//! reads the marker reads those fields). It frees the entry once the slot is settled.
//!
//! # Recovery
//! A waiter on a slot marked `installing(e)` that has waited [`PATIENCE`] looks at entry e:
//! - e is no entry of this table: the marker is bytes some process wrote, never a claim;
//!   the slot becomes `VACANT`.
//! - e's owner is alive: it waits on (the insert is slow, not gone), for at most
//!   [`GIVE_UP`]; a waiter that holds a claim itself gives its claim and entry up first
//!   (see `settled`), so no two waiters wait on each other.
//! - e is free, or its owner is dead: it takes e over (a CAS of `owner`), so no live insert
//!   can use the marker `installing(e)` while it decides; if the slot still holds that
//!   marker, it restores what the dead claim replaced (fingerprint and first word, when
//!   the entry names this slot; else, the marker not being a claim it can explain,
//!   `VACANT`), then frees e. A process that dies holding an entry but no claimed slot
//!   leaves an entry that the next insert to find none free takes over.
//!
//! The restored slot is what a back-out leaves (`insert.rs`): the old key's fingerprint
//! and first word, so a writer of the old key in flight finds its state as it was. The
//! dead install may have written other state words first; all of those only ever grow,
//! and what it wrote is what a fresh key's first decision writes on a state already fresh
//! at its time (a closed window's record of the old current window, or log entries at
//! positions past the old head with `latest` raised to its time), which can only make
//! later decisions stricter, never admit more. An entry never names a slot but through
//! fields written before its claim, and the claimer alone writes a slot it claimed, so a
//! recovery never undoes a live claim.

use super::layout::LINE_WORDS;
use super::markers::{claim_of, installing, is_marker, CLAIM_MARKERS, VACANT};
use super::region::Region;
use crate::shared::owner::{crash_point, is_alive, token};
use crate::sync::{Backoff, Ordering};

/// Entries in a shared table's claim registry: how many inserts can be in flight in it at
/// once (more wait for an entry). Under loom, as many as a model's threads and more: each
/// entry is words a model's every scan reads.
pub(super) const CLAIMS: usize = if cfg!(loom) { 4 } else { 64 };
const _: () = assert!(CLAIMS as u64 <= CLAIM_MARKERS && FINGERPRINT < LINE_WORDS);

/// Entry words.
const OWNER: usize = 0;
const SLOT: usize = 1;
const REPLACED: usize = 2;
const FINGERPRINT: usize = 3;

/// How long a waiter waits on a claimed slot before it asks whether the claimer lives: far
/// longer than an insert takes, short enough that nobody notices a dead one.
#[cfg(not(any(loom, fuzzing)))]
const PATIENCE: std::time::Duration = std::time::Duration::from_millis(10);

/// How long a waiter without a claim of its own waits on a slot whose claimer lives before
/// it stops waiting (the call then reports the table full): a claimer stopped mid-insert
/// (SIGSTOP, a debugger), or bytes a writer forged to name a live process, must not hang
/// every process that needs the slot.
#[cfg(not(any(loom, fuzzing)))]
const GIVE_UP: std::time::Duration = std::time::Duration::from_secs(1);

/// The fuzz build's waits (`scripts/fuzz.sh`), a thousandth of the real ones: its
/// inputs forge claimed slots by the thousand, each a wait, and one thread runs every
/// insert, so no claim it waits on is ever in progress. The waits run the same code.
#[cfg(all(fuzzing, not(loom)))]
const PATIENCE: std::time::Duration = std::time::Duration::from_micros(10);
#[cfg(all(fuzzing, not(loom)))]
const GIVE_UP: std::time::Duration = std::time::Duration::from_millis(1);

/// An insert's right to claim slots: the marker its claim writes, and its registry entry
/// in a shared table.
#[derive(Clone, Copy)]
pub(super) struct Claimant {
    pub(super) marker: u64,
    entry: Option<usize>,
}

/// How long a wait on a claimed slot has lasted, as [`Patience::wait`] reports it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Waited {
    /// Keep waiting.
    Briefly,
    /// [`PATIENCE`] more has passed: ask whether the claimer lives.
    Long,
    /// [`GIVE_UP`] has passed: stop waiting. (Never under loom, which has no time.)
    #[cfg(not(loom))]
    TooLong,
}

/// How long a waiter has waited on one slot.
pub(super) struct Patience {
    #[cfg(not(loom))]
    started: Option<std::time::Instant>,
    #[cfg(not(loom))]
    asked: Option<std::time::Instant>,
    waits: u32,
}

impl Patience {
    pub(super) fn new() -> Self {
        Self {
            #[cfg(not(loom))]
            started: None,
            #[cfg(not(loom))]
            asked: None,
            waits: 0,
        }
    }

    /// Counts one wait and says how long the waits have lasted. Under loom every wait
    /// after the first is `Long` (so the model tries a recovery against every step of the
    /// claimer) and none `TooLong` (loom has no time).
    pub(super) fn wait(&mut self) -> Waited {
        self.waits = self.waits.saturating_add(1);
        #[cfg(loom)]
        return if self.waits > 1 {
            Waited::Long
        } else {
            Waited::Briefly
        };
        #[cfg(not(loom))]
        {
            // The clock is read only once a wait has lasted more than a few yields.
            if self.waits < 64 {
                return Waited::Briefly;
            }
            let now = std::time::Instant::now();
            let started = *self.started.get_or_insert(now);
            let asked = *self.asked.get_or_insert(now);
            if now.duration_since(started) >= GIVE_UP {
                Waited::TooLong
            } else if now.duration_since(asked) >= PATIENCE {
                self.asked = Some(now);
                Waited::Long
            } else {
                Waited::Briefly
            }
        }
    }
}

impl Region {
    /// The right to claim for one insert: a registry entry of a shared table (waiting for
    /// one if all are taken), nothing in a private one. The search starts at entry
    /// `start` (the key's home), so concurrent inserts of different keys spread over the
    /// registry and no entry is held nearly all the time, which would keep a waiter on a
    /// forged marker naming it from ever finding it free.
    ///
    /// `None` once every entry has been held by live processes for [`GIVE_UP`] (as many
    /// inserts stopped mid-way, or bytes forged to name live processes): the insert then
    /// reports the table full rather than wait on.
    pub(super) fn claimant(&self, start: usize) -> Option<Claimant> {
        if self.layout.claims == 0 {
            return Some(Claimant {
                marker: installing(0),
                entry: None,
            });
        }
        let me = token();
        let mut backoff = Backoff::default();
        #[cfg(not(loom))]
        let mut patience = Patience::new();
        loop {
            for offset in 0..self.layout.claims {
                let entry = (start + offset) % self.layout.claims;
                let owner = &self.registry_entry(entry)[OWNER];
                // Relaxed: a filter; the CAS decides.
                let held = owner.load(Ordering::Relaxed);
                if held != 0 && is_alive(held) {
                    continue;
                }
                // Acquire: pairs with the Release store that freed the entry (or with the
                // dead owner's claim CAS, through the slot: see `restore`).
                if owner
                    .compare_exchange(held, me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    if held != 0 {
                        self.restore_named(entry);
                    }
                    return Some(Claimant {
                        marker: installing(entry as u64),
                        entry: Some(entry),
                    });
                }
            }
            #[cfg(not(loom))]
            if patience.wait() == Waited::TooLong {
                return None;
            }
            backoff.snooze();
        }
    }

    /// Gives the entry back once the insert's slot is settled.
    pub(super) fn release(&self, claimant: Claimant) {
        crash_point();
        if let Some(entry) = claimant.entry {
            // Release: the slot's settling happened before; the next owner of the entry
            // needs nothing else from this one.
            self.registry_entry(entry)[OWNER].store(0, Ordering::Release);
        }
    }

    /// Records, before the CAS that may claim `slot` from `expected`, what a recovery
    /// would put back: the value and the slot's fingerprint, which cannot change while
    /// the slot holds `expected` (only a claimer changes a fingerprint).
    pub(super) fn announce(&self, claimant: Claimant, slot: usize, expected: u64) {
        if let Some(entry) = claimant.entry {
            let fields = self.registry_entry(entry);
            // Relaxed, all three: published by the claim's Release CAS.
            fields[SLOT].store(slot as u64, Ordering::Relaxed);
            fields[REPLACED].store(expected, Ordering::Relaxed);
            let fingerprint = self.fingerprint_word(slot).load(Ordering::Relaxed);
            fields[FINGERPRINT].store(fingerprint, Ordering::Relaxed);
        }
    }

    /// Called by a waiter whose [`Patience`] ran out on `slot`, found holding `marker`:
    /// puts the slot back if the claim that marked it is dead or was never made.
    pub(super) fn recover(&self, slot: usize, marker: u64) {
        let claim = claim_of(marker);
        if claim >= self.layout.claims as u64 {
            // No claim of this table writes that marker. Release: as a back-out's.
            let _ = self.first_word(slot).compare_exchange(
                marker,
                VACANT,
                Ordering::Release,
                Ordering::Relaxed,
            );
            return;
        }
        let entry = claim as usize;
        let owner = &self.registry_entry(entry)[OWNER];
        // Relaxed: a filter; the CAS below decides.
        let held = owner.load(Ordering::Relaxed);
        if held != 0 && is_alive(held) {
            return;
        }
        // Acquire: as in `claimant`.
        if owner
            .compare_exchange(held, token(), Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        crash_point();
        if held == 0 {
            // A free entry: whoever last held it settled its slot before freeing it, so
            // the marker was written by no claim still in flight.
            let _ = self.first_word(slot).compare_exchange(
                marker,
                VACANT,
                Ordering::Release,
                Ordering::Relaxed,
            );
        } else {
            self.restore_named(entry);
        }
        crash_point();
        // Release: as in `release`.
        owner.store(0, Ordering::Release);
    }

    /// With `entry` held by this process, taken from a dead one: puts back the slot its
    /// last claim left claimed, if it did.
    fn restore_named(&self, entry: usize) {
        let fields = self.registry_entry(entry);
        // Relaxed: which slot to look at; the Acquire load of its marker below orders
        // the rest.
        let slot = fields[SLOT].load(Ordering::Relaxed);
        let Some(slot) = usize::try_from(slot)
            .ok()
            .filter(|&slot| slot < self.layout.slot_count)
        else {
            return;
        };
        let marker = installing(entry as u64);
        // Acquire: pairs with the dead claim's Release CAS, so the fields read below are
        // the ones it announced.
        if self.first_word(slot).load(Ordering::Acquire) != marker {
            return;
        }
        // Relaxed: as above.
        let replaced = fields[REPLACED].load(Ordering::Relaxed);
        let fingerprint = fields[FINGERPRINT].load(Ordering::Relaxed);
        let restored = if is_marker(replaced) {
            VACANT
        } else {
            // Release: as an install's, for `Tenant::check`.
            self.fingerprint_word(slot)
                .store(fingerprint, Ordering::Release);
            crash_point();
            replaced
        };
        // Release: publishes the restored fingerprint with the first word, as a back-out
        // does.
        let _ = self.first_word(slot).compare_exchange(
            marker,
            restored,
            Ordering::Release,
            Ordering::Relaxed,
        );
    }

    /// Waits until `slot` is not claimed, and returns its first word then (Acquire: pairs
    /// with the store that settled it, so the slot's fingerprint may be read next): a
    /// state, `VACANT`, or the final marker of a slot moved into a next region.
    ///
    /// In a shared table a claim whose process died is put back (see the module docs),
    /// and a wait that lasts [`GIVE_UP`] ends with `None`. The caller holds no claim and
    /// no registry entry (one that does waits with [`settled_soon`](Self::settled_soon)),
    /// so no wait here is part of a cycle: the owner of a marker found here finishes and
    /// frees its entry, and this waiter then takes the entry over and clears the marker if
    /// it was not that owner's claim.
    pub(super) fn settled(&self, slot: usize) -> Option<u64> {
        self.wait_on(slot, false)
    }

    /// [`settled`](Self::settled) for a caller that holds a claim: in a shared table it
    /// stops waiting (`None`) once [`PATIENCE`] has passed, so that the caller gives its
    /// claim and entry up before it waits on.
    pub(super) fn settled_soon(&self, slot: usize) -> Option<u64> {
        self.wait_on(slot, true)
    }

    fn wait_on(&self, slot: usize, holding: bool) -> Option<u64> {
        let mut backoff = Backoff::default();
        let mut patience = Patience::new();
        loop {
            let first = self.first_word(slot).load(Ordering::Acquire);
            if !super::markers::is_installing(first) || self.moved(first) {
                return Some(first);
            }
            if self.layout.claims > 0 {
                match patience.wait() {
                    Waited::Briefly => {}
                    Waited::Long if holding => return None,
                    Waited::Long => self.recover(slot, first),
                    #[cfg(not(loom))]
                    Waited::TooLong => return None,
                }
            }
            backoff.snooze();
        }
    }
}
