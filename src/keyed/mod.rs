//! Keyed limiters: one bounded, lock-free table of per-key state for every algorithm
//! (docs/keyed.md).
//!
//! # Layout
//! One allocation of `2 × capacity` slots, made at creation and never resized, each slot
//! `[fingerprint, state word 0, …]` of plain `u64`s, laid out so that a small slot never
//! straddles a cache line (GCRA: 16-byte slots, **32 bytes per key** of capacity). A key
//! lives in its home slot or a few slots past it, so a lookup of an existing key reads
//! the key's home line, compares fingerprints, and CASes the state there.
//!
//! Keys are arbitrary bytes (the empty key and keys with NUL bytes included), hashed with
//! SipHash-1-3 under a secret 128-bit key drawn per table ([`KeyHasher`]; a shared
//! table keeps it in its file), so keys chosen by an attacker cannot be made to collide. The 64-bit hash is the fingerprint:
//! two keys share a state only if their 64-bit hashes are equal; among 1,000,000 keys the
//! chance that any two do is about n²/2⁶⁵ ≈ 2.7 × 10⁻⁸.
//!
//! # Slot states
//! The first state word doubles as the slot's status: `VACANT` (no key), `installing(c)`
//! (claim c owns the slot while it installs a key), or a state (the slot holds the key
//! whose fingerprint is in word 0, or, under fingerprint `NO_KEY`, the former state of a
//! key that was reset: `reset.rs`). Algorithms never store those markers and only ever
//! grow the first word (see `state/cell.rs`). The fingerprint word changes only while its
//! slot is claimed, and only its claimer changes it (or, in a shared table, a recovery of
//! a claim whose process died: `recover.rs`).
//!
//! # Vocabulary
//! Names follow the crate's vocabulary (the crate docs, `lib.rs`), whose table words are
//! locate, find, insert, claim, reclaim, install and back out; a function named
//! `…_located` takes a key already located.
//!
//! # Regions
//! The slots live in a **region** (`region.rs`) with the rule that decides on them. A
//! table holds the region it was built with in place, and each change of its rule
//! ([`KeyedLimiter::set_config`]) publishes a new region behind an atomic pointer and
//! moves every key's state into it, carried over (`change.rs`). Every operation loads
//! the pointer once and works on that region (`regions.rs`): a table whose rule never
//! changed pays that load and a branch. Regions are versions (`versions.rs`): an
//! operation reads any but the first pinned, and a replaced region is freed once no
//! pinned thread can still read it. The hasher and the layout are the same in every
//! region, so a key's home slot and probe order are too.
//!
//! # Files
//! - `mod.rs`: the public [`KeyedLimiter`] API, and the clock choice of each path;
//!   `try_acquire.rs`: the answer-only forms, the fastest path among them;
//!   `counts.rs`: counting the handle's requests.
//! - `layout.rs`: where each word of a region lies (sizes, offsets, allocation),
//!   prefetch and huge-page advice; `region.rs`: a region: a rule and its words, each
//!   word's address, a key's home and probe order.
//! - `regions.rs`: which region an operation on a key runs in (**Routing**).
//! - `change.rs`: changing the rule: a new region, and the sweep that moves the keys
//!   into it (**Regions as generations**); `file.rs`: a table in a file, whose rule and
//!   regions are the file's, and a change made there once for every process.
//! - `markers.rs`: what a slot's first word holds when it holds no state (empty,
//!   claimed, moved).
//! - `hasher.rs`: the keyed hash ([`KeyHasher`]).
//! - `lookup.rs`: find a key and update its state in place (**Lookup**, **Update**).
//! - `claim.rs`: claim a slot for a new key, look for rivals, confirm that a table is
//!   full (**Reclaim**, **No duplicates**, **Full**).
//! - `insert.rs`: look a key up, else insert it; install it or back out (**No
//!   duplicates**, **Reclaim**, **Writers of the old key in flight**, **Backing out**).
//! - `batch.rs`: many keys per call, their cache misses overlapped.
//! - `recover.rs`: a shared table's claim registry, and the recovery of a claim whose
//!   process died (tokens and liveness: `shared/owner.rs`).
//! - `reset.rs`: reset a key, by retiring its slot (**Retire**).
//! - `give_back.rs`: a keyed policy's admissions, and giving them back (**In place**, **An
//!   insert**).
//! - `stats.rs`: what a dashboard reads: sizes, live keys, refusals.
//!
//! The protocol's argument is written beside the code it justifies: each bold name above
//! heads a paragraph in the doc comment of the function that relies on it.
//!
//! # Progress
//! Operations on keys in the table never wait, except on a key whose own slot another
//! thread is reclaiming (its state was fresh at that thread's clock), retiring (a reset
//! of the key: `reset.rs`) or moving into a new region (a change of rule: `change.rs`).
//! An insert may wait for an insert in flight in its probe range to finish its few
//! steps; while a change of rule sweeps the keys into a new region, an insert of a new
//! key waits until the sweep ends (existing keys never wait for it). A change waits for
//! the few steps of an insert or a reset holding a slot it moves, and for an earlier
//! change to end. `tests/loom_keyed.rs` and `tests/loom_keyed_live.rs` model-check the
//! races.

