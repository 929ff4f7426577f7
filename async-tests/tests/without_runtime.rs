//! With the `tokio` feature on, an async wait polled outside any tokio runtime (here by
//! the library's own `std`-only test executor) sleeps on librate's timer thread instead.

#[path = "../../tests/wait/executor.rs"]
mod executor;
#[path = "../../tests/wait/subjects.rs"]
mod subjects;

use executor::{block_on, poll_once};
use std::time::{Duration, Instant};
use subjects::{admitted, gcra, librate_timer_started, HOUR, LONG, MS};

#[test]
fn a_wait_outside_tokio_sleeps_on_librates_timer() {
    let limiter = gcra(20 * MS, 1);
    admitted(limiter.acquire(1).unwrap(), 0);
    let start = Instant::now();
    let decision = block_on(limiter.until_ready_async(1, Duration::from_secs(1))).unwrap();
    assert!(decision.allowed);
    assert!(decision.wait_ns <= 20 * MS, "{decision:?}");
    assert!(start.elapsed() >= Duration::from_nanos(decision.wait_ns));
    // τ = 2 h. After one unit, two more wait 1 h − e: queued, on librate's timer.
    let limiter = gcra(HOUR, 2);
    admitted(limiter.acquire(1).unwrap(), 1);
    let mut wait = Box::pin(limiter.until_ready_async(2, LONG));
    assert!(poll_once(&mut wait).is_pending());
    assert!(librate_timer_started());
    drop(wait);
    admitted(limiter.acquire(1).unwrap(), 0);
}
