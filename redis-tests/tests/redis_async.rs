//! The Redis tier's async methods (the `redis-async` feature) against a real
//! `redis-server` the test starts on a loopback port, through a
//! `redis::aio::MultiplexedConnection` on tokio: the same decisions as the blocking
//! methods and the in-process limiter for every algorithm, a batch as one script call,
//! script reloads, a key of another type failing alone, a dead server an error; a policy
//! as the in-process one, and its reset; and on a three-master Cluster through its async
//! connection, batches split by hash slot.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::redis_server::{server, RedisCluster, RedisServer};
use common::{refused, Refused, MS, SECOND};
use librate::redis::{slot, RedisError, RedisLimiter, RedisPolicy, SLOTS};
use librate::{Config, Decision, InsufficientCapacity, Limiter, Policy, ReserveError};
use redis::aio::MultiplexedConnection;

/// An async connection to `server`, which answers within a second or fails.
async fn connect(server: &RedisServer) -> MultiplexedConnection {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Duration::from_secs(1))
        .set_response_timeout(Duration::from_secs(1));
    redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap()
}

/// One configuration of each algorithm: 3 units a second.
fn every_algorithm() -> [Config; 4] {
    [
        Config::per_second(3),
        Config::fixed_window(3, Duration::from_secs(1)),
        Config::sliding_window(3, Duration::from_secs(1)),
        Config::sliding_log(3, Duration::from_secs(1)),
    ]
}

/// Asserts that Redis decided (or refused) as the in-process limiter did.
fn assert_same(got: Result<Decision, RedisError>, want: Result<Decision, Refused>, context: &str) {
    match (got, want) {
        (Ok(got), Ok(want)) => assert_eq!(got, want, "{context}"),
        (Err(RedisError::Rate(got)), Err(want)) => assert_eq!(refused(got), want, "{context}"),
        (got, want) => panic!("{context}: {got:?} against {want:?}"),
    }
}

/// A short sequence for each algorithm, with times forward and back, a query, the whole
/// limit, one past it, and reserves (GCRA's queue; refused by the windows): the async
/// methods decide as the blocking ones, each under a prefix of its own, and both as the
/// in-process limiter.
#[tokio::test]
async fn decides_as_the_blocking_methods_and_in_process() {
    let Some((server, mut blocking)) = server() else {
        return;
    };
    let mut redis = connect(&server).await;
    // (n, at in ms, max_wait in ms for a reserve)
    let steps: [(u64, u64, Option<u64>); 12] = [
        (1, 0, None),
        (2, 0, None),
        (1, 10, None),
        (0, 20, None),
        (1, 10, Some(500)),
        (4, 300, None),
        (1, 340, None),
        (3, 1_000, None),
        (1, 900, None),
        (2, 1_700, Some(0)),
        (3, 2_100, Some(2_000)),
        (1, 2_200, None),
    ];
    for (index, config) in every_algorithm().iter().enumerate() {
        let local = Limiter::new(config).unwrap();
        let remote = RedisLimiter::new(config, format!("async:{index}:")).unwrap();
        let sync = RedisLimiter::new(config, format!("sync:{index}:")).unwrap();
        for (step, &(n, at, max_wait)) in steps.iter().enumerate() {
            let (now, context) = (at * MS, format!("{config:?} step {step}"));
            let (want, got, blocking_got) = match max_wait {
                None => (
                    (local.acquire_at(n, librate::Instant::from_nanos(now))).map_err(refused),
                    remote
                        .acquire_at_async(&mut redis, b"k", n, librate::Instant::from_nanos(now))
                        .await,
                    sync.acquire_at(&mut blocking, b"k", n, librate::Instant::from_nanos(now)),
                ),
                Some(wait) => (
                    local
                        .reserve_at(
                            n,
                            librate::Instant::from_nanos(now),
                            Duration::from_nanos(wait * MS),
                        )
                        .map_err(refused),
                    remote
                        .reserve_at_async(
                            &mut redis,
                            b"k",
                            n,
                            librate::Instant::from_nanos(now),
                            Duration::from_nanos(wait * MS),
                        )
                        .await,
                    sync.reserve_at(
                        &mut blocking,
                        b"k",
                        n,
                        librate::Instant::from_nanos(now),
                        Duration::from_nanos(wait * MS),
                    ),
                ),
            };
            assert_same(got, want, &context);
            assert_same(blocking_got, want, &context);
        }
    }
}

