//! `rate_keyed_acquire_batch` and its forms: many keys of one `rate_keyed` per call, for
//! bindings whose calls into C cost more than a decision.

use super::keyed::{key_bytes, rate_keyed};
use super::{boundary, outcome_status, status_of, RATE_E_NULL, RATE_OK};
use librate::Instant;
use librate::KeyedLimiter;

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
            Some(now_ns) => {
                table.try_acquire_batch_at(chunk, n, Instant::from_nanos(now_ns), record)
            }
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
