//! The slot array: its allocation, where each slot and word lies, where a key's probe
//! starts and how it goes on, and the hints (prefetch, huge pages) that only change how
//! fast the memory answers.
//!
//! One allocation, made at creation and never resized: `SLOTS_PER_KEY × capacity` slots,
//! each `[fingerprint, state word 0, …]` of plain `u64`s with no pointers, so the array
//! could live in memory shared between processes. A slot's stride is rounded up to a power
//! of two words when that is at most a cache line, and the array starts on a line, so a
//! small slot never straddles two lines.

use super::KeyedLimiter;
use crate::error::{ConfigError, Error};
use crate::state::VACANT;
use crate::sync::AtomicU64;
use std::hash::{BuildHasher, Hasher};

/// Slots per key of capacity: a load factor of at most ½ keeps probes short.
pub(super) const SLOTS_PER_KEY: u64 = 2;
/// A cache line on x86-64 and most AArch64 parts.
const LINE_BYTES: usize = 64;
/// Words in a cache line; slots of up to this many words never straddle one.
const LINE_WORDS: usize = LINE_BYTES / std::mem::size_of::<u64>();
/// Word 0 of a slot is the fingerprint; the state follows.
const STATE_OFFSET: usize = 1;

/// A key as the table addresses it: its fingerprint and its home slot.
#[derive(Clone, Copy)]
pub(super) struct Located {
    /// The key's 64-bit hash under the table's hasher; two keys share a state only if
    /// their fingerprints are equal.
    pub(super) fingerprint: u64,
    /// The slot where the key's probe starts.
    pub(super) home: usize,
}

/// A fresh slot array: `slot_count` slots of `stride` words, starting at `words[base]`,
/// every slot `VACANT`.
pub(super) struct Slots {
    pub(super) slot_count: usize,
    pub(super) base: usize,
    pub(super) words: Box<[AtomicU64]>,
}

impl Slots {
    /// Allocates the slots for `capacity` keys of `stride` words each.
    ///
    /// # Errors
    /// [`ConfigError::Capacity`] if `capacity` is 0 or its table cannot be allocated.
    pub(super) fn allocate(capacity: u64, stride: usize) -> Result<Self, Error> {
        let too_big = Error::InvalidConfig(ConfigError::Capacity);
        if capacity == 0 {
            return Err(too_big);
        }
        let slot_count = capacity
            .checked_mul(SLOTS_PER_KEY)
            .and_then(|slots| usize::try_from(slots).ok())
            .ok_or(too_big)?;
        // One line of slack lets the slots start on a line boundary.
        let len = slot_count
            .checked_mul(stride)
            .and_then(|words| words.checked_add(LINE_WORDS))
            .ok_or(too_big)?;
        let mut words: Vec<AtomicU64> = Vec::new();
        // Fails (never aborts) when the bytes overflow isize or the allocator says no.
        words.try_reserve_exact(len).map_err(|_| too_big)?;
        advise_huge_pages(
            words.as_ptr().cast(),
            len * std::mem::size_of::<AtomicU64>(),
        );
        let base = match words.as_ptr().align_offset(LINE_BYTES) {
            offset if offset < LINE_WORDS => offset,
            _ => 0, // loom's atomics are not plain words; alignment is moot there.
        };
        words.extend((0..len).map(|index| {
            let in_slot = index.wrapping_sub(base) % stride;
            AtomicU64::new(if index >= base && in_slot == STATE_OFFSET {
                VACANT
            } else {
                0
            })
        }));
        Ok(Self {
            slot_count,
            base,
            words: words.into_boxed_slice(),
        })
    }
}

impl<S> KeyedLimiter<S> {
    #[inline]
    pub(super) fn slot(&self, slot: usize) -> &[AtomicU64] {
        let start = self.base + slot * self.stride;
        &self.words[start..start + self.stride]
    }

    #[inline]
    pub(super) fn fingerprint_word(&self, slot: usize) -> &AtomicU64 {
        &self.slot(slot)[0]
    }

