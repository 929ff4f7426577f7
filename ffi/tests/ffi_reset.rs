//! `rate_limiter_reset`, `rate_keyed_reset` and `rate_keyed_read_stats` called from Rust:
//! bad pointers are RATE_E_NULL and leave `out` untouched, and the results are the Rust
//! API's (tests/reset.rs checks those).

use rate::*;
use std::ptr;

const SECOND: u64 = 1_000_000_000;

/// Statistics no call produces, to show that a failed call did not write.
const SENTINEL: rate_keyed_stats = rate_keyed_stats {
    capacity: 0xA5A5_A5A5_A5A5_A5A5,
    max_keys: 0xA5A5_A5A5_A5A5_A5A5,
    live_keys: 0xA5A5_A5A5_A5A5_A5A5,
    table_full: 0xA5A5_A5A5_A5A5_A5A5,
};

/// GCRA, one per second, burst 1.
const CONFIG: rate_config = rate_config {
    algorithm: RATE_GCRA,
    limit: 1,
    period_ns: SECOND,
    burst: 0,
};

/// `rate_keyed_acquire_at` of one unit; its status.
fn acquire(table: *mut rate_keyed, key: &[u8], now_ns: u64) -> i32 {
    // SAFETY: a live handle and key; `out` may be NULL.
    unsafe { rate_keyed_acquire_at(table, key.as_ptr(), key.len(), 1, now_ns, ptr::null_mut()) }
}

#[test]
fn null_handles_keys_and_outs_are_e_null() {
    let mut stats = SENTINEL;
    // SAFETY: every pointer is NULL or live; NULL is what is tested.
    unsafe {
        assert_eq!(rate_limiter_reset(ptr::null_mut()), RATE_E_NULL);
        assert_eq!(
            rate_keyed_reset(ptr::null_mut(), ptr::null(), 0),
            RATE_E_NULL
        );
        assert_eq!(rate_keyed_read_stats(ptr::null(), &mut stats), RATE_E_NULL);
        assert_eq!(
            rate_keyed_read_stats_at(ptr::null(), 0, &mut stats),
            RATE_E_NULL
        );
    }
    assert_eq!(stats, SENTINEL);
    let mut table = ptr::null_mut();
    // SAFETY: live pointers.
    assert_eq!(unsafe { rate_keyed_new(&CONFIG, 1, &mut table) }, RATE_OK);
    // SAFETY: a live handle; the NULL key and outs are what is tested.
    unsafe {
        assert_eq!(rate_keyed_reset(table, ptr::null(), 1), RATE_E_NULL);
        // NULL with length 0 is the empty key: not in the table, nothing to do.
        assert_eq!(rate_keyed_reset(table, ptr::null(), 0), RATE_OK);
        assert_eq!(rate_keyed_read_stats(table, ptr::null_mut()), RATE_E_NULL);
        assert_eq!(
            rate_keyed_read_stats_at(table, 0, ptr::null_mut()),
            RATE_E_NULL
        );
        rate_keyed_free(table);
    }
}

#[test]
fn a_reset_limiter_admits_again() {
    let mut limiter = ptr::null_mut();
    // SAFETY: live pointers, and the handle is freed once at the end.
    unsafe {
        assert_eq!(rate_limiter_new(&CONFIG, &mut limiter), RATE_OK);
        assert_eq!(
            rate_limiter_acquire_at(limiter, 1, 0, ptr::null_mut()),
            RATE_OK
        );
        assert_eq!(
            rate_limiter_acquire_at(limiter, 1, 0, ptr::null_mut()),
            RATE_LIMITED
        );
        assert_eq!(rate_limiter_reset(limiter), RATE_OK);
        assert_eq!(
            rate_limiter_acquire_at(limiter, 1, 0, ptr::null_mut()),
            RATE_OK
        );
        rate_limiter_free(limiter);
    }
}

/// Capacity 1 (two slots): two keys fill it; a third is refused twice; a reset key is
/// admitted again once its former state is fresh (1 s later), and the statistics say so.
#[test]
fn a_reset_key_and_the_statistics_through_the_c_abi() {
    let mut table = ptr::null_mut();
    // SAFETY: live pointers.
    assert_eq!(unsafe { rate_keyed_new(&CONFIG, 1, &mut table) }, RATE_OK);
    assert_eq!(acquire(table, b"a", 0), RATE_OK);
    assert_eq!(acquire(table, b"b", 0), RATE_OK);
    assert_eq!(acquire(table, b"c", 0), RATE_E_TABLE_FULL);
    assert_eq!(acquire(table, b"a", 0), RATE_LIMITED);
    let key = b"a";
    // SAFETY: a live handle and key.
    assert_eq!(
        unsafe { rate_keyed_reset(table, key.as_ptr(), key.len()) },
        RATE_OK
    );
    // Its former state takes its slot until 1 s: a is refused as a new key until then.
    assert_eq!(acquire(table, b"a", 0), RATE_E_TABLE_FULL);
    assert_eq!(acquire(table, b"a", SECOND), RATE_OK);
    let mut stats = SENTINEL;
    // SAFETY: a live handle and a live out.
    assert_eq!(
        unsafe { rate_keyed_read_stats_at(table, SECOND, &mut stats) },
        RATE_OK
    );
    let expected = rate_keyed_stats {
        capacity: 1,
        max_keys: 2,
        live_keys: 1,
        table_full: 2,
    };
    assert_eq!(stats, expected);
    // At the library clock's time the sizes and refusals are the same.
    // SAFETY: as above.
    assert_eq!(unsafe { rate_keyed_read_stats(table, &mut stats) }, RATE_OK);
    assert_eq!(
        (stats.capacity, stats.max_keys, stats.table_full),
        (1, 2, 2)
    );
    // SAFETY: freed once.
    unsafe { rate_keyed_free(table) };
}
