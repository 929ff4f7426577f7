//! A holder's GCRA share (docs/leases.md): the local rule every renewal changes and its
//! state, in the holder's words (its own, or a host's file), decided on in place with one
//! compare-and-swap, as a limiter whose rule never changed decides.
//!
//! # The words
//! The rule sits in words beside the state (`Gcra::to_words`, or an allowance's burst),
//! and the state word holds the state (a TAT, or an allowance's units used) counted from
//! a **base** kept beside it too: `state = word + base` (wrapping). A renewal rewrites
//! all of them; a decision reads them and commits by swapping the state word from the
//! value it read. Fresh words (all 0) hold no rule: the holder's placeholder, a full
//! bucket of one unit at the rule's interval, which its first lease empties.
//!
//! # Why a decision is made wholly under one rule, on one state
//! The state word only ever grows. A decision's swap writes a larger state (GCRA's TAT
//! and an allowance's count grow with every admission, `state/cell.rs`), and a renewal
//! picks the new base so that its first word is one more than the last the old rule
//! left. A renewal ([`change`](GcraShare::change)):
//! 1. freezes the word: swaps it to [`FROZEN`] from the value `f` it held (written to the
//!    `high` word first, for a successor if its process dies here);
//! 2. writes the new rule and base (each a `Release` store), the new state being the old
//!    one carried over at the renewal's instant (`renew.rs`);
//! 3. publishes the word `f + 1` by a `Release` store.
//!
//! A decision reads the word (`Acquire`: a word of the new rule's comes after its rule
//! and base were written), then the rule and base (`Acquire`: a renewal's later writes,
//! if it reads one, come after that renewal froze the word), then the word again, and
//! decides only if the two readings agree: the rule and base were then the ones of the
//! word read, none of a later renewal's. It commits by a swap from the word read, which
//! succeeds only if nothing was written since (no value ever comes back), so no renewal
//! came between: the decision is one of the old rule's, before the renewal froze the
//! state, or of the new rule's, after it published. A decision meeting a frozen word
//! waits for the renewal to publish, a few steps; if it does not (its process died in a
//! host), the decision is made beside the share, as without a lease.
//!
//! `tests/loom_lease_share.rs` model-checks decisions racing a renewal.
//!
//! # The range
//! The word's values grow by the TATs' growth, about a nanosecond of the holder's
//! clock for every nanosecond its share is used, and a renewal adds one: 2⁶⁴ − 2 values
//! last centuries. A decision whose word would pass them is denied; a renewal then
//! starts at the last value, which no decision can swap from.

use super::share::decide;
use crate::algorithm::{Algorithm, Allowance, Gcra, Outcome, Rule};
use crate::config::Algorithm as Configured;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::sync::{spin_wait, AtomicU64, Ordering::*};

/// A word frozen by a renewal in flight: no state's (`Gcra` and `Allowance` store at
/// most `MAX_STATE`, and a word counts from a base at most [`LAST`]).
const FROZEN: u64 = u64::MAX;
/// The last value a state word takes.
const LAST: u64 = FROZEN - 1;

/// The words of a share: the state word, the word a renewal froze (`high`), the base,
/// then the rule.
pub(crate) const WORDS: usize = 3 + Gcra::WORDS;
const STATE: usize = 0;
const HIGH: usize = 1;
const BASE: usize = 2;
const RULE: usize = 3;
/// In the rule's words: T (0 for an allowance) and B (0 for no rule).
const INTERVAL: usize = RULE;
const BURST: usize = RULE + 1;

/// How many pauses a decision waits for a renewal in flight to publish before it decides
/// beside the share.
const PATIENCE: u32 = 64;

/// A holder's GCRA share, over its words.
pub(crate) struct GcraShare<'a> {
    words: &'a [AtomicU64; WORDS],
}

/// What a decision read: the word, its rule and its base.
struct Snapshot {
    word: u64,
    rule: Decider,
    base: u64,
}

impl<'a> GcraShare<'a> {
    /// The share kept in `words`.
    #[inline(always)]
    pub(crate) fn on(words: &'a [AtomicU64; WORDS]) -> Self {
        Self { words }
    }

    /// Admits `n` units at `now` or not, as `Limiter::try_acquire_at` on the share's rule
    /// would: `None` for `n` above its burst, or no rule to decide by.
    #[inline(always)]
    pub(crate) fn try_acquire(&self, n: u64, now: u64) -> Option<bool> {
        if n == 0 {
            return self.acquire(0, now).map(|decision| decision.allowed);
        }
        loop {
            let Snapshot { word, rule, base } = self.snapshot()?;
            if n > rule.limit() {
                return None;
            }
            let state = word.wrapping_add(base);
            let next = match rule {
                Decider::Gcra(gcra) => gcra.try_decide(&state, now, n),
                Decider::Allowance(allowance) => allowance.try_decide(&state, now, n),
                _ => return None,
            };
            let Some(next) = next else {
                return Some(false);
            };
            match self.commit(word, state, next) {
                Some(true) => return Some(true),
                Some(false) => continue,
                None => return Some(false),
            }
        }
    }

