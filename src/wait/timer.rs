//! A timer for async waits on any executor: one thread, started by the first wait that
//! sleeps and never stopped, holds every sleeping wait's deadline and waker in order and
//! wakes each task once its deadline has passed, as the futures-timer crate does. No
//! runtime is named and nothing is spawned on the caller's.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::{self, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

/// The sleeping waits, by deadline (and a serial number, as two may share one).
struct Timers {
    sleepers: BTreeMap<(Instant, u64), Waker>,
    serial: u64,
    /// Whether the thread was started.
    running: bool,
}

static TIMERS: Mutex<Timers> = Mutex::new(Timers {
    sleepers: BTreeMap::new(),
    serial: 0,
    running: false,
});

/// Signalled when a sleeper becomes the earliest: the thread then sleeps less.
static EARLIER: Condvar = Condvar::new();

/// The timers, locked. No code of ours panics while holding the lock (wakers are woken
/// after it is released), and a panic in a waker's `clone` or `drop` leaves the map
/// whole, so a poisoned lock is taken as it is.
fn lock() -> MutexGuard<'static, Timers> {
    TIMERS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The thread: wakes the sleepers whose deadline has passed, then sleeps until the next
/// deadline or until an earlier one is added.
fn run() {
    let mut timers = lock();
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(first) = timers.sleepers.first_entry() {
            if first.key().0 > now {
                break;
            }
            due.push(first.remove());
        }
        if !due.is_empty() {
            drop(timers);
            for waker in due {
                // A waker is the executor's code: one that panics must not stop the
                // thread every other wait relies on.
                let _ = panic::catch_unwind(AssertUnwindSafe(|| waker.wake()));
            }
            timers = lock();
            continue;
        }
        timers = match timers.sleepers.keys().next() {
            Some(&(deadline, _)) => {
                let waited = EARLIER.wait_timeout(timers, deadline - now);
                waited.unwrap_or_else(PoisonError::into_inner).0
            }
            None => EARLIER.wait(timers).unwrap_or_else(PoisonError::into_inner),
        };
    }
}

/// A sleep on the timer thread: ready once its deadline has passed.
pub(super) struct Sleep {
    /// `None`: past what an `Instant` can hold, never.
    deadline: Option<Instant>,
    /// Its place among the sleepers, once polled.
    entry: Option<(Instant, u64)>,
}

impl Sleep {
    pub(super) fn new(ns: u64) -> Self {
        Self {
            deadline: Instant::now().checked_add(Duration::from_nanos(ns)),
            entry: None,
        }
    }
}

impl Future for Sleep {
    type Output = std::io::Result<()>;

    fn poll(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(deadline) = self.deadline else {
            return Poll::Pending;
        };
        if Instant::now() >= deadline {
            return Poll::Ready(Ok(()));
        }
        let mut timers = lock();
        if !timers.running {
            let started = thread::Builder::new()
                .name("librate-timer".into())
                .spawn(run);
            if let Err(error) = started {
                return Poll::Ready(Err(error));
            }
            timers.running = true;
        }
        let entry = match self.entry {
            Some(entry) => entry,
            None => {
                timers.serial += 1;
                (deadline, timers.serial)
            }
        };
        self.entry = Some(entry);
        let earliest = timers
            .sleepers
            .keys()
            .next()
            .map_or(true, |first| entry <= *first);
        // Inserted again at every poll, with the latest waker: since this poll read the
        // clock, the deadline may have passed and the thread woken and removed it.
        timers.sleepers.insert(entry, context.waker().clone());
        if earliest {
            EARLIER.notify_one();
        }
        Poll::Pending
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(entry) = self.entry {
            lock().sleepers.remove(&entry);
        }
    }
}
