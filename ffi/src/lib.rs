//! The C ABI (docs/c.md). `include/rate.h` is generated from this directory by cbindgen.
//!
//! Every export runs its body through `boundary`, so a panic becomes a status code
//! instead of unwinding into C, and checks every pointer before touching it.

#![deny(missing_docs)]
#![allow(non_camel_case_types)] // C names are part of the contract (docs/c.md).

mod batch;
mod counts;
mod keyed;
mod keyed_policy;
mod limiter;
mod misc;
mod policy;
mod redis;
#[cfg(feature = "testing")]
mod testing;
mod types;
// Last, newest last, so cbindgen meets the older items first and keeps their order in the
// header.
mod explain;
mod file;
mod keyed_lease;
mod lease;
mod reservation;

pub use batch::*;
pub use counts::*;
pub use explain::*;
pub use file::*;
pub use keyed::*;
pub use keyed_lease::*;
pub use keyed_policy::*;
pub use lease::*;
pub use limiter::*;
pub use misc::*;
pub use policy::*;
pub use redis::*;
pub use reservation::*;
#[cfg(feature = "testing")]
pub use testing::*;
pub use types::*;

use librate::Config;
use librate::Decision;
use librate::{ChangeError, Error, OpenError};
use std::ffi::{c_char, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// Admitted, or the call succeeded.
pub const RATE_OK: i32 = 0;
/// Denied by the limit; `out`, if given, says when to retry.
pub const RATE_LIMITED: i32 = 1;
/// A required pointer (handle, config, out-handle, or key with a non-zero length) was NULL.
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_NULL: i32 = 0 - 1;
/// The configuration is invalid (zero limit or period, unknown algorithm, overflow…).
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_INVALID_CONFIG: i32 = 0 - 2;
/// The cost `n` exceeds the limiter's `limit`: no amount of waiting admits it.
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_INSUFFICIENT_CAPACITY: i32 = 0 - 3;
/// A keyed table is full of live keys; nothing was admitted.
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_TABLE_FULL: i32 = 0 - 4;
/// The operation does not exist for this handle: a reserve on a window algorithm.
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_UNSUPPORTED: i32 = 0 - 5;
/// A bug inside librate (a caught panic); the limiter's state is unchanged or consistent.
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_INTERNAL: i32 = 0 - 6;
/// The operating system refused to create, open, size or map a shared file; `errno` holds
/// its reason.
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_IO: i32 = 0 - 7;
/// The file is not a librate table of this layout, kind, rule and size; it was left
/// untouched. `rate_describe_file` says what it holds; a shared limiter's opener may
/// replace its rule instead (`rate_limiter_open_replacing`).
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_INCOMPATIBLE: i32 = 0 - 8;
/// Redis answered something librate's script never answers (a lease's grant); nothing of
/// it was applied.
// Written `0 - N` so cbindgen parenthesises the macro: a bare `-1` breaks `x-RATE_E_NULL`.
pub const RATE_E_REPLY: i32 = 0 - 9;

/// What an export returns when its body panicked.
pub(crate) trait PanicFallback {
    fn on_panic() -> Self;
}

impl PanicFallback for i32 {
    fn on_panic() -> Self {
        RATE_E_INTERNAL
    }
}

impl PanicFallback for () {
    fn on_panic() -> Self {}
}

/// A static string's address: NULL, which no export returns for a live handle.
impl PanicFallback for *const c_char {
    fn on_panic() -> Self {
        std::ptr::null()
    }
}

/// A body that may leave its work to another (`None`): a panic is its answer, the
/// fallback, never a reason to run the other.
impl<T: PanicFallback> PanicFallback for Option<T> {
    fn on_panic() -> Self {
        Some(T::on_panic())
    }
}

/// Runs an export's body, turning a panic into the return type's fallback. The panic
/// message still goes to the host's panic hook; librate installs none of its own.
#[inline(always)]
pub(crate) fn boundary<R: PanicFallback>(body: impl FnOnce() -> R) -> R {
    // AssertUnwindSafe: after a panic the caller only sees the fallback status; the
    // limiter's state is atomics that are always in a valid state between instructions.
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| R::on_panic())
}

