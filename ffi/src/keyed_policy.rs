//! `rate_keyed_policy_*`: per-key and global rules decided together for one key, all or
//! nothing (docs/policies.md), in process or in a file every process maps (docs/shared.md).

use super::keyed::with_key;
use super::policy::{costs_of, report_policy, rules_of};
use super::{boundary, outcome_status, path_of, rate_config, status_of};
use super::{rate_policy_decision, RATE_E_NULL, RATE_OK};
use librate::OpenError;
use librate::{Instant, KeyedPolicy, KeyedRule, MAX_RULES};
use std::ffi::c_char;
use std::path::Path;

mod change;
mod shadow;
mod upkeep;

pub use self::change::{
    rate_keyed_policy_get_rules, rate_keyed_policy_set_rules, rate_keyed_policy_set_rules_at,
};
pub use self::shadow::{rate_keyed_policy_get_shadow, rate_keyed_policy_set_shadow};
pub use self::upkeep::{
    rate_keyed_policy_read_stats, rate_keyed_policy_read_stats_at, rate_keyed_policy_reset,
};

/// Scope of a keyed policy's rule: one state for every key.
pub const RATE_RULE_GLOBAL: u32 = 0;
/// Scope of a keyed policy's rule: a state per key, in a keyed table.
pub const RATE_RULE_PER_KEY: u32 = 1;

/// One rule of a keyed policy: a configuration and its scope.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rate_keyed_rule {
    /// What the rule enforces, as for `rate_limiter_new`.
    pub config: rate_config,
    /// `RATE_RULE_PER_KEY` or `RATE_RULE_GLOBAL`; anything else is RATE_E_INVALID_CONFIG.
    pub scope: u32,
}

impl From<KeyedRule> for rate_keyed_rule {
    fn from(rule: KeyedRule) -> Self {
        Self {
            config: rate_config::from(rule.config()),
            scope: if rule.is_per_key() {
                RATE_RULE_PER_KEY
            } else {
                RATE_RULE_GLOBAL
            },
        }
    }
}

impl rate_keyed_rule {
    /// The Rust rule, or `None` for an unknown algorithm or scope.
    fn to_rule(self) -> Option<KeyedRule> {
        let config = self.config.to_config()?;
        match self.scope {
            RATE_RULE_PER_KEY => Some(KeyedRule::per_key(config)),
            RATE_RULE_GLOBAL => Some(KeyedRule::global(config)),
            _ => None,
        }
    }
}

/// An opaque keyed policy: up to `RATE_POLICY_MAX_RULES` rules, each per key or global.
/// Safe to use from many threads at once; `rate_keyed_policy_free` must not race with any
/// other call on the same handle.
pub struct rate_keyed_policy {
    policy: KeyedPolicy,
}

/// Borrows the keyed policy behind a handle.
///
/// # Safety
/// `policy` is NULL or a live handle from `rate_keyed_policy_new` or `_open`.
pub(super) unsafe fn keyed_policy_ref<'a>(
    policy: *const rate_keyed_policy,
) -> Option<&'a KeyedPolicy> {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    unsafe { policy.as_ref() }.map(|handle| &handle.policy)
}

