//! `rate_keyed_*`: a limiter per key (user id, IP, API key…) in one bounded table.

use super::{
    boundary, construct, construct_at, outcome_status, rate_config, rate_decision,
    rate_keyed_stats, report, status_of, RATE_E_NULL, RATE_OK,
};
use librate::Config;
use librate::Instant;
use librate::KeyedLimiter;
use librate::OpenError;
use std::ffi::c_char;
use std::path::Path;
use std::time::Duration;

mod change;

pub use self::change::{rate_keyed_get_config, rate_keyed_set_config, rate_keyed_set_config_at};

/// An opaque table of limiters, one per key, all under one configuration. Safe to use
/// from many threads at once; `rate_keyed_free` must not race with any other call on the
/// same handle.
pub struct rate_keyed {
    pub(super) table: KeyedLimiter,
}

/// Creates a keyed limiter for `capacity` keys under `config`; a key not yet seen
/// behaves as a new limiter (full).
///
/// The table is allocated once, now: 32 bytes per key of `capacity` for GCRA, and never
/// grows. It always holds `capacity` keys whose state is not fresh, and up to twice that
/// many; a key whose state is fresh again may be dropped at any time to make room, which
/// changes no decision. Keys are hashed with a secret random seed per table.
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_keyed_free`; on error `*out` is left untouched.
///
/// NULL: `config` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, or RATE_E_INVALID_CONFIG (an invalid `config` as for
/// `rate_limiter_new`, a `capacity` of 0, or one whose table cannot be allocated;
/// `rate_keyed_explain_config` says which).
///
/// # Safety
/// `config` is NULL or points to a readable `rate_config`; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_new(
    config: *const rate_config,
    capacity: u64,
    out: *mut *mut rate_keyed,
) -> i32 {
    boundary(|| {
        // SAFETY: passed on from this function's contract.
        unsafe {
            construct(config, out, |config| {
                KeyedLimiter::new(config, capacity).map(|table| rate_keyed { table })
            })
        }
    })
}

/// Opens the keyed limiter whose table lives in the file at `path`, creating the file if
/// it does not exist: every process that opens the same file shares one table, and each
/// key's limit holds across them exactly as across threads sharing one handle. Put the
/// file on a tmpfs such as `/dev/shm` (any file system works). A new file is built whole
/// and then given its name, mode 0600, holding the table's secret hash key, so no process
/// ever sees a half-written one, and processes racing to create it all end on one table.
/// A table written during an earlier boot of the host is reset when opened. A process
/// killed at any point, even mid-insert, leaves the table usable by the others: a slot it
/// left claimed is put back once it is found dead. A slot that a live process keeps
/// claimed (one stopped mid-insert, or bytes forged to name it) is waited on for about a
/// second, after which a call that needs it returns RATE_E_TABLE_FULL. The handle is an
/// ordinary `rate_keyed`: every `rate_keyed_*` function works on it, and
/// `rate_keyed_set_config` changes the rule in the file, for every process.
///
/// A file that exists must hold the rule `config` gives (the one it was made with, or the
/// last one any process set in it) and `capacity`. To open it with another rule,
/// replacing the file's (a rolling restart with a new limit), use
/// `rate_keyed_open_replacing`; `rate_describe_file` says what a refused file holds.
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_keyed_free`, which unmaps the file and leaves it in place; on error
/// `*out` is left untouched. `path` is only read during the call.
///
/// NULL: `path`, `config` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_INVALID_CONFIG (as `rate_keyed_new`),
/// RATE_E_INCOMPATIBLE (the file is not a librate keyed table holding this rule, of this
/// capacity; it is left untouched, and `rate_describe_file` says what it holds), or
/// RATE_E_IO (the operating system refused to create, open, size or map the file; `errno`
/// says why).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `config` is NULL or points to a readable
/// `rate_config`; `out` is NULL or points to a writable `rate_keyed *`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_open(
    path: *const c_char,
    config: *const rate_config,
    capacity: u64,
    out: *mut *mut rate_keyed,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        open_file(path, config, capacity, out, |p, c, n| {
            KeyedLimiter::open(p, c, n)
        })
    }
}

