//! Async waits on tokio (librate's `tokio` feature): they sleep on tokio's timer, and a
//! timeout or an aborted task that drops a GCRA wait mid-sleep gives its units back.
//! Every test here runs on a tokio runtime, so librate's own timer thread, which a wait
//! polled elsewhere sleeps on, is never started in this process.

#[path = "../../tests/wait/subjects.rs"]
mod subjects;

use std::sync::Arc;
use std::time::{Duration, Instant};
use subjects::{admitted, gcra, has_librate_timer, HOUR, LONG, MS};

#[tokio::test]
async fn a_wait_sleeps_out_its_place_on_tokios_timer() {
    let limiter = gcra(20 * MS, 1);
    admitted(limiter.acquire(1).unwrap(), 0);
    let start = Instant::now();
    let decision = limiter
        .until_ready_async(1, Duration::from_secs(1))
        .await
        .unwrap();
    // TAT is t0 + 20 ms; at t0 + e the reserve waits 20 ms − e (0 past 20 ms).
    assert!(decision.allowed);
    assert!(decision.wait_ns <= 20 * MS, "{decision:?}");
    assert!(start.elapsed() >= Duration::from_nanos(decision.wait_ns));
    assert!(!has_librate_timer());
}

#[tokio::test]
async fn a_wait_a_timeout_cancels_gives_its_units_back() {
    // τ = 2 h. After one unit, TAT = t0 + 1 h: two more units wait 1 h − e.
    let limiter = gcra(HOUR, 2);
    admitted(limiter.acquire(1).unwrap(), 1);
    let wait = limiter.until_ready_async(2, LONG);
    let timed_out = tokio::time::timeout(Duration::from_millis(5), wait).await;
    assert!(timed_out.is_err());
    // Given back: the unit left is there.
    admitted(limiter.acquire(1).unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborted_task_gives_its_units_back() {
    let limiter = Arc::new(gcra(HOUR, 2));
    admitted(limiter.acquire(1).unwrap(), 1);
    let waiter = Arc::clone(&limiter);
    let task = tokio::spawn(async move { waiter.until_ready_async(2, LONG).await });
    // Queued once TAT = t0 + 3 h: a unit more would then be 2 h − e away.
    while limiter.acquire(0).unwrap().reset_after_ns < 2 * HOUR {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    admitted(limiter.acquire(1).unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_on_several_threads_are_each_admitted_in_turn() {
    // A unit every 10 ms, none left: four waiters queue for at most 10, 20, 30, 40 ms.
    let limiter = Arc::new(gcra(10 * MS, 1));
    admitted(limiter.acquire(1).unwrap(), 0);
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move { limiter.until_ready_async(1, Duration::from_secs(1)).await })
        })
        .collect();
    let mut waits = Vec::new();
    for task in tasks {
        let decision = task.await.unwrap().unwrap();
        assert!(decision.allowed);
        waits.push(decision.wait_ns);
    }
    waits.sort_unstable();
    for (k, wait) in waits.iter().enumerate() {
        assert!(*wait <= (k as u64 + 1) * 10 * MS, "{waits:?}");
    }
    assert!(!has_librate_timer());
}