/// Creates a keyed policy of the `rules_len` rules at `rules` (1 to
/// RATE_POLICY_MAX_RULES, any mix of algorithms and scopes), every per-key rule a table
/// of `capacity` keys as for `rate_keyed_new` (its memory allocated now), every rule full
/// at any time. A request for a key is admitted iff every rule admits it (a per-key rule
/// on the key's own state, a global rule on everybody's), and a denied request takes
/// nothing from any rule (docs/policies.md says what concurrent callers may observe).
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_keyed_policy_free`; on error `*out` is left untouched. `rules` is
/// only read during the call.
///
/// NULL: `rules` NULL with a non-zero `rules_len`, or `out` NULL, is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (no rule, more than
/// RATE_POLICY_MAX_RULES, an unknown scope, a rule `rate_limiter_new` rejects, or a
/// `capacity` `rate_keyed_new` rejects).
///
/// # Safety
/// `rules` is NULL or points to `rules_len` readable `rate_keyed_rule`s; `out` is NULL or
/// points to a writable `rate_keyed_policy *`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_new(
    rules: *const rate_keyed_rule,
    rules_len: usize,
    capacity: u64,
    out: *mut *mut rate_keyed_policy,
) -> i32 {
    boundary(|| {
        // SAFETY: passed on from this function's contract.
        unsafe {
            construct(rules, rules_len, out, |rules| {
                KeyedPolicy::new(rules, capacity)
            })
        }
    })
}

/// Opens the keyed policy whose rules live in the file at `path`, creating the file if it
/// does not exist: every process that opens the same file shares one policy, each rule's
/// limit holding across them exactly as across threads sharing one handle. The file holds
/// every rule (each per-key rule's table, each global rule's state) behind one header
/// naming the whole policy; one that exists must hold the same rules (those it was made
/// with, or the last ones any process set in it with `rate_keyed_policy_set_rules`), in
/// the same order, and `capacity`; `rate_keyed_policy_open_replacing` replaces the file's
/// rules instead. Creation, another boot and a process killed mid-call are as for
/// `rate_keyed_open`.
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_keyed_policy_free`, which unmaps the file and leaves it in place; on
/// error `*out` is left untouched. `path` and `rules` are only read during the call.
///
/// NULL: `path` or `out` NULL, or `rules` NULL with a non-zero `rules_len`, is
/// RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_INVALID_CONFIG (as `rate_keyed_policy_new`),
/// RATE_E_INCOMPATIBLE (the file is not a librate keyed policy of these rules and this
/// capacity; it is left untouched, and `rate_describe_file` says what it holds), or
/// RATE_E_IO (`errno` says why).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `rules` is NULL or points to `rules_len`
/// readable `rate_keyed_rule`s; `out` is NULL or points to a writable
/// `rate_keyed_policy *`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_open(
    path: *const c_char,
    rules: *const rate_keyed_rule,
    rules_len: usize,
    capacity: u64,
    out: *mut *mut rate_keyed_policy,
) -> i32 {
    let open = |path: &Path, rules: &[KeyedRule]| KeyedPolicy::open(path, rules, capacity);
    // SAFETY: passed on from this function's contract.
    unsafe { open_file(path, rules, rules_len, out, open) }
}

/// Opens the keyed policy in the file at `path` as `rate_keyed_policy_open` does, but a
/// file that holds other rules of the same scopes and algorithms is given `rules` instead,
/// exactly as `rate_keyed_policy_set_rules` changes them (now, every key's state and every
/// global count carried over), for every process attached. See docs/shared.md, changing
/// the rule.
///
/// Ownership: as `rate_keyed_policy_open`.
///
/// Thread-safety: as `rate_keyed_policy_open`; of openers racing with different rules,
/// the last to change each rule wins.
///
/// NULL: as `rate_keyed_policy_open`.
///
/// Returns as `rate_keyed_policy_open`, and RATE_E_INVALID_CONFIG when a file's rule
/// cannot be carried over to its new one (another algorithm, a sliding log's rule);
/// RATE_E_INCOMPATIBLE only for a file that is no librate keyed policy this librate
/// reads, or one of other scopes, rule count or capacity.
///
/// # Safety
/// As `rate_keyed_policy_open`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_open_replacing(
    path: *const c_char,
    rules: *const rate_keyed_rule,
    rules_len: usize,
    capacity: u64,
    out: *mut *mut rate_keyed_policy,
) -> i32 {
    let open =
        |path: &Path, rules: &[KeyedRule]| KeyedPolicy::open_replacing(path, rules, capacity);
    // SAFETY: passed on from this function's contract.
    unsafe { open_file(path, rules, rules_len, out, open) }
}

