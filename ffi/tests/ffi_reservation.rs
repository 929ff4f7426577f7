//! `rate_*_reserve_cancellable_at` and `rate_*_cancel` called from Rust with reservations
//! a caller forged: words that name this very handle but no refund it made give nothing
//! back and touch nothing, whatever they hold (tests/c/test_reservation.c checks the
//! values; tests/reservation.rs the Rust API's).

use rate::*;
use std::ptr;

const SECOND: u64 = 1_000_000_000;

/// GCRA, one per second, burst 1: T = τ = 1 s.
const CONFIG: rate_config = rate_config {
    algorithm: RATE_GCRA,
    limit: 1,
    period_ns: SECOND,
    burst: 1,
};

/// Word patterns for a forged reservation's words after the handle's address.
const FILLS: [u64; 6] = [0, 1, 2, 3, u64::MAX, 0xABAB_ABAB_ABAB_ABAB];

/// A reservation of the handle at `handle` whose other words are `fill`, except the first
/// (what they hold), which is `kind`.
fn forged(handle: usize, kind: u64, fill: u64) -> rate_reservation {
    let mut opaque = [fill; 8];
    opaque[0] = handle as u64;
    opaque[1] = kind;
    rate_reservation { opaque }
}

#[test]
fn forged_words_on_a_limiter_give_nothing_back() {
    let mut limiter = ptr::null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { rate_limiter_new(&CONFIG, &mut limiter) }, RATE_OK);
    // SAFETY: a live handle; `out` may be NULL. TAT 0 → 1 s.
    let status = unsafe { rate_limiter_acquire_at(limiter, 1, 0, ptr::null_mut()) };
    assert_eq!(status, RATE_OK);
    for kind in 0..4 {
        for fill in FILLS {
            let mut reservation = forged(limiter as usize, kind, fill);
            // SAFETY: a live handle and a writable reservation.
            let status = unsafe { rate_limiter_cancel(limiter, &mut reservation) };
            assert_eq!(status, RATE_LIMITED, "kind {kind}, fill {fill:#x}");
            assert_eq!(reservation, rate_reservation::default(), "emptied");
        }
    }
    // The acquire's unit is still taken: TAT 1 s, so a unit at 0 is denied.
    // SAFETY: as above.
    let status = unsafe { rate_limiter_acquire_at(limiter, 1, 0, ptr::null_mut()) };
    assert_eq!(status, RATE_LIMITED);
    // SAFETY: a handle from `rate_limiter_new`, freed once.
    unsafe { rate_limiter_free(limiter) };
}

#[test]
fn forged_words_on_a_table_give_nothing_back() {
    let mut table = ptr::null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { rate_keyed_new(&CONFIG, 4, &mut table) }, RATE_OK);
    let key = b"k";
    // SAFETY: a live handle and key; `out` may be NULL.
    let acquire =
        || unsafe { rate_keyed_acquire_at(table, key.as_ptr(), 1, 1, 0, ptr::null_mut()) };
    assert_eq!(acquire(), RATE_OK);
    for kind in 0..4 {
        for fill in FILLS {
            let mut reservation = forged(table as usize, kind, fill);
            // SAFETY: a live handle and a writable reservation.
            let status = unsafe { rate_keyed_cancel(table, &mut reservation) };
            assert_eq!(status, RATE_LIMITED, "kind {kind}, fill {fill:#x}");
        }
    }
    assert_eq!(acquire(), RATE_LIMITED);
    // SAFETY: a handle from `rate_keyed_new`, freed once.
    unsafe { rate_keyed_free(table) };
}

/// `rate_limiter_reserve_cancellable_at` of `n` units at 0, waiting at most a second.
fn reserve(limiter: *mut rate_limiter, n: u64, reservation: &mut rate_reservation) -> i32 {
    // SAFETY: a live handle and a writable reservation; `out` may be NULL.
    unsafe {
        rate_limiter_reserve_cancellable_at(limiter, n, 0, SECOND, ptr::null_mut(), reservation)
    }
}

#[test]
fn a_reservation_is_written_only_when_decided() {
    let mut limiter = ptr::null_mut();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { rate_limiter_new(&CONFIG, &mut limiter) }, RATE_OK);
    let sentinel = rate_reservation { opaque: [7; 8] };
    let mut reservation = sentinel;
    // n = 2 exceeds the burst of 1.
    assert_eq!(
        reserve(limiter, 2, &mut reservation),
        RATE_E_INSUFFICIENT_CAPACITY
    );
    assert_eq!(reservation, sentinel);
    // A query of 0 units is decided, and holds nothing: its reservation is empty but for
    // the handle.
    assert_eq!(reserve(limiter, 0, &mut reservation), RATE_OK);
    assert_eq!(&reservation.opaque[1..], &[0; 7]);
    // SAFETY: a handle from `rate_limiter_new`, freed once.
    unsafe { rate_limiter_free(limiter) };
}
