//! The Redis tier on a Redis Cluster of three masters the test starts on loopback ports
//! (DESIGN §8): keys spread over the masters, each key's state in the slot of its hash
//! tag, and the decisions those of the in-process limiter.
#![cfg(feature = "redis")]

mod common;

use common::redis_server::RedisCluster;
use common::SECOND;
use rate::redis::RedisLimiter;
use rate::{Config, Limiter};

/// The Cluster slot of a Redis key: CRC16 (XMODEM) of its hash tag, or of the whole key
/// without one, modulo 16384 (the Cluster specification).
fn slot(key: &[u8]) -> u16 {
    let tagged = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let close = key[open + 1..].iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &key[open + 1..open + 1 + close])
        })
        .unwrap_or(key);
    let mut crc: u16 = 0;
    for &byte in tagged {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                crc << 1 ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc % 16384
}

/// 40 keys over three masters: each decides exactly as an in-process limiter of its own,
/// and the Redis keys of one user under two prefixes share a slot (their hash tag).
#[test]
fn keys_across_the_masters_decide_as_in_process() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let client = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();
    let mut redis = client.get_connection().unwrap();
    let config = Config::gcra(2, SECOND);
    let per_second = RedisLimiter::new(&config, "cluster:second:").unwrap();
    let per_hour = RedisLimiter::new(&Config::gcra(100, 3600 * SECOND), "cluster:hour:").unwrap();
    let mut slots = std::collections::HashSet::new();
    for user in 0..40u64 {
        let key = format!("user-{user}");
        let local = Limiter::new(&config).unwrap();
        for step in 0..5u64 {
            let now = 1_000 * SECOND + step * SECOND / 3;
            let want = local.acquire_at(1, now).unwrap();
            let got = per_second
                .acquire_at(&mut redis, key.as_bytes(), 1, now)
                .unwrap();
            assert_eq!(got, want, "{key} step {step}");
        }
        assert!(
            per_hour
                .acquire_at(&mut redis, key.as_bytes(), 1, 0)
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
