//! Keyed limiters: one bounded, lock-free table of per-key state for every algorithm
//! (DESIGN §5).
//!
//! # Layout
//! One allocation, made at creation and never resized: `2 × capacity` slots (load ≤ ½ at
//! `capacity` keys; a non-power-of-two count indexed by fast range, `⌊hash · slots / 2⁶⁴⌋`),
//! each `[fingerprint, state word 0, …]` of plain `u64`s with no pointers, so the array
//! could live in memory shared between processes. A slot's stride is rounded up to a power
//! of two words when that is at most a 64-byte line, and the array starts on a line, so a
//! small slot never straddles two lines. GCRA: 16-byte slots, **32 bytes per key** of
//! capacity. A lookup of an existing key reads the key's home line, compares fingerprints,
//! and CASes the state there.
//!
//! Keys are arbitrary bytes (the empty key and keys with NUL bytes included), hashed with
//! SipHash-1-3 under a random 128-bit key drawn per table (`std`'s `RandomState`), so keys
//! chosen by an attacker cannot be made to collide. The 64-bit hash is the fingerprint:
//! two keys share a state only if their 64-bit hashes are equal; among 1,000,000 keys the
//! chance that any two do is about n²/2⁶⁵ ≈ 2.7 × 10⁻⁸.
//!
//! # Slot states
//! The first state word doubles as the slot's status: `VACANT` (no key), `INSTALLING` (one
//! thread owns the slot while it installs a key), or a state (the slot holds the key whose
//! fingerprint is in word 0). Algorithms never store those two values and only ever grow
//! the first word (see `cell.rs`). The fingerprint word changes only while its slot is
//! `INSTALLING`, and only its owner changes it.
//!
//! # Protocol
//! - **Lookup.** Probe from the key's home slot up to `max_distance`, the largest distance
//!   from home at which any key was ever installed. A slot matches when its fingerprint is
//!   the key's and its first word is a state; one that is `INSTALLING` under the key's
//!   fingerprint may be handed back to the key, so the lookup waits for it to settle.
//! - **Update.** Read the first word (Acquire, pairing with the Release store that
//!   installed the slot's key), then the fingerprint (Acquire, pairing with the Release
//!   store of a later tenant's fingerprint, which follows that tenant's claim), then the
//!   first word again: equal reads and the key's fingerprint make a consistent snapshot,
//!   as in a seqlock. Decide on it; CAS the first word if the decision changes it. Denials
//!   and queries never write, so the snapshot alone makes them exact; a CAS that succeeds
//!   lands in the same tenancy, because the first word only grows. A marker, another
//!   fingerprint or a changed word means: look the key up again.
//! - **Reclaim.** A slot is *claimable* if it is `VACANT` or its state is fresh at the
//!   claimer's `now`. An insert claims the first claimable slot from home by CASing its
//!   first word from the value it judged to `INSTALLING`, searching the whole table, so
//!   up to `2 × capacity` live keys fit. An updater of the old key holding that value now
//!   fails its CAS: nothing it decided is lost, and since the old key was fresh, finding
//!   it absent afterwards is the same as finding it fresh (DESIGN §5). The new key's first
//!   request is then decided again on a copy of the replaced state itself (fresh, so it
//!   decides as a zeroed state would: GCRA's old TAT ≤ now, the windows' counts are in
//!   windows before the previous one, the log's entries have all expired), and the copy's
//!   changed words are installed. So the first word keeps growing across tenancies (GCRA:
//!   old TAT ≤ now < new TAT; windows: a later window; log: head continues from the old
//!   head) and no stale CAS of the old key can succeed on any later value.
//! - **Writers of the old key in flight.** Every write an algorithm makes (a CAS of the
//!   first word, a sliding-window record, the log's `latest` CAS, head CAS and ring slots)
//!   follows a tenancy check of the first word, but a writer can stall between its check
//!   and its write, across a reclaim. What it can still write is harmless to the new key:
//!   - its CASes of the first word or of the log's `latest` fail, both words having grown
//!     past every value it can expect;
//!   - a sliding-window record it raises holds the old current word, whose window is at
//!     least two before the reclaimer's `now`, hence before the new key's first window's
//!     previous one: readers take such a record as 0, and `fetch_max` lets the new key's
//!     own roll-overs overwrite it;
//!   - log ring writes come only after its head CAS succeeded, before the claim; its
//!     timestamp is at most the `latest` the reclaimer saw expire (at most `now − P`) and
//!     its tag at most the old head, both below what the new key writes to that ring slot,
//!     so `fetch_max` leaves the new key's entries as they are. (Until the new key writes
//!     that slot, an old entry is an expired position below the new key's first.)
//!
//!   Whatever the writers' clocks, nothing they write can admit more for the new key. One
//!   case can make it stricter, the same one a plain log has: a log writer stalled after
//!   its head CAS leaves its ring slot pending, and a reader of the new key that needs
//!   that (expired, old) position waits a moment and then bounds its timestamp from
//!   above, which may deny. The words a stalled writer can still reach are all raised
//!   with `fetch_max`, which can only make readers stricter, never more lenient.
//! - **Full.** With no slot claimable, an insert that saw a slot in flight waits for it
//!   and looks again. Only when every slot held a live key of another key does it report
//!   `TableFull`, after one more look over its probe range behind an RMW on
//!   `max_distance` (see below), so that an insert of the same key that completed before
//!   that RMW, into a slot the scan had already passed, is found instead.
//! - **No duplicates.** Two inserts of one key may claim different slots (their clocks
//!   disagree on what is fresh, or one passed a slot before the other claimed it). So after
//!   claiming, an insert does `fetch_max(max_distance, its distance)` with AcqRel: all such
//!   RMWs are totally ordered, and each acquires every claim made before an earlier one.
//!   Of two inserts of a key, the later one therefore sees the earlier one's claim when it
//!   then scans the key's probe range. The scan resolves every other slot: a complete slot
//!   of the key means back out and use it; an `INSTALLING` slot (whose key cannot be known
//!   yet) at a lower index means back out, wait for it, and start over; one at a higher
//!   index means wait for it and look again. An insert waits only for slots of higher
//!   index, so waits form no cycle, and of two claims of one key at most one completes.
//!   Completing writes the other state words and the fingerprint, then the first word
//!   (Release).
//! - **Backing out** stores back the exact value the claim replaced, fingerprint untouched,
//!   so the slot is as it was and an updater of its old key may carry on. Nothing ever
//!   relies on a `VACANT` slot ending a probe, so restoring `VACANT` makes no hole.
//!
//! Operations on keys in the table never wait, except on a key whose own slot another
//! thread is reclaiming (its state was fresh at that thread's clock). An insert may wait
//! for an insert in flight in its probe range to finish its few steps.
//! `tests/loom_keyed.rs` model-checks the races.
//!
//! # Batches
//! [`KeyedLimiter::try_acquire_batch`] runs the same lookup, update and insert per key; it
//! only reorders the work around them. For each group of 16 keys it hashes every key and
//! prefetches its home line first, then reads the clock once, then decides the keys in
//! order. On a table past the caches the 16 misses are then in flight together instead of
//! one after another. A single `try_acquire` on such a table likewise prefetches the line
//! before its (precise) clock read, and keeps the path between two calls' misses short, so
//! the CPU can overlap consecutive calls' misses.

