//! The Redis tier (DESIGN §8) against a real `redis-server` the test starts on a loopback
//! port: the same decisions as the in-process limiter, field for field, for the same
//! times; the server's clock; script reloads; expiry; and every failure an error.
#![cfg(feature = "redis")]

mod common;

use std::time::Duration;

use common::redis_server::RedisServer;
use common::{Rng, SECOND};
use rate::redis::{RedisError, RedisLimiter};
use rate::{Config, ConfigError, Decision, Error, Limiter};

const MS: u64 = 1_000_000;
/// The largest state a limiter stores (DESIGN §2): 2^64 − 257.
const MAX_STATE: u64 = u64::MAX - 256;

fn server() -> Option<(RedisServer, redis::Connection)> {
    let server = RedisServer::start()?;
    let connection = server.connection();
    Some((server, connection))
}

/// DESIGN §4's seed scenario on Redis with explicit times: L = 1, P = 2 s, B = 1. Bob is
/// admitted at 0 ms, denied at 999 and 1000 ms, admitted at 2001 ms; Alice is independent.
#[test]
fn seed_scenario() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::gcra(1, 2 * SECOND), "seed:").unwrap();
    let at = |redis: &mut redis::Connection, key: &[u8], ms: u64| {
        limiter.acquire_at(redis, key, 1, ms * MS).unwrap()
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

/// Random configurations, costs, reserves and times that jump both ways (near 0, near
/// the end of the timeline, anywhere): every decision, and every refusal, is the
/// in-process limiter's.
#[test]
fn decides_as_the_in_process_limiter() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let mut rng = Rng::new(53);
    for case in 0..200u64 {
        let limit = rng.range(1, 20);
        let period = rng.range(limit, 10 * SECOND);
        let burst = if rng.chance(50) { 0 } else { rng.range(1, 40) };
        let config = Config::gcra(limit, period).with_burst(burst);
        let most = config_burst(&config);
        replay(&mut redis, &mut rng, &config, case, |rng| {
            let n = rng.below(most + 2);
            let max_wait = match rng.below(4) {
                0 => 0,
                1 => u64::MAX - rng.below(2),
                _ => rng.below(3 * period),
            };
            (n, Some(max_wait))
        });
    }
}

/// Replays 100 requests on one key of `config` through the in-process limiter and through
/// Redis, and asserts that every decision and every refusal is the same. Times start at a
/// base chosen by `case` (0, small, near the end of the timeline, anywhere) and then step
/// forward, jump back, return near the base, reach the end of the timeline, or land on
/// the last decision's retry or reset (±1 ns). `request` gives each request's cost and
/// wait (`None`: an acquire).
fn replay(
    redis: &mut redis::Connection,
    rng: &mut Rng,
    config: &Config,
    case: u64,
    mut request: impl FnMut(&mut Rng) -> (u64, Option<u64>),
) {
    let mut local = Limiter::new(config).unwrap();
    let remote = RedisLimiter::new(config, format!("model:{case}:")).unwrap();
    let period = config.period_ns;
    let base = match case % 4 {
        0 => 0,
        1 => rng.range(0, 1 << 40),
        2 => MAX_STATE - rng.range(0, 20 * SECOND),
        _ => rng.next_u64(),
    };
    let mut now = base;
    let mut last = Decision::default();
    for step in 0..100 {
        now = match rng.below(10) {
            0 => now.saturating_sub(rng.below(2 * period)),
            1 => base.saturating_add(rng.below(4 * period)),
            2 => u64::MAX - rng.below(3),
            3 => now.saturating_add(last.retry_after_ns),
            4 => now.saturating_add(last.reset_after_ns),
            _ => now.saturating_add(rng.below(period)),
        };
        if rng.chance(30) {
            now = (now.saturating_add(rng.below(3))).saturating_sub(1);
        }
        let (n, max_wait) = request(rng);
        let mut kept = Kept {
            connection: redis,
            key: remote.redis_key(b"k"),
            persisted: false,
        };
        let (want, got) = match max_wait {
            Some(wait) => (
                local.reserve_at(n, now, wait),
                remote.reserve_at(&mut kept, b"k", n, now, wait),
            ),
            None => (
                local.acquire_at(n, now),
                remote.acquire_at(&mut kept, b"k", n, now),
            ),
        };
        match (want, got) {
            (Ok(want), Ok(got)) => {
                assert_eq!(got, want, "{config:?} step {step} n {n} at {now}");
                last = want;
                // An admission leaves its key with an expiry. A script that outlives an
                // expiry of a millisecond or so (on a loaded host) has its key expire at
                // once, by Redis's clock: the state is fresh by then in real time, if not
                // on this timeline. Both sides start afresh.
                if want.allowed && n > 0 && !kept.persisted {
                    let lead = want.reset_after_ns;
                    assert!(
                        lead <= 20 * MS || lead == u64::MAX,
                        "{config:?} step {step}: no expiry"
                    );
                    local = Limiter::new(config).unwrap();
                }
            }
            (Err(want), Err(RedisError::Rate(got))) => assert_eq!(got, want),
            (want, got) => panic!("{config:?} step {step}: {want:?} against {got:?}"),
        }
    }
}

