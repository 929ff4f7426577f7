//! librate: lock-free rate limiters whose whole state is atomics, with a C ABI.
//!
//! Four algorithms (GCRA, fixed window, sliding window counter, sliding window log) share
//! one [`Decision`] shape. Every operation takes a cost `n` and, in its `_at` form, the
//! time from the caller, an [`Instant`]; the plain forms read `CLOCK_MONOTONIC` once, at
//! the edge. Periods and waits are [`std::time::Duration`]s.
//! The semantics are fixed in docs/decision.md; the C header is `include/rate.h`.
//!
//! ```
//! use librate::{Config, Instant, Limiter};
//! use std::time::Duration;
//! const SECOND: Duration = Duration::from_secs(1);
//! // Bob may make one request per 2 s.
//! let bob = Limiter::new(&Config::gcra(1, 2 * SECOND)).unwrap();
//! assert!(bob.acquire_at(1, Instant::ZERO).unwrap().allowed);
//! assert!(!bob.acquire_at(1, Instant::ZERO + SECOND).unwrap().allowed);
//! assert!(bob.acquire_at(1, Instant::ZERO + 2 * SECOND).unwrap().allowed);
//! ```
//!
//! # Layers
//! Each layer imports only the layers below it. The C ABI (`include/rate.h`, `librate.so`)
//! is a crate of its own above them all, `librate-ffi`: this crate knows nothing of C.
//!
//! ```text
//!  wait.rs         until_ready and until_ready_async on each of the tiers below: a
//!   │              GCRA reserve slept out, or acquires retried (docs/rust.md, Waiting)
//!  policy.rs       Policy: several rules decided all or nothing, over limiters;
//!  policy/         the engine they share, and KeyedPolicy: per-key rules in keyed
//!   │              tables and global rules in limiters, for one key at a time
//!  limiter.rs      Limiter: a decider over its own padded words, with a clock hint
//!  generations.rs  a limiter's rule and words as one generation, replaced whole by a
//!   │              change of rule (the old words frozen, carried over)
//!  keyed/          KeyedLimiter: a bounded lock-free table of per-key states, and in a
//!   │              shared table, its claim registry and crash recovery
//!  versions.rs     versions of a rule and its state, for both: the first in place, the
//!   │              one in force, replaced ones freed once no pinned thread can read them
//!  shared/         the file every process maps: create or attach, validate, reset
//!   │              (header.rs: what it is and enforces; file.rs: making it)
//!  replaced.rs     the marker a change of rule leaves in a limiter's old words
//!   │
//!  decider.rs      Decider: a validated config, dispatching to the algorithm's store
//!   │
//!  state/          how each algorithm's state lives in atomic words, and is read,
//!   │              decided on and swapped (a private cell or a keyed slot alike)
//!  algorithm/      the pure rules of docs/decision.md: (state, now, n) -> decision, new state
//!   │
//!  time/           the time source: exact and coarse clocks, bounds, slack, hint
//!   │
//!  config.rs  decision.rs  error.rs  sync.rs (the only file naming atomic types)
//! ```
//!
//! # Vocabulary
//! - **acquire**: decide a request of `n` units and report the whole [`Decision`];
//!   **try_acquire**: decide it and report only whether it was admitted; **reserve**:
//!   GCRA's queue, admitting a request that waits at most `max_wait`; **until_ready**:
//!   wait, sleeping, until a request is admitted. **`_at`**: at a
//!   time the caller gives; without it the library clock is read.
//! - **decide**: an algorithm's pure rule on a state it was given; **settle**: decide one
//!   request for every instant of an interval at once (the coarse clock's bounds);
//!   **fresh**: a state that decides as a new one would (docs/keyed.md).
//! - **state**: an algorithm's words; its **first word** only grows and orders every
//!   change; **tenancy**: whose state the words still are (a keyed slot can be reclaimed).
//! - Keyed tables: **locate** a key (compute its fingerprint and home slot); **find** the
//!   slot holding a key; **insert** a new key: **claim** a slot (CAS its first word to the
//!   claimer's `installing` marker), then **install** the key (write its fingerprint and state and
//!   publish them) or **back out** (give the slot back exactly as it was); **reclaim** a
//!   slot whose state is fresh, dropping its key (docs/keyed.md). In a shared table an insert
//!   is a **claimant** holding a registry entry; a waiter on a claim whose process died
//!   **recovers** the slot (puts back what the claim replaced).
//! - **change** a rule: replace a limiter's, a keyed table's or a policy's configuration
//!   at run time, **carrying over** its state (GCRA keeps its tokens, the window counters
//!   what they count); the replaced words are a **generation** that decisions still in
//!   flight may read (a table's is a **region**, into which a change **sweeps** its keys,
//!   **moving** them slot by slot). **Allowance**: a rule whose period never ends ([`Config::FOREVER`]).
//! - **reset**: make a limiter, or one key of a table, decide as a new one; a table
//!   **retires** a reset key's slot (claims it, names it no key's, gives it back), and
//!   the former state there is reclaimed once fresh. **Stats**: what a table reports for
//!   dashboards (sizes, live keys, `TableFull` refusals).
//!
//! # Choosing an algorithm
//! Pick an algorithm by the guarantee you need. GCRA spaces units evenly with bursts up
//! to `burst`. The fixed window caps each calendar window but lets up to twice the limit
//! through around a window edge; the sliding window counter smooths that edge with a
//! weighted estimate; the sliding log is exact over every period, at 16 bytes per unit of
//! limit:
//!
//! ```
//! use librate::{Algorithm, Config, Instant, Limiter};
//! use std::time::Duration;
//! const SECOND: Duration = Duration::from_secs(1);
//! // 10 per second; a flood of 10 just before the edge at 1 s, then 10 just after it.
//! let edge = Instant::ZERO + SECOND;
//! let admitted_within_one_second = |algorithm| {
//!     let limiter = Limiter::new(&Config::new(algorithm, 10, SECOND)).unwrap();
//!     let before = limiter.acquire_at(10, edge - Duration::from_nanos(1)).unwrap().allowed;
//!     let after = (0..10).filter(|_| limiter.acquire_at(1, edge).unwrap().allowed);
//!     10 * u64::from(before) + after.count() as u64
//! };
//! assert_eq!(admitted_within_one_second(Algorithm::FixedWindow), 20);
//! assert_eq!(admitted_within_one_second(Algorithm::SlidingWindow), 10);
//! assert_eq!(admitted_within_one_second(Algorithm::SlidingLog), 10);
//! ```

