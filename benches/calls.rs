//! Runs one decision N times, for `benches/callgrind.sh` to count the instructions a call
//! costs (instructions do not depend on the machine's load as a timing does).
//!
//! Usage: `calls CASE N`. Each case sets its limiter up, then makes N calls; the script
//! subtracts the count of a run of 0 calls, so what it reports is the calls' alone. Cases
//! at a chosen time (`_at`) are deterministic; those through the clock pick a state whose
//! decision takes the same path at any time (drained: a coarse read and a denial; idle: an
//! exact read and an admission).

use librate::lease::{Fallback, Grant, LeaseHolder};
use librate::{Config, Instant, KeyedLimiter, KeyedPolicy, KeyedRule, LeaseRule, Limiter, Policy};
use std::hint::black_box;
use std::ptr;
use std::time::Duration;

type CKeyedAcquireAt = unsafe extern "C" fn(
    *mut rate::rate_keyed,
    *const u8,
    usize,
    u64,
    u64,
    *mut rate::rate_decision,
) -> i32;
type CAcquire = unsafe extern "C" fn(*mut rate::rate_limiter, u64, *mut rate::rate_decision) -> i32;

const SECOND: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);
/// A second in nanoseconds, for times and rates.
const S: u64 = 1_000_000_000;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().expect("usage: calls CASE N");
    let calls: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: calls CASE N");
    let limiter = |config: Config| Limiter::new(&config).unwrap();
    let keyed = |config: Config| KeyedLimiter::new(&config, 1024).unwrap();
    let admitted = match case.as_str() {
        // Admits every call: each comes one period after the one before.
        "gcra_acquire_at_allow" => {
            let l = limiter(Config::gcra(1, SECOND));
            count(calls, |i| l.acquire_at(1, at(i * S)).unwrap().allowed)
        }
        "gcra_acquire_at_deny" => {
            let l = limiter(Config::gcra(1, HOUR));
            count(calls, |_| l.acquire_at(1, at(S)).unwrap().allowed)
        }
        "gcra_try_acquire_drained" => {
            let l = limiter(Config::gcra(1, HOUR));
            count(calls, |_| l.try_acquire(black_box(1)).unwrap())
        }
        "gcra_try_acquire_idle" => {
            let l = limiter(Config::gcra(1_000_000_000, SECOND));
            count(calls, |_| l.try_acquire(black_box(1)).unwrap())
        }
        // A lease holder of the whole rule, its share idle (benches/lease.rs).
        "lease_try_acquire_idle" => {
            let h = lease_holder(Config::gcra(1_000_000_000, SECOND));
            count(calls, |_| h.try_acquire(black_box(1)).unwrap())
        }
        // The C ABI's idle acquire, through a pointer the optimiser cannot see through, as
        // a C caller's call through the PLT is (benches/c_abi.rs).
        "c_gcra_acquire_idle" => {
            let l = c_limiter(Config::gcra(1_000_000_000, SECOND));
            let acquire = black_box(rate::rate_limiter_acquire as CAcquire);
            // SAFETY: `l` is a live handle; `out` NULL is allowed.
            count(
                calls,
                |_| unsafe { acquire(l, black_box(1), ptr::null_mut()) } == 0,
            )
        }
        "fixed_window_try_acquire_drained" => {
            let l = limiter(Config::fixed_window(1, HOUR));
            count(calls, |_| l.try_acquire(black_box(1)).unwrap())
        }
        "fixed_window_acquire_at_allow" => {
            let l = limiter(Config::fixed_window(1_000_000_000, HOUR));
            count(calls, |i| l.acquire_at(1, at(i)).unwrap().allowed)
        }
        "fixed_window_acquire_at_deny" => {
            let l = limiter(Config::fixed_window(1, HOUR));
            count(calls, |_| l.acquire_at(1, at(S)).unwrap().allowed)
        }
        "sliding_window_acquire_at_allow" => {
            let l = limiter(Config::sliding_window(1_000_000_000, HOUR));
            count(calls, |i| l.acquire_at(1, at(i)).unwrap().allowed)
        }
        "sliding_window_try_acquire_drained" => {
            let l = limiter(Config::sliding_window(1, HOUR));
            count(calls, |_| l.try_acquire(black_box(1)).unwrap())
        }
        "sliding_log_acquire_at_deny" => {
            let l = limiter(Config::sliding_log(4, HOUR));
            count(calls, |_| l.acquire_at(1, at(S)).unwrap().allowed)
        }
        "keyed_gcra_acquire_at_deny" => {
            let t = keyed(Config::gcra(1, HOUR));
            let key = |i: u64| (i % 64).to_le_bytes();
            count(calls, |i| t.acquire_at(&key(i), 1, at(S)).unwrap().allowed)
        }
        // The C ABI's keyed acquire at a time, `out` NULL: the outcome alone.
        "c_keyed_acquire_at_deny" => {
            let config = rate::rate_config {
                algorithm: rate::RATE_GCRA,
                limit: 1,
                period_ns: 3600 * S,
                burst: 1,
            };
            let mut t = ptr::null_mut();
            // SAFETY: both pointers are to live locals.
            assert_eq!(unsafe { rate::rate_keyed_new(&config, 1024, &mut t) }, 0);
            let acquire_at = black_box(rate::rate_keyed_acquire_at as CKeyedAcquireAt);
            let key = |i: u64| (i % 64).to_le_bytes();
            count(calls, |i| {
                let key = key(i);
                // SAFETY: a live table, 8 readable bytes; `out` NULL is allowed.
                let status =
                    unsafe { acquire_at(t, key.as_ptr(), 8, 1, black_box(S), ptr::null_mut()) };
                status == 0
            })
        }
        "keyed_gcra_try_acquire_drained" => {
            let t = keyed(Config::gcra(1, HOUR));
            let key = |i: u64| (i % 64).to_le_bytes();
            count(calls, |i| t.try_acquire(&key(i), black_box(1)).unwrap())
        }
        "policy_try_acquire_at_allow" => {
            let p = Policy::new(&[Config::gcra(1, SECOND), Config::sliding_window(10, SECOND)])
                .unwrap();
            count(calls, |i| p.try_acquire_at(1, at(i * S)).unwrap())
        }
        "policy_try_acquire_drained" => {
            let p =
                Policy::new(&[Config::gcra(1, HOUR), Config::sliding_window(10, HOUR)]).unwrap();
            count(calls, |_| p.try_acquire(black_box(1)).unwrap())
        }
        // Both rules far ahead of the clock (benches/policy.rs' busy policy): the cheap
        // clock's bounds settle each call, an admission by every rule.
        "policy_try_acquire_busy" => {
            let p = Policy::new(&[
                Config::gcra(10_000_000, SECOND).with_burst(u64::from(u32::MAX)),
                Config::gcra(1 << 40, HOUR).with_burst(1 << 40),
            ])
            .unwrap();
            for _ in 0..1 << 10 {
                assert!(p.try_acquire(1 << 20).unwrap());
            }
            count(calls, |_| p.try_acquire(black_box(1)).unwrap())
        }
        // The full report: each call one period after the one before, both rules admit.
        "policy_acquire_at_allow" => {
            let p = Policy::new(&[Config::gcra(1, SECOND), Config::sliding_window(10, SECOND)])
                .unwrap();
            count(calls, |i| {
                p.acquire_at(1, at(i * S)).unwrap().decision.allowed
            })
        }
        // The first rule admits, the drained second denies, and the first gives back.
        "policy_acquire_at_give_back" => {
            let p = Policy::new(&[Config::gcra(S, SECOND), Config::fixed_window(1, HOUR)]).unwrap();
            count(calls, |i| p.acquire_at(1, at(i)).unwrap().decision.allowed)
        }
        // A per-key and a global rule, on 64 keys: each key once a second, 64 a second in all.
        "keyed_policy_try_acquire_at_allow" => {
            let p = keyed_policy();
            count(calls, |i| {
                p.try_acquire_at(&key(i), 1, at(i / 64 * S)).unwrap()
            })
        }
        "keyed_policy_acquire_at_allow" => {
            let p = keyed_policy();
            count(calls, |i| {
                let at = at(i / 64 * S);
                p.acquire_at(&key(i), 1, at).unwrap().decision.allowed
            })
        }
        other => panic!("unknown case {other}"),
    };
    black_box(admitted);
}

