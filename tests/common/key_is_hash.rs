//! A hasher under which an 8-byte key is its own hash, so a test puts each key in the home
//! slot it needs (a table's home slot is the top bits of the hash).

use std::hash::{BuildHasher, Hasher};

/// A hasher under which an 8-byte key is its own little-endian hash.
#[derive(Clone, Copy, Default)]
pub struct KeyIsHash;

pub struct KeyHasher(u64);

impl BuildHasher for KeyIsHash {
    type Hasher = KeyHasher;
    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = u64::from_le_bytes(bytes.try_into().expect("8-byte test keys"));
    }
    fn finish(&self) -> u64 {
        self.0
    }
}
