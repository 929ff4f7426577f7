//! A keyed policy's upkeep through the C ABI: resetting a key to fresh, and the per-key
//! tables' statistics for dashboards.

use super::super::keyed::with_key;
use super::super::{boundary, rate_keyed_stats, status_of, RATE_E_NULL, RATE_OK};
use super::{inner, rate_keyed_policy};
use librate::Instant;
use librate::KeyedPolicy;

/// Resets the key in every per-key rule, as `rate_keyed_reset` does in a table: its next
/// request is decided by those rules as a new key's. The global rules are left as they
/// are. A request of the key racing the reset is decided wholly before or after it in
/// each rule.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_policy_acquire`.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_TABLE_FULL (a shared file only, as
/// `rate_keyed_reset`).
///
/// # Safety
/// `policy` is NULL or a live handle; `key` is NULL or points to `key_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_reset(
    policy: *mut rate_keyed_policy,
    key: *const u8,
    key_len: usize,
) -> i32 {
    let body = |policy: &KeyedPolicy, key: &[u8]| match policy.reset(key) {
        Ok(()) => RATE_OK,
        Err(error) => status_of(error),
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(policy, key, key_len, inner, body) }
}

/// Writes the per-key rules' tables' statistics to `*out`, live keys counted at `now_ns`:
/// each table's capacity and slots, the live keys of the fullest table (the one that
/// refuses new keys first), and the requests refused with RATE_E_TABLE_FULL since the
/// policy was created (in a shared file, by every process). All zeros without a per-key
/// rule. Reads every slot: for a dashboard, not a hot path.
///
/// Thread-safety: safe to call concurrently on one handle; the counts are a snapshot.
///
/// NULL: `policy` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL (`out` untouched).
///
/// # Safety
/// `policy` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_keyed_stats`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_read_stats_at(
    policy: *const rate_keyed_policy,
    now_ns: u64,
    out: *mut rate_keyed_stats,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` and `as_mut` check NULL.
        let (Some(policy), Some(out)) = (unsafe { policy.as_ref() }, unsafe { out.as_mut() })
        else {
            return RATE_E_NULL;
        };
        *out = rate_keyed_stats::from(policy.policy.stats_at(Instant::from_nanos(now_ns)));
        RATE_OK
    })
}

/// `rate_keyed_policy_read_stats_at` now (CLOCK_MONOTONIC).
///
/// Thread-safety, NULL, returns: as `rate_keyed_policy_read_stats_at`.
///
/// # Safety
/// As `rate_keyed_policy_read_stats_at`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_read_stats(
    policy: *const rate_keyed_policy,
    out: *mut rate_keyed_stats,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { rate_keyed_policy_read_stats_at(policy, librate::now_ns(), out) }
}