/// Decides `keys` at each of `times`, in one batch and then one by one in turn: each key
/// as an in-process limiter of its own taking its requests in order.
async fn assert_decides_as_in_process(
    redis: &mut impl redis::aio::ConnectionLike,
    limiter: &RedisLimiter,
    keys: &[&[u8]],
    times: &[u64],
) {
    let config = limiter.config();
    let mut locals: HashMap<&[u8], Limiter> = HashMap::new();
    for (round, &now) in times.iter().enumerate() {
        let got = if round % 2 == 0 {
            limiter
                .acquire_batch_at_async(redis, keys, 1, librate::Instant::from_nanos(now))
                .await
                .unwrap()
        } else {
            let mut got = Vec::new();
            for key in keys {
                got.push(
                    limiter
                        .acquire_at_async(redis, key, 1, librate::Instant::from_nanos(now))
                        .await,
                );
            }
            got
        };
        assert_eq!(got.len(), keys.len());
        for (key, got) in keys.iter().zip(got) {
            let local = locals
                .entry(key)
                .or_insert_with(|| Limiter::new(config).unwrap());
            let context = format!("{config:?} {key:?} round {round}");
            assert_same(
                got,
                (local.acquire_at(1, librate::Instant::from_nanos(now))).map_err(refused),
                &context,
            );
        }
    }
}

/// Batches of keys, one repeated within a batch, at moving times, decide as the in-process
/// limiter; a cost past the limit is refused for the whole batch, and an empty batch
/// sends nothing.
#[tokio::test]
async fn a_batch_decides_as_in_process() {
    let Some((server, _blocking)) = server() else {
        return;
    };
    let mut redis = connect(&server).await;
    let keys: [&[u8]; 5] = [b"a", b"b", b"a", b"c", b"a"];
    let times = [0, 0, 0, 400 * MS, 1_100 * MS, 1_100 * MS, 5 * SECOND];
    for (index, config) in every_algorithm().iter().enumerate() {
        let limiter = RedisLimiter::new(config, format!("batch:{index}:")).unwrap();
        assert_decides_as_in_process(&mut redis, &limiter, &keys, &times).await;
        assert!(matches!(
            limiter
                .acquire_batch_at_async(&mut redis, &keys, 4, librate::Instant::ZERO)
                .await,
            Err(RedisError::Rate(ReserveError::Acquire(
                InsufficientCapacity
            )))
        ));
        let none = limiter.acquire_batch_async(&mut redis, &[], 1).await;
        assert!(none.unwrap().is_empty());
    }
}

/// Without a time, the server's clock decides: GCRA's burst of 3 admits 3 at once (two
/// from tasks of their own, one in a batch) and denies the 4th, due within T = 1/3 s; a
/// reserve willing to wait a second is admitted to wait at most T. The futures are
/// `Send`, so tasks may run them, each on a clone of the multiplexed connection.
#[tokio::test]
async fn the_servers_clock_decides() {
    let Some((server, _blocking)) = server() else {
        return;
    };
    let mut redis = connect(&server).await;
    let limiter = Arc::new(RedisLimiter::new(&Config::per_second(3), "clock:").unwrap());
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let (limiter, mut redis) = (Arc::clone(&limiter), redis.clone());
            tokio::spawn(async move { limiter.acquire_async(&mut redis, b"k", 1).await })
        })
        .collect();
    for task in tasks {
        assert!(task.await.unwrap().unwrap().allowed);
    }
    let batch = limiter
        .acquire_batch_async(&mut redis, &[b"k", b"other"], 1)
        .await
        .unwrap();
    let (k, other) = (batch[0].as_ref().unwrap(), batch[1].as_ref().unwrap());
    assert_eq!((k.allowed, k.remaining), (true, 0));
    assert_eq!((other.allowed, other.remaining), (true, 2));
    let denied = limiter.acquire_async(&mut redis, b"k", 1).await.unwrap();
    assert!(!denied.allowed);
    assert!(denied.retry_after_ns > 0 && denied.retry_after_ns <= SECOND / 3);
    let queued = limiter
        .reserve_async(&mut redis, b"k", 1, Duration::from_secs(1))
        .await
        .unwrap();
    assert!(queued.allowed);
    assert!(
        queued.wait_ns > 0 && queued.wait_ns <= SECOND / 3,
        "{queued:?}"
    );
}

