//! Policies on Redis (docs/redis.md, docs/policies.md) against a real `redis-server` the test
//! starts on a loopback port: one script call decides all of a key's rules, exactly as the
//! in-process `Policy` decides them, field for field; a hammer at one frozen time admits exactly
//! the tightest rule's limit; reset lifts a key's limit; failures are errors.

mod common;

use common::redis_replay::Unexpiring;
use common::redis_server::{server, RedisCluster, RedisServer};
use common::{random_rule, Rng, MS, SECOND};
use librate::redis::{slot, RedisError, RedisLimiter, RedisPolicy};
use librate::{Config, ConfigError, Decision, Instant, InsufficientCapacity, Policy, ReserveError};
use std::time::Duration;

/// Random policies of 1 to 8 rules of any mix, each under a prefix of its own; random costs
/// (0 to one past the least limit) at random times (forward, and back one time in five):
/// every decision, `denied_by`, every rule's own fields and every refusal are the
/// in-process policy's. The keys never expire by Redis's clock ([`Unexpiring`]), which
/// runs unrelated to the times passed.
#[test]
fn policies_decide_as_the_in_process_policy() {
    let Some((_server, mut connection)) = server() else {
        return;
    };
    let mut rng = Rng::new(0x7ed1_5001);
    let mut denials = 0;
    for case in 0..250 {
        let rules: Vec<Config> = (0..rng.range(1, 8))
            .map(|_| random_rule(&mut rng))
            .collect();
        let local = Policy::new(&rules).unwrap();
        let remote = RedisPolicy::new(&rules, format!("conform:{case}:")).unwrap();
        assert_eq!(remote.limit(), local.limit());
        assert_eq!(remote.rules(), &rules[..]);
        let mut redis = Unexpiring::new(&mut connection, remote.redis_keys(b"k"));
        let mut now = 1_000 * SECOND + rng.below(10 * SECOND);
        for step in 0..40 {
            now = if rng.chance(20) {
                now - rng.below(3 * SECOND)
            } else {
                now + rng.below(700 * MS)
            };
            let n = rng.below(local.limit() + 2);
            let context = format!("case {case} step {step}: n {n} at {now}, {rules:?}");
            let mut got = remote.acquire_at(&mut redis, b"k", n, Instant::from_nanos(now));
            while matches!(&got, Ok(admitted) if admitted.decision.allowed && n > 0)
                && redis.expired()
            {
                // A key expired between the script and `PERSIST`: again.
                redis.undo();
                got = remote.acquire_at(&mut redis, b"k", n, Instant::from_nanos(now));
            }
            match (local.acquire_at(n, Instant::from_nanos(now)), got) {
                (Ok(want), Ok(got)) => {
                    assert_eq!(got.decision, want.decision, "{context}");
                    assert_eq!(got.denied_by, want.denied_by, "{context}");
                    assert_eq!(got.rules(), want.rules(), "{context}");
                    denials += usize::from(!want.decision.allowed);
                }
                (Err(want), Err(RedisError::Rate(got))) => {
                    assert_eq!(got, ReserveError::Acquire(want), "{context}");
                }
                (want, got) => panic!("{context}: {want:?} in process, {got:?} on Redis"),
            }
        }
    }
    assert!(denials > 1_000, "{denials}");
}

