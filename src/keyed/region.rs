//! A table's region as one generation of its rule: the rule, the words it decides on
//! (laid out as `layout.rs` says: each word's address, a key's home and probe order,
//! below), and what a change of rule needs of it (`change.rs`): whether it is still being
//! filled from the region it replaced, and that region.

use super::layout::{
    prefetch, Layout, Located, CONTROL_WORDS, LINE_WORDS, MAX_DISTANCE, STATE_OFFSET, SWEEPING,
    TABLE_FULL,
};
use super::markers::MOVED;
use crate::config::Config;
use crate::decider::Decider;
use crate::error::ConfigError;
use crate::shared::{is_forged, Mapping, RECORDS_END};
use crate::sync::{AtomicU64, Ordering};
use crate::versions::Version;
use std::ptr::NonNull;
use std::sync::Arc;

/// A rule and the slots it decides on. A table holds the region it was built with in
/// place, and each change of its rule adds one (`change.rs`). Every word that changes is
/// in the region's words, behind a pointer: the rest is read-only, so the compiler keeps
/// it in registers across the atomic operations of a decision.
pub(super) struct Region {
    pub(super) decider: Decider,
    pub(super) config: Config,
    pub(super) layout: Layout,
    /// Index of slot 0's first word in the region (`layout.slots_start()`, kept so the
    /// hot path does not compute it).
    pub(super) base: usize,
    /// The region's first word: the control block, then the registry and the slots
    /// (`layout.rs`), `len` of them, in `_memory`.
    words: NonNull<AtomicU64>,
    /// `layout.words()`, kept so that the hot path does not compute it.
    len: usize,
    /// `decider.state_words()`, kept so that addressing a slot's state needs no dispatch.
    state_words: usize,
    /// The rule block of the file the region lives in (`file.rs`), whose change in flight
    /// tells a change's marker from bytes another writer forged; `None` for a region in
    /// this process's memory, which a change sweeps into after publishing it.
    file: Option<NonNull<AtomicU64>>,
    /// The region this one replaced, read while this one is swept into (its sweep retires
    /// it when it ends: `change.rs`): `None` for the table's first (held in place by the
    /// table) and for the first itself.
    pub(super) replaced: Option<NonNull<Version<Region>>>,
    /// 0 for the table's first region, one more for each change (`Change::serial` in
    /// `versions.rs`): what a refund keeps to know the region again.
    pub(super) serial: u64,
    /// Where refusals for a full table are counted: the first region's word, for every
    /// region, so the count outlives the regions a change frees.
    refusals: NonNull<AtomicU64>,
    /// Owns the words: kept, never read.
    _memory: Memory,
}

/// Where a region's words live.
pub(super) enum Memory {
    /// This process's heap.
    Private { _words: Box<[AtomicU64]> },
    /// A file every process that opens it maps (under loom, the words a model's threads
    /// share in its place).
    Shared { _mapping: Arc<Mapping> },
}

// SAFETY: `words` points into `_memory`, which the region owns and which never moves (a
// heap block or a mapping); `replaced` to a region its table frees only once no thread
// can read it (`versions.rs`), `refusals` to a word of the table's first region, which
// lives as long as the table, and `file` to words of the mapping `_memory` holds; the
// words are only ever accessed atomically.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    /// The region of `decider` over the words at `words`, which `memory` owns.
    pub(super) fn new(
        decider: Decider,
        config: &Config,
        layout: Layout,
        words: NonNull<AtomicU64>,
        memory: Memory,
    ) -> Self {
        let state_words = decider.state_words();
        // What makes each slot's words addressable unchecked (`slot_start`): the state
        // fits in a slot after the fingerprint, and the slots in the region.
        assert!(STATE_OFFSET + state_words <= layout.stride);
        assert!(layout.slots_start() + layout.slot_count * layout.stride <= layout.words());
        assert!(TABLE_FULL < layout.words());
        // SAFETY: the control block's word, inside the region's words (asserted above).
        let refusals = NonNull::from(unsafe { &*words.as_ptr().add(TABLE_FULL) });
        Self {
            file: None,
            decider,
            config: *config,
            layout,
            base: layout.slots_start(),
            words,
            len: layout.words(),
            state_words,
            replaced: None,
            serial: 0,
            refusals,
            _memory: memory,
        }
    }

    /// A new region of `decider` in this process's heap, laid out as `layout`.
    ///
    /// # Errors
    /// [`ConfigError::Capacity`] if the allocator refuses.
    pub(super) fn private(
        decider: Decider,
        config: &Config,
        layout: Layout,
    ) -> Result<Self, ConfigError> {
        let (words, start) = layout.allocate()?;
        let region = NonNull::from(&words[start]);
        Ok(Self::new(
            decider,
            config,
            layout,
            region,
            Memory::Private { _words: words },
        ))
    }

    /// The region's words.
    #[inline(always)]
    pub(super) fn words(&self) -> &[AtomicU64] {
        // SAFETY: `words` points to `len` words owned by `_memory` for this value's life,
        // aligned, and only ever accessed atomically.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr(), self.len) }
    }

    /// Marks the region as one of a file whose rule block starts at `block` (`file.rs`).
    pub(super) fn in_file(&mut self, block: NonNull<AtomicU64>) {
        self.file = Some(block);
    }

    /// Whether `first`, a slot's first word, says the slot was moved into a next region.
    /// In a file, a marker that no change of the region's rule explains is bytes another
    /// writer forged, read as a forged claim marker (`recover.rs` clears it).
    #[inline]
    pub(super) fn moved(&self, first: u64) -> bool {
        first == MOVED && self.moved_in_file()
    }

    #[cold]
    fn moved_in_file(&self) -> bool {
        match self.file {
            None => true,
            Some(block) => {
                // SAFETY: the block's words, in the mapping `_memory` holds for this
                // value's life, only ever accessed atomically.
                let block = unsafe { std::slice::from_raw_parts(block.as_ptr(), RECORDS_END) };
                !is_forged(block, self.serial)
            }
        }
    }

    /// Whether `slot` was moved into a next region. Relaxed: the marker is final, and a
    /// caller that finds it loads the table's current region with Acquire next.
    pub(super) fn is_moved(&self, slot: usize) -> bool {
        self.moved(self.first_word(slot).load(Ordering::Relaxed))
    }

    /// Whether a change is still moving the predecessor's keys into this region: nothing
    /// but the change writes here meanwhile (`change.rs`). Acquire: pairs with the
    /// Release store that ended the sweep, so every slot it wrote is seen. A region in a
    /// file is published only once swept into (`file.rs`): its word is not read.
    #[inline]
    pub(super) fn is_sweeping(&self) -> bool {
        self.file.is_none() && self.words()[SWEEPING].load(Ordering::Acquire) != 0
    }

    /// Marks the start (`true`, before the region is published) or the end of its sweep.
    /// Release: the end publishes every slot the sweep wrote (see `is_sweeping`).
    pub(super) fn set_sweeping(&self, sweeping: bool) {
        self.words()[SWEEPING].store(u64::from(sweeping), Ordering::Release);
    }
}

