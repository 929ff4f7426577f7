//! The Redis tier's scripts for the bindings (docs/redis.md): each language sends them through
//! its own Redis client, and takes them from here, so every language runs the same bytes.

use std::ffi::c_char;

use super::keyed::key_bytes;
use super::policy::{rules_of, RATE_POLICY_MAX_RULES};
use super::{boundary, rate_config, status_of, RATE_E_INVALID_CONFIG, RATE_E_NULL, RATE_OK};
use librate::redis::{slot, PolicyScript, Script};
use librate::ConfigError;

/// The most configuration arguments a script takes.
pub const RATE_REDIS_MAX_ARGS: usize = 4;

/// A Redis script of librate and the arguments it takes: see `rate_redis_prepare`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rate_redis_script {
    /// The Lua source, NUL-terminated and static: valid for the life of the process.
    pub source: *const c_char,
    /// The configuration arguments, sent after `now`, `n` and `max_wait_ns`, in this order.
    pub config_args: [u64; RATE_REDIS_MAX_ARGS],
    /// How many of `config_args` are used.
    pub config_args_len: u32,
    /// The most units a request may ask for (GCRA: the burst; windows: the limit): a
    /// larger `n` is RATE_E_INSUFFICIENT_CAPACITY, decided by the client before sending.
    pub limit: u64,
}

/// The Lua script that decides `config`'s algorithm on Redis, with its arguments (docs/redis.md).
/// A client sends it with EVALSHA (loading it after NOSCRIPT) with the keys to decide
/// (their states; on a Cluster, all of one hash slot: see `rate_redis_slot`) and the
/// arguments `now` (a decimal u64, or "" for the server's clock), `n`, `max_wait_ns` (0
/// but for a GCRA reserve), then `config_args`. Every key is decided at the one `now`. The
/// reply for one key is its decision, {allowed, limit, remaining, retry_after_ns,
/// reset_after_ns, wait_ns}, each an integer or a decimal string, every one a u64; for
/// several keys it is the array of their decisions in the order of the keys, where a key
/// holding something else is that key's error reply. An acquire whose caller reads only
/// `allowed` may send `max_wait_ns` as "" (the brief form): each key's reply is then that
/// integer, 1 or 0, alone, which costs the server less than the decision's six.
///
/// Ownership: `out->source` is static; nothing is allocated.
///
/// NULL: `config` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (as `rate_limiter_new`, or a
/// duration of 2^53 ns or more, which Lua's doubles do not hold exactly).
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_redis_prepare(
    config: *const rate_config,
    out: *mut rate_redis_script,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let (Some(config), false) = (unsafe { config.as_ref() }, out.is_null()) else {
            return RATE_E_NULL;
        };
        let Some(config) = config.to_config() else {
            return RATE_E_INVALID_CONFIG;
        };
        let script = Script::of(&config)
            .map(|script| (script.source_with_nul(), script.limit(), script.config_args));
        // SAFETY: `out` is non-NULL and the caller promised it is writable.
        unsafe { write_prepared(out, script) }
    })
}

/// The most configuration arguments a policy's script takes: the rule count, then three
/// per rule.
pub const RATE_REDIS_POLICY_MAX_ARGS: usize = 25;
// A literal above, so cbindgen writes a number.
const _: () = assert!(RATE_REDIS_POLICY_MAX_ARGS == 1 + 3 * RATE_POLICY_MAX_RULES);

/// A policy's Redis script and the arguments it takes: see `rate_redis_policy_prepare`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rate_redis_policy_script {
    /// The Lua source, NUL-terminated and static: valid for the life of the process.
    pub source: *const c_char,
    /// The configuration arguments, sent after `now`, `n` and `max_wait_ns` (always 0),
    /// in this order: the rule count, then each rule's algorithm (RATE_GCRA, ...) and
    /// its two arguments.
    pub config_args: [u64; RATE_REDIS_POLICY_MAX_ARGS],
    /// How many of `config_args` are used.
    pub config_args_len: u32,
    /// The most units a request may ask for: the least of the rules' limits. A larger
    /// `n` is RATE_E_INSUFFICIENT_CAPACITY, decided by the client before sending.
    pub limit: u64,
}

