//! GCRA through the Rust API: seed scenarios, errors, and a property test against a plain
//! sequential model of docs/decision.md whose decision fields are found by search from their
//! definitions there, not by the closed forms the library uses.

mod common;

use common::models::{GcraModel, END};
use common::{at, refused, Refused, Rng, MS, SECOND};
use librate::{
    AcquireError, Bound, Config, ConfigError, Decision, Field, Instant, Limiter, ReserveError,
};
use std::time::Duration;

fn gcra(limit: u64, period_ns: u64, burst: u64) -> Limiter {
    Limiter::new(&Config::gcra(limit, Duration::from_nanos(period_ns)).with_burst(burst)).unwrap()
}

#[test]
fn seed_bob_one_per_two_seconds() {
    let bob = gcra(1, 2 * SECOND, 1);
    let alice = gcra(1, 2 * SECOND, 1);
    assert!(bob.acquire_at(1, Instant::ZERO).unwrap().allowed);
    let at_999 = bob.acquire_at(1, at(999 * MS)).unwrap();
    // TAT = 2000 ms; admitted at t iff 2000 + 2000 − t ≤ 2000 ⟺ t ≥ 2000: retry 1001 ms.
    assert_eq!(
        at_999,
        Decision {
            allowed: false,
            limit: 1,
            remaining: 0,
            retry_after_ns: 1001 * MS,
            reset_after_ns: 1001 * MS,
            wait_ns: 0
        }
    );
    assert!(
        alice.acquire_at(1, at(999 * MS)).unwrap().allowed,
        "keys are independent"
    );
    assert!(!bob.acquire_at(1, at(1000 * MS)).unwrap().allowed);
    assert!(bob.acquire_at(1, at(2001 * MS)).unwrap().allowed);
}

#[test]
fn seed_one_per_second_capacity_two() {
    let limiter = gcra(1, SECOND, 2);
    let a = limiter.acquire_at(1, Instant::ZERO).unwrap();
    let b = limiter.acquire_at(1, Instant::ZERO).unwrap();
    let c = limiter.acquire_at(1, Instant::ZERO).unwrap();
    let d = limiter.acquire_at(1, at(SECOND)).unwrap();
    assert!(a.allowed && b.allowed && !c.allowed && d.allowed);
    // After A: TAT = 1 s, remaining = (2 s − 1 s) / 1 s = 1; after B: TAT = 2 s, 0 left.
    assert_eq!((a.remaining, a.reset_after_ns), (1, SECOND));
    assert_eq!((b.remaining, b.reset_after_ns), (0, 2 * SECOND));
    assert_eq!(c.retry_after_ns, SECOND);
    // D at 1 s: TAT = 3 s, debt 2 s: nothing left, full again after 2 s.
    assert_eq!((d.remaining, d.reset_after_ns), (0, 2 * SECOND));
}

#[test]
fn reserve_queues_with_exact_waits() {
    // 10/s, burst 1: T = 100 ms, τ = 100 ms. Five reserves at t = 0 with max wait 350 ms.
    let shaper = gcra(10, SECOND, 1);
    let waits: Vec<_> = (0..5)
        .map(|_| {
            shaper
                .reserve_at(1, Instant::ZERO, Duration::from_millis(350))
                .unwrap()
        })
        .collect();
    let admitted: Vec<_> = waits.iter().map(|d| (d.allowed, d.wait_ns)).collect();
    // k-th admitted: TAT = (k+1)·100 ms, wait = TAT − τ = k·100 ms while ≤ 350 ms.
    assert_eq!(
        admitted,
        [
            (true, 0),
            (true, 100 * MS),
            (true, 200 * MS),
            (true, 300 * MS),
            (false, 0)
        ]
    );
    // Denied at TAT = 400 ms: admitted at d once 400 + 100 − d − 100 ≤ 350 ⟺ d ≥ 50 ms.
    assert_eq!(waits[4].retry_after_ns, 50 * MS);
    assert_eq!(waits[4].remaining, 0);
}