mod batch;
mod build;
mod change;
mod claim;
mod counts;
mod file;
mod give_back;
mod hasher;
mod insert;
mod layout;
mod lookup;
pub(crate) mod markers;
mod recover;
mod region;
mod regions;
mod reserve;
mod reset;
mod stats;
#[cfg(all(test, not(loom)))]
mod tests;
mod try_acquire;

#[cfg(not(loom))]
pub(crate) use self::file::FileTable;
use self::file::TableFile;
pub(crate) use self::give_back::KeyedRefund;
pub use self::hasher::KeyHasher;
use self::insert::Refusal;
use self::insert::Request;
pub(crate) use self::layout::Located;
#[cfg(loom)]
use self::markers::is_marker;
use self::region::Region;
pub use self::stats::KeyedStats;
use crate::config::Config;
use crate::counters::Counters;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::{KeyedAcquireError, ReserveError};
#[cfg(loom)]
use crate::sync::Ordering;
use crate::time::{self as clock, Instant};
use crate::versions::{Kept, Versions};
use std::fmt;
use std::hash::BuildHasher;
use std::time::Duration;

/// A table larger than this is taken to live mostly outside the CPU's caches, so that the
/// slot of a key is a cache miss: `try_acquire` then prefetches the slot and reads the
/// exact time while it is fetched, and keeps the path between two calls' misses short, so
/// the CPU can overlap consecutive calls' misses. Typical last-level caches hold 8–32 MiB.
const CACHED_TABLE_BYTES: usize = 8 << 20;

/// A rate limiter per key: each key (arbitrary bytes) gets its own state under one
/// [`Config`], in a table of fixed capacity allocated once.
///
/// Up to `capacity` keys whose state is not fresh always fit, and up to
/// [`max_keys`](Self::max_keys) (`2 × capacity`) do; a key whose state is fresh (it would
/// admit as much as a new key) may be dropped at any time to make room, which changes no
/// decision. When every slot holds a live key, a request for a new key returns
/// [`KeyedAcquireError::TableFull`] and admits nothing; the caller chooses to fail open or closed.
///
/// `KeyedLimiter` is `Send + Sync` and lock-free for existing keys; see the module docs
/// of `src/keyed/` for the protocol. Memory: [`bytes_per_key`](Self::bytes_per_key) (32 for
/// GCRA) per key of capacity, allocated up front; a change of rule
/// ([`set_config`](Self::set_config)) allocates as much again, and frees the old table once
/// no thread can still be reading it, so a table holds a few tables at most.
///
/// ```
/// use librate::{Config, Instant, KeyedLimiter};
/// use std::time::Duration;
/// const MS: Duration = Duration::from_millis(1);
/// // One request per 2 s per user.
/// let users = KeyedLimiter::new(&Config::gcra(1, 2000 * MS), 1000).unwrap();
/// assert!(users.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed);
/// let denied = users.acquire_at(b"bob", 1, Instant::ZERO + 999 * MS).unwrap();
/// assert!(!denied.allowed);
/// assert_eq!(denied.retry_after(), 1001 * MS);
/// assert!(users.acquire_at(b"alice", 1, Instant::ZERO + 999 * MS).unwrap().allowed);
/// ```
pub struct KeyedLimiter<S = KeyHasher> {
    /// The region the table was built with, in place (a table whose rule never changes
    /// reads it beside the pointer, with no pointer to follow), and the one in force
    /// (`versions.rs`, `change.rs`).
    regions: Versions<Region>,
    /// The file whose rule the table follows, if it lives in one (`file.rs`).
    file: Option<TableFile>,
    capacity: u64,
    /// One for every region, so a key's home slot is the same in each.
    hasher: S,
    /// The configurations [`config`](Self::config) lent out after a change.
    configs: Kept<Config>,
    /// Whether the table is larger than [`CACHED_TABLE_BYTES`], kept so that `try_acquire`
    /// does not compute it.
    uncached: bool,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    counters: Counters,
}

impl<S> KeyedLimiter<S> {
    /// The rule every key's state follows now, for a keyed policy of several
    /// (`src/policy/keyed.rs`).
    pub(crate) fn decider(&self) -> Decider {
        self.view().current().decider
    }

    /// The configuration every key's state follows: the one this table was built from,
    /// or the last [`set_config`](Self::set_config) gave.
    pub fn config(&self) -> &Config {
        // A file's rule in force may be new here; one that cannot be adopted (hostile
        // bytes) leaves the last adopted.
        let _ = self.follow();
        self.configs.lend(&self.regions, |region| &region.config)
    }

    /// The capacity this table was built for: this many live keys always fit.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The most keys the table can hold at once (its slot count, `2 × capacity`).
    pub fn max_keys(&self) -> u64 {
        self.first().layout.slot_count as u64
    }

