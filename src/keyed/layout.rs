//! The table's words: where the control block, the claim registry and each slot and word
//! lie (the offsets, which `region.rs` turns into a region's words, a key's home and its
//! probe order), and the hints (prefetch, huge pages) that only change how fast the
//! memory answers.
//!
//! One region, made at creation and never resized, of plain `u64`s with no pointers, so it
//! can live in a file that processes share (`shared/`):
//! - the **control block**, [`CONTROL_WORDS`]: `max_distance` (inserts write it, every
//!   miss reads it), the count of `TableFull` refusals (written only by a refusal, which
//!   has just written `max_distance` too: `confirm_full`) and, in a private table's
//!   region, whether a change is sweeping keys into it (`change.rs`), alone on their pair
//!   of lines;
//! - the **claim registry**, `claims` entries of a line each (a shared table's; a private
//!   table has none): see `recover.rs`;
//! - the **slots**, `SLOTS_PER_KEY × capacity` of them, each `[fingerprint, state word 0,
//!   …]`. A slot's stride is rounded up to a power of two words when that is at most a
//!   cache line, and the region starts on a line, so a small slot never straddles two.

use super::markers::VACANT;
use super::KeyedLimiter;
use crate::error::ConfigError;
use crate::sync::AtomicU64;
use std::hash::{BuildHasher, Hasher};

/// Slots per key of capacity: a load factor of at most ½ keeps probes short.
pub(super) const SLOTS_PER_KEY: u64 = 2;
/// A cache line on x86-64 and most AArch64 parts.
const LINE_BYTES: usize = 64;
/// Words in a cache line; slots of up to this many words never straddle one.
pub(super) const LINE_WORDS: usize = LINE_BYTES / std::mem::size_of::<u64>();
/// Word 0 of a slot is the fingerprint; the state follows.
pub(super) const STATE_OFFSET: usize = 1;
/// Words of the control block: `max_distance`, the refusal count and padding to 128
/// bytes, the unit x86-64's adjacent-line prefetcher pulls in pairs (crossbeam-utils'
/// `CachePadded` figure).
pub(super) const CONTROL_WORDS: usize = 2 * LINE_WORDS;
/// Index of `max_distance` in the control block.
pub(super) const MAX_DISTANCE: usize = 0;
/// Index of the count of requests for new keys refused with `TableFull`.
pub(super) const TABLE_FULL: usize = 1;
/// Index of the word saying (non-zero) that a change is sweeping keys into the region.
pub(super) const SWEEPING: usize = 2;
/// The fingerprint of a slot that holds no key's state: a vacant slot's, and a retired
/// one's (a reset key's former state: `reset.rs`). No key has it ([`KeyedLimiter::locate`]).
pub(super) const NO_KEY: u64 = 0;

/// A key as the table addresses it: its fingerprint and its home slot.
#[derive(Clone, Copy)]
pub(crate) struct Located {
    /// The key's 64-bit hash under the table's hasher; two keys share a state only if
    /// their fingerprints are equal.
    pub(super) fingerprint: u64,
    /// The slot where the key's probe starts.
    pub(super) home: usize,
}

impl Located {
    /// A location no table's key has (fingerprint [`NO_KEY`]), for where none is needed.
    pub(crate) const NOWHERE: Self = Self {
        fingerprint: NO_KEY,
        home: 0,
    };
}

/// Where a table's words lie in its region.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    pub(super) slot_count: usize,
    /// Words per slot: the fingerprint, the state, padding up to a power of two.
    pub(super) stride: usize,
    /// Entries in the claim registry (0: a private table, whose claims need no recovery).
    pub(super) claims: usize,
}

/// Bytes one key takes in slots of `stride` words.
fn bytes_per_key(stride: usize) -> usize {
    SLOTS_PER_KEY as usize * stride * std::mem::size_of::<u64>()
}

/// The error of a table of `capacity` keys in slots of `stride` words that is too large
/// to allocate or map.
fn too_big(capacity: u64, stride: usize) -> ConfigError {
    ConfigError::Capacity {
        capacity,
        bytes_per_key: bytes_per_key(stride) as u64,
    }
}

