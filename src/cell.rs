//! The one read-decide-swap loop every single-word state goes through.

use crate::sync::{AtomicU64, Ordering};

/// Runs `decide` on the word's current value and, if it returns a new value, installs it
/// by compare-and-swap, deciding again on whatever value beat it. A decision without a new
/// value (a denial, a query) never writes.
///
/// Orderings are `Relaxed`: the word is the whole state of its limiter and publishes no
/// other memory, and per-location coherence already gives all its CASes one total order,
/// each comparing against the latest value in it. `tests/loom_*.rs` check this.
pub(crate) fn decide_and_swap<R>(
    word: &AtomicU64,
    mut decide: impl FnMut(u64) -> (R, Option<u64>),
) -> R {
    let mut current = word.load(Ordering::Relaxed);
    loop {
        let (result, next) = decide(current);
        let Some(next) = next else { return result };
        match word.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return result,
            Err(actual) => current = actual,
        }
    }
}
