//! `rate_*_enable_counts` and `rate_*_read_counts`: how many requests a handle admitted
//! and denied, for dashboards (docs/metrics.md, counters). Counting is off until a
//! handle's `enable_counts`: it costs one atomic add a request.

use crate::keyed::{rate_keyed, table};
use crate::keyed_policy::{keyed_policy_ref, rate_keyed_policy};
use crate::lease::{holder_ref, rate_lease_holder};
use crate::limiter::{limiter_ref, rate_limiter};
use crate::policy::{policy_ref, rate_policy};
use crate::{boundary, RATE_E_NULL, RATE_E_UNSUPPORTED, RATE_OK};
use librate::Counts;

/// A handle's counts of its requests since counting began: what the `rate_*_read_counts`
/// functions write. Queries (`n == 0`) and requests refused with an error other than
/// RATE_E_TABLE_FULL are not counted. Each request is counted once, in one field.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rate_counts {
    /// Requests admitted (RATE_OK).
    pub admitted: u64,
    /// Requests denied by the limit (RATE_LIMITED): for a policy, the sum over its rules'
    /// `denied`.
    pub denied: u64,
    /// Keyed only: requests for a new key refused with RATE_E_TABLE_FULL.
    pub table_full: u64,
}

/// One policy rule's counts, in the order the rules were given.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rate_rule_counts {
    /// Requests this rule denied first, in the order the rules were given: the rule a
    /// `rate_policy_decision`'s `denied_by` named.
    pub denied: u64,
    /// A shadow rule's would-be denials (docs/policies.md, shadow rules); 0 for an
    /// enforced rule.
    pub shadow_denied: u64,
}

impl From<Counts> for rate_counts {
    fn from(counts: Counts) -> Self {
        Self {
            admitted: counts.admitted,
            denied: counts.denied,
            table_full: counts.table_full,
        }
    }
}

/// Turns on counting of the limiter's requests through this handle, from this call on;
/// counting that is on stays on, its counts kept.
///
/// Thread-safety: safe to call concurrently with any call on the handle.
///
/// Returns RATE_OK, or RATE_E_NULL for a NULL `limiter`.
///
/// # Safety
/// `limiter` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_enable_counts(limiter: *const rate_limiter) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { enable(limiter_ref(limiter), librate::Limiter::enable_counts) }
}

/// Writes the limiter's counts since `rate_limiter_enable_counts` to `*out`.
///
/// Thread-safety: safe to call concurrently with any call on the handle; the counts are
/// a snapshot, each request counted once in one field.
///
/// Returns RATE_OK; RATE_E_NULL for a NULL `limiter` or `out`; RATE_E_UNSUPPORTED if
/// counting is off (`out` untouched).
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_counts`.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_read_counts(
    limiter: *const rate_limiter,
    out: *mut rate_counts,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        read(
            limiter_ref(limiter),
            out,
            std::ptr::null_mut(),
            0,
            librate::Limiter::counts,
        )
    }
}

/// As `rate_limiter_enable_counts`, for a keyed limiter; `table_full` counts too.
///
/// # Safety
/// `keyed` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_enable_counts(keyed: *const rate_keyed) -> i32 {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    let table = unsafe { keyed.as_ref() }.map(table);
    enable(table, librate::KeyedLimiter::enable_counts)
}

/// As `rate_limiter_read_counts`, for a keyed limiter.
///
/// # Safety
/// `keyed` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_counts`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_read_counts(
    keyed: *const rate_keyed,
    out: *mut rate_counts,
) -> i32 {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    let table = unsafe { keyed.as_ref() }.map(table);
    // SAFETY: `out` as this function's contract says.
    unsafe {
        read(
            table,
            out,
            std::ptr::null_mut(),
            0,
            librate::KeyedLimiter::counts,
        )
    }
}

/// As `rate_limiter_enable_counts`, for a policy; once on, `rate_policy_acquire` with a
/// NULL `out` decides as with one, to learn which rule denied.
///
/// # Safety
/// `policy` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_enable_counts(policy: *const rate_policy) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { enable(policy_ref(policy), librate::Policy::enable_counts) }
}

