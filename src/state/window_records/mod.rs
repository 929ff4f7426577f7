//! The sliding window counter's state in three words, and the protocol that keeps its
//! [`Counts`] consistent while threads roll it over from window to window.
//!
//! # Words
//! - `state[0]`, **current**: `(k, cur)` packed as in `algorithm/windows.rs`: the latest
//!   window anything was admitted in, and its count. It is the only word a decision
//!   swaps, so it alone orders all admissions.
//! - `state[1 + j % 2]`, **closed windows**: `(j, final count of window j)`, written once
//!   the current word leaves window j. Two words, by parity, so closing window j never
//!   touches the record of window j − 1 that readers of window j still need.
//!
//! A reader that finds the current word at window k takes the previous count from the
//! record of parity k − 1 if it is tagged k − 1, else 0 (the current word skipped window
//! k − 1, so nothing was admitted in it).
//!
//! # Roll-over is one atomic step
//! To move from `(k−1, c)` to `(k, n)` a thread first raises the record of parity k − 1
//! to `(k−1, c)` with `fetch_max`, then swaps the current word from exactly `(k−1, c)`.
//! - The swap is the roll-over: before it every reader sees window k − 1 as current (and
//!   takes its count directly); after it every reader sees window k with its record
//!   complete, because the record was written before the `Release` swap and readers load
//!   the current word with `Acquire` ([`decide_and_publish`]).
//! - The record holds the final count: a roll-over only succeeds from the current word's
//!   last value in window k − 1, every count a thread can have seen there is at most that,
//!   and `fetch_max` keeps the largest. Racing roll-overs and late ones (whose swap
//!   fails) only ever write a value the record already has or a smaller one.
//! - Packed words grow with (window, count), so `fetch_max` also keeps a newer window's
//!   record over an older one's of the same parity.
//! - A reader whose current word is stale can find the record of its parity already
//!   reused for a later window (tag ≥ k + 1). It then loads the current word again
//!   rather than decide on a record that no longer describes window k − 1.
//!
//! Every word only ever grows but for a reset's current word (below), and the current word
//! obeys the packed word's bound, so it never holds a slot marker.
//!
//! # Reset
//! [`Stored::reset`] swaps the current word from `(k, c)` to `(k, 0)`, which no admission
//! writes (an admission counts at least one unit): the **reset word**. A current word
//! counting nothing counts nothing in the window before it either, whatever the records
//! hold, so the state decides as a fresh one from window k on (a request from an older
//! window is evaluated at the start of k, as always).
//! - **Before or after.** The swap is the reset's instant. An admission decided on the
//!   state before it swaps from the word it read, and fails once the reset changed it;
//!   it is then decided again on the reset state. A decision on a word equal to one it saw
//!   before the reset is a decision on the state that word now heads (records included,
//!   by what follows).
//! - **Barriers.** An admission that moves a word counting nothing at window k ≥ 1 to a
//!   count in window k writes, before its swap, a **barrier** over window k − 1's record,
//!   which the new word reads: a record of count 0 tagged k + 1 (the same record, by
//!   parity). Records only grow, so a late writer from before the reset cannot lower it.
//!   It never stands above a record that counts: the word is already at window k, so the
//!   next record written there is window k + 1's own (count ≥ 1, above it), even if this
//!   admission's swap fails or a policy's refund (`refund.rs`) puts the word back. (A
//!   barrier over window k's record, for a word moving on to window k + 1, would not be
//!   safe: if that swap failed and the word counted in window k after all, window k's
//!   record would stay below it.)
//! - A reader takes a record of count 0 tagged later than the window it needs as
//!   "nothing counted" only once its current word is confirmed: after an Acquire fence
//!   (pairing with the barrier's Release write, and through the writer's Acquire load of
//!   the reset word, with the reset's Release swap) it loads the current word again, so a
//!   reader holding a word from before the reset never decides on a barrier.
//! - **What no barrier covers.** A roll-over to window k + 1 in flight across the reset
//!   records window k's count as it stood before the reset (its swap then fails, and it
//!   decides again). Window k + 1 then weighs that count, though the reset cleared it: as
//!   if the reset had come just before the last of those units. That only ever denies
//!   more, and only in window k + 1; it needs the reset to race the first request of a new
//!   window.

use super::cell::{decide_and_publish, decide_and_swap, Tenancy};
use super::request::{Request, Settle, TryAcquire};
use super::{Refund, Stored};
use crate::algorithm::{Algorithm, Counted, Counts, Rule, SlidingWindow};
use crate::decision::Decision;
use crate::sync::{fence, AtomicU64, Ordering};
use crate::time::{self, Bounds, TimeSource, Timed};

mod carry;
#[cfg(all(test, not(loom)))]
mod tests;

