//! `rate_limiter_explain_config`, `rate_keyed_explain_config`: why a configuration or a
//! capacity is rejected, as one English sentence that names the field, its value and the
//! bound it broke.
//!
//! The verdict and the sentence are the constructors' own: a configuration is judged by
//! the validation `Limiter::new` runs before it allocates anything (`Config::validate`), a
//! capacity by `KeyedLimiter::new`, and their `ConfigError` carries the field, the value
//! and the exact bound, so these functions only write its `Display` (docs/decision.md,
//! Configuration), the sentence Rust, Python and Go give too.

use super::{boundary, rate_config, RATE_E_INVALID_CONFIG, RATE_E_NULL, RATE_OK};
use librate::KeyedLimiter;
use std::ffi::c_char;

/// Bytes a reason buffer needs to hold any reason librate writes, its NUL included.
pub const RATE_REASON_LEN: usize = 256;

/// Explains why `rate_limiter_new` rejects `config`: writes one English sentence naming
/// the field, its value and the bound it broke to `reason`, for example
/// "limit 0: must be at least 1" or "limit 1000000001: must be at most 1000000000 for
/// GCRA with period_ns 1000000000 (at most one unit per ns)". Nothing is created. The
/// verdict is the one `rate_limiter_new` gives for the same `config`.
///
/// Ownership: `reason` is the caller's buffer of `reason_len` bytes. The sentence is
/// ASCII, cut to `reason_len - 1` bytes if longer, and always NUL-terminated when
/// `reason_len > 0`; `RATE_REASON_LEN` bytes always hold it whole. On RATE_OK it is the
/// empty string; on RATE_E_NULL it is untouched.
///
/// Thread-safety: safe to call from any thread at any time; it touches no handle.
///
/// NULL: `config` NULL is RATE_E_NULL; `reason` may be NULL (only the status is
/// returned), and then `reason_len` is ignored.
///
/// Returns RATE_OK (`rate_limiter_new` accepts `config`), RATE_E_INVALID_CONFIG (the
/// reason says why), or RATE_E_NULL.
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`; `reason` is NULL or points to
/// `reason_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_explain_config(
    config: *const rate_config,
    reason: *mut c_char,
    reason_len: usize,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { answer(config, reason, reason_len, limiter_reason) }
}

/// Explains why `rate_keyed_new` rejects `config` with `capacity`: as
/// `rate_limiter_explain_config`, and for the capacity "capacity 0: must be at least 1",
/// or, for a table too large to allocate, a sentence giving the bytes it would need. The verdict is
/// the one `rate_keyed_new` gives; to reach it this function builds the table and frees it
/// at once, so on a valid configuration it costs what `rate_keyed_new` costs. An
/// allocation that failed in `rate_keyed_new` and succeeds here gives RATE_OK.
///
/// Ownership: as `rate_limiter_explain_config`.
///
/// Thread-safety: safe to call from any thread at any time; it touches no handle.
///
/// NULL: `config` NULL is RATE_E_NULL; `reason` may be NULL (only the status is
/// returned), and then `reason_len` is ignored.
///
/// Returns RATE_OK (`rate_keyed_new` accepts them), RATE_E_INVALID_CONFIG (the reason
/// says why), or RATE_E_NULL.
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`; `reason` is NULL or points to
/// `reason_len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_explain_config(
    config: *const rate_config,
    capacity: u64,
    reason: *mut c_char,
    reason_len: usize,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        answer(config, reason, reason_len, |config| {
            keyed_reason(config, capacity)
        })
    }
}

/// The body of both exports, inside the boundary: finds the reason for `*config` (None
/// when it is accepted), writes it (or the empty string) to the caller's buffer and
/// returns the status.
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`; `buffer` is NULL or points to
/// `len` writable bytes.
unsafe fn answer(
    config: *const rate_config,
    buffer: *mut c_char,
    len: usize,
    reason_for: impl FnOnce(&rate_config) -> Option<String>,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let Some(config) = (unsafe { config.as_ref() }) else {
            return RATE_E_NULL;
        };
        let reason = reason_for(config);
        // SAFETY: passed on from this function's contract.
        unsafe { write_reason(reason.as_deref().unwrap_or(""), buffer, len) };
        if reason.is_some() {
            RATE_E_INVALID_CONFIG
        } else {
            RATE_OK
        }
    })
}

/// Writes `text` to the caller's buffer of `len` bytes as every reason is written: cut to
/// `len - 1` bytes if longer, always NUL-terminated when `len > 0`; nothing when `buffer`
/// is NULL or `len` is 0.
///
/// # Safety
/// `buffer` is NULL or points to `len` writable bytes.
pub(crate) unsafe fn write_reason(text: &str, buffer: *mut c_char, len: usize) {
    if !buffer.is_null() && len > 0 {
        let kept = text.len().min(len - 1);
        // SAFETY: `buffer` holds `len` bytes and `kept + 1 <= len`; the source is a Rust
        // string, which cannot overlap the caller's buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buffer, kept);
            *buffer.add(kept) = 0;
        }
    }
}

/// Why `rate_limiter_new` rejects `raw`, or `None` if it accepts it.
fn limiter_reason(raw: &rate_config) -> Option<String> {
    let Some(config) = raw.to_config() else {
        return Some(unknown_algorithm(raw.algorithm));
    };
    config.validate().err().map(|why| why.to_string())
}

/// Why `rate_keyed_new` rejects `raw` with `capacity`, or `None` if it accepts them.
fn keyed_reason(raw: &rate_config, capacity: u64) -> Option<String> {
    let Some(config) = raw.to_config() else {
        return Some(unknown_algorithm(raw.algorithm));
    };
    KeyedLimiter::new(&config, capacity)
        .err()
        .map(|why| why.to_string())
}

pub(crate) fn unknown_algorithm(number: u32) -> String {
    format!(
        "algorithm {number}: must be 0 (GCRA), 1 (fixed window), 2 (sliding window) \
         or 3 (sliding log)"
    )
}

#[cfg(test)]
mod tests;
