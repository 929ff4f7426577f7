//! The keyed table with the window algorithms (docs/decision.md, docs/keyed.md), on a virtual
//! clock.

use librate::{Config, Instant, KeyedAcquireError, KeyedLimiter, ReserveError};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

/// Acquires one unit for `key` at `now_ms`: (allowed, retry_after_ns).
fn one(table: &KeyedLimiter, key: &str, now_ms: u64) -> (bool, u64) {
    let decision = table
        .acquire_at(key.as_bytes(), 1, Instant::from_nanos(now_ms * MS))
        .unwrap();
    (decision.allowed, decision.retry_after_ns)
}

#[test]
fn fixed_window_per_key() {
    // Two per window of 1 s: windows [0, 1 s), [1 s, 2 s), …
    let table = KeyedLimiter::new(&Config::fixed_window(2, Duration::from_secs(1)), 4).unwrap();
    assert_eq!(one(&table, "a", 0), (true, 0));
    assert_eq!(one(&table, "a", 500), (true, 0));
    // The window is spent; the next one starts at 1 s.
    assert_eq!(one(&table, "a", 900), (false, 100 * MS));
    assert_eq!(one(&table, "b", 900), (true, 0));
    assert_eq!(one(&table, "a", 1000), (true, 0));
    let query = table
        .acquire_at(b"a", 0, Instant::from_nanos(1000 * MS))
        .unwrap();
    assert_eq!((query.limit, query.remaining), (2, 1));
}

#[test]
fn sliding_window_per_key() {
    // Two per sliding second: prev·(P − e) + (cur + n)·P ≤ L·P.
    let table = KeyedLimiter::new(&Config::sliding_window(2, Duration::from_secs(1)), 4).unwrap();
    assert_eq!(one(&table, "a", 0), (true, 0));
    assert_eq!(one(&table, "a", 500), (true, 0));
    // At 1.25 s: 2·750 ms + 1·1 s > 2 s; it fits once 2·(1 s − e) ≤ 1 s, at e = 500 ms.
    assert_eq!(one(&table, "a", 1250), (false, 250 * MS));
    assert_eq!(one(&table, "b", 1250), (true, 0));
    assert_eq!(one(&table, "a", 1500), (true, 0));
}

#[test]
fn sliding_log_per_key() {
    // Exactly two in any second (t − 1 s, t].
    let table = KeyedLimiter::new(&Config::sliding_log(2, Duration::from_secs(1)), 4).unwrap();
    assert_eq!(one(&table, "a", 0), (true, 0));
    assert_eq!(one(&table, "a", 500), (true, 0));
    // The entry at 0 leaves the log at 1 s.
    assert_eq!(one(&table, "a", 900), (false, 100 * MS));
    assert_eq!(one(&table, "b", 900), (true, 0));
    assert_eq!(one(&table, "a", 1000), (true, 0));
    assert_eq!(one(&table, "a", 1000), (false, 500 * MS));
}

#[test]
fn multi_word_states_are_installed_whole() {
    // A log of three: its state spans many words; each key's must arrive intact.
    let table = KeyedLimiter::new(&Config::sliding_log(3, Duration::from_secs(1)), 2).unwrap();
    for key in ["a", "b", "c", "d"] {
        for at in 0..3 {
            assert_eq!(one(&table, key, at), (true, 0), "{key} at {at} ms");
        }
        assert_eq!(one(&table, key, 3), (false, 997 * MS), "{key}");
    }
    for key in ["a", "b", "c", "d"] {
        assert_eq!(one(&table, key, 4), (false, 996 * MS), "{key}");
    }
}

#[test]
fn full_tables_reclaim_fresh_window_states() {
    for config in [
        Config::fixed_window(1, Duration::from_secs(1)),
        Config::sliding_window(1, Duration::from_secs(1)),
        Config::sliding_log(1, Duration::from_secs(1)),
    ] {
        // Capacity 1: two slots.
        let table = KeyedLimiter::new(&config, 1).unwrap();
        assert_eq!(one(&table, "x", 0), (true, 0), "{config:?}");
        assert_eq!(one(&table, "y", 0), (true, 0), "{config:?}");
        assert_eq!(
            table.acquire_at(b"z", 1, Instant::from_nanos(500 * MS)),
            Err(KeyedAcquireError::TableFull),
            "{config:?}"
        );
        // At 2 s nothing is counted in the current or the previous window, and the
        // log's entries have expired: x and y are fresh, so z may take a slot.
        assert_eq!(one(&table, "z", 2000), (true, 0), "{config:?}");
        assert!(!one(&table, "z", 2000).0, "{config:?}");
    }
}