    /// Decides `n` units at `now` with the decision's fields, as `Limiter::acquire_at`
    /// on the share's rule would: `None` as for [`try_acquire`](Self::try_acquire).
    pub(crate) fn acquire(&self, n: u64, now: u64) -> Option<Decision> {
        loop {
            let Snapshot { word, rule, base } = self.snapshot()?;
            if n > rule.limit() {
                return None;
            }
            let state = word.wrapping_add(base);
            let Outcome { decision, update } = decide(&rule, state, now, n, 0);
            let Some(next) = update else {
                return Some(decision);
            };
            match self.commit(word, state, next) {
                Some(true) => return Some(decision),
                Some(false) => continue,
                None => return Some(denied(&rule, state, now)),
            }
        }
    }

    /// Swaps the word read, `word` for `state`, to the one of `next`: whether it did
    /// (`Some(false)`: the word moved on, decide again), or `None` past the word's range.
    #[inline(always)]
    fn commit(&self, word: u64, state: u64, next: u64) -> Option<bool> {
        // The state grows with an admission: the word grows by as much.
        let after = word
            .checked_add(next.wrapping_sub(state))
            .filter(|&after| after <= LAST)?;
        // Relaxed: the swap only succeeds on the word read, whose rule the snapshot
        // read; it continues the release sequence of the renewal's store, so it need
        // publish nothing of its own.
        let swapped = self.words[STATE].compare_exchange(word, after, Relaxed, Relaxed);
        Some(swapped.is_ok())
    }

    /// The word, its rule and its base, read consistently (module docs): `None` for no
    /// rule, or a renewal that did not publish while the decision waited.
    #[inline(always)]
    fn snapshot(&self) -> Option<Snapshot> {
        let mut patience = PATIENCE;
        loop {
            // Acquire: pairs with the renewal's Release store of a word of its rule (or a
            // decision's swap after it, in that store's release sequence), so the rule and
            // base read below are that renewal's, or a later one's.
            let word = self.words[STATE].load(Acquire);
            if word == FROZEN {
                patience = patience.checked_sub(1)?;
                spin_wait();
                continue;
            }
            let rule = self.rule()?;
            // Acquire, as the rule's words: see `rule`.
            let base = self.words[BASE].load(Acquire);
            // Relaxed: a renewal's write read above (Acquire) came after it froze the word,
            // so this reading is the frozen word or a later one, never `word`.
            if self.words[STATE].load(Relaxed) == word {
                return Some(Snapshot { word, rule, base });
            }
        }
    }

    /// The rule the words hold: `None` for none yet.
    #[inline(always)]
    fn rule(&self) -> Option<Decider> {
        // Acquire: pairs with a renewal's Release stores of them, so that a decision
        // reading one of a later renewal's values then reads the word that renewal froze
        // (module docs).
        let words: [u64; Gcra::WORDS] =
            std::array::from_fn(|index| self.words[RULE + index].load(Acquire));
        match (words[INTERVAL - RULE], words[BURST - RULE]) {
            (_, 0) => None,
            (0, burst) => Allowance::new(Configured::Gcra, 1, burst)
                .ok()
                .map(Decider::Allowance),
            _ => Some(Decider::Gcra(Gcra::from_words(words))),
        }
    }

    /// Puts a new rule and state in place: `next` is given the rule in force (fresh
    /// words: `placeholder`) and its state, and returns the rule and state to put in
    /// place. Renewals are one at a time (the holder's turn, and a host's renewer word);
    /// one finding the word frozen follows a renewal whose process died mid-way: the old
    /// rule's words may be half written, so `next` is given the placeholder, emptied by
    /// `empty`, as its state.
    pub(crate) fn change(
        &self,
        placeholder: Decider,
        empty: impl FnOnce(&Decider, u64) -> u64,
        next: impl FnOnce(&Decider, u64) -> (Decider, u64),
    ) {
        let word = &self.words[STATE];
        // Acquire: the rule and base of the word frozen are read below (pairs with the
        // Release stores that published them, as a decision's load does).
        let mut seen = word.load(Acquire);
        let frozen = loop {
            if seen == FROZEN {
                break None;
            }
            // Relaxed: the swap below publishes it, to a successor that finds it frozen.
            self.words[HIGH].store(seen, Relaxed);
            // AcqRel: Acquire as the load above; Release publishes `high`.
            match word.compare_exchange(seen, FROZEN, AcqRel, Acquire) {
                Ok(_) => break Some(seen),
                Err(actual) => seen = actual,
            }
        };
        let (held, state, high) = match frozen {
            Some(high) => {
                let held = self.rule().unwrap_or(placeholder);
                // Relaxed: this renewal's own writes, or ones the Acquire above read.
                let base = self.words[BASE].load(Relaxed);
                (held, high.wrapping_add(base), high)
            }
            None => {
                // Relaxed: the frozen word, read by Acquire above, published it.
                let high = self.words[HIGH].load(Relaxed);
                (placeholder, empty(&placeholder, 0), high)
            }
        };
        let (rule, state) = next(&held, state);
        // One more than the last word: no decision swaps from a value below it again.
        let first = (high + 1).min(LAST);
        let words = match rule {
            Decider::Gcra(gcra) => gcra.to_words(),
            Decider::Allowance(allowance) => [0, allowance.limit(), 0, 0, 0],
            _ => unreachable!("a share's rule is a GCRA's"),
        };
        // Release, each: a decision that reads one of them then reads the word frozen
        // (module docs).
        for (index, value) in words.into_iter().enumerate() {
            self.words[RULE + index].store(value, Release);
        }
        self.words[BASE].store(state.wrapping_sub(first), Release);
        // Release: a decision that reads the new word reads the rule and base above.
        word.store(first, Release);
    }
}