/// Opens the keyed limiter in the file at `path` as `rate_keyed_open` does, but a file
/// that holds another rule is given `config` instead: the change is made in the file
/// exactly as `rate_keyed_set_config` makes it (now, on `rate_now_ns`'s clock, every key's
/// state carried over), and every process attached decides under `config` from its next
/// decision. The way to roll out a new limit: restart the processes sharing the file with
/// the new rule, one by one, and none of them is refused. See docs/shared.md, changing the
/// rule.
///
/// Ownership: as `rate_keyed_open`.
///
/// Thread-safety: as `rate_keyed_open`. Changes made in one file are serialized: of
/// openers racing with different rules, the last to change it wins.
///
/// NULL: `path`, `config` or `out` NULL is RATE_E_NULL.
///
/// Returns as `rate_keyed_open`, and RATE_E_INVALID_CONFIG when the file's rule cannot be
/// carried over to `config` (another algorithm, a sliding log's rule: see
/// `rate_keyed_set_config_at`), the file then unchanged; RATE_E_INCOMPATIBLE only for a
/// file that is no librate keyed table this librate reads, or one of another capacity or
/// state size; RATE_E_IO with `errno` EBUSY if another process's change held the file
/// past a patience (seconds).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `config` is NULL or points to a readable
/// `rate_config`; `out` is NULL or points to a writable `rate_keyed *`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_open_replacing(
    path: *const c_char,
    config: *const rate_config,
    capacity: u64,
    out: *mut *mut rate_keyed,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        open_file(path, config, capacity, out, |p, c, n| {
            KeyedLimiter::open_replacing(p, c, n)
        })
    }
}

/// The body of both openers: `open` opens the table at `path`.
///
/// # Safety
/// As the openers': `path` is NULL or NUL-terminated, `config` NULL or readable, `out`
/// NULL or writable.
unsafe fn open_file(
    path: *const c_char,
    config: *const rate_config,
    capacity: u64,
    out: *mut *mut rate_keyed,
    open: fn(&Path, &Config, u64) -> Result<KeyedLimiter, OpenError>,
) -> i32 {
    boundary(|| {
        // SAFETY: passed on from the caller's contract.
        unsafe {
            construct_at(path, config, out, |path, config| {
                open(path, config, capacity).map(|table| rate_keyed { table })
            })
        }
    })
}

/// Frees a keyed limiter made by `rate_keyed_new`, `rate_keyed_open` or
/// `rate_keyed_open_replacing`.
///
/// Ownership: takes back the handle; it must not be used afterwards.
///
/// Thread-safety: must not race with any other call on the same handle.
///
/// NULL: a no-op.
///
/// # Safety
/// `keyed` is NULL or a handle from `rate_keyed_new`, `rate_keyed_open` or
/// `rate_keyed_open_replacing` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_free(keyed: *mut rate_keyed) {
    boundary(|| {
        if !keyed.is_null() {
            // SAFETY: non-NULL handles come from `Box::into_raw` in `rate_keyed_new`, and
            // the caller gives this one back exactly once.
            drop(unsafe { Box::from_raw(keyed) });
        }
    })
}

/// The bytes of a key: `key_len` bytes at `key`; NULL with `key_len == 0` is the empty
/// key. `None` for NULL with a non-zero length.
///
/// # Safety
/// `key` is NULL or points to `key_len` readable bytes that outlive `'a`.
pub(super) unsafe fn key_bytes<'a>(key: *const u8, key_len: usize) -> Option<&'a [u8]> {
    if key_len == 0 {
        Some(&[])
    } else if key.is_null() {
        None
    } else {
        // SAFETY: non-NULL, and the caller promised `key_len` readable bytes.
        Some(unsafe { std::slice::from_raw_parts(key, key_len) })
    }
}

/// Runs an export's body on the handle's `inner` value (a table, a policy) and the key
/// behind its pointers, inside the boundary: RATE_E_NULL if the handle is NULL, or the
/// key is NULL with a non-zero length.
///
/// # Safety
/// `handle` is NULL or a live handle; `key` is NULL or points to `key_len` readable bytes
/// for the duration of the call.
pub(super) unsafe fn with_key<H, T>(
    handle: *const H,
    key: *const u8,
    key_len: usize,
    inner: impl FnOnce(&H) -> &T,
    body: impl FnOnce(&T, &[u8]) -> i32,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let Some(handle) = (unsafe { handle.as_ref() }) else {
            return RATE_E_NULL;
        };
        // SAFETY: per this function's contract.
        let Some(key) = (unsafe { key_bytes(key, key_len) }) else {
            return RATE_E_NULL;
        };
        body(inner(handle), key)
    })
}