impl Layout {
    /// The layout of a table for `capacity` keys of `state_words` words each.
    ///
    /// # Errors
    /// [`ConfigError::ZeroCapacity`] if `capacity` is 0, [`ConfigError::Capacity`] if its
    /// region's size overflows.
    pub(super) fn new(
        capacity: u64,
        state_words: usize,
        claims: usize,
    ) -> Result<Self, ConfigError> {
        if capacity == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        let stride = slot_stride(state_words);
        let too_big = || too_big(capacity, stride);
        let layout = Self {
            slot_count: capacity
                .checked_mul(SLOTS_PER_KEY)
                .and_then(|slots| usize::try_from(slots).ok())
                .ok_or_else(too_big)?,
            stride,
            claims,
        };
        layout
            .slot_count
            .checked_mul(layout.stride)
            .and_then(|words| words.checked_add(layout.slots_start()))
            // Bytes must fit an isize, as every allocation's and mapping's do.
            .filter(|&words| words <= isize::MAX as usize / 8 - LINE_WORDS)
            .ok_or_else(too_big)?;
        Ok(layout)
    }

    /// Bytes one key takes: its slots.
    pub(super) fn bytes_per_key(&self) -> usize {
        bytes_per_key(self.stride)
    }

    /// The error of a table of this layout too large to allocate or map.
    pub(super) fn too_big(&self) -> ConfigError {
        too_big(self.slot_count as u64 / SLOTS_PER_KEY, self.stride)
    }

    /// Index of slot 0's first word in the region.
    pub(super) fn slots_start(&self) -> usize {
        CONTROL_WORDS + self.claims * LINE_WORDS
    }

    /// Words in the region.
    pub(super) fn words(&self) -> usize {
        self.slots_start() + self.slot_count * self.stride
    }

    /// The value of region word `index` in a new table: every slot `VACANT`, all else 0.
    pub(super) fn initial(&self, index: usize) -> u64 {
        match index.checked_sub(self.slots_start()) {
            Some(in_slots) if in_slots % self.stride == STATE_OFFSET => VACANT,
            _ => 0,
        }
    }

    /// A new private region in this process's heap: the words and the index of the
    /// region's first word (the first one on a cache line).
    ///
    /// # Errors
    /// [`ConfigError::Capacity`] if the allocator refuses.
    pub(super) fn allocate(&self) -> Result<(Box<[AtomicU64]>, usize), ConfigError> {
        // One line of slack lets the region start on a line boundary.
        let len = self.words() + LINE_WORDS;
        let mut words: Vec<AtomicU64> = Vec::new();
        // Fails (never aborts) when the allocator says no.
        words.try_reserve_exact(len).map_err(|_| self.too_big())?;
        advise_huge_pages(
            words.as_ptr().cast(),
            len * std::mem::size_of::<AtomicU64>(),
        );
        let start = match words.as_ptr().align_offset(LINE_BYTES) {
            offset if offset < LINE_WORDS => offset,
            _ => 0, // loom's atomics are not plain words; alignment is moot there.
        };
        words.extend((0..len).map(|index| {
            AtomicU64::new(index.checked_sub(start).map_or(0, |index| {
                if index < self.words() {
                    self.initial(index)
                } else {
                    0
                }
            }))
        }));
        Ok((words.into_boxed_slice(), start))
    }
}

impl<S: BuildHasher> KeyedLimiter<S> {
    /// The key's fingerprint and home slot.
    // Always inlined: a plain composition, so that each caller inlines (or calls) the hash
    // as it would on its own.
    #[inline(always)]
    pub(crate) fn locate(&self, key: &[u8]) -> Located {
        let fingerprint = self.fingerprint(key);
        Located {
            fingerprint,
            home: self.first().home(fingerprint),
        }
    }

    /// The key's 64-bit fingerprint: its hash under this table's hasher, but never
    /// [`NO_KEY`] (a hash of 0 counts as 1: one more pair of keys that share a state, out
    /// of 2⁶⁴ values).
    #[inline]
    fn fingerprint(&self, key: &[u8]) -> u64 {
        let mut hasher = self.hasher.build_hasher();
        hasher.write(key);
        hasher.finish().max(NO_KEY + 1)
    }
}

/// Words per slot for a state of `state_words`: the fingerprint plus the state, rounded up
/// to a power of two while that fits in a cache line, so no such slot straddles two lines.
fn slot_stride(state_words: usize) -> usize {
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
pub(super) fn prefetch(word: &AtomicU64) {
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