/// A connection that runs each command in one transaction with `PERSIST key`, so the key
/// outlives Redis's own expiry as the in-process state does: Redis expires keys on its
/// clock, not on the test's timeline, and a live state could otherwise vanish after a
/// millisecond of real time, between the command and a `PERSIST` sent after it.
struct Kept<'a> {
    connection: &'a mut redis::Connection,
    key: Vec<u8>,
    /// Whether the key had an expiry, which `PERSIST` removed.
    persisted: bool,
}

impl redis::ConnectionLike for Kept<'_> {
    fn req_packed_command(&mut self, command: &[u8]) -> redis::RedisResult<redis::Value> {
        let mut packed = redis::cmd("MULTI").get_packed_command();
        packed.extend_from_slice(command);
        packed.extend(redis::cmd("PERSIST").arg(&self.key).get_packed_command());
        packed.extend(redis::cmd("EXEC").get_packed_command());
        // MULTI's OK and two QUEUED, then EXEC's replies: the command's and PERSIST's.
        match self.connection.req_packed_commands(&packed, 3, 1)?.pop() {
            Some(redis::Value::Array(mut replies)) if replies.len() == 2 => {
                self.persisted = replies[1] == redis::Value::Int(1);
                Ok(replies.swap_remove(0))
            }
            other => panic!("EXEC answered {other:?}"),
        }
    }

    fn req_packed_commands(
        &mut self,
        commands: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        self.connection.req_packed_commands(commands, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.connection.get_db()
    }

    fn check_connection(&mut self) -> bool {
        self.connection.check_connection()
    }

    fn is_open(&self) -> bool {
        self.connection.is_open()
    }
}

fn config_burst(config: &Config) -> u64 {
    if config.burst == 0 {
        config.limit
    } else {
        config.burst
    }
}

/// Without a time, the server's clock decides: a burst of 3 admits 3 at once and denies
/// the 4th, due within a second; the key then expires when the bucket is full again.
#[test]
fn the_servers_clock_decides_and_keys_expire_when_fresh() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::gcra(3, SECOND), "clock:").unwrap();
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
        .acquire_at(&mut redis, b"at", 1, 1_000 * SECOND)
        .unwrap();
    let ttl: i64 = redis::cmd("PTTL")
        .arg(limiter.redis_key(b"at"))
        .query(&mut redis)
        .unwrap();
    assert!(ttl > 300 && ttl <= 334, "{ttl}");
    // A query writes nothing.
    limiter.acquire_at(&mut redis, b"query", 0, SECOND).unwrap();
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
    let limiter = RedisLimiter::new(&Config::gcra(2, SECOND), "flush:").unwrap();
    assert!(limiter.acquire_at(&mut redis, b"k", 1, 0).unwrap().allowed);
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query::<()>(&mut redis)
        .unwrap();
    let second = limiter.acquire_at(&mut redis, b"k", 1, 0).unwrap();
    assert_eq!((second.allowed, second.remaining), (true, 0));
}