/// A batch is one EVALSHA for every algorithm, once the script is loaded; a key holding a
/// list fails alone, and the others decide as fresh keys of the in-process limiter do.
/// Asked alone, the list key is an error too.
#[tokio::test]
async fn a_batch_is_one_script_call() {
    let Some((server, mut blocking)) = server() else {
        return;
    };
    let mut redis = connect(&server).await;
    for (index, config) in every_algorithm().iter().enumerate() {
        let limiter = RedisLimiter::new(config, format!("one-call:{index}:")).unwrap();
        redis::cmd("RPUSH")
            .arg(limiter.redis_key(b"list"))
            .arg("x")
            .query::<()>(&mut blocking)
            .unwrap();
        // A query loads the script and writes nothing.
        limiter
            .acquire_at_async(&mut redis, b"a", 0, librate::Instant::from_nanos(SECOND))
            .await
            .unwrap();
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query::<()>(&mut blocking)
            .unwrap();
        let keys: [&[u8]; 5] = [b"a", b"b", b"list", b"c", b"d"];
        let decisions = limiter
            .acquire_batch_at_async(&mut redis, &keys, 2, librate::Instant::from_nanos(SECOND))
            .await
            .unwrap();
        assert_eq!(decisions.len(), keys.len());
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut blocking)
            .unwrap();
        assert!(
            stats.contains("cmdstat_evalsha:calls=1,"),
            "{config:?}: {stats}"
        );
        let fresh = Limiter::new(config)
            .unwrap()
            .acquire_at(2, librate::Instant::from_nanos(SECOND))
            .map_err(refused);
        for (key, decision) in keys.iter().zip(decisions) {
            if *key == b"list" {
                assert!(matches!(decision, Err(RedisError::Redis(_))), "{config:?}");
            } else {
                assert_same(decision, fresh, &format!("{config:?}"));
            }
        }
        // Alone, the list key is the call's error.
        let alone = limiter
            .acquire_at_async(&mut redis, b"list", 1, librate::Instant::from_nanos(SECOND))
            .await;
        assert!(matches!(alone, Err(RedisError::Redis(_))), "{config:?}");
    }
}

/// After `SCRIPT FLUSH` the script is loaded again, once, and the call sent again: a
/// single decision and a batch both go on as the in-process limiter does.
#[tokio::test]
async fn a_flushed_script_is_loaded_again() {
    let Some((server, mut blocking)) = server() else {
        return;
    };
    let mut redis = connect(&server).await;
    let config = Config::per_second(3);
    let limiter = RedisLimiter::new(&config, "flush:").unwrap();
    let keys: [&[u8]; 2] = [b"k", b"j"];
    let locals = keys.map(|_| Limiter::new(&config).unwrap());
    for (round, batch) in [false, false, true].into_iter().enumerate() {
        if round > 0 {
            redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query::<()>(&mut blocking)
                .unwrap();
        }
        redis::cmd("CONFIG")
            .arg("RESETSTAT")
            .query::<()>(&mut blocking)
            .unwrap();
        let got = if batch {
            limiter
                .acquire_batch_at_async(&mut redis, &keys, 1, librate::Instant::ZERO)
                .await
                .unwrap()
        } else {
            let mut got = Vec::new();
            for key in keys {
                got.push(
                    limiter
                        .acquire_at_async(&mut redis, key, 1, librate::Instant::ZERO)
                        .await,
                );
            }
            got
        };
        for (got, local) in got.into_iter().zip(&locals) {
            assert_same(
                got,
                local.acquire_at(1, librate::Instant::ZERO).map_err(refused),
                &format!("round {round}"),
            );
        }
        // Loaded once a round (the first round's call finds no script either), whichever
        // way Redis names the subcommand (7: `script|load`; 6: `script`).
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut blocking)
            .unwrap();
        let loads = ["cmdstat_script|load:calls=1,", "cmdstat_script:calls=1,"];
        assert!(loads.iter().any(|load| stats.contains(load)), "{stats}");
    }
}

