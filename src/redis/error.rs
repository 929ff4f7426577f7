//! [`RedisError`]: why a call to Redis gave no decision (the `redis` cargo feature).

use std::fmt;

use crate::error::{InsufficientCapacity, ReserveError};

/// Why a call to Redis gave no decision.
#[derive(Debug)]
pub enum RedisError {
    /// The request was refused before reaching Redis, as the in-process limiter refuses
    /// it: `n` above the limit ([`ReserveError::Acquire`]), or a reserve on a window
    /// algorithm ([`ReserveError::Unsupported`]).
    Rate(ReserveError<InsufficientCapacity>),
    /// Redis could not be reached or answered an error (a timeout, a refused connection,
    /// OOM, READONLY, a key holding something else).
    Redis(redis::RedisError),
    /// Redis answered something the script never returns.
    Reply(String),
}

impl From<ReserveError<InsufficientCapacity>> for RedisError {
    fn from(error: ReserveError<InsufficientCapacity>) -> Self {
        Self::Rate(error)
    }
}

impl From<InsufficientCapacity> for RedisError {
    fn from(error: InsufficientCapacity) -> Self {
        Self::Rate(ReserveError::Acquire(error))
    }
}

impl From<redis::RedisError> for RedisError {
    fn from(error: redis::RedisError) -> Self {
        Self::Redis(error)
    }
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rate(error) => error.fmt(f),
            Self::Redis(error) => write!(f, "redis: {error}"),
            Self::Reply(reply) => write!(f, "redis: unexpected reply {reply}"),
        }
    }
}

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Rate(error) => Some(error),
            Self::Redis(error) => Some(error),
            Self::Reply(_) => None,
        }
    }
}