mod layout;

use self::layout::{prefetch, slot_stride, Slots, SLOTS_PER_KEY};
use crate::cell::{is_marker, owned, Owned, Tenancy, INSTALLING, VACANT};
use crate::policy::Policy;
use crate::sync::{AtomicU64, Backoff, Ordering};
use crate::{clock, Config, Decision, Error};
use crossbeam_utils::CachePadded;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;

/// How far from home an insert looks for a `VACANT` slot before it reclaims a fresh one,
/// at least: keys sharing a home would otherwise take the home slot from each other in
/// turn, each insert evicting the other key (see `claim`). Lookups of absent keys probe
/// this far once an insert has used it.
const VACANT_REACH: u64 = 7;
/// A table larger than this is taken to live mostly outside the CPU's caches, so that the
/// slot of a key is a cache miss: `try_acquire` then reads the exact time while the slot
/// is fetched (see `decide_now`). Typical last-level caches hold 8–32 MiB.
const CACHED_TABLE_BYTES: usize = 8 << 20;
/// Keys a batch hashes, and whose slots it prefetches, before it decides any of them: a
/// DRAM round trip is worth ~16 hashes here, and 16 lines stay in L1 until used.
const BATCH_KEYS: usize = 16;
/// States of at most this many words are decided on the stack when a key is new.
const INLINE_STATE_WORDS: usize = 4;

/// A rate limiter per key: each key (arbitrary bytes) gets its own state under one
/// [`Config`], in a table of fixed capacity allocated once.
///
/// Up to `capacity` keys whose state is not fresh always fit, and up to
/// [`max_keys`](Self::max_keys) (`2 × capacity`) do; a key whose state is fresh (it would
/// admit as much as a new key) may be dropped at any time to make room, which changes no
/// decision. When every slot holds a live key, a request for a new key returns
/// [`Error::TableFull`] and admits nothing; the caller chooses to fail open or closed.
///
/// `KeyedLimiter` is `Send + Sync` and lock-free for existing keys; see the module docs
/// of `keyed.rs` for the protocol. Memory: [`bytes_per_key`](Self::bytes_per_key) (32 for
/// GCRA) per key of capacity, allocated up front.
///
/// ```
/// use rate::{Config, KeyedLimiter};
/// const MS: u64 = 1_000_000;
/// // One request per 2 s per user.
/// let users = KeyedLimiter::new(&Config::gcra(1, 2000 * MS), 1000).unwrap();
/// assert!(users.acquire_at(b"bob", 1, 0).unwrap().allowed);
/// let denied = users.acquire_at(b"bob", 1, 999 * MS).unwrap();
/// assert!(!denied.allowed);
/// assert_eq!(denied.retry_after_ns, 1001 * MS);
/// assert!(users.acquire_at(b"alice", 1, 999 * MS).unwrap().allowed);
/// ```
pub struct KeyedLimiter<S = RandomState> {
    policy: Policy,
    config: Config,
    capacity: u64,
    slot_count: usize,
    /// Words per slot: the fingerprint, the state, padding up to a power of two.
    stride: usize,
    /// Index in `words` of slot 0's first word (the first one on a cache line).
    base: usize,
    words: Box<[AtomicU64]>,
    /// The largest distance from its home at which a key was ever installed: lookups probe
    /// no further. Only grows. Padded: inserts write it, every miss reads it.
    max_distance: CachePadded<AtomicU64>,
    hasher: S,
}