    #[inline]
    pub(super) fn state(&self, slot: usize) -> &[AtomicU64] {
        &self.slot(slot)[STATE_OFFSET..STATE_OFFSET + self.policy.state_words()]
    }

    #[inline]
    pub(super) fn first_word(&self, slot: usize) -> &AtomicU64 {
        &self.slot(slot)[STATE_OFFSET]
    }

    /// The key's home slot: fast range, `⌊fingerprint · slots / 2⁶⁴⌋`.
    #[inline]
    fn home(&self, fingerprint: u64) -> usize {
        ((u128::from(fingerprint) * self.slot_count as u128) >> 64) as usize
    }

    /// The slot `distance` steps past `home`, wrapping around the table.
    #[inline]
    pub(super) fn probe(&self, home: usize, distance: usize) -> usize {
        let slot = home + distance;
        if slot >= self.slot_count {
            slot - self.slot_count
        } else {
            slot
        }
    }

    /// Distances to probe for a key: from 0 to `bound`, at most once around the table.
    #[inline]
    pub(super) fn distances(&self, bound: u64) -> std::ops::RangeInclusive<usize> {
        0..=usize::try_from(bound).map_or(self.slot_count - 1, |b| b.min(self.slot_count - 1))
    }

    /// Asks the CPU to start loading the key's home slot.
    #[inline(always)]
    pub(super) fn prefetch_home(&self, key: Located) {
        prefetch(&self.slot(key.home)[0]);
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// The key's fingerprint and home slot.
    // Always inlined: a plain composition, so that each caller inlines (or calls) the hash
    // as it would on its own.
    #[inline(always)]
    pub(super) fn locate(&self, key: &[u8]) -> Located {
        let fingerprint = self.fingerprint(key);
        Located {
            fingerprint,
            home: self.home(fingerprint),
        }
    }

    /// The key's 64-bit fingerprint: its hash under this table's hasher.
    #[inline]
    fn fingerprint(&self, key: &[u8]) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        hasher.write(key);
        hasher.finish()
    }
}

/// Words per slot for a state of `state_words`: the fingerprint plus the state, rounded up
/// to a power of two while that fits in a cache line, so no such slot straddles two lines.
pub(super) fn slot_stride(state_words: usize) -> usize {
    let words = STATE_OFFSET + state_words;
    if words <= LINE_WORDS {
        words.next_power_of_two()
    } else {
        words
    }
}

/// Asks Linux to back the table with transparent huge pages (2 MiB) before it is first
/// touched: a lookup at a random key then costs one cache miss without a TLB miss on top
/// (a million GCRA keys span 8,192 small pages, far more than the TLB holds). Advice
/// only: it changes no behaviour, and a kernel that declines is ignored.
fn advise_huge_pages(start: *const u8, bytes: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        // Only whole huge pages inside the allocation can be huge.
        let first = start.align_offset(HUGE_PAGE);
        if first < bytes && bytes - first >= HUGE_PAGE {
            let length = (bytes - first) / HUGE_PAGE * HUGE_PAGE;
            // SAFETY: the range lies inside an allocation this table owns and nobody has
            // touched yet; MADV_HUGEPAGE only changes how the kernel backs it, never its
            // contents, and its failure is harmless.
            unsafe {
                libc::madvise(
                    start.add(first) as *mut libc::c_void,
                    length,
                    libc::MADV_HUGEPAGE,
                )
            };
        }
    }
    #[cfg(not(all(target_os = "linux", not(loom))))]
    let _ = (start, bytes, HUGE_PAGE);
}

/// Asks the CPU to start loading `word`'s cache line; a no-op where we have no prefetch.
#[inline(always)]
fn prefetch(word: &AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(loom)))]
    // SAFETY: a prefetch is a hint: it never faults and changes no memory.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            (word as *const AtomicU64).cast(),
        )
    };
    #[cfg(not(all(target_arch = "x86_64", not(loom))))]
    let _ = word;
}
