//! The Redis tier's fixed window and sliding window counter (docs/decision.md, docs/redis.md)
//! against a real `redis-server` the test starts on a loopback port: each algorithm's doc example
//! by hand; the same decisions as the in-process limiter, field for field, for random
//! configurations and times; the server's clock; expiry; and states of another shape.

mod common;

use common::redis_replay::{replay, MAX_STATE};
use common::redis_server::server;
use common::{Rng, MS, SECOND};
use librate::redis::{RedisError, RedisLimiter};
use librate::{Algorithm, Config, ConfigError, Decision, Instant, Limiter};
use std::time::Duration;

/// The fixed window's doc example (src/algorithm/fixed_window.rs) on Redis: 2 per minute;
/// 0:24 and 0:36 admitted, 0:49 denied until 1:00, 1:12 admitted.
#[test]
fn fixed_window_doc_example() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter =
        RedisLimiter::new(&Config::fixed_window(2, Duration::from_secs(60)), "fixed:").unwrap();
    let mut at = |seconds: u64| {
        in_seconds(
            2,
            limiter.acquire_at(&mut redis, b"k", 1, Instant::from_nanos(seconds * SECOND)),
        )
    };
    // (allowed, remaining, retry_after, reset_after). Window [0, 60 s): reset at 1:00.
    assert_eq!(at(24), (true, 1, 0, 36));
    assert_eq!(at(36), (true, 0, 0, 24));
    assert_eq!(at(49), (false, 0, 11, 11));
    // Window [60 s, 120 s).
    assert_eq!(at(72), (true, 1, 0, 48));
    // Back to 0:50, an older window: decided at 1:00, the start of the latest one.
    assert_eq!(at(50), (true, 0, 0, 70));
    assert_eq!(at(50), (false, 0, 70, 70));
    assert_eq!(stored(&mut redis, &limiter), window_state(60, 0, &[2]));
}

/// The sliding window counter's doc example (src/algorithm/sliding_window.rs) on Redis:
/// 10 per minute, 9 admitted at 0:30; at 1:15 the previous 9 weigh 9·45/60 = 6.75, so 3
/// more fit, not 4.
#[test]
fn sliding_window_doc_example() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter = RedisLimiter::new(
        &Config::sliding_window(10, Duration::from_secs(60)),
        "sliding:",
    )
    .unwrap();
    let mut at = |n, seconds: u64| {
        in_seconds(
            10,
            limiter.acquire_at(&mut redis, b"k", n, Instant::from_nanos(seconds * SECOND)),
        )
    };
    // (allowed, remaining, retry_after, reset_after). Window 0: nothing before it. Both
    // counts are 0 again at 2:00.
    assert_eq!(at(9, 30), (true, 1, 0, 90));
    // Window 1, 15 s in: ⌈9·45/60⌉ = 7 weigh; 0 counted, so full again at 2:00.
    assert_eq!(at(0, 75), (true, 3, 0, 45));
    // 4 fit once 9·(60 − e)/60 ≤ 6, at e = 20 s: 1:20.
    assert_eq!(at(4, 75), (false, 3, 5, 45));
    // 3 fit; with 3 counted in window 1, both counts are 0 at 3:00.
    assert_eq!(at(3, 75), (true, 0, 0, 105));
    assert_eq!(stored(&mut redis, &limiter), window_state(60, 0, &[3, 9]));
}

/// A decision of the doc examples, with limit `limit` and no wait: (allowed, remaining,
/// retry_after, reset_after), the durations in whole seconds.
fn in_seconds(limit: u64, decision: Result<Decision, RedisError>) -> (bool, u64, u64, u64) {
    let decision = decision.unwrap();
    assert_eq!((decision.limit, decision.wait_ns), (limit, 0));
    assert_eq!(decision.retry_after_ns % SECOND, 0);
    assert_eq!(decision.reset_after_ns % SECOND, 0);
    (
        decision.allowed,
        decision.remaining,
        decision.retry_after_ns / SECOND,
        decision.reset_after_ns / SECOND,
    )
}

