//! A policy handle's shadow rules through the C ABI (docs/policies.md, Shadow rules).

use super::super::{boundary, status_of, RATE_E_NULL, RATE_OK};
use super::{policy_ref, rate_policy};
use librate::ConfigError;

/// Makes the rules of `mask` (bit i for rule i, in the order given) this handle's shadow
/// rules, replacing the ones before; 0 enforces every rule. A shadow rule is decided and
/// reports its would-be denials, but never denies a request: `decision.allowed`,
/// `denied_by` and the combined fields of a `rate_policy_decision` are the enforced rules'
/// alone, and a shadow rule that would have denied shows as `rules[i].allowed == 0` in a
/// decision that may be admitted. A shadow rule takes units only from requests the
/// enforced rules admit, and never gives back. Every rule shadow: every request admitted,
/// with `limit` and `remaining` UINT64_MAX. The mask is the handle's own, never the
/// file's: every process sharing a file applies its own (docs/policies.md, Shadow rules).
///
/// Thread-safety: safe to call concurrently on one handle, with any other call; a
/// decision racing the change may apply either mask.
///
/// NULL: `policy` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (a bit at or past the rule
/// count; the mask in force is then left as it was).
///
/// # Safety
/// `policy` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_set_shadow(policy: *mut rate_policy, mask: u32) -> i32 {
    // SAFETY: the caller passes NULL or a live handle.
    let policy = unsafe { policy_ref(policy) };
    set_shadow_of(policy, |policy| policy.set_shadow(mask))
}

/// Writes this handle's shadow rules to `*out` (bit i for rule i; 0 when every rule is
/// enforced).
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
pub unsafe extern "C" fn rate_policy_get_shadow(policy: *const rate_policy, out: *mut u32) -> i32 {
    // SAFETY: the caller passes NULL or a live handle.
    let policy = unsafe { policy_ref(policy) };
    // SAFETY: passed on from this function's contract.
    unsafe { get_shadow_of(policy, out, librate::Policy::shadow) }
}

/// The body of every `rate_*_set_shadow`: `set` on the handle (`None`: it was NULL),
/// inside the boundary.
pub(crate) fn set_shadow_of<T>(
    handle: Option<&T>,
    set: impl FnOnce(&T) -> Result<(), ConfigError>,
) -> i32 {
    boundary(|| match handle.map(set) {
        None => RATE_E_NULL,
        Some(Ok(())) => RATE_OK,
        Some(Err(error)) => status_of(error),
    })
}

/// The body of every `rate_*_get_shadow`: the mask `get` reads of the handle (`None`: it
/// was NULL) written to `out`, inside the boundary.
///
/// # Safety
/// `out` is NULL or points to a writable `u32`.
pub(crate) unsafe fn get_shadow_of<T>(
    handle: Option<&T>,
    out: *mut u32,
    get: impl FnOnce(&T) -> u32,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_mut` checks NULL.
        match (handle, unsafe { out.as_mut() }) {
            (Some(handle), Some(out)) => {
                *out = get(handle);
                RATE_OK
            }
            _ => RATE_E_NULL,
        }
    })
}
