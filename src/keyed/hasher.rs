//! How a table hashes keys: SipHash-1-3 under a 128-bit key that is secret to the table,
//! drawn at random for a private table and kept in the file for a shared one, so every
//! process that maps the file hashes a key to the same slot.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use siphasher::sip::SipHasher13;

/// The default [`BuildHasher`] of a [`KeyedLimiter`](super::KeyedLimiter): SipHash-1-3 (the
/// hash `std`'s `HashMap` uses) under the table's secret key, so keys chosen by an attacker
/// cannot be made to collide.
#[derive(Clone, Copy)]
pub struct KeyHasher {
    key: [u64; 2],
}

impl KeyHasher {
    /// A hasher under a fresh random key.
    pub(crate) fn random() -> Self {
        // std's RandomState draws its keys from the OS's random source; two hashes under
        // them of distinct inputs are as unpredictable as the keys themselves.
        let source = RandomState::new();
        Self {
            key: [source.hash_one(0u8), source.hash_one(1u8)],
        }
    }

    /// The hasher under `key` (a shared table's, from its file).
    pub(crate) fn with_key(key: [u64; 2]) -> Self {
        Self { key }
    }

    /// The secret key, for a shared table's file.
    #[cfg(not(loom))]
    pub(crate) fn key(&self) -> [u64; 2] {
        self.key
    }
}

impl BuildHasher for KeyHasher {
    type Hasher = SipHasher13;

    #[inline]
    fn build_hasher(&self) -> SipHasher13 {
        SipHasher13::new_with_keys(self.key[0], self.key[1])
    }
}

impl std::fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: never printed.
        f.write_str("KeyHasher")
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::hash::Hasher;

    #[test]
    fn one_key_hashes_alike_and_random_keys_differ() {
        let key = [1, 2];
        let hash = |hasher: &KeyHasher| {
            let mut state = hasher.build_hasher();
            state.write(b"client-42");
            state.finish()
        };
        assert_eq!(
            hash(&KeyHasher::with_key(key)),
            hash(&KeyHasher::with_key(key))
        );
        assert_ne!(KeyHasher::random().key(), KeyHasher::random().key());
    }
}
