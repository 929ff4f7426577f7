//! The C ABI called from Rust: bad pointers, bad numbers and forced panics come back as
//! status codes (docs/c.md, statuses), and errors leave `out` untouched.
//!
//! Notation as in docs/decision.md: L limit, P period, B burst, T = ⌊P/L⌋, τ = B·T.

use rate::*;
use std::ffi::CStr;
use std::ptr;

const SECOND: u64 = 1_000_000_000;

/// A decision no call produces, to show that a failed call did not write.
const SENTINEL: rate_decision = rate_decision {
    allowed: 0xA5,
    limit: 0xA5A5_A5A5_A5A5_A5A5,
    remaining: 0xA5A5_A5A5_A5A5_A5A5,
    retry_after_ns: 0xA5A5_A5A5_A5A5_A5A5,
    reset_after_ns: 0xA5A5_A5A5_A5A5_A5A5,
    wait_ns: 0xA5A5_A5A5_A5A5_A5A5,
};

fn gcra(limit: u64, period_ns: u64, burst: u64) -> rate_config {
    rate_config {
        algorithm: RATE_GCRA,
        limit,
        period_ns,
        burst,
    }
}

/// `rate_limiter_new`'s status and what it left in `*out` (which starts NULL).
fn new_limiter(config: &rate_config) -> (i32, *mut rate_limiter) {
    let mut limiter = ptr::null_mut();
    // SAFETY: both pointers come from live references.
    let status = unsafe { rate_limiter_new(config, &mut limiter) };
    (status, limiter)
}

/// An owned handle, freed on drop.
struct Handle(*mut rate_limiter);

impl Handle {
    fn new(config: rate_config) -> Self {
        let (status, limiter) = new_limiter(&config);
        assert_eq!(status, RATE_OK, "{config:?}");
        assert!(!limiter.is_null());
        Self(limiter)
    }

    /// `rate_limiter_acquire_at` into a fresh copy of `SENTINEL`.
    fn acquire_at(&self, n: u64, now_ns: u64) -> (i32, rate_decision) {
        let mut out = SENTINEL;
        // SAFETY: a live handle and a live decision.
        let status = unsafe { rate_limiter_acquire_at(self.0, n, now_ns, &mut out) };
        (status, out)
    }

    /// `rate_limiter_reserve_at` into a fresh copy of `SENTINEL`.
    fn reserve_at(&self, n: u64, now_ns: u64, max_wait_ns: u64) -> (i32, rate_decision) {
        let mut out = SENTINEL;
        // SAFETY: a live handle and a live decision.
        let status = unsafe { rate_limiter_reserve_at(self.0, n, now_ns, max_wait_ns, &mut out) };
        (status, out)
    }

    /// `rate_limiter_acquire` (the library clock) into a fresh copy of `SENTINEL`.
    fn acquire(&self, n: u64) -> (i32, rate_decision) {
        let mut out = SENTINEL;
        // SAFETY: a live handle and a live decision.
        let status = unsafe { rate_limiter_acquire(self.0, n, &mut out) };
        (status, out)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle came from rate_limiter_new and is freed once, here.
        unsafe { rate_limiter_free(self.0) };
    }
}

fn decision(
    allowed: u8,
    limit: u64,
    remaining: u64,
    retry_after_ns: u64,
    reset_after_ns: u64,
    wait_ns: u64,
) -> rate_decision {
    rate_decision {
        allowed,
        limit,
        remaining,
        retry_after_ns,
        reset_after_ns,
        wait_ns,
    }
}

fn status_text(status: i32) -> &'static str {
    let text = rate_status_str(status);
    assert!(!text.is_null(), "rate_status_str({status}) is NULL");
    // SAFETY: rate_status_str returns a static NUL-terminated string (checked non-NULL).
    unsafe { CStr::from_ptr(text) }
        .to_str()
        .expect("status strings are UTF-8")
}

#[test]
fn status_codes_keep_their_contract_numbers() {
    // The numbers are ABI (docs/c.md).
    assert_eq!(
        [
            RATE_OK,
            RATE_LIMITED,
            RATE_E_NULL,
            RATE_E_INVALID_CONFIG,
            RATE_E_INSUFFICIENT_CAPACITY,
            RATE_E_TABLE_FULL,
            RATE_E_UNSUPPORTED,
            RATE_E_INTERNAL,
        ],
        [0, 1, -1, -2, -3, -4, -5, -6]
    );
    assert_eq!(
        [
            RATE_GCRA,
            RATE_FIXED_WINDOW,
            RATE_SLIDING_WINDOW,
            RATE_SLIDING_LOG
        ],
        [0, 1, 2, 3]
    );
}

#[test]
fn status_strings_are_distinct_and_static() {
    let known: Vec<&str> = (-9..=1).map(status_text).collect();
    for (i, text) in known.iter().enumerate() {
        assert!(!text.is_empty());
        assert_ne!(*text, "unknown status");
        assert!(
            !known[..i].contains(text),
            "{text:?} describes two codes: {known:?}"
        );
    }
    for unknown in [2, 3, -10, 100, i32::MAX, i32::MIN] {
        assert_eq!(status_text(unknown), "unknown status");
    }
    // Static: the same address every time.
    assert_eq!(rate_status_str(RATE_E_NULL), rate_status_str(RATE_E_NULL));
}