/// Writes the policy's counts since `rate_policy_enable_counts` to `*out`, and the first
/// `rules_len` rules' own to `rules[0..rules_len]` (fewer if the policy has fewer rules;
/// `rules` may be NULL when `rules_len` is 0).
///
/// Returns as `rate_limiter_read_counts`; RATE_E_NULL also for a NULL `rules` with a
/// non-zero `rules_len`.
///
/// # Safety
/// `policy` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_counts`; `rules` is NULL or points to `rules_len` writable `rate_rule_counts`.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_read_counts(
    policy: *const rate_policy,
    out: *mut rate_counts,
    rules: *mut rate_rule_counts,
    rules_len: usize,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        read(
            policy_ref(policy),
            out,
            rules,
            rules_len,
            librate::Policy::counts,
        )
    }
}

/// As `rate_policy_enable_counts`, for a keyed policy; `table_full` counts too.
///
/// # Safety
/// `policy` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_enable_counts(policy: *const rate_keyed_policy) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        enable(
            keyed_policy_ref(policy),
            librate::KeyedPolicy::enable_counts,
        )
    }
}

/// As `rate_policy_read_counts`, for a keyed policy.
///
/// # Safety
/// As `rate_policy_read_counts`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_read_counts(
    policy: *const rate_keyed_policy,
    out: *mut rate_counts,
    rules: *mut rate_rule_counts,
    rules_len: usize,
) -> i32 {
    let counts = librate::KeyedPolicy::counts;
    // SAFETY: passed on from this function's contract.
    unsafe { read(keyed_policy_ref(policy), out, rules, rules_len, counts) }
}

/// As `rate_limiter_enable_counts`, for a lease holder: its decisions from its share and
/// by its fallback alike.
///
/// # Safety
/// `holder` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_enable_counts(holder: *const rate_lease_holder) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        enable(
            holder_ref(holder),
            librate::lease::LeaseHolder::enable_counts,
        )
    }
}

/// As `rate_limiter_read_counts`, for a lease holder.
///
/// # Safety
/// `holder` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_counts`.
#[no_mangle]
pub unsafe extern "C" fn rate_lease_read_counts(
    holder: *const rate_lease_holder,
    out: *mut rate_counts,
) -> i32 {
    let counts = librate::lease::LeaseHolder::counts;
    // SAFETY: passed on from this function's contract.
    unsafe { read(holder_ref(holder), out, std::ptr::null_mut(), 0, counts) }
}

/// The body of the `rate_*_enable_counts` exports.
fn enable<T>(handle: Option<&T>, enable: fn(&T)) -> i32 {
    boundary(|| match handle {
        Some(handle) => {
            enable(handle);
            RATE_OK
        }
        None => RATE_E_NULL,
    })
}

/// The body of the `rate_*_read_counts` exports: `counts` of the handle to `out`, and
/// its rules' to `rules`.
///
/// # Safety
/// `out` is NULL or writable; `rules` is NULL or points to `rules_len` writable
/// `rate_rule_counts`.
unsafe fn read<T>(
    handle: Option<&T>,
    out: *mut rate_counts,
    rules: *mut rate_rule_counts,
    rules_len: usize,
    counts: fn(&T) -> Option<Counts>,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_mut` checks NULL.
        let (Some(handle), Some(out)) = (handle, unsafe { out.as_mut() }) else {
            return RATE_E_NULL;
        };
        if rules.is_null() && rules_len != 0 {
            return RATE_E_NULL;
        }
        let Some(counts) = counts(handle) else {
            return RATE_E_UNSUPPORTED;
        };
        *out = rate_counts::from(counts);
        for (index, rule) in counts.rules().iter().take(rules_len).enumerate() {
            let each = rate_rule_counts {
                denied: rule.denied,
                shadow_denied: rule.shadow_denied,
            };
            // SAFETY: `index < rules_len`, and the caller promised `rules_len` writable
            // elements at the non-NULL `rules`.
            unsafe { rules.add(index).write(each) };
        }
        RATE_OK
    })
}