#[test]
fn errors_are_typed() {
    let invalid = |config: Config| Limiter::new(&config).unwrap_err();
    assert_eq!(invalid(Config::per_second(0)), ConfigError::ZeroLimit);
    assert_eq!(
        invalid(Config::gcra(1, Duration::ZERO)),
        ConfigError::ZeroPeriod
    );
    // Each names the field to change and its bound (docs/decision.md, Configuration).
    let bound = |why: ConfigError| (why.field(), why.bound());
    let too_fast = invalid(Config::gcra(2, Duration::from_nanos(1)));
    assert!(matches!(too_fast, ConfigError::RateTooHigh(_)));
    assert_eq!(
        bound(too_fast),
        (Some(Field::Limit), Some(Bound::AtMost(1)))
    );
    // 2·(2⁶⁴ − 2) overflows; 2·⌊P/1⌋ ≤ END holds up to P = ⌊END/2⌋ = 2⁶³ − 129.
    let too_long = invalid(Config::gcra(1, Duration::from_nanos(u64::MAX - 1)).with_burst(2));
    assert!(matches!(too_long, ConfigError::ToleranceTooLarge(_)));
    assert_eq!(
        bound(too_long),
        (Some(Field::PeriodNs), Some(Bound::AtMost((1 << 63) - 129)))
    );
    assert!(
        Limiter::new(&Config::gcra(1, Duration::from_nanos((1 << 63) - 129)).with_burst(2)).is_ok()
    );
    // τ = B·T must be at most END (a fresh bucket's B units must fit below it).
    let past_end = invalid(Config::gcra(1, Duration::from_nanos(END + 1)).with_burst(1));
    assert!(matches!(past_end, ConfigError::ToleranceTooLarge(_)));
    assert_eq!(
        bound(past_end),
        (Some(Field::PeriodNs), Some(Bound::AtMost(END)))
    );
    assert!(Limiter::new(&Config::gcra(1, Duration::from_nanos(END)).with_burst(1)).is_ok());
    let limiter = gcra(3, SECOND, 5);
    assert_eq!(
        limiter.acquire_at(6, Instant::ZERO),
        Err(AcquireError::InsufficientCapacity)
    );
    assert_eq!(
        limiter.reserve_at(6, Instant::ZERO, Duration::from_nanos(u64::MAX)),
        Err(ReserveError::Acquire(AcquireError::InsufficientCapacity))
    );
    assert_eq!(
        limiter.try_acquire(u64::MAX),
        Err(AcquireError::InsufficientCapacity)
    );
    // The rejected calls changed nothing: the full burst is still there.
    assert_eq!(limiter.acquire_at(0, Instant::ZERO).unwrap().remaining, 5);
}

#[test]
fn time_going_backwards_never_admits_more() {
    // 1 per second, burst 1. Admit at 10 s, then ask at 5 s: the bucket is judged by its
    // TAT (11 s), so the earlier time must wait 6 s, not be treated as fresh.
    let limiter = gcra(1, SECOND, 1);
    assert!(limiter.acquire_at(1, at(10 * SECOND)).unwrap().allowed);
    let earlier = limiter.acquire_at(1, at(5 * SECOND)).unwrap();
    assert!(!earlier.allowed);
    assert_eq!(earlier.retry_after_ns, 6 * SECOND);
    assert!(limiter.acquire_at(1, at(11 * SECOND)).unwrap().allowed);
}

