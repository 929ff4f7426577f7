//! loom models of one GCRA limiter shared by several threads at a frozen time.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!       cargo test --release --test loom_limiter`
#![cfg(loom)]

mod common;
use common::at;

use librate::{Config, Instant, Limiter};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const T: u64 = 100; // emission interval: limit 1 per 100 ns

fn limiter(burst: u64) -> Arc<Limiter> {
    Arc::new(Limiter::new(&Config::gcra(1, Duration::from_nanos(T)).with_burst(burst)).unwrap())
}

/// Runs `work` on `threads` threads against one limiter and returns their results.
fn race<R: Send + 'static>(
    limiter: &Arc<Limiter>,
    threads: usize,
    work: fn(&Limiter) -> R,
) -> Vec<R> {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let limiter = Arc::clone(limiter);
            thread::spawn(move || work(&limiter))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn frozen_clock_admits_exactly_the_burst() {
    loom::model(|| {
        let limiter = limiter(2);
        let admitted = race(&limiter, 3, |l| l.acquire_at(1, at(1000)).unwrap().allowed);
        assert_eq!(admitted.iter().filter(|&&a| a).count(), 2);
        // Nothing drained, and the denial wrote nothing: the TAT is 1000 + 2·T.
        let after = limiter.acquire_at(0, at(1000)).unwrap();
        assert_eq!((after.remaining, after.reset_after_ns), (0, 2 * T));
        // One period later exactly one more unit is admitted.
        assert!(limiter.acquire_at(1, at(1000 + T)).unwrap().allowed);
        assert!(!limiter.acquire_at(1, at(1000 + T)).unwrap().allowed);
    });
}

#[test]
fn reservations_never_hand_out_the_same_slot_twice() {
    loom::model(|| {
        // Burst 1, each reserve may wait up to 10 slots: all three are admitted, and their
        // waits are three distinct slots 0, T, 2T in some order.
        let limiter = limiter(1);
        let mut waits = race(&limiter, 3, |l| {
            let d = l
                .reserve_at(1, Instant::ZERO, Duration::from_nanos(10 * T))
                .unwrap();
            assert!(d.allowed);
            d.wait_ns
        });
        waits.sort_unstable();
        assert_eq!(waits, [0, T, 2 * T]);
        assert_eq!(
            limiter.acquire_at(0, Instant::ZERO).unwrap().reset_after_ns,
            3 * T
        );
    });
}

#[test]
fn acquire_and_reserve_together_stay_within_the_burst() {
    loom::model(|| {
        // Burst 2 at a frozen time: two acquires and one reserve that may not wait. However
        // they interleave, exactly two units are admitted in total.
        let limiter = limiter(2);
        let a = {
            let l = Arc::clone(&limiter);
            thread::spawn(move || l.acquire_at(1, Instant::ZERO).unwrap().allowed)
        };
        let b = {
            let l = Arc::clone(&limiter);
            thread::spawn(move || {
                l.reserve_at(1, Instant::ZERO, Duration::ZERO)
                    .unwrap()
                    .allowed
            })
        };
        let c = limiter.acquire_at(1, Instant::ZERO).unwrap().allowed;
        let admitted = [a.join().unwrap(), b.join().unwrap(), c];
        assert_eq!(admitted.iter().filter(|&&a| a).count(), 2);
    });
}

#[test]
fn a_reset_racing_acquires_decides_each_before_or_after_it() {
    loom::model(|| {
        // Burst 1, drained at 1000: before the reset nothing fits, after it one unit does.
        let limiter = limiter(1);
        assert!(limiter.acquire_at(1, at(1000)).unwrap().allowed);
        let acquirers: Vec<_> = (0..2)
            .map(|_| {
                let l = Arc::clone(&limiter);
                thread::spawn(move || l.acquire_at(1, at(1000)).unwrap().allowed)
            })
            .collect();
        limiter.reset();
        let admitted: u64 = acquirers
            .into_iter()
            .map(|t| u64::from(t.join().unwrap()))
            .sum();
        // Every admitted unit came after the reset and is still counted: never one
        // admitted and then erased by it, nor two.
        let remaining = limiter.acquire_at(0, at(1000)).unwrap().remaining;
        assert_eq!(admitted + remaining, 1);
    });
}
