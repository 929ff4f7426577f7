//! Keyed acquire, including the clock: librate's table against governor's keyed limiter
//! (dashmap, default quanta clock), measured in the same run.
//!
//! Keys are `u64`s (governor's keys; librate hashes their 8 little-endian bytes), visited
//! in a precomputed random order, all inserted before timing, so every timed call is a
//! lookup of an existing key with a limit generous enough to admit. `…_no_clock` rows
//! read the time once, outside the loop, to show the table's own cost. Run briefly:
//! `cargo bench --bench keyed -- --warm-up-time 1 --measurement-time 3`

use criterion::{criterion_group, criterion_main, Criterion};
use governor::{Quota, RateLimiter};
use rate::{Config, KeyedLimiter};
use std::hint::black_box;
use std::num::NonZeroU32;

/// Generous limits: a billion per second with a matching burst, so every call admits.
const PER_SECOND: u32 = 1_000_000_000;
const SECOND: u64 = 1_000_000_000;

/// The keys `0..count` in a random order (a fixed-seed xorshift Fisher-Yates shuffle).
fn shuffled(count: u64) -> Vec<u64> {
    let mut keys: Vec<u64> = (0..count).collect();
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    for i in (1..keys.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        keys.swap(i, (state % (i as u64 + 1)) as usize);
    }
    keys
}

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

fn keyed(c: &mut Criterion) {
    for count in [1_000u64, 1_000_000] {
        let keys = shuffled(count);
        let before = resident_bytes();
        let table = KeyedLimiter::new(&Config::gcra(u64::from(PER_SECOND), SECOND), count)
            .expect("valid table");
        for key in &keys {
            assert!(table.try_acquire(&key.to_le_bytes(), 1).unwrap());
        }
        let librate_rss = resident_bytes().saturating_sub(before);
        let before = resident_bytes();
        let governor = RateLimiter::keyed(Quota::per_second(
            NonZeroU32::new(PER_SECOND).expect("non-zero"),
        ));
        for key in &keys {
            assert!(governor.check_key(key).is_ok());
        }
        let governor_rss = resident_bytes().saturating_sub(before);
        println!(
            "{count} keys: librate {} bytes/key of table ({} B/key RSS growth), \
             governor {} B/key RSS growth",
            table.bytes_per_key(),
            librate_rss / count,
            governor_rss / count,
        );

        let mut group = c.benchmark_group(format!("keyed/{count}_random_keys"));
        let mut next = 0;
        group.bench_function("librate_try_acquire", |b| {
            b.iter(|| {
                next = (next + 1) % keys.len();
                black_box(table.try_acquire(&keys[next].to_le_bytes(), 1))
            })
        });
        group.bench_function("librate_acquire_decision", |b| {
            b.iter(|| {
                next = (next + 1) % keys.len();
                black_box(table.acquire(&keys[next].to_le_bytes(), 1))
            })
        });
        group.bench_function("governor_check_key", |b| {
            b.iter(|| {
                next = (next + 1) % keys.len();
                black_box(governor.check_key(&keys[next]).is_ok())
            })
        });
        // The table alone: the time is read once, outside the loop.
        let now = rate::now_ns();
        group.bench_function("librate_acquire_at_no_clock", |b| {
            b.iter(|| {
                next = (next + 1) % keys.len();
                black_box(table.acquire_at(&keys[next].to_le_bytes(), 1, now))
            })
        });
        group.finish();
    }

    let table = KeyedLimiter::new(&Config::gcra(u64::from(PER_SECOND), SECOND), 1_000)
        .expect("valid table");
    let governor = RateLimiter::keyed(Quota::per_second(
        NonZeroU32::new(PER_SECOND).expect("non-zero"),
    ));
    let hot = 42u64;
    let mut group = c.benchmark_group("keyed/one_hot_key");
    group.bench_function("librate_try_acquire", |b| {
        b.iter(|| black_box(table.try_acquire(&hot.to_le_bytes(), 1)))
    });
    group.bench_function("librate_acquire_decision", |b| {
        b.iter(|| black_box(table.acquire(&hot.to_le_bytes(), 1)))
    });
    group.bench_function("governor_check_key", |b| {
        b.iter(|| black_box(governor.check_key(&hot).is_ok()))
    });
    let now = rate::now_ns();
    group.bench_function("librate_acquire_at_no_clock", |b| {
        b.iter(|| black_box(table.acquire_at(&hot.to_le_bytes(), 1, now)))
    });
    group.finish();
}

criterion_group!(benches, keyed);
criterion_main!(benches);
