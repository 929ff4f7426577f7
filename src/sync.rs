//! Atomics for the limiter: `std` normally, `loom` under `RUSTFLAGS="--cfg loom"`.
//!
//! This is the only file that names an atomic type, so loom sees every access to limiter
//! state. `ProcessAtomicU64` is the exception that proves the rule: it backs process-wide
//! statics (the clock's calibration, the keyed table's seed source) that live outside any
//! model (loom cannot model time) and must be constructible in a `static`; and the counts'
//! atomics, which are no limiter's state.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Serializes changes of rule (`versions.rs`); no decision takes it.
#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// Under loom, a cell whose accesses the model checks for races: touched by a version's
/// readers and by its free (`versions.rs`), so that a free not ordered after every read is
/// reported.
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell as ModelCell;

pub(crate) use std::sync::atomic::fence as process_fence;
pub(crate) use std::sync::atomic::AtomicU64 as ProcessAtomicU64;

/// The counts of decisions (`counters.rs`), a lease holder's books (`lease/stats.rs`) and
/// the word that turns a lease holder's counting on: `std`'s under loom too. They order
/// nothing a decision reads (each is Relaxed, a report), so modelling them would only
/// multiply the interleavings a model explores.
pub(crate) use std::sync::atomic::AtomicU64 as CountAtomicU64;

/// Waits politely, without bound, for another thread to finish a short step (a keyed
/// insert in flight). (For a wait that gives up after a few checks, see [`spin_wait`].)
///
/// Spins with exponentially more `spin_loop` hints, then yields the CPU to the scheduler,
/// so a waiter whose peer was preempted does not burn its time slice. Under loom every
/// wait is a `yield_now`, which tells loom to run another thread first.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    /// Spins up to 2^SPIN_LIMIT hints per wait before yielding (the same figure as
    /// crossbeam-utils' `Backoff`).
    #[cfg(not(loom))]
    const SPIN_LIMIT: u32 = 6;

    pub(crate) fn snooze(&mut self) {
        #[cfg(loom)]
        {
            self.step = self.step.saturating_add(1);
            loom::thread::yield_now();
        }
        #[cfg(not(loom))]
        if self.step <= Self::SPIN_LIMIT {
            for _ in 0..1u32 << self.step {
                std::hint::spin_loop();
            }
            self.step += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// One pause in a bounded wait for another thread's write: a CPU spin hint normally, a
/// yield under loom so the model checker lets the writer run (an unbounded spin would
/// never end there, and loom requires every wait loop to yield).
pub(crate) fn spin_wait() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}

/// The latest value of `pointer`, by a read-modify-write that swaps it for itself (it
/// writes nothing new): a plain load may return an older value for a while, and a caller
/// that found the generation it loaded replaced must not retry on it for ever. Acquire:
/// pairs with the Release store that published the value, so what it points to is read
/// at least as its publisher wrote it.
pub(crate) fn load_latest<T>(pointer: &AtomicPtr<T>) -> *mut T {
    let mut latest = pointer.load(Ordering::Relaxed);
    while let Err(actual) =
        pointer.compare_exchange_weak(latest, latest, Ordering::Acquire, Ordering::Relaxed)
    {
        latest = actual;
    }
    latest
}