/// The state Redis holds for `k`.
fn stored(redis: &mut redis::Connection, limiter: &RedisLimiter) -> Vec<u8> {
    redis::cmd("GET")
        .arg(limiter.redis_key(b"k"))
        .query(redis)
        .unwrap()
}

/// A window state as the README describes it: the window's start as seconds (5 bytes)
/// and nanoseconds (4), then each count (7 bytes), big-endian.
fn window_state(seconds: u64, nanoseconds: u32, counts: &[u64]) -> Vec<u8> {
    let mut state = seconds.to_be_bytes()[3..].to_vec();
    state.extend_from_slice(&nanoseconds.to_be_bytes());
    for count in counts {
        state.extend_from_slice(&count.to_be_bytes()[1..]);
    }
    state
}

/// Random fixed window and sliding window configurations over the whole range the Redis
/// tier accepts, periods of a few ns, near 2¹¹ ns, of ms to minutes and just below 2⁵³ ns,
/// limits from 1 to the largest the period allows: every decision, and every refusal, is
/// the in-process limiter's ([`replay`]). A configuration either tier rejects, both reject
/// alike (past 2⁵³ ns, Redis alone, as not exact).
#[test]
fn windows_decide_as_the_in_process_limiter() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let mut rng = Rng::new(2024);
    let mut replayed = 0;
    for case in 0..400 {
        let algorithm = if case % 2 == 0 {
            Algorithm::FixedWindow
        } else {
            Algorithm::SlidingWindow
        };
        let period = match rng.below(7) {
            0 => rng.range(1, 64),
            1 => rng.range(1 << 10, 1 << 12),
            2 => rng.range(MS, 100 * SECOND),
            // Whole seconds, and divisors of a second: the scripts' shortcuts.
            3 => SECOND * rng.range(1, 100_000),
            4 => SECOND / [1, 2, 4, 5, 10, 1_000, 1_000_000, 1_000_000_000][rng.below(8) as usize],
            // Whole seconds on either side of 2⁵² ns, where the shortcuts stop.
            5 => SECOND * ((1 << 52) / SECOND + rng.below(2)),
            _ => EXACT - rng.range(1, 1 << 20) + u64::from(rng.chance(5)),
        };
        let Some(largest) = largest_window_limit(period) else {
            assert!(RedisLimiter::new(
                &Config::new(algorithm, 1, Duration::from_nanos(period)),
                "x"
            )
            .is_err());
            continue;
        };
        let limit = match rng.below(4) {
            0 => rng.range(1, 20.min(largest)),
            1 => largest - rng.below(2.min(largest)),
            _ => rng.range(1, largest),
        }
        // Sometimes one past the bound: rejected alike.
        .saturating_add(u64::from(rng.chance(3)));
        let config = Config::new(algorithm, limit, Duration::from_nanos(period));
        match (Limiter::new(&config), RedisLimiter::new(&config, "x")) {
            (Ok(_), Ok(_)) => {}
            (Ok(_), Err(error)) => {
                assert!(period >= EXACT, "{config:?}");
                assert_eq!(error, ConfigError::NotExactOnRedis);
                continue;
            }
            (Err(want), got) => {
                assert_eq!(got.err(), Some(want), "{config:?}");
                continue;
            }
        }
        replay(&mut redis, &config, case, &mut rng);
        replayed += 1;
    }
    assert!(replayed > 300, "{replayed}");
}

/// 2⁵³: the Redis tier's bound on a window's period, and on GCRA's tolerance.
const EXACT: u64 = 1 << 53;

/// The largest limit a window of `period_ns` takes in process (`Algorithm::FixedWindow`'s
/// bound: `⌊(2⁶⁴−1)/P⌋ · 2^bits(L) + L ≤ 2⁶⁴ − 257`), if any.
fn largest_window_limit(period_ns: u64) -> Option<u64> {
    let last_index = u128::from(u64::MAX / period_ns);
    (1..64).rev().find_map(|bits| {
        let limit = (1u64 << bits) - 1;
        ((last_index << bits) + u128::from(limit) <= u128::from(MAX_STATE)).then_some(limit)
    })
}

