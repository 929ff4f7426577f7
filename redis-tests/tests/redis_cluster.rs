//! The Redis tier on a Redis Cluster of three masters the test starts on loopback ports
//! (docs/redis.md): keys spread over the masters, each key's state in the slot of its hash
//! tag, and the decisions those of the in-process limiter.

mod common;

use common::SECOND;
use common::{at, redis_server::RedisCluster};
use librate::redis::{slot, RedisLimiter};
use librate::{Config, Instant, Limiter};

/// 40 keys over three masters: each decides exactly as an in-process limiter of its own,
/// and the Redis keys of one user under two prefixes share a slot (their hash tag).
#[test]
fn keys_across_the_masters_decide_as_in_process() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let mut redis = client.get_connection().unwrap();
    let config = Config::per_second(2);
    let per_second = RedisLimiter::new(&config, "cluster:second:").unwrap();
    let per_hour = RedisLimiter::new(&Config::per_hour(100), "cluster:hour:").unwrap();
    let mut slots = std::collections::HashSet::new();
    for user in 0..40u64 {
        let key = format!("user-{user}");
        let local = Limiter::new(&config).unwrap();
        for step in 0..5u64 {
            let now = 1_000 * SECOND + step * SECOND / 3;
            let want = local.acquire_at(1, at(now)).unwrap();
            let got = per_second
                .acquire_at(&mut redis, key.as_bytes(), 1, at(now))
                .unwrap();
            assert_eq!(got, want, "{key} step {step}");
        }
        assert!(
            per_hour
                .acquire_at(&mut redis, key.as_bytes(), 1, Instant::ZERO)
                .unwrap()
                .allowed
        );
        let (a, b) = (
            per_second.redis_key(key.as_bytes()),
            per_hour.redis_key(key.as_bytes()),
        );
        assert_eq!(slot(&a), slot(&b), "{key}");
        let stored: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&a)
            .query(&mut redis)
            .unwrap();
        assert_eq!(stored, slot(&a));
        slots.insert(slot(&a) * 3 / 16384);
    }
    // 40 keys land on every third of the slot range, so every master decided some.
    assert_eq!(slots.len(), 3);
}

/// `slot` agrees with the Cluster's own CLUSTER KEYSLOT on keys with and without hash
/// tags, empty and nested ones, and random bytes.
#[test]
fn slots_are_the_clusters() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let mut redis = client.get_connection().unwrap();
    let mut keys: Vec<Vec<u8>> = [
        &b""[..],
        b"123456789",
        b"{user1000}.following",
        b"foo{}{bar}",
        b"foo{{bar}}zap",
        b"foo{bar}{zap}",
        b"{",
        b"}{",
        b"a{b",
    ]
    .iter()
    .map(|key| key.to_vec())
    .collect();
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for length in 0..200 {
        keys.push(
            (0..length % 24)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    // Braces often, so tags of every shape turn up.
                    [b'{', b'}', b'x', (state >> 32) as u8][(state % 4) as usize]
                })
                .collect(),
        );
    }
    for key in keys {
        let want: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&key)
            .query(&mut redis)
            .unwrap();
        assert_eq!(slot(&key), want, "{key:?}");
    }
}

/// A batch of 30 keys spread over the three masters: the nodes refuse one script call
/// across slots, so the client decides them slot by slot, and every key decides as an
/// in-process limiter of its own.
#[test]
fn batches_across_the_masters_decide_as_in_process() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let mut redis = client.get_connection().unwrap();
    let config = Config::per_second(2);
    let limiter = RedisLimiter::new(&config, "cluster:batch:").unwrap();
    let names: Vec<String> = (0..30).map(|user| format!("user-{user}")).collect();
    let keys: Vec<&[u8]> = names.iter().map(|name| name.as_bytes()).collect();
    let masters: std::collections::HashSet<u16> = keys
        .iter()
        .map(|key| slot(&limiter.redis_key(key)) * 3 / 16384)
        .collect();
    assert_eq!(masters.len(), 3);
    let locals: Vec<Limiter> = keys
        .iter()
        .map(|_| Limiter::new(&config).unwrap())
        .collect();
    for step in 0..5u64 {
        let now = 1_000 * SECOND + step * SECOND / 3;
        let got = limiter
            .acquire_batch_at(&mut redis, &keys, 1, at(now))
            .unwrap();
        assert_eq!(got.len(), keys.len());
        for ((name, local), got) in names.iter().zip(&locals).zip(got) {
            assert_eq!(
                got.unwrap(),
                local.acquire_at(1, at(now)).unwrap(),
                "{name} step {step}"
            );
        }
    }
}

/// Leases on a Cluster: each rule's hash is one key, in one slot, so a rule's holders renew
/// on whichever master holds it; rules spread over the slots' thirds, each granted as if
/// alone.
#[test]
fn leases_keep_each_rule_in_one_slot() {
    use librate::lease::{renew, Fallback, HolderState, LeaseHolder, Share};
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let mut redis = client.get_connection().unwrap();
    let rule =
        librate::LeaseRule::new(&Config::per_second(1000), std::time::Duration::from_secs(2))
            .unwrap();
    let mut slots = std::collections::HashSet::new();
    for tenant in 0..12 {
        let key = format!("lease:{{tenant-{tenant}}}");
        let holder = LeaseHolder::named(&rule, Fallback::Deny, "host-a").unwrap();
        // New to Redis: quiet for the lease; then the whole rule, the holder alone.
        let quiet = renew(&mut redis, key.as_bytes(), &holder, Some(Instant::ZERO)).unwrap();
        assert_eq!(quiet, HolderState::Unshared, "{key}");
        let leased = renew(&mut redis, key.as_bytes(), &holder, Some(at(2 * SECOND))).unwrap();
        assert_eq!(leased, HolderState::Leased, "{key}");
        assert_eq!(
            holder.granted(),
            Share {
                rate: 1_000_000,
                burst: 1000
            },
            "{key}"
        );
        let slot: u16 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(&key)
            .query(&mut redis)
            .unwrap();
        slots.insert(slot / (16384 / 3 + 1));
    }
    // Spread over every third of the slots: `redis-cli --cluster create` gives each of
    // the three masters one.
    assert_eq!(slots.len(), 3, "{slots:?}");
}

/// A `LeasedLimiter` renewing over a Cluster's connections: quiet for a lease, then the
/// whole rule, the holder alone.
#[test]
fn a_leased_limiter_renews_over_a_cluster() {
    use librate::lease::{Fallback, HolderState, LeasedLimiter};
    use std::time::Duration;
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let rule =
        librate::LeaseRule::new(&Config::per_second(1000), Duration::from_millis(400)).unwrap();
    let connect = move || client.get_connection();
    let limiter =
        LeasedLimiter::open_with(connect, "lease:{cluster}", &rule, Fallback::Deny).unwrap();
    let started = std::time::Instant::now();
    while limiter.holder().state() != HolderState::Leased {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no lease in 10 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(limiter.holder().granted().rate, 1_000_000);
    limiter.close().unwrap();
}