    /// Table memory per key of capacity, in bytes: 32 for GCRA (two 16-byte slots).
    pub fn bytes_per_key(&self) -> usize {
        self.first().layout.bytes_per_key()
    }

    /// The table's whole region, in bytes: `bytes_per_key() × capacity()` plus a control
    /// block of 128 bytes (and, in a shared table, its claim registry). A change of rule
    /// ([`set_config`](Self::set_config)) allocates a region of this size and frees the
    /// one it replaced once no thread can still be reading it.
    pub fn table_bytes(&self) -> usize {
        self.first().layout.words() * std::mem::size_of::<u64>()
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// Acquires `n` units for `key` now (`CLOCK_MONOTONIC`). `n == 0` only reports the key's
    /// state, and never inserts it.
    ///
    /// # Errors
    /// [`KeyedAcquireError::InsufficientCapacity`] if `n` exceeds the decision's `limit`;
    /// [`KeyedAcquireError::TableFull`] if `key` is new and every slot holds a live key
    /// (nothing is admitted); [`KeyedAcquireError::Shared`] only in a shared file
    /// (docs/shared.md).
    pub fn acquire(&self, key: &[u8], n: u64) -> Result<Decision, KeyedAcquireError> {
        self.counted(n, self.acquire_or_reserve(key, n, None))
    }

    /// Acquires `n` units for `key` at `at`. Keys are independent; an earlier `at`
    /// than one already seen never admits more than the latest time would.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<Decision, KeyedAcquireError> {
        let request = Request::new(at.as_nanos(), n, None);
        self.counted(
            n,
            self.acquire_located(&self.view(), self.locate(key), request, None),
        )
    }

    /// Reserves `n` units for `key` now: GCRA's leaky bucket as a queue. Admits if the
    /// caller would wait at most `max_wait` before acting; `wait_ns` says how long.
    ///
    /// # Errors
    /// [`ReserveError::Acquire`] as [`acquire`](Self::acquire); [`ReserveError::Unsupported`]
    /// for the window algorithms, which have no queue.
    pub fn reserve(
        &self,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<Decision, ReserveError<KeyedAcquireError>> {
        self.counted(
            n,
            self.acquire_or_reserve(key, n, Some(clock::nanos(max_wait))),
        )
    }

    /// [`reserve`](Self::reserve) at `at`. With `max_wait` zero it is exactly
    /// [`acquire_at`](Self::acquire_at).
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub fn reserve_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
        max_wait: Duration,
    ) -> Result<Decision, ReserveError<KeyedAcquireError>> {
        let request = Request::new(at.as_nanos(), n, Some(clock::nanos(max_wait)));
        self.counted(
            n,
            self.acquire_located(&self.view(), self.locate(key), request, None),
        )
    }

    /// An acquire (`max_wait_ns` `None`) or a reserve of `n` units for `key` now. The
    /// key's slot is prefetched before the clock is read, so that the read (slow next to
    /// a cached load, and a barrier to the CPU's running ahead) overlaps the slot's trip
    /// from memory.
    #[inline]
    fn acquire_or_reserve<E: Refusal>(
        &self,
        key: &[u8],
        n: u64,
        max_wait_ns: Option<u64>,
    ) -> Result<Decision, E> {
        let key = self.locate(key);
        let view = self.view();
        view.current().prefetch_home(key);
        let request = Request::new(clock::now_ns(), n, max_wait_ns);
        self.acquire_located(&view, key, request, None)
    }

    /// How many slots hold a state under `key`'s fingerprint: the model checks' proof that
    /// a key never has two. Exists only under `cfg(loom)`, which is not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn slots_holding(&self, key: &[u8]) -> usize {
        let fingerprint = self.locate(key).fingerprint;
        let view = self.view();
        let region = view.current();
        (0..region.layout.slot_count)
            .filter(|&slot| {
                // Acquire: pairs with the install's Release store, for the fingerprint.
                let first = region.first_word(slot).load(Ordering::Acquire);
                !is_marker(first)
                    && region.fingerprint_word(slot).load(Ordering::Relaxed) == fingerprint
            })
            .count()
    }

    /// How many slots are claimed (hold an insert's marker): the model checks' proof that
    /// no claim outlives its claimer for good. Exists only under `cfg(loom)`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn claimed_slots(&self) -> usize {
        let view = self.view();
        let region = view.current();
        (0..region.layout.slot_count)
            .filter(|&slot| {
                // Relaxed: read after every thread of the model has been joined.
                markers::is_installing(region.first_word(slot).load(Ordering::Relaxed))
            })
            .count()
    }
}

impl<S> fmt::Debug for KeyedLimiter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLimiter")
            .field("config", self.config())
            .field("capacity", &self.capacity)
            .field("max_keys", &self.max_keys())
            .field("bytes_per_key", &self.bytes_per_key())
            .finish_non_exhaustive()
    }
}
