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
//! - `refund.rs`: what giving an admission back takes, for a policy of several rules.
//!
//! Each store implements [`Stored`], the one interface the layer above dispatches to.

mod cell;
mod one_word;
mod refund;
mod ring;
mod window_records;

pub(crate) use cell::{is_marker, owned, Owned, Tenancy};
pub(crate) use one_word::reserve_at;
pub(crate) use refund::Refund;
pub(crate) use window_records::{replaced_counts, store_counts};

use crate::algorithm::Rule;
use crate::decision::Decision;
use crate::sync::AtomicU64;
use crate::time::{Bounds, TimeSource};

/// An algorithm whose state this layer can keep in words: every operation a limiter or a
/// keyed slot runs on it. Requests reach it checked (`n ≤ limit`), and a fresh state is
/// all zeros.
pub(crate) trait Stored: Rule {
    /// Whether `try_acquire` consults its time source's hint (`one_word.rs`: a one-word
    /// algorithm that says so); no other does.
    const HINTED: bool = false;

    /// How many words of state one limiter needs.
    fn state_words(&self) -> usize;

    /// Acquires `n` units at `now` (`n == 0` queries), with the full report.
    fn acquire_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<Decision, T::Evicted>;

    /// [`acquire_at`](Self::acquire_at), with what giving the units back takes (`None` for
    /// a denial or a query, and for a state that cannot give units back).
    fn acquire_refundable_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<(Decision, Option<Refund>), T::Evicted>;

    /// [`try_acquire_at`](Self::try_acquire_at) of `1 ≤ n` units, handing what giving
    /// them back takes to `refund` (once, on an admission that has one, as
    /// [`acquire_refundable_at`](Self::acquire_refundable_at)): the outcome stays a `bool`,
    /// and the refund goes straight where the caller keeps it.
    fn try_acquire_into<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
        refund: impl FnOnce(Refund),
    ) -> Result<bool, T::Evicted>;

    /// [`settle`](Self::settle), handing what giving the units back takes to `refund`, as
    /// [`try_acquire_into`](Self::try_acquire_into).
    fn settle_into<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        bounds: Bounds,
        n: u64,
        refund: impl FnOnce(Refund),
    ) -> Result<Option<bool>, T::Evicted>;

    /// The decision [`acquire_at`](Self::acquire_at) would make on the state as it is, with
    /// nothing written: `remaining` and `reset_after_ns` as if the units were taken.
    fn peek_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<Decision, T::Evicted>;

    /// Acquires `1 ≤ n` units at `now`, reporting only whether they were admitted.
    fn try_acquire_at<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<bool, T::Evicted>;

    /// Acquires `1 ≤ n` units for every instant within `bounds` at once: `Some(allowed)`
    /// if every instant gives that outcome and the same new state (which is then stored),
    /// `None` (nothing written) if they do not.
    fn settle<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        bounds: Bounds,
        n: u64,
    ) -> Result<Option<bool>, T::Evicted>;

    /// Acquires `1 ≤ n` units now, reporting only whether they were admitted, reading
    /// `time` only as far as the decision needs: on its bounds when they settle it, else
    /// at the exact time. Either way the outcome is `try_acquire_at`'s at some instant
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
