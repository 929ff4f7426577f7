//! Keyed leases (docs/leases.md, keys) for the bindings, without I/O: a holder that decides
//! the keys it leases in process and tells its caller to decide the others in Redis, and
//! the rounds of renewals of its keys. Each binding carries the script calls over its own
//! Redis client, on its own background mechanism.

use super::keyed::with_key;
use super::lease::{apply_to, rate_lease_renewal, rate_lease_rule, renewal_of, Asked};
use super::{boundary, outcome_status, rate_decision, report, RATE_E_NULL, RATE_E_REPLY, RATE_OK};
use librate::lease::{decision_of, KeyRenewal, KeyedLeaseHolder};
use librate::{AcquireError, Instant};
use std::ffi::c_char;
use std::sync::Arc;

/// `rate_keyed_lease_acquire`: this holder does not decide the key; decide it in Redis
/// (`rate_keyed_lease_in_redis`).
pub const RATE_KEYED_LEASE_IN_REDIS: i32 = 2;

/// The integers of the lease script's answer to a request decided in Redis: allowed,
/// limit, remaining, retry_after_us, reset_after_us.
pub const RATE_KEYED_LEASE_FIELDS: usize = 5;

/// An opaque holder of leases on a keyed rule's hot keys. Its decisions are safe from many
/// threads at once; its rounds (`rate_keyed_lease_renewals*`, `rate_keyed_lease_round_*`) are one
/// thread's at a time;
/// `rate_keyed_lease_holder_free` must not race with any other call on it.
pub struct rate_keyed_lease_holder {
    holder: KeyedLeaseHolder,
}

/// An opaque round of renewals: the keys leased from now on, each with the call to send
/// (at the key's Redis key: the binding's prefix and the key) and the holder that applies
/// its answer. Freed with `rate_keyed_lease_round_free`; one thread's at a time.
pub struct rate_keyed_lease_round {
    renewals: Vec<KeyRenewal>,
}

/// Creates a holder of `rule` for every key, which leases a key once its requests ask for
/// `hot` units between two rounds (0: every key asked for), at most `capacity` keys at
/// once; named `name` (`name_len` bytes, no NUL, at most RATE_LEASE_NAME_MAX; 0 for a
/// random name), unique among the rule's holders.
///
/// Ownership: on RATE_OK, `*out` receives a handle the caller owns and must release with
/// `rate_keyed_lease_holder_free`; on error `*out` is left untouched.
///
/// NULL: `rule` or `out` NULL, or `name` NULL with a non-zero `name_len`, is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL, RATE_E_UNSUPPORTED (a sliding window or log), or
/// RATE_E_INVALID_CONFIG (as `rate_lease_holder_new`, or `capacity` 0; `rate_lease_explain`
/// says why for all but the capacity).
///
/// # Safety
/// `rule` is NULL or readable; `name` is NULL or points to `name_len` readable bytes;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_holder_new(
    rule: *const rate_lease_rule,
    hot: u64,
    capacity: u64,
    name: *const u8,
    name_len: usize,
    out: *mut *mut rate_keyed_lease_holder,
) -> i32 {
    boundary(|| {
        // SAFETY: per this function's contract.
        let Some(asked) = (unsafe { Asked::read(rule, std::ptr::null(), name, name_len) }) else {
            return RATE_E_NULL;
        };
        if out.is_null() {
            return RATE_E_NULL;
        }
        let made = asked.parts().and_then(|(rule, _)| {
            let capacity = usize::try_from(capacity).unwrap_or(usize::MAX);
            let holder = match asked.name()? {
                None => KeyedLeaseHolder::new(&rule, hot, capacity),
                Some(name) => KeyedLeaseHolder::named(&rule, hot, capacity, name),
            };
            Ok(holder)
        });
        match made {
            Ok(Ok(holder)) => {
                // SAFETY: `out` is non-NULL and the caller promised it is writable.
                unsafe { *out = Box::into_raw(Box::new(rate_keyed_lease_holder { holder })) };
                RATE_OK
            }
            Ok(Err(_)) => super::RATE_E_INVALID_CONFIG,
            Err(refusal) => refusal.status(),
        }
    })
}

/// Frees a holder. It hands nothing back: send a `rate_keyed_lease_release_all` round
/// first (otherwise each share returns to its rule when its lease ends).
///
/// # Safety
/// `holder` is NULL or a live handle, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_holder_free(holder: *mut rate_keyed_lease_holder) {
    boundary(|| {
        if !holder.is_null() {
            // SAFETY: a handle from `rate_keyed_lease_holder_new`, freed once (the
            // caller's promise).
            drop(unsafe { Box::from_raw(holder) });
        }
    })
}

