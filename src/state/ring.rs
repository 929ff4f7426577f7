//! The sliding log's ring of timestamps in words, and the protocol by which admissions
//! claim positions in it and readers tell a written entry from a pending one.
//!
//! # Words
//! - `state[0]`, **head**: the next position, i.e. the units ever admitted.
//! - `state[1]`, **latest**: the largest timestamp logged (or about to be).
//! - `state[2 + 2i]`, `state[3 + 2i]`: slot i's **timestamp** and **tag**, the tag being
//!   `position + 1` of the entry the timestamp belongs to (0: never written). Position p
//!   lives in slot `p mod L`.
//!
//! # Concurrency
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
//!
//! Every word only ever grows. A reset must zero all words of the state together (a head
//! of 0 with tags of a former life would make every entry look overwritten).

use super::cell::Tenancy;
use super::{Refund, Stored};
use crate::algorithm::{Algorithm, Claim, LogRead, Rule, SlidingLog, MAX_STATE};
use crate::decision::Decision;
use crate::sync::{spin_wait, AtomicU64, Ordering};
use crate::time::{Bounds, TimeSource};

/// Index of the head word in the state.
const HEAD: usize = 0;
/// Index of the latest-timestamp word.
const LATEST: usize = 1;
/// Index of the first ring slot; slot i is words `RING + 2i` (timestamp), `+ 1` (tag).
const RING: usize = 2;
/// Words per ring slot.
const SLOT_WORDS: usize = 2;
/// How many times a reader checks a pending slot before falling back to a bound. A
/// writer finishes a slot a few instructions after its claim; under loom one yield
/// lets the model explore both the wait and the fallback.
const PENDING_CHECKS: u32 = if cfg!(loom) { 2 } else { 128 };
/// How many reads of a denial that reports room for the request `acquire_at` makes before
/// it stops trusting the slots (see there).
const INCONSISTENT_READS: u32 = 8;

impl Stored for SlidingLog {
    fn state_words(&self) -> usize {
        // limit ≤ 2²⁰, so this cannot overflow.
        RING + SLOT_WORDS * self.limit() as usize
    }

    /// A denial or a query reads several words; it stands only if no unit was admitted
    /// meanwhile (head unchanged), so its fields describe one state of the log. A denial
    /// that reports room for the request read a pending slot before and after it was
    /// written: it is decided again on what is now known.
    // Not inlined into the dispatch: see the sliding window's.
    #[inline(never)]
    fn acquire_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<Decision, T::Evicted> {
        for attempt in 1.. {
            let ring = Ring::load(self, state, tenancy)?;
            let outcome = self.decide(&ring, now, n);
            let mut decision = outcome.decision;
            if !decision.allowed && decision.remaining >= n && attempt >= INCONSISTENT_READS {
                // Slots that read inconsistently read after read can only be bytes another
                // process wrote (timestamps that do not grow along positions): stop, and
                // report what a denial means.
                decision.remaining = n - 1;
            }
            let stands = match outcome.update {
                Some(claim) => ring.claim(claim, n)?,
                None => (decision.allowed || decision.remaining < n) && ring.unchanged(),
            };
            if stands {
                return Ok(decision);
            }
        }
        unreachable!("the attempts never run out")
    }

    /// The log gives nothing back: its claimed positions and their timestamps only grow,
    /// and readers trust a slot by its tag (module docs), so a position given back and
    /// claimed again would show the old timestamp as the new one's.
    fn acquire_refundable_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<(Decision, Option<Refund>), T::Evicted> {
        Ok((self.acquire_at(state, tenancy, now, n)?, None))
    }

    fn try_acquire_refundable_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<(bool, Option<Refund>), T::Evicted> {
        Ok((self.try_acquire_at(state, tenancy, now, n)?, None))
    }

