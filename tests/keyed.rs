//! The keyed limiter's Rust API on a virtual clock: the seed scenario, the table's bounds,
//! reclaim, queries, errors, threads, and a sequential reference model.

mod common;

use common::{at, models::KeyedGcraModel};
use librate::{
    Config, ConfigError, Instant, InsufficientCapacity, KeyedAcquireError, KeyedLimiter,
    ReserveError,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

/// The seed's limiter: one request per 2 s, bursts of 1.
fn seed_config() -> Config {
    Config::gcra(1, Duration::from_secs(2)).with_burst(1)
}

#[test]
fn bob_and_alice() {
    let users = KeyedLimiter::new(&seed_config(), 2).unwrap();
    let bob = users.acquire_at(b"bob", 1, Instant::ZERO).unwrap();
    assert!(bob.allowed);
    assert_eq!((bob.remaining, bob.reset_after_ns), (0, 2 * SECOND));

    let early = users.acquire_at(b"bob", 1, at(999 * MS)).unwrap();
    assert!(!early.allowed);
    assert_eq!(early.retry_after_ns, 1001 * MS);
    assert_eq!(early.reset_after_ns, 1001 * MS);

    // Alice is independent of Bob: her first request is admitted at any time.
    let alice = users.acquire_at(b"alice", 1, at(999 * MS)).unwrap();
    assert!(alice.allowed);
    assert_eq!(alice.reset_after_ns, 2 * SECOND);

    let still = users.acquire_at(b"bob", 1, at(1000 * MS)).unwrap();
    assert!(!still.allowed);
    assert_eq!(still.retry_after_ns, 1000 * MS);
    assert!(users.acquire_at(b"bob", 1, at(2001 * MS)).unwrap().allowed);
    // Alice's own bucket: denied until 2999 ms, whatever Bob did.
    let alice_again = users.acquire_at(b"alice", 1, at(2001 * MS)).unwrap();
    assert!(!alice_again.allowed);
    assert_eq!(alice_again.retry_after_ns, 998 * MS);
}

#[test]
fn empty_and_nul_keys_are_distinct_keys() {
    let keys: [&[u8]; 6] = [b"", b"\0", b"\0\0", b"a\0b", b"a", b"a\0"];
    let table = KeyedLimiter::new(&seed_config(), keys.len() as u64).unwrap();
    for key in keys {
        assert!(
            table.acquire_at(key, 1, Instant::ZERO).unwrap().allowed,
            "{key:?}"
        );
    }
    for key in keys {
        assert!(
            !table.acquire_at(key, 1, Instant::ZERO).unwrap().allowed,
            "{key:?}"
        );
    }
    assert_eq!(table.live_keys_at(Instant::ZERO), keys.len() as u64);
}

#[test]
fn a_query_reports_without_inserting() {
    // Capacity 1: two slots. Fill both with live keys; queries still answer.
    let table = KeyedLimiter::new(&Config::gcra(4, Duration::from_secs(4)), 1).unwrap();
    assert!(table.acquire_at(b"a", 3, Instant::ZERO).unwrap().allowed);
    assert!(table.acquire_at(b"b", 1, Instant::ZERO).unwrap().allowed);
    let absent = table.acquire_at(b"nobody", 0, Instant::ZERO).unwrap();
    assert!(absent.allowed);
    assert_eq!(
        (absent.limit, absent.remaining, absent.reset_after_ns),
        (4, 4, 0)
    );
    let present = table.acquire_at(b"a", 0, Instant::ZERO).unwrap();
    assert!(present.allowed);
    assert_eq!((present.remaining, present.reset_after_ns), (1, 3 * SECOND));
    assert_eq!(table.live_keys_at(Instant::ZERO), 2);
    // The queries took no slot: a new key still finds the table full.
    assert_eq!(
        table.acquire_at(b"c", 1, Instant::ZERO),
        Err(KeyedAcquireError::TableFull)
    );

    // And queries of many absent keys leave an empty table empty.
    let empty = KeyedLimiter::new(&Config::gcra(4, Duration::from_secs(4)), 1).unwrap();
    for key in 0u64..100 {
        assert!(
            empty
                .acquire_at(&key.to_le_bytes(), 0, Instant::ZERO)
                .unwrap()
                .allowed
        );
    }
    assert_eq!(empty.live_keys_at(Instant::ZERO), 0);
    assert!(empty.acquire_at(b"x", 1, Instant::ZERO).unwrap().allowed);
    assert!(empty.acquire_at(b"y", 1, Instant::ZERO).unwrap().allowed);
}

#[test]
fn a_cost_beyond_the_limit_is_an_error_not_a_denial() {
    let table = KeyedLimiter::new(&Config::per_second(4).with_burst(2), 4).unwrap();
    assert_eq!(
        table.acquire_at(b"new", 3, Instant::ZERO),
        Err(KeyedAcquireError::InsufficientCapacity)
    );
    assert_eq!(
        table.reserve_at(b"new", 3, Instant::ZERO, Duration::from_nanos(u64::MAX)),
        Err(ReserveError::Acquire(
            KeyedAcquireError::InsufficientCapacity
        ))
    );
    assert_eq!(
        table.try_acquire(b"new", 3),
        Err(KeyedAcquireError::InsufficientCapacity)
    );
    assert_eq!(table.live_keys_at(Instant::ZERO), 0, "nothing was inserted");
    assert!(table.acquire_at(b"new", 2, Instant::ZERO).unwrap().allowed);
    assert_eq!(
        table.acquire_at(b"new", 3, Instant::ZERO),
        Err(KeyedAcquireError::InsufficientCapacity)
    );
}

#[test]
fn a_full_table_refuses_new_keys_until_old_ones_expire() {
    let table = KeyedLimiter::new(&Config::per_second(1), 2).unwrap();
    assert_eq!((table.capacity(), table.max_keys()), (2, 4));
    for key in 0u64..4 {
        assert!(
            table
                .acquire_at(&key.to_le_bytes(), 1, Instant::ZERO)
                .unwrap()
                .allowed
        );
    }
    for now in [0, SECOND / 2, SECOND - 1] {
        assert_eq!(
            table.acquire_at(b"late", 1, at(now)),
            Err(KeyedAcquireError::TableFull),
            "at {now}"
        );
        assert_eq!(
            table.reserve_at(b"late", 1, at(now), Duration::from_secs(1)),
            Err(ReserveError::Acquire(KeyedAcquireError::TableFull))
        );
    }
    // TableFull admitted nothing: the key is still absent, the others still live.
    let late = table.acquire_at(b"late", 0, Instant::ZERO).unwrap();
    assert_eq!((late.remaining, late.reset_after_ns), (1, 0));
    assert_eq!(table.live_keys_at(at(SECOND - 1)), 4);
    for key in 0u64..4 {
        assert!(
            !table
                .acquire_at(&key.to_le_bytes(), 1, at(SECOND - 1))
                .unwrap()
                .allowed
        );
    }
    // At 1 s every old key is fresh again, so their slots may be reused.
    assert!(table.acquire_at(b"late", 1, at(SECOND)).unwrap().allowed);
    assert!(!table.acquire_at(b"late", 1, at(SECOND)).unwrap().allowed);
}

#[test]
fn capacity_live_keys_always_fit_among_stale_ones() {
    // Capacity 8, 16 slots. Every period a new batch of 8 keys arrives; the previous
    // batches are fresh by then, so each batch fits however the slots were used before.
    let config = Config::per_second(1);
    let table = KeyedLimiter::new(&config, 8).unwrap();
    for batch in 0u64..200 {
        let now = batch * SECOND;
        for key in batch * 8..batch * 8 + 8 {
            assert!(
                table
                    .acquire_at(&key.to_le_bytes(), 1, at(now))
                    .unwrap()
                    .allowed
            );
        }
        // No live key was lost to make room: each of this batch is still limited.
        for key in batch * 8..batch * 8 + 8 {
            assert!(
                !table
                    .acquire_at(&key.to_le_bytes(), 1, at(now))
                    .unwrap()
                    .allowed
            );
        }
        assert_eq!(table.live_keys_at(at(now)), 8);
    }
}

#[test]
fn bad_capacities_are_invalid_configs() {
    let config = seed_config();
    assert_eq!(
        KeyedLimiter::new(&config, 0).unwrap_err(),
        ConfigError::ZeroCapacity
    );
    // Too large to address (2⁶⁴ keys of 32 bytes and more) or to allocate (2⁵⁵ bytes).
    for capacity in [u64::MAX, u64::MAX / 2, 1 << 62, 1 << 50] {
        let too_big = ConfigError::Capacity {
            capacity,
            bytes_per_key: 32,
        };
        assert_eq!(
            KeyedLimiter::new(&config, capacity).unwrap_err(),
            too_big,
            "{capacity}"
        );
    }
    assert_eq!(
        KeyedLimiter::new(&Config::per_second(0), 4).unwrap_err(),
        ConfigError::ZeroLimit
    );
}

#[test]
fn gcra_keys_cost_32_bytes_each() {
    let table = KeyedLimiter::new(&seed_config(), 1000).unwrap();
    assert_eq!(table.bytes_per_key(), 32);
    assert_eq!(table.table_bytes(), 32 * 1000 + 128);
}

#[test]
fn reserve_shapes_each_key_independently() {
    // 10 per second, burst 1: one unit every 100 ms.
    let shaper = KeyedLimiter::new(&Config::per_second(10).with_burst(1), 4).unwrap();
    for (expected_wait, key) in [(0, "a"), (100, "a"), (0, "b"), (200, "a"), (100, "b")] {
        let decision = shaper
            .reserve_at(key.as_bytes(), 1, Instant::ZERO, Duration::from_millis(250))
            .unwrap();
        assert!(decision.allowed);
        assert_eq!(decision.wait_ns, expected_wait * MS, "{key}");
    }
    let denied = shaper
        .reserve_at(b"a", 1, Instant::ZERO, Duration::from_millis(250))
        .unwrap();
    assert!(!denied.allowed);
    // a's TAT is 300 ms: the same reserve fits once 400 − d − 100 ≤ 250.
    assert_eq!(denied.retry_after_ns, 50 * MS);
    // With no wait allowed, reserve is acquire.
    assert_eq!(
        shaper
            .reserve_at(b"c", 1, Instant::ZERO, Duration::ZERO)
            .unwrap(),
        shaper.acquire_at(b"d", 1, Instant::ZERO).unwrap()
    );
}

#[test]
fn try_acquire_and_acquire_use_the_library_clock() {
    // A small table, and one too big to stay in cache (9.6 MB), which reads the clock
    // while a key's slot is fetched: the same answers.
    for capacity in [4, 300_000] {
        // One per hour: the second request in a test run is always denied.
        let table = KeyedLimiter::new(&Config::per_hour(1), capacity).unwrap();
        assert!(table.try_acquire(b"k", 1).unwrap());
        assert!(!table.try_acquire(b"k", 1).unwrap());
        assert!(!table.acquire(b"k", 1).unwrap().allowed);
        assert!(table.try_acquire(b"k", 0).unwrap());
        assert_eq!(
            table.try_acquire(b"k", 2),
            Err(KeyedAcquireError::InsufficientCapacity)
        );
        assert!(table.acquire(b"j", 1).unwrap().allowed);
        assert!(!table.try_acquire(b"j", 1).unwrap());
        let reserved = table.reserve(b"r", 1, Duration::ZERO).unwrap();
        assert!(reserved.allowed);
        assert!(!table.reserve(b"r", 1, Duration::ZERO).unwrap().allowed);
        // A query for an absent key answers without inserting it.
        assert!(table.try_acquire(b"absent", 0).unwrap());
        assert_eq!(
            table.live_keys_at(at(librate::now_ns())),
            3,
            "k, j and r only"
        );
    }
}

#[test]
fn a_million_keys_at_capacity_a_million_none_lost() {
    const KEYS: u64 = 1_000_000;
    let table = KeyedLimiter::new(&seed_config(), KEYS).unwrap();
    for key in 0..KEYS {
        assert!(
            table
                .acquire_at(&key.to_le_bytes(), 1, Instant::ZERO)
                .unwrap()
                .allowed
        );
    }
    for key in 0..KEYS {
        let again = table
            .acquire_at(&key.to_le_bytes(), 1, Instant::ZERO)
            .unwrap();
        assert!(!again.allowed, "key {key} was lost");
    }
    assert_eq!(table.live_keys_at(Instant::ZERO), KEYS);
}

/// Runs `threads` threads that each call `body(thread index)` after a common start.
fn race(threads: usize, body: impl Fn(usize) + Sync) {
    let start = Barrier::new(threads);
    thread::scope(|scope| {
        for index in 0..threads {
            let (start, body) = (&start, &body);
            scope.spawn(move || {
                start.wait();
                body(index);
            });
        }
    });
}

#[test]
fn four_threads_on_one_key_admit_exactly_the_burst() {
    let table = KeyedLimiter::new(&Config::gcra(1000, Duration::from_secs(1000)), 16).unwrap();
    let admitted = AtomicU64::new(0);
    race(4, |_| {
        for _ in 0..600 {
            if table
                .acquire_at(b"shared", 1, at(5 * SECOND))
                .unwrap()
                .allowed
            {
                admitted.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    assert_eq!(admitted.into_inner(), 1000);
}

#[test]
fn four_threads_on_distinct_keys_admit_exactly_each_burst() {
    let table = KeyedLimiter::new(&Config::per_second(10), 400).unwrap();
    let admitted: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
    race(4, |thread| {
        for _round in 0..15 {
            for key in 0..100u64 {
                let key = (thread as u64) << 32 | key;
                if table
                    .acquire_at(&key.to_le_bytes(), 1, Instant::ZERO)
                    .unwrap()
                    .allowed
                {
                    admitted[thread].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    // 100 keys a thread, a burst of 10 each, all at one instant.
    for count in admitted {
        assert_eq!(count.into_inner(), 1000);
    }
    assert_eq!(table.live_keys_at(Instant::ZERO), 400);
}

#[test]
fn four_threads_inserting_the_same_new_keys_admit_each_once() {
    // Burst 1: however the inserts race, each key's state is one state.
    let table = KeyedLimiter::new(&Config::per_second(1), 1000).unwrap();
    let admitted = AtomicU64::new(0);
    race(4, |thread| {
        for key in 0..1000u64 {
            // Each thread walks the keys from a different start to vary the races.
            let key = (key + thread as u64 * 250) % 1000;
            if table
                .acquire_at(&key.to_le_bytes(), 1, Instant::ZERO)
                .unwrap()
                .allowed
            {
                admitted.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    assert_eq!(admitted.into_inner(), 1000);
    assert_eq!(table.live_keys_at(Instant::ZERO), 1000);
}

/// A tiny deterministic generator (64-bit LCG, Knuth's MMIX constants) for the model test.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound
    }
}

/// A small table that churns and fills (L=3 per 300 ns, so T=100 and B=3; capacity 4,
/// so 8 slots for the tests' 14 keys) and its model, both empty.
fn churn_table() -> (KeyedLimiter, KeyedGcraModel) {
    let table = KeyedLimiter::new(&Config::gcra(3, Duration::from_nanos(300)), 4).unwrap();
    let model = KeyedGcraModel {
        emission_interval: 100,
        tolerance: 300,
        slots: table.max_keys(),
        tats: HashMap::new(),
    };
    (table, model)
}

#[test]
fn matches_a_sequential_model_through_churn_and_full_tables() {
    // Time moving forward over 14 keys.
    let (table, mut model) = churn_table();
    let mut random = Lcg(42);
    let (mut now, mut fulls, mut denials) = (0, 0, 0);
    for step in 0..20_000 {
        now += random.below(40);
        let key = random.below(14);
        let n = 1 + random.below(3);
        let expected = model.acquire(key, n, now);
        let actual = table.acquire_at(&key.to_le_bytes(), n, at(now));
        match (expected, actual) {
            (Err(()), Err(KeyedAcquireError::TableFull)) => fulls += 1,
            (Ok((allowed, retry)), Ok(decision)) => {
                assert_eq!(
                    (allowed, retry),
                    (decision.allowed, decision.retry_after_ns),
                    "step {step}"
                );
                denials += u64::from(!allowed);
            }
            (expected, actual) => panic!("step {step}: model {expected:?}, table {actual:?}"),
        }
    }
    assert!(
        fulls > 100 && denials > 1000,
        "{fulls} full, {denials} denied"
    );
}

#[test]
fn a_batch_decides_like_the_model_key_after_key() {
    // As above, but in batches of 1–40 keys (groups of 16 inside) sharing one instant,
    // repeats included, against the same model run key after key.
    let (table, mut model) = churn_table();
    let mut random = Lcg(7);
    let (mut now, mut fulls, mut denials, mut admits) = (0, 0, 0, 0);
    for batch in 0..2_000 {
        now += random.below(120);
        let n = 1 + random.below(3);
        let keys: Vec<[u8; 8]> = (0..1 + random.below(40))
            .map(|_| random.below(14).to_le_bytes())
            .collect();
        let keys: Vec<&[u8]> = keys.iter().map(|key| &key[..]).collect();
        let mut outcomes = Vec::new();
        table
            .try_acquire_batch_at(&keys, n, at(now), |index, outcome| {
                outcomes.push((index, outcome))
            })
            .unwrap();
        assert_eq!(outcomes.len(), keys.len(), "batch {batch}");
        for (i, (index, outcome)) in outcomes.into_iter().enumerate() {
            assert_eq!(index, i, "batch {batch}: keys reported in order");
            let key = u64::from_le_bytes(keys[i].try_into().unwrap());
            let expected = model.acquire(key, n, now).map(|(allowed, _)| allowed);
            match (expected, outcome) {
                (Err(()), Err(KeyedAcquireError::TableFull)) => fulls += 1,
                (Ok(allowed), Ok(actual)) if allowed == actual => {
                    admits += u64::from(allowed);
                    denials += u64::from(!allowed);
                }
                (expected, actual) => {
                    panic!("batch {batch} key {i}: model {expected:?}, table {actual:?}")
                }
            }
        }
    }
    assert!(
        fulls > 100 && denials > 1000 && admits > 1000,
        "{fulls} full, {denials} denied, {admits} admitted"
    );
}

#[test]
fn a_batch_checks_the_cost_first_and_a_query_inserts_nothing() {
    let table = KeyedLimiter::new(&Config::per_second(2), 10).unwrap();
    let keys: [&[u8]; 3] = [b"a", b"", b"a\0"];
    let mut called = 0;
    assert_eq!(
        table.try_acquire_batch_at(&keys, 3, Instant::ZERO, |_, _| called += 1),
        Err(InsufficientCapacity)
    );
    assert_eq!(
        table.try_acquire_batch(&[], 3, |_, _| called += 1),
        Err(InsufficientCapacity)
    );
    assert_eq!(called, 0);
    let mut queried = Vec::new();
    table
        .try_acquire_batch_at(&keys, 0, Instant::ZERO, |_, outcome| queried.push(outcome))
        .unwrap();
    assert_eq!(queried, [const { Ok(true) }; 3]);
    assert_eq!(
        table.live_keys_at(Instant::ZERO),
        0,
        "a query never inserts"
    );
    // The empty key and a key with a NUL byte are keys of their own: each takes 2 of 2.
    let mut taken = Vec::new();
    table
        .try_acquire_batch_at(&keys, 2, Instant::ZERO, |_, outcome| taken.push(outcome))
        .unwrap();
    assert_eq!(taken, [Ok(true), Ok(true), Ok(true)]);
    assert_eq!(table.live_keys_at(Instant::ZERO), 3);
}

#[test]
fn a_batch_on_the_library_clock_decides_now() {
    // One unit per hour: the first request per key is admitted, a repeat in the same
    // batch or a later one is denied, whatever the clock reads.
    let table = KeyedLimiter::new(&Config::per_hour(1), 100).unwrap();
    let keys: Vec<[u8; 8]> = (0u64..40).map(|key| (key % 20).to_le_bytes()).collect();
    let keys: Vec<&[u8]> = keys.iter().map(|key| &key[..]).collect();
    for round in 0..2 {
        let mut admitted = Vec::new();
        table
            .try_acquire_batch(&keys, 1, |index, outcome| {
                admitted.push((index, outcome.unwrap()))
            })
            .unwrap();
        let expected: Vec<(usize, bool)> = (0..40).map(|i| (i, round == 0 && i < 20)).collect();
        assert_eq!(admitted, expected, "round {round}");
    }
}
