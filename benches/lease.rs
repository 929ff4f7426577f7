//! A leased decision against an in-process one: `cargo bench --bench lease`.
//!
//! A [`LeaseHolder`] under a live lease decides from its share with atomics alone
//! (docs/leases.md); this measures what deciding through it costs beside
//! [`Limiter::try_acquire`] on the same rule, both through the clock, in the two shapes
//! `gcra.rs` measures: a busy bucket (the rule's TAT far ahead of now) and an idle one
//! (`lease_shapes.rs`). Each row is timed on its own, seconds apart from the others;
//! `lease_pairs.rs` times the two calls in turns, for a ratio the machine's other jobs
//! move less.

#![deny(missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use librate::lease::HolderState;
use librate::Instant;

// Only `single`: the contended loop is for the other benches.
#[allow(dead_code)]
mod timing;
use timing::single;
mod lease_shapes;
use lease_shapes::{shapes, Shape};

/// `Limiter::try_acquire` and `LeaseHolder::try_acquire` on each shape, each checked
/// afterwards to still admit (and the holder to be leased); and between them, to part the
/// holder's cost, the in-process decision with a demand count beside it, and
/// `Limiter::try_acquire_at(1, Instant::now())` (the precise clock) on a limiter as made
/// and on one whose rule changed once (to the same rule): the path a share's decisions
/// would take if its rule, which every grant sets, changed as a limiter's does rather
/// than in place (`src/lease/gcra_share.rs`).
fn leased(c: &mut Criterion) {
    let mut group = c.benchmark_group("lease");
    for shape in shapes() {
        let limiter = shape.limiter();
        measure(&mut group, &shape, "in_process", || {
            limiter.try_acquire(black_box(1)) == Ok(true)
        });

        let limiter = shape.limiter();
        measure(&mut group, &shape, "in_process_at_now", || {
            limiter.try_acquire_at(black_box(1), Instant::now()) == Ok(true)
        });

        // The floor of a decision that counts its demand, as a holder's must for its
        // renewals: the in-process decision and one atomic add beside it.
        let limiter = shape.limiter();
        let demand = AtomicU64::new(0);
        measure(&mut group, &shape, "in_process_counted", || {
            demand.fetch_add(black_box(1), Ordering::Relaxed);
            limiter.try_acquire(black_box(1)) == Ok(true)
        });

        let limiter = shape.limiter();
        let change = limiter.set_config_at(&shape.config, Instant::now());
        change.expect("a change to the same rule is valid");
        measure(&mut group, &shape, "in_process_changed_at_now", || {
            limiter.try_acquire_at(black_box(1), Instant::now()) == Ok(true)
        });

        let holder = shape.holder();
        measure(&mut group, &shape, "leased", || {
            holder.try_acquire(black_box(1)) == Ok(true)
        });
        assert_eq!(holder.state(), HolderState::Leased);
    }
    group.finish();
}

/// Measures `call` as `shape`/`name`, then checks that it still admits: a row measured in
/// another shape measures the wrong case.
fn measure(
    group: &mut BenchmarkGroup<WallTime>,
    shape: &Shape,
    name: &str,
    call: impl Fn() -> bool,
) {
    single(group, BenchmarkId::new(shape.label, name), &call);
    assert!(call(), "{}/{name} stopped admitting", shape.label);
}

criterion_group! {
    name = benches;
    // As gcra.rs: short runs on a shared machine, ratios taken within one run.
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = leased
}
criterion_main!(benches);
