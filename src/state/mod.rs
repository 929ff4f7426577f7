//! The state layer: how an algorithm's state lives in atomic words, and the protocol that
//! reads it, decides on it (through the pure rules of `src/algorithm/`) and swaps it.
//!
//! The same words serve a limiter's private cell and a keyed table's slot; the only
//! difference is the [`Tenancy`] the caller passes: nobody else can repurpose a limiter's
//! words ([`Owned`]), while a keyed slot can be reclaimed for another key under a
//! decision, which every store here re-checks before it writes.
//!
//! - `cell.rs`: [`Tenancy`], and the read-decide-swap loop on a state's first word.
//! - `one_word.rs`: states of one word (GCRA, fixed window).
//! - `window_records/`: the sliding window counter's current word and closed-window
//!   records (`carry.rs`: their counts carried over a change of rule).
//! - `ring/`: the sliding log's ring of timestamps (`read.rs`: one read of it, and claims).
//! - `request.rs`: what a caller asks of a state ([`Request`]: an acquire, a peek, a
//!   report-free acquire, a decision for an interval), as pure decision functions.
//! - `refund.rs`: what giving an admission back takes, for a policy of several rules.
//!
//! Each store implements [`Stored`], the one interface the layer above dispatches to.

mod cell;
mod one_word;
mod refund;
mod request;
mod ring;
mod window_records;

pub(crate) use cell::{is_marker, owned, Owned, Tenancy};
pub(crate) use one_word::{gcra_now, reserve_at, reserve_refundable_at};
pub(crate) use refund::Refund;
pub(crate) use request::{Acquire, Peek, Refundable, Request, Settle, TryAcquire};
pub(crate) use window_records::{acquire_at as window_acquire_at, replaced_counts, store_counts};

use crate::algorithm::Rule;
use crate::sync::AtomicU64;
use crate::time::{TimeSource, Timed};

/// An algorithm whose state this layer can keep in words: its one read-decide-swap
/// primitive, which every request a limiter or a keyed slot makes goes through. Requests reach it checked (`n ≤ limit`), and a fresh state is
/// all zeros.
pub(crate) trait Stored: Rule {
    /// The decision [`try_acquire`](Self::try_acquire) hands time's strategy: whether it
    /// keeps the time source's hint is its [`Timed::HINTED`], said there alone.
    type Now<'a, T: Tenancy + 'a>: Timed<Evicted = T::Evicted>
    where
        Self: 'a;

    /// How many words of state one limiter needs.
    fn state_words(&self) -> usize;

    /// Runs `request` on the state: reads it, decides on what it read, and swaps in the
    /// update the decision returns, if any, deciding again on whatever state beat it. A
    /// decision without an update never writes. Every value of the first word is shown to
    /// `tenancy` before anything is decided or written on it. What giving a stored
    /// admission back takes goes to [`Request::keep`].
    fn swap<T: Tenancy, R: Request>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        request: R,
    ) -> Result<R::Out, T::Evicted>;

    /// Acquires `1 ≤ n` units now, reporting only whether they were admitted: the store's
    /// steps for bounds and at a time, as a [`Timed`] decision, with
    /// `time`'s strategy ([`time::decide`](crate::time::decide)) picking the readings. Either way the outcome is a [`TryAcquire`]'s at some instant
    /// within the call.
    fn try_acquire<T: Tenancy, C: TimeSource>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Result<bool, T::Evicted>;

    /// Makes a state nobody else can repurpose (a limiter's own words) decide as a fresh
    /// one from the latest time it has seen on. Each acquire racing it is decided wholly
    /// before or after it; every store says how, and what a reader caught between its
    /// writes may see. `Err` (nothing written) if `tenancy` refuses the first word (words
    /// a change of rule replaced, `replaced.rs`: the caller resets the words that replaced these).
    fn reset<T: Tenancy>(&self, state: &[AtomicU64], tenancy: &T) -> Result<(), T::Evicted>;

    /// Whether the state is fresh at `now` (docs/keyed.md, reclaim). `first` is its first word,
    /// loaded with `Acquire` by the caller (pairing with the swap that installed it, so the other
    /// words it publishes are read at least as new as it) and not a marker. A snapshot: a
    /// reclaimer's own CAS on the first word revalidates it, the first word only growing.
    fn is_fresh(&self, state: &[AtomicU64], first: u64, now: u64) -> bool;
}
