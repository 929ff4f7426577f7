//! Where a holder keeps what its decisions and renewals share: in its own memory, or in a
//! file every process of a host maps (docs/leases.md, one share for a host), at the same
//! offsets either way.

#[cfg(not(loom))]
use crate::shared::Mapping;
use crate::sync::AtomicU64;
use std::ptr::NonNull;
#[cfg(not(loom))]
use std::sync::Arc;

/// Decisions come from the share before this instant (ns; 0: no lease).
pub(super) const LEASE_END: usize = 0;
/// Redis answered "no share" for decisions before this instant (ns).
pub(super) const UNSHARED_UNTIL: usize = 1;
/// Units asked for since the last renewal: the demand it reports.
pub(super) const REQUESTED: usize = 2;
/// The process that renews a host's share (its token), 0 for none.
pub(super) const RENEWER: usize = 3;
/// When the last renewal was asked for, plus 1 (0: never).
pub(super) const LAST_SENT: usize = 4;
/// 1 once a grant was applied; then the grant's eight fields, in the script's order.
pub(super) const GRANTED: usize = 5;
pub(super) const GRANT: usize = 6;
/// A window's count (`window_share.rs`), or a GCRA share (`gcra_share.rs`): a holder
/// keeps one or the other, in the same words.
pub(super) const WINDOW: usize = 14;
pub(super) const GCRA: usize = WINDOW;
/// A host holder's name: its bytes, NUL-padded.
pub(super) const NAME: usize = WINDOW + max(super::window_share::WORDS, super::gcra_share::WORDS);
/// The words of a holder.
pub(super) const WORDS: usize = NAME + NAME_WORDS;
/// The words of a name of 64 bytes at most.
pub(super) const NAME_WORDS: usize = 8;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// A holder's words and what keeps them.
#[derive(Debug)]
pub(super) struct Words {
    first: NonNull<AtomicU64>,
    storage: Storage,
}

/// Held for the words' life, never read.
#[allow(dead_code)]
#[derive(Debug)]
enum Storage {
    Own(Box<[AtomicU64]>),
    #[cfg(not(loom))]
    File(Arc<Mapping>),
}

// SAFETY: the words are atomics, in memory `storage` keeps for as long as `Words` lives.
unsafe impl Send for Words {}
// SAFETY: as for Send: every access is through an atomic.
unsafe impl Sync for Words {}

impl Words {
    /// Words of this process's own, all 0.
    pub(super) fn new() -> Self {
        let own: Box<[AtomicU64]> = (0..WORDS).map(|_| AtomicU64::new(0)).collect();
        let first = NonNull::from(&own[0]);
        Self {
            first,
            storage: Storage::Own(own),
        }
    }

    /// The words of `mapping`: its state words (`WORDS` of them, checked by the caller).
    #[cfg(not(loom))]
    pub(super) fn in_file(mapping: Arc<Mapping>) -> Self {
        let first = NonNull::from(&mapping.state(WORDS)[0]);
        Self {
            first,
            storage: Storage::File(mapping),
        }
    }

    /// Whether the words are this holder's own, not a host's.
    pub(super) fn own(&self) -> bool {
        matches!(self.storage, Storage::Own(_))
    }

    /// Word `word` (below `WORDS`).
    #[inline(always)]
    pub(super) fn get(&self, word: usize) -> &AtomicU64 {
        debug_assert!(word < WORDS);
        // SAFETY: `first` is the first of `WORDS` atomics that `storage` keeps alive.
        unsafe { &*self.first.as_ptr().add(word) }
    }

    /// Words `from` to `from + N` (within `WORDS`), as an array: a decision's indices
    /// into it need no check.
    #[inline(always)]
    pub(super) fn array<const N: usize>(&self, from: usize) -> &[AtomicU64; N] {
        assert!(from + N <= WORDS);
        // SAFETY: as `get`, for each word of the range; an array of atomics has their
        // layout one after another, as the words are.
        unsafe { &*self.first.as_ptr().add(from).cast::<[AtomicU64; N]>() }
    }

    /// Words `from` to `from + len` (within `WORDS`).
    pub(super) fn range(&self, from: usize, len: usize) -> &[AtomicU64] {
        assert!(from + len <= WORDS);
        // SAFETY: as `get`, for each word of the range.
        unsafe { std::slice::from_raw_parts(self.first.as_ptr().add(from), len) }
    }
}
