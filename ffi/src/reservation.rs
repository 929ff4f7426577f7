//! `rate_*_reserve_cancellable_at` and `rate_*_cancel`: a reserve whose admission the
//! caller may give back (docs/c.md, Cancelling a reservation), kept in a
//! `rate_reservation` of the caller's.
//!
//! The struct holds the handle's address and the core's words for the refund
//! (`Reservation::to_words`). A cancel checks the address, so a reservation of another
//! live handle gives nothing back; the core checks the words, so no bytes at all can
//! reach memory out of range. A cancel empties the struct, so a second one gives nothing.

use super::keyed::{rate_keyed, table, with_key};
use super::limiter::{limiter_ref, rate_limiter};
use super::{boundary, rate_decision, report, RATE_E_NULL, RATE_LIMITED, RATE_OK};
use librate::{Error, Instant, KeyedLimiter, Limiter, Reservation, RESERVATION_WORDS};
use std::ptr::NonNull;
use std::time::Duration;

/// A reservation that `rate_limiter_cancel` or `rate_keyed_cancel` may give back, written
/// by `rate_limiter_reserve_cancellable_at` or `rate_keyed_reserve_cancellable_at`. Plain
/// memory of the caller's (on the stack, in a struct); nothing to free.
///
/// Its words are opaque: read nothing from them and change none. All zero is an empty
/// reservation, which gives nothing back.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rate_reservation {
    /// Opaque: the handle that made it, and what giving its units back takes.
    pub opaque: [u64; 8],
}

impl rate_reservation {
    /// The reservation `reservation`, made on the handle at `handle`.
    fn of(handle: usize, reservation: Reservation<'_>) -> Self {
        let mut opaque = [0; 8];
        opaque[0] = handle as u64;
        opaque[1..].copy_from_slice(&reservation.to_words());
        Self { opaque }
    }

    /// Empties the reservation and gives its words to `cancel` if it was made on the
    /// handle at `handle`: RATE_OK if they gave units back, else RATE_LIMITED.
    fn cancel(
        &mut self,
        handle: usize,
        cancel: impl FnOnce(&[u64; RESERVATION_WORDS]) -> bool,
    ) -> i32 {
        let taken = std::mem::take(self);
        let mut words = [0; RESERVATION_WORDS];
        words.copy_from_slice(&taken.opaque[1..]);
        if taken.opaque[0] == handle as u64 && cancel(&words) {
            RATE_OK
        } else {
            RATE_LIMITED
        }
    }
}

/// Runs an export's body on a handle's limiter or table and its reservation, inside the
/// boundary: RATE_E_NULL if either is NULL. The reservation stays a pointer, as a reserve
/// writes it without reading it.
fn with_reservation<T>(
    handle: Option<&T>,
    reservation: *mut rate_reservation,
    body: impl FnOnce(&T, NonNull<rate_reservation>) -> i32,
) -> i32 {
    boundary(|| match (handle, NonNull::new(reservation)) {
        (Some(handle), Some(reservation)) => body(handle, reservation),
        _ => RATE_E_NULL,
    })
}

/// The body of `rate_*_cancel`: `cancel_words` on the handle of the reservation's words,
/// if the handle at `address` made it, inside the boundary.
///
/// # Safety
/// `reservation` is NULL or points to a writable `rate_reservation`.
unsafe fn cancel<T>(
    handle: Option<&T>,
    address: usize,
    reservation: *mut rate_reservation,
    cancel_words: impl FnOnce(&T, &[u64; RESERVATION_WORDS]) -> bool,
) -> i32 {
    with_reservation(handle, reservation, |held, mut reservation| {
        // SAFETY: per this function's contract; non-NULL.
        let reservation = unsafe { reservation.as_mut() };
        reservation.cancel(address, |words| cancel_words(held, words))
    })
}

/// A reserve's report: its decision to `out` (if not NULL) and, on RATE_OK or
/// RATE_LIMITED, the reservation to `reservation`.
///
/// # Safety
/// `out` is NULL or writable; `reservation` is writable.
unsafe fn report_reserved(
    handle: usize,
    reserved: Result<Reservation<'_>, impl Into<Error>>,
    out: *mut rate_decision,
    reservation: NonNull<rate_reservation>,
) -> i32 {
    let (decision, held) = match reserved {
        Ok(held) => (
            Ok(held.decision()),
            Some(rate_reservation::of(handle, held)),
        ),
        Err(error) => (Err(error.into()), None),
    };
    // SAFETY: per this function's contract.
    let status = unsafe { report(decision, out) };
    if let Some(held) = held {
        // SAFETY: per this function's contract.
        unsafe { reservation.as_ptr().write(held) };
    }
    status
}

