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
    decide: impl FnMut(u64) -> (R, Option<u64>),
) -> R {
    swap_loop::<Private, R>(word, decide)
}

/// [`decide_and_swap`] for a word that publishes other memory: every value `decide` sees
/// is read with `Acquire` and every swap is `Release`. So `decide` may read other words
/// that were written before the swap that installed the value it sees, and whatever
/// `decide` writes before returning a new value is visible to every thread that later
/// reads that value (or any later one: all writes to the word are read-modify-writes, so
/// they extend the release sequence).
pub(crate) fn decide_and_publish<R>(
    word: &AtomicU64,
    decide: impl FnMut(u64) -> (R, Option<u64>),
) -> R {
    swap_loop::<Publishing, R>(word, decide)
}

/// The orderings of one use of [`swap_loop`], as constants: passed as values into a
/// loop the compiler does not inline, the atomic operations would become calls that pick
/// the ordering at run time.
trait Orderings {
    /// Loads, including the value a failed swap returns.
    const READ: Ordering;
    /// A successful swap.
    const SWAP: Ordering;
}

/// The word publishes nothing else.
struct Private;
impl Orderings for Private {
    const READ: Ordering = Ordering::Relaxed;
    const SWAP: Ordering = Ordering::Relaxed;
}

/// The word publishes writes made before its swap.
struct Publishing;
impl Orderings for Publishing {
    const READ: Ordering = Ordering::Acquire;
    const SWAP: Ordering = Ordering::Release;
}

fn swap_loop<O: Orderings, R>(
    word: &AtomicU64,
    mut decide: impl FnMut(u64) -> (R, Option<u64>),
) -> R {
    let mut current = word.load(O::READ);
    loop {
        let (result, next) = decide(current);
        let Some(next) = next else { return result };
        match word.compare_exchange_weak(current, next, O::SWAP, O::READ) {
            Ok(_) => return result,
            Err(actual) => current = actual,
        }
    }
}