/// What one insert attempt did.
enum Install {
    /// The key's state is now in the table, after this decision (or the request changed
    /// nothing and needs no slot).
    Done(Decision),
    /// Another thread holds or is installing the key, or claimed a slot first: look again.
    Retry,
    /// Every slot held a live key of another key.
    Full,
}

/// What stands in the way of an insert (see `KeyedLimiter::rival`).
enum Rival {
    /// A slot holds the key.
    Holds,
    /// This slot is in flight, and may be installing the key.
    InFlight(usize),
}

/// A request for one key, already [checked](Policy::check) against the policy.
#[derive(Clone, Copy)]
struct Request {
    now_ns: u64,
    n: u64,
    /// How long a reserve (GCRA's traffic shaper) may wait; 0 for a plain acquire.
    max_wait_ns: u64,
}

impl Request {
    #[inline]
    fn apply<T: Tenancy>(
        &self,
        policy: &Policy,
        state: &[AtomicU64],
        tenancy: &T,
    ) -> Result<Decision, T::Evicted> {
        policy.acquire(state, tenancy, self.now_ns, self.n, self.max_wait_ns)
    }
}

/// The state in a slot turned out not to be (or to be no longer) the caller's key's.
#[derive(Debug)]
struct Evicted;

/// A key's claim on a slot: its state is the key's while the slot's first word is a state
/// and the slot's fingerprint is the key's.
struct Tenant<'a> {
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

impl KeyedLimiter<RandomState> {
    /// Builds a table for `capacity` keys under `config`, with a fresh random hash key.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] if `config` is invalid, or with
    /// [`ConfigError::Capacity`](crate::ConfigError::Capacity) if `capacity` is 0 or its
    /// table cannot be allocated; [`Error::Unsupported`] for an
    /// algorithm this build cannot run.
    pub fn new(config: &Config, capacity: u64) -> Result<Self, Error> {
        Self::with_hasher(config, capacity, RandomState::new())
    }
}

impl<S> KeyedLimiter<S> {
    /// Builds a table that hashes keys with `hasher`. Use a hasher with a secret random
    /// key unless the keys are trusted: keys that collide share probe chains.
    ///
    /// # Errors
    /// As [`new`](KeyedLimiter::new).
    pub fn with_hasher(config: &Config, capacity: u64, hasher: S) -> Result<Self, Error> {
        clock::prepare();
        let policy = Policy::new(config)?;
        let stride = slot_stride(policy.state_words());
        let Slots {
            slot_count,
            base,
            words,
        } = Slots::allocate(capacity, stride)?;
        Ok(Self {
            policy,
            config: *config,
            capacity,
            slot_count,
            stride,
            base,
            words,
            max_distance: CachePadded::new(AtomicU64::new(0)),
            hasher,
        })
    }

    /// The configuration every key's state follows.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The capacity this table was built for: this many live keys always fit.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The most keys the table can hold at once (its slot count, `2 × capacity`).
    pub fn max_keys(&self) -> u64 {
        self.slot_count as u64
    }

    /// Table memory per key of capacity, in bytes: 32 for GCRA (two 16-byte slots).
    pub fn bytes_per_key(&self) -> usize {
        SLOTS_PER_KEY as usize * self.stride * std::mem::size_of::<u64>()
    }

    /// The table's whole allocation, in bytes: `bytes_per_key() × capacity()` plus at most
    /// one cache line of alignment slack.
    pub fn table_bytes(&self) -> usize {
        self.words.len() * std::mem::size_of::<u64>()
    }

    /// How many keys hold a state that is not fresh at `now_ns`: a snapshot taken by
    /// reading every slot (O(slots); for tests and metrics, not hot paths).
    pub fn live_keys_at(&self, now_ns: u64) -> u64 {
        (0..self.slot_count)
            .filter(|&slot| {
                // Relaxed: a snapshot with no ordering promise; is_fresh says no to markers.
                let first = self.state(slot)[0].load(Ordering::Relaxed);
                !is_marker(first) && !self.policy.is_fresh(self.state(slot), now_ns)
            })
            .count() as u64
    }