/// The window counters on the server's clock: with P = 2⁵³ − 1 ns (104 days, so no window
/// edge passes during the test), 3 admitted, the 4th denied until within two periods, and
/// the key kept for at most two periods.
#[test]
fn windows_on_the_servers_clock() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let period = EXACT - 1;
    for config in [
        Config::fixed_window(3, Duration::from_nanos(period)),
        Config::sliding_window(3, Duration::from_nanos(period)),
    ] {
        let limiter = RedisLimiter::new(&config, format!("{:?}:", config.algorithm)).unwrap();
        for remaining in [2, 1, 0] {
            let admitted = limiter.acquire(&mut redis, b"k", 1).unwrap();
            assert_eq!((admitted.allowed, admitted.remaining), (true, remaining));
        }
        let denied = limiter.acquire(&mut redis, b"k", 1).unwrap();
        assert!(!denied.allowed);
        assert!(denied.retry_after_ns > 0 && denied.retry_after_ns <= 2 * period);
        let ttl = pttl(&mut redis, &limiter, b"k");
        assert!(ttl > 0 && ttl <= (2 * period).div_ceil(MS) as i64, "{ttl}");
    }
}

/// After an admission at an explicit time, a window key lives until nothing is counted in
/// the window of now or the one before (docs/keyed.md, reclaim). P = 1 s: admitted at 1000.3 s, in
/// the window [1000 s, 1001 s), the key lives until 1002 s on the caller's timeline; an
/// admission at 1001.9 s moves it to 1003 s.
#[test]
fn window_keys_expire_when_fresh() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    for config in [
        Config::fixed_window(2, Duration::from_secs(1)),
        Config::sliding_window(2, Duration::from_secs(1)),
    ] {
        let limiter = RedisLimiter::new(&config, format!("{:?}:", config.algorithm)).unwrap();
        // Whether n units were admitted at `ms` on the caller's timeline, and the key's PTTL
        // then, rounded up to 100 ms (the real time since the script takes it below the
        // time left on the caller's timeline).
        let mut at = |n, ms: u64| {
            let allowed = limiter
                .acquire_at(&mut redis, b"k", n, Instant::from_nanos(ms * MS))
                .unwrap()
                .allowed;
            let ttl = pttl(&mut redis, &limiter, b"k");
            (allowed, (ttl + 99) / 100 * 100)
        };
        assert_eq!(at(1, 1_000_300), (true, 1_700));
        // An older window is decided at 1000 s: counted there, kept until 1002 s, which is
        // 3 s after 999 s; a denial and a query change nothing.
        assert_eq!(at(1, 999_000), (true, 3_000));
        assert_eq!(at(1, 1_000_500), (false, 3_000));
        assert_eq!(at(0, 1_000_600), (true, 3_000));
        // Window [1001 s, 1002 s): the 2 of 1000 s weigh ⌈2·0.1⌉ = 1 on the sliding window,
        // so 1 fits on both.
        assert_eq!(at(1, 1_001_900), (true, 1_100));
        // A query writes nothing.
        limiter
            .acquire_at(&mut redis, b"query", 0, Instant::from_nanos(SECOND))
            .unwrap();
        assert_eq!(pttl(&mut redis, &limiter, b"query"), -2);
    }
}