#[test]
fn version_is_the_cargo_version() {
    let version = rate_version();
    assert!(!version.is_null());
    // SAFETY: rate_version returns a static NUL-terminated string (checked non-NULL).
    let version = unsafe { CStr::from_ptr(version) };
    assert_eq!(version.to_str(), Ok(env!("CARGO_PKG_VERSION")));
}

#[test]
fn now_ns_is_the_library_clock() {
    let before = librate::now_ns();
    let now = rate_now_ns();
    let after = librate::now_ns();
    assert!(before <= now && now <= after);
}

#[test]
fn new_rejects_null_pointers() {
    let config = gcra(1, SECOND, 0);
    let mut limiter = ptr::null_mut();
    // SAFETY: NULL is what is being tested; the other pointer is live.
    unsafe {
        assert_eq!(rate_limiter_new(ptr::null(), &mut limiter), RATE_E_NULL);
        assert!(limiter.is_null());
        assert_eq!(rate_limiter_new(&config, ptr::null_mut()), RATE_E_NULL);
        assert_eq!(rate_limiter_new(ptr::null(), ptr::null_mut()), RATE_E_NULL);
    }
}

#[test]
fn unknown_algorithms_are_invalid_and_leave_out_alone() {
    for algorithm in [4, 5, 1000, u32::MAX] {
        let config = rate_config {
            algorithm,
            ..gcra(1, SECOND, 0)
        };
        let mut sentinel = 0u8;
        let mut limiter: *mut rate_limiter = ptr::addr_of_mut!(sentinel).cast();
        let before = limiter;
        // SAFETY: both pointers come from live places; `limiter` must not be written.
        let status = unsafe { rate_limiter_new(&config, &mut limiter) };
        assert_eq!(status, RATE_E_INVALID_CONFIG, "algorithm {algorithm}");
        assert_eq!(limiter, before, "algorithm {algorithm}: *out was written");
    }
}

#[test]
fn invalid_numbers_are_invalid_config() {
    for config in [
        gcra(0, SECOND, 0),        // L = 0
        gcra(1, 0, 0),             // P = 0
        gcra(10, 9, 0),            // T = ⌊9/10⌋ = 0
        gcra(1, u64::MAX - 1, 2),  // B·T = 2·(2^64 − 2)
        gcra(1, 1 << 32, 1 << 32), // B·T = 2^64
    ] {
        let (status, limiter) = new_limiter(&config);
        assert_eq!(status, RATE_E_INVALID_CONFIG, "{config:?}");
        assert!(limiter.is_null());
    }
}

#[test]
fn free_null_is_a_no_op() {
    // SAFETY: NULL is documented as a no-op.
    unsafe {
        rate_limiter_free(ptr::null_mut());
        rate_limiter_free(ptr::null_mut());
    }
}

#[test]
fn null_handle_is_e_null_and_leaves_out_alone() {
    let mut out = SENTINEL;
    // SAFETY: NULL handles are what is being tested; `out` is live or NULL.
    unsafe {
        assert_eq!(
            rate_limiter_acquire(ptr::null_mut(), 1, &mut out),
            RATE_E_NULL
        );
        assert_eq!(
            rate_limiter_acquire_at(ptr::null_mut(), 1, 0, &mut out),
            RATE_E_NULL
        );
        assert_eq!(
            rate_limiter_reserve_at(ptr::null_mut(), 1, 0, SECOND, &mut out),
            RATE_E_NULL
        );
        assert_eq!(
            rate_limiter_acquire(ptr::null_mut(), 1, ptr::null_mut()),
            RATE_E_NULL
        );
        assert_eq!(
            rate_limiter_acquire_at(ptr::null_mut(), 0, 0, ptr::null_mut()),
            RATE_E_NULL
        );
        assert_eq!(
            rate_limiter_reserve_at(ptr::null_mut(), 1, 0, 0, ptr::null_mut()),
            RATE_E_NULL
        );
    }
    assert_eq!(out, SENTINEL);
}

#[test]
fn null_out_is_allowed() {
    // L=1, P=1 s, B=1: T = τ = 1 s.
    let limiter = Handle::new(gcra(1, SECOND, 1));
    // SAFETY: a live handle; `out` NULL is documented as allowed.
    unsafe {
        // 0 + 1 − 0 ≤ 1: admitted, TAT = 1 s; then 1 + 1 − 0 = 2 > 1: denied.
        assert_eq!(
            rate_limiter_acquire_at(limiter.0, 1, 0, ptr::null_mut()),
            RATE_OK
        );
        assert_eq!(
            rate_limiter_acquire_at(limiter.0, 1, 0, ptr::null_mut()),
            RATE_LIMITED
        );
        // Reserve, W = 1 s: 2 ≤ 2 admitted (TAT = 2 s), then 3 > 2 denied.
        assert_eq!(
            rate_limiter_reserve_at(limiter.0, 1, 0, SECOND, ptr::null_mut()),
            RATE_OK
        );
        assert_eq!(
            rate_limiter_reserve_at(limiter.0, 1, 0, SECOND, ptr::null_mut()),
            RATE_LIMITED
        );
    }
    // TAT = 2 s at 0: retry 2 + 1 − 0 − 1 = 2 s, debt 2 s.
    assert_eq!(
        limiter.acquire_at(1, 0),
        (RATE_LIMITED, decision(0, 1, 0, 2 * SECOND, 2 * SECOND, 0))
    );
    // The library clock, out NULL: a fresh limiter admits B = 1, then denies for an hour.
    let hourly = Handle::new(gcra(1, 3600 * SECOND, 1));
    // SAFETY: a live handle; `out` NULL is allowed.
    unsafe {
        assert_eq!(rate_limiter_acquire(hourly.0, 1, ptr::null_mut()), RATE_OK);
        assert_eq!(
            rate_limiter_acquire(hourly.0, 1, ptr::null_mut()),
            RATE_LIMITED
        );
        assert_eq!(rate_limiter_acquire(hourly.0, 0, ptr::null_mut()), RATE_OK);
    }
}