/// The table behind a handle.
pub(super) fn table(keyed: &rate_keyed) -> &KeyedLimiter {
    &keyed.table
}

/// Acquires `n` units for the key of `key_len` bytes at `key`, now (CLOCK_MONOTONIC, see
/// `rate_now_ns`). Keys are arbitrary bytes: the empty key and keys containing NUL bytes
/// are keys like any other. `n == 0` is a query: admitted, changes nothing, never adds
/// the key, reports its current state (a fresh one for a key not in the table).
///
/// When `out` is NULL only the outcome is needed, and for a key already in the table
/// librate decides on the cheap coarse clock whenever its bounds settle the outcome
/// exactly: pass NULL on hot paths that do not use the decision's fields.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `keyed` NULL, or `key` NULL with `key_len > 0`, is RATE_E_NULL; `key` may be NULL
/// when `key_len == 0` (the empty key); `out` may be NULL.
///
/// Returns RATE_OK (admitted), RATE_LIMITED (denied), RATE_E_NULL,
/// RATE_E_INSUFFICIENT_CAPACITY (`n` > limit), or RATE_E_TABLE_FULL (a new key and every
/// slot holds a live key: nothing was admitted; fail open or closed as you choose). On an
/// error `out` is untouched.
///
/// # Safety
/// `keyed` is NULL or a live handle; `key` is NULL or points to `key_len` readable bytes;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_acquire(
    keyed: *mut rate_keyed,
    key: *const u8,
    key_len: usize,
    n: u64,
    out: *mut rate_decision,
) -> i32 {
    let body = |table: &KeyedLimiter, key: &[u8]| {
        if out.is_null() {
            return outcome_status(table.try_acquire(key, n));
        }
        // SAFETY: `out` is non-NULL and the caller promised it is writable.
        unsafe { report(table.acquire(key, n), out) }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(keyed, key, key_len, table, body) }
}

/// Acquires `n` units for the key at `now_ns` (nanoseconds on the caller's timeline; use
/// one timeline per table). Keys are independent; an earlier `now_ns` than one already
/// seen never admits more than the latest time seen would.
///
/// When `out` is NULL only the outcome is needed, and librate skips the work of the
/// decision's fields: pass NULL on hot paths that do not use them.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_acquire`.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_E_NULL, RATE_E_INSUFFICIENT_CAPACITY, or
/// RATE_E_TABLE_FULL, as `rate_keyed_acquire`.
///
/// # Safety
/// As `rate_keyed_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_acquire_at(
    keyed: *mut rate_keyed,
    key: *const u8,
    key_len: usize,
    n: u64,
    now_ns: u64,
    out: *mut rate_decision,
) -> i32 {
    let body = |table: &KeyedLimiter, key: &[u8]| {
        if out.is_null() {
            return outcome_status(table.try_acquire_at(key, n, Instant::from_nanos(now_ns)));
        }
        // SAFETY: `out` is non-NULL and the caller promised it is writable.
        unsafe { report(table.acquire_at(key, n, Instant::from_nanos(now_ns)), out) }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(keyed, key, key_len, table, body) }
}

/// Reserves `n` units for the key at `now_ns`: the leaky bucket as a queue (traffic
/// shaper), per key. Admitted iff the caller would wait at most `max_wait_ns` before
/// acting; `out->wait_ns` says how long. With `max_wait_ns == 0` it is exactly
/// `rate_keyed_acquire_at`. A denied reserve's `retry_after_ns` is for the same reserve
/// with the same `max_wait_ns`.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_acquire`.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_E_NULL, RATE_E_INSUFFICIENT_CAPACITY (`n` >
/// burst), RATE_E_TABLE_FULL, or RATE_E_UNSUPPORTED (window algorithms have no reserve).
///
/// # Safety
/// As `rate_keyed_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_reserve_at(
    keyed: *mut rate_keyed,
    key: *const u8,
    key_len: usize,
    n: u64,
    now_ns: u64,
    max_wait_ns: u64,
    out: *mut rate_decision,
) -> i32 {
    let body = |table: &KeyedLimiter, key: &[u8]| {
        // SAFETY: the caller passes NULL or a writable decision.
        unsafe {
            report(
                table.reserve_at(
                    key,
                    n,
                    Instant::from_nanos(now_ns),
                    Duration::from_nanos(max_wait_ns),
                ),
                out,
            )
        }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(keyed, key, key_len, table, body) }
}