/// The denial of an admission the word's range leaves no room for.
#[cold]
fn denied(rule: &Decider, state: u64, now: u64) -> Decision {
    Decision {
        allowed: false,
        retry_after_ns: u64::MAX,
        ..decide(rule, state, now, 0, 0).decision
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::lease::share::{carried, emptied};
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    /// One unit every `interval_ms`, bursts of `burst`.
    fn rule(interval_ms: u64, burst: u64) -> Decider {
        let config = Config::gcra(1, Duration::from_millis(interval_ms)).with_burst(burst);
        Decider::new(&config).unwrap()
    }

    /// Renews `share` at `at` to `next`, keeping the tokens (a continuing lease) or not.
    fn renew(share: &GcraShare<'_>, next: Decider, at: u64, continuing: bool) {
        let placeholder = rule(1, 1);
        share.change(
            placeholder,
            |placeholder, state| emptied(placeholder, state, at),
            |held, state| {
                let state = if continuing {
                    state
                } else {
                    emptied(held, state, at)
                };
                (next, carried(held, state, at, &next))
            },
        );
    }

    fn remaining(share: &GcraShare<'_>, at: u64) -> u64 {
        share.acquire(0, at).unwrap().remaining
    }

    #[test]
    fn the_word_grows_when_a_renewal_moves_the_tat_back() {
        let words: [AtomicU64; WORDS] = Default::default();
        let share = GcraShare::on(&words);
        // One unit every 10 ms, bursts of 10, from empty at 0: TAT = 100 ms.
        renew(&share, rule(10, 10), 0, false);
        let before = words[STATE].load(Relaxed);
        assert_eq!(remaining(&share, 100 * MS), 10);
        // At 0, no token: at one unit a ms, bursts of 10, TAT = 0 + 10 ms, back 90 ms.
        renew(&share, rule(1, 10), 0, true);
        assert_eq!(words[STATE].load(Relaxed), before + 1);
        assert_eq!(remaining(&share, 0), 0);
        assert_eq!(remaining(&share, 4 * MS), 4);
        assert_eq!(share.try_acquire(5, 4 * MS), Some(false));
        assert_eq!(share.try_acquire(4, 4 * MS), Some(true));
        assert_eq!(share.try_acquire(11, 4 * MS), None);
    }

    #[test]
    fn a_renewal_after_one_that_died_midway_starts_empty() {
        let words: [AtomicU64; WORDS] = Default::default();
        let share = GcraShare::on(&words);
        // One unit every 2 ms, bursts of 4, from empty at 0: full at 8 ms.
        renew(&share, rule(2, 4), 0, false);
        assert_eq!(remaining(&share, 8 * MS), 4);
        // A renewal froze the word, and its process died.
        let word = words[STATE].load(Relaxed);
        words[HIGH].store(word, Relaxed);
        words[STATE].store(FROZEN, Relaxed);
        assert_eq!(share.try_acquire(1, 8 * MS), None);
        // The next keeps the tokens it finds: none, for the old rule is unknown.
        renew(&share, rule(2, 4), 8 * MS, true);
        assert_eq!(words[STATE].load(Relaxed), word + 1);
        assert_eq!(remaining(&share, 8 * MS), 0);
        assert_eq!(remaining(&share, 10 * MS), 1);
    }

    #[test]
    fn a_word_at_the_end_of_its_range_admits_nothing_more() {
        let words: [AtomicU64; WORDS] = Default::default();
        let share = GcraShare::on(&words);
        // Fresh words, but for a word near its end: the state is still 0.
        words[STATE].store(LAST - 3, Relaxed);
        words[BASE].store(0u64.wrapping_sub(LAST - 3), Relaxed);
        // One unit every 2 ms: an admission would move the word 2,000,000 on, past the end.
        renew(&share, rule(2, 4), 0, false);
        assert_eq!(words[STATE].load(Relaxed), LAST - 2);
        assert_eq!(remaining(&share, 8 * MS), 4);
        assert_eq!(share.try_acquire(1, 8 * MS), Some(false));
        let denied = share.acquire(1, 8 * MS).unwrap();
        assert!(!denied.allowed);
        assert_eq!((denied.remaining, denied.retry_after_ns), (4, u64::MAX));
    }
}
