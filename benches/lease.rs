//! A leased decision against an in-process one: `cargo bench --bench lease`.
//!
//! A [`LeaseHolder`] under a live lease decides from its share with atomics alone
//! (docs/leases.md); this measures what deciding through it costs beside
//! [`Limiter::try_acquire`] on the same rule, both through the clock, in the two shapes
//! `gcra.rs` measures: a busy bucket (the rule's TAT far ahead of now) and an idle one.
//! The holder's lease is granted by applying a hand-made grant of the whole rule, so no
//! Redis is needed: sent at time 0 and lasting 100 years, it is live throughout; the share,
//! emptied at time 0, has refilled by now (the machine has been up longer than the rule's
//! τ), and both are then prefilled alike.

#![deny(missing_docs)]

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use librate::lease::{Fallback, Grant, HolderState, LeaseHolder};
use librate::{Config, Instant, LeaseRule, Limiter};

// Only `single`: the contended loop is for the other benches.
#[allow(dead_code)]
mod timing;
use timing::single;

/// A lease that outlasts any run (below the 2⁵³ µs a lease may last).
const LEASE: Duration = Duration::from_secs(100 * 365 * 86_400);

/// A rule and the units taken before the measured calls.
struct Shape {
    label: &'static str,
    config: Config,
    prefill: u64,
}

/// The shapes of `gcra.rs`'s `gcra_busy` and `gcra_idle`: T = 100 ns with τ = 429 s and a
/// TAT 100 ms ahead of now (the coarse clock settles every decision), and T = 1 ns
/// (every call finds the bucket full again).
fn shapes() -> [Shape; 2] {
    [
        Shape {
            label: "gcra_busy",
            config: Config::per_second(10_000_000).with_burst(u64::from(u32::MAX)),
            prefill: 1_000_000,
        },
        Shape {
            label: "gcra_idle",
            config: Config::per_second(1_000_000_000),
            prefill: 0,
        },
    ]
}

impl Shape {
    fn limiter(&self) -> Limiter {
        let limiter = Limiter::new(&self.config).expect("bench rules are valid");
        let prefill = limiter.acquire_at(self.prefill, Instant::now());
        assert!(prefill.expect("prefill ≤ burst").allowed, "{}", self.label);
        limiter
    }

    /// A holder of the whole rule, leased from time 0 for [`LEASE`].
    fn holder(&self) -> LeaseHolder {
        let rule = LeaseRule::new(&self.config, LEASE).expect("bench rules lease");
        let holder = LeaseHolder::named(&rule, Fallback::Deny, "bench").unwrap();
        let burst = match self.config.burst {
            0 => self.config.limit,
            burst => burst,
        };
        let lease_us = LEASE.as_micros() as u64;
        let whole = 1_000_000;
        let grant = Grant::from_fields(b"granted", [whole, burst, lease_us, 0, whole, burst, 1, 0])
            .unwrap();
        let renewal = holder.renewal_at(Instant::ZERO);
        let state = holder.apply_at(&renewal, &grant, Instant::ZERO).unwrap();
        assert_eq!(state, HolderState::Leased);
        let prefill = holder.acquire_at(self.prefill, Instant::now());
        assert!(prefill.expect("prefill ≤ burst").allowed, "{}", self.label);
        holder
    }
}

/// `Limiter::try_acquire` and `LeaseHolder::try_acquire` on each shape, each checked
/// afterwards to still admit (and the holder to be leased); and between them, to part the
/// holder's cost, the in-process decision with a demand count beside it, and `Limiter::try_acquire_at(1, Instant::now())` (the precise clock, which
/// the holder reads) on a limiter as made and on one whose rule changed once (to the same
/// rule): the path a share's decisions would take if its rule, which every grant sets,
/// changed as a limiter's does rather than in place (`src/lease/gcra_share.rs`).
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
