//! Four threads hammer one window limiter at a frozen time: exactly the limit is admitted,
//! including right after a roll-over (fixed and sliding window) or a full lap of the ring
//! (sliding log), where every thread races to move the state on at once.

#![cfg(not(loom))]

mod common;
use common::at;

use librate::{Algorithm, Config, Instant, Limiter};
use std::sync::Barrier;
use std::thread;
use std::time::Duration;

const THREADS: u64 = 4;
const LIMIT: u64 = 1000;
const PERIOD: u64 = 1_000_000;
const ALGORITHMS: [Algorithm; 3] = [
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::SlidingLog,
];

/// Units admitted when every thread tries `attempts` acquires of `cost(i)` at `now`.
fn hammer(limiter: &Limiter, now: u64, attempts: u64, cost: fn(u64) -> u64) -> u64 {
    let start = Barrier::new(THREADS as usize);
    thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    (0..attempts)
                        .map(|i| {
                            let n = cost(i);
                            let decision = limiter.acquire_at(n, at(now)).unwrap();
                            if decision.allowed {
                                n
                            } else {
                                0
                            }
                        })
                        .sum::<u64>()
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    })
}

#[test]
fn four_threads_at_a_frozen_time_admit_exactly_the_limit() {
    for algorithm in ALGORITHMS {
        let limiter =
            Limiter::new(&Config::new(algorithm, LIMIT, Duration::from_nanos(PERIOD))).unwrap();
        let admitted = hammer(&limiter, 5 * PERIOD + 7, LIMIT, |_| 1);
        assert_eq!(admitted, LIMIT, "{algorithm:?}");
        assert_eq!(
            limiter.acquire_at(0, at(5 * PERIOD + 7)).unwrap().remaining,
            0
        );
    }
}

#[test]
fn mixed_costs_never_lose_or_invent_a_unit() {
    // Costs 1..=3: the last few units may stay free (a cost of 3 cannot take 2), but the
    // units admitted and the units left always add up to the limit.
    for algorithm in ALGORITHMS {
        let limiter =
            Limiter::new(&Config::new(algorithm, LIMIT, Duration::from_nanos(PERIOD))).unwrap();
        let admitted = hammer(&limiter, 3 * PERIOD, LIMIT, |i| 1 + i % 3);
        let remaining = limiter.acquire_at(0, at(3 * PERIOD)).unwrap().remaining;
        assert_eq!(admitted + remaining, LIMIT, "{algorithm:?}");
        assert!(remaining < 3, "{algorithm:?}: {remaining} left");
    }
}

#[test]
fn racing_roll_overs_and_laps_admit_exactly_what_is_free() {
    // Fixed window and log: a full window (or ring) at time 0, then everyone at time P:
    // a new window (every entry expired), so exactly L again.
    for algorithm in [Algorithm::FixedWindow, Algorithm::SlidingLog] {
        let limiter =
            Limiter::new(&Config::new(algorithm, LIMIT, Duration::from_nanos(PERIOD))).unwrap();
        assert!(limiter.acquire_at(LIMIT, Instant::ZERO).unwrap().allowed);
        assert_eq!(
            hammer(&limiter, PERIOD, LIMIT, |_| 1),
            LIMIT,
            "{algorithm:?}"
        );
    }
    // Sliding window: 600 in window 0, then everyone halfway into window 1, where the
    // 600 weigh 600·(P − P/2)/P = 300: exactly 700 more, and the roll-over kept the 600.
    let limiter =
        Limiter::new(&Config::sliding_window(LIMIT, Duration::from_nanos(PERIOD))).unwrap();
    assert!(limiter.acquire_at(600, at(PERIOD / 2)).unwrap().allowed);
    let admitted = hammer(&limiter, PERIOD + PERIOD / 2, LIMIT, |_| 1);
    assert_eq!(admitted, 700);
    // At 3/4 of window 1 the 600 weigh 150: 150 free.
    let later = limiter.acquire_at(0, at(PERIOD + 3 * PERIOD / 4)).unwrap();
    assert_eq!(later.remaining, 150);
}