/// The in-process policy's documented example, on Redis: 2 a second and 3 a minute.
#[test]
fn two_a_second_and_three_a_minute() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let policy = RedisPolicy::new(
        &[
            Config::per_second(2),
            Config::fixed_window(3, Duration::from_secs(60)),
        ],
        "doc:",
    )
    .unwrap();
    let mut at = |n: u64, now: u64| {
        policy
            .acquire_at(&mut redis, b"bob", n, Instant::from_nanos(now))
            .unwrap()
    };
    let first = at(1, 0);
    // GCRA: T = 500 ms, τ = 1 s; a TAT of 500 ms leaves one unit. The window: 2 left
    // until 60 s.
    assert_eq!(
        first.rules(),
        [
            Decision {
                allowed: true,
                limit: 2,
                remaining: 1,
                retry_after_ns: 0,
                reset_after_ns: 500 * MS,
                wait_ns: 0,
            },
            Decision {
                allowed: true,
                limit: 3,
                remaining: 2,
                retry_after_ns: 0,
                reset_after_ns: 60 * SECOND,
                wait_ns: 0,
            },
        ]
    );
    assert_eq!(
        first.decision,
        Decision {
            allowed: true,
            limit: 2,
            remaining: 1,
            retry_after_ns: 0,
            reset_after_ns: 60 * SECOND,
            wait_ns: 0,
        }
    );
    assert!(at(1, 0).decision.allowed);
    // The per-second rule denies (TAT 1 s: due at 1 s + T − τ = 500 ms); the per-minute
    // one keeps its unit and reports its state as it is, one left.
    let denied = at(1, 0);
    assert_eq!(denied.denied_by, Some(0));
    assert_eq!(denied.decision.retry_after_ns, 500 * MS);
    assert_eq!(
        denied.rules()[1],
        Decision {
            allowed: true,
            limit: 3,
            remaining: 1,
            retry_after_ns: 0,
            reset_after_ns: 60 * SECOND,
            wait_ns: 0,
        }
    );
    assert!(at(1, SECOND).decision.allowed);
    // Three this minute: the per-minute rule denies until the next minute.
    let denied = at(1, 2 * SECOND);
    assert_eq!(denied.denied_by, Some(1));
    assert_eq!(denied.decision.retry_after_ns, 58 * SECOND);
    assert_eq!(denied.decision.remaining, 0);
}

/// Four connections, each on a thread of its own, ask one key 25 times each at one frozen
/// time: exactly the tightest rule's limit is admitted, whichever rule is tightest.
#[test]
fn connections_admit_exactly_the_tightest_limit() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    for tightest in 0..4 {
        let mut limits = [40; 4];
        limits[tightest] = 30;
        let rules = [
            Config::per_hour(limits[0]),
            Config::fixed_window(limits[1], Duration::from_secs(3600)),
            Config::sliding_window(limits[2], Duration::from_secs(3600)),
            Config::sliding_log(limits[3], Duration::from_secs(3600)),
        ];
        let policy = RedisPolicy::new(&rules, format!("hammer:{tightest}:")).unwrap();
        let admitted: u64 = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let (policy, mut redis) = (&policy, server.connection());
                    scope.spawn(move || {
                        (0..25)
                            .filter(|_| {
                                let decision = policy
                                    .acquire_at(
                                        &mut redis,
                                        b"shared",
                                        1,
                                        Instant::from_nanos(5 * SECOND),
                                    )
                                    .unwrap();
                                decision.decision.allowed
                            })
                            .count() as u64
                    })
                })
                .collect();
            workers.into_iter().map(|each| each.join().unwrap()).sum()
        });
        assert_eq!(admitted, 30, "rule {tightest} at 30");
        // Every denial took nothing: each other rule holds exactly the 30 admitted.
        let mut redis = server.connection();
        let state = policy
            .acquire_at(&mut redis, b"shared", 0, Instant::from_nanos(5 * SECOND))
            .unwrap();
        for (index, rule) in state.rules().iter().enumerate() {
            assert_eq!(rule.remaining, limits[index] - 30, "rule {index}");
        }
    }
}

