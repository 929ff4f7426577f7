//! The window algorithms against plain sequential reference models (docs/decision.md).
//!
//! Each model keeps its state the obvious way (per-window counts in a map, or every
//! admitted timestamp in a Vec) and answers two questions at any instant: does a cost of
//! n fit, and how many units would. Every decision field is then derived from those by
//! its definition: `remaining` is the model's answer after the decision, `retry_after_ns`
//! and `reset_after_ns` are the smallest d at which the answer changes, found by
//! bisection over d (with no traffic, admission and `remaining` only grow with time).
//! Random sequences (seeded SplitMix64) with time running forwards and backwards compare
//! every field with the limiter; the limiter's own retry/reset are also checked by
//! definition on a replayed copy of its state.

#![cfg(not(loom))]

mod common;

use common::models::{model_decide, FixedModel, LogModel, SlidingModel, WindowModel};
use common::{at, decision, refused};
use librate::{
    AcquireError, Algorithm, Bound, Config, ConfigError, Decision, Field, Instant, Limiter,
    ReserveError,
};
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;
const MINUTE: u64 = 60 * SECOND;

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny deterministic PRNG.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=max` (the tiny modulo bias does not matter here).
    fn up_to(&mut self, max: u64) -> u64 {
        match max.checked_add(1) {
            Some(bound) => self.next() % bound,
            None => self.next(),
        }
    }
}

/// A limiter with the same admitted history as the one under test.
fn replay(config: &Config, history: &[(u64, u64)]) -> Limiter {
    let limiter = Limiter::new(config).unwrap();
    for &(t, n) in history {
        assert!(
            limiter.acquire_at(n, at(t)).unwrap().allowed,
            "replay diverged"
        );
    }
    limiter
}

/// Checks that `d` is the smallest delay after `t` at which `holds`: not at `t + d − 1`,
/// and at `t + d`, except that `d == u64::MAX` also means "never" (it is a real delay only
/// from `t == 0`), so it needs only the first check, at the end of the timeline. The
/// denial is checked first: `holds` may change the state when it is true.
fn assert_first(t: u64, d: u64, mut holds: impl FnMut(u64) -> bool, what: &str) {
    if d == 0 {
        assert!(holds(t), "{what}: 0 at {t}");
        return;
    }
    let just_before = match t.checked_add(d) {
        Some(end) => end - 1,
        None => u64::MAX,
    };
    assert!(!holds(just_before), "{what}: before {t} + {d}");
    if d != u64::MAX {
        assert!(holds(t + d), "{what}: at {t} + {d}");
    }
}

/// Checks the limiter's `retry_after_ns` and `reset_after_ns` by their definitions on a
/// copy of its state: at `t + d − 1` still denied / not full, at `t + d` admitted / full.
fn check_by_definition(config: &Config, history: &[(u64, u64)], t: u64, n: u64, d: &Decision) {
    if !d.allowed {
        let copy = replay(config, history);
        let admits = |t| copy.acquire_at(n, at(t)).unwrap().allowed;
        assert_first(t, d.retry_after_ns, admits, "retry_after");
    }
    let copy = replay(config, history);
    let full = |t| copy.acquire_at(0, at(t)).unwrap().remaining == config.limit;
    assert_first(t, d.reset_after_ns, full, "reset_after");
}

/// What a random run exercised, so a test can insist every kind of case came up.
#[derive(Default, Debug)]
struct Seen {
    admitted: u32,
    denied: u32,
    queries: u32,
    too_large: u32,
    backwards: u32,
    never: u32,
}

/// Drives one limiter and its model through a random sequence, comparing every field.
fn run_random<M: WindowModel>(
    config: Config,
    mut model: M,
    rng: &mut SplitMix64,
    ops: usize,
    seen: &mut Seen,
) {
    let limiter = Limiter::new(&config).unwrap();
    let (limit, period) = (config.limit, config.period().as_nanos() as u64);
    let mut t = match rng.up_to(3) {
        0 => 0,
        1 => rng.up_to(period.saturating_mul(10)),
        2 => u64::MAX - rng.up_to(period.saturating_mul(4)),
        _ => rng.next(),
    };
    let mut history = Vec::new();
    for step in 0..ops {
        t = match rng.up_to(9) {
            0 | 1 => {
                seen.backwards += 1;
                t.saturating_sub(rng.up_to(period.saturating_mul(2)))
            }
            2 => t,
            3..=6 => t.saturating_add(rng.up_to(period / 2 + 1)),
            _ => t.saturating_add(rng.up_to(period.saturating_mul(3))),
        };
        let n = match rng.up_to(9) {
            0 => 0,
            1 => limit + 1,
            _ => 1 + rng.up_to(limit - 1),
        };
        let got = limiter.acquire_at(n, at(t)).map_err(refused);
        let want = model_decide(&mut model, t, n);
        assert_eq!(
            got, want,
            "{config:?}, step {step}: {n} at {t}, history {history:?}"
        );
        match got {
            Err(_) => seen.too_large += 1,
            Ok(_) if n == 0 => seen.queries += 1,
            Ok(d) if d.allowed => seen.admitted += 1,
            Ok(_) => seen.denied += 1,
        }
        if let Ok(decision) = got {
            if decision.retry_after_ns == u64::MAX || decision.reset_after_ns == u64::MAX {
                seen.never += 1;
            }
            if decision.allowed && n > 0 {
                history.push((t, n));
            }
            check_by_definition(&config, &history, t, n, &decision);
        }
    }
}

/// Small configs where every edge is hit often: L in 1..=5, P from 4·L to 60.
fn random_config(rng: &mut SplitMix64, algorithm: Algorithm) -> Config {
    let limit = 1 + rng.up_to(4);
    let period = match rng.up_to(5) {
        0 => 4 * limit,
        1 => 1000,
        _ => 4 * limit + rng.up_to(56),
    };
    Config::new(algorithm, limit, Duration::from_nanos(period))
}

/// Large configs whose products overflow u64 (L up to 2⁴⁰, P up to 2⁶²): only a few
/// windows fit the timeline, so the end of it ("never") comes up often.
fn large_config(rng: &mut SplitMix64, algorithm: Algorithm) -> Config {
    let limit = 1 + rng.up_to(1 << 40);
    Config::new(
        algorithm,
        limit,
        Duration::from_nanos(4 * limit + rng.up_to(1 << 62)),
    )
}

fn random_runs<M: WindowModel>(algorithm: Algorithm, model: impl Fn(u64, u64) -> M) {
    random_runs_of(algorithm, random_config, &model);
}

fn random_runs_of<M: WindowModel>(
    algorithm: Algorithm,
    config_of: fn(&mut SplitMix64, Algorithm) -> Config,
    model: impl Fn(u64, u64) -> M,
) {
    let mut seen = Seen::default();
    for seed in 0..120 {
        let mut rng = SplitMix64(seed);
        let config = config_of(&mut rng, algorithm);
        let model = model(config.limit, config.period().as_nanos() as u64);
        run_random(config, model, &mut rng, 60, &mut seen);
    }
    let least = [
        seen.admitted,
        seen.denied,
        seen.queries,
        seen.too_large,
        seen.backwards,
        seen.never,
    ];
    assert!(least.iter().all(|&count| count >= 100), "{seen:?}");
}

#[test]
fn fixed_window_matches_its_model() {
    random_runs(Algorithm::FixedWindow, FixedModel::new);
}

#[test]
fn sliding_window_matches_its_model() {
    random_runs(Algorithm::SlidingWindow, SlidingModel::new);
}

#[test]
fn window_algorithms_match_their_models_with_large_numbers() {
    random_runs_of(Algorithm::FixedWindow, large_config, FixedModel::new);
    random_runs_of(Algorithm::SlidingWindow, large_config, SlidingModel::new);
}

#[test]
fn sliding_log_matches_its_model() {
    random_runs(Algorithm::SlidingLog, LogModel::new);
}

#[test]
fn seed_fixed_window_two_per_minute() {
    let limiter = Limiter::new(&Config::fixed_window(2, Duration::from_secs(60))).unwrap();
    let at_second = |s: u64| limiter.acquire_at(1, at(s * SECOND)).unwrap();
    // 0:24 and 0:36 admitted; the window resets at 1:00.
    assert_eq!(at_second(24), decision(true, 2, 1, 0, 36 * SECOND));
    assert_eq!(at_second(36), decision(true, 2, 0, 0, 24 * SECOND));
    // 0:49 rejected: retry after 11 s, when the next window starts.
    assert_eq!(
        at_second(49),
        decision(false, 2, 0, 11 * SECOND, 11 * SECOND)
    );
    // 1:12 admitted in the new window, which resets at 2:00.
    assert_eq!(at_second(72), decision(true, 2, 1, 0, 48 * SECOND));
}

#[test]
fn seed_sliding_window_ten_per_minute_after_nine() {
    let limiter = Limiter::new(&Config::sliding_window(10, Duration::from_secs(60))).unwrap();
    // 9 admitted in the previous window (0:00–1:00).
    assert_eq!(
        limiter.acquire_at(9, at(30 * SECOND)).unwrap(),
        decision(true, 10, 1, 0, 90 * SECOND)
    );
    // The estimate at e seconds into 1:00–2:00 is 9·(60 − e)/60 + cur; remaining is
    // 10 − ⌈9·(60 − e)/60⌉, and everything has left the window at 2:00.
    let query = |e: u64| limiter.acquire_at(0, at(MINUTE + e * SECOND)).unwrap();
    assert_eq!(query(0), decision(true, 10, 1, 0, 60 * SECOND)); // 9
    assert_eq!(query(15), decision(true, 10, 3, 0, 45 * SECOND)); // 6.75
    assert_eq!(query(20), decision(true, 10, 4, 0, 40 * SECOND)); // 6
    assert_eq!(query(40), decision(true, 10, 7, 0, 20 * SECOND)); // 3
    assert_eq!(query(59), decision(true, 10, 9, 0, SECOND)); // 0.15
    assert_eq!(query(60), decision(true, 10, 10, 0, 0));
    // At 1:15, 6.75 + 3 ≤ 10 but 6.75 + 4 > 10.
    let t = MINUTE + 15 * SECOND;
    assert!(limiter.acquire_at(1, at(t)).unwrap().allowed);
    assert!(limiter.acquire_at(2, at(t)).unwrap().allowed);
    // The 4th is denied until 9·(60 − e)/60 + 4 ≤ 10, i.e. e = 20 s: 5 s from now. Both
    // windows are clear only at 3:00 (this window's 3 weigh on the next one).
    assert_eq!(
        limiter.acquire_at(1, at(t)).unwrap(),
        decision(false, 10, 0, 5 * SECOND, 105 * SECOND)
    );
    assert!(
        !limiter
            .acquire_at(1, at(MINUTE + 20 * SECOND - 1))
            .unwrap()
            .allowed
    );
    assert!(
        limiter
            .acquire_at(1, at(MINUTE + 20 * SECOND))
            .unwrap()
            .allowed
    );
}

#[test]
fn seed_sliding_log_two_per_minute() {
    let limiter = Limiter::new(&Config::sliding_log(2, Duration::from_secs(60))).unwrap();
    let at_second = |s: u64| limiter.acquire_at(1, at(s * SECOND)).unwrap();
    assert_eq!(at_second(24), decision(true, 2, 1, 0, 60 * SECOND));
    assert_eq!(at_second(36), decision(true, 2, 0, 0, 60 * SECOND));
    // 0:49: the 0:24 entry leaves at 1:24, the 0:36 one at 1:36.
    assert_eq!(
        at_second(49),
        decision(false, 2, 0, 35 * SECOND, 47 * SECOND)
    );
    // 1:12 is still denied (unlike the fixed window): 0:24 is within the last minute.
    assert_eq!(
        at_second(72),
        decision(false, 2, 0, 12 * SECOND, 24 * SECOND)
    );
    assert_eq!(at_second(84), decision(true, 2, 0, 0, 60 * SECOND));
    // Remaining grows by one as each entry expires.
    let query = |s: u64| limiter.acquire_at(0, at(s * SECOND)).unwrap().remaining;
    assert_eq!((query(95), query(96), query(144)), (0, 1, 2));
}

#[test]
fn time_going_backwards_never_admits_more() {
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
    ] {
        let limiter = Limiter::new(&Config::new(algorithm, 2, Duration::from_secs(60))).unwrap();
        assert!(limiter.acquire_at(2, at(10 * MINUTE)).unwrap().allowed);
        // Back to an old, empty window: still counted against the latest one.
        let back = limiter.acquire_at(1, at(3 * MINUTE)).unwrap();
        assert!(!back.allowed, "{algorithm:?}");
        assert_eq!(back.remaining, 0, "{algorithm:?}");
        assert!(
            !limiter.acquire_at(1, Instant::ZERO).unwrap().allowed,
            "{algorithm:?}"
        );
    }
}

#[test]
fn queries_change_nothing_and_costs_above_the_limit_are_errors() {
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
    ] {
        let limiter = Limiter::new(&Config::new(algorithm, 3, Duration::from_secs(60))).unwrap();
        assert_eq!(
            limiter.acquire_at(0, at(5)).unwrap(),
            decision(true, 3, 3, 0, 0),
            "{algorithm:?}"
        );
        assert_eq!(
            limiter.acquire_at(4, at(5)).unwrap_err(),
            AcquireError::InsufficientCapacity
        );
        assert!(limiter.acquire_at(3, at(5)).unwrap().allowed);
        assert_eq!(limiter.acquire_at(0, at(5)).unwrap().remaining, 0);
        assert_eq!(
            limiter.acquire_at(4, at(5)).unwrap_err(),
            AcquireError::InsufficientCapacity
        );
    }
}

#[test]
fn reserve_is_unsupported_whatever_the_cost() {
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
    ] {
        let limiter = Limiter::new(&Config::new(algorithm, 3, Duration::from_secs(60))).unwrap();
        for n in [0, 1, 4] {
            assert_eq!(
                limiter.reserve_at(n, Instant::ZERO, Duration::from_secs(1)),
                Err(ReserveError::Unsupported)
            );
        }
        assert_eq!(
            limiter.reserve(1, Duration::ZERO),
            Err(ReserveError::Unsupported)
        );
        // Nothing was taken.
        assert_eq!(limiter.acquire_at(0, Instant::ZERO).unwrap().remaining, 3);
    }
}

#[test]
fn config_bounds() {
    let invalid = |algorithm, limit, period| {
        Limiter::new(&Config::new(algorithm, limit, period))
            .map(|_| ())
            .unwrap_err()
    };
    // The largest limit the period takes, or the shortest period the limit takes.
    let fix = |algorithm, limit, period| match invalid(algorithm, limit, period) {
        ConfigError::LimitTooLarge(broken) => broken.fix(),
        other => panic!("{other:?}"),
    };
    let most_limit = |most| Some((Field::Limit, Bound::AtMost(most)));
    let least_period = |least| Some((Field::PeriodNs, Bound::AtLeast(least)));
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
    ] {
        assert_eq!(
            invalid(algorithm, 0, Duration::from_secs(1)),
            ConfigError::ZeroLimit
        );
        assert_eq!(
            invalid(algorithm, 1, Duration::ZERO),
            ConfigError::ZeroPeriod
        );
        // One unit per ns is past every window algorithm's bound.
        assert!(fix(algorithm, 1, Duration::from_nanos(1)).is_some());
        // Burst is ignored.
        assert!(
            Limiter::new(&Config::new(algorithm, 5, Duration::from_secs(1)).with_burst(1)).is_ok()
        );
    }
    // Windows: ⌊(2⁶⁴−1)/P⌋·2^bits(L) + L ≤ 2⁶⁴ − 257. L = 1, P = 2: 2⁶⁴ − 1, rejected;
    // from P = 3 on (last window 0x5555…55), accepted.
    for algorithm in [Algorithm::FixedWindow, Algorithm::SlidingWindow] {
        assert_eq!(fix(algorithm, 1, Duration::from_nanos(2)), least_period(3));
        assert!(Limiter::new(&Config::new(algorithm, 1, Duration::from_nanos(3))).is_ok());
        assert!(Limiter::new(&Config::new(algorithm, 250_000_000, Duration::from_secs(1))).is_ok());
        // P = 2⁶⁴ − 2: the longest period that ends (2⁶⁴ − 1 never does: an allowance).
        assert!(Limiter::new(&Config::new(
            algorithm,
            (1 << 63) - 257,
            Duration::from_nanos(u64::MAX - 1)
        ))
        .is_ok());
        assert_eq!(
            fix(
                algorithm,
                (1 << 63) - 256,
                Duration::from_nanos(u64::MAX - 1)
            ),
            most_limit((1 << 63) - 257)
        );
    }
    // Log: L ≤ 2²⁰ and L·(⌊(2⁶⁴−1)/P⌋ + 1) ≤ 2⁶⁴ − 257. L = 1, P = 2: 2⁶³, accepted.
    assert!(Limiter::new(&Config::sliding_log(1, Duration::from_nanos(2))).is_ok());
    // P = 3: 0x5555…56 windows; 2 of them fit below 2⁶⁴ − 257, 3 do not.
    assert_eq!(
        fix(Algorithm::SlidingLog, 3, Duration::from_nanos(3)),
        most_limit(2)
    );
    assert!(Limiter::new(&Config::sliding_log(1 << 20, Duration::from_nanos(1 << 21))).is_ok());
    assert_eq!(
        fix(
            Algorithm::SlidingLog,
            (1 << 20) + 1,
            Duration::from_nanos(u64::MAX - 1)
        ),
        most_limit(1 << 20)
    );
}

#[test]
fn extreme_configs_decide_without_overflow() {
    // One window spans the timeline but its last instant: window 1 starts at u64::MAX − 1,
    // window 2 never.
    let huge = (1u64 << 63) - 257;
    let period = u64::MAX - 1;
    let fixed = Limiter::new(&Config::fixed_window(huge, Duration::from_nanos(period))).unwrap();
    assert_eq!(
        fixed.acquire_at(huge, at(7)).unwrap(),
        decision(true, huge, 0, 0, period - 7)
    );
    assert_eq!(
        fixed.acquire_at(1, at(period - 1)).unwrap(),
        decision(false, huge, 0, 1, 1)
    );
    assert_eq!(
        fixed.acquire_at(1, at(period)).unwrap(),
        decision(true, huge, huge - 1, 0, u64::MAX)
    );
    // The sliding window's full window weighs on window 1 too, and window 2 never comes.
    let sliding =
        Limiter::new(&Config::sliding_window(huge, Duration::from_nanos(period))).unwrap();
    assert_eq!(
        sliding.acquire_at(huge, at(7)).unwrap(),
        decision(true, huge, 0, 0, u64::MAX)
    );
    assert_eq!(
        sliding.acquire_at(1, at(period - 1)).unwrap(),
        decision(false, huge, 0, u64::MAX, u64::MAX)
    );
    assert_eq!(
        sliding.acquire_at(1, at(period)).unwrap(),
        decision(false, huge, 0, u64::MAX, u64::MAX)
    );
    // Logged at 5, the units expire at 5 + P = 2⁶⁴ + 3: past the timeline.
    let log = Limiter::new(&Config::sliding_log(1 << 20, Duration::from_nanos(period))).unwrap();
    assert!(log.acquire_at(1 << 20, at(5)).unwrap().allowed);
    assert_eq!(
        log.acquire_at(1, at(6)).unwrap(),
        decision(false, 1 << 20, 0, u64::MAX, u64::MAX)
    );
}

#[test]
fn try_acquire_admits_exactly_the_limit_on_the_real_clock() {
    // A period of ~146 years: no window edge and no expiry during the test.
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::SlidingLog,
    ] {
        let limiter = Limiter::new(&Config::new(
            algorithm,
            5,
            Duration::from_nanos(u64::MAX / 4),
        ))
        .unwrap();
        let admitted = (0..8).filter(|_| limiter.try_acquire(1).unwrap()).count();
        assert_eq!(admitted, 5, "{algorithm:?}");
        assert_eq!(
            limiter.try_acquire(6),
            Err(AcquireError::InsufficientCapacity)
        );
        assert!(limiter.try_acquire(0).unwrap());
        assert_eq!(limiter.acquire(0).unwrap().remaining, 0);
    }
}
