//! Inserting a key: the loop that looks a key up and else inserts it, and the insert's
//! steps after [claiming](Region::claim) a slot: install the key, or back out.
//!
//! Invariants every insert keeps, each argued at the function that keeps it:
//! - The first word keeps growing across tenancies, so no CAS of an old key succeeds on a
//!   new key's state, and whatever else an old key's stalled writer can still write
//!   admits nothing more for the new key ([`Region::install`]).
//! - Of two inserts of one key at most one completes ([`Region::insert`],
//!   [`Region::rival`]).
//! - A back-out leaves the slot exactly as it was ([`Region::back_out`]).

use super::claim::{Insert, Installed, Rival};
use super::layout::Located;
use super::lookup::{Evicted, Lookup, Tenant};
use super::markers::VACANT;
use super::recover::Claimant;
use super::region::Region;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::{KeyedAcquireError, ReserveError, SharedError};
use crate::shared::owner::crash_point;
use crate::state::{owned, Owned, Tenancy};
use crate::sync::{AtomicU64, Ordering};

/// Why an operation on one region stopped without a result there.
pub(super) enum Stop {
    /// The key is new and the table is full of live keys: the request is refused.
    TableFull,
    /// The key's slot, or a slot of its probe range, was moved into a next region.
    Moved,
}

/// States of at most this many words are decided on the stack when a key is new.
const INLINE_STATE_WORDS: usize = 4;

/// A request for one key: an acquire, or a reserve (GCRA's traffic shaper), of `n` units
/// at `now_ns`. A region decides it only after [`check`](Self::check) passed it under
/// that region's rule.
#[derive(Clone, Copy)]
pub(super) struct Request {
    now_ns: u64,
    n: u64,
    /// How long a reserve may wait; `None` for a plain acquire.
    max_wait_ns: Option<u64>,
}

impl Request {
    /// An acquire (`max_wait_ns` `None`) or a reserve of `n` units at `now_ns`.
    #[inline]
    pub(super) fn new(now_ns: u64, n: u64, max_wait_ns: Option<u64>) -> Self {
        Self {
            now_ns,
            n,
            max_wait_ns,
        }
    }

    /// Whether `decider` may decide the request, as a request of error `E` checks it: a
    /// reserve's (`max_wait_ns` given) is a [`ReserveError`], an acquire's is not.
    ///
    /// # Errors
    /// As [`Refusal::check`].
    #[inline]
    pub(super) fn check<E: Refusal>(&self, decider: &Decider) -> Result<(), E> {
        debug_assert_eq!(self.max_wait_ns.is_some(), E::RESERVE);
        E::check(self.n, decider)
    }

    /// Acquires (or reserves) the request on `state`.
    #[inline]
    pub(super) fn acquire<T: Tenancy>(
        &self,
        decider: &Decider,
        state: &[AtomicU64],
        tenancy: &T,
    ) -> Result<Decision, T::Evicted> {
        let max_wait_ns = self.max_wait_ns.unwrap_or(0);
        decider.acquire_at(state, tenancy, self.now_ns, self.n, max_wait_ns)
    }
}

/// The error of a request for one key, which says how the request is checked: an
/// acquire's ([`KeyedAcquireError`]) or a reserve's ([`ReserveError`] of it).
pub(crate) trait Refusal: From<SharedError> {
    /// The refusal of a new key by a table full of live keys.
    const TABLE_FULL: Self;
    /// Whether it is a reserve's error, checked as [`Decider::check_reserve`] checks.
    const RESERVE: bool;

    /// Whether `decider` may decide a request of `n` units of this kind.
    ///
    /// # Errors
    /// [`Decider::check`]'s, or [`Decider::check_reserve`]'s.
    fn check(n: u64, decider: &Decider) -> Result<(), Self>;

    /// Whether it is [`TABLE_FULL`](Self::TABLE_FULL), as the counts tell it apart.
    fn is_table_full(&self) -> bool;
}

impl Refusal for KeyedAcquireError {
    const TABLE_FULL: Self = Self::TableFull;
    const RESERVE: bool = false;

    #[inline(always)]
    fn check(n: u64, decider: &Decider) -> Result<(), Self> {
        Ok(decider.check(n)?)
    }