/// Where each word of a region lies (`layout.rs`), and where a key's probe goes.
impl Region {
    /// Whether the region has a slot `slot`.
    #[inline]
    pub(super) fn holds_slot(&self, slot: usize) -> bool {
        slot < self.layout.slot_count
    }

    /// Slot `slot`'s first word (its fingerprint), after one check that the slot is in
    /// the table: every word of the slot is then addressed from it with no check of its
    /// own, which keeps the lookup of a key short.
    #[inline(always)]
    fn slot_start(&self, slot: usize) -> *const AtomicU64 {
        assert!(slot < self.layout.slot_count, "slot {slot} out of range");
        // SAFETY: the slots lie within the region's `len` words (asserted in `new`), and
        // slot `slot < slot_count` starts `base + slot × stride` words in.
        unsafe {
            self.words
                .as_ptr()
                .add(self.base + slot * self.layout.stride)
        }
    }

    /// Slot `slot`'s words: the fingerprint, the state, padding.
    #[inline]
    pub(super) fn slot(&self, slot: usize) -> &[AtomicU64] {
        // SAFETY: a slot's `stride` words, owned by `_memory` for this value's life (see
        // `slot_start` and `words`).
        unsafe { std::slice::from_raw_parts(self.slot_start(slot), self.layout.stride) }
    }

    /// `max_distance`: the largest distance from its home at which a key was ever
    /// installed. Lookups probe no further; it only grows.
    #[inline]
    pub(super) fn max_distance(&self) -> &AtomicU64 {
        &self.words()[MAX_DISTANCE]
    }

    /// How many requests for new keys were refused with `TableFull`, in every region of
    /// the table: only ever incremented.
    #[inline]
    pub(super) fn table_full(&self) -> &AtomicU64 {
        // SAFETY: the first region's word (`counting_in`), which lives as long as the
        // table, and so as long as every region of it.
        unsafe { self.refusals.as_ref() }
    }

    /// Counts this region's refusals in `first`'s word, the table's first region.
    pub(super) fn counting_in(&mut self, first: &Region) {
        self.refusals = first.refusals;
    }

    /// The claim registry's entry `claim` (a line of words).
    pub(super) fn registry_entry(&self, claim: usize) -> &[AtomicU64] {
        let start = CONTROL_WORDS + claim * LINE_WORDS;
        &self.words()[start..start + LINE_WORDS]
    }

    #[inline(always)]
    pub(super) fn fingerprint_word(&self, slot: usize) -> &AtomicU64 {
        // SAFETY: word 0 of the slot (see `slot`).
        unsafe { &*self.slot_start(slot) }
    }

    #[inline(always)]
    pub(super) fn state(&self, slot: usize) -> &[AtomicU64] {
        // SAFETY: the state's words follow the fingerprint within the slot (asserted in
        // `new`; see `slot`).
        unsafe {
            std::slice::from_raw_parts(self.slot_start(slot).add(STATE_OFFSET), self.state_words)
        }
    }

    #[inline(always)]
    pub(super) fn first_word(&self, slot: usize) -> &AtomicU64 {
        // SAFETY: as in `state`: its first word.
        unsafe { &*self.slot_start(slot).add(STATE_OFFSET) }
    }

    /// The key's home slot: fast range, `⌊fingerprint · slots / 2⁶⁴⌋`.
    #[inline]
    pub(super) fn home(&self, fingerprint: u64) -> usize {
        ((u128::from(fingerprint) * self.layout.slot_count as u128) >> 64) as usize
    }

    /// The slot `distance` steps past `home`, wrapping around the table.
    #[inline]
    pub(super) fn probe(&self, home: usize, distance: usize) -> usize {
        let slot = home + distance;
        if slot >= self.layout.slot_count {
            slot - self.layout.slot_count
        } else {
            slot
        }
    }

    /// Distances to probe for a key: from 0 to `bound`, at most once around the table.
    #[inline]
    pub(super) fn distances(&self, bound: u64) -> std::ops::RangeInclusive<usize> {
        let last = self.layout.slot_count - 1;
        0..=usize::try_from(bound).map_or(last, |b| b.min(last))
    }

    /// Asks the CPU to start loading the key's home slot.
    #[inline(always)]
    pub(super) fn prefetch_home(&self, key: Located) {
        prefetch(&self.slot(key.home)[0]);
    }
}
