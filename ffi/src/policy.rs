//! `rate_policy_*`: several rules decided together, all or nothing (docs/policies.md).

use super::{boundary, outcome_status, rate_config, rate_decision, status_of};
use super::{RATE_E_INVALID_CONFIG, RATE_E_NULL, RATE_LIMITED, RATE_OK};
use librate::{Instant, Policy, PolicyDecision, MAX_RULES};

mod change;
mod shadow;

pub(super) use self::change::set_rules_of;
pub use self::change::{rate_policy_set_rules, rate_policy_set_rules_at};
pub(super) use self::shadow::{get_shadow_of, set_shadow_of};
pub use self::shadow::{rate_policy_get_shadow, rate_policy_set_shadow};

/// The most rules a policy holds.
pub const RATE_POLICY_MAX_RULES: usize = 8;
// A literal above, so cbindgen writes a number; the same as the Rust API's.
const _: () = assert!(RATE_POLICY_MAX_RULES == MAX_RULES);

/// `denied_by` of an admitted request: no rule denied it.
pub const RATE_POLICY_NO_RULE: u32 = u32::MAX;

/// An opaque policy: up to `RATE_POLICY_MAX_RULES` rules over one subject. Safe to use
/// from many threads at once; `rate_policy_free` must not race with any other call on the
/// same handle.
pub struct rate_policy {
    policy: Policy,
}

/// A policy's decision: the combined decision, which rule denied, and each rule's own.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rate_policy_decision {
    /// Admitted iff every rule admitted. `limit` and `remaining` are the least over the
    /// rules, `retry_after_ns` and `reset_after_ns` the greatest, `wait_ns` 0. With shadow
    /// rules (`rate_policy_set_shadow`), over the enforced rules alone.
    pub decision: rate_decision,
    /// The index of the first rule, in the order given, that denied the request;
    /// RATE_POLICY_NO_RULE when admitted. Never a shadow rule.
    pub denied_by: u32,
    /// How many entries of `rules` are used: the policy's rule count.
    pub rules_len: u32,
    /// Each rule's own decision, in the order given. Admitted: what each rule decided,
    /// units taken. Denied: what each rule would decide alone, with `remaining` and
    /// `reset_after_ns` of its state as it is, since nothing was taken. A shadow rule's
    /// is its own decision, made alone: `allowed == 0` is a denial it would have made,
    /// even in an admitted decision.
    pub rules: [rate_decision; RATE_POLICY_MAX_RULES],
}

impl From<PolicyDecision> for rate_policy_decision {
    fn from(decision: PolicyDecision) -> Self {
        let mut rules = [rate_decision::default(); RATE_POLICY_MAX_RULES];
        for (rule, each) in rules.iter_mut().zip(decision.rules()) {
            *rule = rate_decision::from(*each);
        }
        Self {
            decision: rate_decision::from(decision.decision),
            denied_by: decision
                .denied_by
                .map_or(RATE_POLICY_NO_RULE, |index| index as u32),
            rules_len: decision.rules().len() as u32,
            rules,
        }
    }
}