pub(crate) use self::carry::{replaced_counts, store_counts};

/// Index of the current word in the state.
pub(super) const CURRENT: usize = 0;
/// Index of the first of the two closed-window records.
pub(super) const CLOSED: usize = 1;

impl Stored for SlidingWindow {
    type Now<'a, T: Tenancy + 'a> = Now<'a, T>;

    #[inline(always)]
    fn state_words(&self) -> usize {
        3
    }

    /// The refund puts the current word back; a roll-over's record of the closed window
    /// keeps the count it was given, which is that window's count again.
    // Not inlined into the dispatch: its size would cost the other algorithms' paths
    // there a larger stack frame and their own inlining.
    #[inline(never)]
    fn swap<T: Tenancy, R: Request>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        request: R,
    ) -> Result<R::Out, T::Evicted> {
        run(self, state, tenancy, request)
    }

    #[inline(never)]
    fn try_acquire<T: Tenancy, C: TimeSource>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        time: C,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        let sliding = self;
        time::decide(
            time,
            Now {
                sliding,
                state,
                tenancy,
                n,
            },
        )
    }

    /// Swaps the current word to the reset word (module docs, "Reset").
    fn reset<T: Tenancy>(&self, state: &[AtomicU64], tenancy: &T) -> Result<(), T::Evicted> {
        // Relaxed: the CAS revalidates it.
        let mut current = state[CURRENT].load(Ordering::Relaxed);
        loop {
            tenancy.check(current)?;
            let stored = self.0.unpack(current);
            if stored.count == 0 {
                return Ok(());
            }
            let reset = self.0.pack(Counted {
                index: stored.index,
                count: 0,
            });
            // Release: the first admission out of the reset word loads it (Acquire) before
            // it writes a barrier, so a reader that finds the barrier finds the reset.
            match state[CURRENT].compare_exchange_weak(
                current,
                reset,
                Ordering::Release,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok(()),
                Err(actual) => current = actual,
            }
        }
    }

    /// A snapshot the reclaimer's own CAS of `first` revalidates, so its records are
    /// read as confirmed (see [`counts`]).
    fn is_fresh(&self, state: &[AtomicU64], first: u64, now: u64) -> bool {
        counts(self, state, first, true)
            .is_some_and(|counts| Algorithm::is_fresh(self, &counts, now))
    }
}

/// An [`Acquire`](super::Acquire) of `n` units at `now`, its report worked out after the
/// swap from the counts it decided on: carried through the swap loop, a `Decision` costs
/// more than deciding (the dispatch sends an acquire here rather than through
/// [`Stored::swap`], as it sends GCRA's to its reserve).
// Not inlined into the dispatch: see `Stored::swap`.
#[inline(never)]
pub(crate) fn acquire_at<T: Tenancy>(
    sliding: &SlidingWindow,
    state: &[AtomicU64],
    tenancy: &T,
    now: u64,
    n: u64,
) -> Result<Decision, T::Evicted> {
    let (counts, allowed) = swap(sliding, state, tenancy, |counts| {
        let next = if n == 0 {
            None
        } else {
            sliding.try_decide(counts, now, n)
        };
        ((*counts, n == 0 || next.is_some()), next)
    })?;
    Ok(sliding.report(&counts, now, n, allowed))
}

/// A try-acquire of `1 ≤ n` units, for the time strategy to decide.
pub(crate) struct Now<'a, T> {
    sliding: &'a SlidingWindow,
    state: &'a [AtomicU64],
    tenancy: &'a T,
    n: u64,
}

impl<T: Tenancy> Timed for Now<'_, T> {
    type Evicted = T::Evicted;
    const PEEKS: bool = false;

    fn needs_exact(&self, _passed: impl FnOnce() -> u64) -> bool {
        false
    }

    /// A client over its limit is denied from the current word alone (its count leaves
    /// less than `n` at every instant up to `latest`), without reading the record: one
    /// load, shown to the tenancy, that never swaps.
    #[inline(always)]
    fn denied_through(&self, latest: u64) -> Result<bool, T::Evicted> {
        decide_and_swap(&self.state[CURRENT], self.tenancy, |current| {
            (self.sliding.0.full_through(current, latest, self.n), None)
        })
    }

    #[inline(always)]
    fn settle(&self, bounds: Bounds) -> Result<Option<bool>, T::Evicted> {
        let request = Settle { bounds, n: self.n };
        run(self.sliding, self.state, self.tenancy, request)
    }

    #[inline(always)]
    fn at(&self, now: u64) -> Result<bool, T::Evicted> {
        let request = TryAcquire { now, n: self.n };
        run(self.sliding, self.state, self.tenancy, request)
    }
}