/// `rate_limiter_acquire` with `out` NULL decides an idle GCRA bucket in place once a
/// decision has needed the exact time, and leaves every other case to the full path:
/// both count each unit once.
#[test]
fn out_null_counts_each_unit_once_on_every_path() {
    // SAFETY (every block): live handles; `out` NULL is allowed; configs from references.
    // B = 5 an hour: the library clock moves far less than T = 720 s during the test, so
    // exactly 5 single units are admitted, then none; n = 2 > 0 left is denied, n = 6 > B
    // is never admissible.
    let hourly = Handle::new(gcra(5, 3600 * SECOND, 5));
    let outcomes: Vec<i32> = (0..8)
        .map(|_| unsafe { rate_limiter_acquire(hourly.0, 1, ptr::null_mut()) })
        .collect();
    assert_eq!(
        outcomes,
        [[RATE_OK; 5].as_slice(), &[RATE_LIMITED; 3]].concat()
    );
    unsafe {
        assert_eq!(
            rate_limiter_acquire(hourly.0, 2, ptr::null_mut()),
            RATE_LIMITED
        );
        assert_eq!(
            rate_limiter_acquire(hourly.0, 6, ptr::null_mut()),
            RATE_E_INSUFFICIENT_CAPACITY
        );
    }
    assert_eq!(hourly.acquire(0).1.remaining, 0);

    // A change of rule before any acquire replaces the first rule's words: the in-place
    // path must find the marker and leave the decision to the new rule. A fresh bucket of
    // B = 3 keeps its 3 tokens under 6 an hour with B' = 3 (docs/live-changes.md: T' =
    // 600 s, τ' = 3T', TAT' = t + τ' − min(τ', 3T') = t), so it is full: 3 units are
    // admitted, then none. The first call needs the exact time (TAT' ≤ t), so the second
    // is tried in place, on the replaced words: deciding there would deny it.
    let changed = Handle::new(gcra(3, 3600 * SECOND, 3));
    let six = gcra(6, 3600 * SECOND, 3);
    unsafe { assert_eq!(rate_limiter_set_config(changed.0, &six), RATE_OK) };
    let outcomes: Vec<i32> = (0..5)
        .map(|_| unsafe { rate_limiter_acquire(changed.0, 1, ptr::null_mut()) })
        .collect();
    assert_eq!(
        outcomes,
        [RATE_OK, RATE_OK, RATE_OK, RATE_LIMITED, RATE_LIMITED]
    );
    assert_eq!(changed.acquire(0).1.remaining, 0);
}

/// Makes each call `(n, now_ns, status)` on two twin limiters of `config`, one with an
/// out and one with `out` NULL (the outcome alone): both must return `status`, and the out
/// must agree (allowed on RATE_OK, denied on RATE_LIMITED, untouched on an error).
fn twins_agree(config: rate_config, calls: &[(u64, u64, i32)]) {
    let (with_out, without_out) = (Handle::new(config), Handle::new(config));
    for (step, &(n, now_ns, status)) in calls.iter().enumerate() {
        let (with_status, out) = with_out.acquire_at(n, now_ns);
        assert_eq!(with_status, status, "{config:?}, step {step}, with an out");
        match status {
            RATE_OK | RATE_LIMITED => assert_eq!(out.allowed, u8::from(status == RATE_OK)),
            _ => assert_eq!(out, SENTINEL, "{config:?}, step {step}: an error wrote out"),
        }
        // SAFETY: a live handle; `out` NULL is allowed.
        let without = unsafe { rate_limiter_acquire_at(without_out.0, n, now_ns, ptr::null_mut()) };
        assert_eq!(without, status, "{config:?}, step {step}, out NULL");
    }
}