/// The holder `holder` names, or `None` for NULL.
///
/// # Safety
/// `holder` is NULL or a live handle.
unsafe fn holder_ref<'a>(holder: *const rate_keyed_lease_holder) -> Option<&'a KeyedLeaseHolder> {
    // SAFETY: the caller's promise.
    unsafe { holder.as_ref() }.map(|handle| &handle.holder)
}

/// Decides `n` units for `key` (`key_len` bytes) now (CLOCK_MONOTONIC) if this holder
/// leases it and holds a share, with atomics alone, writing the share's decision to `out`
/// (exact for the share, conservative for the key's rule); otherwise counts the request
/// towards making the key hot and returns RATE_KEYED_LEASE_IN_REDIS (`out` untouched):
/// decide it in Redis.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `holder` NULL, or `key` NULL with a non-zero `key_len`, is RATE_E_NULL; `out` may
/// be NULL.
///
/// Returns RATE_OK, RATE_LIMITED, RATE_KEYED_LEASE_IN_REDIS, RATE_E_NULL, or
/// RATE_E_INSUFFICIENT_CAPACITY (`n` above the rule's burst, a window's limit).
///
/// # Safety
/// `holder` is NULL or a live handle; `key` is NULL or points to `key_len` readable bytes;
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_acquire(
    holder: *const rate_keyed_lease_holder,
    key: *const u8,
    key_len: usize,
    n: u64,
    out: *mut rate_decision,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { rate_keyed_lease_acquire_at(holder, key, key_len, n, Instant::now().as_nanos(), out) }
}

/// `rate_keyed_lease_acquire` at `now_ns` on the caller's timeline.
///
/// # Safety
/// As `rate_keyed_lease_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_acquire_at(
    holder: *const rate_keyed_lease_holder,
    key: *const u8,
    key_len: usize,
    n: u64,
    now_ns: u64,
    out: *mut rate_decision,
) -> i32 {
    let body = |holder: &KeyedLeaseHolder, key: &[u8]| {
        let at = Instant::from_nanos(now_ns);
        if out.is_null() {
            return match holder.try_acquire_at(key, n, at) {
                Ok(Some(admitted)) => outcome_status(Ok::<_, AcquireError>(admitted)),
                Ok(None) => RATE_KEYED_LEASE_IN_REDIS,
                Err(error) => outcome_status(Err::<bool, _>(error)),
            };
        }
        match holder.acquire_at(key, n, at) {
            // SAFETY: `out` is non-NULL and writable, as the caller promised.
            Ok(Some(decision)) => unsafe { report(Ok::<_, AcquireError>(decision), out) },
            Ok(None) => RATE_KEYED_LEASE_IN_REDIS,
            Err(error) => outcome_status(Err::<bool, _>(error)),
        }
    };
    // SAFETY: the caller passes NULL or a live handle, and NULL or readable bytes.
    unsafe { with_key(holder, key, key_len, |handle| &handle.holder, body) }
}

/// Fills `out` with the lease script call that decides `n` units in Redis, against what
/// the key's leases leave, by the server's clock: send its arguments with the key's Redis
/// key (the binding's prefix and the key), then pass the answer to
/// `rate_keyed_lease_decision`.
///
/// NULL: `holder` or `out` NULL is RATE_E_NULL.
///
/// Returns RATE_OK, RATE_E_NULL or RATE_E_INSUFFICIENT_CAPACITY (`n` above the rule's
/// burst, never sent).
///
/// # Safety
/// `holder` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_in_redis(
    holder: *const rate_keyed_lease_holder,
    n: u64,
    out: *mut rate_lease_renewal,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { in_redis(holder, n, None, out) }
}

/// `rate_keyed_lease_in_redis` at `now_ns` on the caller's timeline, which the script
/// decides at.
///
/// # Safety
/// As `rate_keyed_lease_in_redis`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_in_redis_at(
    holder: *const rate_keyed_lease_holder,
    n: u64,
    now_ns: u64,
    out: *mut rate_lease_renewal,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { in_redis(holder, n, Some(Instant::from_nanos(now_ns)), out) }
}

/// # Safety
/// As `rate_keyed_lease_in_redis`.
unsafe fn in_redis(
    holder: *const rate_keyed_lease_holder,
    n: u64,
    at: Option<Instant>,
    out: *mut rate_lease_renewal,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let (Some(holder), false) = (unsafe { holder_ref(holder) }, out.is_null()) else {
            return RATE_E_NULL;
        };
        match holder.in_redis(n, at) {
            Ok(call) => {
                // SAFETY: `out` is non-NULL and writable, as the caller promised.
                unsafe { *out = renewal_of(&call) };
                RATE_OK
            }
            Err(error) => outcome_status(Err::<bool, _>(error)),
        }
    })
}

