//! The Redis tier (docs/redis.md) against a real `redis-server` the test starts on a loopback
//! port: GCRA's decisions, the same as the in-process limiter's field for field for the
//! same times; the server's clock; script reloads; expiry; and every failure an error.
//! The window counters are in `redis_windows.rs`.

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use common::peer_vectors::{self, Decide};
use common::redis_replay::replay;
use common::redis_server::{server, RedisServer};
use common::{refused, Rng, MS, SECOND};
use librate::redis::{RedisError, RedisLimiter};
use librate::{
    Algorithm, Config, ConfigError, Decision, Instant, InsufficientCapacity, ReserveError,
};

/// The seed scenario of docs/decision.md on Redis with explicit times: L = 1, P = 2 s, B = 1. Bob
/// is admitted at 0 ms, denied at 999 and 1000 ms, admitted at 2001 ms; Alice is independent.
#[test]
fn seed_scenario() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::gcra(1, Duration::from_secs(2)), "seed:").unwrap();
    let at = |redis: &mut redis::Connection, key: &[u8], ms: u64| {
        limiter
            .acquire_at(redis, key, 1, Instant::from_nanos(ms * MS))
            .unwrap()
    };
    let bob = at(&mut redis, b"bob", 0);
    assert_eq!(
        bob,
        Decision {
            allowed: true,
            limit: 1,
            remaining: 0,
            retry_after_ns: 0,
            reset_after_ns: 2 * SECOND,
            wait_ns: 0,
        }
    );
    // TAT 2 s: at 999 ms the request is due at 2 s + T − τ = 2 s.
    let denied = at(&mut redis, b"bob", 999);
    assert!(!denied.allowed);
    assert_eq!(denied.retry_after_ns, 1001 * MS);
    assert_eq!(denied.reset_after_ns, 1001 * MS);
    assert_eq!(at(&mut redis, b"bob", 1000).retry_after_ns, 1000 * MS);
    assert!(at(&mut redis, b"alice", 1000).allowed);
    assert!(at(&mut redis, b"bob", 2001).allowed);
}

/// The peers' published vectors (`tests/common/peer_vectors.rs`), through Redis: each
/// limiter under a prefix of its own on one connection.
#[test]
fn peer_vectors_through_redis() {
    let Some((_server, redis)) = server() else {
        return;
    };
    let redis = Rc::new(RefCell::new(redis));
    let serial = Cell::new(0);
    let mut through_redis = |config: &Config| -> Decide {
        serial.set(serial.get() + 1);
        let limiter = RedisLimiter::new(config, format!("peer:{}:", serial.get())).unwrap();
        let redis = Rc::clone(&redis);
        Box::new(move |n, at| {
            match limiter.acquire_at(&mut *redis.borrow_mut(), b"k", n, Instant::from_nanos(at)) {
                Ok(decision) => Ok(decision),
                Err(RedisError::Rate(error)) => Err(refused(error)),
                Err(error) => panic!("{error}"),
            }
        })
    };
    peer_vectors::throttled_rate_limit(&mut through_redis);
    peer_vectors::x_time_rate_burst(&mut through_redis);
    peer_vectors::x_time_rate_jump_backwards(&mut through_redis);
    peer_vectors::redis_cell_throttle(&mut through_redis);
}

/// Random GCRA configurations: every decision, and every refusal, is the in-process
/// limiter's ([`replay`]).
#[test]
fn decides_as_the_in_process_limiter() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let mut rng = Rng::new(53);
    for case in 0..250 {
        let limit = rng.range(1, 20);
        let burst = if rng.chance(50) { 0 } else { rng.range(1, 40) };
        let period = if case < 200 {
            rng.range(limit, 10 * SECOND)
        } else {
            // A tolerance B·T on either side of 2⁵², where the script leaves plain
            // numbers for instants, up to the 2⁵³ it accepts.
            let burst = if burst == 0 { limit } else { burst };
            rng.range((1 << 51) / burst, ((1 << 53) - 1) / burst) * limit
        };
        replay(
            &mut redis,
            &Config::gcra(limit, Duration::from_nanos(period)).with_burst(burst),
            case,
            &mut rng,
        );
    }
}

