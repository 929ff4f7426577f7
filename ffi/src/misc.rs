//! Process-wide functions: the clock, status strings, the version.

use super::*;
use std::ffi::{c_char, CStr};

/// Nanoseconds on CLOCK_MONOTONIC: the timeline of `rate_*_acquire`, shared by every
/// process on the host. Pass it (or your own timeline) as `now_ns` to the `_at` functions.
/// Where the kernel keeps CLOCK_MONOTONIC with the TSC, it is read from the TSC and stays
/// within 1 us of CLOCK_MONOTONIC (up to 4 us behind while another thread, descheduled,
/// is re-anchoring; set LIBRATE_CLOCK=monotonic in the environment to read
/// CLOCK_MONOTONIC itself); each thread's readings never decrease.
///
/// Async-signal-safe once the process has created a limiter or a keyed table, or called
/// this function once outside a signal handler: the first clock read looks the kernel's
/// vDSO clock up with the dynamic loader, and calibrates the TSC.
#[no_mangle]
pub extern "C" fn rate_now_ns() -> u64 {
    librate::now_ns()
}

/// A static, NUL-terminated English description of a status code; never NULL, never to be
/// freed. Unknown codes give "unknown status".
#[no_mangle]
pub extern "C" fn rate_status_str(status: i32) -> *const c_char {
    let text: &'static CStr = match status {
        RATE_OK => c"ok: admitted",
        RATE_LIMITED => c"limited: denied by the rate limit",
        RATE_E_NULL => c"a required pointer was NULL",
        RATE_E_INVALID_CONFIG => c"invalid configuration",
        RATE_E_INSUFFICIENT_CAPACITY => c"cost exceeds the limiter's capacity",
        RATE_E_TABLE_FULL => c"keyed table is full of live keys",
        RATE_E_UNSUPPORTED => c"operation not supported by this handle (a reserve needs GCRA)",
        RATE_E_INTERNAL => c"internal error in librate",
        RATE_E_IO => c"the operating system refused the shared file (see errno)",
        RATE_E_INCOMPATIBLE => c"the file is not a librate table of this kind, rule and size (rate_describe_file says what it holds; an opener may replace its rules)",
        RATE_E_REPLY => c"Redis answered something librate's script never answers; nothing was applied",
        _ => c"unknown status",
    };
    text.as_ptr()
}

/// librate's version, "MAJOR.MINOR.PATCH" as in Cargo.toml: static, never NULL.
#[no_mangle]
pub extern "C" fn rate_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
