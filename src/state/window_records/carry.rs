//! Carrying a sliding window counter's state over a change of rule: the counts the
//! replaced words hold, and fresh words that hold given counts.

use super::{counts, parity, CLOSED, CURRENT};
use crate::algorithm::{Counted, Counts, SlidingWindow};
use crate::sync::{AtomicU64, Ordering};

/// The counts of words whose current word last held `current` before a change of rule
/// replaced it: nothing writes the current word any more, so the records are final but
/// for late writers, whose values they already hold or exceed (module docs).
pub(crate) fn replaced_counts(
    sliding: &SlidingWindow,
    state: &[AtomicU64],
    current: u64,
) -> Counts {
    // Confirmed: the current word can no longer move on. `counts` reads a confirmed word
    // whatever the records hold, so the fallback is never taken.
    counts(sliding, state, current, true).unwrap_or(Counts {
        index: 0,
        cur: 0,
        prev: 0,
    })
}

/// Writes `counts` into fresh words (all zeros, not yet shared): the current word and the
/// record of the window before it. Counts of nothing in the current window but some in
/// the one before are the counts of that window, seen from the next.
pub(crate) fn store_counts(sliding: &SlidingWindow, state: &[AtomicU64], counts: Counts) {
    let windows = &sliding.0;
    let (current, closed) = match counts.index.checked_sub(1) {
        Some(previous) if counts.cur == 0 && counts.prev > 0 => (
            Counted {
                index: previous,
                count: counts.prev,
            },
            None,
        ),
        Some(previous) if counts.prev > 0 => (
            Counted {
                index: counts.index,
                count: counts.cur,
            },
            Some(Counted {
                index: previous,
                count: counts.prev,
            }),
        ),
        _ => (
            Counted {
                index: counts.index,
                count: counts.cur,
            },
            None,
        ),
    };
    if current.count == 0 {
        return; // all zeros: fresh
    }
    // Relaxed: the words are published by the release of the words' address.
    state[CURRENT].store(windows.pack(current), Ordering::Relaxed);
    if let Some(closed) = closed {
        state[CLOSED + parity(closed.index)].store(windows.pack(closed), Ordering::Relaxed);
    }
}
