//! Waiting until admitted (docs/rust.md, Waiting): `until_ready` and `until_ready_async`
//! on limiters, keyed tables and policies, against what the contract says each decision
//! is (docs/decision.md). Periods are short where a test sleeps them out, and an hour
//! where it must not: a wait a test gives up on or cancels never sleeps.
//!
//! The async waits run on `executor.rs`, from `std` alone, woken by librate's timer
//! thread.

#[path = "wait/executor.rs"]
mod executor;
#[path = "wait/subjects.rs"]
mod subjects;

use executor::{block_on, cancel_mid_wait};
use librate::{
    AcquireError, Config, KeyedAcquireError, KeyedLimiter, KeyedPolicy, KeyedRule, Limiter, Policy,
    WaitError,
};
use std::thread;
use std::time::{Duration, Instant};
use subjects::{admitted, gcra, librate_timer_started, HOUR, LONG, MS};

#[test]
fn a_gcra_wait_sleeps_out_its_place_in_the_queue() {
    let limiter = gcra(20 * MS, 1);
    admitted(limiter.acquire(1).unwrap(), 0);
    let start = Instant::now();
    let decision = limiter.until_ready(1, Duration::from_secs(1)).unwrap();
    // TAT is t0 + 20 ms; at t1 = t0 + e the reserve waits TAT + T − t1 − τ = 20 ms − e
    // (0 past 20 ms).
    assert!(decision.allowed);
    assert!(decision.wait_ns <= 20 * MS, "{decision:?}");
    assert!(start.elapsed() >= Duration::from_nanos(decision.wait_ns));
}

#[test]
fn a_gcra_wait_too_short_gives_up_and_takes_nothing() {
    // τ = 2 h. After one unit, TAT = t0 + 1 h; two more units wait 1 h − e: past 1 ms.
    let limiter = gcra(HOUR, 2);
    admitted(limiter.acquire(1).unwrap(), 1);
    let gave_up = limiter.until_ready(2, Duration::from_millis(1)).unwrap();
    assert!(!gave_up.allowed);
    // For the same wait: (1 h − e) − 1 ms.
    assert!(gave_up.retry_after_ns < HOUR - MS, "{gave_up:?}");
    // Nothing was taken: the one unit left is still there.
    admitted(limiter.acquire(1).unwrap(), 0);
}

#[test]
fn a_cost_above_the_limit_is_an_error_at_once() {
    let limiter = gcra(HOUR, 2);
    assert_eq!(
        limiter.until_ready(3, LONG),
        Err(AcquireError::InsufficientCapacity)
    );
    let window = Limiter::new(&Config::fixed_window(2, Duration::from_nanos(HOUR))).unwrap();
    assert_eq!(
        window.until_ready(3, LONG),
        Err(AcquireError::InsufficientCapacity)
    );
    let async_wait = block_on(limiter.until_ready_async(3, LONG));
    assert!(matches!(
        async_wait,
        Err(WaitError::Acquire(AcquireError::InsufficientCapacity))
    ));
    // Nothing was taken.
    admitted(limiter.acquire(2).unwrap(), 0);
}

#[test]
fn a_query_waits_for_nothing() {
    let limiter = gcra(HOUR, 1);
    admitted(limiter.acquire(1).unwrap(), 0);
    let query = limiter.until_ready(0, Duration::ZERO).unwrap();
    assert!(query.allowed);
    assert_eq!(query.wait_ns, 0);
}

/// The algorithms without a queue, one unit per 20 ms.
fn windows() -> [Config; 3] {
    [
        Config::fixed_window(1, Duration::from_nanos(20 * MS)),
        Config::sliding_window(1, Duration::from_nanos(20 * MS)),
        Config::sliding_log(1, Duration::from_nanos(20 * MS)),
    ]
}

#[test]
fn a_window_wait_acquires_again_after_the_retry() {
    for config in windows() {
        let limiter = Limiter::new(&config).unwrap();
        admitted(limiter.acquire(1).unwrap(), 0);
        assert!(!limiter.acquire(1).unwrap().allowed);
        admitted(limiter.until_ready(1, Duration::from_secs(1)).unwrap(), 0);
        admitted(
            block_on(limiter.until_ready_async(1, Duration::from_secs(1))).unwrap(),
            0,
        );
    }
}

