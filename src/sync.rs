//! Atomics for the limiter: `std` normally, `loom` under `RUSTFLAGS="--cfg loom"`.
//!
//! This is the only file that names an atomic type, so loom sees every access to limiter
//! state. `ProcessAtomicU64` is the exception that proves the rule: it backs process-wide
//! statics (the clock's calibration, the keyed table's seed source) that live outside any
//! model (loom cannot model time) and must be constructible in a `static`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) use std::sync::atomic::AtomicU64 as ProcessAtomicU64;

/// One pause in a bounded wait for another thread's write: a CPU spin hint normally, a
/// yield under loom so the model checker lets the writer run (an unbounded spin would
/// never end there, and loom requires every wait loop to yield).
pub(crate) fn spin_wait() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
