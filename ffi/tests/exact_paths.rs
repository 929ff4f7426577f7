//! One large, late GCRA admission through every path a user has: each must report the
//! decision docs/decision.md defines, and each path's own queries must agree with it.
//!
//! The case: limit 5, period 1,432,100,142 ns, burst B = 32,730,240,330, so
//! T = ⌊1,432,100,142 / 5⌋ = 286,420,028 ns and τ = B·T = 9,374,596,351,765,329,240 ns
//! (below 2⁶⁴ − 257: a valid configuration). One acquire of n = 12,390,272,101 units at
//! t = 3,028,339,343,176,555,158 on a fresh bucket: max(0, t) + n·T − t = n·T =
//! 3,548,822,082,096,038,828 ≤ τ, admitted, TAT = t + n·T = 6,577,161,425,272,593,986.
//! - remaining = ⌊(τ − n·T) / T⌋ = B − n = 20,339,968,229, and the end of the timeline
//!   takes nothing: TAT + τ = 15,951,757,777,037,923,226 ≤ 2⁶⁴ − 257.
//! - reset_after_ns, the smallest d with remaining(t + d) = B: remaining = B needs the
//!   TAT not ahead (t + d ≥ TAT: ⌊(τ − debt) / T⌋ < B for any debt ≥ 1) and B·T to fit
//!   below 2⁶⁴ − 257 (t + d ≤ 2⁶⁴ − 257 − τ = 9,072,147,721,944,222,119). Both hold from
//!   d = TAT − t = n·T = 3,548,822,082,096,038,828 on, and not at d − 1.
//! - At d = 9,340,998,188,928,970,156 (t + d = 12,369,337,532,105,525,314, past the last
//!   full instant) the bucket is not full: remaining = ⌊(2⁶⁴ − 257 − (t + d)) / T⌋ =
//!   ⌊6,077,406,541,604,026,045 / 286,420,028⌋ = 21,218,511,093.

mod common;

use common::c_decision::decision_of;
use librate::{Config, Decision, Instant, KeyedLimiter, KeyedPolicy, KeyedRule, Limiter, Policy};
use rate::*;
use std::ptr;
use std::time::Duration;

const LIMIT: u64 = 5;
const PERIOD: u64 = 1_432_100_142;
const BURST: u64 = 32_730_240_330;
const N: u64 = 12_390_272_101;
const T: u64 = 3_028_339_343_176_555_158;
/// n·T: the definition's reset_after_ns.
const RESET: u64 = 3_548_822_082_096_038_828;
/// 2⁶⁴ − 257 − τ: the last instant at which a bucket of this configuration can be full.
const LAST_FULL: u64 = 9_072_147_721_944_222_119;
/// A wait after which the bucket is not full again (the end of the timeline).
const LATE: u64 = 9_340_998_188_928_970_156;

fn config() -> Config {
    Config::gcra(LIMIT, Duration::from_nanos(PERIOD)).with_burst(BURST)
}

/// The admission's decision by docs/decision.md (see the file's comment).
fn admitted() -> Decision {
    Decision {
        allowed: true,
        limit: BURST,
        remaining: BURST - N,
        retry_after_ns: 0,
        reset_after_ns: RESET,
        wait_ns: 0,
    }
}