#[test]
fn out_null_gives_the_outcome_of_the_same_call_with_out() {
    const MS: u64 = SECOND / 1000;
    const CAPACITY: i32 = RATE_E_INSUFFICIENT_CAPACITY;
    // GCRA, L=2, P=1 s, B=2: T = 500 ms, τ = 1 s.
    let gcra_calls = [
        (0, 0, RATE_OK),  // a query
        (3, 0, CAPACITY), // 3 > B
        (u64::MAX, 0, CAPACITY),
        (2, 0, RATE_OK),                // 0 + 2·500 − 0 = 1000 ≤ 1000: TAT = 1 s
        (1, 0, RATE_LIMITED),           // 1000 + 500 − 0 = 1500 > 1000
        (0, 0, RATE_OK),                // a query, even on an empty bucket
        (1, 500 * MS, RATE_OK),         // 1000 + 500 − 500 = 1000 ≤ 1000: TAT = 1.5 s
        (1, 250 * MS, RATE_LIMITED),    // back in time: 1500 + 500 − 250 = 1750 > 1000
        (1, 10 * SECOND, RATE_OK),      // tat = 10 s: 10.5 − 10 ≤ 1: TAT = 10.5 s
        (1, 9_600 * MS, RATE_LIMITED),  // back: 10.5 + 0.5 − 9.6 = 1.4 s > 1 s
        (1, 10 * SECOND, RATE_OK),      // 11 − 10 = 1 s ≤ 1 s: TAT = 11 s
        (2, 10 * SECOND, RATE_LIMITED), // 11 + 1 − 10 = 2 s > 1 s
    ];
    twins_agree(gcra(2, SECOND, 2), &gcra_calls);
    // Fixed window, L=2, P=1 s: windows [k s, (k+1) s).
    let fixed_calls = [
        (0, 0, RATE_OK),
        (3, 0, CAPACITY),            // 3 > L
        (2, 100 * MS, RATE_OK),      // window 0: 0 + 2 ≤ 2
        (1, 200 * MS, RATE_LIMITED), // 2 + 1 > 2
        (0, 200 * MS, RATE_OK),
        (1, 1_100 * MS, RATE_OK),    // window 1: 0 + 1 ≤ 2
        (1, 500 * MS, RATE_OK),      // back: counted in window 1, 1 + 1 ≤ 2
        (1, 600 * MS, RATE_LIMITED), // back: 2 + 1 > 2
        (1, 2 * SECOND, RATE_OK),    // window 2
    ];
    let fixed = rate_config {
        algorithm: RATE_FIXED_WINDOW,
        ..gcra(2, SECOND, 0)
    };
    twins_agree(fixed, &fixed_calls);
    // Sliding log, L=2, P=1 s: admitted iff the entries in (t − 1 s, t] plus n are ≤ 2.
    let log_calls = [
        (0, 0, RATE_OK),
        (3, 0, CAPACITY),
        (1, 0, RATE_OK),             // log: 0
        (1, 400 * MS, RATE_OK),      // log: 0, 400 ms
        (1, 900 * MS, RATE_LIMITED), // both in (−100 ms, 900 ms]
        (1, 1_200 * MS, RATE_OK),    // (200 ms, 1.2 s] holds 400 ms alone
        (1, SECOND, RATE_LIMITED),   // back: judged at 1.2 s, 400 ms and 1.2 s inside
        (2, 2_500 * MS, RATE_OK),    // (1.5 s, 2.5 s] is empty
    ];
    let log = rate_config {
        algorithm: RATE_SLIDING_LOG,
        ..gcra(2, SECOND, 0)
    };
    twins_agree(log, &log_calls);
}

/// Makes each call (key, n, now, status) on two twin keyed tables of `config` and
/// `capacity`, one through `rate_keyed_acquire_at` with an out and one with out NULL.
fn keyed_twins_agree(config: rate_config, capacity: u64, calls: &[(&str, u64, u64, i32)]) {
    let new = || {
        let mut table = ptr::null_mut();
        // SAFETY: both pointers come from live references.
        let status = unsafe { rate_keyed_new(&config, capacity, &mut table) };
        assert_eq!(status, RATE_OK);
        table
    };
    let (with_out, without_out) = (new(), new());
    for (step, &(key, n, now_ns, status)) in calls.iter().enumerate() {
        let mut out = SENTINEL;
        // SAFETY: live tables, `key.len()` readable bytes, a live decision or NULL.
        let (with, without) = unsafe {
            (
                rate_keyed_acquire_at(with_out, key.as_ptr(), key.len(), n, now_ns, &mut out),
                rate_keyed_acquire_at(
                    without_out,
                    key.as_ptr(),
                    key.len(),
                    n,
                    now_ns,
                    ptr::null_mut(),
                ),
            )
        };
        assert_eq!(with, status, "step {step}, with an out");
        match status {
            RATE_OK | RATE_LIMITED => assert_eq!(out.allowed, u8::from(status == RATE_OK)),
            _ => assert_eq!(out, SENTINEL, "step {step}: an error wrote out"),
        }
        assert_eq!(without, status, "step {step}, out NULL");
    }
    // SAFETY: each handle came from rate_keyed_new and is freed once.
    unsafe {
        rate_keyed_free(with_out);
        rate_keyed_free(without_out);
    }
}

