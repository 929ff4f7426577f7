//! `rate_keyed_*`: a limiter per key (user id, IP, API key…) in one bounded table.

use super::{
    boundary, construct, construct_at, outcome_status, rate_config, rate_decision, report,
    status_of, RATE_E_NULL, RATE_OK,
};
use crate::keyed::KeyedLimiter;
use std::ffi::c_char;

/// An opaque table of limiters, one per key, all under one configuration. Safe to use
/// from many threads at once; `rate_keyed_free` must not race with any other call on the
/// same handle.
pub struct rate_keyed {
    table: KeyedLimiter,
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
/// ordinary `rate_keyed`: every `rate_keyed_*` function works on it.
///
/// Ownership: on RATE_OK, `*out` receives a new handle that the caller owns and must
/// release with `rate_keyed_free`, which unmaps the file and leaves it in place; on error
/// `*out` is left untouched. `path` is only read during the call.
///
/// NULL: `path`, `config` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_INVALID_CONFIG (as `rate_keyed_new`),
/// RATE_E_INCOMPATIBLE (the file is not a librate keyed table of this configuration and
/// capacity; it is left untouched), or RATE_E_IO (the operating system refused to create,
/// open, size or map the file; `errno` says why).
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
    boundary(|| {
        // SAFETY: passed on from this function's contract.
        unsafe {
            construct_at(path, config, out, |path, config| {
                KeyedLimiter::open(path, config, capacity).map(|table| rate_keyed { table })
            })
        }
    })
}

/// Frees a keyed limiter made by `rate_keyed_new` or `rate_keyed_open`.
///
/// Ownership: takes back the handle; it must not be used afterwards.
///
/// Thread-safety: must not race with any other call on the same handle.
///
/// NULL: a no-op.
///
/// # Safety
/// `keyed` is NULL or a handle from `rate_keyed_new` or `rate_keyed_open` not yet freed.
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

/// Runs an export's body on the table and key behind its pointers, inside the boundary:
/// RATE_E_NULL if the handle is NULL, or the key is NULL with a non-zero length.
///
/// # Safety
/// `keyed` is NULL or a live handle from `rate_keyed_new`; `key` is NULL or points to
/// `key_len` readable bytes for the duration of the call.
unsafe fn with_key(
    keyed: *const rate_keyed,
    key: *const u8,
    key_len: usize,
    body: impl FnOnce(&KeyedLimiter, &[u8]) -> i32,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract; `as_ref` checks NULL.
        let Some(keyed) = (unsafe { keyed.as_ref() }) else {
            return RATE_E_NULL;
        };
        // SAFETY: per this function's contract.
        let Some(key) = (unsafe { key_bytes(key, key_len) }) else {
            return RATE_E_NULL;
        };
        body(&keyed.table, key)
    })
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
    unsafe { with_key(keyed, key, key_len, body) }
}

/// Acquires `n` units for the key at `now_ns` (nanoseconds on the caller's timeline; use
/// one timeline per table). Keys are independent; an earlier `now_ns` than one already
/// seen never admits more than the latest time seen would.
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
        // SAFETY: the caller passes NULL or a writable decision.
        unsafe { report(table.acquire_at(key, n, now_ns), out) }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(keyed, key, key_len, body) }
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
        unsafe { report(table.reserve_at(key, n, now_ns, max_wait_ns), out) }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(keyed, key, key_len, body) }
}

/// Acquires `n` units for each of `count` keys, now, reporting only whether each was
/// admitted: `statuses[i]` receives RATE_OK, RATE_LIMITED or RATE_E_TABLE_FULL for key i
/// (`key_lens[i]` bytes at `keys[i]`), exactly as `rate_keyed_acquire_at(keyed, keys[i],
/// key_lens[i], n, t, NULL)` would key after key, `t` being one reading of the library
/// clock per group of up to 16 consecutive keys. A key that appears twice is decided
/// twice, in order.
///
/// Faster per key than one call per key on a table larger than the CPU caches: the slots
/// of a group's keys are fetched from memory at once before any is read, and the group's
/// clock reading is taken after the fetches.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `keyed` NULL, or with `count > 0` `keys`, `key_lens` or `statuses` NULL, or any
/// `keys[i]` NULL with `key_lens[i] > 0`, is RATE_E_NULL; with `count == 0` the arrays
/// may be NULL.
///
/// Returns RATE_OK once every key is decided, RATE_E_NULL, or
/// RATE_E_INSUFFICIENT_CAPACITY (`n` > limit). On an error no key is decided and
/// `statuses` is untouched.
///
/// # Safety
/// `keyed` is NULL or a live handle; `keys` and `key_lens` are NULL or point to `count`
/// readable elements, each `keys[i]` NULL or pointing to `key_lens[i]` readable bytes;
/// `statuses` is NULL or points to `count` writable `int32_t` that overlap none of those.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_acquire_batch(
    keyed: *mut rate_keyed,
    keys: *const *const u8,
    key_lens: *const usize,
    count: usize,
    n: u64,
    statuses: *mut i32,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        acquire_batch(keyed, key_lens, count, n, None, statuses, |lens| {
            scattered_keys(keys, lens)
        })
    }
}