/// Checks a path: `acquire` makes the admission on a fresh limiter and returns its
/// decision (`None` when the path reports only the outcome); `query(t)` is a query at `t`
/// on the same state. Then the definition of reset_after_ns, searched on the path itself:
/// the smallest d ≤ LAST_FULL − t with a full bucket at t + d (full is monotone up to
/// LAST_FULL), by bisection, equals n·T, and every instant after LAST_FULL is not full.
fn check_path(
    path: &str,
    acquire: impl FnOnce() -> Option<Decision>,
    query: impl Fn(u64) -> Decision,
) {
    if let Some(decision) = acquire() {
        assert_eq!(decision, admitted(), "{path}");
    }
    let full = |d: u64| query(T + d).remaining == BURST;
    let (mut low, mut high) = (0, LAST_FULL - T);
    assert!(full(high) && !full(low), "{path}");
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if full(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    assert_eq!(
        high, RESET,
        "{path}: the smallest d with remaining == limit"
    );
    let query_at_t = query(T);
    assert_eq!(
        query_at_t,
        Decision {
            allowed: true,
            ..admitted()
        },
        "{path}: a query right after"
    );
    assert_eq!(query(LAST_FULL).remaining, BURST, "{path}");
    assert_eq!(query(LAST_FULL + 1).remaining, BURST - 1, "{path}");
    let late = query(T + LATE);
    assert_eq!(late.remaining, 21_218_511_093, "{path}");
    assert_eq!(late.reset_after_ns, u64::MAX, "{path}");
}

#[test]
fn limiter_acquire_and_reserve() {
    for max_wait in [None, Some(0), Some(1), Some(PERIOD), Some(u64::MAX)] {
        let limiter = Limiter::new(&config()).unwrap();
        check_path(
            &format!("Limiter, max_wait {max_wait:?}"),
            || {
                Some(match max_wait {
                    None => limiter.acquire_at(N, Instant::from_nanos(T)).unwrap(),
                    // n·T ≤ τ: a reserve waits 0 and reports what an acquire does.
                    Some(max_wait) => limiter
                        .reserve_at(N, Instant::from_nanos(T), Duration::from_nanos(max_wait))
                        .unwrap(),
                })
            },
            |at| limiter.acquire_at(0, Instant::from_nanos(at)).unwrap(),
        );
    }
}

#[test]
fn keyed_limiter_acquire_and_reserve() {
    for max_wait in [None, Some(0), Some(u64::MAX)] {
        let table = KeyedLimiter::new(&config(), 4).unwrap();
        check_path(
            &format!("KeyedLimiter, max_wait {max_wait:?}"),
            || {
                Some(match max_wait {
                    None => table.acquire_at(b"k", N, Instant::from_nanos(T)).unwrap(),
                    Some(max_wait) => table
                        .reserve_at(
                            b"k",
                            N,
                            Instant::from_nanos(T),
                            Duration::from_nanos(max_wait),
                        )
                        .unwrap(),
                })
            },
            |at| table.acquire_at(b"k", 0, Instant::from_nanos(at)).unwrap(),
        );
    }
}

#[test]
fn policies() {
    let policy = Policy::new(&[config()]).unwrap();
    check_path(
        "Policy",
        || {
            let decision = policy.acquire_at(N, Instant::from_nanos(T)).unwrap();
            assert_eq!(decision.rules(), [admitted()]);
            Some(decision.decision)
        },
        |at| {
            policy
                .acquire_at(0, Instant::from_nanos(at))
                .unwrap()
                .decision
        },
    );
    for rule in [KeyedRule::per_key(config()), KeyedRule::global(config())] {
        let policy = KeyedPolicy::new(&[rule], 4).unwrap();
        check_path(
            &format!("KeyedPolicy, per key {}", rule.is_per_key()),
            || {
                Some(
                    policy
                        .acquire_at(b"k", N, Instant::from_nanos(T))
                        .unwrap()
                        .decision,
                )
            },
            |at| {
                policy
                    .acquire_at(b"k", 0, Instant::from_nanos(at))
                    .unwrap()
                    .decision
            },
        );
    }
}

/// A new path in the temporary directory for this test process.
fn scratch(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("librate-exact-{name}-{}", std::process::id()))
}

#[test]
fn shared_files() {
    let path = scratch("limiter");
    let limiter = Limiter::open(&path, &config()).unwrap();
    check_path(
        "shared Limiter",
        || Some(limiter.acquire_at(N, Instant::from_nanos(T)).unwrap()),
        |at| limiter.acquire_at(0, Instant::from_nanos(at)).unwrap(),
    );
    drop(limiter);
    std::fs::remove_file(&path).unwrap();
    let path = scratch("keyed");
    let table = KeyedLimiter::open(&path, &config(), 4).unwrap();
    check_path(
        "shared KeyedLimiter",
        || Some(table.acquire_at(b"k", N, Instant::from_nanos(T)).unwrap()),
        |at| table.acquire_at(b"k", 0, Instant::from_nanos(at)).unwrap(),
    );
    drop(table);
    std::fs::remove_file(&path).unwrap();
}

/// The C ABI, with `out` and with NULL (then the status alone is the decision).
#[test]
fn c_abi() {
    let c_config = rate_config {
        algorithm: RATE_GCRA,
        limit: LIMIT,
        period_ns: PERIOD,
        burst: BURST,
    };
    for written in [true, false] {
        let mut handle = ptr::null_mut();
        // SAFETY: both pointers come from live locals.
        assert_eq!(unsafe { rate_limiter_new(&c_config, &mut handle) }, RATE_OK);
        let decide = |n: u64, at: u64, out: *mut rate_decision| {
            // SAFETY: a live handle; `out` NULL or a live local.
            unsafe { rate_limiter_acquire_at(handle, n, at, out) }
        };
        let query = |at: u64| {
            let mut out = rate_decision::default();
            assert_eq!(decide(0, at, &mut out), RATE_OK);
            decision_of(&out)
        };
        check_path(
            &format!("C rate_limiter_acquire_at, out written {written}"),
            || {
                if written {
                    let mut out = rate_decision::default();
                    assert_eq!(decide(N, T, &mut out), RATE_OK);
                    Some(decision_of(&out))
                } else {
                    assert_eq!(decide(N, T, ptr::null_mut()), RATE_OK);
                    None
                }
            },
            query,
        );
        // SAFETY: made above, freed once.
        unsafe { rate_limiter_free(handle) };
    }
}

/// With a period of FOREVER the same numbers are an allowance of C = B units, which never
/// refills: docs/decision.md gives reset_after_ns = u64::MAX ("never") once anything was
/// admitted, and remaining = C − u = B − n, whatever the time.
#[test]
fn forever_is_never_full_again() {
    let limiter = Limiter::new(&Config::gcra(LIMIT, Config::FOREVER).with_burst(BURST)).unwrap();
    let decision = limiter.acquire_at(N, Instant::from_nanos(T)).unwrap();
    assert_eq!(
        decision,
        Decision {
            reset_after_ns: u64::MAX,
            ..admitted()
        }
    );
    for at in [0, T, T + RESET, u64::MAX] {
        assert_eq!(
            limiter
                .acquire_at(0, Instant::from_nanos(at))
                .unwrap()
                .remaining,
            BURST - N
        );
    }
}