    fn settle_refundable<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        bounds: Bounds,
        n: u64,
    ) -> Result<Option<(bool, Option<Refund>)>, T::Evicted> {
        Ok(Stored::settle(self, state, tenancy, bounds, n)?.map(|allowed| (allowed, None)))
    }

    /// As `acquire_at`'s reads, claiming nothing: the decision stands if no unit was
    /// admitted while it read.
    fn peek_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<Decision, T::Evicted> {
        loop {
            let ring = Ring::load(self, state, tenancy)?;
            let decision = self.decide(&ring, now, n).decision;
            if ring.unchanged() {
                return Ok(decision);
            }
        }
    }

    /// The admission test reads one slot, and without a report no search for the oldest
    /// live entry (`remaining`) is needed, so it is O(1) whatever the log holds.
    #[inline(never)]
    fn try_acquire_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        loop {
            let ring = Ring::load(self, state, tenancy)?;
            if let Some(allowed) = ring.try_claim(self.try_decide(&ring, now, n), n)? {
                return Ok(allowed);
            }
        }
    }

    fn settle<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        bounds: Bounds,
        n: u64,
    ) -> Result<Option<bool>, T::Evicted> {
        let ring = Ring::load(self, state, tenancy)?;
        ring.settle(bounds, n)
    }

    /// Decides on one read of the ring, reading the time only as far as that read needs.
    /// - If the entry that must be gone (`head + n − 1 − L`) left before the latest time
    ///   logged, or there is none, admission is certain at any time
    ///   ([`Algorithm::needs_exact`]); the units are logged at the exact time, so the
    ///   bounds are not read.
    /// - Else, a denial at the bounds' upper end is a denial at every instant before it
    ///   (admission only gets easier with time). An admission there is settled too when
    ///   that end is at most the latest time logged: every instant up to it is moved
    ///   forward to that same time ([`Algorithm::settle`]).
    /// - Else the exact time decides.
    ///
    /// The entry that must be gone is read once, at first without waiting (a pending entry
    /// is left to the full admission test, which waits and bounds it). A read the log's
    /// head shows stale (an admission raced it) is decided again from a fresh one, at the
    /// same exact time.
    #[inline(never)]
    fn try_acquire<T: Tenancy, C: TimeSource>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        let ring = Ring::load(self, state, tenancy)?;
        let needed = self
            .must_be_gone(ring.head, n)
            .map(|position| ring.exact_within(position, 1));
        let certain = match needed {
            None => true,
            Some(Some(ts)) => self.expired(ts, ring.latest),
            Some(None) => false,
        };
        let bounds = if certain { None } else { time.bounds() };
        if let Some(Bounds { latest, .. }) = bounds {
            let at = latest.max(ring.latest);
            let live = match needed {
                Some(Some(ts)) => !self.expired(ts, at),
                _ => !self.admits(&ring, at, n),
            };
            if live {
                if ring.unchanged() {
                    return Ok(false);
                }
            } else if latest <= ring.latest && ring.claim(Claim { at: ring.latest }, n)? {
                return Ok(true);
            }
        }
        let now = time.now_after_any(bounds);
        let at = now.max(ring.latest);
        let decided = if certain || self.admits(&ring, at, n) {
            ring.claim(Claim { at }, n)?.then_some(true)
        } else {
            ring.unchanged().then_some(false)
        };
        match decided {
            Some(allowed) => Ok(allowed),
            None => self.try_acquire_at(state, tenancy, now, n),
        }
    }

    /// Reads only `latest` besides head (see [`SlidingLog`]'s `is_fresh`).
    fn is_fresh(&self, state: &[AtomicU64], head: u64, now: u64) -> bool {
        // Relaxed: ordered after the caller's Acquire load of head, which pairs with the
        // Release head swap of every claim below it, so `latest` is at least each of
        // their timestamps.
        let latest = state[LATEST].load(Ordering::Relaxed);
        Algorithm::is_fresh(self, &Snapshot { head, latest }, now)
    }
}

/// Head and latest alone, for the freshness test, which reads no slot.
struct Snapshot {
    head: u64,
    latest: u64,
}

impl LogRead for Snapshot {
    fn head(&self) -> u64 {
        self.head
    }
    fn latest(&self) -> u64 {
        self.latest
    }
    fn logged(&self, _position: u64) -> u64 {
        // An upper bound on every timestamp logged.
        self.latest
    }
    fn written(&self, _position: u64) -> Option<u64> {
        None
    }
}

/// One read of the log: head and latest, by a caller whose claim on the state is
/// `tenancy`. Slots are read on demand, through [`LogRead`].
struct Ring<'a, T> {
    log: &'a SlidingLog,
    state: &'a [AtomicU64],
    tenancy: &'a T,
    head: u64,
    latest: u64,
}

impl<'a, T: Tenancy> Ring<'a, T> {
    /// Reads the log, if head (the first word) shows it is still the caller's state.
    #[inline(always)]
    fn load(
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
        Ok(Self {
            log,
            state,
            tenancy,
            head,
            latest,
        })
    }

    /// Settles `n` units within `bounds` on this read: `Some(allowed)` if settled (an
    /// admission claimed, a denial validated), `None` if the exact time must decide.
    #[inline(always)]
    fn settle(&self, bounds: Bounds, n: u64) -> Result<Option<bool>, T::Evicted> {
        match Algorithm::settle(self.log, self, bounds.earliest, bounds.latest, n).into_parts() {
            (Some(_), claim) => self.try_claim(claim, n),
            (None, _) => Ok(None),
        }
    }

    /// Carries out a report-free decision on this read: `Some(true)` if `claim` was
    /// claimed, `Some(false)` for a denial (no claim) that stands, `None` if the read
    /// turned out stale.
    #[inline(always)]
    fn try_claim(&self, claim: Option<Claim>, n: u64) -> Result<Option<bool>, T::Evicted> {
        Ok(match claim {
            Some(claim) => self.claim(claim, n)?.then_some(true),
            None => self.unchanged().then_some(false),
        })
    }

    /// Claims `[head, head + n)` and logs them at `claim.at`; `Ok(false)` if another
    /// admission came first. Each CAS is preceded by a tenancy check of head, so nothing is
    /// written once the state is no longer the caller's.
    fn claim(&self, claim: Claim, n: u64) -> Result<bool, T::Evicted> {
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
    fn exact_within(&self, position: u64, checks: u32) -> Option<u64> {
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

    /// Whether head is still what this read started from: no unit was admitted since, so
    /// every slot read belongs to the same state of the log.
    fn unchanged(&self) -> bool {
        // Relaxed: ordered after the Acquire slot reads (module docs, "Orderings").
        self.state[HEAD].load(Ordering::Relaxed) == self.head
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