    #[inline]
    fn tenant(&self, slot: usize, fingerprint: u64) -> Tenant<'_> {
        Tenant {
            fingerprint: self.fingerprint_word(slot),
            first_word: self.first_word(slot),
            expected: fingerprint,
        }
    }

    /// Waits until `slot` is not `INSTALLING`, and returns its first word then (Acquire:
    /// pairs with the store that settled it, so the slot's fingerprint may be read next).
    fn settled(&self, slot: usize) -> u64 {
        let mut backoff = Backoff::default();
        loop {
            let first = self.first_word(slot).load(Ordering::Acquire);
            if first != INSTALLING {
                return first;
            }
            backoff.snooze();
        }
    }

    /// The slot holding the key with `fingerprint`, probing `bound` slots past `home`.
    // Always inlined: as a call it cost a keyed acquire ~0.8 ns at 1,000 keys (measured).
    #[inline(always)]
    fn find(&self, fingerprint: u64, home: usize, bound: u64) -> Option<usize> {
        for distance in self.distances(bound) {
            let slot = self.probe(home, distance);
            // Relaxed: a filter; the update re-checks the fingerprint after its Acquire load.
            if self.fingerprint_word(slot).load(Ordering::Relaxed) != fingerprint {
                continue;
            }
            // Acquire: pairs with the Release store that installed the slot's key.
            let mut first = self.first_word(slot).load(Ordering::Acquire);
            if first == INSTALLING {
                // A reclaim of this key's own (fresh) slot is in flight: it may back out.
                first = self.settled(slot);
                if self.fingerprint_word(slot).load(Ordering::Relaxed) != fingerprint {
                    continue;
                }
            }
            if first != VACANT {
                return Some(slot);
            }
        }
        None
    }

    /// Runs `op` on the key's state if the key is in the table, looking the key up again
    /// whenever its slot is repurposed under it; `None` if the key is absent.
    #[inline]
    fn on_existing<R>(
        &self,
        fingerprint: u64,
        home: usize,
        known_bound: u64,
        op: impl Fn(&[AtomicU64], &Tenant<'_>) -> Result<R, Evicted>,
    ) -> Option<R> {
        loop {
            // Relaxed: a stale bound only makes a present key look absent, and the insert
            // that follows then finds it through its AcqRel fetch_max.
            let bound = known_bound.max(self.max_distance.load(Ordering::Relaxed));
            let slot = self.find(fingerprint, home, bound)?;
            if let Ok(result) = op(self.state(slot), &self.tenant(slot, fingerprint)) {
                return Some(result);
            }
        }
    }

    /// Decides `request` for the key with `fingerprint`, inserting the key if the request
    /// changes its fresh state.
    fn run(&self, fingerprint: u64, request: Request) -> Result<Decision, Error> {
        self.run_from(fingerprint, self.home(fingerprint), request, false)
    }

    /// [`run`](Self::run) for a caller that may have just looked the key up and not found
    /// it (`just_missed`): the first lookup is skipped. That changes nothing, because the
    /// insert copes with the key appearing meanwhile (it returns `Retry`, and the loop
    /// looks again), exactly as it does for the gap after this loop's own lookup.
    fn run_from(
        &self,
        fingerprint: u64,
        home: usize,
        request: Request,
        mut just_missed: bool,
    ) -> Result<Decision, Error> {
        let mut known_bound = 0;
        loop {
            if !just_missed {
                let existing = self.on_existing(fingerprint, home, known_bound, |state, tenant| {
                    request.apply(&self.policy, state, tenant)
                });
                if let Some(decision) = existing {
                    return Ok(decision);
                }
            }
            just_missed = false;
            let inserted = self.with_fresh_state(|fresh| {
                let decision = owned(request.apply(&self.policy, fresh, &Owned));
                // Relaxed: a private state. A fresh state is all zeros, and any change
                // grows the first word, so zero means nothing to store (a query, a denial).
                if fresh[0].load(Ordering::Relaxed) == 0 {
                    return Install::Done(decision);
                }
                self.install(fingerprint, home, request, &mut known_bound)
            });
            match inserted {
                Install::Done(decision) => return Ok(decision),
                Install::Retry => continue,
                Install::Full => return Err(Error::TableFull),
            }
        }
    }

    /// Calls `f` with a private fresh state (all zeros) of this policy's size.
    fn with_fresh_state<R>(&self, f: impl FnOnce(&[AtomicU64]) -> R) -> R {
        let words = self.policy.state_words();
        if words <= INLINE_STATE_WORDS {
            let inline: [AtomicU64; INLINE_STATE_WORDS] =
                std::array::from_fn(|_| AtomicU64::new(0));
            f(&inline[..words])
        } else {
            let heap: Vec<AtomicU64> = (0..words).map(|_| AtomicU64::new(0)).collect();
            f(&heap)
        }
    }

    /// Claims a slot for a new key by CASing its first word to `INSTALLING`, and returns
    /// the slot, its distance and the value it replaced: a `VACANT` slot within the lookup
    /// bound or [`VACANT_REACH`] if there is one, else the first claimable slot from `home` (`VACANT`, or
    /// fresh at `now_ns`). Else `Retry` if the key itself turned up or a slot was in flight
    /// (after waiting for it: it may free up, or be the key), and `Full` if every slot held
    /// a live key.
    ///
    /// Either choice is correct (the caller's rival check does not depend on it), but
    /// reclaiming a fresh slot evicts its key, whose next request must then be inserted
    /// again and may evict another: with keys that go fresh between requests, preferring
    /// fresh slots nearer home would keep the table churning while vacant slots sit unused.
    fn claim(
        &self,
        fingerprint: u64,
        home: usize,
        now_ns: u64,
    ) -> Result<(usize, usize, u64), Install> {
        // Relaxed: any bound is correct here; this pass only prefers some slots to others.
        let bound = self.max_distance.load(Ordering::Relaxed);
        for distance in self.distances(bound.max(VACANT_REACH)) {
            let slot = self.probe(home, distance);
            // Relaxed: a filter; the CAS is the claim. Acquire on success, as below.
            if self.first_word(slot).load(Ordering::Relaxed) == VACANT
                && self
                    .first_word(slot)
                    .compare_exchange(VACANT, INSTALLING, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Ok((slot, distance, VACANT));
            }
        }
        let mut in_flight = None;
        for distance in 0..self.slot_count {
            let slot = self.probe(home, distance);
            // Acquire: pairs with the store that installed this value, so `is_fresh` and
            // the fingerprint read below see the rest of the same state.
            let mut first = self.first_word(slot).load(Ordering::Acquire);
            loop {
                if first == INSTALLING {
                    in_flight.get_or_insert(slot);
                    break;
                }
                if first != VACANT && !self.policy.is_fresh(self.state(slot), now_ns) {
                    // Relaxed: ordered after the Acquire load of `first`.
                    if self.fingerprint_word(slot).load(Ordering::Relaxed) == fingerprint {
                        return Err(Install::Retry);
                    }
                    break;
                }
                // Acquire on success: so a back-out's Release store of `first` passes on
                // the slot's fingerprint and state words to whoever reads it next.
                // A failure re-examines the new value.
                match self.first_word(slot).compare_exchange(
                    first,
                    INSTALLING,
                    Ordering::Acquire,
                    Ordering::Acquire,
                ) {
                    Ok(_) => return Ok((slot, distance, first)),
                    Err(actual) => first = actual,
                }
            }
        }
        match in_flight {
            Some(slot) => {
                self.settled(slot);
                Err(Install::Retry)
            }
            None => Err(Install::Full),
        }
    }

    /// Looks over the key's probe range, after this thread's AcqRel RMW on `max_distance`,
    /// for a rival to an insert of the key: a slot holding the key, or a slot in flight
    /// (which may be installing it). A slot in flight above `claimed` (this insert's own
    /// slot, skipped) is waited for and looked at again: the insert there backs out or
    /// completes. Any other rival is returned; the caller backs out of its claim, if it has
    /// one, then waits for a slot in flight, and starts over.
    fn rival(
        &self,
        fingerprint: u64,
        home: usize,
        bound: u64,
        claimed: Option<usize>,
    ) -> Option<Rival> {
        for distance in self.distances(bound) {
            let slot = self.probe(home, distance);
            if Some(slot) == claimed {
                continue;
            }
            // Acquire: pairs with the store that installed the slot's key (fingerprint
            // below); a claim ordered before ours is visible through `max_distance`.
            let mut first = self.first_word(slot).load(Ordering::Acquire);
            if first == INSTALLING {
                if !claimed.is_some_and(|claimed| slot > claimed) {
                    return Some(Rival::InFlight(slot));
                }
                first = self.settled(slot);
            }
            // Relaxed: ordered after the Acquire load of `first`.
            if !is_marker(first)
                && self.fingerprint_word(slot).load(Ordering::Relaxed) == fingerprint
            {
                return Some(Rival::Holds);
            }
        }
        None
    }

    /// Confirms a claim scan that found every slot live: `Full` unless the key itself was
    /// installed meanwhile, or is being installed, by an insert whose claim this thread
    /// can see. The RMW (which changes nothing) orders this check among the inserts' own,
    /// so any insert of the key that completed before it is seen.
    fn confirm_full(&self, fingerprint: u64, home: usize, known_bound: &mut u64) -> Install {
        // AcqRel: as in `install`.
        *known_bound = self.max_distance.fetch_max(0, Ordering::AcqRel);
        match self.rival(fingerprint, home, *known_bound, None) {
            None => Install::Full,
            Some(rival) => {
                if let Rival::InFlight(slot) = rival {
                    self.settled(slot);
                }
                Install::Retry
            }
        }
    }

    /// Inserts the key with `fingerprint` for `request`, which changes a fresh state,
    /// reclaiming a slot fresh at the request's time if need be. `known_bound` learns how
    /// far keys may lie from home, for the lookup that follows a `Retry`.
    fn install(
        &self,
        fingerprint: u64,
        home: usize,
        request: Request,
        known_bound: &mut u64,
    ) -> Install {
        let (claimed, distance, replaced) = match self.claim(fingerprint, home, request.now_ns) {
            Ok(claimed) => claimed,
            Err(Install::Full) => return self.confirm_full(fingerprint, home, known_bound),
            Err(outcome) => return outcome,
        };
        // AcqRel: every insert does this RMW after claiming and before checking, so of
        // two inserts the later one acquires the earlier one's claim (see module docs).
        let bound = self
            .max_distance
            .fetch_max(distance as u64, Ordering::AcqRel)
            .max(distance as u64);
        *known_bound = bound;
        if let Some(rival) = self.rival(fingerprint, home, bound, Some(claimed)) {
            self.back_out(claimed, replaced);
            if let Rival::InFlight(slot) = rival {
                self.settled(slot);
            }
            return Install::Retry;
        }
        // The slot is ours alone. The request is decided again on the state it replaces
        // (fresh, so the decision is the one a fresh state gives), so that the first word
        // keeps growing across tenancies and the old key's in-flight writers find nothing
        // they can complete (module docs, "Reclaim").
        let state = self.state(claimed);
        self.with_fresh_state(|next| {
            if replaced != VACANT {
                next[0].store(replaced, Ordering::Relaxed);
                for (copy, word) in next.iter().zip(state).skip(1) {
                    // Relaxed: ordered after the claim's Acquire CAS; a private copy.
                    copy.store(word.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            }
            let decision = owned(request.apply(&self.policy, next, &Owned));
            // Relaxed: a private state.
            let first = next[0].load(Ordering::Relaxed);
            if first == replaced || first == 0 {
                // The replaced words decided otherwise (only stricter: see "Reclaim"), and
                // a state that did not change must not be installed over itself.
                self.back_out(claimed, replaced);
                return Install::Done(decision);
            }
            for (word, value) in state.iter().zip(next).skip(1) {
                // Relaxed: published by the Release store of the first word below.
                let value = value.load(Ordering::Relaxed);
                if word.load(Ordering::Relaxed) != value {
                    word.store(value, Ordering::Relaxed);
                }
            }
            // Release: orders this slot's claim before the new fingerprint, for
            // `Tenant::check`.
            self.fingerprint_word(claimed)
                .store(fingerprint, Ordering::Release);
            // Release: publishes the fingerprint and state words to every Acquire load of
            // this value or of a later CAS on it.
            state[0].store(first, Ordering::Release);
            Install::Done(decision)
        })
    }

    /// Gives a claimed slot back as it was: the first word it replaced, fingerprint and
    /// state untouched, so an updater of its old key may carry on.
    fn back_out(&self, claimed: usize, replaced: u64) {
        // Release: passes on the slot's untouched fingerprint and state (see `claim`).
        self.first_word(claimed).store(replaced, Ordering::Release);
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// Acquires `n` units for `key` now (`CLOCK_MONOTONIC`). `n == 0` only reports the key's
    /// state, and never inserts it.
    ///
    /// # Errors
    /// [`Error::InsufficientCapacity`] if `n` exceeds the decision's `limit`;
    /// [`Error::TableFull`] if `key` is new and every slot holds a live key (nothing is
    /// admitted).
    pub fn acquire(&self, key: &[u8], n: u64) -> Result<Decision, Error> {
        self.decide_now(key, n, None)
    }

    /// Acquires `n` units for `key` at `now_ns`. Keys are independent; an earlier `now_ns`
    /// than one already seen never admits more than the latest time would.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(&self, key: &[u8], n: u64, now_ns: u64) -> Result<Decision, Error> {
        let request = self.request(now_ns, n, None)?;
        self.run(self.fingerprint(key), request)
    }

    /// Acquires `n` units for `key` now and says only whether they were admitted: the
    /// fastest path. For a key already in the table it decides on the coarse clock
    /// whenever that settles the outcome, as [`Limiter::try_acquire`](crate::Limiter::try_acquire)
    /// does; the outcome is always the one [`acquire`](Self::acquire) would give.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn try_acquire(&self, key: &[u8], n: u64) -> Result<bool, Error> {
        self.policy.check(n, None)?;
        let fingerprint = self.fingerprint(key);
        let home = self.home(fingerprint);
        if self.table_bytes() > CACHED_TABLE_BYTES {
            // The key's slot is most likely a cache miss, which costs several clock reads:
            // read the exact time while the line travels rather than the coarse time now
            // and perhaps the exact time after it arrives.
            prefetch(&self.slot(home)[0]);
            return self.admit_located(fingerprint, home, clock::now_ns(), n);
        }
        self.decide_or_insert(
            fingerprint,
            home,
            n,
            |state, tenant| self.policy.try_acquire(state, tenant, None, n),
            clock::now_ns,
        )
    }

    /// Acquires `n` units for each key of `keys`, reporting whether each was admitted, as
    /// [`acquire_at`](Self::acquire_at) would decide them key after key at one reading of
    /// the library clock per group of up to 16 consecutive keys. `each(i, outcome)` is
    /// called once per key, in order, with `Err(TableFull)` for a new key that found the
    /// table full of live keys (it admitted nothing). A key that appears twice is decided
    /// twice, the second time after the first.
    ///
    /// Faster per key than one call per key when the table is larger than the CPU caches:
    /// the slots of a group's keys are prefetched before any of them is read, so their
    /// cache misses overlap, and the group's clock reading is taken after the prefetches.
    ///
    /// # Errors
    /// [`Error::InsufficientCapacity`] if `n` exceeds the decision's `limit`, before any
    /// key is decided (`each` is not called).
    ///
    /// ```
    /// use rate::{Config, Error, KeyedLimiter};
    /// let users = KeyedLimiter::new(&Config::gcra(1, 1_000_000_000), 1000).unwrap();
    /// let keys: [&[u8]; 3] = [b"ann", b"bob", b"ann"];
    /// let mut admitted = Vec::new();
    /// users.try_acquire_batch(&keys, 1, |_, outcome| admitted.push(outcome)).unwrap();
    /// // ann's second request, in the same instant, finds her one unit taken.
    /// assert_eq!(admitted, [Ok(true), Ok(true), Ok(false)]);
    /// let too_many = users.try_acquire_batch(&keys, 2, |_, _| unreachable!());
    /// assert_eq!(too_many, Err(Error::InsufficientCapacity));
    /// ```
    pub fn try_acquire_batch(
        &self,
        keys: &[&[u8]],
        n: u64,
        each: impl FnMut(usize, Result<bool, Error>),
    ) -> Result<(), Error> {
        self.batch(keys, n, None, each)
    }

    /// [`try_acquire_batch`](Self::try_acquire_batch) with every key decided at `now_ns`.
    ///
    /// # Errors
    /// As [`try_acquire_batch`](Self::try_acquire_batch).
    pub fn try_acquire_batch_at(
        &self,
        keys: &[&[u8]],
        n: u64,
        now_ns: u64,
        each: impl FnMut(usize, Result<bool, Error>),
    ) -> Result<(), Error> {
        self.batch(keys, n, Some(now_ns), each)
    }

    /// The batch acquire, at `now_ns` or (`None`) at a clock reading per group of keys.
    fn batch(
        &self,
        keys: &[&[u8]],
        n: u64,
        now_ns: Option<u64>,
        mut each: impl FnMut(usize, Result<bool, Error>),
    ) -> Result<(), Error> {
        self.policy.check(n, None)?;
        for (group, chunk) in keys.chunks(BATCH_KEYS).enumerate() {
            let mut located = [(0, 0); BATCH_KEYS];
            for (place, key) in located.iter_mut().zip(chunk) {
                let fingerprint = self.fingerprint(key);
                let home = self.home(fingerprint);
                prefetch(&self.slot(home)[0]);
                *place = (fingerprint, home);
            }
            let now_ns = now_ns.unwrap_or_else(clock::now_ns);
            for (offset, &(fingerprint, home)) in located[..chunk.len()].iter().enumerate() {
                let outcome = self.admit_located(fingerprint, home, now_ns, n);
                each(group * BATCH_KEYS + offset, outcome);
            }
        }
        Ok(())
    }

    /// A report-free acquire of `n` (checked) at `now_ns` for the key with `fingerprint`,
    /// whose home slot is `home`.
    #[inline]
    fn admit_located(
        &self,
        fingerprint: u64,
        home: usize,
        now_ns: u64,
        n: u64,
    ) -> Result<bool, Error> {
        if n == 0 {
            // A query: admitted, and a keyed query never inserts its key.
            return Ok(true);
        }
        self.decide_or_insert(
            fingerprint,
            home,
            n,
            |state, tenant| self.policy.admit_at(state, tenant, now_ns, n),
            || now_ns,
        )
    }

    /// A report-free acquire of `n` (checked) for the key with `fingerprint`, whose home
    /// slot is `home`: by `decide` on its state if the key is in the table, else by an
    /// insert decided at `now()`.
    #[inline(always)]
    fn decide_or_insert(
        &self,
        fingerprint: u64,
        home: usize,
        n: u64,
        decide: impl Fn(&[AtomicU64], &Tenant<'_>) -> Result<bool, Evicted>,
        now: impl FnOnce() -> u64,
    ) -> Result<bool, Error> {
        match self.on_existing(fingerprint, home, 0, decide) {
            Some(allowed) => Ok(allowed),
            None => {
                let request = self.request(now(), n, None)?;
                Ok(self.run_from(fingerprint, home, request, true)?.allowed)
            }
        }
    }

    /// Reserves `n` units for `key` now: GCRA's leaky bucket as a queue. Admits if the
    /// caller would wait at most `max_wait_ns` before acting; `wait_ns` says how long.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire), and [`Error::Unsupported`] for the window algorithms.
    pub fn reserve(&self, key: &[u8], n: u64, max_wait_ns: u64) -> Result<Decision, Error> {
        self.decide_now(key, n, Some(max_wait_ns))
    }

    /// [`reserve`](Self::reserve) at `now_ns`. With `max_wait_ns == 0` it is exactly
    /// [`acquire_at`](Self::acquire_at).
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub fn reserve_at(
        &self,
        key: &[u8],
        n: u64,
        now_ns: u64,
        max_wait_ns: u64,
    ) -> Result<Decision, Error> {
        let request = self.request(now_ns, n, Some(max_wait_ns))?;
        self.run(self.fingerprint(key), request)
    }

    /// An acquire (`max_wait_ns` `None`) or a reserve of `n` units for `key` now. The
    /// key's slot is prefetched before the clock is read, so that the read (~25 ns, and a
    /// barrier to the CPU's running ahead) overlaps the slot's trip from memory.
    #[inline]
    fn decide_now(&self, key: &[u8], n: u64, max_wait_ns: Option<u64>) -> Result<Decision, Error> {
        let fingerprint = self.fingerprint(key);
        let home = self.home(fingerprint);
        prefetch(&self.slot(home)[0]);
        let request = self.request(clock::now_ns(), n, max_wait_ns)?;
        self.run_from(fingerprint, home, request, false)
    }

    /// An acquire (`max_wait_ns` `None`) or a reserve of `n` units at `now_ns`, checked.
    #[inline]
    fn request(&self, now_ns: u64, n: u64, max_wait_ns: Option<u64>) -> Result<Request, Error> {
        self.policy.check(n, max_wait_ns)?;
        Ok(Request {
            now_ns,
            n,
            max_wait_ns: max_wait_ns.unwrap_or(0),
        })
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// How many slots hold a state under `key`'s fingerprint: the model checks' proof that
    /// a key never has two. Exists only under `cfg(loom)`, which is not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn slots_holding(&self, key: &[u8]) -> usize {
        let fingerprint = self.fingerprint(key);
        (0..self.slot_count)
            .filter(|&slot| {
                // Acquire: pairs with the install's Release store, for the fingerprint.
                let first = self.first_word(slot).load(Ordering::Acquire);
                !is_marker(first)
                    && self.fingerprint_word(slot).load(Ordering::Relaxed) == fingerprint
            })
            .count()
    }
}

impl<S> fmt::Debug for KeyedLimiter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLimiter")
            .field("config", &self.config)
            .field("capacity", &self.capacity)
            .field("max_keys", &self.slot_count)
            .field("bytes_per_key", &self.bytes_per_key())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::hash::Hasher;

    const SECOND: u64 = 1_000_000_000;

    /// The first word of a reclaimed slot grows past the value it replaced, for every
    /// algorithm (the log's head continues from the old key's), so no CAS an old key's
    /// writer still has in flight can succeed on the new key's state.
    #[test]
    fn reclaim_keeps_the_first_word_growing() {
        for config in [
            Config::gcra(1, SECOND),
            Config::fixed_window(1, SECOND),
            Config::sliding_window(1, SECOND),
            Config::sliding_log(1, SECOND),
        ] {
            // Capacity 1: two slots, both taken at 0.
            let table = KeyedLimiter::new(&config, 1).unwrap();
            for key in [b"x", b"y"] {
                assert!(table.acquire_at(key, 1, 0).unwrap().allowed, "{config:?}");
            }
            let words = || -> Vec<u64> {
                (0..table.slot_count)
                    .map(|slot| table.first_word(slot).load(Ordering::Relaxed))
                    .collect()
            };
            let before = words();
            assert!(before.iter().all(|&word| !is_marker(word)), "{config:?}");
            // At 2 s both are fresh; z takes one slot.
            assert!(table.acquire_at(b"z", 1, 2 * SECOND).unwrap().allowed);
            let after = words();
            let changed: Vec<_> = (0..table.slot_count)
                .filter(|&slot| after[slot] != before[slot])
                .collect();
            assert_eq!(changed.len(), 1, "{config:?}: {before:?} {after:?}");
            assert!(after[changed[0]] > before[changed[0]], "{config:?}");
        }
    }

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
        let table = KeyedLimiter::with_hasher(&Config::gcra(1, 10), 4, Transparent(0)).unwrap();
        let keys = [1u64, 2, 3].map(u64::to_le_bytes);
        for round in 0..4u64 {
            for (index, key) in keys.iter().enumerate() {
                // T = 10: every key is fresh again by its next request.
                let now = 100 * round + 20 * index as u64;
                assert!(table.acquire_at(key, 1, now).unwrap().allowed);
            }
        }
        let slots: Vec<u64> = (0..3)
            .map(|slot| table.fingerprint_word(slot).load(Ordering::Relaxed))
            .collect();
        assert_eq!(
            slots,
            [1, 2, 3],
            "each key kept the slot it was first given"
        );
    }
}