/// Without a time, the server's clock decides: a burst of 3 admits 3 at once and denies
/// the 4th, due within a second; the key then expires when the bucket is full again.
#[test]
fn the_servers_clock_decides_and_keys_expire_when_fresh() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::per_second(3), "clock:").unwrap();
    for _ in 0..3 {
        assert!(limiter.acquire(&mut redis, b"k", 1).unwrap().allowed);
    }
    let denied = limiter.acquire(&mut redis, b"k", 1).unwrap();
    assert!(!denied.allowed);
    assert!(denied.retry_after_ns > 0 && denied.retry_after_ns <= SECOND / 3);
    let ttl: i64 = redis::cmd("PTTL")
        .arg(limiter.redis_key(b"k"))
        .query(&mut redis)
        .unwrap();
    assert!(ttl > 0 && ttl <= 1000, "{ttl}");
    // At an explicit time, the key lives exactly until its TAT: 1 unit of T = 1/3 s.
    limiter
        .acquire_at(&mut redis, b"at", 1, Instant::from_nanos(1_000 * SECOND))
        .unwrap();
    let ttl: i64 = redis::cmd("PTTL")
        .arg(limiter.redis_key(b"at"))
        .query(&mut redis)
        .unwrap();
    assert!(ttl > 300 && ttl <= 334, "{ttl}");
    // A query writes nothing.
    limiter
        .acquire_at(&mut redis, b"query", 0, Instant::from_nanos(SECOND))
        .unwrap();
    let exists: u64 = redis::cmd("EXISTS")
        .arg(limiter.redis_key(b"query"))
        .query(&mut redis)
        .unwrap();
    assert_eq!(exists, 0);
}

/// After `SCRIPT FLUSH` (as after a Redis restart) the script is loaded again unasked.
#[test]
fn a_flushed_script_is_loaded_again() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::per_second(2), "flush:").unwrap();
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
            .unwrap()
            .allowed
    );
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query::<()>(&mut redis)
        .unwrap();
    let second = limiter
        .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
        .unwrap();
    assert_eq!((second.allowed, second.remaining), (true, 0));
}

/// A batch decides each key as single calls on the same states do, in one round trip;
/// a key holding something else fails alone; after `SCRIPT FLUSH` the batch still runs.
#[test]
fn a_batch_decides_as_single_calls() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let config = Config::per_second(3);
    let batched = RedisLimiter::new(&config, "batch:").unwrap();
    let single = RedisLimiter::new(&config, "single:").unwrap();
    let keys: Vec<Vec<u8>> = (0..20u8).map(|k| vec![b'k', k % 7]).collect();
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    for (round, now) in [0, 0, SECOND / 10, 5 * SECOND].into_iter().enumerate() {
        if round == 2 {
            redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query::<()>(&mut redis)
                .unwrap();
        }
        let decisions = batched
            .acquire_batch_at(&mut redis, &keys, 1, Instant::from_nanos(now))
            .unwrap();
        for (key, decision) in keys.iter().zip(decisions) {
            let want = single
                .acquire_at(&mut redis, key, 1, Instant::from_nanos(now))
                .unwrap();
            assert_eq!(decision.unwrap(), want, "round {round}");
        }
    }
    let list = batched.redis_key(b"list");
    redis::cmd("RPUSH")
        .arg(&list)
        .arg("x")
        .query::<()>(&mut redis)
        .unwrap();
    let mixed = batched
        .acquire_batch_at(&mut redis, &[b"fresh", b"list"], 1, Instant::ZERO)
        .unwrap();
    assert!(mixed[0].as_ref().unwrap().allowed);
    assert!(
        matches!(mixed[1], Err(RedisError::Redis(_))),
        "{:?}",
        mixed[1]
    );
    assert!(matches!(
        batched.acquire_batch_at(&mut redis, &keys, 4, Instant::ZERO),
        Err(RedisError::Rate(ReserveError::Acquire(
            InsufficientCapacity
        )))
    ));
}

