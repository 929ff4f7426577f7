//! The reasons the explain functions give, and the bounds they name, against the constructors.

use super::*;
use crate::{RATE_FIXED_WINDOW, RATE_GCRA, RATE_SLIDING_LOG, RATE_SLIDING_WINDOW};
use librate::Config;
use librate::Limiter;
use std::ffi::CStr;
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;

fn config(algorithm: u32, limit: u64, period_ns: u64, burst: u64) -> rate_config {
    rate_config {
        algorithm,
        limit,
        period_ns,
        burst,
    }
}

/// The status and reason `rate_limiter_explain_config` gives, through a C buffer.
fn explained(config: rate_config) -> (i32, String) {
    let mut buffer = [0x55 as c_char; RATE_REASON_LEN];
    // SAFETY: a live config and a buffer of the length passed.
    let status = unsafe { rate_limiter_explain_config(&config, buffer.as_mut_ptr(), buffer.len()) };
    // SAFETY: the function NUL-terminated the buffer.
    let text = unsafe { CStr::from_ptr(buffer.as_ptr()) };
    (status, text.to_str().unwrap().to_owned())
}

fn explained_keyed(config: rate_config, capacity: u64) -> (i32, String) {
    let mut buffer = [0x55 as c_char; RATE_REASON_LEN];
    // SAFETY: as in `explained`.
    let status =
        unsafe { rate_keyed_explain_config(&config, capacity, buffer.as_mut_ptr(), buffer.len()) };
    // SAFETY: the function NUL-terminated the buffer.
    let text = unsafe { CStr::from_ptr(buffer.as_ptr()) };
    (status, text.to_str().unwrap().to_owned())
}

fn invalid(reason: &str) -> (i32, String) {
    (RATE_E_INVALID_CONFIG, reason.to_owned())
}

#[test]
fn valid_configs_give_ok_and_an_empty_reason() {
    assert_eq!(
        explained(config(RATE_GCRA, 10, SECOND, 0)),
        (RATE_OK, String::new())
    );
    assert_eq!(
        explained_keyed(config(RATE_SLIDING_WINDOW, 10, SECOND, 0), 100),
        (RATE_OK, String::new())
    );
}

#[test]
fn zero_limit_and_period() {
    for algorithm in [
        RATE_GCRA,
        RATE_FIXED_WINDOW,
        RATE_SLIDING_WINDOW,
        RATE_SLIDING_LOG,
    ] {
        let zero_limit = config(algorithm, 0, SECOND, 0);
        assert_eq!(
            explained(zero_limit),
            invalid("limit 0: must be at least 1")
        );
        assert_eq!(
            explained_keyed(zero_limit, 8),
            invalid("limit 0: must be at least 1")
        );
        let zero_period = config(algorithm, 1, 0, 0);
        assert_eq!(
            explained(zero_period),
            invalid("period_ns 0: must be at least 1")
        );
    }
}

#[test]
fn unknown_algorithm_names_the_choices() {
    let reason = "algorithm 7: must be 0 (GCRA), 1 (fixed window), 2 (sliding window) or \
                  3 (sliding log)";
    assert_eq!(explained(config(7, 1, SECOND, 0)), invalid(reason));
    assert_eq!(explained_keyed(config(7, 1, SECOND, 0), 8), invalid(reason));
}

#[test]
fn gcra_more_than_one_unit_per_ns() {
    // T = floor(P / L) >= 1 holds exactly up to L = P.
    assert_eq!(
        explained(config(RATE_GCRA, SECOND + 1, SECOND, 0)),
        invalid(
            "limit 1000000001: must be at most 1000000000 for GCRA with period_ns \
             1000000000 (at most one unit per ns)"
        )
    );
}