/// `rate_keyed_acquire_batch` with every key decided at `now_ns` (nanoseconds on the
/// caller's timeline, as `rate_keyed_acquire_at`).
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_acquire_batch`.
///
/// Returns as `rate_keyed_acquire_batch`.
///
/// # Safety
/// As `rate_keyed_acquire_batch`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_acquire_batch_at(
    keyed: *mut rate_keyed,
    keys: *const *const u8,
    key_lens: *const usize,
    count: usize,
    n: u64,
    now_ns: u64,
    statuses: *mut i32,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        acquire_batch(keyed, key_lens, count, n, Some(now_ns), statuses, |lens| {
            scattered_keys(keys, lens)
        })
    }
}

/// `rate_keyed_acquire_batch` with the keys packed into one buffer, for callers (language
/// bindings above all) that would rather build one buffer than an array of pointers: key
/// i is the `key_lens[i]` bytes that follow keys 0 to i − 1 in `keys`.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_acquire_batch`, where `keys` may be NULL when every length is 0.
/// Lengths whose sum overflows `size_t` (no buffer can hold them) are RATE_E_NULL too.
///
/// Returns as `rate_keyed_acquire_batch`.
///
/// # Safety
/// `keyed` is NULL or a live handle; `key_lens` is NULL or points to `count` readable
/// lengths; `keys` is NULL or points to as many readable bytes as they sum to; `statuses`
/// is NULL or points to `count` writable `int32_t` that overlap neither.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_acquire_packed(
    keyed: *mut rate_keyed,
    keys: *const u8,
    key_lens: *const usize,
    count: usize,
    n: u64,
    statuses: *mut i32,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        acquire_batch(keyed, key_lens, count, n, None, statuses, |lens| {
            packed_keys(keys, lens)
        })
    }
}

/// `rate_keyed_acquire_packed` with every key decided at `now_ns` (nanoseconds on the
/// caller's timeline, as `rate_keyed_acquire_at`).
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: as `rate_keyed_acquire_packed`.
///
/// Returns as `rate_keyed_acquire_batch`.
///
/// # Safety
/// As `rate_keyed_acquire_packed`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_acquire_packed_at(
    keyed: *mut rate_keyed,
    keys: *const u8,
    key_lens: *const usize,
    count: usize,
    n: u64,
    now_ns: u64,
    statuses: *mut i32,
) -> i32 {
    // SAFETY: passed on from this function's contract.
    unsafe {
        acquire_batch(keyed, key_lens, count, n, Some(now_ns), statuses, |lens| {
            packed_keys(keys, lens)
        })
    }
}

/// Keys handed to the table at a time: a stack array of slices, so a batch of any size
/// allocates nothing.
const BATCH_CHUNK: usize = 64;

/// The batch exports' body, at `now_ns` or now (`None`): `keys` turns the checked lengths
/// into a function giving key `i` (asked for once each, in order), or `None` for
/// RATE_E_NULL. Every key is checked before any is decided, so an error leaves all
/// undecided.
///
/// # Safety
/// As `rate_keyed_acquire_batch` for `keyed`, `key_lens` and `statuses`.
unsafe fn acquire_batch<'a, K: FnMut(usize) -> &'a [u8]>(
    keyed: *const rate_keyed,
    key_lens: *const usize,
    count: usize,
    n: u64,
    now_ns: Option<u64>,
    statuses: *mut i32,
    keys: impl FnOnce(&'a [usize]) -> Option<K>,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract.
        let arrays = unsafe { batch_arrays(keyed, key_lens, count, statuses) };
        let Some((keyed, key_lens, statuses)) = arrays else {
            return RATE_E_NULL;
        };
        match keys(key_lens) {
            Some(key) => decide_chunks(&keyed.table, n, now_ns, statuses, key),
            None => RATE_E_NULL,
        }
    })
}

