//! `rate_describe_file`: what a table file holds, in one English sentence, for the user of
//! an opener that was refused with RATE_E_INCOMPATIBLE (docs/shared.md).

use super::explain::write_reason;
use super::{boundary, path_of, status_of, RATE_E_NULL, RATE_OK};
use std::ffi::c_char;

/// Describes the table file at `path` in one English sentence that starts with the path:
/// the kind of table and the rule it holds (a shared limiter's or keyed table's rule in
/// force, and how many times it changed), or why it is no table this librate reads. For
/// example "/dev/shm/api: a librate limiter holding GCRA, limit 10, period_ns 1000000000,
/// burst 10", "/dev/shm/api: not a librate table (it does not start with librate's magic
/// bytes)", or, for a file an older librate made, "...: a librate table of layout version
/// 3, which this librate (layout version 4) does not read: delete it, and the next opener
/// makes it anew". What to tell the user of an open refused with RATE_E_INCOMPATIBLE. The
/// file is only read (never mapped, created or written), so any file can be described.
///
/// Ownership: `reason` is the caller's buffer of `reason_len` bytes, written as
/// `rate_limiter_explain_config` writes it: cut to `reason_len - 1` bytes if longer, and
/// always NUL-terminated when `reason_len > 0`. The sentence starts with the path (in
/// UTF-8, a byte that is not UTF-8 written as U+FFFD), so `RATE_REASON_LEN` bytes may not
/// hold it whole: use a buffer of `PATH_MAX + RATE_REASON_LEN` bytes, which holds any
/// limiter's or keyed table's sentence whole (what follows the path fits
/// `RATE_REASON_LEN`); a keyed policy's, one clause per rule, may be cut. On RATE_E_IO
/// it is the empty string; on RATE_E_NULL it is untouched. `path` is only read during the
/// call.
///
/// Thread-safety: safe to call from any thread at any time; it touches no handle, and a
/// file that processes are changing is read as it stands.
///
/// NULL: `path` NULL is RATE_E_NULL; `reason` may be NULL (only the status is returned),
/// and then `reason_len` is ignored.
///
/// Returns RATE_OK (the sentence was written), RATE_E_NULL, or RATE_E_IO (the file cannot
/// be opened or read; `errno` says why, ENOENT for a missing file).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `reason` is NULL or points to `reason_len`
/// writable bytes.
#[no_mangle]
pub unsafe extern "C" fn rate_describe_file(
    path: *const c_char,
    reason: *mut c_char,
    reason_len: usize,
) -> i32 {
    boundary(|| {
        // SAFETY: passed on from this function's contract.
        let Some(path) = (unsafe { path_of(path) }) else {
            return RATE_E_NULL;
        };
        let described = librate::describe_file(path);
        // SAFETY: passed on from this function's contract.
        unsafe { write_reason(described.as_deref().unwrap_or(""), reason, reason_len) };
        match described {
            Ok(_) => RATE_OK,
            Err(error) => status_of(error),
        }
    })
}