/// The Lua script that decides a policy of the `rules_len` rules at `rules` on Redis,
/// with its arguments: one call decides every rule of one key, at one `now`, and writes
/// their states only if all admit, so a denied request takes from no rule. A client sends
/// it with EVALSHA (loading it after NOSCRIPT) naming the rules' keys in rule order (rule
/// `i` of `key` under `prefix` at `prefix{=key}:i`, `i` in decimal: all in one hash slot
/// for a prefix without `{` or `}`, which clients refuse), and the arguments `now` (a
/// decimal u64, or "" for the server's clock), `n`, `0`, then `config_args`. The reply is
/// the array of the rules' decisions in rule order, each {allowed, limit, remaining,
/// retry_after_ns, reset_after_ns, wait_ns} as `rate_redis_prepare`'s; on a denial a rule
/// that would admit reports `remaining` and `reset_after_ns` of its state as it is, as
/// `rate_policy_acquire` does. A rule's key holding something else is an error reply, and
/// nothing is written. The combined decision is the client's to compute, as
/// `rate_policy_decision` documents.
///
/// Shadow rules (docs/policies.md, Shadow rules): a client with shadow rules sends their
/// mask (bit i for rule i, checked by `rate_redis_policy_check_shadow`) as one more
/// argument after `config_args`; none, or 0, enforces every rule. The script then admits
/// iff every enforced rule admits, writes the enforced rules and each shadow rule that
/// admits, and replies every rule's own decision as above: the client combines over the
/// enforced rules alone (every rule shadow: admitted, `limit` and `remaining`
/// UINT64_MAX), and a shadow rule's `allowed == 0` is a denial it would have made. The
/// mask is the client's, never stored in Redis: give every client the same.
///
/// Ownership: `out->source` is static; nothing is allocated. `rules` is only read during
/// the call.
///
/// NULL: `rules` NULL with a non-zero `rules_len`, or `out` NULL, is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (no rule, more than
/// RATE_POLICY_MAX_RULES, or a rule `rate_redis_prepare` rejects).
///
/// # Safety
/// `rules` is NULL or points to `rules_len` readable `rate_config`s; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rate_redis_policy_prepare(
    rules: *const rate_config,
    rules_len: usize,
    out: *mut rate_redis_policy_script,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract.
        let configs = unsafe { rules_of(rules, rules_len, rate_config::to_config) };
        let script = match (out.is_null(), configs) {
            (true, _) => return RATE_E_NULL,
            (false, Err(status)) => return status,
            (false, Ok(configs)) => PolicyScript::of(&configs),
        };
        let script =
            script.map(|script| (script.source_with_nul(), script.limit(), script.config_args));
        // SAFETY: `out` is non-NULL and the caller promised it is writable.
        unsafe { write_prepared(out, script) }
    })
}

/// A prepared script as C reads it: its source, its arguments and its limit.
trait Prepared {
    fn of(source: &'static str, config_args: &[u64], limit: u64) -> Self;
}

/// Both prepared structs are filled alike: only their argument arrays' lengths differ.
macro_rules! prepared {
    ($($script:ty),*) => {$(
        impl Prepared for $script {
            fn of(source: &'static str, config_args: &[u64], limit: u64) -> Self {
                let (config_args, config_args_len) = padded(config_args);
                let source = source.as_ptr().cast();
                Self { source, config_args, config_args_len, limit }
            }
        }
    )*};
}

prepared!(rate_redis_script, rate_redis_policy_script);

/// Writes a prepared script (its NUL-terminated source, limit and arguments) to `out`:
/// RATE_OK, or the status of the error that left none.
///
/// # Safety
/// `out` is non-NULL and writable.
unsafe fn write_prepared<T: Prepared>(
    out: *mut T,
    script: Result<(&'static str, u64, Vec<u64>), ConfigError>,
) -> i32 {
    match script {
        Ok((source, limit, config_args)) => {
            // SAFETY: per this function's contract.
            unsafe { out.write(T::of(source, &config_args, limit)) };
            RATE_OK
        }
        Err(error) => status_of(error),
    }
}

/// `args` in a C array of `N` (at least as many), and how many are used.
fn padded<const N: usize>(args: &[u64]) -> ([u64; N], u32) {
    let mut padded = [0; N];
    padded[..args.len()].copy_from_slice(args);
    (padded, args.len() as u32)
}

/// Checks a shadow mask (bit i for rule i, docs/policies.md#shadow-rules) for the policy
/// `script` was prepared for, before a client sends it after the script's `config_args`
/// (see `rate_redis_policy_prepare`).
///
/// NULL: `script` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (a bit at or past the rule
/// count, `config_args[0]`).
///
/// # Safety
/// `script` is NULL or points to a readable `rate_redis_policy_script` that
/// `rate_redis_policy_prepare` filled.
#[no_mangle]
pub unsafe extern "C" fn rate_redis_policy_check_shadow(
    script: *const rate_redis_policy_script,
    mask: u32,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let Some(script) = (unsafe { script.as_ref() }) else {
            return RATE_E_NULL;
        };
        // `config_args[0]` is the rule count; capped, so that a struct that
        // `rate_redis_policy_prepare` did not fill cannot overflow the shift.
        let rules = script.config_args[0].min(63);
        if u64::from(mask) >> rules == 0 {
            RATE_OK
        } else {
            RATE_E_INVALID_CONFIG
        }
    })
}

/// The Redis Cluster hash slot (0..16383) of the Redis key `key[0..key_len)`: CRC16 of its
/// hash tag, or of the whole key without one, as every Cluster node computes it. A client
/// groups a batch's keys by slot on a Cluster, one script call per slot. The keys of one
/// request share a slot: a limiter's `prefix{key}` is one key, and a policy's rules'
/// `prefix{=key}:i` (see `rate_redis_policy_prepare`) all hash the tag `=key`.
///
/// NULL: `key` NULL with a non-zero `key_len`, or `out` NULL, is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL.
///
/// # Safety
/// `key` is NULL or points to `key_len` readable bytes; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_redis_slot(key: *const u8, key_len: usize, out: *mut u16) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract.
        let Some(key) = (unsafe { key_bytes(key, key_len) }) else {
            return RATE_E_NULL;
        };
        if out.is_null() {
            return RATE_E_NULL;
        }
        // SAFETY: `out` is non-NULL and the caller promised it is writable.
        unsafe { out.write(slot(key)) };
        RATE_OK
    })
}