#[test]
fn a_window_wait_too_short_gives_up_and_takes_nothing() {
    // No wait at all: the windows' calendar edges could come within any shorter one.
    for config in [
        Config::fixed_window(3, Duration::from_nanos(HOUR)),
        Config::sliding_window(3, Duration::from_nanos(HOUR)),
        Config::sliding_log(3, Duration::from_nanos(HOUR)),
    ] {
        let limiter = Limiter::new(&config).unwrap();
        admitted(limiter.acquire(1).unwrap(), 2);
        let gave_up = limiter.until_ready(3, Duration::ZERO).unwrap();
        assert!(!gave_up.allowed);
        assert!(gave_up.retry_after_ns > 0, "{config:?}: {gave_up:?}");
        let gave_up = block_on(limiter.until_ready_async(3, Duration::ZERO)).unwrap();
        assert!(!gave_up.allowed);
        admitted(limiter.acquire(2).unwrap(), 0);
    }
    // The log has no calendar: its unit frees up an hour after it was taken.
    let log = Limiter::new(&Config::sliding_log(1, Duration::from_nanos(HOUR))).unwrap();
    admitted(log.acquire(1).unwrap(), 0);
    let gave_up = log.until_ready(1, Duration::from_millis(1)).unwrap();
    assert!(!gave_up.allowed);
    assert!(gave_up.retry_after_ns > MS, "{gave_up:?}");
}

#[test]
fn an_async_gcra_wait_sleeps_out_its_place_in_the_queue() {
    let limiter = gcra(20 * MS, 1);
    admitted(limiter.acquire(1).unwrap(), 0);
    let start = Instant::now();
    let decision = block_on(limiter.until_ready_async(1, Duration::from_secs(1))).unwrap();
    assert!(decision.allowed);
    assert!(decision.wait_ns <= 20 * MS, "{decision:?}");
    assert!(start.elapsed() >= Duration::from_nanos(decision.wait_ns));
}

#[test]
fn a_cancelled_gcra_wait_gives_its_units_back() {
    // τ = 2 h. After one unit, TAT = t0 + 1 h: two more units wait 1 h − e, within 10 h.
    let limiter = gcra(HOUR, 2);
    admitted(limiter.acquire(1).unwrap(), 1);
    cancel_mid_wait(limiter.until_ready_async(2, LONG), || {
        // Asleep on librate's timer: no tokio runtime polls it.
        assert!(librate_timer_started());
        // Queued: TAT = t0 + 3 h, and one more unit would wait 2 h − e.
        let queued = limiter.acquire(0).unwrap();
        assert!(queued.reset_after_ns > 2 * HOUR, "{queued:?}");
    });
    // Given back: TAT = t0 + 1 h again, and the unit left is there.
    admitted(limiter.acquire(1).unwrap(), 0);
}

#[test]
fn a_cancelled_wait_with_a_later_reserve_behind_it_keeps_its_units() {
    let limiter = gcra(HOUR, 2);
    admitted(limiter.acquire(1).unwrap(), 1);
    cancel_mid_wait(limiter.until_ready_async(2, LONG), || {
        // Queued behind it: TAT = t0 + 4 h.
        assert!(
            limiter
                .reserve(1, Duration::from_nanos(10 * HOUR))
                .unwrap()
                .allowed
        );
    });
    // The later reserve depends on the place before it: the units stay taken.
    let after = limiter.acquire(0).unwrap();
    assert!(after.reset_after_ns > 3 * HOUR, "{after:?}");
}

#[test]
fn concurrent_async_waits_are_each_woken_in_turn() {
    // A unit every 10 ms, none left: four waiters queue for 10, 20, 30 and 40 ms.
    let limiter = gcra(10 * MS, 1);
    admitted(limiter.acquire(1).unwrap(), 0);
    thread::scope(|scope| {
        let waiters: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let start = Instant::now();
                    let wait = limiter.until_ready_async(1, Duration::from_secs(1));
                    let decision = block_on(wait).unwrap();
                    assert!(start.elapsed() >= Duration::from_nanos(decision.wait_ns));
                    decision
                })
            })
            .collect();
        let mut waits: Vec<u64> = waiters
            .into_iter()
            .map(|waiter| waiter.join().unwrap())
            .inspect(|decision| assert!(decision.allowed))
            .map(|decision| decision.wait_ns)
            .collect();
        waits.sort_unstable();
        // Each queued a period behind the one before: at most k × 10 ms for the k-th.
        for (k, wait) in waits.iter().enumerate() {
            assert!(*wait <= (k as u64 + 1) * 10 * MS, "{waits:?}");
        }
    });
}

#[test]
fn a_keyed_wait_is_one_keys() {
    let table = KeyedLimiter::new(
        &Config::gcra(1, Duration::from_nanos(HOUR)).with_burst(2),
        16,
    )
    .unwrap();
    admitted(table.acquire(b"a", 1).unwrap(), 1);
    let gave_up = table
        .until_ready(b"a", 2, Duration::from_millis(1))
        .unwrap();
    assert!(!gave_up.allowed);
    // Another key waits for nothing: it is full.
    admitted(table.until_ready(b"b", 2, Duration::ZERO).unwrap(), 0);
    cancel_mid_wait(table.until_ready_async(b"a", 2, LONG), || {});
    admitted(table.acquire(b"a", 1).unwrap(), 0);
    let fast = KeyedLimiter::new(&Config::gcra(1, Duration::from_nanos(20 * MS)), 16).unwrap();
    admitted(fast.acquire(b"a", 1).unwrap(), 0);
    let decision = fast.until_ready(b"a", 1, Duration::from_secs(1)).unwrap();
    assert!(
        decision.allowed && decision.wait_ns <= 20 * MS,
        "{decision:?}"
    );
    let window = KeyedLimiter::new(
        &Config::sliding_window(1, Duration::from_nanos(20 * MS)),
        16,
    )
    .unwrap();
    admitted(window.acquire(b"a", 1).unwrap(), 0);
    admitted(
        block_on(window.until_ready_async(b"a", 1, Duration::from_secs(1))).unwrap(),
        0,
    );
}