    fn is_table_full(&self) -> bool {
        matches!(self, Self::TableFull)
    }
}

impl Refusal for ReserveError<KeyedAcquireError> {
    const TABLE_FULL: Self = Self::Acquire(KeyedAcquireError::TableFull);
    const RESERVE: bool = true;

    #[inline(always)]
    fn check(n: u64, decider: &Decider) -> Result<(), Self> {
        decider.check_reserve(n)
    }

    fn is_table_full(&self) -> bool {
        matches!(self, Self::Acquire(error) if error.is_table_full())
    }
}

impl Region {
    /// Acquires `request` (checked under this region's rule) for `key` in this region, inserting the key if the request
    /// changes its fresh state, with its outcome told by where it was decided: `existing`
    /// decides it on the key's state in a slot, and `inserted` reports the decision of an
    /// insert (with the slot it installed the key in, if it did). The caller chose a
    /// region no change is sweeping into (`regions.rs`); [`Stop::Moved`] if this one was
    /// replaced meanwhile, which the caller then looks the key up in.
    ///
    /// A caller that has just looked the key up here and not found it says so
    /// (`just_missed`): the first lookup is skipped. That changes nothing, because the
    /// insert copes with the key appearing meanwhile (it returns `Retry`, and the loop
    /// looks again), exactly as it does for the gap after this loop's own lookup.
    #[inline(always)]
    pub(super) fn acquire_tracked<R>(
        &self,
        key: Located,
        request: Request,
        mut just_missed: bool,
        existing: impl Fn(&Region, usize, &[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
        inserted: impl FnOnce(&Region, Decision, Option<Installed>) -> R,
    ) -> Result<R, Stop> {
        let mut known_bound = 0;
        loop {
            if !just_missed {
                match self.on_existing_slot(key, known_bound, &existing) {
                    Lookup::Found(outcome) => return Ok(outcome),
                    Lookup::Moved => return Err(Stop::Moved),
                    Lookup::Absent => {}
                }
            }
            just_missed = false;
            let outcome = self.with_fresh_state(|fresh| {
                let decision = owned(request.acquire(&self.decider, fresh, &Owned));
                // Relaxed: a private state. A fresh state is all zeros, and any change
                // grows the first word, so zero means nothing to store (a query, a denial).
                if fresh[0].load(Ordering::Relaxed) == 0 {
                    return Insert::Done(decision, None);
                }
                self.insert(key, request, &mut known_bound)
            });
            match outcome {
                Insert::Done(decision, installed) => {
                    return Ok(inserted(self, decision, installed));
                }
                // `insert` has waited for the slot of a `Wait` already.
                Insert::Retry | Insert::Wait(_) => continue,
                Insert::Moved => return Err(Stop::Moved),
                Insert::Full => {
                    // Relaxed: a statistic; nothing else is ordered by it.
                    self.table_full().fetch_add(1, Ordering::Relaxed);
                    return Err(Stop::TableFull);
                }
            }
        }
    }

    /// Calls `f` with a private fresh state (all zeros) of this decider's size.
    pub(super) fn with_fresh_state<R>(&self, f: impl FnOnce(&[AtomicU64]) -> R) -> R {
        let words = self.decider.state_words();
        if words <= INLINE_STATE_WORDS {
            let inline: [AtomicU64; INLINE_STATE_WORDS] =
                std::array::from_fn(|_| AtomicU64::new(0));
            f(&inline[..words])
        } else {
            let heap: Vec<AtomicU64> = (0..words).map(|_| AtomicU64::new(0)).collect();
            f(&heap)
        }
    }

    /// Inserts `key` for `request`, which changes a fresh state, reclaiming a slot fresh
    /// at the request's time if need be: claims a slot, checks for a rival, then installs
    /// the key or backs out. `known_bound` learns how far keys may lie from home, for the
    /// lookup that follows a `Retry`.
    ///
    /// **No duplicates.** Two inserts of one key may claim different slots (their clocks
    /// disagree on what is fresh, or one passed a slot before the other claimed it). So
    /// after claiming, an insert does `fetch_max(max_distance, its distance)` with AcqRel:
    /// all such RMWs are totally ordered, and each acquires every claim made before an
    /// earlier one. Of two inserts of a key, the later one therefore sees the earlier
    /// one's claim when it then scans the key's probe range for a [`rival`](Self::rival),
    /// and at most one of the two completes.
    fn insert(&self, key: Located, request: Request, known_bound: &mut u64) -> Insert {
        let Some(claimant) = self.claimant(key.home) else {
            return Insert::Full;
        };
        let outcome = self.insert_as(claimant, key, request, known_bound);
        self.release(claimant);
        match outcome {
            // Waits only now, holding no claim and no entry (see `settled`).
            Insert::Wait(slot) => match self.settled(slot) {
                Some(_) => Insert::Retry,
                None => Insert::Full,
            },
            outcome => outcome,
        }
    }

    /// [`insert`](Self::insert) by `claimant`.
    fn insert_as(
        &self,
        claimant: Claimant,
        key: Located,
        request: Request,
        known_bound: &mut u64,
    ) -> Insert {
        let (claimed, distance, replaced) = match self.claim(key, request.now_ns, claimant) {
            Ok(claimed) => claimed,
            Err(Insert::Full) => return self.confirm_full(key, known_bound),
            Err(outcome) => return outcome,
        };
        // AcqRel: every insert does this RMW after claiming and before checking, so of
        // two inserts the later one acquires the earlier one's claim (see above).
        let bound = self
            .max_distance()
            .fetch_max(distance as u64, Ordering::AcqRel)
            .max(distance as u64);
        *known_bound = bound;
        if let Some(rival) = self.rival(key, bound, Some(claimed)) {
            self.back_out(claimed, replaced);
            return match rival {
                Rival::Holds => Insert::Retry,
                Rival::InFlight(slot) => Insert::Wait(slot),
                Rival::Moved => Insert::Moved,
            };
        }
        self.install(key, claimed, replaced, request)
    }

    /// Installs `key` in the slot `claimed`, which this insert alone holds, deciding
    /// `request` again on the state the claim `replaced`.
    ///
    /// **Reclaim.** An updater of the slot's old key holding the replaced value now fails
    /// its CAS: nothing it decided is lost, and since the old key was fresh, finding it
    /// absent afterwards is the same as finding it fresh (docs/keyed.md, reclaim). The new key's
    /// first request is decided again on a copy of the replaced state itself (fresh, so it
    /// decides as a zeroed state would: GCRA's old TAT ≤ now, the windows' counts are in
    /// windows before the previous one, the log's entries have all expired), and the
    /// copy's changed words are installed. So the first word keeps growing across
    /// tenancies (GCRA: old TAT ≤ now < new TAT; windows: a later window; log: head
    /// continues from the old head) and no stale CAS of the old key can succeed on any
    /// later value. Completing writes the other state words and the fingerprint, then the
    /// first word (Release).
    ///
    /// **Writers of the old key in flight.** Every write an algorithm makes (a CAS of the
    /// first word, a sliding-window record, the log's `latest` CAS, head CAS and ring
    /// slots) follows a tenancy check of the first word, but a writer can stall between its
    /// check and its write, across a reclaim. What it can still write is harmless to the
    /// new key:
    /// - its CASes of the first word or of the log's `latest` fail, both words having grown
    ///   past every value it can expect;
    /// - a sliding-window record it raises holds the old current word, whose window is at
    ///   least two before the reclaimer's `now`, hence before the new key's first window's
    ///   previous one: readers take such a record as 0, and `fetch_max` lets the new key's
    ///   own roll-overs overwrite it;
    /// - log ring writes come only after its head CAS succeeded, before the claim; its
    ///   timestamp is at most the `latest` the reclaimer saw expire (at most `now − P`) and
    ///   its tag at most the old head, both below what the new key writes to that ring
    ///   slot, so `fetch_max` leaves the new key's entries as they are. (Until the new key
    ///   writes that slot, an old entry is an expired position below the new key's first.)
    ///
    /// Whatever the writers' clocks, nothing they write can admit more for the new key. One
    /// case can make it stricter, the same one a plain log has: a log writer stalled after
    /// its head CAS leaves its ring slot pending, and a reader of the new key that needs
    /// that (expired, old) position waits a moment and then bounds its timestamp from
    /// above, which may deny. The words a stalled writer can still reach are all raised
    /// with `fetch_max`, which can only make readers stricter, never more lenient.
    fn install(&self, key: Located, claimed: usize, replaced: u64, request: Request) -> Insert {
        let state = self.state(claimed);
        self.with_fresh_state(|next| {
            if replaced != VACANT {
                next[0].store(replaced, Ordering::Relaxed);
                for (copy, word) in next.iter().zip(state).skip(1) {
                    // Relaxed: ordered after the claim's Acquire CAS; a private copy.
                    copy.store(word.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            }
            let decision = owned(request.acquire(&self.decider, next, &Owned));
            // Relaxed: a private state.
            let first = next[0].load(Ordering::Relaxed);
            if first == replaced || first == 0 {
                // The replaced words decided otherwise (only stricter: see "Reclaim"), and
                // a state that did not change must not be installed over itself.
                self.back_out(claimed, replaced);
                return Insert::Done(decision, None);
            }
            for (word, value) in state.iter().zip(next).skip(1) {
                // Relaxed: published by the Release store of the first word below.
                let value = value.load(Ordering::Relaxed);
                if word.load(Ordering::Relaxed) != value {
                    word.store(value, Ordering::Relaxed);
                    crash_point();
                }
            }
            // Release: orders this slot's claim before the new fingerprint, for
            // `Tenant::check`.
            self.fingerprint_word(claimed)
                .store(key.fingerprint, Ordering::Release);
            crash_point();
            // Release: publishes the fingerprint and state words to every Acquire load of
            // this value or of a later CAS on it.
            state[0].store(first, Ordering::Release);
            Insert::Done(
                decision,
                Some(Installed {
                    slot: claimed,
                    first,
                }),
            )
        })
    }

    /// Gives a claimed slot back as it was: the first word it replaced, fingerprint and
    /// state untouched, so an updater of its old key may carry on.
    ///
    /// **Backing out** stores back the exact value the claim replaced, fingerprint
    /// untouched, so the slot is as it was. Nothing ever relies on a `VACANT` slot ending a
    /// probe, so restoring `VACANT` makes no hole.
    pub(super) fn back_out(&self, claimed: usize, replaced: u64) {
        // Release: passes on the slot's untouched fingerprint and state (see `claim`).
        self.first_word(claimed).store(replaced, Ordering::Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::config::Config;
    use crate::keyed::markers::is_marker;
    use crate::keyed::KeyedLimiter;
    use crate::sync::Ordering;
    use crate::time::Instant;
    use std::time::Duration;

    const SECOND: u64 = 1_000_000_000;

    /// The first word of a reclaimed slot grows past the value it replaced, for every
    /// algorithm (the log's head continues from the old key's), so no CAS an old key's
    /// writer still has in flight can succeed on the new key's state.
    #[test]
    fn reclaim_keeps_the_first_word_growing() {
        for config in [
            Config::per_second(1),
            Config::fixed_window(1, Duration::from_secs(1)),
            Config::sliding_window(1, Duration::from_secs(1)),
            Config::sliding_log(1, Duration::from_secs(1)),
        ] {
            // Capacity 1: two slots, both taken at 0.
            let table = KeyedLimiter::new(&config, 1).unwrap();
            for key in [b"x", b"y"] {
                assert!(
                    table.acquire_at(key, 1, Instant::ZERO).unwrap().allowed,
                    "{config:?}"
                );
            }
            let words = || -> Vec<u64> {
                (0..table.max_keys() as usize)
                    .map(|slot| {
                        table
                            .view()
                            .current()
                            .first_word(slot)
                            .load(Ordering::Relaxed)
                    })
                    .collect()
            };
            let before = words();
            assert!(before.iter().all(|&word| !is_marker(word)), "{config:?}");
            // At 2 s both are fresh; z takes one slot.
            assert!(
                table
                    .acquire_at(b"z", 1, Instant::from_nanos(2 * SECOND))
                    .unwrap()
                    .allowed
            );
            let after = words();
            let changed: Vec<_> = (0..table.max_keys() as usize)
                .filter(|&slot| after[slot] != before[slot])
                .collect();
            assert_eq!(changed.len(), 1, "{config:?}: {before:?} {after:?}");
            assert!(after[changed[0]] > before[changed[0]], "{config:?}");
        }
    }
}