#[test]
fn keyed_out_null_gives_the_outcome_of_the_same_call_with_out() {
    const MS: u64 = SECOND / 1000;
    const CAPACITY: i32 = RATE_E_INSUFFICIENT_CAPACITY;
    // GCRA, L=2, P=1 s, B=2: T = 500 ms, τ = 1 s. Capacity 1: two slots.
    let calls = [
        ("a", 0, 0, RATE_OK),  // a query
        ("a", 3, 0, CAPACITY), // 3 > B
        ("a", u64::MAX, 0, CAPACITY),
        ("a", 2, 0, RATE_OK),           // 0 + 2·500 − 0 = 1000 ≤ 1000: TAT = 1 s
        ("a", 1, 0, RATE_LIMITED),      // 1000 + 500 − 0 = 1500 > 1000
        ("a", 0, 0, RATE_OK),           // a query, even on an empty bucket
        ("b", 1, 0, RATE_OK),           // b's own bucket: TAT = 500 ms
        ("c", 0, 0, RATE_OK),           // a query never inserts, even in a full table
        ("c", 1, 0, RATE_E_TABLE_FULL), // a and b live (TAT > 0) fill both slots
        ("a", 1, 500 * MS, RATE_OK),    // 1000 + 500 − 500 = 1000 ≤ 1000: TAT = 1.5 s
        ("a", 1, 250 * MS, RATE_LIMITED), // back in time: 1500 + 500 − 250 = 1750 > 1000
        ("b", 1, 250 * MS, RATE_OK),    // back: 500 + 500 − 250 = 750 ≤ 1000: TAT = 1 s
        ("c", 1, 900 * MS, RATE_E_TABLE_FULL), // TATs 1.5 s and 1 s: both still live
        ("c", 1, 1_500 * MS, RATE_OK),  // both fresh at 1.5 s: c's TAT = 2 s
        ("c", 2, 1_500 * MS, RATE_LIMITED), // 2000 + 1000 − 1500 = 1500 > 1000
        ("c", 1, 1_500 * MS, RATE_OK),  // 2000 + 500 − 1500 = 1000 ≤ 1000
    ];
    keyed_twins_agree(gcra(2, SECOND, 2), 1, &calls);
}

#[test]
fn n_zero_is_an_admitted_query_that_changes_nothing() {
    // L=2, P=1 s, B=0 → 2: T = 500 ms, τ = 1 s.
    let limiter = Handle::new(gcra(2, SECOND, 0));
    let ms = SECOND / 1000;
    assert_eq!(
        limiter.acquire_at(0, 0),
        (RATE_OK, decision(1, 2, 2, 0, 0, 0))
    );
    // n=1 at 0: 500 ≤ 1000, TAT = 500 ms; remaining ⌊(1000 − 500)/500⌋ = 1.
    assert_eq!(
        limiter.acquire_at(1, 0),
        (RATE_OK, decision(1, 2, 1, 0, 500 * ms, 0))
    );
    for _ in 0..3 {
        assert_eq!(
            limiter.acquire_at(0, 0),
            (RATE_OK, decision(1, 2, 1, 0, 500 * ms, 0))
        );
        assert_eq!(
            limiter.reserve_at(0, 0, SECOND),
            (RATE_OK, decision(1, 2, 1, 0, 500 * ms, 0))
        );
    }
    // Still one unit left: 500 + 500 − 0 = 1000 ≤ 1000, TAT = 1 s.
    assert_eq!(
        limiter.acquire_at(1, 0),
        (RATE_OK, decision(1, 2, 0, 0, SECOND, 0))
    );
    // On the library clock a fresh limiter is full whatever the time.
    let fresh = Handle::new(gcra(2, SECOND, 0));
    assert_eq!(fresh.acquire(0), (RATE_OK, decision(1, 2, 2, 0, 0, 0)));
}

#[test]
fn n_above_burst_is_insufficient_capacity_and_leaves_out_alone() {
    // L=5, P=1 s, B=2: the most ever admitted at once is B, so 3 ≤ L still fails.
    let limiter = Handle::new(gcra(5, SECOND, 2));
    for n in [3, 4, u64::MAX] {
        assert_eq!(
            limiter.acquire_at(n, 0),
            (RATE_E_INSUFFICIENT_CAPACITY, SENTINEL)
        );
        assert_eq!(
            limiter.reserve_at(n, 0, u64::MAX),
            (RATE_E_INSUFFICIENT_CAPACITY, SENTINEL)
        );
        assert_eq!(limiter.acquire(n), (RATE_E_INSUFFICIENT_CAPACITY, SENTINEL));
        // SAFETY: a live handle; `out` NULL is allowed.
        unsafe {
            assert_eq!(
                rate_limiter_acquire(limiter.0, n, ptr::null_mut()),
                RATE_E_INSUFFICIENT_CAPACITY
            );
        }
    }
    // Nothing was taken: n = B at 0: T = 200 ms, 0 + 400 − 0 ≤ 400, TAT = 400 ms.
    assert_eq!(
        limiter.acquire_at(2, 0),
        (RATE_OK, decision(1, 2, 0, 0, 400_000_000, 0))
    );
}

#[cfg(feature = "testing")]
#[test]
fn a_panic_inside_the_library_is_rate_e_internal() {
    // The library installs no panic hook, so the default one prints the message: expected.
    assert_eq!(rate_testing_panic(), RATE_E_INTERNAL);
    // The boundary holds every time, and the library works afterwards.
    assert_eq!(rate_testing_panic(), RATE_E_INTERNAL);
    let limiter = Handle::new(gcra(1, SECOND, 1));
    assert_eq!(
        limiter.acquire_at(1, 0),
        (RATE_OK, decision(1, 1, 0, 0, SECOND, 0))
    );
}