#[test]
fn gcra_tolerance_names_burst_or_period() {
    // T = 18446744073000000000 ns; B*T <= 2^64 - 257 allows B = 1 only.
    let p = 18_446_744_073 * SECOND;
    assert_eq!(
        explained(config(RATE_GCRA, 1, p, 2)),
        invalid(
            "burst 2: must be at most 1 for GCRA with limit 1 and period_ns \
             18446744073000000000 (burst x (period_ns / limit) must be at most 2^64 - 257 ns)"
        )
    );
    // 2 * (2^63 - 1) = 2^64 - 2 is one past the largest storable TAT.
    assert_eq!(
        explained(config(RATE_GCRA, 1, i64::MAX as u64, 3)),
        invalid(
            "burst 3: must be at most 1 for GCRA with limit 1 and period_ns \
             9223372036854775807 (burst x (period_ns / limit) must be at most 2^64 - 257 ns)"
        )
    );
    // L = 2: 2 * floor(P / 2) <= 2^64 - 257 holds up to P = 2^64 - 257 (and P = 2^64 - 1
    // is the period that never ends, which every limit accepts).
    assert_eq!(
        explained(config(RATE_GCRA, 2, u64::MAX - 1, 0)),
        invalid(
            "period_ns 18446744073709551614: must be at most 18446744073709551359 for \
             GCRA with limit 2 (limit x (period_ns / limit) must be at most 2^64 - 257 ns)"
        )
    );
    // burst 0 means limit: L = 1, T = P, so P itself must be at most 2^64 - 257.
    assert_eq!(
        explained(config(RATE_GCRA, 1, u64::MAX - 1, 0)),
        invalid(
            "period_ns 18446744073709551614: must be at most 18446744073709551359 for \
             GCRA with limit 1 (limit x (period_ns / limit) must be at most 2^64 - 257 ns)"
        )
    );
}

#[test]
fn window_limits_name_the_largest_limit() {
    // floor((2^64-1)/P) = 18446744073 times 2^bits(L), plus L, must be at most 2^64-257:
    // 2^29 fits, 2^30 does not, so L may have at most 29 bits.
    assert_eq!(
        explained(config(RATE_FIXED_WINDOW, SECOND, SECOND, 0)),
        invalid("limit 1000000000: must be at most 536870911 for the fixed window with period_ns 1000000000")
    );
    assert_eq!(
        explained(config(RATE_SLIDING_WINDOW, SECOND, SECOND, 0)),
        invalid("limit 1000000000: must be at most 536870911 for the sliding window with period_ns 1000000000")
    );
    // The log's ring holds at most 2^20 entries.
    assert_eq!(
        explained(config(RATE_SLIDING_LOG, (1 << 20) + 1, SECOND, 0)),
        invalid(
            "limit 1048577: must be at most 1048576 for the sliding log with period_ns 1000000000"
        )
    );
}

#[test]
fn a_period_too_short_for_any_limit_names_the_period() {
    // L = 1 (1 bit): floor((2^64-1)/P)*2 + 1 <= 2^64-257 first holds at P = 3.
    assert_eq!(
        explained(config(RATE_FIXED_WINDOW, 1, 1, 0)),
        invalid("period_ns 1: must be at least 3 for the fixed window with limit 1")
    );
}

#[test]
fn capacity_zero_and_too_large() {
    let gcra = config(RATE_GCRA, 10, SECOND, 0);
    assert_eq!(
        explained_keyed(gcra, 0),
        invalid("capacity 0: must be at least 1")
    );
    // GCRA: 32 bytes per key; (2^64 - 1) * 32 bytes overflow any address space.
    assert_eq!(
        explained_keyed(gcra, u64::MAX),
        invalid(
            "capacity 18446744073709551615: its table needs 590295810358705651680 bytes \
             (32 per key), more than can be allocated"
        )
    );
    // 2^61 keys: 2^66 bytes, past isize::MAX.
    assert_eq!(
        explained_keyed(gcra, 1 << 61),
        invalid(
            "capacity 2305843009213693952: its table needs 73786976294838206464 bytes \
             (32 per key), more than can be allocated"
        )
    );
    // The configuration is judged before the capacity.
    assert_eq!(
        explained_keyed(config(RATE_GCRA, 0, SECOND, 0), 0),
        invalid("limit 0: must be at least 1")
    );
}

#[test]
fn short_buffers_are_cut_and_terminated() {
    let mut buffer = [0x55 as c_char; 8];
    let zero = config(RATE_GCRA, 0, SECOND, 0);
    // SAFETY: a live config and an 8-byte buffer.
    let status = unsafe { rate_limiter_explain_config(&zero, buffer.as_mut_ptr(), 8) };
    assert_eq!(status, RATE_E_INVALID_CONFIG);
    // SAFETY: NUL-terminated by the call.
    assert_eq!(unsafe { CStr::from_ptr(buffer.as_ptr()) }, c"limit 0");
    // SAFETY: a zero length writes nothing; NULL is allowed.
    unsafe {
        assert_eq!(
            rate_limiter_explain_config(&zero, buffer.as_mut_ptr(), 0),
            RATE_E_INVALID_CONFIG
        );
        assert_eq!(
            rate_limiter_explain_config(&zero, std::ptr::null_mut(), 99),
            RATE_E_INVALID_CONFIG
        );
        assert_eq!(
            rate_limiter_explain_config(std::ptr::null(), buffer.as_mut_ptr(), 8),
            RATE_E_NULL
        );
        assert_eq!(
            rate_keyed_explain_config(std::ptr::null(), 1, std::ptr::null_mut(), 0),
            RATE_E_NULL
        );
    }
    assert_eq!(buffer[7], 0);
}