/// A server that dies: every call fails within the connection's timeout, a batch as a
/// whole, never admitting; once it is back (empty, its script gone), a new connection
/// decides again.
#[tokio::test]
async fn a_dead_server_is_an_error() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let limiter = RedisLimiter::new(&Config::per_second(1), "dead:").unwrap();
    let mut redis = connect(&server).await;
    assert!(
        limiter
            .acquire_at_async(&mut redis, b"k", 1, librate::Instant::ZERO)
            .await
            .unwrap()
            .allowed
    );
    server.stop();
    let started = Instant::now();
    for _ in 0..3 {
        let error = limiter
            .acquire_at_async(&mut redis, b"k", 1, librate::Instant::ZERO)
            .await
            .unwrap_err();
        assert!(matches!(error, RedisError::Redis(_)), "{error}");
        let error = limiter
            .acquire_batch_at_async(&mut redis, &[b"k", b"j"], 1, librate::Instant::ZERO)
            .await
            .unwrap_err();
        assert!(matches!(error, RedisError::Redis(_)), "{error}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    server.restart();
    let mut redis = connect(&server).await;
    let decision = limiter
        .acquire_at_async(&mut redis, b"k", 1, librate::Instant::ZERO)
        .await
        .unwrap();
    assert_eq!((decision.allowed, decision.remaining), (true, 0));
}

/// On a three-master Cluster, through its async connection: batches of keys on every
/// master (one call the nodes refuse, CROSSSLOT) are decided slot by slot, and single
/// calls go to each key's node, each key as an in-process limiter decides it.
#[tokio::test]
async fn a_cluster_decides_slot_by_slot() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let mut redis = client.get_async_connection().await.unwrap();
    let limiter = RedisLimiter::new(&Config::per_second(2), "cluster:async:").unwrap();
    let names: Vec<String> = (0..30).map(|user| format!("user-{user}")).collect();
    let keys: Vec<&[u8]> = names.iter().map(|name| name.as_bytes()).collect();
    // The masters hold a third of the slots each: 30 keys land in every third.
    let thirds: std::collections::HashSet<u16> = keys
        .iter()
        .map(|key| slot(&limiter.redis_key(key)) / SLOTS.div_ceil(3))
        .collect();
    assert_eq!(thirds.len(), 3);
    let times: Vec<u64> = (0..6)
        .map(|step| 1_000 * SECOND + step * SECOND / 3)
        .collect();
    assert_decides_as_in_process(&mut redis, &limiter, &keys, &times).await;
}

/// A policy of every algorithm through the async methods, with times forward and back and
/// costs past the least limit: each decision the in-process policy's; a reset lifts the
/// key's limit, and a single limiter's reset its key's.
#[tokio::test]
async fn a_policy_decides_as_in_process_and_resets() {
    let Some((server, _)) = server() else {
        return;
    };
    let mut redis = connect(&server).await;
    let rules = every_algorithm();
    let local = Policy::new(&rules).unwrap();
    let remote = RedisPolicy::new(&rules, "async:policy:").unwrap();
    for (n, ms) in [
        (1, 0),
        (2, 0),
        (1, 10),
        (0, 20),
        (4, 30),
        (3, 1_000),
        (1, 900),
    ] {
        let got = remote
            .acquire_at_async(&mut redis, b"k", n, librate::Instant::from_nanos(ms * MS))
            .await;
        match (
            got,
            local.acquire_at(n, librate::Instant::from_nanos(ms * MS)),
        ) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{n} at {ms} ms"),
            (Err(RedisError::Rate(got)), Err(want)) => assert_eq!(got, ReserveError::Acquire(want)),
            (got, want) => panic!("{n} at {ms} ms: {got:?} against {want:?}"),
        }
    }
    remote.reset_async(&mut redis, b"k").await.unwrap();
    let fresh = remote
        .acquire_at_async(&mut redis, b"k", 3, librate::Instant::from_nanos(900 * MS))
        .await;
    assert!(fresh.unwrap().decision.allowed);
    let other = remote.acquire_async(&mut redis, b"other", 3).await;
    assert!(other.unwrap().decision.allowed);

    let limiter = RedisLimiter::new(&rules[1], "async:reset:").unwrap();
    for reset in [false, true] {
        if reset {
            limiter.reset_async(&mut redis, b"k").await.unwrap();
        }
        let full = limiter
            .acquire_at_async(&mut redis, b"k", 3, librate::Instant::ZERO)
            .await;
        assert_eq!(full.unwrap().remaining, 0, "reset {reset}");
    }
}
