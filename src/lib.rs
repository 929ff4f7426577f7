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

mod cell;
mod clock;
mod config;
mod decision;
mod error;
pub mod ffi;
mod gcra;
mod keyed;
mod limiter;
mod policy;
mod sync;

pub use clock::now_ns;
pub use config::{Algorithm, Config};
pub use decision::Decision;
pub use error::{ConfigError, Error};
pub use keyed::KeyedLimiter;
pub use limiter::Limiter;
