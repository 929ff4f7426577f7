//! `rate_limiter_explain_config`, `rate_keyed_explain_config`: why a configuration or a
//! capacity is rejected, as one English sentence that names the field, its value and the
//! bound it broke.
//!
//! The verdict is always the constructors' own, so these functions cannot disagree with
//! `rate_limiter_new` or `rate_keyed_new`: a configuration is judged by the validation
//! `Limiter::new` runs before it allocates anything (`Decider::new`), a capacity by
//! `KeyedLimiter::new`. A bound is found by asking the same validation about neighbouring
//! values (every bound is monotonic in the field it limits), never by a second copy of the
//! rules. The validation allocates nothing, so a search costs some dozens of checks of
//! arithmetic, where building a limiter per probe would allocate a sliding log's ring (16
//! bytes per unit of its limit) each time.

use super::{boundary, rate_config, RATE_E_INVALID_CONFIG, RATE_E_NULL, RATE_OK};
use crate::config::{Algorithm, Config};
use crate::decider::Decider;
use crate::error::{ConfigError, Error};
use crate::keyed::KeyedLimiter;
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
    match Decider::new(&config) {
        Ok(_) => None,
        Err(error) => Some(explain(&config, error)),
    }
}

/// Why `rate_keyed_new` rejects `raw` with `capacity`, or `None` if it accepts them.
fn keyed_reason(raw: &rate_config, capacity: u64) -> Option<String> {
    let Some(config) = raw.to_config() else {
        return Some(unknown_algorithm(raw.algorithm));
    };
    match KeyedLimiter::new(&config, capacity) {
        Ok(_) => None,
        Err(Error::InvalidConfig(ConfigError::Capacity)) => {
            Some(capacity_reason(&config, capacity))
        }
        Err(error) => Some(explain(&config, error)),
    }
}

fn unknown_algorithm(number: u32) -> String {
    format!(
        "algorithm {number}: must be 0 (GCRA), 1 (fixed window), 2 (sliding window) \
         or 3 (sliding log)"
    )
}

/// The algorithm as the reasons name it.
fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::Gcra => "GCRA",
        Algorithm::FixedWindow => "the fixed window",
        Algorithm::SlidingWindow => "the sliding window",
        Algorithm::SlidingLog => "the sliding log",
    }
}

/// Whether a limiter accepts `config`: the one rule book every bound is searched in.
/// `Limiter::new` fails only where this does (what it does next, allocating the state,
/// cannot fail but by aborting).
fn accepts(config: Config) -> bool {
    Decider::new(&config).is_ok()
}

/// The largest value in `low..=high` that `ok` accepts, given that `ok` accepts every
/// value below one it accepts; `None` if it accepts none.
fn largest(low: u64, high: u64, ok: impl Fn(u64) -> bool) -> Option<u64> {
    if low > high || !ok(low) {
        return None;
    }
    let (mut yes, mut no) = (low, u128::from(high) + 1); // ok(yes); nothing at or past `no`
    while u128::from(yes) + 1 < no {
        let middle = ((u128::from(yes) + no) / 2) as u64;
        if ok(middle) {
            yes = middle;
        } else {
            no = u128::from(middle);
        }
    }
    Some(yes)
}

/// The smallest value in `low..=high` that `ok` accepts, given that `ok` accepts every
/// value above one it accepts; `None` if it accepts none.
fn smallest(low: u64, high: u64, ok: impl Fn(u64) -> bool) -> Option<u64> {
    // Mirrored: the largest `u64::MAX - value` whose value `ok` accepts.
    largest(u64::MAX - high, u64::MAX - low, |flipped| {
        ok(u64::MAX - flipped)
    })
    .map(|flipped| u64::MAX - flipped)
}

/// Why the constructors reject a `config` whose algorithm is known.
fn explain(config: &Config, error: Error) -> String {
    let why = match error {
        Error::InvalidConfig(why) => why,
        other => return other.to_string(),
    };
    let Config {
        algorithm,
        limit,
        period_ns,
        burst,
    } = *config;
    let name = algorithm_name(algorithm);
    match why {
        ConfigError::ZeroLimit => "limit 0: must be at least 1".to_owned(),
        ConfigError::ZeroPeriod => "period_ns 0: must be at least 1".to_owned(),
        ConfigError::RateTooHigh | ConfigError::LimitTooLarge => {
            let per_ns = if why == ConfigError::RateTooHigh {
                " (at most one unit per ns)"
            } else {
                ""
            };
            if let Some(most) = largest(1, limit - 1, |limit| accepts(Config { limit, ..*config }))
            {
                format!(
                    "limit {limit}: must be at most {most} for {name} with period_ns \
                     {period_ns}{per_ns}"
                )
            } else if let Some(least) = smallest(period_ns.saturating_add(1), u64::MAX, |p| {
                accepts(Config {
                    period_ns: p,
                    ..*config
                })
            }) {
                format!(
                    "period_ns {period_ns}: must be at least {least} for {name} with limit {limit}"
                )
            } else {
                format!("limit {limit} with period_ns {period_ns}: {why}")
            }
        }
        ConfigError::ToleranceTooLarge => {
            const RULE: &str = "x (period_ns / limit) must be at most 2^64 - 257 ns";
            if burst == 0 {
                // burst 0 means limit: only a shorter period can help.
                // Below P = limit, T would be 0: search from where T = 1.
                match largest(limit, period_ns - 1, |p| {
                    accepts(Config {
                        period_ns: p,
                        ..*config
                    })
                }) {
                    Some(most) => format!(
                        "period_ns {period_ns}: must be at most {most} for GCRA with limit \
                         {limit} (limit {RULE})"
                    ),
                    None => format!("period_ns {period_ns} with limit {limit}: {why}"),
                }
            } else {
                match largest(1, burst - 1, |burst| accepts(Config { burst, ..*config })) {
                    Some(most) => format!(
                        "burst {burst}: must be at most {most} for GCRA with limit {limit} \
                         and period_ns {period_ns} (burst {RULE})"
                    ),
                    None => format!("burst {burst}: {why}"),
                }
            }
        }
        other => other.to_string(),
    }
}

/// Why a table of `capacity` keys under a valid `config` cannot be built.
fn capacity_reason(config: &Config, capacity: u64) -> String {
    if capacity == 0 {
        return "capacity 0: must be at least 1".to_owned();
    }
    match KeyedLimiter::new(config, 1) {
        Ok(one) => {
            let per_key = one.bytes_per_key() as u128;
            let bytes = u128::from(capacity) * per_key;
            format!(
                "capacity {capacity}: its table needs {bytes} bytes ({per_key} per key), \
                 more than can be allocated"
            )
        }
        Err(_) => format!("capacity {capacity}: {}", ConfigError::Capacity),
    }
}

#[cfg(test)]
mod tests;