/// The body of both openers: `open` opens the policy at `path`.
///
/// # Safety
/// As the openers': `path` is NULL or NUL-terminated, `rules` NULL or `rules_len`
/// readable rules, `out` NULL or writable.
unsafe fn open_file(
    path: *const c_char,
    rules: *const rate_keyed_rule,
    rules_len: usize,
    out: *mut *mut rate_keyed_policy,
    open: impl FnOnce(&Path, &[KeyedRule]) -> Result<KeyedPolicy, OpenError>,
) -> i32 {
    boundary(|| {
        // SAFETY: passed on from the caller's contract.
        let Some(path) = (unsafe { path_of(path) }) else {
            return RATE_E_NULL;
        };
        // SAFETY: passed on from the caller's contract.
        unsafe { construct(rules, rules_len, out, |rules| open(path, rules)) }
    })
}

/// The body of the constructors: checks the rules and gives the built handle to the
/// caller through `out`.
///
/// # Safety
/// As the exports': `rules` is NULL or points to `rules_len` readable rules; `out` is NULL
/// or writable.
unsafe fn construct<E: Into<librate::Error>>(
    rules: *const rate_keyed_rule,
    rules_len: usize,
    out: *mut *mut rate_keyed_policy,
    build: impl FnOnce(&[KeyedRule]) -> Result<KeyedPolicy, E>,
) -> i32 {
    if out.is_null() {
        return RATE_E_NULL;
    }
    // SAFETY: passed on from this function's contract.
    let rules = match unsafe { rules_of(rules, rules_len, rate_keyed_rule::to_rule) } {
        Ok(rules) => rules,
        Err(status) => return status,
    };
    match build(&rules) {
        Ok(policy) => {
            // SAFETY: `out` is non-NULL and the caller promised it is writable.
            unsafe { *out = Box::into_raw(Box::new(rate_keyed_policy { policy })) };
            RATE_OK
        }
        Err(error) => status_of(error),
    }
}

/// Frees a keyed policy made by `rate_keyed_policy_new`, `rate_keyed_policy_open` or
/// `rate_keyed_policy_open_replacing`.
///
/// Ownership: takes back the handle; it must not be used afterwards.
///
/// Thread-safety: must not race with any other call on the same handle.
///
/// NULL: a no-op.
///
/// # Safety
/// `policy` is NULL or a live handle, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_free(policy: *mut rate_keyed_policy) {
    boundary(|| {
        if !policy.is_null() {
            // SAFETY: non-NULL handles come from `Box::into_raw` in `construct`, and the
            // caller gives this one back exactly once.
            drop(unsafe { Box::from_raw(policy) });
        }
    })
}

/// The policy behind a handle.
fn inner(handle: &rate_keyed_policy) -> &KeyedPolicy {
    &handle.policy
}

/// Acquires `n` units of every rule for the key of `key_len` bytes at `key`, now
/// (CLOCK_MONOTONIC, see `rate_now_ns`), or nothing. Keys are arbitrary bytes, as for
/// `rate_keyed_acquire`. `n == 0` is a query: admitted, changes nothing, adds no key.
/// With `out` NULL only the outcome is computed.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `policy` NULL, or `key` NULL with `key_len > 0`, is RATE_E_NULL; `out` may be
/// NULL.
///
/// Returns RATE_OK (admitted), RATE_LIMITED (denied), RATE_E_NULL,
/// RATE_E_INSUFFICIENT_CAPACITY (`n` above a rule's limit), or RATE_E_TABLE_FULL (the key
/// is new to a per-key rule whose table is full of live keys: nothing was taken). On an
/// error `out` is untouched.
///
/// # Safety
/// `policy` is NULL or a live handle; `key` is NULL or points to `key_len` readable
/// bytes; `out` is NULL or points to a writable `rate_policy_decision`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_acquire(
    policy: *mut rate_keyed_policy,
    key: *const u8,
    key_len: usize,
    n: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { rate_keyed_policy_acquire_at(policy, key, key_len, n, librate::now_ns(), out) }
}