/// A batch is one script call for every algorithm, the list key among its keys failing
/// alone, and the others admitted as fresh keys are.
#[test]
fn a_batch_is_one_script_call() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    for (index, config) in [
        Config::per_second(3),
        Config::fixed_window(3, Duration::from_secs(1)),
        Config::sliding_window(3, Duration::from_secs(1)),
        Config::sliding_log(3, Duration::from_secs(1)),
    ]
    .iter()
    .enumerate()
    {
        let limiter = RedisLimiter::new(config, format!("one-call:{index}:")).unwrap();
        redis::cmd("RPUSH")
            .arg(limiter.redis_key(b"list"))
            .arg("x")
            .query::<()>(&mut redis)
            .unwrap();
        // Loads the script, so the count below is the batch's alone.
        limiter
            .acquire_at(&mut redis, b"a", 0, Instant::from_nanos(SECOND))
            .unwrap();
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query::<()>(&mut redis)
            .unwrap();
        let keys: [&[u8]; 5] = [b"a", b"b", b"list", b"c", b"d"];
        let decisions = limiter
            .acquire_batch_at(&mut redis, &keys, 2, Instant::from_nanos(SECOND))
            .unwrap();
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut redis)
            .unwrap();
        assert!(
            stats.contains("cmdstat_evalsha:calls=1,"),
            "{config:?}: {stats}"
        );
        for (key, decision) in keys.iter().zip(decisions) {
            if *key == b"list" {
                assert!(matches!(decision, Err(RedisError::Redis(_))), "{config:?}");
            } else {
                let decision = decision.unwrap();
                assert_eq!(
                    (decision.allowed, decision.remaining),
                    (true, 1),
                    "{config:?}"
                );
            }
        }
    }
}

/// A Redis that dies mid-run: calls fail (never admit) while it is down; once it is back
/// (empty, its scripts gone), a new connection decides again, the script loaded anew.
#[test]
fn a_restarted_server_is_used_again() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::per_second(1), "restart:").unwrap();
    let mut redis = server.connection();
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
            .unwrap()
            .allowed
    );
    server.stop();
    for _ in 0..3 {
        let error = limiter
            .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
            .unwrap_err();
        assert!(matches!(error, RedisError::Redis(_)), "{error}");
    }
    server.restart();
    let mut redis = server.connection();
    // The restarted server lost the key: the bucket is full again.
    let decision = limiter
        .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
        .unwrap();
    assert_eq!((decision.allowed, decision.remaining), (true, 0));
    assert!(
        !limiter
            .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
            .unwrap()
            .allowed
    );
}

/// Refusals before Redis, and Redis's own errors, are errors: never an admission.
#[test]
fn failures_are_errors() {
    let Some((server, mut redis)) = server() else {
        return;
    };
    assert!(matches!(
        RedisLimiter::new(&Config::gcra(1, Duration::from_nanos(1 << 53)), "x"),
        Err(ConfigError::NotExactOnRedis)
    ));
    assert!(RedisLimiter::new(&Config::gcra(1, Duration::from_nanos((1 << 53) - 1)), "x").is_ok());
    // A rule that never refills has no script, even where a bucket refilling once per
    // 2⁶⁴/L ns would hold its numbers exactly (L = 2²⁰, burst 1: τ = 2⁴⁴).
    assert!(matches!(
        RedisLimiter::new(&Config::gcra(1 << 20, Config::FOREVER).with_burst(1), "x"),
        Err(ConfigError::NotExactOnRedis)
    ));
    for algorithm in [Algorithm::FixedWindow, Algorithm::SlidingWindow] {
        assert!(matches!(
            RedisLimiter::new(
                &Config::new(algorithm, 1, Duration::from_nanos(1 << 53)),
                "x"
            ),
            Err(ConfigError::NotExactOnRedis)
        ));
        assert!(RedisLimiter::new(
            &Config::new(algorithm, 1, Duration::from_nanos((1 << 53) - 1)),
            "x"
        )
        .is_ok());
        // A reserve, even one that would not wait, is refused as in process.
        let windows =
            RedisLimiter::new(&Config::new(algorithm, 2, Duration::from_secs(1)), "x").unwrap();
        assert!(matches!(
            windows.reserve_at(&mut redis, b"k", 1, Instant::ZERO, Duration::ZERO),
            Err(RedisError::Rate(ReserveError::Unsupported))
        ));
    }
    assert!(matches!(
        RedisLimiter::new(&Config::per_second(0), "x"),
        Err(ConfigError::ZeroLimit)
    ));
    let limiter = RedisLimiter::new(&Config::per_second(2), "fail:").unwrap();
    assert!(matches!(
        limiter.acquire_at(&mut redis, b"k", 3, Instant::ZERO),
        Err(RedisError::Rate(ReserveError::Acquire(
            InsufficientCapacity
        )))
    ));
    // A key holding a list, and one holding a string that is no TAT.
    let key = limiter.redis_key(b"list");
    redis::cmd("RPUSH")
        .arg(&key)
        .arg("x")
        .query::<()>(&mut redis)
        .unwrap();
    let error = limiter
        .acquire_at(&mut redis, b"list", 1, Instant::ZERO)
        .unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
    let key = limiter.redis_key(b"text");
    redis::cmd("SET")
        .arg(&key)
        .arg("12ab")
        .query::<()>(&mut redis)
        .unwrap();
    let error = limiter
        .acquire_at(&mut redis, b"text", 1, Instant::ZERO)
        .unwrap_err();
    assert!(error.to_string().contains("holds no GCRA state"), "{error}");
    // The server gone: the call fails within the connection's timeout.
    let url = server.url();
    drop(server);
    let client = redis::Client::open(url).unwrap();
    assert!(client
        .get_connection_with_timeout(Duration::from_millis(200))
        .is_err());
    let error = limiter
        .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
        .unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
}

