//! The marker a change of rule leaves in a limiter's words it replaced, and the
//! [`Tenancy`] that stops a decision on such words.
//!
//! Shared by the limiter's generations (`generations.rs`), which replace words in memory,
//! and a shared file's rules (`shared/rules.rs`), which replace them in the file.

use crate::state::{is_marker, Tenancy};
use crate::sync::Ordering;

/// First-word marker of a limiter's state whose rule was replaced (`Limiter::set_config`):
/// the state was carried over into new words, and these are never used again. A value
/// above every state (`state/cell.rs`); a limiter's words are never a keyed slot, so it
/// may equal one of the keyed table's markers.
pub(crate) const REPLACED: u64 = u64::MAX;
const _: () = assert!(is_marker(REPLACED));

/// A limiter's own words, which a change of its rule may replace: an operation that finds
/// them [`REPLACED`] stops without deciding or writing, and the limiter makes it again on
/// the new words (`generations.rs`). Words in a shared file are never replaced (a change
/// is refused there): a limiter tries them as replaceable too, so that its first try is
/// the same whoever owns the words, and a value another process wrote that equals the
/// marker is then read, out of line, as a state, as [`Owned`](crate::state::Owned) reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Replaceable {
    /// Whether a change can replace these words at all.
    pub(crate) replaceable: bool,
}

/// Why a decision on [`Replaceable`] words stopped: they were replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Replaced;

impl Tenancy for Replaceable {
    type Evicted = Replaced;
    /// Relaxed: the marker publishes nothing; the limiter loads the new words' address
    /// with `Acquire` before it decides again.
    const LOAD: Ordering = Ordering::Relaxed;

    #[inline(always)]
    fn check(&self, first_word: u64) -> Result<(), Replaced> {
        if self.replaceable && first_word == REPLACED {
            Err(Replaced)
        } else {
            Ok(())
        }
    }
}
