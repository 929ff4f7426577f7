//! Keyed limiters: one bounded, lock-free table of per-key state for every algorithm
//! (DESIGN §5).
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
//! # Files
//! - `mod.rs`: the public [`KeyedLimiter`] API, and the clock choice of each path.
//! - `layout.rs`: the region: allocation, where each word lies, home and probe order,
//!   prefetch and huge-page advice.
//! - `hasher.rs`: the keyed hash ([`KeyHasher`]).
//! - `lookup.rs`: find a key and update its state in place (**Lookup**, **Update**).
//! - `claim.rs`: claim a slot for a new key, look for rivals, confirm that a table is
//!   full (**Reclaim**, **No duplicates**, **Full**).
//! - `insert.rs`: look a key up, else insert it; install it or back out (**No
//!   duplicates**, **Reclaim**, **Writers of the old key in flight**, **Backing out**).
//! - `batch.rs`: many keys per call, their cache misses overlapped.
//! - `recover.rs`: a shared table's claim registry, and the recovery of a claim whose
//!   process died; `owner.rs`: process tokens and liveness.
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
//! thread is reclaiming (its state was fresh at that thread's clock) or retiring (a reset
//! of the key: `reset.rs`). An insert may wait for an insert in flight in its probe range
//! to finish its few steps. `tests/loom_keyed.rs` model-checks the races.

mod batch;
mod build;
mod claim;
mod give_back;
mod hasher;
mod insert;
mod layout;
mod lookup;
mod owner;
mod recover;
mod reset;
mod stats;

#[cfg(not(loom))]
pub(crate) use self::build::FileTable;
pub(crate) use self::give_back::KeyedRefund;
pub use self::hasher::KeyHasher;
use self::insert::Request;
pub(crate) use self::layout::Located;
use self::layout::{Layout, SLOTS_PER_KEY};
use self::lookup::{Evicted, Tenant};
#[cfg(loom)]
pub use self::owner::crashes;
pub use self::stats::KeyedStats;
use crate::config::Config;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::Error;
#[cfg(not(loom))]
use crate::shared::Mapping;
#[cfg(loom)]
use crate::state::is_marker;
use crate::sync::AtomicU64;
#[cfg(loom)]
use crate::sync::Ordering;
use crate::time::{self as clock, Monotonic};
use std::fmt;
use std::hash::BuildHasher;
use std::ptr::NonNull;
#[cfg(not(loom))]
use std::sync::Arc;

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
/// [`Error::TableFull`] and admits nothing; the caller chooses to fail open or closed.
///
/// `KeyedLimiter` is `Send + Sync` and lock-free for existing keys; see the module docs
/// of `src/keyed/` for the protocol. Memory: [`bytes_per_key`](Self::bytes_per_key) (32 for
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
pub struct KeyedLimiter<S = KeyHasher> {
    decider: Decider,
    config: Config,
    capacity: u64,
    layout: Layout,
    /// Index of slot 0's first word in the region (`layout.slots_start()`, kept so the
    /// hot path does not compute it).
    base: usize,
    /// The region's first word: the control block, then the registry and the slots
    /// (`layout.rs`), `layout.words()` of them, in `_memory`.
    words: NonNull<AtomicU64>,
    hasher: S,
    /// Owns the region: kept, never read.
    _memory: Memory,
}

/// Where a table's region lives.
enum Memory {
    /// This process's heap.
    Private { _words: Box<[AtomicU64]> },
    /// A file every process that opens it maps.
    #[cfg(not(loom))]
    Shared { _mapping: Arc<Mapping> },
}

// SAFETY: `words` points into `_memory`, which the table owns and which never moves (a
// heap block or a mapping); the words are only ever accessed atomically.
unsafe impl<S: Send> Send for KeyedLimiter<S> {}
// SAFETY: as above.
unsafe impl<S: Sync> Sync for KeyedLimiter<S> {}