/// Creates a policy of the `rules_len` rules at `rules` (1 to RATE_POLICY_MAX_RULES, any
/// mix of algorithms), each full at any time. A request is admitted iff every rule admits
/// it, and a denied request takes nothing from any rule (docs/policies.md says what
/// concurrent callers of one policy may observe).
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_policy_free`; on error `*out` is left untouched. `rules` is only
/// read during the call.
///
/// NULL: `rules` NULL with a non-zero `rules_len`, or `out` NULL, is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (no rule, more than
/// RATE_POLICY_MAX_RULES, or a rule `rate_limiter_new` rejects).
///
/// # Safety
/// `rules` is NULL or points to `rules_len` readable `rate_config`s; `out` is NULL or
/// points to a writable `rate_policy *`.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_new(
    rules: *const rate_config,
    rules_len: usize,
    out: *mut *mut rate_policy,
) -> i32 {
    boundary(|| {
        if out.is_null() {
            return RATE_E_NULL;
        }
        // SAFETY: passed on from this function's contract.
        let configs = match unsafe { rules_of(rules, rules_len, rate_config::to_config) } {
            Ok(configs) => configs,
            Err(status) => return status,
        };
        match Policy::new(&configs) {
            Ok(policy) => {
                // SAFETY: `out` is non-NULL and the caller promised it is writable.
                unsafe { *out = Box::into_raw(Box::new(rate_policy { policy })) };
                RATE_OK
            }
            Err(error) => status_of(error),
        }
    })
}

/// The `rules_len` rules at `rules`, each converted by `convert`: RATE_E_NULL for NULL
/// with a non-zero length; RATE_E_INVALID_CONFIG for no rule, more than
/// RATE_POLICY_MAX_RULES, or one `convert` rejects.
///
/// # Safety
/// `rules` is NULL or points to `rules_len` readable values.
pub(super) unsafe fn rules_of<C: Copy, R>(
    rules: *const C,
    rules_len: usize,
    convert: impl Fn(C) -> Option<R>,
) -> Result<Vec<R>, i32> {
    if rules.is_null() && rules_len > 0 {
        return Err(RATE_E_NULL);
    }
    if rules_len == 0 || rules_len > RATE_POLICY_MAX_RULES {
        return Err(RATE_E_INVALID_CONFIG);
    }
    // SAFETY: non-NULL, and the caller promised `rules_len` readable values (at most
    // RATE_POLICY_MAX_RULES, checked above).
    let rules = unsafe { std::slice::from_raw_parts(rules, rules_len) };
    rules
        .iter()
        .map(|&rule| convert(rule))
        .collect::<Option<Vec<R>>>()
        .ok_or(RATE_E_INVALID_CONFIG)
}

/// Frees a policy made by `rate_policy_new`.
///
/// Ownership: takes back the handle; it must not be used afterwards.
///
/// Thread-safety: must not race with any other call on the same handle.
///
/// NULL: a no-op.
///
/// # Safety
/// `policy` is NULL or a live handle from `rate_policy_new`, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_free(policy: *mut rate_policy) {
    boundary(|| {
        if !policy.is_null() {
            // SAFETY: non-NULL handles come from `Box::into_raw` in `rate_policy_new`, and
            // the caller gives this one back exactly once.
            drop(unsafe { Box::from_raw(policy) });
        }
    })
}

/// Borrows the policy behind a handle.
///
/// # Safety
/// `policy` is NULL or a live handle from `rate_policy_new`.
pub(super) unsafe fn policy_ref<'a>(policy: *const rate_policy) -> Option<&'a Policy> {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    unsafe { policy.as_ref() }.map(|handle| &handle.policy)
}

/// Acquires `n` units now (CLOCK_MONOTONIC, see `rate_now_ns`) from every rule, or from
/// none. `n == 0` is a query: admitted, changes nothing. With `out` NULL only the outcome
/// is computed.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `policy` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns RATE_OK (admitted), RATE_LIMITED (denied), RATE_E_NULL, or
/// RATE_E_INSUFFICIENT_CAPACITY (`n` above a rule's limit; `out` untouched).
///
/// # Safety
/// `policy` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_policy_decision`.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_acquire(
    policy: *mut rate_policy,
    n: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    boundary(|| unsafe { acquire(policy, n, librate::now_ns(), out) })
}

/// Acquires `n` units at `now_ns` (nanoseconds on the caller's timeline; use one timeline
/// per policy) from every rule, or from none.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `policy` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_E_NULL, or RATE_E_INSUFFICIENT_CAPACITY.
///
/// # Safety
/// `policy` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_policy_decision`.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_acquire_at(
    policy: *mut rate_policy,
    n: u64,
    now_ns: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    boundary(|| unsafe { acquire(policy, n, now_ns, out) })
}

