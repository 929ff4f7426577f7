//! A rule that never refills: a period of `Config::FOREVER` (u64::MAX ns), for every
//! algorithm, through limiters, keyed tables and policies. Every expected value follows
//! from the definition: C units ever (GCRA: its burst, else its limit), "never" reported
//! as u64::MAX.

mod common;

use common::{at, decision};
use librate::{
    AcquireError, Algorithm, Bound, Config, ConfigError, Field, Instant, KeyedLimiter, Limiter,
    Policy, ReserveError,
};
use std::time::Duration;

const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::Gcra,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::SlidingLog,
];

#[test]
fn every_algorithm_admits_its_allowance_once_at_any_times() {
    for algorithm in ALGORITHMS {
        let limiter = Limiter::new(&Config::new(algorithm, 3, Config::FOREVER)).unwrap();
        let never = u64::MAX;
        assert_eq!(
            limiter.acquire_at(0, Instant::ZERO).unwrap(),
            decision(true, 3, 3, 0, 0)
        );
        assert_eq!(
            limiter.acquire_at(2, Instant::ZERO).unwrap(),
            decision(true, 3, 1, 0, never)
        );
        // Time going backwards or to the end of the timeline changes nothing.
        assert_eq!(
            limiter.acquire_at(2, at(u64::MAX)).unwrap(),
            decision(false, 3, 1, never, never)
        );
        assert_eq!(
            limiter.acquire_at(1, at(5)).unwrap(),
            decision(true, 3, 0, 0, never)
        );
        assert!(!limiter.try_acquire(1).unwrap(), "{algorithm:?}");
        assert_eq!(
            limiter.acquire_at(4, Instant::ZERO),
            Err(AcquireError::InsufficientCapacity)
        );
        // A reset gives the allowance back.
        limiter.reset();
        assert!(limiter.try_acquire(3).unwrap(), "{algorithm:?}");
    }
}

#[test]
fn gcra_admits_its_burst_and_keeps_its_reserve() {
    let limiter = Limiter::new(&Config::gcra(10, Config::FOREVER).with_burst(2)).unwrap();
    // A reserve never waits: admitted at once while units are left, else denied for ever.
    assert_eq!(
        limiter
            .reserve_at(1, Instant::ZERO, Duration::from_nanos(1_000))
            .unwrap(),
        decision(true, 2, 1, 0, u64::MAX)
    );
    assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
    assert_eq!(
        limiter
            .reserve_at(1, Instant::ZERO, Duration::from_nanos(u64::MAX))
            .unwrap(),
        decision(false, 2, 0, u64::MAX, u64::MAX)
    );
    // The windows have no queue, forever or not.
    let window = Limiter::new(&Config::fixed_window(2, Config::FOREVER)).unwrap();
    assert_eq!(
        window.reserve_at(1, Instant::ZERO, Duration::from_nanos(1)),
        Err(ReserveError::Unsupported)
    );
}

#[test]
fn bounds_of_an_allowance() {
    let invalid = |config: Config| Limiter::new(&config).unwrap_err();
    for algorithm in ALGORITHMS {
        assert_eq!(
            invalid(Config::new(algorithm, 0, Config::FOREVER)),
            ConfigError::ZeroLimit
        );
        // Up to 2⁶⁴ − 257 units, the log's cap of 2²⁰ included: no log is kept.
        let most = u64::MAX - 256;
        let limiter = Limiter::new(&Config::new(algorithm, most, Config::FOREVER)).unwrap();
        assert_eq!(
            limiter.acquire_at(most, Instant::ZERO).unwrap().remaining,
            0
        );
        let why = invalid(Config::new(algorithm, most + 1, Config::FOREVER));
        assert!(matches!(why, ConfigError::LimitTooLarge(_)));
        assert_eq!(
            (why.field(), why.value(), why.bound()),
            (
                Some(Field::Limit),
                Some(most + 1),
                Some(Bound::AtMost(most))
            )
        );
    }
}

#[test]
fn an_allowance_past_half_the_range_never_wraps() {
    // C = 2⁶⁴ − 257. After 2⁶³ units, 2⁶³ more would make 2⁶⁴ (one past u64): 2⁶³ − 257 are
    // left, so 2⁶³ is denied and 2⁶³ − 257 admitted. The sum once wrapped to 0 and was
    // admitted (an overflow panic in a checked build); keyed tables and policies share the
    // rule, through the direct and the keyed paths.
    let most = u64::MAX - 256;
    let half = 1 << 63;
    let never = u64::MAX;
    for algorithm in ALGORITHMS {
        let config = Config::new(algorithm, most, Config::FOREVER);
        let limiter = Limiter::new(&config).unwrap();
        assert!(limiter.acquire_at(half, Instant::ZERO).unwrap().allowed);
        assert_eq!(
            limiter.acquire_at(half, at(1)).unwrap(),
            decision(false, most, half - 257, never, never)
        );
        assert_eq!(
            limiter.acquire_at(half - 257, at(2)).unwrap(),
            decision(true, most, 0, 0, never)
        );
        let table = KeyedLimiter::new(&config, 4).unwrap();
        assert!(table.acquire_at(b"k", half, Instant::ZERO).unwrap().allowed);
        assert!(!table.acquire_at(b"k", half, at(1)).unwrap().allowed);
        let policy = Policy::new(&[config]).unwrap();
        assert!(
            policy
                .acquire_at(half, Instant::ZERO)
                .unwrap()
                .decision
                .allowed
        );
        assert!(!policy.acquire_at(half, at(1)).unwrap().decision.allowed);
    }
}

#[test]
fn keyed_tables_keep_each_keys_allowance() {
    let table = KeyedLimiter::new(&Config::sliding_window(2, Config::FOREVER), 16).unwrap();
    assert!(
        table
            .acquire_at(b"alice", 2, Instant::ZERO)
            .unwrap()
            .allowed
    );
    assert_eq!(
        table.acquire_at(b"alice", 1, at(u64::MAX)).unwrap(),
        decision(false, 2, 0, u64::MAX, u64::MAX)
    );
    assert_eq!(
        table.acquire_at(b"bob", 1, at(u64::MAX)).unwrap(),
        decision(true, 2, 1, 0, u64::MAX)
    );
}

#[test]
fn a_policy_of_a_quota_and_a_rate() {
    const SECOND: u64 = 1_000_000_000;
    // 2 a second, 3 ever.
    let policy = Policy::new(&[
        Config::per_second(2),
        Config::fixed_window(3, Config::FOREVER),
    ])
    .unwrap();
    assert!(
        policy
            .acquire_at(2, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    let denied = policy.acquire_at(2, at(SECOND)).unwrap();
    assert_eq!(denied.denied_by, Some(1));
    assert_eq!(denied.decision.retry_after_ns, u64::MAX);
    // The rate rule gave its units back: 1 more is admitted at once.
    assert!(policy.acquire_at(1, at(SECOND)).unwrap().decision.allowed);
    assert_eq!(
        policy.acquire_at(1, at(9 * SECOND)).unwrap().denied_by,
        Some(1)
    );
}
