//! The one read-decide-swap loop every state's first word goes through, and the
//! [`Tenancy`] that tells the caller's state from whatever else the word may hold.
//!
//! A keyed table (see `keyed/`) reuses the slot of a key whose state is fresh for another
//! key, marking the slot in between (`keyed/markers.rs`). To do that safely it needs three
//! promises, stated here once:
//! 1. The first state word never holds a marker: every value an algorithm stores is at
//!    most [`MAX_STATE`] (the algorithms' promise, `algorithm/mod.rs`), and the values
//!    above it ([`is_marker`]) are left to the words' owner, which alone knows what
//!    they mean and says, through its [`Tenancy`], which of them stop a decision.
//! 2. The first state word strictly increases with every change an algorithm makes, so a
//!    value it held once never comes back (no ABA for a CAS that expects it): the
//!    algorithms' promise too, checked here on every swap in debug builds. Only a reset
//!    ([`Stored::reset`](super::Stored::reset)) lowers it, and only in a limiter's own
//!    words, which no other tenancy can take over; a keyed table retires a reset key's
//!    slot instead (`keyed/reset.rs`).
//! 3. Every decision is committed by a compare-and-swap of the first word that re-checks
//!    the slot's tenancy ([`Tenancy::check`]) on each value it is about to decide on: this
//!    layer's promise, kept by every store in it (`one_word.rs`, `window_records/`,
//!    `ring/`).

use crate::algorithm::MAX_STATE;
use crate::sync::{AtomicU64, Ordering};
use std::convert::Infallible;

/// Whether `word` is not a state: a value above [`MAX_STATE`], which no algorithm stores,
/// so that the owner of the words may put it there for its own use (a keyed table's slot
/// markers, `keyed/markers.rs`; a replaced limiter's words, `replaced.rs`).
#[inline]
pub(crate) const fn is_marker(word: u64) -> bool {
    word > MAX_STATE
}

/// Who else may repurpose a state, and so how the swap loop must read it.
pub(crate) trait Tenancy {
    /// Why the state turned out to belong to someone else.
    type Evicted;
    /// The ordering of the loop's loads of the first word (including failed CASes).
    const LOAD: Ordering;
    /// Called on every first-word value before deciding on it: `Err` if that value is not
    /// (or no longer) this caller's state. Nothing is written after an `Err`.
    fn check(&self, first_word: u64) -> Result<(), Self::Evicted>;
}

/// A state nobody else can repurpose: a limiter's own words, or a private scratch state.
pub(crate) struct Owned;

impl Tenancy for Owned {
    type Evicted = Infallible;
    /// Relaxed: the word is the whole state of its limiter and publishes no other memory.
    const LOAD: Ordering = Ordering::Relaxed;

    fn check(&self, _first_word: u64) -> Result<(), Infallible> {
        Ok(())
    }
}

/// The value of an operation on an [`Owned`] state, which can never be evicted.
#[inline]
pub(crate) fn owned<R>(result: Result<R, Infallible>) -> R {
    match result {
        Ok(value) => value,
        Err(never) => match never {},
    }
}

/// Runs `decide` on the word's current value and, if it returns a new value, installs it
/// by compare-and-swap, deciding again on whatever value beat it. A decision without a new
/// value (a denial, a query) never writes. Every value is first shown to `tenancy`, and
/// the loop stops without writing when the word is no longer the caller's.
///
/// The successful CAS is `Relaxed`: per-location coherence gives all CASes of the word one
/// total order, each comparing against the latest value, and a CAS continues the release
/// sequence of whatever store it follows, so it publishes nothing of its own. Loads use
/// `T::LOAD` (see [`Tenancy`]). `tests/loom_*.rs` check this.
#[inline]
pub(crate) fn decide_and_swap<T: Tenancy, R>(
    word: &AtomicU64,
    tenancy: &T,
    decide: impl FnMut(u64) -> (R, Option<u64>),
) -> Result<R, T::Evicted> {
    swap_loop::<Private, T, R>(word, tenancy, decide)
}

/// [`decide_and_swap`] for a word that publishes other memory: every value `decide` sees
/// is read with `Acquire` and every swap is `Release`. So `decide` may read other words
/// that were written before the swap that installed the value it sees, and whatever
/// `decide` writes before returning a new value is visible to every thread that later
/// reads that value (or any later one: all writes to the word are read-modify-writes, so
/// they extend the release sequence). `decide` runs only on values `tenancy` accepted, so
/// whatever it writes to other words is written only while the state is the caller's.
#[inline]
pub(crate) fn decide_and_publish<T: Tenancy, R>(
    word: &AtomicU64,
    tenancy: &T,
    decide: impl FnMut(u64) -> (R, Option<u64>),
) -> Result<R, T::Evicted> {
    swap_loop::<Publishing, T, R>(word, tenancy, decide)
}

/// The orderings of one use of [`swap_loop`], as constants: passed as values into a
/// loop the compiler does not inline, the atomic operations would become calls that pick
/// the ordering at run time.
trait Orderings {
    /// Loads, including the value a failed swap returns, as far as the word's own
    /// algorithm needs (the tenancy may need more: see [`swap_loop`]).
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

/// The stronger of two load orderings (`Relaxed` or `Acquire`).
const fn stronger_load(a: Ordering, b: Ordering) -> Ordering {
    match a {
        Ordering::Relaxed => b,
        _ => a,
    }
}

/// The loop behind [`decide_and_swap`] and [`decide_and_publish`]. Loads use the stronger
/// of what the word's algorithm (`O::READ`) and its tenancy (`T::LOAD`) need.
#[inline(always)]
fn swap_loop<O: Orderings, T: Tenancy, R>(
    word: &AtomicU64,
    tenancy: &T,
    mut decide: impl FnMut(u64) -> (R, Option<u64>),
) -> Result<R, T::Evicted> {
    let read = const { stronger_load(O::READ, T::LOAD) };
    let mut current = word.load(read);
    loop {
        tenancy.check(current)?;
        let (result, next) = decide(current);
        let Some(next) = next else {
            return Ok(result);
        };
        // Words this library wrote only grow (`next > current`); a word another process
        // wrote into a shared file may be anything, and is replaced by a valid state.
        debug_assert!(next <= MAX_STATE, "a state word never holds a marker");
        match word.compare_exchange_weak(current, next, O::SWAP, read) {
            Ok(_) => return Ok(result),
            Err(actual) => current = actual,
        }
    }
}