/// A reset deletes every rule's state for that key alone: the key is admitted again at
/// once, full; another key keeps its own. So does a single limiter's.
#[test]
fn reset_lifts_a_keys_limit() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let rules = [
        Config::per_minute(2),
        Config::fixed_window(3, Duration::from_secs(60)),
        Config::sliding_window(3, Duration::from_secs(60)),
        Config::sliding_log(3, Duration::from_secs(60)),
    ];
    let policy = RedisPolicy::new(&rules, "reset:").unwrap();
    for key in [&b"alice"[..], b"bob"] {
        assert!(
            policy
                .acquire_at(&mut redis, key, 2, Instant::ZERO)
                .unwrap()
                .decision
                .allowed
        );
        assert_eq!(
            policy
                .acquire_at(&mut redis, key, 1, Instant::ZERO)
                .unwrap()
                .denied_by,
            Some(0)
        );
    }
    policy.reset(&mut redis, b"alice").unwrap();
    for redis_key in policy.redis_keys(b"alice") {
        let exists: bool = redis::cmd("EXISTS")
            .arg(redis_key)
            .query(&mut redis)
            .unwrap();
        assert!(!exists);
    }
    let fresh = policy
        .acquire_at(&mut redis, b"alice", 2, Instant::ZERO)
        .unwrap();
    assert!(fresh.decision.allowed);
    // Full before the request: each rule's limit less the 2 taken.
    let remaining: Vec<u64> = fresh.rules().iter().map(|rule| rule.remaining).collect();
    assert_eq!(remaining, [0, 1, 1, 1]);
    assert_eq!(
        policy
            .acquire_at(&mut redis, b"bob", 1, Instant::ZERO)
            .unwrap()
            .denied_by,
        Some(0)
    );
    // Resetting a key with no state is no error.
    policy.reset(&mut redis, b"carol").unwrap();

    let limiter = RedisLimiter::new(
        &Config::fixed_window(1, Duration::from_secs(60)),
        "reset:one:",
    )
    .unwrap();
    for key in [&b"alice"[..], b"bob"] {
        assert!(
            limiter
                .acquire_at(&mut redis, key, 1, Instant::ZERO)
                .unwrap()
                .allowed
        );
    }
    limiter.reset(&mut redis, b"alice").unwrap();
    assert!(
        limiter
            .acquire_at(&mut redis, b"alice", 1, Instant::ZERO)
            .unwrap()
            .allowed
    );
    assert!(
        !limiter
            .acquire_at(&mut redis, b"bob", 1, Instant::ZERO)
            .unwrap()
            .allowed
    );
}

/// The rules' keys are `prefix{=key}:i`, one slot whatever the key; a prefix with a brace
/// is refused, as are policies of no rule or more than eight and costs past the least
/// limit.
#[test]
fn keys_and_refusals() {
    let rules = [
        Config::per_second(5),
        Config::sliding_log(3, Duration::from_secs(1)),
    ];
    let policy = RedisPolicy::new(&rules, "api:").unwrap();
    assert_eq!(
        policy.redis_keys(b"bob"),
        [b"api:{=bob}:0".to_vec(), b"api:{=bob}:1".to_vec()]
    );
    for key in [&b""[..], b"}", b"{}", b"a}b{c}"] {
        let keys = policy.redis_keys(key);
        assert!(
            keys.iter().all(|each| slot(each) == slot(&keys[0])),
            "{key:?}"
        );
    }
    for prefix in ["{api}:", "api{", "api}"] {
        assert!(matches!(
            RedisPolicy::new(&rules, prefix),
            Err(ConfigError::RedisPrefix { prefix: given }) if given == prefix.as_bytes()
        ));
    }
    for count in [0, 9] {
        assert!(matches!(
            RedisPolicy::new(&vec![Config::per_second(1); count], "x"),
            Err(ConfigError::PolicyRules { rules }) if rules == count
        ));
    }
    assert!(matches!(
        RedisPolicy::new(
            &[
                rules[0],
                Config::fixed_window(1, Duration::from_nanos(1 << 53))
            ],
            "x"
        ),
        Err(ConfigError::PolicyRule { rule: 1, why })
            if *why == ConfigError::NotExactOnRedis
    ));
    // The invalid rule is named, as in process (docs/policies.md).
    let zero = RedisPolicy::new(
        &[rules[0], Config::fixed_window(0, Duration::from_secs(1))],
        "x",
    );
    assert!(matches!(
        &zero,
        Err(ConfigError::PolicyRule { rule: 1, why })
            if **why == ConfigError::ZeroLimit
    ));
    assert_eq!(
        zero.err().unwrap().to_string(),
        "rule 1: limit 0: must be at least 1"
    );
    assert_eq!(policy.limit(), 3);
}