#[test]
fn a_policy_wait_takes_from_no_rule_until_all_admit() {
    let policy = Policy::new(&[
        Config::gcra(1, Duration::from_nanos(HOUR)),
        Config::sliding_log(5, Duration::from_nanos(HOUR)),
    ])
    .unwrap();
    admitted(policy.acquire(1).unwrap().decision, 0);
    let gave_up = policy.until_ready(1, Duration::from_millis(1)).unwrap();
    assert_eq!(gave_up.denied_by, Some(0));
    // The window's rule took nothing: four of five left.
    let query = policy.acquire(0).unwrap();
    assert_eq!(query.rules()[1].remaining, 4);
    let fast = Policy::new(&[
        Config::gcra(1, Duration::from_nanos(20 * MS)),
        Config::sliding_log(10, Duration::from_nanos(HOUR)),
    ])
    .unwrap();
    admitted(fast.acquire(1).unwrap().decision, 0);
    let decision = fast.until_ready(1, Duration::from_secs(1)).unwrap();
    assert!(decision.decision.allowed);
    assert_eq!(decision.rules()[1].remaining, 8);
    let decision = block_on(fast.until_ready_async(1, Duration::from_secs(1))).unwrap();
    assert_eq!(decision.rules()[1].remaining, 7);
}

#[test]
fn a_keyed_policy_wait_is_one_keys() {
    let rules = [
        KeyedRule::per_key(Config::gcra(1, Duration::from_nanos(20 * MS))),
        KeyedRule::global(Config::sliding_log(10, Duration::from_nanos(HOUR))),
    ];
    let policy = KeyedPolicy::new(&rules, 16).unwrap();
    assert!(policy.acquire(b"a", 1).unwrap().decision.allowed);
    let other = policy.until_ready(b"b", 1, Duration::ZERO).unwrap();
    assert_eq!(other.rules()[1].remaining, 8);
    let decision = policy.until_ready(b"a", 1, Duration::from_secs(1)).unwrap();
    assert_eq!(decision.rules()[1].remaining, 7);
    let decision = block_on(policy.until_ready_async(b"a", 1, Duration::from_secs(1))).unwrap();
    assert_eq!(decision.rules()[1].remaining, 6);
    assert_eq!(
        policy.until_ready(b"a", 11, LONG).unwrap_err(),
        KeyedAcquireError::InsufficientCapacity
    );
}

#[test]
fn a_cancelled_wait_on_a_shared_file_gives_its_units_back() {
    let dir = std::env::temp_dir().join(format!("librate-wait-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = Config::gcra(1, Duration::from_nanos(HOUR)).with_burst(2);
    // As on a private limiter: τ = 2 h, two more units after one wait 1 h − e.
    let limiter = Limiter::open(dir.join("limiter"), &config).unwrap();
    admitted(limiter.acquire(1).unwrap(), 1);
    cancel_mid_wait(limiter.until_ready_async(2, LONG), || {});
    admitted(limiter.acquire(1).unwrap(), 0);
    let table = KeyedLimiter::open(dir.join("table"), &config, 16).unwrap();
    admitted(table.acquire(b"a", 1).unwrap(), 1);
    cancel_mid_wait(table.until_ready_async(b"a", 2, LONG), || {});
    admitted(table.acquire(b"a", 1).unwrap(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_async_wait_can_move_between_threads() {
    // A runtime with several threads (tokio::spawn) asks it of a future; unpolled, each
    // does nothing.
    fn sendable<F: std::future::Future + Send>(_: F) {}
    let config = Config::gcra(1, Duration::from_nanos(HOUR));
    let limiter = Limiter::new(&config).unwrap();
    sendable(limiter.until_ready_async(1, LONG));
    let table = KeyedLimiter::new(&config, 16).unwrap();
    sendable(table.until_ready_async(b"a", 1, LONG));
    let policy = Policy::new(&[config]).unwrap();
    sendable(policy.until_ready_async(1, LONG));
    let keyed_policy = KeyedPolicy::new(&[KeyedRule::per_key(config)], 16).unwrap();
    sendable(keyed_policy.until_ready_async(b"a", 1, LONG));
}