/// A C limiter handle of `config`, made through `rate_limiter_new` and never freed.
fn c_limiter(config: Config) -> *mut rate::rate_limiter {
    let config = rate::rate_config {
        algorithm: rate::RATE_GCRA,
        limit: config.limit,
        period_ns: config.period().as_nanos() as u64,
        burst: config.burst,
    };
    let mut handle = ptr::null_mut();
    // SAFETY: both pointers are to live locals.
    let status = unsafe { rate::rate_limiter_new(&config, &mut handle) };
    assert_eq!(status, 0);
    handle
}

/// A holder of the whole of `config`'s rule, leased from time 0 for a century, as
/// benches/lease.rs makes one.
fn lease_holder(config: Config) -> LeaseHolder {
    let century = 100 * 365 * 86_400 * SECOND;
    let rule = LeaseRule::new(&config, century).unwrap();
    let holder = LeaseHolder::named(&rule, Fallback::Deny, "calls").unwrap();
    let (whole, lease_us) = (1_000_000, century.as_micros() as u64);
    let fields = [whole, config.limit, lease_us, 0, whole, config.limit, 1, 0];
    let grant = Grant::from_fields(b"granted", fields).unwrap();
    let renewal = holder.renewal_at(Instant::ZERO);
    holder.apply_at(&renewal, &grant, Instant::ZERO).unwrap();
    holder
}

/// A keyed policy of a per-key rule (one a second) and a global one (128 a second).
fn keyed_policy() -> KeyedPolicy {
    let rules = [
        KeyedRule::per_key(Config::gcra(1, SECOND)),
        KeyedRule::global(Config::sliding_window(128, SECOND)),
    ];
    KeyedPolicy::new(&rules, 1024).unwrap()
}

/// The time `ns` on the limiter's timeline, opaque to the optimiser.
fn at(ns: u64) -> Instant {
    black_box(Instant::from_nanos(ns))
}

/// The key of call `i`: one of 64.
fn key(i: u64) -> [u8; 8] {
    (i % 64).to_le_bytes()
}

/// How many of `calls` calls of `call` (given the call's number) admitted.
#[inline(always)]
fn count(calls: u64, call: impl Fn(u64) -> bool) -> usize {
    (0..calls).filter(|&i| call(i)).count()
}
