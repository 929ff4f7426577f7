//! Keyed acquire, including the clock: librate's table against governor's keyed limiter
//! (dashmap, default quanta clock), measured in the same run.
//!
//! Keys are `u64`s (governor's keys; librate hashes their 8 little-endian bytes), visited
//! in a precomputed random order, all inserted before timing, so every timed call is a
//! lookup of an existing key. Two kinds of traffic:
//!
//! - **idle keys**: a billion per second with a matching burst, so each key's bucket has
//!   refilled by its next request and every call admits. Admitting into an idle bucket
//!   stores a TAT that depends on the exact time, so librate must read the precise clock.
//! - **drained keys**: one per hour, burst 1, each key's unit taken before timing, so every
//!   call denies (a client over its limit). librate settles these on the coarse clock.
//!
//! `…_no_clock` rows read the time once, outside the loop, to show the table's own cost.
//! `…_batch_per_key` rows decide the same keys in batches of 64 (`try_acquire_batch`:
//! slots prefetched 16 at a time, one clock read per 16 keys), timed per key.
//! Run briefly: `cargo bench --bench keyed -- --warm-up-time 1 --measurement-time 3`

#![deny(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use governor::clock::DefaultClock;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use librate::{Config, KeyedLimiter};
use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;
use std::time::Instant;

mod keys;
use keys::{cycle, shuffled};

const SECOND: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);

type Governor = RateLimiter<u64, DefaultKeyedStateStore<u64>, DefaultClock>;

/// Resident memory of this process in bytes (Linux `/proc/self/statm`).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// One kind of traffic: the same limit for both libraries, and whether each key's first
/// request (made before timing) leaves it admitting (`idle`) or denying.
struct Traffic {
    name: &'static str,
    config: Config,
    quota: Quota,
    idle: bool,
}

fn idle() -> Traffic {
    const PER_SECOND: u32 = 1_000_000_000;
    Traffic {
        name: "idle_keys",
        config: Config::gcra(u64::from(PER_SECOND), SECOND),
        quota: Quota::per_second(NonZeroU32::new(PER_SECOND).expect("non-zero")),
        idle: true,
    }
}

fn drained() -> Traffic {
    Traffic {
        name: "drained_keys",
        config: Config::gcra(1, HOUR).with_burst(1),
        quota: Quota::per_hour(NonZeroU32::MIN),
        idle: false,
    }
}

/// Both libraries' tables with every key of `keys` inserted by one request each, and
/// their resident-memory growth per key.
fn tables(traffic: &Traffic, keys: &[u64]) -> (KeyedLimiter, Governor) {
    let count = keys.len() as u64;
    let before = resident_bytes();
    let table = KeyedLimiter::new(&traffic.config, count).expect("valid table");
    for key in keys {
        assert!(table.try_acquire(&key.to_le_bytes(), 1).unwrap());
    }
    let librate_rss = resident_bytes().saturating_sub(before);
    let before = resident_bytes();
    let governor = RateLimiter::keyed(traffic.quota);
    for key in keys {
        assert!(governor.check_key(key).is_ok());
    }
    let governor_rss = resident_bytes().saturating_sub(before);
    println!(
        "{count} {}: librate {} bytes/key of table ({} B/key RSS growth), \
         governor {} B/key RSS growth",
        traffic.name,
        table.bytes_per_key(),
        librate_rss / count,
        governor_rss / count,
    );
    let key = keys[0];
    assert_eq!(table.try_acquire(&key.to_le_bytes(), 1), Ok(traffic.idle));
    assert_eq!(governor.check_key(&key).is_ok(), traffic.idle);
    (table, governor)
}

/// Times each library's check over `keys` in turn, in one group, and with
/// `with_decisions` librate's full decision, through the clock and without it.
fn compare(
    group: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    keys: &[u64],
    (table, governor): &(KeyedLimiter, Governor),
    with_decisions: bool,
) {
    let mut step = cycle(keys);
    group.bench_function("librate_try_acquire", |b| {
        b.iter(|| black_box(table.try_acquire(&step().to_le_bytes(), 1)))
    });
    // Batches of up to 64 keys, in the same order; timed per key.
    let bytes: Vec<[u8; 8]> = keys.iter().map(|key| key.to_le_bytes()).collect();
    let refs: Vec<&[u8]> = bytes.iter().map(|key| &key[..]).collect();
    let mut batches = refs.chunks(64).cycle();
    group.bench_function("librate_try_acquire_batch_per_key", |b| {
        b.iter_custom(|keys| {
            let start = Instant::now();
            let (mut decided, mut admitted) = (0, 0);
            while decided < keys {
                let batch = batches.next().expect("cycle never ends");
                let outcome = |_, allowed| admitted += u64::from(allowed == Ok(true));
                table
                    .try_acquire_batch(batch, 1, outcome)
                    .expect("n ≤ limit");
                decided += batch.len() as u64;
            }
            black_box(admitted);
            // Scaled to exactly `keys` decisions (the last batch may overshoot).
            start.elapsed().mul_f64(keys as f64 / decided as f64)
        })
    });
    group.bench_function("governor_check_key", |b| {
        b.iter(|| black_box(governor.check_key(&step()).is_ok()))
    });
    if with_decisions {
        group.bench_function("librate_acquire_decision", |b| {
            b.iter(|| black_box(table.acquire(&step().to_le_bytes(), 1)))
        });
        let now = librate::now_ns();
        group.bench_function("librate_acquire_at_no_clock", |b| {
            b.iter(|| {
                black_box(table.acquire_at(
                    &step().to_le_bytes(),
                    1,
                    librate::Instant::from_nanos(now),
                ))
            })
        });
    }
}

fn keyed(c: &mut Criterion) {
    for count in [1_000u64, 1_000_000] {
        let keys = shuffled(count);
        for traffic in [idle(), drained()] {
            let tables = tables(&traffic, &keys);
            let mut group = c.benchmark_group(format!("keyed/{count}_{}", traffic.name));
            compare(&mut group, &keys, &tables, traffic.idle);
            group.finish();
        }
    }
    let hot = [42u64];
    let tables = tables(&idle(), &hot);
    let mut group = c.benchmark_group("keyed/one_hot_key");
    compare(&mut group, &hot, &tables, true);
    group.finish();
}

criterion_group!(benches, keyed);
criterion_main!(benches);
