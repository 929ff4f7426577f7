//! A keyed policy handle's shadow rules through the C ABI (docs/policies.md, Shadow rules).

use super::super::policy::{get_shadow_of, set_shadow_of};
use super::{inner, rate_keyed_policy};
use librate::KeyedPolicy;

/// Makes the rules of `mask` (bit i for rule i, in the order given) this handle's shadow
/// rules, as `rate_policy_set_shadow` does, rule by rule. A shadow per-key rule whose
/// table is full of live keys cannot decide a new key: the enforced decision stands and
/// the rule reports as one the request left out; a shadow rule never fails a request. In
/// a shared file the mask is this handle's alone: every process applies its own.
///
/// Thread-safety: as `rate_policy_set_shadow`.
///
/// NULL: `policy` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (a bit at or past the rule
/// count; the mask in force is then left as it was).
///
/// # Safety
/// `policy` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_set_shadow(
    policy: *mut rate_keyed_policy,
    mask: u32,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle; `as_ref` checks NULL.
    let policy = unsafe { policy.as_ref() }.map(inner);
    set_shadow_of(policy, |policy| policy.set_shadow(mask))
}

/// Writes this handle's shadow rules to `*out`, as `rate_policy_get_shadow`.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `policy` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL (`out` untouched).
///
/// # Safety
/// `policy` is NULL or a live handle; `out` is NULL or points to a writable `uint32_t`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_get_shadow(
    policy: *const rate_keyed_policy,
    out: *mut u32,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle; `as_ref` checks NULL.
    let policy = unsafe { policy.as_ref() }.map(inner);
    // SAFETY: passed on from this function's contract.
    unsafe { get_shadow_of(policy, out, KeyedPolicy::shadow) }
}