#[test]
fn extreme_values_saturate_instead_of_wrapping() {
    let limiter = gcra(1, END, 1); // T = τ = END
    assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
    let denied = limiter.acquire_at(1, at(1)).unwrap();
    // TAT = END; another unit would need TAT + T > END: never.
    assert_eq!((denied.allowed, denied.retry_after_ns), (false, u64::MAX));
    // Full again at t ≥ END would need room for a TAT of t + τ > END: never.
    assert_eq!(denied.reset_after_ns, u64::MAX);
    // The end of the timeline: L=5 per 10 ns (T = 2), so at t = END − 5 only the
    // ⌊5 / 2⌋ = 2 units whose TAT is still at most END can be admitted.
    let late = gcra(5, 10, 0);
    let query = late.acquire_at(0, at(END - 5)).unwrap();
    assert_eq!(
        (query.allowed, query.remaining, query.reset_after_ns),
        (true, 2, u64::MAX)
    );
    assert_eq!(
        late.acquire_at(3, at(END - 5)).unwrap().retry_after_ns,
        u64::MAX
    );
    assert!(late.acquire_at(2, at(END - 5)).unwrap().allowed);
    assert!(!late.acquire_at(1, at(END)).unwrap().allowed);
    assert!(!late.acquire_at(1, at(u64::MAX)).unwrap().allowed);
}

#[test]
fn try_acquire_matches_acquire_on_the_same_history() {
    // A busy bucket (1 per hour, burst 3) decided by try_acquire through the real clock:
    // exactly three admitted, however the coarse shortcut settles each call.
    let limiter = gcra(1, 3600 * SECOND, 3);
    let admitted = (0..100).filter(|_| limiter.try_acquire(1).unwrap()).count();
    assert_eq!(admitted, 3);
    assert!(
        limiter.try_acquire(0).unwrap(),
        "a query is always admitted"
    );
}

#[test]
fn matches_the_sequential_model_on_random_histories() {
    let mut rng = Rng::new(0x6C69_6272_6174_6531);
    for case in 0..400 {
        let limit = rng.range(1, 8);
        let period_ns = limit * rng.range(1, 1000);
        let burst = if rng.chance(30) { 0 } else { rng.range(1, 10) };
        let limiter = gcra(limit, period_ns, burst);
        let effective_burst = if burst == 0 { limit } else { burst };
        let mut model = GcraModel {
            emission_interval: u128::from(period_ns / limit),
            burst: u128::from(effective_burst),
            tat: 0,
        };
        // Start anywhere, including near the end of time.
        let mut now: u64 = match rng.below(4) {
            0 => 0,
            1 => u64::MAX - rng.below(10 * period_ns),
            _ => rng.below(1 << 40),
        };
        for step in 0..60 {
            now = match rng.below(10) {
                0 => now.saturating_sub(rng.below(3 * period_ns)), // backwards
                1 => now,
                _ => now.saturating_add(rng.below(2 * period_ns)),
            };
            let n = rng.below(effective_burst + 2); // sometimes 0, sometimes > burst
            let max_wait = match rng.below(4) {
                0 => 0,
                1 => u64::MAX - rng.below(3),
                _ => rng.below(3 * period_ns),
            };
            let reserve = rng.chance(50);
            let got = if reserve {
                (limiter.reserve_at(n, at(now), Duration::from_nanos(max_wait))).map_err(refused)
            } else {
                limiter.acquire_at(n, at(now)).map_err(refused)
            };
            if n > effective_burst {
                assert_eq!(
                    got,
                    Err(Refused::InsufficientCapacity),
                    "case {case} step {step}"
                );
                continue;
            }
            let want = model.decide(now, n, if reserve { max_wait } else { 0 });
            assert_eq!(
                got.unwrap(),
                want,
                "case {case} step {step}: n={n} now={now} reserve={reserve} max_wait={max_wait}"
            );
        }
    }
}

/// Replays `history` on a fresh limiter, then applies `probe`.
fn replay(config: &Config, history: &[(u64, u64)], probe: (u64, u64)) -> Decision {
    let limiter = Limiter::new(config).unwrap();
    for &(n, t) in history {
        limiter.acquire_at(n, at(t)).unwrap();
    }
    limiter.acquire_at(probe.0, at(probe.1)).unwrap()
}