/// Acquires `n` units of every rule for the key at `now_ns` (nanoseconds on the caller's
/// timeline; use one timeline per policy), or nothing.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_policy_acquire`.
///
/// Returns as `rate_keyed_policy_acquire`.
///
/// # Safety
/// As `rate_keyed_policy_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_acquire_at(
    policy: *mut rate_keyed_policy,
    key: *const u8,
    key_len: usize,
    n: u64,
    now_ns: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    let body = |policy: &KeyedPolicy, key: &[u8]| {
        let costs = [n; MAX_RULES];
        // SAFETY: the caller passes NULL or a writable decision.
        unsafe { decide(policy, key, &costs[..policy.rules().len()], now_ns, out) }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(policy, key, key_len, inner, body) }
}

/// Acquires `costs[i]` units of rule `i` for the key at `now_ns`, for every rule, or
/// nothing: a rule of cost 0 takes no part (its entry in `out->rules` only reports its
/// state, and the combined decision leaves it out), so one policy holds the limits of
/// several kinds of request (a post costs the post rule and the global rule, a like the
/// like rule and the global rule). `costs_len` must be the policy's rule count. All costs
/// 0 is a query.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_policy_acquire`, and `costs` NULL is RATE_E_NULL.
///
/// Returns as `rate_keyed_policy_acquire`, and RATE_E_INVALID_CONFIG if `costs_len` is not
/// the policy's rule count.
///
/// # Safety
/// As `rate_keyed_policy_acquire`; `costs` is NULL or points to `costs_len` readable
/// `uint64_t`s.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_acquire_costs_at(
    policy: *mut rate_keyed_policy,
    key: *const u8,
    key_len: usize,
    costs: *const u64,
    costs_len: usize,
    now_ns: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    let body = |policy: &KeyedPolicy, key: &[u8]| {
        // SAFETY: passed on from this function's contract.
        let costs = match unsafe { costs_of(costs, costs_len) } {
            Ok(costs) => costs,
            Err(status) => return status,
        };
        // SAFETY: the caller passes NULL or a writable decision.
        unsafe { decide(policy, key, costs, now_ns, out) }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(policy, key, key_len, inner, body) }
}

/// `rate_keyed_policy_acquire_costs_at` now (CLOCK_MONOTONIC).
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_policy_acquire_costs_at`.
///
/// Returns as `rate_keyed_policy_acquire_costs_at`.
///
/// # Safety
/// As `rate_keyed_policy_acquire_costs_at`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_policy_acquire_costs(
    policy: *mut rate_keyed_policy,
    key: *const u8,
    key_len: usize,
    costs: *const u64,
    costs_len: usize,
    out: *mut rate_policy_decision,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        rate_keyed_policy_acquire_costs_at(
            policy,
            key,
            key_len,
            costs,
            costs_len,
            librate::now_ns(),
            out,
        )
    }
}

/// A request of `costs` for `key` at `now_ns`: the outcome alone when `out` is NULL,
/// else the whole decision.
///
/// # Safety
/// `out` is NULL or points to a writable `rate_policy_decision`.
unsafe fn decide(
    policy: &KeyedPolicy,
    key: &[u8],
    costs: &[u64],
    now_ns: u64,
    out: *mut rate_policy_decision,
) -> i32 {
    if out.is_null() {
        return outcome_status(policy.try_acquire_costs_at(
            key,
            costs,
            Instant::from_nanos(now_ns),
        ));
    }
    // SAFETY: `out` is non-NULL and writable, per this function's contract.
    unsafe {
        report_policy(
            policy.acquire_costs_at(key, costs, Instant::from_nanos(now_ns)),
            out,
        )
    }
}
