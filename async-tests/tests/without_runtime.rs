//! With the `tokio` feature on, an async wait polled outside any tokio runtime (here by
//! the library's own `std`-only test executor) sleeps on librate's timer thread instead.

#[path = "../../tests/wait/executor.rs"]
mod executor;
#[path = "../../tests/wait/subjects.rs"]
mod subjects;

use executor::{block_on, cancel_mid_wait};
use std::time::Duration;
use subjects::{admitted, gcra, librate_timer_started, HOUR, LONG, MS};

#[test]
fn a_wait_outside_tokio_sleeps_on_librates_timer() {
    // τ = 2 h. After one unit, two more wait 1 h − e: queued, on librate's timer.
    let limiter = gcra(HOUR, 2);
    admitted(limiter.acquire(1).unwrap(), 1);
    cancel_mid_wait(limiter.until_ready_async(2, LONG), || {
        assert!(librate_timer_started());
    });
    admitted(limiter.acquire(1).unwrap(), 0);
    // A short wait runs to its end there.
    let limiter = gcra(20 * MS, 1);
    admitted(limiter.acquire(1).unwrap(), 0);
    assert!(
        block_on(limiter.until_ready_async(1, Duration::from_secs(1)))
            .unwrap()
            .allowed
    );
}
