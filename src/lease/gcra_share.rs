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
//! # Now
//! A decision now ([`try_acquire_now`](GcraShare::try_acquire_now)) takes the clock as
//! `Limiter::try_acquire` does (`time::decide`): a busy or drained share is decided on
//! the coarse clock's bounds where every instant in them, all within the lease, decides
//! alike, an idle one at the exact time read first (the holder's hint, as a limiter
//! keeps its own).
//!
//! # The range
//! The word's values grow by the TATs' growth, about a nanosecond of the holder's
//! clock for every nanosecond its share is used, and a renewal adds one: 2⁶⁴ − 2 values
//! last centuries. A decision whose word would pass them is denied; a renewal then
//! starts at the last value, which no decision can swap from.

use super::share::decide;
use crate::algorithm::{Allowance, Gcra, Rule};
use crate::config::Algorithm as Configured;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::state::{Acquire, Request, Settle, TryAcquire};
use crate::sync::{spin_wait, AtomicU64, Ordering::*};
use crate::time::{self, Bounds, ClockHint, Hinted, Monotonic, Timed};

/// A word frozen by a renewal in flight: never a state's word, which stays at most
/// [`LAST`].
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

/// What a decision read: the word, its rule's words and its base.
struct Snapshot {
    word: u64,
    rule: [u64; Gcra::WORDS],
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
        Some(self.swap(TryAcquire { now, n })?.0)
    }

    /// Admits `n ≥ 1` units now or not, on a lease that ends at `lease_end`, as
    /// `Limiter::try_acquire` does: on the coarse clock where its bounds settle the
    /// outcome (a busy share's, or a drained one's), else at the exact time. `None` where
    /// the decision is not the share's: the lease may have ended, or as for
    /// [`try_acquire`](Self::try_acquire). `hint` is the holder's, which its decisions
    /// keep.
    #[inline(always)]
    pub(crate) fn try_acquire_now(&self, n: u64, lease_end: u64, hint: &ClockHint) -> Option<bool> {
        let leased = Leased {
            share: self,
            n,
            lease_end,
        };
        time::decide(Hinted::new(Monotonic, hint), leased).ok()
    }

    /// Decides `n` units at `now` with the decision's fields, as `Limiter::acquire_at`
    /// on the share's rule would: `None` as for [`try_acquire`](Self::try_acquire).
    pub(crate) fn acquire(&self, n: u64, now: u64) -> Option<Decision> {
        Some(self.swap(Acquire { now, n })?.0)
    }

    /// Runs `request` on the share's state by its rule, as a limiter's store does
    /// (`state/one_word.rs`): what it says, and the state it decided on; `None` for more
    /// units than the rule's burst, or no rule to decide by (as `snapshot`).
    #[inline(always)]
    fn swap<R: Request>(&self, request: R) -> Option<(R::Out, u64)> {
        let n = request.units();
        loop {
            let Snapshot { word, rule, base } = self.snapshot()?;
            let state = word.wrapping_add(base);
            // A GCRA's words first, without the enum of every rule: the common case.
            let (out, next) = if rule[INTERVAL - RULE] != 0 {
                let gcra = Gcra::from_words(rule);
                if n > gcra.limit() {
                    return None;
                }
                request.decide(&gcra, &state)
            } else {
                let Decider::Allowance(allowance) = decoded(rule)? else {
                    return None;
                };
                if n > allowance.limit() {
                    return None;
                }
                request.decide(&allowance, &state)
            };
            let Some(next) = next else {
                return Some((out, state));
            };
            match self.commit(word, state, next) {
                Some(true) => return Some((out, state)),
                Some(false) => continue,
                None => {
                    let denied = denied(&decoded(rule)?, state, request.time());
                    return Some((request.of_report(denied), state));
                }
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

    /// The word, its rule's words and its base, read consistently (module docs): `None`
    /// for a renewal that did not publish while the decision waited.
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
            let rule = self.rule();
            // Acquire, as the rule's words: see `rule`.
            let base = self.words[BASE].load(Acquire);
            // Relaxed: a renewal's write read above (Acquire) came after it froze the word,
            // so this reading is the frozen word or a later one, never `word`.
            if self.words[STATE].load(Relaxed) == word {
                return Some(Snapshot { word, rule, base });
            }
        }
    }

    /// The rule's words.
    #[inline(always)]
    fn rule(&self) -> [u64; Gcra::WORDS] {
        // Acquire: pairs with a renewal's Release stores of them, so that a decision
        // reading one of a later renewal's values then reads the word that renewal froze
        // (module docs).
        std::array::from_fn(|index| self.words[RULE + index].load(Acquire))
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
                let held = decoded(self.rule()).unwrap_or(placeholder);
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

/// A decision of `n ≥ 1` units now from a share leased until `lease_end`, for the
/// clock's strategy (`time::decide`) to pick the readings: an instant past the lease is
/// not the share's, nor one of [`try_acquire`](GcraShare::try_acquire)'s `None`s
/// ([`Beside`]).
#[derive(Clone, Copy)]
struct Leased<'a, 'b> {
    share: &'b GcraShare<'a>,
    n: u64,
    lease_end: u64,
}

/// A decision made beside the share, at the exact time.
struct Beside;

impl Timed for Leased<'_, '_> {
    type Evicted = Beside;
    const HINTED: bool = true;
    const PEEKS: bool = true;

    /// An idle bucket's (its TAT reached), as `Gcra::needs_exact`, and one the lease may
    /// have ended for.
    #[inline(always)]
    fn needs_exact(&self, passed: impl FnOnce() -> u64) -> bool {
        // Relaxed: a peek that only picks the clock; the decision reads the words again.
        let word = self.share.words[STATE].load(Relaxed);
        let base = self.share.words[BASE].load(Relaxed);
        let passed = passed();
        word.wrapping_add(base) <= passed || passed >= self.lease_end
    }

    /// The peek says when a denial needs no swap: none is tried before.
    #[inline(always)]
    fn denied_through(&self, _latest: u64) -> Result<bool, Beside> {
        Ok(false)
    }

    #[inline(always)]
    fn settle(&self, bounds: Bounds) -> Result<Option<bool>, Beside> {
        if bounds.latest >= self.lease_end {
            return Ok(None);
        }
        let settle = Settle { bounds, n: self.n };
        Ok(self.share.swap(settle).ok_or(Beside)?.0)
    }

    #[inline(always)]
    fn at(&self, now: u64) -> Result<bool, Beside> {
        Ok(self.at_learning(now, || None)?.0)
    }

    /// As `one_word.rs`'s: a state whose TAT is ahead of `now` by more than the slack
    /// would have been settled on the coarse clock.
    #[inline(always)]
    fn at_learning(
        &self,
        now: u64,
        slack: impl FnOnce() -> Option<u64>,
    ) -> Result<(bool, bool), Beside> {
        if now >= self.lease_end {
            return Err(Beside);
        }
        let try_acquire = TryAcquire { now, n: self.n };
        let (admitted, seen) = self.share.swap(try_acquire).ok_or(Beside)?;
        let settles = seen > now && slack().is_some_and(|slack| seen > now.saturating_add(slack));
        Ok((admitted, settles))
    }
}

/// The rule a share's words hold: `None` for none yet (fresh words).
fn decoded(words: [u64; Gcra::WORDS]) -> Option<Decider> {
    match (words[INTERVAL - RULE], words[BURST - RULE]) {
        (_, 0) => None,
        (0, burst) => Allowance::new(Configured::Gcra, 1, burst)
            .ok()
            .map(Decider::Allowance),
        _ => Some(Decider::Gcra(Gcra::from_words(words))),
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
mod tests;