#![deny(missing_docs)]

mod algorithm;
mod config;
mod counters;
mod decider;
mod decision;
mod describe;
mod error;
mod generations;
mod keyed;
pub mod lease;
mod limiter;
#[cfg(feature = "metrics")]
pub mod metrics;
mod policy;
pub mod redis;
mod replaced;
mod reservation;
mod shared;
mod state;
mod sync;
mod time;
#[cfg(feature = "tower")]
pub mod tower;
mod versions;
mod wait;

/// The crate's README (crates.io), whose example runs as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.crates.md")]
struct ReadmeExample;

pub use config::{Algorithm, Config};
pub use counters::{Counts, RuleCounts};
pub use decision::Decision;
pub use describe::describe_file;
pub use error::{
    AcquireError, Bound, ChangeError, ConfigError, CostsError, Error, Field, FileError,
    InsufficientCapacity, KeyedAcquireError, OpenError, OutOfBounds, ReserveError, ResetError,
    SharedError, WaitError,
};
pub use keyed::{KeyHasher, KeyedLimiter, KeyedStats};
pub use lease::LeaseRule;
pub use limiter::Limiter;
pub use policy::{KeyedPolicy, KeyedRule, Policy, PolicyDecision, MAX_RULES};
pub use reservation::Reservation;
#[doc(hidden)]
pub use reservation::RESERVATION_WORDS;
#[cfg(any(loom, feature = "testing"))]
#[doc(hidden)]
pub use shared::owner::crashes;
pub use time::{clock_reads_inline, clock_source, now_ns, ClockSource, Instant};
