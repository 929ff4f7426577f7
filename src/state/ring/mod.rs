//! The sliding log's ring of timestamps in words: what each word holds, the operations
//! on it, and its reset. How admissions claim positions and readers tell a written entry
//! from a pending one is `read.rs`.
//!
//! # Words
//! - `state[0]`, **head**: the next position, i.e. the units ever admitted (and the
//!   positions resets skipped).
//! - `state[1]`, **latest**: the largest timestamp logged (or about to be).
//! - `state[2]`, **floor**: the first position in the log; a reset raises it.
//! - `state[3 + 2i]`, `state[4 + 2i]`: slot i's **timestamp** and **tag**, the tag being
//!   `position + 1` of the entry the timestamp belongs to (0: never written). Position p
//!   lives in slot `p mod L`.
//!
//! # Reset
//! [`Stored::reset`] moves the head past one position by a CAS, then raises the floor to
//! the new head. Nothing is cleared and every word keeps growing.
//! - **Before or after, never a mix.** The head CAS is the reset's instant. An admission
//!   decided on the log before it claims by a CAS from the head it read, which fails once
//!   the reset moved the head: it is decided again on the reset log. A denial or a query
//!   stands only if head and floor are unchanged at its end.
//! - **Writers in flight.** A writer whose claim succeeded before the reset writes
//!   positions below the floor, which no reader uses. Entries beneath the floor stay in
//!   their slots until later laps overwrite them, so slot words still only grow.
//! - **Between the two writes** a reader may see the new head with the old floor: the
//!   skipped position (never written) reads as pending and the entries below it as
//!   logged, so the reader waits briefly and may decide as if the reset had not come
//!   (never admitting more). Its decision stands only if the floor is still the old one at
//!   its end: only while the resetting thread is stalled between its two writes, as a
//!   claim's writer can be between its claim and its slot. A process that dies there (a
//!   shared file) leaves the skip without the floor: the reset did not happen, and the
//!   skipped position stays pending for good, read as the newest entry (`read.rs`), which
//!   only ever denies more, and only while the log's last L positions include it.
//!
//! The skip costs one position per reset (see the log's bounds). A reset of a shared file
//! for a new boot zeroes every word together, with no writer of the old boot in flight.

mod read;

use self::read::Ring;
use super::request::{Request, TryAcquire};
use super::Stored;
use crate::algorithm::{Algorithm, Claim, LogRead, Rule, SlidingLog, MAX_STATE};
use crate::state::cell::Tenancy;
use crate::sync::{AtomicU64, Ordering};
use crate::time::{self, Bounds, TimeSource, Timed};

/// Index of the head word in the state.
pub(super) const HEAD: usize = 0;
/// Index of the latest-timestamp word.
pub(super) const LATEST: usize = 1;
/// Index of the floor word.
pub(super) const FLOOR: usize = 2;
/// Index of the first ring slot; slot i is words `RING + 2i` (timestamp), `+ 1` (tag).
pub(super) const RING: usize = 3;
/// Words per ring slot.
pub(super) const SLOT_WORDS: usize = 2;

impl Stored for SlidingLog {
    type Now<'a, T: Tenancy + 'a> = Now<'a, T>;

    fn state_words(&self) -> usize {
        // limit ≤ 2²⁰, so this cannot overflow.
        RING + SLOT_WORDS * self.limit() as usize
    }