/// The keys of `rate_keyed_acquire_batch`: `key_lens.len()` pointers at `keys`; `None`
/// if `keys` is NULL (with keys to read) or a key is NULL with a non-zero length.
///
/// # Safety
/// As `rate_keyed_acquire_batch` for `keys`.
unsafe fn scattered_keys<'a>(
    keys: *const *const u8,
    key_lens: &'a [usize],
) -> Option<impl FnMut(usize) -> &'a [u8]> {
    let keys: &[*const u8] = match key_lens.len() {
        0 => &[],
        _ if keys.is_null() => return None,
        // SAFETY: non-NULL, and the caller promised `count` readable pointers.
        count => unsafe { std::slice::from_raw_parts(keys, count) },
    };
    // SAFETY: per this function's contract, each key is NULL or readable for the call.
    let key = move |i: usize| unsafe { key_bytes(keys[i], key_lens[i]) };
    (0..key_lens.len())
        .all(|i| key(i).is_some())
        .then_some(move |i| key(i).unwrap_or_default())
}

/// The keys of `rate_keyed_acquire_packed`: back to back at `keys`; `None` if their
/// lengths overflow `usize` or `keys` is NULL with a non-zero total.
///
/// # Safety
/// As `rate_keyed_acquire_packed` for `keys`.
unsafe fn packed_keys<'a>(
    keys: *const u8,
    key_lens: &'a [usize],
) -> Option<impl FnMut(usize) -> &'a [u8]> {
    let total = key_lens
        .iter()
        .try_fold(0usize, |sum, &len| sum.checked_add(len))?;
    // SAFETY: the caller promised `total` readable bytes at `keys` (or NULL if 0).
    let packed = unsafe { key_bytes(keys, total) }?;
    let mut start = 0;
    Some(move |i: usize| {
        // Keys are asked for in order, so each starts where the last ended.
        let key = &packed[start..start + key_lens[i]];
        start += key_lens[i];
        key
    })
}

/// The handle, lengths and statuses of a batch call; `None` if the handle is NULL, or
/// (with `count > 0`) the lengths or statuses are.
///
/// # Safety
/// As `rate_keyed_acquire_batch` for these three arguments.
unsafe fn batch_arrays<'a>(
    keyed: *const rate_keyed,
    key_lens: *const usize,
    count: usize,
    statuses: *mut i32,
) -> Option<(&'a rate_keyed, &'a [usize], &'a mut [i32])> {
    // SAFETY: per this function's contract; `as_ref` checks NULL.
    let keyed = unsafe { keyed.as_ref() }?;
    if count == 0 {
        return Some((keyed, &[], &mut []));
    }
    if key_lens.is_null() || statuses.is_null() {
        return None;
    }
    // SAFETY: non-NULL, and the caller promised `count` readable lengths and `count`
    // writable statuses that overlap neither the lengths nor the keys (statuses are the
    // only memory written).
    unsafe {
        Some((
            keyed,
            std::slice::from_raw_parts(key_lens, count),
            std::slice::from_raw_parts_mut(statuses, count),
        ))
    }
}

/// Decides `key(0)`, `key(1)`, … (asked for once each, in order) in chunks of
/// [`BATCH_CHUNK`], writing each outcome's status; `n` over the limit is returned before
/// any status is written.
fn decide_chunks<'k>(
    table: &KeyedLimiter,
    n: u64,
    now_ns: Option<u64>,
    statuses: &mut [i32],
    mut key: impl FnMut(usize) -> &'k [u8],
) -> i32 {
    let count = statuses.len();
    let mut start = 0;
    // At least once, so `n` is checked against the limit even for no keys.
    loop {
        let end = count.min(start + BATCH_CHUNK);
        let mut chunk: [&[u8]; BATCH_CHUNK] = [&[]; BATCH_CHUNK];
        for (place, i) in chunk.iter_mut().zip(start..end) {
            *place = key(i);
        }
        let chunk = &chunk[..end - start];
        let record = |offset: usize, outcome| statuses[start + offset] = outcome_status(outcome);
        let decided = match now_ns {
            None => table.try_acquire_batch(chunk, n, record),
            Some(now_ns) => table.try_acquire_batch_at(chunk, n, now_ns, record),
        };
        // Only `n` over the limit fails, on the first chunk, before any status is set.
        if let Err(error) = decided {
            return status_of(error);
        }
        if end == count {
            return RATE_OK;
        }
        start = end;
    }
}
