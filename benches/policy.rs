//! A policy of two GCRA rules against the same two rules as separate limiters, each
//! asked in turn: `cargo bench --bench policy`.
//!
//! | group | what |
//! |---|---|
//! | `policy_through_clock` | `Policy::try_acquire` against two `Limiter::try_acquire`s, the clock included, with both rules fresh and busy (see `BUSY`) |
//! | `policy_contended_2_threads` | 2 threads on one policy against 2 threads on the two limiters, busy (the slower thread's time per call) |
//! | `policy_at_frozen_time` | `Policy::acquire_at` against two `Limiter::acquire_at`s on a black-boxed frozen time: the decisions alone, with every field |
//! | `keyed_policy_at_frozen_time` | `KeyedPolicy::acquire_at` of a per-key and a global rule against `KeyedLimiter::acquire_at` and `Limiter::acquire_at` asked in turn, over 1,000 keys in the table, at a frozen time |
//!
//! Both rules admit every measured call (a per-second rule and a per-hour one, with far
//! more room than a run takes), the path every request under its limits takes. The
//! separate limiters take a request from both rules without ever giving units back: the
//! policy's all-or-nothing is what the difference buys.

#![deny(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use librate::{Config, Instant, KeyedLimiter, KeyedPolicy, KeyedRule, Limiter, Policy};

mod timing;
use timing::{contended, single};

const SECOND: u64 = 1_000_000_000;
const HOUR: Duration = Duration::from_secs(3600);
/// The time `acquire_at` is asked about in the frozen-time group.
const FROZEN_NS: u64 = 1_000 * SECOND;

/// The two rules: 10 million a second and 2⁴⁰ an hour, bursts far beyond any run.
fn rules() -> [Config; 2] {
    [
        Config::per_second(10_000_000).with_burst(u64::from(u32::MAX)),
        Config::gcra(1 << 40, HOUR).with_burst(1 << 40),
    ]
}

/// Units taken before the busy runs: the first rule's TAT then 107 s ahead, the second's
/// 3.5 s, so neither drains during a run and the cheap clock's bounds settle every
/// decision, as for `gcra.rs`' busy bucket. Fresh, the second rule (3.3 ns a unit) drains
/// between calls, and each call needs the exact time for it.
const BUSY: u64 = 1 << 30;

fn through_clock(c: &mut Criterion) {
    let mut group = c.benchmark_group("policy_through_clock");
    for (state, prefill) in [("fresh", 0), ("busy", BUSY)] {
        let [first, second] = rules().map(|rule| Limiter::new(&rule).unwrap());
        take(prefill, |n| {
            first.try_acquire(n).unwrap() && second.try_acquire(n).unwrap()
        });
        single(&mut group, BenchmarkId::new("two_limiters", state), || {
            first.try_acquire(1).unwrap() && second.try_acquire(1).unwrap()
        });
        let policy = Policy::new(&rules()).unwrap();
        take(prefill, |n| policy.try_acquire(n).unwrap());
        single(&mut group, BenchmarkId::new("policy", state), || {
            policy.try_acquire(1).unwrap()
        });
    }
    group.finish();
}

/// Takes `units` in requests of at most 2²⁰ through `take`, which says whether they fit.
fn take(units: u64, mut take: impl FnMut(u64) -> bool) {
    let mut left = units;
    while left > 0 {
        let n = left.min(1 << 20);
        assert!(take(n), "the prefill fits the rules");
        left -= n;
    }
}

fn at_frozen_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("policy_at_frozen_time");
    let [first, second] = rules().map(|rule| Limiter::new(&rule).unwrap());
    single(
        &mut group,
        BenchmarkId::new("two_limiters", "admit"),
        || {
            let now = black_box(FROZEN_NS);
            (
                first.acquire_at(1, Instant::from_nanos(now)).unwrap(),
                second.acquire_at(1, Instant::from_nanos(now)).unwrap(),
            )
        },
    );
    let policy = Policy::new(&rules()).unwrap();
    single(&mut group, BenchmarkId::new("policy", "admit"), || {
        policy
            .acquire_at(1, black_box(Instant::from_nanos(FROZEN_NS)))
            .unwrap()
    });
    group.finish();
}

fn contended_2_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("policy_contended_2_threads");
    let [first, second] = rules().map(|rule| Limiter::new(&rule).unwrap());
    take(BUSY, |n| {
        first.try_acquire(n).unwrap() && second.try_acquire(n).unwrap()
    });
    contended(&mut group, BenchmarkId::new("two_limiters", "busy"), |_| {
        first.try_acquire(1).unwrap() && second.try_acquire(1).unwrap()
    });
    let policy = Policy::new(&rules()).unwrap();
    take(BUSY, |n| policy.try_acquire(n).unwrap());
    contended(&mut group, BenchmarkId::new("policy", "busy"), |_| {
        policy.try_acquire(1).unwrap()
    });
    group.finish();
}

/// Keys the keyed group cycles through, each already in the table.
const KEYS: u64 = 1_000;

fn keyed_at_frozen_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("keyed_policy_at_frozen_time");
    let keys: Vec<[u8; 8]> = (0..KEYS).map(u64::to_le_bytes).collect();
    let [per_key, global] = rules();
    let table = KeyedLimiter::new(&per_key, KEYS).unwrap();
    let limiter = Limiter::new(&global).unwrap();
    let policy = KeyedPolicy::new(
        &[KeyedRule::per_key(per_key), KeyedRule::global(global)],
        KEYS,
    )
    .unwrap();
    for key in &keys {
        assert!(
            table
                .acquire_at(key, 1, Instant::from_nanos(FROZEN_NS))
                .unwrap()
                .allowed
        );
        let admitted = policy
            .acquire_at(key, 1, Instant::from_nanos(FROZEN_NS))
            .unwrap();
        assert!(admitted.decision.allowed);
    }
    let mut next = keys.iter().cycle();
    single(
        &mut group,
        BenchmarkId::new("keyed_and_limiter", "admit"),
        || {
            let (key, now) = (next.next().unwrap(), black_box(FROZEN_NS));
            (
                table.acquire_at(key, 1, Instant::from_nanos(now)).unwrap(),
                limiter.acquire_at(1, Instant::from_nanos(now)).unwrap(),
            )
        },
    );
    single(
        &mut group,
        BenchmarkId::new("keyed_policy", "admit"),
        || {
            let key = next.next().unwrap();
            policy
                .acquire_at(key, 1, black_box(Instant::from_nanos(FROZEN_NS)))
                .unwrap()
        },
    );
    group.finish();
}

criterion_group!(
    benches,
    through_clock,
    at_frozen_time,
    contended_2_threads,
    keyed_at_frozen_time
);
criterion_main!(benches);
