//! One read of the sliding log's ring ([`Ring`]), and the protocol by which admissions
//! claim positions in it and readers tell a written entry from a pending one.
//!
//! An admission ([`Claim`]) raises `latest` to `at` (a CAS from the value it read, so `at` is above
//! every timestamp logged before its claim), claims positions `[head, head + n)` by
//! swapping head, then writes each slot's timestamp and tag with `fetch_max`.
//! - **A slot is never claimed twice**: positions come from swaps of one word.
//! - **Writes cannot clobber**: a writer of position p − L that is still in flight when
//!   p is written could otherwise overwrite the newer entry; with `fetch_max` on both
//!   words (timestamps grow along positions, like tags) the newest entry always wins.
//! - **A reader never trusts a stale slot**: it uses a slot's timestamp only if the tag
//!   says it holds exactly the position needed. A claimed position whose tag is not yet
//!   written is *pending*: the reader spins briefly for it (the writer is normally a few
//!   instructions from done), then uses an upper bound on that timestamp instead: the
//!   newest entry's if that one is written (timestamps grow along positions), else
//!   `latest` (the pending writer raised it before claiming, and the reader loaded head
//!   first). A bound only makes entries look younger, so it can deny a request that an
//!   exact read would admit, never the reverse; and it can only change a decision if the
//!   needed entry is at least P older than the request, i.e. if its writer has been in
//!   flight (between reading its clock and writing its slot) for a whole period while
//!   others admitted after it. With no concurrent writer every decision is exact.
//! - A request is evaluated at the latest time *announced*: an admission raises `latest`
//!   before it claims, so a request racing it may be moved forward to that time even if
//!   the other's claim then fails and is retried (it is a time already seen). The log
//!   stays exact for the times it records; only which of two racing requests gets the
//!   last unit depends on the race.
//! - A denial or a query reads several words; it loads head again at the end and starts
//!   over if any unit was admitted meanwhile, so its fields describe one state of the log.
//!   An admission's fields are read just after its claim; units admitted concurrently
//!   after it can only lower its `remaining`.
//!
//! Orderings: head is swapped `Release` and loaded `Acquire`, so a reader sees `latest`
//! raised by every claim below the head it read. Tags and timestamps are written
//! `Release` and read `Acquire`: the tag publishes its timestamp, and a reader that sees a
//! timestamp of a later lap (its head is stale) also sees that lap's claim when it loads
//! head again, so the validation above catches it.

use super::{FLOOR, HEAD, LATEST, RING, SLOT_WORDS};
use crate::algorithm::{Claim, LogRead, Rule, SlidingLog, MAX_STATE};
use crate::state::cell::Tenancy;
use crate::sync::{spin_wait, AtomicU64, Ordering};

/// How many times a reader checks a pending slot before falling back to a bound. A
/// writer finishes a slot a few instructions after its claim; under loom one yield
/// lets the model explore both the wait and the fallback.
const PENDING_CHECKS: u32 = if cfg!(loom) { 2 } else { 128 };

/// One read of the log: head, latest and floor, by a caller whose claim on the state is
/// `tenancy`. Slots are read on demand, through [`LogRead`].
pub(super) struct Ring<'a, T> {
    log: &'a SlidingLog,
    state: &'a [AtomicU64],
    tenancy: &'a T,
    pub(super) head: u64,
    pub(super) latest: u64,
    pub(super) floor: u64,
}

impl<'a, T: Tenancy> Ring<'a, T> {
    /// Reads the log, if head (the first word) shows it is still the caller's state.
    #[inline(always)]
    pub(super) fn load(
        log: &'a SlidingLog,
        state: &'a [AtomicU64],
        tenancy: &'a T,
    ) -> Result<Self, T::Evicted> {
        // Acquire: pairs with the Release head swap of every claim below this head, so
        // `latest` below is at least each of their timestamps. (Also at least the
        // tenancy's `T::LOAD`, which is never stronger than Acquire.)
        let head = state[HEAD].load(Ordering::Acquire);
        tenancy.check(head)?;
        let latest = state[LATEST].load(Ordering::Relaxed);
        // Relaxed: publishes nothing; `unchanged` and the claim's head CAS revalidate it
        // (module docs, "Reset").
        let floor = state[FLOOR].load(Ordering::Relaxed);
        Ok(Self {
            log,
            state,
            tenancy,
            head,
            latest,
            floor,
        })
    }

