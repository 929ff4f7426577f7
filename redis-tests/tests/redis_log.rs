//! The Redis tier's sliding window log (docs/decision.md, docs/redis.md) against a real
//! `redis-server` the test starts on a loopback port: the doc example by hand; the same decisions
//! as the in-process limiter, field for field, for random configurations and times; reserves
//! refused; expiry with the newest entry; bounds and states of another shape.

mod common;

use common::redis_replay::replay;
use common::redis_server::server;
use common::{decision, Rng, MS, SECOND};
use librate::redis::{RedisError, RedisLimiter};
use librate::{Config, ConfigError, Decision, Instant, Limiter, ReserveError};
use std::time::Duration;

/// The sliding log on Redis: random configurations (L from 1 to 50, some larger, a few at
/// the cap 2^20; periods from about one unit a nanosecond, where the in-process bound on
/// positions decides, to just below 2^53 ns; the last cases on either side of 2^52 ns,
/// where the script leaves its decision in plain numbers for the exact one, the replay's
/// times going back by up to two periods so the latest timestamp also lies on either side
/// of now + 2^52 ns) replayed by [`replay`]: every decision and refusal is the in-process
/// limiter's.
#[test]
fn sliding_log_decides_as_the_in_process_limiter() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let mut rng = Rng::new(2);
    for case in 0..340u64 {
        let limit = match case % 50 {
            _ if case >= 300 => rng.range(1, 20),
            0 => 1 << 20,
            1..=5 => rng.range(51, 3000),
            _ => rng.range(1, 50),
        };
        let period = match rng.below(4) {
            _ if case >= 300 => rng.range(1 << 51, (1 << 53) - 1),
            0 => rng.range(limit, 4 * limit),
            1 => (1 << 53) - 1 - rng.below(SECOND),
            _ => rng.range(1, 10 * SECOND),
        };
        let config = Config::sliding_log(limit, Duration::from_nanos(period));
        if let Err(error) = Limiter::new(&config) {
            let refused = RedisLimiter::new(&config, "x").err();
            assert_eq!(refused, Some(error), "{config:?}");
            continue;
        }
        replay(&mut redis, &config, case, &mut rng);
    }
}

/// A request `back` ns before the log's newest entry, at t0 (near 2023 on the epoch), is
/// decided at t0, and every duration it reports from now is `back + P`, by hand: at or
/// above 2⁵³ for the largest periods and distances, where one plain number would round
/// (each sum odd there). An admission (L = 2, one entry at t0: the new one logged at t0,
/// nothing left), a denial (L = 1: the entry at t0 leaves at t0 + P) and a query (the
/// entry at t0 reported), with periods just below, at and above 2⁵² ns and distances
/// below, at and past 4.5·10⁶ s (2⁵² ns is 4.5036·10⁶ s). Then queries as far after the
/// entry, where it is in the log or has just left it.
#[test]
fn sliding_log_durations_near_2_52_are_exact() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let t0 = 1_700_000_000 * SECOND + 123;
    let periods = [(1 << 52) - 1, 1 << 52, (1 << 53) - 1];
    let distances = [
        0,
        1,
        4_499_999 * SECOND,
        4_500_000 * SECOND,
        4_600_000 * SECOND,
        9_000_000 * SECOND,
    ];
    for (p, period) in periods.into_iter().enumerate() {
        for (d, back) in distances.into_iter().enumerate() {
            let now = t0 - back;
            let span = back + period;
            let two = RedisLimiter::new(
                &Config::sliding_log(2, Duration::from_nanos(period)),
                format!("near{p}:{d}:"),
            );
            let two = two.unwrap();
            assert!(
                two.acquire_at(&mut redis, b"k", 1, Instant::from_nanos(t0))
                    .unwrap()
                    .allowed
            );
            let admitted = two
                .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(now))
                .unwrap();
            assert_eq!(admitted, decision(true, 2, 0, 0, span), "{period} {back}");
            let queried = two
                .acquire_at(&mut redis, b"k", 0, Instant::from_nanos(now))
                .unwrap();
            assert_eq!(queried, decision(true, 2, 0, 0, span), "{period} {back}");

            let one = RedisLimiter::new(
                &Config::sliding_log(1, Duration::from_nanos(period)),
                format!("far{p}:{d}:"),
            );
            let one = one.unwrap();
            assert!(
                one.acquire_at(&mut redis, b"k", 1, Instant::from_nanos(t0))
                    .unwrap()
                    .allowed
            );
            let denied = one
                .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(now))
                .unwrap();
            assert_eq!(denied, decision(false, 1, 0, span, span), "{period} {back}");
        }
    }
    // Later than the entry, by 4.5·10⁶ s (still in the log of P = 2⁵² − 1 ns, which ends
    // 3,599,627,370,495 ns later) and by P (gone: at or before now − P).
    let period = (1 << 52) - 1;
    let limiter = RedisLimiter::new(
        &Config::sliding_log(2, Duration::from_nanos(period)),
        "later:",
    )
    .unwrap();
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(t0))
            .unwrap()
            .allowed
    );
    let mut later = |at: u64| {
        limiter
            .acquire_at(&mut redis, b"k", 0, Instant::from_nanos(t0 + at))
            .unwrap()
    };
    let kept = decision(true, 2, 1, 0, 3_599_627_370_495);
    assert_eq!(later(4_500_000 * SECOND), kept);
    assert_eq!(later(period), decision(true, 2, 2, 0, 0));
}

