//! The Redis tier's scripts for the bindings (DESIGN §8): each language sends them through
//! its own Redis client, and takes them from here, so every language runs the same bytes.

use std::ffi::c_char;

use super::keyed::key_bytes;
use super::{boundary, rate_config, status_of, RATE_E_INVALID_CONFIG, RATE_E_NULL, RATE_OK};
use crate::redis::{slot, Script};

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

/// The Lua script that decides `config`'s algorithm on Redis, with its arguments (DESIGN
/// §8). A client sends it with EVALSHA (loading it after NOSCRIPT) with the keys to decide
/// (their states; on a Cluster, all of one hash slot: see `rate_redis_slot`) and the
/// arguments `now` (a decimal u64, or "" for the server's clock), `n`, `max_wait_ns` (0
/// but for a GCRA reserve), then `config_args`. Every key is decided at the one `now`. The
/// reply for one key is its decision, {allowed, limit, remaining, retry_after_ns,
/// reset_after_ns, wait_ns}, each an integer or a decimal string, every one a u64; for
/// several keys it is the array of their decisions in the order of the keys, where a key
/// holding something else is that key's error reply.
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
        match Script::of(&config) {
            Ok(script) => {
                let mut config_args = [0; RATE_REDIS_MAX_ARGS];
                config_args[..script.config_args.len()].copy_from_slice(&script.config_args);
                let written = rate_redis_script {
                    source: script.source_with_nul().as_ptr().cast(),
                    config_args,
                    config_args_len: script.config_args.len() as u32,
                    limit: script.limit(),
                };
                // SAFETY: `out` is non-NULL and the caller promised it is writable.
                unsafe { out.write(written) };
                RATE_OK
            }
            Err(error) => status_of(error),
        }
    })
}

/// The Redis Cluster hash slot (0..16383) of the Redis key `key[0..key_len)`: CRC16 of its
/// hash tag, or of the whole key without one, as every Cluster node computes it. A client
/// groups a batch's keys by slot on a Cluster, one script call per slot.
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
