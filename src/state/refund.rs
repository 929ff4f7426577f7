//! Giving units back: a policy of several rules (`src/policy.rs`) takes a request from each
//! rule in turn, and when a later rule denies it, gives back what the earlier ones took.

use crate::sync::{AtomicU64, Ordering};

/// What an admission changed: one word of the state, from `before` to `after`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refund {
    word: usize,
    before: u64,
    after: u64,
}

impl Refund {
    #[inline]
    pub(crate) fn new(word: usize, before: u64, after: u64) -> Self {
        Self {
            word,
            before,
            after,
        }
    }

    /// Puts the word back to `before` if it still holds `after`, and says whether it did.
    /// A word that holds `after` again after other changes had those changes given back
    /// too (every other change of the word is an admission, which only moves it on, or a
    /// refund, which puts back exactly what an admission changed), so putting it back is
    /// exact either way. A word another admission moved on keeps the units: taken, never
    /// admitted twice. (A reset, which lowers a word, could bring `after` back without
    /// giving anything back; a policy never resets its rules, which are its own private
    /// limiters.)
    #[inline]
    pub(crate) fn apply(self, state: &[AtomicU64]) -> bool {
        // A word out of range gives nothing back: a refund rebuilt from a caller's words
        // (`from_words`) may name any index.
        let Some(word) = state.get(self.word) else {
            return false;
        };
        // Release on success: the value put back was read with (at least) the ordering of
        // the admission's swap, so whatever other words it publishes (a window record) were
        // written before, and stay visible to readers that load it. Relaxed on failure:
        // nothing is read from it.
        word.compare_exchange(
            self.after,
            self.before,
            Ordering::Release,
            Ordering::Relaxed,
        )
        .is_ok()
    }

    /// The refund as plain words, for a caller that keeps a reservation in memory of its
    /// own (`src/reservation.rs`).
    pub(crate) fn to_words(self) -> [u64; 3] {
        [self.word as u64, self.before, self.after]
    }

    /// The refund [`to_words`](Self::to_words) wrote. Any words make a refund: one whose
    /// word is out of range or does not hold `after` gives nothing back.
    pub(crate) fn from_words([word, before, after]: [u64; 3]) -> Self {
        let word = usize::try_from(word).unwrap_or(usize::MAX);
        Self::new(word, before, after)
    }
}