/// Refusals before Redis, and Redis's own errors, are errors: never an admission.
#[test]
fn failures_are_errors() {
    let Some((server, mut redis)) = server() else {
        return;
    };
    assert!(matches!(
        RedisLimiter::new(&Config::gcra(1, 1 << 53), "x"),
        Err(Error::InvalidConfig(ConfigError::NotExactOnRedis))
    ));
    assert!(RedisLimiter::new(&Config::gcra(1, (1 << 53) - 1), "x").is_ok());
    assert!(matches!(
        RedisLimiter::new(&Config::gcra(0, SECOND), "x"),
        Err(Error::InvalidConfig(ConfigError::ZeroLimit))
    ));
    let limiter = RedisLimiter::new(&Config::gcra(2, SECOND), "fail:").unwrap();
    assert!(matches!(
        limiter.acquire_at(&mut redis, b"k", 3, 0),
        Err(RedisError::Rate(Error::InsufficientCapacity))
    ));
    // A key holding a list, and one holding a string that is no TAT.
    let key = limiter.redis_key(b"list");
    redis::cmd("RPUSH")
        .arg(&key)
        .arg("x")
        .query::<()>(&mut redis)
        .unwrap();
    let error = limiter.acquire_at(&mut redis, b"list", 1, 0).unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
    let key = limiter.redis_key(b"text");
    redis::cmd("SET")
        .arg(&key)
        .arg("12ab")
        .query::<()>(&mut redis)
        .unwrap();
    let error = limiter.acquire_at(&mut redis, b"text", 1, 0).unwrap_err();
    assert!(error.to_string().contains("holds no GCRA state"), "{error}");
    // The server gone: the call fails within the connection's timeout.
    let url = server.url();
    drop(server);
    let client = redis::Client::open(url).unwrap();
    assert!(client
        .get_connection_with_timeout(Duration::from_millis(200))
        .is_err());
    let error = limiter.acquire_at(&mut redis, b"k", 1, 0).unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
}

/// The sliding log on Redis: random configurations (L from 1 to 50, some larger, a few at
/// the cap 2^20; periods from about one unit a nanosecond, where the in-process bound on
/// positions decides, to just below 2^53 ns), costs from 0 to past L, and the times of
/// [`replay`]: every decision and refusal is the in-process limiter's.
#[test]
fn sliding_log_decides_as_the_in_process_limiter() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let mut rng = Rng::new(2);
    for case in 0..300u64 {
        let limit = match case % 50 {
            0 => 1 << 20,
            1..=5 => rng.range(51, 3000),
            _ => rng.range(1, 50),
        };
        let period = match rng.below(4) {
            0 => rng.range(limit, 4 * limit),
            1 => (1 << 53) - 1 - rng.below(SECOND),
            _ => rng.range(1, 10 * SECOND),
        };
        let config = Config::sliding_log(limit, period);
        if let Err(error) = Limiter::new(&config) {
            let refused = RedisLimiter::new(&config, "x").err();
            assert_eq!(refused, Some(error), "{config:?}");
            continue;
        }
        replay(&mut redis, &mut rng, &config, case, |rng| {
            let n = match rng.below(10) {
                0 => 0,
                1 => limit + 1 + rng.below(2),
                2 | 3 => rng.range(1, limit),
                _ => rng.range(1, limit.min(3)),
            };
            (n, None)
        });
    }
}