/// Reads the lease script's answer to a request of `n` units decided in Redis, its
/// RATE_KEYED_LEASE_FIELDS integers in order, into `out` (may be NULL).
///
/// Returns RATE_OK (admitted), RATE_LIMITED, RATE_E_NULL, or RATE_E_REPLY for an answer
/// the script never gives (`out` untouched).
///
/// # Safety
/// `holder` is NULL or a live handle; `fields` is NULL or points to RATE_KEYED_LEASE_FIELDS
/// readable i64; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_decision(
    holder: *const rate_keyed_lease_holder,
    n: u64,
    fields: *const i64,
    out: *mut rate_decision,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let (Some(holder), false) = (unsafe { holder_ref(holder) }, fields.is_null()) else {
            return RATE_E_NULL;
        };
        // SAFETY: non-NULL, and the caller promised RATE_KEYED_LEASE_FIELDS readable i64.
        let fields = unsafe { *fields.cast::<[i64; RATE_KEYED_LEASE_FIELDS]>() };
        let Ok(decision) = decision_of(holder.rule(), n, fields) else {
            return RATE_E_REPLY;
        };
        if out.is_null() {
            return outcome_status(Ok::<_, AcquireError>(decision.allowed));
        }
        // SAFETY: `out` is non-NULL and writable, as the caller promised.
        unsafe { report(Ok::<_, AcquireError>(decision), out) }
    })
}

/// Whether the holder leases `key` now: 1 or 0 (RATE_E_NULL for NULLs).
///
/// # Safety
/// As `rate_keyed_lease_acquire`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_leased(
    holder: *const rate_keyed_lease_holder,
    key: *const u8,
    key_len: usize,
) -> i32 {
    let body = |holder: &KeyedLeaseHolder, key: &[u8]| i32::from(holder.is_leased(key));
    // SAFETY: the caller passes NULL or a live handle, and NULL or readable bytes.
    unsafe { with_key(holder, key, key_len, |handle| &handle.holder, body) }
}

/// Starts a round of renewals, the script reading the server's clock: the keys hot since
/// the last round are leased, the cooled ones stop (docs/leases.md, keys). Send each of the
/// round's calls (`rate_keyed_lease_round_key`, `_renewal`) and apply each answer
/// (`rate_keyed_lease_round_apply`), once a renewal interval.
///
/// Ownership: on RATE_OK, `*out` receives a round the caller frees with
/// `rate_keyed_lease_round_free`.
///
/// Returns RATE_OK or RATE_E_NULL (`holder` or `out` NULL).
///
/// # Safety
/// `holder` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_renewals(
    holder: *const rate_keyed_lease_holder,
    out: *mut *mut rate_keyed_lease_round,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe { round_into(holder, out, |holder| holder.renewals_at(None)) }
}

/// `rate_keyed_lease_renewals` at `now_ns` on the caller's timeline, which the script decides
/// at.
///
/// # Safety
/// As `rate_keyed_lease_renewals`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_renewals_at(
    holder: *const rate_keyed_lease_holder,
    now_ns: u64,
    out: *mut *mut rate_keyed_lease_round,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe {
        round_into(holder, out, |holder| {
            holder.renewals_at(Some(Instant::from_nanos(now_ns)))
        })
    }
}

/// Stops leasing every key and gives the round that hands each share back: send its calls;
/// their answers need no applying. For a holder being closed, after its last decision.
///
/// # Safety
/// As `rate_keyed_lease_renewals`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_release_all(
    holder: *const rate_keyed_lease_holder,
    out: *mut *mut rate_keyed_lease_round,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe {
        round_into(holder, out, |holder| {
            holder
                .release_all()
                .into_iter()
                .map(|(key, leased)| KeyRenewal {
                    renewal: leased.release(),
                    holder: Arc::clone(&leased),
                    key,
                })
                .collect()
        })
    }
}

/// Writes the round `make` gives into `out`.
///
/// # Safety
/// As `rate_keyed_lease_renewals`.
unsafe fn round_into(
    holder: *const rate_keyed_lease_holder,
    out: *mut *mut rate_keyed_lease_round,
    make: impl FnOnce(&KeyedLeaseHolder) -> Vec<KeyRenewal>,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        let (Some(holder), false) = (unsafe { holder_ref(holder) }, out.is_null()) else {
            return RATE_E_NULL;
        };
        let round = rate_keyed_lease_round {
            renewals: make(holder),
        };
        // SAFETY: `out` is non-NULL and writable, as the caller promised.
        unsafe { *out = Box::into_raw(Box::new(round)) };
        RATE_OK
    })
}