impl<S> KeyedLimiter<S> {
    /// The region's words.
    #[inline(always)]
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: `words` points to `layout.words()` words owned by `_memory` for this
        // value's life, aligned, and only ever accessed atomically.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr(), self.layout.words()) }
    }

    /// The rule every key's state follows, for a keyed policy of several
    /// (`src/policy/keyed.rs`).
    pub(crate) fn decider(&self) -> &Decider {
        &self.decider
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
        self.layout.slot_count as u64
    }

    /// Table memory per key of capacity, in bytes: 32 for GCRA (two 16-byte slots).
    pub fn bytes_per_key(&self) -> usize {
        SLOTS_PER_KEY as usize * self.layout.stride * std::mem::size_of::<u64>()
    }

    /// The table's whole region, in bytes: `bytes_per_key() × capacity()` plus a control
    /// block of 128 bytes (and, in a shared table, its claim registry).
    pub fn table_bytes(&self) -> usize {
        self.layout.words() * std::mem::size_of::<u64>()
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
        self.acquire_or_reserve(key, n, None)
    }

    /// Acquires `n` units for `key` at `now_ns`. Keys are independent; an earlier `now_ns`
    /// than one already seen never admits more than the latest time would.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(&self, key: &[u8], n: u64, now_ns: u64) -> Result<Decision, Error> {
        let request = Request::checked(&self.decider, now_ns, n, None)?;
        self.acquire_located(self.locate(key), request, false)
    }

    /// Acquires `n` units for `key` now and says only whether they were admitted: the
    /// fastest path. For a key already in the table it decides on the coarse clock
    /// whenever that settles the outcome, as [`Limiter::try_acquire`](crate::limiter::Limiter::try_acquire)
    /// does; the outcome is always the one [`acquire`](Self::acquire) would give.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn try_acquire(&self, key: &[u8], n: u64) -> Result<bool, Error> {
        self.decider.check(n, None)?;
        let key = self.locate(key);
        if self.table_bytes() > CACHED_TABLE_BYTES {
            // The key's slot is most likely a cache miss, which costs several clock reads:
            // read the exact time while the line travels rather than the coarse time now
            // and perhaps the exact time after it arrives.
            self.prefetch_home(key);
            return self.try_acquire_located_at(key, clock::now_ns(), n);
        }
        self.try_acquire_located(
            key,
            n,
            |state, tenant| self.decider.try_acquire(state, tenant, Monotonic, n),
            clock::now_ns,
        )
    }

    /// A try_acquire of `n` (checked) at `now_ns` for `key`.
    #[inline]
    fn try_acquire_located_at(&self, key: Located, now_ns: u64, n: u64) -> Result<bool, Error> {
        if n == 0 {
            // A query: admitted, and a keyed query never inserts its key.
            return Ok(true);
        }
        self.try_acquire_located(
            key,
            n,
            |state, tenant| self.decider.try_acquire_at(state, tenant, now_ns, n),
            || now_ns,
        )
    }

    /// A try_acquire of `n` (checked) for `key`: by `decide` on its state if the key is in
    /// the table, else by an insert decided at `now()`.
    #[inline(always)]
    fn try_acquire_located(
        &self,
        key: Located,
        n: u64,
        decide: impl Fn(&[AtomicU64], &Tenant<'_>) -> Result<bool, Evicted>,
        now: impl FnOnce() -> u64,
    ) -> Result<bool, Error> {
        match self.on_existing(key, 0, decide) {
            Some(allowed) => Ok(allowed),
            None => {
                let request = Request::checked(&self.decider, now(), n, None)?;
                Ok(self.acquire_located(key, request, true)?.allowed)
            }
        }
    }

    /// Reserves `n` units for `key` now: GCRA's leaky bucket as a queue. Admits if the
    /// caller would wait at most `max_wait_ns` before acting; `wait_ns` says how long.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire), and [`Error::Unsupported`] for the window algorithms.
    pub fn reserve(&self, key: &[u8], n: u64, max_wait_ns: u64) -> Result<Decision, Error> {
        self.acquire_or_reserve(key, n, Some(max_wait_ns))
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
        let request = Request::checked(&self.decider, now_ns, n, Some(max_wait_ns))?;
        self.acquire_located(self.locate(key), request, false)
    }

    /// An acquire (`max_wait_ns` `None`) or a reserve of `n` units for `key` now. The
    /// key's slot is prefetched before the clock is read, so that the read (slow next to
    /// a cached load, and a barrier to the CPU's running ahead) overlaps the slot's trip
    /// from memory.
    #[inline]
    fn acquire_or_reserve(
        &self,
        key: &[u8],
        n: u64,
        max_wait_ns: Option<u64>,
    ) -> Result<Decision, Error> {
        let key = self.locate(key);
        self.prefetch_home(key);
        let request = Request::checked(&self.decider, clock::now_ns(), n, max_wait_ns)?;
        self.acquire_located(key, request, false)
    }

    /// How many slots hold a state under `key`'s fingerprint: the model checks' proof that
    /// a key never has two. Exists only under `cfg(loom)`, which is not public API.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn slots_holding(&self, key: &[u8]) -> usize {
        let fingerprint = self.locate(key).fingerprint;
        (0..self.layout.slot_count)
            .filter(|&slot| {
                // Acquire: pairs with the install's Release store, for the fingerprint.
                let first = self.first_word(slot).load(Ordering::Acquire);
                !is_marker(first)
                    && self.fingerprint_word(slot).load(Ordering::Relaxed) == fingerprint
            })
            .count()
    }

    /// How many slots are claimed (hold an insert's marker): the model checks' proof that
    /// no claim outlives its claimer for good. Exists only under `cfg(loom)`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn claimed_slots(&self) -> usize {
        (0..self.layout.slot_count)
            .filter(|&slot| {
                // Relaxed: read after every thread of the model has been joined.
                crate::state::is_installing(self.first_word(slot).load(Ordering::Relaxed))
            })
            .count()
    }
}

impl<S> fmt::Debug for KeyedLimiter<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedLimiter")
            .field("config", &self.config)
            .field("capacity", &self.capacity)
            .field("max_keys", &self.layout.slot_count)
            .field("bytes_per_key", &self.bytes_per_key())
            .finish_non_exhaustive()
    }
}