/// The example of `src/algorithm/sliding_log.rs` through Redis, every field by hand: 2 per
/// minute, admitted at 0:24 and 0:36, denied at 1:12 until 0:24 leaves the log at 1:24.
#[test]
fn sliding_log_example() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter =
        RedisLimiter::new(&Config::sliding_log(2, Duration::from_secs(60)), "example:").unwrap();
    let mut at = |s: u64| {
        limiter
            .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(s * SECOND))
            .unwrap()
    };
    let decision = |allowed, remaining, retry_after_s: u64, reset_after_s: u64| Decision {
        allowed,
        limit: 2,
        remaining,
        retry_after_ns: retry_after_s * SECOND,
        reset_after_ns: reset_after_s * SECOND,
        wait_ns: 0,
    };
    assert_eq!(at(24), decision(true, 1, 0, 60));
    assert_eq!(at(36), decision(true, 0, 0, 60));
    // 0:24 leaves at 1:24, 0:36 (the newest) at 1:36.
    assert_eq!(at(72), decision(false, 0, 12, 24));
    // 0:36 is still in the log, so nothing more until 1:36.
    assert_eq!(at(84), decision(true, 0, 0, 60));
}

/// The log has no queue: a reserve with a wait is `Unsupported`, as in process, whatever
/// the cost, and reaches no Redis key.
#[test]
fn sliding_log_refuses_reserves() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let config = Config::sliding_log(3, Duration::from_secs(1));
    let local = Limiter::new(&config).unwrap();
    let remote = RedisLimiter::new(&config, "reserve:").unwrap();
    for n in [0, 1, 3, 4] {
        let want = local
            .reserve_at(n, Instant::from_nanos(SECOND), Duration::from_nanos(1))
            .unwrap_err();
        assert_eq!(want, ReserveError::Unsupported);
        let got = remote.reserve_at(
            &mut redis,
            b"k",
            n,
            Instant::from_nanos(SECOND),
            Duration::from_nanos(1),
        );
        assert!(matches!(
            got,
            Err(RedisError::Rate(ReserveError::Unsupported))
        ));
        let got = remote.reserve(&mut redis, b"k", n, Duration::from_nanos(u64::MAX));
        assert!(matches!(
            got,
            Err(RedisError::Rate(ReserveError::Unsupported))
        ));
    }
    assert_eq!(pttl(&mut redis, &remote, b"k"), -2);
}

/// The `PTTL` of `key`'s Redis key: milliseconds, -1 for no expiry, -2 for no key.
fn pttl(redis: &mut redis::Connection, limiter: &RedisLimiter, key: &[u8]) -> i64 {
    redis::cmd("PTTL")
        .arg(limiter.redis_key(key))
        .query(redis)
        .unwrap()
}