    /// Claims `[head, head + n)` and logs them at `claim.at`; `Ok(false)` if another
    /// admission came first. Each CAS is preceded by a tenancy check of head, so nothing is
    /// written once the state is no longer the caller's.
    pub(super) fn claim(&self, claim: Claim, n: u64) -> Result<bool, T::Evicted> {
        let state = self.state;
        if claim.at > self.latest {
            self.tenancy.check(self.head)?;
            // Relaxed: the Release head swap below publishes it. A CAS from the value
            // read, not a fetch_max: if it moved, `at` may be stale, so start over.
            if state[LATEST]
                .compare_exchange(self.latest, claim.at, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                return Ok(false);
            }
        }
        self.tenancy.check(self.head)?;
        // Release: publishes `latest` (above) to readers that see this head. A head this
        // library wrote cannot overflow (the log's "Reserved values and bounds"); one
        // another process wrote may be anywhere, and is never claimed past MAX_STATE.
        let Some(new_head) = self.head.checked_add(n).filter(|&head| head <= MAX_STATE) else {
            return Ok(false);
        };
        if state[HEAD]
            .compare_exchange(self.head, new_head, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            return Ok(false);
        }
        for position in self.head..new_head {
            let slot = self.slot(position);
            // Release: a reader that sees this timestamp also sees the claim above when
            // it loads head again; one that sees the tag also sees the timestamp.
            state[slot].fetch_max(claim.at, Ordering::Release);
            state[slot + 1].fetch_max(position + 1, Ordering::Release);
        }
        Ok(true)
    }

    /// The timestamp at `position` if its slot holds exactly that entry, checking a
    /// pending slot `checks` times.
    #[inline(always)]
    pub(super) fn exact_within(&self, position: u64, checks: u32) -> Option<u64> {
        let slot = self.slot(position);
        let tag = position + 1;
        for _ in 0..checks {
            // Acquire: pairs with the writer's Release tag write; publishes the timestamp.
            match self.state[slot + 1].load(Ordering::Acquire) {
                written if written == tag => {
                    // Acquire: pairs with a later lap's Release timestamp write, so
                    // `unchanged` sees that lap's claim if this read sees its timestamp.
                    return Some(self.state[slot].load(Ordering::Acquire));
                }
                written if written > tag => return None,
                _ => spin_wait(),
            }
        }
        None
    }

    /// Whether head and floor are still what this read started from: no unit was
    /// admitted and no reset finished since, so every slot read belongs to the same state
    /// of the log.
    pub(super) fn unchanged(&self) -> bool {
        // Relaxed, both: ordered after the Acquire slot reads (module docs, "Orderings").
        self.state[HEAD].load(Ordering::Relaxed) == self.head
            && self.state[FLOOR].load(Ordering::Relaxed) == self.floor
    }

    /// Slot `position mod L`'s first word.
    #[inline(always)]
    fn slot(&self, position: u64) -> usize {
        // The remainder is below L ≤ 2²⁰.
        RING + SLOT_WORDS * (position % self.log.limit()) as usize
    }
}

impl<T: Tenancy> LogRead for Ring<'_, T> {
    #[inline(always)]
    fn head(&self) -> u64 {
        self.head
    }

    #[inline(always)]
    fn latest(&self) -> u64 {
        self.latest
    }

    #[inline(always)]
    fn floor(&self) -> u64 {
        self.floor
    }

    /// The timestamp at `position` after waiting a moment for a pending write, or an upper
    /// bound on it if its slot is still pending or already holds a later lap: the newest
    /// entry's timestamp if that one is written, else `latest` (module docs). The common
    /// case, a written entry, is inline; a pending one waits out of line.
    #[inline(always)]
    fn logged(&self, position: u64) -> u64 {
        match self.written(position) {
            Some(ts) => ts,
            None => self.bounded(position),
        }
    }

    #[inline(always)]
    fn written(&self, position: u64) -> Option<u64> {
        self.exact_within(position, 1)
    }
}

impl<T: Tenancy> Ring<'_, T> {
    /// [`LogRead::logged`] for a slot not written at first sight.
    #[inline(never)]
    fn bounded(&self, position: u64) -> u64 {
        // One check was made at first sight.
        self.exact_within(position, PENDING_CHECKS - 1)
            .unwrap_or_else(|| {
                let newest = self.head - 1;
                let bound = (newest != position)
                    .then(|| self.exact_within(newest, PENDING_CHECKS))
                    .flatten();
                bound.unwrap_or(self.latest)
            })
    }
}
