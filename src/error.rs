//! Typed errors of the Rust API, one type per kind of operation, each with only the
//! failures that operation can produce (docs/rust.md, Errors): building from a
//! configuration, [`ConfigError`]; an acquire, [`AcquireError`] (on a policy,
//! [`InsufficientCapacity`]; on a key, [`KeyedAcquireError`]); a reserve, a request of
//! one cost per rule and an async wait add theirs ([`ReserveError`], [`CostsError`],
//! [`WaitError`]); a key's reset, [`ResetError`]; opening a shared file, [`OpenError`]
//! (its I/O error a [`FileError`] naming the path); a change of rule, [`ChangeError`]; a
//! shared file's trouble at run time, [`SharedError`]. [`Error`] is every one of them,
//! for a caller that lifts them all with `?`. The C layer maps each to a fixed `RATE_E_*`
//! number.

mod acquire;
mod breach;
mod config;
mod shared;

pub use acquire::{
    AcquireError, CostsError, InsufficientCapacity, KeyedAcquireError, ReserveError, ResetError,
    WaitError,
};
pub(crate) use breach::Breach;
pub use config::{Bound, ConfigError, Field, OutOfBounds};
pub use shared::{ChangeError, FileError, OpenError, SharedError};

use std::fmt;
use std::path::PathBuf;

/// Every way an operation can fail: each operation's own error converts into it (`From`),
/// so `?` lifts any of them into a function returning `Result<_, librate::Error>`. A denial
/// is not an error: it is a [`Decision`](crate::Decision) with `allowed == false`. Not
/// `Clone` nor `Eq`: it may hold an [`std::io::Error`].
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid ([`ConfigError`] names the field, value and bound).
    InvalidConfig(ConfigError),
    /// `n` exceeds the most the limiter can ever admit at once ([`InsufficientCapacity`]).
    InsufficientCapacity,
    /// A keyed table is full of live keys and cannot take a new one.
    TableFull,
    /// A reserve on an algorithm without a queue ([`ReserveError::Unsupported`]).
    Unsupported,
    /// A shared file kept an operation from proceeding ([`SharedError`]).
    Shared(SharedError),
    /// The file is not a librate table of this layout, kind, rule and size; it was left
    /// untouched ([`OpenError::Incompatible`]).
    Incompatible {
        /// The file's path, as given.
        path: PathBuf,
    },
    /// The operating system refused a shared file ([`FileError`] names its path).
    Io(FileError),
    /// A thread of librate's could not be started: its timer ([`WaitError::Timer`]), or
    /// a lease's renewer (`lease::LeasedLimiter::open`).
    Timer(std::io::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidConfig(why) => write!(f, "invalid configuration: {why}"),
            Self::InsufficientCapacity => InsufficientCapacity.fmt(f),
            Self::TableFull => f.write_str(acquire::TABLE_FULL),
            Self::Unsupported => f.write_str(acquire::UNSUPPORTED),
            Self::Shared(why) => why.fmt(f),
            Self::Incompatible { path } => shared::write_incompatible(f, path),
            Self::Io(error) => error.fmt(f),
            Self::Timer(_) => f.write_str(acquire::TIMER),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::InvalidConfig(why) => Some(why),
            Self::Io(error) => Some(error.io_error()),
            Self::Timer(error) => Some(error),
            _ => None,
        }
    }
}

impl From<ConfigError> for Error {
    fn from(why: ConfigError) -> Self {
        Self::InvalidConfig(why)
    }
}

impl From<InsufficientCapacity> for Error {
    fn from(_: InsufficientCapacity) -> Self {
        Self::InsufficientCapacity
    }
}

impl From<AcquireError> for Error {
    fn from(why: AcquireError) -> Self {
        match why {
            AcquireError::InsufficientCapacity => Self::InsufficientCapacity,
            AcquireError::Shared(why) => Self::Shared(why),
        }
    }
}

impl From<SharedError> for Error {
    fn from(why: SharedError) -> Self {
        Self::Shared(why)
    }
}

impl From<FileError> for Error {
    fn from(error: FileError) -> Self {
        Self::Io(error)
    }
}

impl From<KeyedAcquireError> for Error {
    fn from(why: KeyedAcquireError) -> Self {
        match why {
            KeyedAcquireError::InsufficientCapacity => Self::InsufficientCapacity,
            KeyedAcquireError::TableFull => Self::TableFull,
            KeyedAcquireError::Shared(why) => Self::Shared(why),
        }
    }
}

impl From<ResetError> for Error {
    fn from(why: ResetError) -> Self {
        match why {
            ResetError::TableFull => Self::TableFull,
            ResetError::Shared(why) => Self::Shared(why),
        }
    }
}

impl<E: Into<Error>> From<ReserveError<E>> for Error {
    fn from(why: ReserveError<E>) -> Self {
        match why {
            ReserveError::Acquire(why) => why.into(),
            ReserveError::Unsupported => Self::Unsupported,
        }
    }
}

impl<E: Into<Error>> From<CostsError<E>> for Error {
    fn from(why: CostsError<E>) -> Self {
        match why {
            CostsError::Acquire(why) => why.into(),
            CostsError::CostCount { costs } => {
                Self::InvalidConfig(ConfigError::PolicyCosts { costs })
            }
        }
    }
}

impl<E: Into<Error>> From<WaitError<E>> for Error {
    fn from(why: WaitError<E>) -> Self {
        match why {
            WaitError::Acquire(why) => why.into(),
            WaitError::Timer(error) => Self::Timer(error),
        }
    }
}

impl From<OpenError> for Error {
    fn from(why: OpenError) -> Self {
        match why {
            OpenError::Config(why) => Self::InvalidConfig(why),
            OpenError::Incompatible { path } => Self::Incompatible { path },
            OpenError::Io(error) => Self::Io(error),
        }
    }
}

impl From<ChangeError> for Error {
    fn from(why: ChangeError) -> Self {
        match why {
            ChangeError::Config(why) => Self::InvalidConfig(why),
            ChangeError::Shared(why) => Self::Shared(why),
        }
    }
}

#[cfg(test)]
mod tests;
