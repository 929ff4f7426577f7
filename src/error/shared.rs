//! The errors of the shared-file tier (docs/shared.md) and of a change of rule: opening a
//! file ([`OpenError`], whose I/O error names the path, [`FileError`]), a file that keeps
//! a running operation from proceeding ([`SharedError`]), and a change ([`ChangeError`]).

use super::config::ConfigError;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a table in a shared file could not decide, reset or change at run time: the file
/// opened fine, but another process, or bytes another writer put there, stand in the way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SharedError {
    /// Another process's change of rule, or a decision of a stopped process, held this
    /// operation up for seconds; nothing was changed. Its errno is `EBUSY`.
    Busy,
    /// Every entry of the file's registry of processes belongs to a live process, so this
    /// one cannot take part in a change. Its errno is `EUSERS`.
    RegistryFull,
    /// The file's rule in force is no rule of this table: bytes another writer put there.
    Incompatible,
}

impl SharedError {
    /// The `errno` the operating system's words for this are: `EBUSY` for
    /// [`Busy`](Self::Busy), `EUSERS` for [`RegistryFull`](Self::RegistryFull) (the C ABI
    /// sets it with `RATE_E_IO`); `None` for [`Incompatible`](Self::Incompatible).
    pub fn raw_os_error(self) -> Option<i32> {
        match self {
            Self::Busy => Some(libc::EBUSY),
            Self::RegistryFull => Some(libc::EUSERS),
            Self::Incompatible => None,
        }
    }
}

impl fmt::Display for SharedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Busy => {
                "shared file: another process's change of rule, or a decision of a stopped \
                 process, held this operation up"
            }
            Self::RegistryFull => {
                "shared file: every entry of its registry belongs to a live process"
            }
            Self::Incompatible => {
                "shared file: its rule in force is no rule of this table (bytes another \
                 writer put there)"
            }
        })
    }
}

impl std::error::Error for SharedError {}

/// The operating system refused a shared file: its path and the [`io::Error`], whose
/// [`kind`](io::Error::kind) and [`raw_os_error`](io::Error::raw_os_error) (`errno`)
/// are the OS's. `Display` names the path: "shared file /run/app/limits: No such file or
/// directory (os error 2)".
#[derive(Debug)]
pub struct FileError {
    path: PathBuf,
    error: io::Error,
}

impl FileError {
    pub(crate) fn new(path: &Path, error: io::Error) -> Self {
        Self {
            path: path.to_path_buf(),
            error,
        }
    }

    /// The file's path, as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The operating system's error.
    pub fn io_error(&self) -> &io::Error {
        &self.error
    }

    /// The error's kind, as [`io::Error::kind`].
    pub fn kind(&self) -> io::ErrorKind {
        self.error.kind()
    }

    /// The OS's error number, as [`io::Error::raw_os_error`].
    pub fn raw_os_error(&self) -> Option<i32> {
        self.error.raw_os_error()
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shared file {}: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Into an [`io::Error`] of the same kind whose message names the path, for a caller
/// returning `io::Result` (the OS's error number is then the source's, not the result's).
impl From<FileError> for io::Error {
    fn from(error: FileError) -> Self {
        io::Error::new(error.kind(), error)
    }
}

/// Why a shared file could not be opened (`Limiter::open`, `KeyedLimiter::open`,
/// `KeyedPolicy::open`, their `open_replacing`). Not `Clone` nor `Eq`: it may hold an
/// [`io::Error`].
#[derive(Debug)]
#[non_exhaustive]
pub enum OpenError {
    /// The configuration is invalid, or (`open_replacing`) the file's rule cannot be
    /// carried over to it ([`ConfigError::LiveChange`]).
    Config(ConfigError),
    /// The file is not a librate table of this kind, rule and size: it was left untouched,
    /// and [`describe_file`](crate::describe_file) says what it holds.
    Incompatible {
        /// The file's path, as given.
        path: PathBuf,
    },
    /// The operating system refused to create, open, size or map the file, or (errno
    /// `EBUSY`, `EUSERS`) another process held up the change `open_replacing` makes.
    Io(FileError),
}

impl OpenError {
    /// The error of the file at `path` that `why` kept from opening.
    pub(crate) fn shared(path: &Path, why: SharedError) -> Self {
        match why.raw_os_error() {
            Some(errno) => Self::Io(FileError::new(path, io::Error::from_raw_os_error(errno))),
            None => Self::incompatible(path),
        }
    }

    /// The file at `path` is not a table of this kind, rule and size.
    pub(crate) fn incompatible(path: &Path) -> Self {
        Self::Incompatible {
            path: path.to_path_buf(),
        }
    }

    /// The error of opening `path` with a change of rule (`open_replacing`) that failed
    /// with `why`.
    pub(crate) fn changing(path: &Path, why: ChangeError) -> Self {
        match why {
            ChangeError::Config(why) => Self::Config(why),
            ChangeError::Shared(why) => Self::shared(path, why),
        }
    }
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(why) => write!(f, "invalid configuration: {why}"),
            Self::Incompatible { path } => write_incompatible(f, path),
            Self::Io(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(why) => Some(why),
            Self::Incompatible { .. } => None,
            Self::Io(error) => Some(error.io_error()),
        }
    }
}

impl From<ConfigError> for OpenError {
    fn from(why: ConfigError) -> Self {
        Self::Config(why)
    }
}

/// Why a change of rule at run time (`set_config`, `set_rules`) was refused; the rule in
/// force stays.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeError {
    /// The new configuration is invalid, or its state cannot be carried over
    /// ([`ConfigError::LiveChange`]).
    Config(ConfigError),
    /// In a shared file only: another process held the change up, or the file's
    /// rule in force is no rule of it.
    Shared(SharedError),
}

impl fmt::Display for ChangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(why) => write!(f, "invalid configuration: {why}"),
            Self::Shared(why) => why.fmt(f),
        }
    }
}

impl std::error::Error for ChangeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(why) => Some(why),
            Self::Shared(_) => None,
        }
    }
}

impl From<ConfigError> for ChangeError {
    fn from(why: ConfigError) -> Self {
        Self::Config(why)
    }
}

impl From<SharedError> for ChangeError {
    fn from(why: SharedError) -> Self {
        Self::Shared(why)
    }
}

/// The sentence of a file that is not the table asked for.
pub(super) fn write_incompatible(f: &mut fmt::Formatter<'_>, path: &Path) -> fmt::Result {
    write!(
        f,
        "shared file {} is not a librate table of this kind, rule and size (describe_file \
         says what it holds; an opener may replace its rules)",
        path.display()
    )
}
