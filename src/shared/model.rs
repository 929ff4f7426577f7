//! Under loom, a file's words as the models see them: memory the threads that play
//! processes share, in place of a mapping (loom's atomics are models, not words of memory
//! a file could hold). The same calls as a mapping's.

use super::header::HEADER_WORDS;
use crate::config::Config;
use crate::sync::AtomicU64;

/// A table file's words for a model: its header's rule, then its state words.
#[derive(Debug)]
pub(crate) struct Mapping {
    first: Config,
    words: Box<[AtomicU64]>,
}

impl Mapping {
    /// A new file's words, all zero, of a table created with `first`.
    pub(crate) fn model(first: Config, state_words: usize) -> Self {
        Self {
            first,
            words: (0..HEADER_WORDS + state_words)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }

    /// The state words, after the header.
    pub(crate) fn state(&self, state_words: usize) -> &[AtomicU64] {
        &self.words[HEADER_WORDS..HEADER_WORDS + state_words]
    }

    /// How many state words the file has, after the header.
    pub(crate) fn state_words(&self) -> usize {
        self.words.len() - HEADER_WORDS
    }

    /// A keyed table's hash key: any fixed one.
    pub(crate) fn hash_key(&self) -> [u64; 2] {
        [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210]
    }

    /// The rule the file was created with.
    pub(crate) fn first_rule(&self) -> Option<Config> {
        Some(self.first)
    }
}