/// Resets the key of `key_len` bytes at `key`, as when a customer's limit is lifted: its
/// next request is decided as a new key's, at any time (as if it had never been seen). A
/// key not in the table is left out of it. The key's former state keeps its slot, under
/// no key, until it is fresh (at most a period, or GCRA's burst, after its last
/// admission): until then that slot is taken as by a live key, so resetting many busy keys
/// at once can fill a table for that long. A shared table's key is reset for every
/// process.
///
/// Thread-safety: safe to call concurrently on one handle. Each acquire of the key racing
/// the reset is decided wholly before it (and forgotten by it) or wholly after it.
///
/// NULL: as `rate_keyed_acquire`.
///
/// Returns RATE_OK (the key is reset, or was not in the table), RATE_E_NULL, or
/// RATE_E_TABLE_FULL (a shared table only: a slot the reset needs stayed claimed by a
/// live process for about a second, as an acquire would report; nothing was reset).
///
/// # Safety
/// `keyed` is NULL or a live handle; `key` is NULL or points to `key_len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_reset(
    keyed: *mut rate_keyed,
    key: *const u8,
    key_len: usize,
) -> i32 {
    let body = |table: &KeyedLimiter, key: &[u8]| match table.reset(key) {
        Ok(()) => RATE_OK,
        Err(error) => status_of(error),
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(keyed, key, key_len, table, body) }
}

/// Writes the table's statistics to `*out`, its live keys counted now (CLOCK_MONOTONIC):
/// its capacity and slots, the keys whose state is not a new key's, and the requests for
/// new keys refused with RATE_E_TABLE_FULL since it was created (in a shared table, by
/// every process, since the file was created). Counting live keys reads every slot: call
/// it for a dashboard, not on a hot path.
///
/// Thread-safety: safe to call concurrently on one handle; the counts are a snapshot.
///
/// NULL: `keyed` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK or RATE_E_NULL (`out` untouched).
///
/// # Safety
/// `keyed` is NULL or a live handle; `out` is NULL or points to a writable
/// `rate_keyed_stats`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_read_stats(
    keyed: *const rate_keyed,
    out: *mut rate_keyed_stats,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe { read_stats(keyed, out, KeyedLimiter::stats) }
}

/// `rate_keyed_read_stats` with the live keys counted at `now_ns` (nanoseconds on the
/// caller's timeline, as `rate_keyed_acquire_at`).
///
/// Thread-safety: safe to call concurrently on one handle; the counts are a snapshot.
///
/// NULL: as `rate_keyed_read_stats`.
///
/// Returns as `rate_keyed_read_stats`.
///
/// # Safety
/// As `rate_keyed_read_stats`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_read_stats_at(
    keyed: *const rate_keyed,
    now_ns: u64,
    out: *mut rate_keyed_stats,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        read_stats(keyed, out, |table| {
            table.stats_at(Instant::from_nanos(now_ns))
        })
    }
}

/// The body of the `rate_keyed_read_stats` exports: `stats` of the table, written to
/// `out`.
///
/// # Safety
/// As `rate_keyed_read_stats`.
unsafe fn read_stats(
    keyed: *const rate_keyed,
    out: *mut rate_keyed_stats,
    stats: impl FnOnce(&KeyedLimiter) -> librate::KeyedStats,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` and `as_mut` check NULL.
        let (Some(keyed), Some(out)) = (unsafe { keyed.as_ref() }, unsafe { out.as_mut() }) else {
            return RATE_E_NULL;
        };
        *out = rate_keyed_stats::from(stats(&keyed.table));
        RATE_OK
    })
}
