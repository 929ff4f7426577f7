//! Changing a keyed policy's rules at run time, through the C ABI.

use super::super::policy::set_rules_of;
use super::super::{boundary, RATE_E_NULL, RATE_OK};
use super::{inner, rate_keyed_policy, rate_keyed_rule};
use librate::Instant;

/// Replaces the keyed policy's rules, now (`rate_now_ns`): as
/// `rate_keyed_policy_set_rules_at`.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call.
///
/// NULL: `policy` NULL, or `rules` NULL with a non-zero `rules_len`, is RATE_E_NULL.
///
/// Returns as `rate_keyed_policy_set_rules_at`.
///
/// # Safety
/// `policy` is NULL or a live handle; `rules` is NULL or points to `rules_len` readable
/// `rate_keyed_rule`s.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_set_rules(
    policy: *mut rate_keyed_policy,
    rules: *const rate_keyed_rule,
    rules_len: usize,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { rate_keyed_policy_set_rules_at(policy, rules, rules_len, librate::now_ns()) }
}

/// Replaces the keyed policy's rules at `now_ns` (a customer changes plan): each per-key
/// rule's table as `rate_keyed_set_config_at` changes one (every key's state carried
/// over, a key fresh at the change starting anew, new keys waiting until every key is
/// moved), each global rule as `rate_limiter_set_config_at`. The new rules are as many as
/// the old, in the same order, each of the same scope and algorithm as the one it
/// replaces (a period of RATE_FOREVER counts as the same).
///
/// Thread-safety: safe to call concurrently on one handle, with any other call. The rules
/// change one after another; each rule's step of a racing request is decided wholly under
/// that rule's old or new configuration, so no rule admits past its limit. A request that
/// a racing change makes larger than a per-key rule's new limit is refused with
/// RATE_E_INSUFFICIENT_CAPACITY, by a global rule's denied with a `retry_after_ns` of
/// UINT64_MAX; either way it takes nothing. `rules` is only read during the call.
///
/// NULL: `policy` NULL, or `rules` NULL with a non-zero `rules_len`, is RATE_E_NULL.
///
/// A policy opened from a file (`rate_keyed_policy_open`) changes in the file, each rule
/// once, for every process attached, as `rate_keyed_set_config_at` and
/// `rate_limiter_set_config_at` change theirs.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_INVALID_CONFIG (another number of rules, another
/// scope, an unknown scope, a rule `rate_limiter_new` rejects, one that cannot carry its
/// state over as `rate_limiter_set_config_at` says, or a table region that cannot be
/// allocated); for a policy in a file, also RATE_E_IO (`errno` EBUSY) or
/// RATE_E_INCOMPATIBLE as `rate_keyed_set_config_at` says. On error no rule changes, but
/// for an allocation (or, in a file, a busy change) that fails after some rules changed.
///
/// # Safety
/// `policy` is NULL or a live handle; `rules` is NULL or points to `rules_len` readable
/// `rate_keyed_rule`s.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_set_rules_at(
    policy: *mut rate_keyed_policy,
    rules: *const rate_keyed_rule,
    rules_len: usize,
    now_ns: u64,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle (`as_ref` checks NULL), and `rules`
    // as `set_rules_of` needs.
    unsafe {
        set_rules_of(
            policy.as_ref().map(inner),
            rules,
            rules_len,
            rate_keyed_rule::to_rule,
            |policy, rules| policy.set_rules_at(rules, Instant::from_nanos(now_ns)),
        )
    }
}

/// Writes the policy's rules in force, in order, to `out[0]` up to `out[out_len - 1]` (at
/// most as many as the policy has): the rules it was made with, or the last
/// `rate_keyed_policy_set_rules` gave. For a policy opened from a file, the file's rules
/// in force, which a change by any process attached may have replaced.
///
/// Ownership: `out` is the caller's; nothing is kept.
///
/// Thread-safety: safe to call concurrently on one handle, with any other call.
///
/// NULL: `policy` NULL, or `out` NULL with a non-zero `out_len`, is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL.
///
/// # Safety
/// `policy` is NULL or a live handle; `out` is NULL or points to `out_len` writable
/// `rate_keyed_rule`s.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_get_rules(
    policy: *const rate_keyed_policy,
    out: *mut rate_keyed_rule,
    out_len: usize,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle; `as_ref` checks NULL.
        let Some(policy) = (unsafe { policy.as_ref() }) else {
            return RATE_E_NULL;
        };
        if out_len == 0 {
            return RATE_OK;
        }
        if out.is_null() {
            return RATE_E_NULL;
        }
        // SAFETY: `out` points to `out_len` writable rules (the caller's promise).
        let out = unsafe { std::slice::from_raw_parts_mut(out, out_len) };
        for (slot, rule) in out.iter_mut().zip(inner(policy).rules()) {
            *slot = rate_keyed_rule::from(rule);
        }
        RATE_OK
    })
}
