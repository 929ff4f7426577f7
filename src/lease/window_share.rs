//! A holder's count of a fixed window (docs/leases.md): the units it may admit in one
//! window of the global rule, between the instant the grant arrived and the window's end
//! by the holder's clock, with one compare-and-swap a decision.
//!
//! One word holds the window's number (its low 16 bits: a tag) and the units used; each
//! window's bounds and count sit in one of four slots, picked by the tag, written before
//! the word names the window. A decision reads the word, then the slot of its tag, and
//! admits only by swapping the word it read: a swap that succeeds proves no other window
//! was put in place in between, so the slot it read was that window's.

use crate::decision::Decision;
use crate::sync::{AtomicU64, Ordering::*};

/// Bits of the word that count the units used; the rest hold the window's tag.
const USED_BITS: u32 = 48;
const USED: u64 = (1 << USED_BITS) - 1;

/// The words of a window's count: the word, then four slots of a window's start, end (ns
/// on the holder's clock) and count.
pub(crate) const WORDS: usize = 1 + 4 * SLOT;
const SLOT: usize = 3;

/// One window's bounds and count.
struct Slot<'a> {
    start: &'a AtomicU64,
    end: &'a AtomicU64,
    count: &'a AtomicU64,
}

/// A holder's count of the current window, over its words (in the holder's memory or a
/// host's file).
pub(crate) struct WindowShare<'a> {
    /// The window's tag and the units used of its count.
    word: &'a AtomicU64,
    slots: &'a [AtomicU64],
}

fn tag_of(window: u64) -> u64 {
    window & 0xFFFF
}

impl<'a> WindowShare<'a> {
    /// The count kept in `words` (`WORDS` of them).
    pub(crate) fn on(words: &'a [AtomicU64]) -> Self {
        Self {
            word: &words[0],
            slots: &words[1..WORDS],
        }
    }

    /// The slot of tag `tag`.
    fn slot(&self, tag: u64) -> Slot<'a> {
        let at = (tag as usize % 4) * SLOT;
        Slot {
            start: &self.slots[at],
            end: &self.slots[at + 1],
            count: &self.slots[at + 2],
        }
    }

    /// Decides `n` units at `now_ns`: `None` where no window held covers `now_ns`.
    pub(crate) fn decide(&self, n: u64, now_ns: u64) -> Option<Decision> {
        // Acquire: a word naming a window comes after its slot was written.
        let mut word = self.word.load(Acquire);
        loop {
            let slot = self.slot(word >> USED_BITS);
            let (start, end) = (slot.start.load(Relaxed), slot.end.load(Relaxed));
            if now_ns < start || now_ns >= end {
                return None;
            }
            let (count, used) = (slot.count.load(Relaxed), word & USED);
            let left = count.saturating_sub(used);
            let until_end = end - now_ns;
            if n > left {
                return Some(Decision {
                    allowed: false,
                    limit: count,
                    remaining: left,
                    retry_after_ns: until_end,
                    reset_after_ns: if used == 0 { 0 } else { until_end },
                    wait_ns: 0,
                });
            }
            if n == 0 {
                return Some(Decision {
                    allowed: true,
                    limit: count,
                    remaining: left,
                    retry_after_ns: 0,
                    reset_after_ns: if used == 0 { 0 } else { until_end },
                    wait_ns: 0,
                });
            }
            // Relaxed on success: the units are counted in the word alone. Acquire on
            // failure: the word read again may name another window.
            match self
                .word
                .compare_exchange_weak(word, word + n, Relaxed, Acquire)
            {
                Ok(_) => {
                    return Some(Decision {
                        allowed: true,
                        limit: count,
                        remaining: left - n,
                        retry_after_ns: 0,
                        reset_after_ns: until_end,
                        wait_ns: 0,
                    })
                }
                Err(now) => word = now,
            }
        }
    }

    /// The window the word names now.
    pub(crate) fn tag(&self) -> u64 {
        self.word.load(Relaxed) >> USED_BITS
    }

    /// Puts window `window` in place, with `count` units from `start_ns` to `end_ns`
    /// (the holder's clock): its units used start at 0.
    pub(crate) fn begin(&self, window: u64, count: u64, start_ns: u64, end_ns: u64) {
        let tag = tag_of(window);
        let slot = self.slot(tag);
        // Relaxed: the swap below publishes them.
        slot.start.store(start_ns, Relaxed);
        slot.end.store(end_ns, Relaxed);
        slot.count.store(count.min(USED), Relaxed);
        // Release: whoever reads the new word reads the slot above.
        self.word.swap(tag << USED_BITS, Release);
    }

    /// Raises the current window's count to `count` (a count only grows in a window), and
    /// brings its end to `end_ns` if that is sooner: the end it keeps.
    pub(crate) fn grow(&self, count: u64, end_ns: u64) -> u64 {
        let slot = self.slot(self.tag());
        // Relaxed: a decision reading the smaller count denies, which it may.
        slot.count.fetch_max(count.min(USED), Relaxed);
        slot.end.fetch_min(end_ns, Relaxed).min(end_ns)
    }

    /// Ends the current window at once, and gives the units of its count left unused:
    /// from the swap on, every decision finds it all used (and then no window at all), and
    /// one that read the word before fails to swap it.
    pub(crate) fn close(&self) -> u64 {
        // Acquire: the slot read below is the one the old word names.
        let word = self.word.fetch_or(USED, Acquire);
        let slot = self.slot(word >> USED_BITS);
        // Relaxed: the swap above already refuses every admission; with no bounds either,
        // decisions go to what decides without a share.
        slot.end.store(0, Relaxed);
        slot.count.load(Relaxed).saturating_sub(word & USED)
    }
}
