//! The errors of a request: an acquire's, and what a reserve, a request of one cost per
//! rule and a wait add to it. A denial is none of them: it is a
//! [`Decision`](crate::Decision) with `allowed == false`.
//!
//! Each acquire's error is a unit struct or a fieldless enum of one byte, so
//! `Result<bool, AcquireError>` is two bytes and `Result<Decision, _>` no larger than a
//! `Decision`: the hot path's result comes back in registers (`tests/errors.rs` holds
//! them to those sizes). The operations that add a failure wrap the acquire's error of
//! their subject ([`ReserveError<E>`], [`CostsError<E>`], [`WaitError<E>`]), so each
//! says only what it can produce.

use super::config::ConfigError;
use super::shared::SharedError;
use std::fmt;

/// `n` exceeds the most the limiter (every rule of a policy) can ever admit at once, its
/// decision's `limit`: no amount of waiting would admit it. The only error of an acquire
/// on a [`Policy`](crate::Policy) (whose limiters are its own, in no file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InsufficientCapacity;

impl fmt::Display for InsufficientCapacity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cost exceeds the limiter's capacity")
    }
}

impl std::error::Error for InsufficientCapacity {}

/// Why an acquire on a [`Limiter`](crate::Limiter) gave no decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AcquireError {
    /// As [`InsufficientCapacity`]: `n` exceeds the limit.
    InsufficientCapacity,
    /// A limiter in a shared file only, after a change of its rule: the file kept the
    /// request from being decided.
    Shared(SharedError),
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InsufficientCapacity => InsufficientCapacity.fmt(f),
            Self::Shared(why) => why.fmt(f),
        }
    }
}

impl std::error::Error for AcquireError {}

impl From<InsufficientCapacity> for AcquireError {
    fn from(_: InsufficientCapacity) -> Self {
        Self::InsufficientCapacity
    }
}

impl From<SharedError> for AcquireError {
    fn from(why: SharedError) -> Self {
        Self::Shared(why)
    }
}

/// Why an acquire on a key of a [`KeyedLimiter`](crate::KeyedLimiter) or a
/// [`KeyedPolicy`](crate::KeyedPolicy) gave no decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyedAcquireError {
    /// As [`InsufficientCapacity`]: `n` exceeds the limit.
    InsufficientCapacity,
    /// The key is new and every slot it may take holds a live key: nothing was admitted,
    /// and the caller chooses to fail open or closed.
    TableFull,
    /// A table in a shared file only: the file kept the request from being decided.
    Shared(SharedError),
}

impl fmt::Display for KeyedAcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InsufficientCapacity => InsufficientCapacity.fmt(f),
            Self::TableFull => f.write_str(TABLE_FULL),
            Self::Shared(why) => why.fmt(f),
        }
    }
}

impl std::error::Error for KeyedAcquireError {}

impl From<InsufficientCapacity> for KeyedAcquireError {
    fn from(_: InsufficientCapacity) -> Self {
        Self::InsufficientCapacity
    }
}

impl From<SharedError> for KeyedAcquireError {
    fn from(why: SharedError) -> Self {
        Self::Shared(why)
    }
}

/// Why a key of a keyed table or keyed policy could not be reset (only ever in a shared
/// file, where the reset's slot must be claimed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResetError {
    /// The slot the reset needs stayed taken by other keys' inserts.
    TableFull,
    /// The file kept the reset from being made.
    Shared(SharedError),
}

impl fmt::Display for ResetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TableFull => f.write_str(TABLE_FULL),
            Self::Shared(why) => why.fmt(f),
        }
    }
}

impl std::error::Error for ResetError {}

impl From<SharedError> for ResetError {
    fn from(why: SharedError) -> Self {
        Self::Shared(why)
    }
}

/// The sentences of the failures several types share.
pub(super) const TABLE_FULL: &str = "keyed table is full of live keys";
pub(super) const UNSUPPORTED: &str =
    "operation not supported by this limiter (a reserve needs GCRA)";
pub(super) const TIMER: &str =
    "a thread of librate's (its timer, a lease's renewer) could not be started";

/// Why a reserve gave no decision: the acquire's error of its subject `E`
/// ([`AcquireError`], or for a key [`KeyedAcquireError`]), or no queue to wait in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReserveError<E = AcquireError> {
    /// What an acquire of the same request fails with.
    Acquire(E),
    /// The algorithm has no queue: only GCRA reserves (the window algorithms and the log
    /// decide each request at once).
    Unsupported,
}

impl<E: fmt::Display> fmt::Display for ReserveError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Acquire(why) => why.fmt(f),
            Self::Unsupported => f.write_str(UNSUPPORTED),
        }
    }
}

impl<E: std::error::Error> std::error::Error for ReserveError<E> {}

impl<E> From<E> for ReserveError<E> {
    fn from(why: E) -> Self {
        Self::Acquire(why)
    }
}

/// A shared file's trouble, as the reserve gives it (`?` in a function returning it).
impl From<SharedError> for ReserveError<AcquireError> {
    fn from(why: SharedError) -> Self {
        Self::Acquire(AcquireError::Shared(why))
    }
}

/// A shared file's trouble, as the reserve on a key gives it.
impl From<SharedError> for ReserveError<KeyedAcquireError> {
    fn from(why: SharedError) -> Self {
        Self::Acquire(KeyedAcquireError::Shared(why))
    }
}

/// Why a request of one cost per rule (`acquire_costs`) gave no decision: the acquire's
/// error of its policy `E`, or not one cost per rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CostsError<E = InsufficientCapacity> {
    /// What an acquire fails with: a cost above its rule's limit, or for a key a full
    /// table.
    Acquire(E),
    /// The costs given are not as many as the rules; converted into a
    /// [`crate::Error`], it is [`ConfigError::PolicyCosts`], whose sentence it writes.
    CostCount {
        /// The costs given.
        costs: usize,
    },
}

impl<E: fmt::Display> fmt::Display for CostsError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Acquire(ref why) => why.fmt(f),
            Self::CostCount { costs } => ConfigError::PolicyCosts { costs }.fmt(f),
        }
    }
}

impl<E: std::error::Error> std::error::Error for CostsError<E> {}

impl<E> From<E> for CostsError<E> {
    fn from(why: E) -> Self {
        Self::Acquire(why)
    }
}

/// Why an async wait (`until_ready_async`) gave no decision: the acquire's error of its
/// subject `E`, or no timer to sleep on. Not `Clone` nor `Eq`: it may hold an
/// [`std::io::Error`].
#[derive(Debug)]
#[non_exhaustive]
pub enum WaitError<E = AcquireError> {
    /// What an acquire of the same request fails with.
    Acquire(E),
    /// librate's timer thread could not be started (the units the wait reserved were
    /// given back): the operating system's error.
    Timer(std::io::Error),
}

impl<E: fmt::Display> fmt::Display for WaitError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Acquire(why) => why.fmt(f),
            Self::Timer(_) => f.write_str(TIMER),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for WaitError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Acquire(why) => why.source(),
            Self::Timer(cause) => Some(cause),
        }
    }
}

impl<E> From<E> for WaitError<E> {
    fn from(why: E) -> Self {
        Self::Acquire(why)
    }
}