/// Acquires `costs[i]` units of rule `i` at `now_ns`, for every rule, or nothing: a rule
/// of cost 0 takes no part (its entry in `out->rules` only reports its state, and the
/// combined decision leaves it out). `costs_len` must be the policy's rule count. All
/// costs 0 is a query. With `out` NULL only the outcome is computed.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `policy` or `costs` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_E_NULL, RATE_E_INSUFFICIENT_CAPACITY (a cost
/// above its rule's limit), or RATE_E_INVALID_CONFIG (`costs_len` is not the rule count).
///
/// # Safety
/// `policy` is NULL or a live handle; `costs` is NULL or points to `costs_len` readable
/// `uint64_t`s; `out` is NULL or points to a writable `rate_policy_decision`.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_acquire_costs_at(
    policy: *mut rate_policy,
    costs: *const u64,
    costs_len: usize,
    now_ns: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let Some(policy) = (unsafe { policy_ref(policy) }) else {
            return RATE_E_NULL;
        };
        // SAFETY: passed on from this function's contract.
        let costs = match unsafe { costs_of(costs, costs_len) } {
            Ok(costs) => costs,
            Err(status) => return status,
        };
        if out.is_null() {
            return outcome_status(policy.try_acquire_costs_at(costs, Instant::from_nanos(now_ns)));
        }
        // SAFETY: `out` is non-NULL and the caller promised it is writable.
        unsafe {
            report_policy(
                policy.acquire_costs_at(costs, Instant::from_nanos(now_ns)),
                out,
            )
        }
    })
}

/// `rate_policy_acquire_costs_at` now (CLOCK_MONOTONIC).
///
/// Thread-safety, NULL, returns: as `rate_policy_acquire_costs_at`.
///
/// # Safety
/// As `rate_policy_acquire_costs_at`.
#[no_mangle]
pub unsafe extern "C" fn rate_policy_acquire_costs(
    policy: *mut rate_policy,
    costs: *const u64,
    costs_len: usize,
    out: *mut rate_policy_decision,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { rate_policy_acquire_costs_at(policy, costs, costs_len, librate::now_ns(), out) }
}

/// The `costs_len` costs at `costs`: RATE_E_NULL for NULL; RATE_E_INVALID_CONFIG for more
/// than RATE_POLICY_MAX_RULES, before reading any (no policy has that many rules).
///
/// # Safety
/// `costs` is NULL or points to `costs_len` readable words that outlive `'a`.
pub(super) unsafe fn costs_of<'a>(costs: *const u64, costs_len: usize) -> Result<&'a [u64], i32> {
    if costs.is_null() {
        return Err(RATE_E_NULL);
    }
    if costs_len > RATE_POLICY_MAX_RULES {
        return Err(RATE_E_INVALID_CONFIG);
    }
    // SAFETY: non-NULL, and the caller promised `costs_len` readable words.
    Ok(unsafe { std::slice::from_raw_parts(costs, costs_len) })
}

/// Both acquires: the outcome alone when `out` is NULL, else the whole decision.
///
/// # Safety
/// As the exports': `policy` is NULL or a live handle; `out` is NULL or writable.
unsafe fn acquire(
    policy: *mut rate_policy,
    n: u64,
    now_ns: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle.
    let Some(policy) = (unsafe { policy_ref(policy) }) else {
        return RATE_E_NULL;
    };
    if out.is_null() {
        return outcome_status(policy.try_acquire_at(n, Instant::from_nanos(now_ns)));
    }
    // SAFETY: `out` is non-NULL and the caller promised it is writable.
    unsafe { report_policy(policy.acquire_at(n, Instant::from_nanos(now_ns)), out) }
}

/// Writes a policy's decision to `out` and returns RATE_OK or RATE_LIMITED; an error is
/// returned as its status and leaves `out` untouched.
///
/// # Safety
/// `out` points to a writable `rate_policy_decision`.
pub(super) unsafe fn report_policy(
    result: Result<PolicyDecision, impl Into<librate::Error>>,
    out: *mut rate_policy_decision,
) -> i32 {
    let decision = match result {
        Ok(decision) => decision,
        Err(error) => return status_of(error),
    };
    // SAFETY: per this function's contract.
    unsafe { out.write(rate_policy_decision::from(decision)) };
    if decision.decision.allowed {
        RATE_OK
    } else {
        RATE_LIMITED
    }
}