/// A keyed table made through the C ABI (GCRA, three per period, burst 3).
fn new_keyed(period_ns: u64, capacity: u64) -> *mut rate_keyed {
    let mut table = ptr::null_mut();
    // SAFETY: both pointers come from live references.
    let status = unsafe { rate_keyed_new(&gcra(3, period_ns, 3), capacity, &mut table) };
    assert_eq!(status, RATE_OK);
    table
}

/// The batch exports decide as single calls do: three twin tables see the same requests,
/// one through `rate_keyed_acquire_batch_at` (key pointers), one through
/// `rate_keyed_acquire_packed_at` (keys of random lengths, 0 included, back to back, in
/// batches across the 64-key chunks), one through `rate_keyed_acquire_at` per key.
#[test]
fn batch_and_packed_exports_decide_as_single_calls_do() {
    let (scattered, packed, single) = (
        new_keyed(1000, 64),
        new_keyed(1000, 64),
        new_keyed(1000, 64),
    );
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    let (mut now, mut denied) = (0, 0);
    for _ in 0..200 {
        now += next(300);
        let n = 1 + next(2);
        // Keys: a letter repeated 0–5 times (21 distinct keys, the empty one included).
        let keys: Vec<Vec<u8>> = (0..next(150))
            .map(|_| vec![b'a' + next(4) as u8; next(6) as usize])
            .collect();
        let pointers: Vec<*const u8> = keys.iter().map(|key| key.as_ptr()).collect();
        let lens: Vec<usize> = keys.iter().map(Vec::len).collect();
        let bytes: Vec<u8> = keys.concat();
        let (mut by_pointer, mut by_packing) = (vec![7; keys.len()], vec![7; keys.len()]);
        // SAFETY: every array holds `keys.len()` elements and each key its length in bytes.
        unsafe {
            let count = keys.len();
            let status = rate_keyed_acquire_batch_at(
                scattered,
                pointers.as_ptr(),
                lens.as_ptr(),
                count,
                n,
                now,
                by_pointer.as_mut_ptr(),
            );
            assert_eq!(status, RATE_OK);
            let status = rate_keyed_acquire_packed_at(
                packed,
                bytes.as_ptr(),
                lens.as_ptr(),
                count,
                n,
                now,
                by_packing.as_mut_ptr(),
            );
            assert_eq!(status, RATE_OK);
        }
        for (i, key) in keys.iter().enumerate() {
            // SAFETY: `key` is live for the call; `out` may be NULL.
            let expected = unsafe {
                rate_keyed_acquire_at(single, key.as_ptr(), key.len(), n, now, ptr::null_mut())
            };
            assert_eq!(
                (by_pointer[i], by_packing[i]),
                (expected, expected),
                "key {i} at {now}"
            );
            denied += u64::from(expected == RATE_LIMITED);
        }
    }
    assert!(denied > 1000, "{denied} denials");
    for table in [scattered, packed, single] {
        // SAFETY: each handle came from rate_keyed_new and is freed once.
        unsafe { rate_keyed_free(table) };
    }
}