/// The body of every `rate_*_set_config_at`: `set` on the handle (`None`: it was NULL)
/// with `config` read and checked, inside the boundary.
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`.
pub(crate) unsafe fn set_config_of<T>(
    handle: Option<&T>,
    config: *const rate_config,
    set: impl FnOnce(&T, &Config) -> Result<(), ChangeError>,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let (Some(handle), Some(config)) = (handle, unsafe { config.as_ref() }) else {
            return RATE_E_NULL;
        };
        let Some(config) = config.to_config() else {
            return RATE_E_INVALID_CONFIG;
        };
        match set(handle, &config) {
            Ok(()) => RATE_OK,
            Err(error) => status_of(error),
        }
    })
}

/// The status code for an error of the Rust API: any operation's, through the umbrella
/// [`Error`] each converts into.
#[inline]
pub(crate) fn status_of(error: impl Into<Error>) -> i32 {
    match error.into() {
        Error::InvalidConfig(_) => RATE_E_INVALID_CONFIG,
        Error::InsufficientCapacity => RATE_E_INSUFFICIENT_CAPACITY,
        Error::TableFull => RATE_E_TABLE_FULL,
        Error::Unsupported => RATE_E_UNSUPPORTED,
        Error::Shared(why) => match why.raw_os_error() {
            Some(errno) => io_status(errno),
            None => RATE_E_INCOMPATIBLE,
        },
        Error::Io(error) => io_status(error.raw_os_error().unwrap_or(libc::EIO)),
        Error::Timer(error) => io_status(error.raw_os_error().unwrap_or(libc::EAGAIN)),
        Error::Incompatible { .. } => RATE_E_INCOMPATIBLE,
        // A variant a later core adds, before this ABI names it.
        _ => RATE_E_INTERNAL,
    }
}

/// `RATE_E_IO`, with `errno` set to the OS's error number.
#[cold]
fn io_status(errno: i32) -> i32 {
    // SAFETY: `__errno_location` returns this thread's errno, always writable.
    unsafe { *libc::__errno_location() = errno };
    RATE_E_IO
}

/// The status of an outcome-only acquire: RATE_OK admitted, RATE_LIMITED denied, or the
/// error's code.
#[inline]
pub(crate) fn outcome_status(outcome: Result<bool, impl Into<Error>>) -> i32 {
    match outcome {
        Ok(true) => RATE_OK,
        Ok(false) => RATE_LIMITED,
        Err(error) => status_of(error),
    }
}

/// [`construct`] for a handle on the file at `path` (any bytes but NUL: Linux paths need
/// not be UTF-8): the body of every `rate_*_open`.
///
/// # Safety
/// As [`construct`]; `path` is NULL or a NUL-terminated string.
pub(crate) unsafe fn construct_at<T>(
    path: *const c_char,
    config: *const rate_config,
    out: *mut *mut T,
    build: impl FnOnce(&Path, &Config) -> Result<T, OpenError>,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    let Some(path) = (unsafe { path_of(path) }) else {
        return RATE_E_NULL;
    };
    // SAFETY: passed on from this function's contract.
    unsafe { construct(config, out, |config| build(path, config)) }
}

/// The path a C string names (any bytes but NUL: Linux paths need not be UTF-8); `None`
/// for NULL.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn path_of<'a>(path: *const c_char) -> Option<&'a Path> {
    // SAFETY: a non-NULL `path` is NUL-terminated, by the caller's contract; `as_ref`
    // checks NULL.
    let bytes = unsafe { path.as_ref().map(|path| CStr::from_ptr(path).to_bytes()) }?;
    Some(Path::new(OsStr::from_bytes(bytes)))
}

/// Builds a handle from a C configuration and gives it to the caller through `out`: the
/// body of every `rate_*_new`. On any error `*out` is left untouched.
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`; `out` is NULL or points to a
/// writable handle pointer, as the export's caller promised.
pub(crate) unsafe fn construct<T, E: Into<Error>>(
    config: *const rate_config,
    out: *mut *mut T,
    build: impl FnOnce(&Config) -> Result<T, E>,
) -> i32 {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    let Some(config) = (unsafe { config.as_ref() }) else {
        return RATE_E_NULL;
    };
    if out.is_null() {
        return RATE_E_NULL;
    }
    let Some(config) = config.to_config() else {
        return RATE_E_INVALID_CONFIG;
    };
    match build(&config) {
        Ok(handle) => {
            // SAFETY: `out` is non-NULL and the caller promised it is writable.
            unsafe { *out = Box::into_raw(Box::new(handle)) };
            RATE_OK
        }
        Err(error) => status_of(error),
    }
}

/// Reports a decision: writes it to `out` unless `out` is NULL, and returns `RATE_OK` or
/// `RATE_LIMITED`; an error is returned as its status and leaves `out` untouched.
///
/// # Safety
/// `out` is NULL or points to a writable `rate_decision`, as the export's caller promised.
pub(crate) unsafe fn report(
    result: Result<Decision, impl Into<Error>>,
    out: *mut rate_decision,
) -> i32 {
    let decision = match result {
        Ok(decision) => decision,
        Err(error) => return status_of(error),
    };
    // SAFETY: the caller guarantees `out` is NULL or valid for writes; `as_mut` checks NULL.
    if let Some(out) = unsafe { out.as_mut() } {
        *out = rate_decision::from(decision);
    }
    if decision.allowed {
        RATE_OK
    } else {
        RATE_LIMITED
    }
}
