//! Changing a policy's rules at run time, through the C ABI.

use super::super::{boundary, rate_config, status_of, RATE_E_NULL, RATE_OK};
use super::{policy_ref, rate_policy, rules_of};
use librate::ChangeError;
use librate::Instant;

/// Replaces the policy's rules, now (`rate_now_ns`): as `rate_policy_set_rules_at`.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call.
///
/// NULL: `policy` NULL, or `rules` NULL with a non-zero `rules_len`, is RATE_E_NULL.
///
/// Returns as `rate_policy_set_rules_at`.
///
/// # Safety
/// `policy` is NULL or a live handle; `rules` is NULL or points to `rules_len` readable
/// `rate_config`s.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_set_rules(
    policy: *mut rate_policy,
    rules: *const rate_config,
    rules_len: usize,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { rate_policy_set_rules_at(policy, rules, rules_len, librate::now_ns()) }
}

/// Replaces the policy's rules at `now_ns` (a customer changes plan), each rule carrying
/// its state over as `rate_limiter_set_config_at` does. The new rules are as many as the
/// old, in the same order, each of the same algorithm as the one it replaces (a period of
/// RATE_FOREVER counts as the same).
///
/// Thread-safety: safe to call concurrently on one handle, with any other call. Each
/// rule's step of a racing request is decided wholly under that rule's old or new
/// configuration, so no rule admits past its limit; a racing request may see some rules
/// changed and others not yet. `rules` is only read during the call.
///
/// NULL: `policy` NULL, or `rules` NULL with a non-zero `rules_len`, is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (another number of rules, a
/// rule `rate_limiter_new` rejects, or one that cannot carry its state over, as
/// `rate_limiter_set_config_at` says); on error no rule changes.
///
/// # Safety
/// `policy` is NULL or a live handle; `rules` is NULL or points to `rules_len` readable
/// `rate_config`s.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_set_rules_at(
    policy: *mut rate_policy,
    rules: *const rate_config,
    rules_len: usize,
    now_ns: u64,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle, and `rules` as `set_rules_of` needs.
    unsafe {
        set_rules_of(
            policy_ref(policy),
            rules,
            rules_len,
            rate_config::to_config,
            |policy, configs| policy.set_rules_at(configs, Instant::from_nanos(now_ns)),
        )
    }
}

/// The body of every `rate_*_set_rules_at`: `set` on the handle (`None`: it was NULL)
/// with the `rules_len` rules at `rules` converted by `convert`, inside the boundary.
///
/// # Safety
/// `rules` is NULL or points to `rules_len` readable values.
pub(crate) unsafe fn set_rules_of<T, C: Copy, R>(
    handle: Option<&T>,
    rules: *const C,
    rules_len: usize,
    convert: impl Fn(C) -> Option<R>,
    set: impl FnOnce(&T, &[R]) -> Result<(), ChangeError>,
) -> i32 {
    boundary(|| {
        let Some(handle) = handle else {
            return RATE_E_NULL;
        };
        // SAFETY: passed on from this function's contract.
        match unsafe { rules_of(rules, rules_len, convert) } {
            Ok(rules) => match set(handle, &rules) {
                Ok(()) => RATE_OK,
                Err(error) => status_of(error),
            },
            Err(status) => status,
        }
    })
}