    /// A decision without a claim reads several words; it stands only if no unit was
    /// admitted (and no reset finished) meanwhile (head and floor unchanged), so its fields
    /// describe one state of the log, and if the request finds what it read consistent
    /// ([`Request::stands`]). A claim stands if no admission came first.
    ///
    /// The log gives nothing back: its claimed positions and their timestamps only grow,
    /// and readers trust a slot by its tag (`read.rs`), so a position given back and
    /// claimed again would show the old timestamp as the new one's.
    ///
    /// A report-free acquire reads one slot, and without a report no search for the oldest
    /// live entry (`remaining`) is needed, so it is O(1) whatever the log holds.
    // Not inlined into the dispatch: see the sliding window's.
    #[inline(never)]
    fn swap<T: Tenancy, R: Request>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        request: R,
    ) -> Result<R::Out, T::Evicted> {
        for reads in 1.. {
            let ring = Ring::load(self, state, tenancy)?;
            let (mut out, claim) = request.decide(self, &ring);
            let stands = match claim {
                Some(claim) => ring.claim(claim, request.units())?,
                None => request.stands(&mut out, reads) && ring.unchanged(),
            };
            if stands {
                return Ok(out);
            }
        }
        unreachable!("the reads never run out")
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
            .must_be_gone(ring.head, ring.floor, n)
            .map(|position| ring.exact_within(position, 1));
        let certain = match needed {
            None => true,
            Some(Some(ts)) => self.expired(ts, ring.latest),
            Some(None) => false,
        };
        let read = Now {
            log: self,
            state,
            tenancy,
            ring,
            needed,
            certain,
            n,
        };
        time::decide(time, read)
    }

    /// Reads only `latest` and the floor besides head (see [`SlidingLog`]'s `is_fresh`).
    fn is_fresh(&self, state: &[AtomicU64], head: u64, now: u64) -> bool {
        // Relaxed: ordered after the caller's Acquire load of head, which pairs with the
        // Release head swap of every claim below it, so `latest` is at least each of
        // their timestamps.
        let latest = state[LATEST].load(Ordering::Relaxed);
        // Relaxed: a snapshot; a floor newer than `head` says "fresh", which a
        // reclaimer's CAS from `head` then finds stale.
        let floor = state[FLOOR].load(Ordering::Relaxed);
        Algorithm::is_fresh(
            self,
            &Snapshot {
                head,
                latest,
                floor,
            },
            now,
        )
    }

    /// Skips the head past one position, then raises the floor to it (module docs,
    /// "Reset").
    fn reset<T: Tenancy>(&self, state: &[AtomicU64], tenancy: &T) -> Result<(), T::Evicted> {
        loop {
            // Relaxed, both: the CAS below revalidates the head, and the floor only tells
            // whether anything was logged since the last reset.
            let head = state[HEAD].load(Ordering::Relaxed);
            tenancy.check(head)?;
            if head <= state[FLOOR].load(Ordering::Relaxed) {
                return Ok(());
            }
            // At the end of the timeline (the log's bounds) nothing is skipped: the head
            // then admits nothing more anyway.
            let skipped = head.checked_add(1).filter(|&next| next <= MAX_STATE);
            let floor = match skipped {
                // Relaxed: the skip publishes nothing; as an RMW it still continues the
                // release sequence of the claims' head swaps before it.
                Some(next) => match state[HEAD].compare_exchange(
                    head,
                    next,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => next,
                    Err(_) => continue,
                },
                None => head,
            };
            // Relaxed: the floor publishes nothing; a reader pairs it with the head it
            // loaded and revalidates both before its decision stands (`unchanged`).
            state[FLOOR].fetch_max(floor, Ordering::Relaxed);
            return Ok(());
        }
    }
}

/// A try-acquire of `1 ≤ n` units on one read of the ring, for the time strategy to decide.
pub(crate) struct Now<'a, T> {
    log: &'a SlidingLog,
    state: &'a [AtomicU64],
    tenancy: &'a T,
    ring: Ring<'a, T>,
    /// The timestamp of the entry that must be gone for the units to fit, if any (`None`
    /// within: pending at the read).
    needed: Option<Option<u64>>,
    /// Whether the units fit at any time: that entry left before the latest time logged,
    /// or there is none.
    certain: bool,
    n: u64,
}

impl<T: Tenancy> Timed for Now<'_, T> {
    type Evicted = T::Evicted;
    const PEEKS: bool = true;

    /// An admission certain at any time is logged at the exact time: no bounds to read.
    #[inline(always)]
    fn needs_exact(&self, _passed: impl FnOnce() -> u64) -> bool {
        self.certain
    }

    #[inline(always)]
    fn denied_through(&self, _latest: u64) -> Result<bool, T::Evicted> {
        Ok(false)
    }

    /// A denial at the bounds' upper end is a denial at every instant before it (admission
    /// only gets easier with time). An admission there is settled too when that end is at
    /// most the latest time logged: every instant up to it is moved forward to that same
    /// time ([`Algorithm::settle`]).
    #[inline(always)]
    fn settle(&self, bounds: Bounds) -> Result<Option<bool>, T::Evicted> {
        let (log, ring, n) = (self.log, &self.ring, self.n);
        let at = bounds.latest.max(ring.latest);
        let live = match self.needed {
            Some(Some(ts)) => !log.expired(ts, at),
            _ => !log.admits(ring, at, n),
        };
        if live {
            if ring.unchanged() {
                return Ok(Some(false));
            }
        } else if bounds.latest <= ring.latest && ring.claim(Claim { at: ring.latest }, n)? {
            return Ok(Some(true));
        }
        Ok(None)
    }

    /// On the same read; one an admission raced is decided again from a fresh one, at
    /// the same time.
    #[inline(always)]
    fn at(&self, now: u64) -> Result<bool, T::Evicted> {
        let (log, ring, n) = (self.log, &self.ring, self.n);
        let at = now.max(ring.latest);
        let decided = if self.certain || log.admits(ring, at, n) {
            ring.claim(Claim { at }, n)?.then_some(true)
        } else {
            ring.unchanged().then_some(false)
        };
        match decided {
            Some(allowed) => Ok(allowed),
            None => log.swap(self.state, self.tenancy, TryAcquire { now, n }),
        }
    }
}

/// Head, latest and floor alone, for the freshness test, which reads no slot.
struct Snapshot {
    head: u64,
    latest: u64,
    floor: u64,
}

impl LogRead for Snapshot {
    fn head(&self) -> u64 {
        self.head
    }
    fn latest(&self) -> u64 {
        self.latest
    }
    fn floor(&self) -> u64 {
        self.floor
    }
    fn logged(&self, _position: u64) -> u64 {
        // An upper bound on every timestamp logged.
        self.latest
    }
    fn written(&self, _position: u64) -> Option<u64> {
        None
    }
}
