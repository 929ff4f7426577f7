//! The least executor an async wait needs, from `std` alone: it polls a future on the
//! calling thread and parks the thread until the future's waker unparks it. The waits'
//! own timer thread (`src/wait/timer.rs`) is what wakes it.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Wakes a parked thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

fn waker() -> Waker {
    Waker::from(Arc::new(Unpark(thread::current())))
}

/// Runs `future` to its end on this thread.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let waker = waker();
    let mut context = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut context) {
            return out;
        }
        // A wake before the park leaves the token set, so the park returns at once.
        thread::park();
    }
}

/// Polls `future` once, which must leave it waiting, runs `meanwhile`, and drops the
/// future: a wait cancelled mid-way.
#[allow(dead_code)] // Not every test binary that includes this file cancels a wait.
pub(crate) fn cancel_mid_wait<F: Future>(future: F, meanwhile: impl FnOnce()) {
    let mut future = pin!(future);
    let waker = waker();
    let polled = future.as_mut().poll(&mut Context::from_waker(&waker));
    assert!(polled.is_pending(), "the wait did not have to wait");
    meanwhile();
}