/// A key holding anything its script does not write (another algorithm's state, text, a
/// start that is no window's or lies past the timeline, nanoseconds past a second, no
/// count, a count above the limit, a byte too many) is an error naming the key, and is
/// left as it was; a key of another type is Redis's own error.
#[test]
fn window_state_of_another_shape_is_an_error() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let minute = 60 * SECOND;
    let fixed = RedisLimiter::new(
        &Config::fixed_window(2, Duration::from_nanos(minute)),
        "fixed:",
    )
    .unwrap();
    let sliding = RedisLimiter::new(
        &Config::sliding_window(2, Duration::from_nanos(minute)),
        "sliding:",
    )
    .unwrap();
    let gcra = RedisLimiter::new(&Config::gcra(2, Duration::from_nanos(minute)), "gcra:").unwrap();
    // Text, for every algorithm.
    let text: [&[u8]; 4] = [b"", b"12ab", b"60000000000 1", b"60000000000 1 0"];
    // 2^64 ns is 18446744073 s and 709551616 ns: no u64 instant.
    let past_end = window_state(18_446_744_073, 709_551_616, &[]);
    let gcra_state = window_state(60, 0, &[]);
    let cases: [(&RedisLimiter, &str, Vec<Vec<u8>>); 3] = [
        (
            &fixed,
            "fixed window",
            vec![
                gcra_state.clone(),
                window_state(60, 0, &[1, 0]), // a sliding window's
                window_state(60, 1, &[1]),    // no window's start
                window_state(59, 1_000_000_000, &[1]), // nanoseconds past a second
                window_state(60, 0, &[0]),    // nothing counted
                window_state(60, 0, &[3]),    // more than L
                window_state(18_446_744_100, 0, &[1]), // the first window past the timeline
                [&past_end[..], &[0, 0, 0, 0, 0, 0, 1]].concat(),
                [&window_state(60, 0, &[1])[..], &[0]].concat(), // a byte too many
            ],
        ),
        (
            &sliding,
            "sliding window",
            vec![
                gcra_state.clone(),
                window_state(60, 0, &[1]), // a fixed window's
                window_state(60, 0, &[1, 0, 0]),
                window_state(60, 1, &[1, 0]),
                window_state(60, 0, &[0, 0]),
                window_state(60, 0, &[3, 0]),
                window_state(60, 0, &[1, 3]), // a previous count above L
                window_state(18_446_744_100, 0, &[1, 0]),
            ],
        ),
        (
            &gcra,
            "GCRA",
            vec![
                window_state(60, 0, &[1]),
                window_state(60, 0, &[1, 0]),
                window_state(59, 1_000_000_000, &[]),
                past_end,
            ],
        ),
    ];
    for (limiter, name, wrong) in cases {
        // The script reads back what it wrote.
        assert!(limiter
            .acquire_at(&mut redis, b"own", 1, Instant::from_nanos(minute))
            .is_ok());
        assert!(limiter
            .acquire_at(&mut redis, b"own", 1, Instant::from_nanos(minute))
            .is_ok());
        for value in text.iter().map(|text| text.to_vec()).chain(wrong) {
            let key = limiter.redis_key(b"k");
            redis::cmd("SET")
                .arg(&key)
                .arg(&value)
                .query::<()>(&mut redis)
                .unwrap();
            let error = limiter
                .acquire_at(&mut redis, b"k", 1, Instant::from_nanos(minute))
                .unwrap_err();
            let message = error.to_string();
            assert!(
                matches!(&error, RedisError::Redis(_))
                    && message.contains(&*String::from_utf8_lossy(&key))
                    && message.contains(&format!("holds no {name} state")),
                "{name} {value:?}: {error}"
            );
            let kept: Vec<u8> = redis::cmd("GET").arg(&key).query(&mut redis).unwrap();
            assert_eq!(kept, value);
        }
    }
    redis::cmd("RPUSH")
        .arg(sliding.redis_key(b"list"))
        .arg("x")
        .query::<()>(&mut redis)
        .unwrap();
    let error = sliding
        .acquire_at(&mut redis, b"list", 1, Instant::ZERO)
        .unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
}

/// The key's `PTTL` in ms: -2 when it does not exist, -1 when it never expires.
fn pttl(redis: &mut redis::Connection, limiter: &RedisLimiter, key: &[u8]) -> i64 {
    redis::cmd("PTTL")
        .arg(limiter.redis_key(key))
        .query(redis)
        .unwrap()
}