/// `rate_limiter_open`: NULL pointers, the OS's refusal with its errno, a file of another
/// configuration, and two handles on one file sharing one limit.
#[test]
fn open_shares_a_file_and_reports_its_errors() {
    let dir = std::env::temp_dir().join(format!("librate-ffi-open-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = std::ffi::CString::new(dir.join("limit").to_str().unwrap()).unwrap();
    let config = gcra(1, 3600 * SECOND, 0);
    let open = |path: *const std::ffi::c_char, config: *const rate_config| {
        let mut limiter = ptr::null_mut();
        // SAFETY: `path` and `config` are NULL or live; `limiter` is a local.
        let status = unsafe { rate_limiter_open(path, config, &mut limiter) };
        (status, limiter)
    };
    assert_eq!(open(ptr::null(), &config), (RATE_E_NULL, ptr::null_mut()));
    assert_eq!(
        open(path.as_ptr(), ptr::null()),
        (RATE_E_NULL, ptr::null_mut())
    );
    // SAFETY: a NULL out-handle is reported, not written.
    let status = unsafe { rate_limiter_open(path.as_ptr(), &config, ptr::null_mut()) };
    assert_eq!(status, RATE_E_NULL);

    let missing = std::ffi::CString::new(dir.join("none/limit").to_str().unwrap()).unwrap();
    assert_eq!(open(missing.as_ptr(), &config).0, RATE_E_IO);
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ENOENT)
    );

    let (status, first) = open(path.as_ptr(), &config);
    assert_eq!(status, RATE_OK);
    let first = Handle(first);
    let (status, second) = open(path.as_ptr(), &config);
    assert_eq!(status, RATE_OK);
    let second = Handle(second);
    // SAFETY: live handles; NULL `out`.
    unsafe {
        assert_eq!(
            rate_limiter_acquire_at(first.0, 1, 0, ptr::null_mut()),
            RATE_OK
        );
        assert_eq!(
            rate_limiter_acquire_at(second.0, 1, 0, ptr::null_mut()),
            RATE_LIMITED
        );
    }
    let other = gcra(2, 3600 * SECOND, 0);
    assert_eq!(
        open(path.as_ptr(), &other),
        (RATE_E_INCOMPATIBLE, ptr::null_mut())
    );
    assert!(status_text(RATE_E_IO).contains("errno"));
    // What the file is not, and what to do about it.
    let incompatible = status_text(RATE_E_INCOMPATIBLE);
    assert!(incompatible.contains("not a librate table"));
    assert!(incompatible.contains("rate_describe_file says what it holds"));
    drop((first, second));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `rate_redis_prepare` hands out the Redis tier's script and arguments (docs/redis.md): for
/// GCRA with L = 10, P = 1 s, B = 20, the arguments are T = 100 ms and B, and the limit B.
#[test]
fn redis_script_gives_the_script_and_its_arguments() {
    let mut out = std::mem::MaybeUninit::<rate_redis_script>::uninit();
    // SAFETY: a live config and a writable out.
    let status = unsafe { rate_redis_prepare(&gcra(10, SECOND, 20), out.as_mut_ptr()) };
    assert_eq!(status, RATE_OK);
    // SAFETY: written on RATE_OK.
    let script = unsafe { out.assume_init() };
    assert_eq!(script.config_args_len, 2);
    assert_eq!(script.config_args[..2], [SECOND / 10, 20]);
    assert_eq!(script.limit, 20);
    // SAFETY: the source is static and NUL-terminated.
    let source = unsafe { CStr::from_ptr(script.source) }.to_str().unwrap();
    assert!(source.starts_with("-- librate's Redis scripts"), "{source}");
    assert!(source.contains("GCRA acquire and reserve"));

    let mut out = std::mem::MaybeUninit::<rate_redis_script>::uninit();
    // SAFETY: as above, and NULL pointers the function must refuse.
    unsafe {
        assert_eq!(
            rate_redis_prepare(ptr::null(), out.as_mut_ptr()),
            RATE_E_NULL
        );
        assert_eq!(
            rate_redis_prepare(&gcra(10, SECOND, 0), ptr::null_mut()),
            RATE_E_NULL
        );
        assert_eq!(
            rate_redis_prepare(&gcra(0, SECOND, 0), out.as_mut_ptr()),
            RATE_E_INVALID_CONFIG
        );
        // τ = B·T = 2^53 ns: not exact in Lua's doubles.
        assert_eq!(
            rate_redis_prepare(&gcra(1, 1 << 53, 1), out.as_mut_ptr()),
            RATE_E_INVALID_CONFIG
        );
    }
}

/// `rate_redis_policy_prepare` hands out the policy script and its arguments: the rule
/// count, then each rule's algorithm and two arguments (GCRA: T and B; windows and log: L
/// and P), and the least limit; bad input is a status, never a crash.
#[test]
fn redis_policy_script_gives_the_script_and_its_arguments() {
    let rules = [
        gcra(10, SECOND, 20),
        rate_config {
            algorithm: RATE_SLIDING_LOG,
            limit: 5,
            period_ns: 60 * SECOND,
            burst: 0,
        },
    ];
    let mut out = std::mem::MaybeUninit::<rate_redis_policy_script>::uninit();
    // SAFETY: two live configs and a writable out.
    let status = unsafe { rate_redis_policy_prepare(rules.as_ptr(), 2, out.as_mut_ptr()) };
    assert_eq!(status, RATE_OK);
    // SAFETY: written on RATE_OK.
    let script = unsafe { out.assume_init() };
    assert_eq!(script.config_args_len, 7);
    assert_eq!(
        script.config_args[..7],
        [2, 0, SECOND / 10, 20, 3, 5, 60 * SECOND]
    );
    assert_eq!(script.limit, 5);
    // Two rules: masks of bits 0 and 1 only.
    // SAFETY: a prepared script, and NULL, which the function must refuse.
    unsafe {
        assert_eq!(rate_redis_policy_check_shadow(&script, 0b11), RATE_OK);
        assert_eq!(rate_redis_policy_check_shadow(&script, 0), RATE_OK);
        assert_eq!(
            rate_redis_policy_check_shadow(&script, 0b100),
            RATE_E_INVALID_CONFIG
        );
        assert_eq!(
            rate_redis_policy_check_shadow(&script, u32::MAX),
            RATE_E_INVALID_CONFIG
        );
        assert_eq!(rate_redis_policy_check_shadow(ptr::null(), 1), RATE_E_NULL);
    }
    // SAFETY: the source is static and NUL-terminated.
    let source = unsafe { CStr::from_ptr(script.source) }.to_str().unwrap();
    assert!(source.contains("the last part of a policy's"), "{source}");

    let nine = [gcra(1, SECOND, 0); 9];
    let mut unknown = gcra(1, SECOND, 0);
    unknown.algorithm = 7;
    // SAFETY: as above, and NULL pointers and bad rules the function must refuse.
    unsafe {
        assert_eq!(
            rate_redis_policy_prepare(ptr::null(), 1, out.as_mut_ptr()),
            RATE_E_NULL
        );
        assert_eq!(
            rate_redis_policy_prepare(rules.as_ptr(), 2, ptr::null_mut()),
            RATE_E_NULL
        );
        for (rules, len) in [
            (nine.as_ptr(), 0),
            (nine.as_ptr(), 9),
            (&unknown as *const _, 1),
        ] {
            assert_eq!(
                rate_redis_policy_prepare(rules, len, out.as_mut_ptr()),
                RATE_E_INVALID_CONFIG
            );
        }
        // A window's period of 2^53 ns: not exact in Lua's doubles.
        let long = rate_config {
            algorithm: RATE_FIXED_WINDOW,
            limit: 1,
            period_ns: 1 << 53,
            burst: 0,
        };
        assert_eq!(
            rate_redis_policy_prepare([rules[0], long].as_ptr(), 2, out.as_mut_ptr()),
            RATE_E_INVALID_CONFIG
        );
    }
}

/// A shared keyed table's and keyed policy's rules in force, read through the C ABI: a
/// change through one handle is what the other handle reports; NULL is RATE_E_NULL and
/// writes nothing; a policy's rules fill at most the buffer given.
#[test]
fn shared_keyed_rules_in_force_are_read_back() {
    let dir = std::env::temp_dir();
    let table_path = dir.join(format!("librate-ffi-keyed-rule-{}", std::process::id()));
    let policy_path = dir.join(format!("librate-ffi-policy-rules-{}", std::process::id()));
    let c_path = |path: &std::path::Path| {
        std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap()
    };
    let (table_c, policy_c) = (c_path(&table_path), c_path(&policy_path));
    let (mut here, mut there) = (ptr::null_mut(), ptr::null_mut());
    // SAFETY: live pointers throughout; each handle is freed once, below.
    unsafe {
        assert_eq!(
            rate_keyed_open(table_c.as_ptr(), &gcra(10, SECOND, 0), 8, &mut here),
            RATE_OK
        );
        assert_eq!(
            rate_keyed_open(table_c.as_ptr(), &gcra(10, SECOND, 0), 8, &mut there),
            RATE_OK
        );
        assert_eq!(rate_keyed_set_config(there, &gcra(5, SECOND, 2)), RATE_OK);
        let mut held = gcra(0, 0, 0);
        assert_eq!(rate_keyed_get_config(here, &mut held), RATE_OK);
        assert_eq!((held.limit, held.period_ns, held.burst), (5, SECOND, 2));
        let mut untouched = gcra(7, 7, 7);
        assert_eq!(
            rate_keyed_get_config(ptr::null(), &mut untouched),
            RATE_E_NULL
        );
        assert_eq!(untouched.limit, 7);
        assert_eq!(rate_keyed_get_config(here, ptr::null_mut()), RATE_E_NULL);
        rate_keyed_free(here);
        rate_keyed_free(there);

        let window = rate_config {
            algorithm: RATE_FIXED_WINDOW,
            limit: 100,
            period_ns: 60 * SECOND,
            burst: 0,
        };
        let rules = [
            rate_keyed_rule {
                config: gcra(10, SECOND, 0),
                scope: RATE_RULE_PER_KEY,
            },
            rate_keyed_rule {
                config: window,
                scope: RATE_RULE_GLOBAL,
            },
        ];
        let (mut one, mut other) = (ptr::null_mut(), ptr::null_mut());
        assert_eq!(
            rate_keyed_policy_open(policy_c.as_ptr(), rules.as_ptr(), 2, 8, &mut one),
            RATE_OK
        );
        assert_eq!(
            rate_keyed_policy_open(policy_c.as_ptr(), rules.as_ptr(), 2, 8, &mut other),
            RATE_OK
        );
        let mut changed = rules;
        changed[0].config.limit = 4;
        changed[1].config.limit = 50;
        assert_eq!(
            rate_keyed_policy_set_rules(other, changed.as_ptr(), 2),
            RATE_OK
        );
        let mut read = [rate_keyed_rule {
            config: gcra(0, 0, 0),
            scope: 9,
        }; 3];
        assert_eq!(
            rate_keyed_policy_get_rules(one, read.as_mut_ptr(), 3),
            RATE_OK
        );
        assert_eq!(
            (read[0].config.limit, read[0].scope),
            (4, RATE_RULE_PER_KEY)
        );
        assert_eq!(
            (read[1].config.limit, read[1].scope),
            (50, RATE_RULE_GLOBAL)
        );
        assert_eq!((read[2].config.limit, read[2].scope), (0, 9));
        let mut first = [rate_keyed_rule {
            config: gcra(0, 0, 0),
            scope: 9,
        }; 1];
        assert_eq!(
            rate_keyed_policy_get_rules(one, first.as_mut_ptr(), 1),
            RATE_OK
        );
        assert_eq!(first[0].config.limit, 4);
        assert_eq!(
            rate_keyed_policy_get_rules(one, ptr::null_mut(), 0),
            RATE_OK
        );
        assert_eq!(
            rate_keyed_policy_get_rules(one, ptr::null_mut(), 2),
            RATE_E_NULL
        );
        assert_eq!(
            rate_keyed_policy_get_rules(ptr::null(), read.as_mut_ptr(), 2),
            RATE_E_NULL
        );
        rate_keyed_policy_free(one);
        rate_keyed_policy_free(other);
    }
    std::fs::remove_file(&table_path).unwrap();
    std::fs::remove_file(&policy_path).unwrap();
}