/// The calls in a round (0 for NULL).
///
/// # Safety
/// `round` is NULL or a live round.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_round_len(round: *const rate_keyed_lease_round) -> usize {
    // Nothing here can panic: no boundary.
    // SAFETY: the caller's promise.
    unsafe { round.as_ref() }.map_or(0, |round| round.renewals.len())
}

/// The renewal at `index` of `round`, or `None`.
///
/// # Safety
/// `round` is NULL or a live round.
unsafe fn renewal_at<'a>(
    round: *const rate_keyed_lease_round,
    index: usize,
) -> Option<&'a KeyRenewal> {
    // SAFETY: the caller's promise.
    unsafe { round.as_ref() }.and_then(|round| round.renewals.get(index))
}

/// Points `*key` and `*key_len` at the key of call `index` of `round`, valid until the
/// round is freed.
///
/// Returns RATE_OK, or RATE_E_NULL (a NULL, or `index` past the round).
///
/// # Safety
/// `round` is NULL or a live round; `key` and `key_len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_round_key(
    round: *const rate_keyed_lease_round,
    index: usize,
    key: *mut *const u8,
    key_len: *mut usize,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller's promise.
        let Some(renewal) = (unsafe { renewal_at(round, index) }) else {
            return RATE_E_NULL;
        };
        if key.is_null() || key_len.is_null() {
            return RATE_E_NULL;
        }
        // SAFETY: both non-NULL and writable, as the caller promised.
        unsafe {
            *key = renewal.key.as_ptr();
            *key_len = renewal.key.len();
        }
        RATE_OK
    })
}

/// Fills `out` with call `index` of `round`, to send at its key.
///
/// Returns RATE_OK, or RATE_E_NULL (a NULL, or `index` past the round).
///
/// # Safety
/// `round` is NULL or a live round; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_round_renewal(
    round: *const rate_keyed_lease_round,
    index: usize,
    out: *mut rate_lease_renewal,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller's promise.
        let (Some(renewal), false) = (unsafe { renewal_at(round, index) }, out.is_null()) else {
            return RATE_E_NULL;
        };
        // SAFETY: `out` is non-NULL and writable, as the caller promised.
        unsafe { *out = renewal_of(&renewal.renewal) };
        RATE_OK
    })
}

/// Applies the answer to call `index` of `round` now, as `rate_lease_apply` does for one
/// holder: returns the key's RATE_LEASE_* state afterwards, RATE_E_NULL (a NULL, or `index`
/// past the round), or RATE_E_REPLY (nothing applied).
///
/// # Safety
/// `round` is NULL or a live round; `status` is NULL or points to `status_len` readable
/// bytes; `fields` is NULL or points to RATE_LEASE_FIELDS readable u64.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_round_apply(
    round: *const rate_keyed_lease_round,
    index: usize,
    status: *const u8,
    status_len: usize,
    fields: *const u64,
) -> i32 {
    // SAFETY: the caller's promises.
    unsafe {
        rate_keyed_lease_round_apply_at(
            round,
            index,
            status,
            status_len,
            fields,
            Instant::now().as_nanos(),
        )
    }
}

/// `rate_keyed_lease_round_apply` at `now_ns` on the caller's timeline.
///
/// # Safety
/// As `rate_keyed_lease_round_apply`.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_round_apply_at(
    round: *const rate_keyed_lease_round,
    index: usize,
    status: *const u8,
    status_len: usize,
    fields: *const u64,
    now_ns: u64,
) -> i32 {
    boundary(|| {
        // SAFETY: the caller's promise.
        let Some(renewal) = (unsafe { renewal_at(round, index) }) else {
            return RATE_E_NULL;
        };
        let sent = renewal_of(&renewal.renewal);
        // SAFETY: the caller's promises for `status` and `fields`; `sent` is ours.
        unsafe {
            apply_to(
                Some(&renewal.holder),
                &sent,
                status,
                status_len,
                fields,
                now_ns,
            )
        }
    })
}

/// Frees a round.
///
/// # Safety
/// `round` is NULL or a live round, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_round_free(round: *mut rate_keyed_lease_round) {
    boundary(|| {
        if !round.is_null() {
            // SAFETY: a round from `round_into`, freed once (the caller's promise).
            drop(unsafe { Box::from_raw(round) });
        }
    })
}

/// The lease script of the holder's rule, NUL-terminated and static, or NULL for a NULL
/// holder: it renews the keys' leases and decides the requests in Redis.
///
/// # Safety
/// `holder` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_lease_script(
    holder: *const rate_keyed_lease_holder,
) -> *const c_char {
    boundary(|| {
        // SAFETY: the caller passes NULL or a live handle.
        match unsafe { holder_ref(holder) } {
            Some(holder) => holder.script_with_nul().as_ptr().cast(),
            None => std::ptr::null(),
        }
    })
}
