//! librate: lock-free rate limiters whose whole state is atomics, with a C ABI.
//!
//! Four algorithms (GCRA, fixed window, sliding window counter, sliding window log) share
//! one [`Decision`] shape. Every operation takes a cost `n` and, in its `_at` form, the
//! time `now_ns` from the caller; the plain forms read `CLOCK_MONOTONIC` once, at the edge.
//! The semantics are fixed in DESIGN.md; the C header is `include/rate.h`.
//!
//! ```
//! use rate::{Config, Limiter};
//! const SECOND: u64 = 1_000_000_000;
//! // Bob may make one request per 2 s.
//! let bob = Limiter::new(&Config::gcra(1, 2 * SECOND)).unwrap();
//! assert!(bob.acquire_at(1, 0).unwrap().allowed);
//! assert!(!bob.acquire_at(1, SECOND).unwrap().allowed);
//! assert!(bob.acquire_at(1, 2 * SECOND).unwrap().allowed);
//! ```
//!
//! Pick an algorithm by the guarantee you need. GCRA spaces units evenly with bursts up
//! to `burst`. The fixed window caps each calendar window but lets up to twice the limit
//! through around a window edge; the sliding window counter smooths that edge with a
//! weighted estimate; the sliding log is exact over every period, at 16 bytes per unit of
//! limit:
//!
//! ```
//! use rate::{Algorithm, Config, Limiter};
//! const SECOND: u64 = 1_000_000_000;
//! // 10 per second; a flood of 10 just before the edge at 1 s, then 10 just after it.
//! let admitted_within_one_second = |algorithm| {
//!     let limiter = Limiter::new(&Config::new(algorithm, 10, SECOND)).unwrap();
//!     let before = limiter.acquire_at(10, SECOND - 1).unwrap().allowed;
//!     let after = (0..10).filter(|_| limiter.acquire_at(1, SECOND).unwrap().allowed);
//!     10 * u64::from(before) + after.count() as u64
//! };
//! assert_eq!(admitted_within_one_second(Algorithm::FixedWindow), 20);
//! assert_eq!(admitted_within_one_second(Algorithm::SlidingWindow), 10);
//! assert_eq!(admitted_within_one_second(Algorithm::SlidingLog), 10);
//! ```

mod cell;
mod clock;
mod clock_hint;
mod config;
mod decision;
mod divisor;
mod error;
pub mod ffi;
mod fixed_window;
mod gcra;
mod keyed;
mod limiter;
mod policy;
mod sliding_log;
mod sliding_window;
mod sync;
mod window;

pub use clock::now_ns;
pub use config::{Algorithm, Config};
pub use decision::Decision;
pub use error::{ConfigError, Error};
pub use keyed::KeyedLimiter;
pub use limiter::Limiter;