/// [`Stored::swap`], inlined where [`Stored::try_acquire`] runs it.
#[inline(always)]
fn run<T: Tenancy, R: Request>(
    sliding: &SlidingWindow,
    state: &[AtomicU64],
    tenancy: &T,
    request: R,
) -> Result<R::Out, T::Evicted> {
    let mut refund = None;
    let out = swap(sliding, state, tenancy, |counts| {
        let (out, next) = request.decide(sliding, counts);
        if R::REFUNDS {
            refund = next.map(|next| refund_of(sliding, counts, next));
        }
        (out, next)
    })?;
    if let Some(refund) = refund {
        request.keep(refund);
    }
    Ok(out)
}

/// What giving back an admission on `counts` that counted `next` takes: the current word
/// put back as it was.
#[inline(always)]
fn refund_of(sliding: &SlidingWindow, counts: &Counts, next: Counted) -> Refund {
    let before = Counted {
        index: counts.index,
        count: counts.cur,
    };
    Refund::new(CURRENT, sliding.0.pack(before), sliding.0.pack(next))
}

/// The read-decide-swap loop: `decide` maps the counts to a result and, for an admission,
/// the window and count to store, and the current word is swapped to them, the closed
/// window recorded first when it rolls over to the next one.
///
/// Every value of the current word is shown to `tenancy` before anything is decided or
/// written on it, the record of a roll-over included ([`decide_and_publish`]).
#[inline(always)]
fn swap<T: Tenancy, R>(
    sliding: &SlidingWindow,
    state: &[AtomicU64],
    tenancy: &T,
    mut decide: impl FnMut(&Counts) -> (R, Option<Counted>),
) -> Result<R, T::Evicted> {
    // The current word last found stale: see `counts`.
    let mut stale = None;
    loop {
        let step = decide_and_publish(&state[CURRENT], tenancy, |current| {
            let Some(counts) = counts(sliding, state, current, stale == Some(current)) else {
                // A stale current word: load it again.
                stale = Some(current);
                return (None, None);
            };
            let (result, next) = decide(&counts);
            let Some(next) = next else {
                return (Some(result), None);
            };
            if counts.cur > 0 {
                if next.index == counts.index + 1 {
                    // Roll-over to the next window: record the closed one's final count
                    // before the swap. Relaxed: the Release swap publishes it (module docs).
                    state[CLOSED + parity(counts.index)].fetch_max(current, Ordering::Relaxed);
                }
            } else if let Some(previous) = counts.index.checked_sub(1) {
                if next.index == counts.index {
                    // Counting in the window of a word that counts nothing (module docs,
                    // "Reset"). Release: a reader holding a word from before a reset that
                    // finds this barrier then finds the reset too (`counts`).
                    state[CLOSED + parity(previous)]
                        .fetch_max(sliding.0.barrier(previous), Ordering::Release);
                }
            }
            (Some(result), Some(sliding.0.pack(next)))
        })?;
        if let Some(result) = step {
            return Ok(result);
        }
    }
}

/// The counts behind the current word, or `None` if the record of the window before it
/// is tagged with a later window: the current word may have moved on (the record was
/// reused), or a reset may have come (a barrier): load it again.
///
/// With `confirmed`, the current word was loaded again with the same value (or the caller
/// revalidates it with its own CAS). A barrier then means nothing was counted. A later
/// record with a count did not come from a roll-over of this state (the words were reset
/// for a new boot under an old writer still in flight); rather than loop forever, the
/// counts then take the previous window as full, the strictest reading.
#[inline(always)]
pub(super) fn counts(
    sliding: &SlidingWindow,
    state: &[AtomicU64],
    current: u64,
    confirmed: bool,
) -> Option<Counts> {
    let stored = sliding.0.unpack(current);
    let prev = match stored.index.checked_sub(1) {
        // A word that counts nothing (fresh, or reset) counts nothing before it either.
        _ if stored.count == 0 => 0,
        None => 0,
        Some(previous) => {
            // Relaxed: ordered after the Acquire load of the current word (module docs).
            let record = sliding
                .0
                .unpack(state[CLOSED + parity(previous)].load(Ordering::Relaxed));
            match record.index {
                i if i == previous => record.count,
                i if i < previous => 0,
                _ if record.count == 0 && confirmed => 0,
                _ if record.count == 0 => {
                    // A barrier. Acquire: pairs with its Release write, so the current
                    // word loaded again is at least the reset it follows.
                    fence(Ordering::Acquire);
                    return None;
                }
                _ if confirmed => sliding.limit(),
                _ => return None,
            }
        }
    };
    Some(Counts {
        index: stored.index,
        cur: stored.count,
        prev,
    })
}

/// Which closed-window record window `index` uses.
#[inline(always)]
pub(super) fn parity(index: u64) -> usize {
    (index % 2) as usize
}