/// 4 processes × 4 connections take units of 10 keys at one frozen time until every key
/// is denied: exactly the limit per key is admitted between them, for every algorithm.
#[test]
fn processes_on_one_server_admit_exactly_the_limit() {
    use common::processes::in_processes;
    let Some((server, _redis)) = server() else {
        return;
    };
    let configs = [
        Config::per_second(5),
        Config::fixed_window(5, Duration::from_secs(1)),
        Config::sliding_window(5, Duration::from_secs(1)),
        Config::sliding_log(5, Duration::from_secs(1)),
    ];
    for (index, config) in configs.iter().enumerate() {
        let limiter = RedisLimiter::new(config, format!("hammer:{index}:")).unwrap();
        let admitted = in_processes(4, |_| {
            let total: u64 = std::thread::scope(|scope| {
                let threads: Vec<_> = (0..4)
                    .map(|thread| {
                        let (limiter, server) = (&limiter, &server);
                        scope.spawn(move || {
                            let mut redis = server.connection();
                            let mut admitted = 0;
                            for i in 0..80u64 {
                                let key = format!("user-{}", (i + thread) % 10);
                                let decision = limiter.acquire_at(
                                    &mut redis,
                                    key.as_bytes(),
                                    1,
                                    Instant::from_nanos(7 * SECOND),
                                );
                                admitted += u64::from(decision.unwrap().allowed);
                            }
                            admitted
                        })
                    })
                    .collect();
                threads.into_iter().map(|t| t.join().unwrap()).sum()
            });
            total as u8
        });
        let total: u64 = admitted.iter().map(|&n| u64::from(n)).sum();
        assert_eq!(total, 50, "{config:?}: {admitted:?}");
    }
}

/// Counts (docs/metrics.md): this handle's requests, each counted once; a batch's each
/// key. A fixed window of 2 a minute, every request at time 0.
#[test]
fn a_redis_limiter_counts_its_requests() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter =
        RedisLimiter::new(&Config::fixed_window(2, Duration::from_secs(60)), "counts:").unwrap();
    let t0 = Instant::ZERO;
    limiter.acquire_at(&mut redis, b"ann", 1, t0).unwrap();
    assert_eq!(limiter.counts(), None, "off until asked for");
    limiter.enable_counts();
    assert!(
        limiter
            .acquire_at(&mut redis, b"ann", 1, t0)
            .unwrap()
            .allowed
    );
    assert!(
        !limiter
            .acquire_at(&mut redis, b"ann", 1, t0)
            .unwrap()
            .allowed
    );
    assert!(
        limiter
            .acquire_at(&mut redis, b"ann", 0, t0)
            .unwrap()
            .allowed
    ); // a query
    let keys: [&[u8]; 3] = [b"ann", b"bob", b"bob"];
    let batch = limiter.acquire_batch_at(&mut redis, &keys, 1, t0).unwrap();
    let admitted: Vec<bool> = batch.iter().map(|d| d.as_ref().unwrap().allowed).collect();
    assert_eq!(admitted, [false, true, true]);
    let counts = limiter.counts().unwrap();
    assert_eq!(
        (counts.admitted, counts.denied, counts.table_full),
        (3, 2, 0)
    );
}