#[test]
fn retry_and_reset_hold_by_definition_on_the_library_itself() {
    let mut rng = Rng::new(7);
    for _ in 0..60 {
        let limit = rng.range(1, 5);
        let config = Config::gcra(limit, Duration::from_nanos(limit * rng.range(1, 50)))
            .with_burst(rng.range(0, 4));
        let burst = if config.burst == 0 {
            limit
        } else {
            config.burst
        };
        let mut history = Vec::new();
        let mut now = rng.below(1000);
        for _ in 0..12 {
            now += rng.below(config.period().as_nanos() as u64);
            let n = rng.range(1, burst);
            let decision = replay(&config, &history, (n, now));
            if !decision.allowed {
                let d = decision.retry_after_ns;
                assert!(d > 0);
                assert!(
                    !replay(&config, &history, (n, now + d - 1)).allowed,
                    "retry_after is the smallest"
                );
                assert!(
                    replay(&config, &history, (n, now + d)).allowed,
                    "admitted after retry_after"
                );
            }
            history.push((n, now));
            let d = decision.reset_after_ns;
            assert_eq!(
                replay(&config, &history, (0, now + d)).remaining,
                burst,
                "full after reset_after"
            );
            if d > 0 {
                assert!(
                    replay(&config, &history, (0, now + d - 1)).remaining < burst,
                    "reset_after is the smallest"
                );
            }
        }
    }
}

/// A large admission late on the timeline: T = ⌊1,432,100,142 / 5⌋ = 286,420,028 ns and
/// τ = 32,730,240,330 · T = 9,374,596,351,765,329,240 ns. n = 12,390,272,101 units at
/// t = 3,028,339,343,176,555,158 cost n·T = 3,548,822,082,096,038,828 ns, so the TAT is
/// t + n·T = 6,577,161,425,272,593,986, and the bucket is full again (remaining = B) once
/// the TAT is reached: TAT + τ = 15,951,757,777,037,923,226 is below 2⁶⁴ − 257, so the end
/// of the timeline takes nothing. `reset_after_ns` is n·T, not "never", and `remaining` is
/// ⌊(τ − n·T) / T⌋ = B − n = 20,339,968,229. Then the definition itself, replayed: full at
/// t + n·T, not one nanosecond before.
#[test]
fn reset_after_is_exact_for_a_large_late_admission() {
    let config = Config::gcra(5, Duration::from_nanos(1_432_100_142)).with_burst(32_730_240_330);
    let limiter = Limiter::new(&config).unwrap();
    let t = 3_028_339_343_176_555_158;
    let decision = limiter.acquire_at(12_390_272_101, at(t)).unwrap();
    assert!(decision.allowed);
    assert_eq!(decision.reset_after_ns, 3_548_822_082_096_038_828);
    assert_eq!(decision.remaining, 20_339_968_229);
    let reset = t + decision.reset_after_ns;
    assert_eq!(
        limiter.acquire_at(0, at(reset)).unwrap().remaining,
        32_730_240_330
    );
    assert_eq!(
        limiter.acquire_at(0, at(reset - 1)).unwrap().remaining,
        32_730_240_329
    );
}

#[test]
fn a_config_error_names_the_field_the_value_and_the_bound() {
    // T = floor(P / L) must be at least 1: L at most P (docs/decision.md, Configuration).
    let config = Config::gcra(1_000_000_001, Duration::from_nanos(1_000_000_000));
    let Err(why) = Limiter::new(&config) else {
        panic!("accepted");
    };
    assert_eq!(why.field(), Some(Field::Limit));
    assert_eq!(why.value(), Some(1_000_000_001));
    assert_eq!(why.bound(), Some(Bound::AtMost(1_000_000_000)));
    assert_eq!(
        why.to_string(),
        "limit 1000000001: must be at most 1000000000 for GCRA with period_ns 1000000000 \
         (at most one unit per ns)"
    );
}