/// Reserves `n` units at `now_ns` as `rate_limiter_reserve_at` does, and writes to
/// `reservation` what `rate_limiter_cancel` needs to give them back: for a caller that
/// may not act after all (it gave up, a later step failed). A denial, or a query of 0
/// units, writes an empty reservation, which gives nothing back.
///
/// Ownership: `out` and `reservation` are the caller's; the reservation holds no memory
/// and needs no freeing. It is this handle's, and void once the handle is freed.
///
/// Thread-safety: safe to call concurrently on one handle.
///
/// NULL: `limiter` or `reservation` NULL is RATE_E_NULL; `out` may be NULL.
///
/// Returns as `rate_limiter_reserve_at`; `reservation` is written on RATE_OK and
/// RATE_LIMITED and untouched otherwise.
///
/// # Safety
/// `limiter` is NULL or a live handle; `out` is NULL or writable; `reservation` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_reserve_cancellable_at(
    limiter: *mut rate_limiter,
    n: u64,
    now_ns: u64,
    max_wait_ns: u64,
    out: *mut rate_decision,
    reservation: *mut rate_reservation,
) -> i32 {
    let body = |held: &Limiter, reservation| {
        let at = Instant::from_nanos(now_ns);
        let reserved = held.reserve_cancellable_at(n, at, Duration::from_nanos(max_wait_ns));
        // SAFETY: the caller passes NULL or a writable `out`, and a writable reservation.
        unsafe { report_reserved(limiter as usize, reserved, out, reservation) }
    };
    // SAFETY: the caller passes NULL or a live handle.
    with_reservation(unsafe { limiter_ref(limiter) }, reservation, body)
}

/// Gives back the units of a reservation `rate_limiter_reserve_cancellable_at` wrote for
/// this handle, as far as no later request depends on them: the limiter then decides as
/// if the reserve had never been made. Nothing comes back once a later admission moved
/// the limiter on (a reserve queued behind it: those units stay taken, never admitted
/// twice), or once `rate_limiter_set_config` replaced the rule. One race is not exact: a
/// `rate_limiter_reset` since the reserve, whose later admissions bring the state back to
/// exactly the value the reserve left, has those admissions' units given back.
///
/// The reservation is emptied either way, so cancelling it again gives nothing.
///
/// Ownership: `reservation` is the caller's, written (emptied) during the call.
///
/// Thread-safety: safe to call concurrently on one handle; one reservation must not be
/// cancelled by two threads at once.
///
/// NULL: `limiter` or `reservation` NULL is RATE_E_NULL.
///
/// Returns RATE_OK (given back), RATE_LIMITED (nothing given back: the units stay taken,
/// or it held none: a denial's, a query's, an emptied one, another handle's), or
/// RATE_E_NULL.
///
/// # Safety
/// `limiter` is NULL or a live handle; `reservation` is NULL or points to a
/// `rate_reservation` that a reserve wrote for this handle (or that is all zero) and that
/// the caller has not changed since; words of anything else give nothing back, but a
/// reservation of a handle since freed may be taken for one of a new handle at the same
/// address.
#[no_mangle]
pub unsafe extern "C" fn rate_limiter_cancel(
    limiter: *mut rate_limiter,
    reservation: *mut rate_reservation,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle, and NULL or a writable reservation.
    unsafe {
        cancel(
            limiter_ref(limiter),
            limiter as usize,
            reservation,
            Limiter::cancel_words,
        )
    }
}

/// Reserves `n` units for the key of `key_len` bytes at `key`, at `now_ns`, as
/// `rate_keyed_reserve_at` does, and writes to `reservation` what `rate_keyed_cancel`
/// needs to give them back, as `rate_limiter_reserve_cancellable_at` does.
///
/// Ownership, thread-safety: as `rate_limiter_reserve_cancellable_at`.
///
/// NULL: as `rate_keyed_acquire`, and `reservation` NULL is RATE_E_NULL.
///
/// Returns as `rate_keyed_reserve_at`; `reservation` is written on RATE_OK and
/// RATE_LIMITED and untouched otherwise.
///
/// # Safety
/// As `rate_keyed_acquire`; `reservation` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the reserve's, and where its reservation goes
pub unsafe extern "C" fn rate_keyed_reserve_cancellable_at(
    keyed: *mut rate_keyed,
    key: *const u8,
    key_len: usize,
    n: u64,
    now_ns: u64,
    max_wait_ns: u64,
    out: *mut rate_decision,
    reservation: *mut rate_reservation,
) -> i32 {
    let body = |table: &KeyedLimiter, key: &[u8]| {
        let Some(reservation) = NonNull::new(reservation) else {
            return RATE_E_NULL;
        };
        let (at, max_wait) = (
            Instant::from_nanos(now_ns),
            Duration::from_nanos(max_wait_ns),
        );
        let reserved = table.reserve_cancellable_at(key, n, at, max_wait);
        // SAFETY: the caller passes NULL or a writable `out`, and a writable reservation.
        unsafe { report_reserved(keyed as usize, reserved, out, reservation) }
    };
    // SAFETY: passed on from this function's contract.
    unsafe { with_key(keyed, key, key_len, table, body) }
}

/// Gives back the units of a reservation `rate_keyed_reserve_cancellable_at` wrote for
/// this handle, as `rate_limiter_cancel` does for a limiter; `rate_keyed_reset` has no
/// race with it. The reservation knows its key. A key the reserve inserted is absent
/// again once given back.
///
/// Ownership, thread-safety, NULL, returns: as `rate_limiter_cancel`.
///
/// # Safety
/// As `rate_limiter_cancel`, for a keyed handle.
#[no_mangle]
pub unsafe extern "C" fn rate_keyed_cancel(
    keyed: *mut rate_keyed,
    reservation: *mut rate_reservation,
) -> i32 {
    // SAFETY: the caller passes NULL or a live handle (`as_ref` checks NULL), and NULL or
    // a writable reservation.
    unsafe {
        let table = keyed.as_ref().map(table);
        cancel(
            table,
            keyed as usize,
            reservation,
            <KeyedLimiter>::cancel_words,
        )
    }
}