/// The example of `src/algorithm/sliding_log.rs` through Redis, every field by hand: 2 per
/// minute, admitted at 0:24 and 0:36, denied at 1:12 until 0:24 leaves the log at 1:24.
#[test]
fn sliding_log_example() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::sliding_log(2, 60 * SECOND), "example:").unwrap();
    let mut at = |s: u64| limiter.acquire_at(&mut redis, b"k", 1, s * SECOND).unwrap();
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
    let config = Config::sliding_log(3, SECOND);
    let local = Limiter::new(&config).unwrap();
    let remote = RedisLimiter::new(&config, "reserve:").unwrap();
    for n in [0, 1, 3, 4] {
        let want = local.reserve_at(n, SECOND, 1).unwrap_err();
        assert_eq!(want, Error::Unsupported);
        let got = remote.reserve_at(&mut redis, b"k", n, SECOND, 1);
        assert!(matches!(got, Err(RedisError::Rate(error)) if error == want));
        let got = remote.reserve(&mut redis, b"k", n, u64::MAX);
        assert!(matches!(got, Err(RedisError::Rate(Error::Unsupported))));
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
    let limiter = RedisLimiter::new(&Config::sliding_log(2, 10 * SECOND), "expiry:").unwrap();
    let within = |ttl: i64, ms: i64| ttl > ms - 200 && ttl <= ms;
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 0, 100 * SECOND)
            .unwrap()
            .allowed
    );
    assert_eq!(pttl(&mut redis, &limiter, b"k"), -2);
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 1, 100 * SECOND)
            .unwrap()
            .allowed
    );
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 10_000), "{ttl}");
    // From 5 s before the latest entry: logged at 100 s, which expires 15 s later.
    let past = limiter
        .acquire_at(&mut redis, b"k", 1, 95 * SECOND)
        .unwrap();
    assert_eq!((past.allowed, past.reset_after_ns), (true, 15 * SECOND));
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 15_000), "{ttl}");
    // Full: a denial and a query at 101.5 s leave the expiry as it was.
    let denied = limiter
        .acquire_at(&mut redis, b"k", 1, 101_500 * MS)
        .unwrap();
    assert!(!denied.allowed);
    limiter
        .acquire_at(&mut redis, b"k", 0, 101_500 * MS)
        .unwrap();
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 15_000), "{ttl}");
    // At 110 s + 1 ns both entries have left: 2 more admitted, the key lives 10 s again.
    assert!(
        limiter
            .acquire_at(&mut redis, b"k", 2, 110 * SECOND + 1)
            .unwrap()
            .allowed
    );
    let ttl = pttl(&mut redis, &limiter, b"k");
    assert!(within(ttl, 10_000), "{ttl}");
    // By the server's clock: 2 admitted, the 3rd denied within the period.
    let limiter = RedisLimiter::new(&Config::sliding_log(2, SECOND), "clock:").unwrap();
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
    let not_exact = Error::InvalidConfig(ConfigError::NotExactOnRedis);
    for (period, refused) in [(1 << 53, Some(not_exact)), ((1 << 53) - 1, None)] {
        let made = RedisLimiter::new(&Config::sliding_log(1, period), "x");
        assert_eq!(made.err(), refused);
    }
    let config = Config::sliding_log(1 << 20, 2 * MS);
    let local = Limiter::new(&config).unwrap();
    let remote = RedisLimiter::new(&config, "dense:").unwrap();
    for (n, now) in [(1 << 20, u64::MAX - MS), (5, u64::MAX - 1), (7, u64::MAX)] {
        let want = local.acquire_at(n, now).unwrap();
        assert_eq!(remote.acquire_at(&mut redis, b"k", n, now).unwrap(), want);
    }

    let limiter = RedisLimiter::new(&Config::sliding_log(3, SECOND), "foreign:").unwrap();
    assert!(
        limiter
            .acquire_at(&mut redis, b"good", 2, SECOND)
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
            .acquire_at(&mut redis, name.as_bytes(), 2, SECOND)
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
    let error = limiter.acquire_at(&mut redis, b"hash", 1, 0).unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
}