/// A rule's key holding something else is that request's error, and nothing is written
/// to any rule; a flushed script is loaded again; a server gone is an error, never an
/// admission.
#[test]
fn failures_are_errors() {
    let Some((server, mut redis)) = server() else {
        return;
    };
    let rules = [
        Config::per_second(2),
        Config::fixed_window(2, Duration::from_secs(1)),
        Config::sliding_log(2, Duration::from_secs(1)),
    ];
    let policy = RedisPolicy::new(&rules, "fail:").unwrap();
    assert!(matches!(
        policy.acquire_at(&mut redis, b"k", 3, Instant::ZERO),
        Err(RedisError::Rate(ReserveError::Acquire(
            InsufficientCapacity
        )))
    ));
    for wrong in 0..rules.len() {
        let key = format!("wrong-{wrong}");
        let redis_keys = policy.redis_keys(key.as_bytes());
        redis::cmd("RPUSH")
            .arg(&redis_keys[wrong])
            .arg("x")
            .exec(&mut redis)
            .unwrap();
        let error = policy
            .acquire_at(&mut redis, key.as_bytes(), 1, Instant::ZERO)
            .unwrap_err();
        assert!(matches!(error, RedisError::Redis(_)), "{error}");
        let written: usize = redis::cmd("EXISTS")
            .arg(&redis_keys)
            .query(&mut redis)
            .unwrap();
        assert_eq!(written, 1, "rule {wrong}");
    }
    // A string that is no state of the rule's algorithm.
    redis::cmd("SET")
        .arg(&policy.redis_keys(b"text")[1])
        .arg("12ab")
        .exec(&mut redis)
        .unwrap();
    let error = policy
        .acquire_at(&mut redis, b"text", 1, Instant::ZERO)
        .unwrap_err();
    assert!(
        error.to_string().contains("holds no fixed window state"),
        "{error}"
    );

    redis::cmd("SCRIPT").arg("FLUSH").exec(&mut redis).unwrap();
    assert!(
        policy
            .acquire_at(&mut redis, b"k", 2, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    // The server's clock: long after time 0, the key is fresh again.
    assert!(
        policy
            .acquire(&mut redis, b"k", 2)
            .unwrap()
            .decision
            .allowed
    );

    drop(server);
    let error = policy
        .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
        .unwrap_err();
    assert!(matches!(error, RedisError::Redis(_)), "{error}");
    assert!(policy.reset(&mut redis, b"k").is_err());
}

/// On a Cluster of three masters, every key's rules share a slot, so each request is one
/// script call on one master, deciding as in process.
#[test]
fn policies_on_a_cluster() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let mut redis = client.get_connection().unwrap();
    let rules = [
        Config::per_second(2),
        Config::sliding_window(3, Duration::from_secs(10)),
    ];
    let policy = RedisPolicy::new(&rules, "cluster:policy:").unwrap();
    let mut masters = std::collections::HashSet::new();
    for user in 0..20 {
        let key = format!("user-{user}");
        let local = Policy::new(&rules).unwrap();
        for step in 0..5u64 {
            let now = 1_000 * SECOND + step * SECOND / 4;
            let want = local.acquire_at(1, Instant::from_nanos(now)).unwrap();
            let got = policy
                .acquire_at(&mut redis, key.as_bytes(), 1, Instant::from_nanos(now))
                .unwrap();
            assert_eq!(got, want, "{key} step {step}");
        }
        masters.insert(slot(&policy.redis_keys(key.as_bytes())[0]) * 3 / 16384);
        policy.reset(&mut redis, key.as_bytes()).unwrap();
        assert!(
            policy
                .acquire_at(
                    &mut redis,
                    key.as_bytes(),
                    2,
                    Instant::from_nanos(1_000 * SECOND)
                )
                .unwrap()
                .decision
                .allowed
        );
    }
    assert_eq!(masters.len(), 3);
}

/// The README's example: 10 a second and 1,000 a day for each customer, and support
/// lifting a customer's limit.
#[test]
fn readme_example() -> Result<(), Box<dyn std::error::Error>> {
    let Some((_server, mut connection)) = server() else {
        return Ok(());
    };
    let policy = RedisPolicy::new(
        &[
            Config::per_second(10),
            Config::fixed_window(1_000, Duration::from_secs(86_400)),
        ],
        "api:",
    )?;
    let decision = policy.acquire(&mut connection, b"customer-7", 1)?;
    if !decision.decision.allowed {
        return Err(format!("429: rule {:?} denied", decision.denied_by).into());
    }
    policy.reset(&mut connection, b"customer-7")?; // support lifts the customer's limit
    let keys: usize = redis::cmd("EXISTS")
        .arg(policy.redis_keys(b"customer-7"))
        .query(&mut connection)?;
    assert_eq!(keys, 0);
    Ok(())
}