/// The bound a reason of the form "FIELD VALUE: must be at most|least BOUND for …"
/// names: whether it is an upper one, the bound, and the configuration with that field
/// at a given value.
fn named_bound(raw: rate_config, reason: &str) -> Option<(bool, u64, impl Fn(u64) -> Config)> {
    let (subject, rest) = reason.split_once(": must be at ")?;
    let (field, _value) = subject.split_once(' ')?;
    let (side, rest) = rest.split_once(' ')?;
    let (bound, rest) = rest.split_once(' ')?;
    if !rest.starts_with("for ") {
        return None;
    }
    let bound: u64 = bound.parse().ok()?;
    let base = raw.to_config()?;
    let field = field.to_owned();
    Some((side == "most", bound, move |value| match field.as_str() {
        "limit" => Config::new(base.algorithm, value, base.period()).with_burst(base.burst),
        "period_ns" => Config::new(base.algorithm, base.limit, Duration::from_nanos(value))
            .with_burst(base.burst),
        "burst" => base.with_burst(value),
        other => panic!("a bound on {other}"),
    }))
}

#[test]
fn bounds_are_the_real_limiters_bounds() {
    // Each bound a reason names is where real limiters (`Limiter::new`, which allocates
    // the state) change their verdict: the answer a bisection over them gives.
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let edges = [
        1,
        2,
        3,
        4,
        64,
        1000,
        SECOND,
        1 << 29,
        1 << 30,
        (1 << 20) + 1,
    ];
    let mut named = 0;
    for round in 0..2000 {
        let algorithm = (round % 4) as u32;
        let number = |next: &mut dyn FnMut() -> u64| match next() % 4 {
            0 => edges[(next() % edges.len() as u64) as usize],
            1 => u64::MAX - next() % 300,
            2 => 1 << (next() % 64),
            _ => next() >> (next() % 64),
        };
        let raw = config(
            algorithm,
            number(&mut next),
            number(&mut next),
            number(&mut next),
        );
        let accepted = Limiter::new(&raw.to_config().unwrap()).is_ok();
        let (status, reason) = explained(raw);
        assert_eq!(status == RATE_OK, accepted, "{raw:?}: {reason}");
        let Some((at_most, bound, with)) = named_bound(raw, &reason) else {
            continue;
        };
        named += 1;
        assert!(Limiter::new(&with(bound)).is_ok(), "{raw:?}: {reason}");
        let beyond = if at_most {
            bound.checked_add(1)
        } else {
            bound.checked_sub(1)
        };
        if let Some(beyond) = beyond {
            assert!(Limiter::new(&with(beyond)).is_err(), "{raw:?}: {reason}");
        }
    }
    // Most rejections name a bound: the loop above checked hundreds.
    assert!(named > 250, "{named} bounds checked");
}

#[test]
fn the_verdict_is_the_constructors() {
    // Every configuration a limiter rejects is explained, and none it accepts.
    for algorithm in [
        RATE_GCRA,
        RATE_FIXED_WINDOW,
        RATE_SLIDING_WINDOW,
        RATE_SLIDING_LOG,
    ] {
        // (The log's larger limits cost a 16 MiB ring per probe; a test above has one.)
        for limit in [0, 1, 2, 3, 1000, u64::MAX] {
            for period_ns in [0, 1, 2, 3, 4, 1000, SECOND, u64::MAX - 2, u64::MAX] {
                let bursts: &[u64] = if algorithm == RATE_GCRA {
                    &[0, 1, 3, u64::MAX]
                } else {
                    &[0]
                };
                for &burst in bursts {
                    let raw = config(algorithm, limit, period_ns, burst);
                    let accepted = Limiter::new(&raw.to_config().unwrap()).is_ok();
                    let (status, reason) = explained(raw);
                    assert_eq!(status == RATE_OK, accepted, "{raw:?}: {reason}");
                    assert_eq!(reason.is_empty(), accepted, "{raw:?}: {reason}");
                    assert!(reason.len() < RATE_REASON_LEN, "{reason}");
                }
            }
        }
    }
}
