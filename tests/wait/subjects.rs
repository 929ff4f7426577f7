//! What the waits' tests share, here and in async-tests/: durations, limiters, and a look
//! at which timer a wait slept on.

use librate::{Config, Decision, Limiter};
use std::time::Duration;

pub(crate) const MS: u64 = 1_000_000;
pub(crate) const HOUR: u64 = 3_600_000 * MS;
/// Longer than any wait a test sleeps or cancels.
pub(crate) const LONG: Duration = Duration::from_secs(10 * 3600);

/// A GCRA limiter of one unit per `period_ns`, bursts of `burst`: τ = burst × period.
pub(crate) fn gcra(period_ns: u64, burst: u64) -> Limiter {
    Limiter::new(&Config::gcra(1, Duration::from_nanos(period_ns)).with_burst(burst)).unwrap()
}

/// Asserts that `decision` admitted and left `remaining` units.
#[allow(dead_code)] // Not every test binary that includes this file asserts admissions.
pub(crate) fn admitted(decision: Decision, remaining: u64) {
    assert!(decision.allowed, "{decision:?}");
    assert_eq!(decision.remaining, remaining, "{decision:?}");
}

/// Whether this process runs librate's timer thread, which an async wait that sleeps
/// outside a tokio runtime starts (Linux names a process's threads in /proc).
#[allow(dead_code)] // Not every test binary that includes this file looks for it.
pub(crate) fn has_librate_timer() -> bool {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .map(|task| task.unwrap().path().join("comm"))
        .any(|comm| {
            std::fs::read_to_string(comm).is_ok_and(|name| name.trim_end() == "librate-timer")
        })
}

/// [`has_librate_timer`], given the thread up to a second to name itself: a new thread
/// takes its name once it runs, after the spawn returned.
#[allow(dead_code)] // Not every test binary that includes this file looks for it.
pub(crate) fn librate_timer_started() -> bool {
    (0..1000).any(|_| {
        has_librate_timer() || {
            std::thread::sleep(Duration::from_millis(1));
            false
        }
    })
}