/// The key lives exactly while an entry of the log does: until the newest entry's
/// timestamp plus the period (in whole milliseconds), measured from the request's time; a request from the past is logged at the latest time, so its key lives longer. A
/// query and a denial leave the expiry alone; a query of a fresh key creates nothing.
#[test]
fn sliding_log_keys_expire_with_their_newest_entry() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter =
        RedisLimiter::new(&Config::sliding_log(2, Duration::from_secs(10)), "expiry:").unwrap();
    let within = |ttl: i64, ms: i64| ttl > ms - 200 && ttl <= ms;
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 0, Instant::from_nanos(100 * SECOND))
            .unwrap()
            .allowed
    );
    assert_eq!(pttl(&mut redis, &limiter, b"k"), -2);
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(100 * SECOND))
            .unwrap()
            .allowed
    );
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 10_000), "{ttl}");
    // From 5 s before the latest entry: logged at 100 s, which expires 15 s later.
    let past = limiter
        .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(95 * SECOND))
        .unwrap();
    assert_eq!((past.allowed, past.reset_after_ns), (true, 15 * SECOND));
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 15_000), "{ttl}");
    // Full: a denial and a query at 101.5 s leave the expiry as it was.
    let denied = limiter
        .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(101_500 * MS))
        .unwrap();
    assert!(!denied.allowed);
    limiter
        .acquire_at(&mut redis, b"k", 0, Instant::from_nanos(101_500 * MS))
        .unwrap();
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 15_000), "{ttl}");
    // At 110 s + 1 ns both entries have left: 2 more admitted, the key lives 10 s again.
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 2, Instant::from_nanos(110 * SECOND + 1))
            .unwrap()
            .allowed
    );
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 10_000), "{ttl}");
    // By the server's clock: 2 admitted, the 3rd denied within the period.
    let limiter =
        RedisLimiter::new(&Config::sliding_log(2, Duration::from_secs(1)), "clock:").unwrap();
    for _ in 0..2 {
        assert!(limiter.acquire(&mut redis, b"k", 1).unwrap().allowed);
    }
    let denied = limiter.acquire(&mut redis, b"k", 1).unwrap();
    assert!(!denied.allowed && denied.retry_after_ns <= SECOND);
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(ttl > 0 && ttl <= 1000, "{ttl}");
}

/// Periods of 2^53 ns or more are refused; any number of positions is fine (the script
/// keeps them modulo L), so 2^20 per 2 ms works as in process. A key holding anything but
/// a log the script wrote is an error naming it.
#[test]
fn sliding_log_bounds_and_foreign_state() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let not_exact = ConfigError::NotExactOnRedis;
    for (period, refused) in [(1 << 53, Some(not_exact)), ((1 << 53) - 1, None)] {
        let made = RedisLimiter::new(&Config::sliding_log(1, Duration::from_nanos(period)), "x");
        assert_eq!(made.err(), refused);
    }
    let config = Config::sliding_log(1 << 20, Duration::from_millis(2));
    let local = Limiter::new(&config).unwrap();
    let remote = RedisLimiter::new(&config, "dense:").unwrap();
    for (n, now) in [(1 << 20, u64::MAX - MS), (5, u64::MAX - 1), (7, u64::MAX)] {
        let want = local.acquire_at(n, Instant::from_nanos(now)).unwrap();
        assert_eq!(
            remote
                .acquire_at(&mut redis, b"k", n, Instant::from_nanos(now))
                .unwrap(),
            want
        );
    }

    let limiter =
        RedisLimiter::new(&Config::sliding_log(3, Duration::from_secs(1)), "foreign:").unwrap();
    assert!(
        limiter
            .acquire_at(&mut redis, b"good", 2, Instant::from_nanos(SECOND))
            .unwrap()
            .allowed
    );
    let good: Vec<u8> = redis::cmd("GET")
        .arg(limiter.redis_key(b"good"))
        .query(&mut redis)
        .unwrap();
    assert_eq!(good.len(), 13 + 2 * 9);
    let mut bad_ns = good.clone();
    bad_ns[13 + 5..13 + 9].copy_from_slice(&1_000_000_000u32.to_be_bytes());
    let mut bad_head = good.clone();
    bad_head[..4].copy_from_slice(&6u32.to_be_bytes());
    let mut long = good.clone();
    long.push(0);
    let values: [&[u8]; 6] = [
        b"",
        b"12345",
        b"1234567890123456789012",
        &bad_ns,
        &bad_head,
        &long,
    ];
    for (index, value) in values.iter().enumerate() {
        let name = format!("bad{index}");
        redis::cmd("SET")
            .arg(limiter.redis_key(name.as_bytes()))
            .arg(*value)
            .query::<()>(&mut redis)
            .unwrap();
        // bad_ns (slot 0's nanoseconds) is found when the denial reads that slot.
        let error = limiter
            .acquire_at(&mut redis, name.as_bytes(), 2, Instant::from_nanos(SECOND))
            .unwrap_err();
        assert!(
            error.to_string().contains("holds no sliding log state"),
            "{index}: {error}"
        );
    }
    redis::cmd("HSET")
        .arg(limiter.redis_key(b"hash"))
        .arg("head")
        .arg(1)
        .query::<()>(&mut redis)
        .unwrap();
    let error = limiter
        .acquire_at(&mut redis, b"hash", 1, Instant::ZERO)
        .unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
}