#[test]
fn windows_have_no_reserve() {
    for config in [
        Config::fixed_window(4, Duration::from_secs(1)),
        Config::sliding_window(4, Duration::from_secs(1)),
        Config::sliding_log(4, Duration::from_secs(1)),
    ] {
        let table = KeyedLimiter::new(&config, 2).unwrap();
        assert_eq!(
            table.reserve_at(b"new", 1, Instant::ZERO, Duration::from_secs(1)),
            Err(ReserveError::Unsupported)
        );
        assert!(table.acquire_at(b"old", 1, Instant::ZERO).unwrap().allowed);
        assert_eq!(
            table.reserve_at(b"old", 1, Instant::ZERO, Duration::from_secs(1)),
            Err(ReserveError::Unsupported)
        );
        assert_eq!(
            table.live_keys_at(Instant::ZERO),
            1,
            "{config:?}: reserve inserted nothing"
        );
    }
}

#[test]
fn four_threads_admit_exactly_the_limit_per_key() {
    for (config, limit) in [
        (Config::fixed_window(200, Duration::from_secs(1000)), 200),
        (Config::sliding_window(200, Duration::from_secs(1000)), 200),
        (Config::sliding_log(64, Duration::from_secs(1000)), 64),
    ] {
        let table = KeyedLimiter::new(&config, 16).unwrap();
        let (shared, own) = (AtomicU64::new(0), AtomicU64::new(0));
        let start = Barrier::new(4);
        thread::scope(|scope| {
            for thread in 0..4u64 {
                let (table, shared, own, start) = (&table, &shared, &own, &start);
                scope.spawn(move || {
                    start.wait();
                    let mine = thread.to_le_bytes();
                    for _ in 0..limit {
                        if table
                            .acquire_at(b"shared", 1, Instant::from_nanos(SECOND))
                            .unwrap()
                            .allowed
                        {
                            shared.fetch_add(1, Ordering::Relaxed);
                        }
                        for _ in 0..2 {
                            if table
                                .acquire_at(&mine, 1, Instant::from_nanos(SECOND))
                                .unwrap()
                                .allowed
                            {
                                own.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(shared.into_inner(), limit, "{config:?}");
        assert_eq!(own.into_inner(), 4 * limit, "{config:?}");
    }
}

#[test]
fn a_batch_decides_each_window_algorithm_as_single_acquires_do() {
    // A batch and one acquire_at per key, on twin tables (roomy, so no key is ever
    // refused), see the same requests and must agree on every outcome.
    let configs = [
        Config::fixed_window(3, Duration::from_millis(100)),
        Config::sliding_window(3, Duration::from_millis(100)),
        Config::sliding_log(3, Duration::from_millis(100)),
    ];
    for config in configs {
        let batched = KeyedLimiter::new(&config, 64).unwrap();
        let single = KeyedLimiter::new(&config, 64).unwrap();
        let (mut now, mut state, mut denials) = (0, 0x2545_F491_4F6C_DD1Du64, 0);
        for _ in 0..500 {
            // xorshift64: time steps of 0–40 ms, batches of 1–24 keys out of 6, n 1–2.
            let mut next = |bound: u64| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state % bound
            };
            now += next(40) * MS;
            let n = 1 + next(2);
            let keys: Vec<[u8; 1]> = (0..1 + next(24)).map(|_| [next(6) as u8]).collect();
            let keys: Vec<&[u8]> = keys.iter().map(|key| &key[..]).collect();
            let mut outcomes = Vec::new();
            batched
                .try_acquire_batch_at(&keys, n, Instant::from_nanos(now), |_, outcome| {
                    outcomes.push(outcome)
                })
                .unwrap();
            for (key, outcome) in keys.iter().zip(outcomes) {
                let expected = single
                    .acquire_at(key, n, Instant::from_nanos(now))
                    .unwrap()
                    .allowed;
                assert_eq!(outcome, Ok(expected), "{config:?} at {now}");
                denials += u64::from(!expected);
            }
        }
        assert!(denials > 500, "{config:?}: {denials} denials");
    }
}
