//! loom model of a lease holder's GCRA share renewed while threads decide from it
//! (src/lease/gcra_share.rs): every decision is made wholly under the share before the
//! renewal or wholly under the one after, and the share after holds the tokens left at
//! the renewal's instant, capped at the new burst (a continuing lease keeps its tokens).
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!       cargo test --release --test loom_lease_share`
#![cfg(loom)]

use librate::lease::{Fallback, Grant, HolderState, LeaseHolder};
use librate::{Config, Decision, Instant, LeaseRule};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const MS: u64 = 1_000_000;
/// The renewal interval: a quarter of the 2 s lease. A decision made beside the share (no
/// lease) would say to retry after it; one of a share says less.
const RENEW_EVERY: u64 = 500 * MS;
/// When the share is full and the renewal comes.
const NOW: u64 = 8 * MS;

/// A rule of 1,000 a second (T = 1 ms, B = 1,000), and a holder leased at time 0 half of
/// it in bursts of 4: one unit every 2 ms, τ = 8 ms. The share starts empty, so at
/// [`NOW`] it holds 4 tokens, and no more come at that frozen time.
fn leased() -> LeaseHolder {
    let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(2)).unwrap();
    let holder = LeaseHolder::named(&rule, Fallback::Deny, "loom").unwrap();
    let renewal = holder.renewal_at(Instant::ZERO);
    holder
        .apply_at(&renewal, &granted(500_000, 4), Instant::ZERO)
        .unwrap();
    holder
}

fn granted(rate: u64, burst: u64) -> Grant {
    let fields = [rate, burst, 2_000_000, 1, rate, burst, 1, 0];
    Grant::from_fields(b"granted", fields).unwrap()
}

/// Renews the lease at [`NOW`] with a quarter of the rule in bursts of 3 (one unit every
/// 4 ms): the lease continues, so the share keeps its tokens, capped at 3.
fn renew(holder: &LeaseHolder) {
    let at = Instant::from_nanos(NOW);
    let renewal = holder.renewal_at(at);
    let state = holder.apply_at(&renewal, &granted(250_000, 3), at).unwrap();
    assert_eq!(state, HolderState::Leased);
}

/// Checks `decisions` of 2 units each against the model: each decided by the share
/// before the renewal (limit 4) or after it (limit 3), 2 tokens an admission; then the
/// share holds what was left at the renewal, capped at 3, less the admissions after.
fn check(holder: &LeaseHolder, decisions: &[Decision]) {
    let admitted_under = |burst: u64| {
        let under = decisions.iter().filter(|d| d.limit == burst && d.allowed);
        under.count() as u64
    };
    for decision in decisions {
        assert!(decision.limit == 4 || decision.limit == 3, "{decision:?}");
        assert!(decision.retry_after_ns < RENEW_EVERY, "{decision:?}");
    }
    let (before, after) = (admitted_under(4), admitted_under(3));
    let carried = (4 - 2 * before).min(3);
    assert!(2 * after <= carried);
    let state = holder.acquire_at(0, Instant::from_nanos(NOW)).unwrap();
    assert_eq!((state.limit, state.remaining), (3, carried - 2 * after));
}

/// Two threads decide while the main thread renews. One preemption: two, with two
/// deciders that each read the share's words and wait on a frozen word, multiply the
/// paths past what loom can visit (the next model races one decider at two).
#[test]
fn a_renewal_racing_two_decisions() {
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(1);
    model.check(|| {
        let holder = Arc::new(leased());
        let deciders: Vec<_> = (0..2)
            .map(|_| {
                let holder = Arc::clone(&holder);
                thread::spawn(move || holder.acquire_at(2, Instant::from_nanos(NOW)).unwrap())
            })
            .collect();
        renew(&holder);
        let decisions: Vec<_> = deciders.into_iter().map(|t| t.join().unwrap()).collect();
        check(&holder, &decisions);
    });
}

/// One thread decides by the outcome alone (`try_acquire_at`) while the main thread
/// decides and then renews: the thread races both.
#[test]
fn a_renewal_racing_a_decision_after_another() {
    loom::model(|| {
        let holder = Arc::new(leased());
        let decider = {
            let holder = Arc::clone(&holder);
            thread::spawn(move || holder.try_acquire_at(2, Instant::from_nanos(NOW)).unwrap())
        };
        let first = holder.acquire_at(2, Instant::from_nanos(NOW)).unwrap();
        renew(&holder);
        let admitted = decider.join().unwrap();
        // The main thread's decision comes before the renewal. Of the 4 tokens, the two
        // decisions before it take all (none carried); with the thread's after it, 2 are
        // carried, which it takes: admitted either way, and none left.
        assert!(first.allowed && first.limit == 4);
        assert!(admitted);
        let state = holder.acquire_at(0, Instant::from_nanos(NOW)).unwrap();
        assert_eq!((state.limit, state.remaining), (3, 0));
    });
}
