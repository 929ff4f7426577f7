//! A keyed table whose rule lives in its file (docs/shared.md, changing the rule): the
//! file holds the rule block and pins' registry a limiter file holds (`shared/rules.rs`),
//! then three whole regions, **A** (the rule the file was created with), **B** (odd
//! serials) and **C** (even serials from 2).
//!
//! # A change in a file
//! Made once, by one process, holding the file's lock, as a limiter's is; what differs is
//! step 4, which here **sweeps** the region in force into the next one slot by slot
//! ([`Slots`]), before the serial publishes the new region:
//! 1. Unless it resumes a dead changer's sweep, it sets every word of the new region to
//!    a new table's value (the region held the rule two serials back).
//! 2. For each slot, in order: it records the slot in the **cursor**, waits until no
//!    insert holds the slot (a dead inserter's claim is put back, as any waiter does:
//!    `recover.rs`), writes the slot's first word to the frozen word and swaps it to
//!    [`MOVED`] from that value. Crash point. Every decision commits by a CAS of that
//!    word, so each one on the key committed before the swap (it is in the frozen value)
//!    or fails against the marker and waits for the change to publish.
//! 3. It writes the key's state, carried over at the change's instant, into the same slot
//!    of the new region, as an in-process sweep does (`change.rs`).
//!
//! A process that takes a dead changer's sweep over resumes at the cursor's slot: if that
//! slot holds the marker, its value is the frozen word, and the new slot is written again
//! from it (nobody else writes a region before its serial is published, so writing it
//! twice writes the same words). A key is thus decided under the old rule up to its swap,
//! under the new one after the publication, and never under both.
//!
//! # Deciding
//! Region A is decided on with nothing to pin, as in a table whose rule never changed:
//! it is never reused, and its marker sends a decision to the rule in force. Any other
//! region is decided on pinned in the file (`shared/pins.rs`) and adopted here first, as
//! a version of this process (`regions.rs`, Views): the change that reuses its words two
//! serials later waits for every such decision.

use super::layout::Layout;
#[cfg(not(loom))]
use super::layout::TABLE_FULL;
use super::markers::MOVED;
use super::recover;
use super::region::{Memory, Region};
use super::KeyedLimiter;
use crate::config::Config;
use crate::decider::Decider;
use crate::error::{ConfigError, SharedError};
use crate::shared::in_file;
#[cfg(not(loom))]
use crate::shared::kept_in_block;
use crate::shared::owner::crash_point;
use crate::shared::{sides_start, Adoption, Attached, Carry, Rules, Sides};
use crate::sync::{AtomicU64, Ordering};
use crate::versions::Versions;
use std::ptr::NonNull;

/// Each region starts on a multiple of this many words: 128 bytes, so no two regions
/// share a pair of cache lines.
const REGION_ALIGN: usize = 16;

/// Where a keyed table's words lie in a file: the block, the registry and three regions
/// of `layout`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileTable {
    pub(super) layout: Layout,
}

impl FileTable {
    /// The file words of a table of `capacity` keys under `decider`, with a claim
    /// registry in each region.
    ///
    /// # Errors
    /// As [`KeyedLimiter::new`] for the capacity.
    pub(crate) fn of(decider: &Decider, capacity: u64) -> Result<Self, ConfigError> {
        let layout = Layout::new(capacity, decider.state_words(), recover::CLAIMS)?;
        // Three regions and the block must fit a mapping.
        layout
            .words()
            .checked_next_multiple_of(REGION_ALIGN)
            .and_then(|region| region.checked_mul(3))
            .and_then(|regions| regions.checked_add(sides_start()))
            .filter(|&words| words <= isize::MAX as usize / 8)
            .ok_or_else(|| layout.too_big())?;
        Ok(Self { layout })
    }

    /// Bytes one key takes in each of the table's regions (for a policy file's size error,
    /// which loom's models never build).
    #[cfg(not(loom))]
    pub(crate) fn bytes_per_key(&self) -> usize {
        self.layout.bytes_per_key()
    }

    fn sides(&self) -> Sides {
        let region = self.layout.words().next_multiple_of(REGION_ALIGN);
        Sides {
            first: region,
            later: region,
        }
    }

    /// Words of the table in the file.
    pub(crate) fn words(&self) -> usize {
        self.sides().end()
    }

    /// Region A's word `index` of the table's words, if it is one.
    fn in_first(&self, index: usize) -> Option<usize> {
        index
            .checked_sub(sides_start())
            .filter(|&offset| offset < self.layout.words())
    }

    /// The value of the table's word `index` in a new file: region A a new table's, all
    /// else 0 (regions B and C are set as a new table's by the change that first uses
    /// each, so a file whose rule never changes never writes them).
    pub(crate) fn initial(&self, index: usize) -> u64 {
        self.in_first(index)
            .map_or(0, |offset| self.layout.initial(offset))
    }

    /// Whether a reset for a new boot leaves the table's word `index`, holding `value`, as
    /// it is: the rule in force (the serial and the records), the count of refusals, and
    /// region A's markers of a change (A must never be decided on again). The rest holds
    /// time, or processes of the old boot, and starts anew.
    #[cfg(not(loom))]
    pub(crate) fn kept(&self, index: usize, value: u64) -> bool {
        kept_in_block(index)
            || self
                .in_first(index)
                .is_some_and(|offset| offset == TABLE_FULL || value == MOVED)
    }
}

/// A table that follows the rule of its file.
#[derive(Debug)]
pub(crate) struct TableFile {
    pub(super) attached: Attached,
    pub(super) table: FileTable,
}

impl TableFile {
    pub(super) fn rules(&self) -> Rules<'_> {
        self.attached.rules(self.table.sides())
    }

    /// The region of the rule of `serial`, `config`, on its words in the file.
    ///
    /// # Errors
    /// [`SharedError::Incompatible`] if `config` cannot be a rule of this table (another
    /// algorithm than the file's first rule: bytes another writer put in a record).
    pub(super) fn region(&self, serial: u64, config: &Config) -> Result<Region, SharedError> {
        let decider = in_file(config)?;
        let layout = self.table.layout;
        let first = in_file(&self.attached.first)?;
        let carried = serial == 0 || first.check_change(&decider).is_ok();
        if !carried || decider.state_words() != first.state_words() {
            return Err(SharedError::Incompatible);
        }
        let words = NonNull::from(&self.rules().side(serial, layout.words())[0]);
        let memory = Memory::Shared {
            _mapping: self.attached.mapping(),
        };
        let mut region = Region::new(decider, config, layout, words, memory);
        region.serial = serial;
        region.in_file(NonNull::from(&self.rules().words[0]));
        Ok(region)
    }

    /// Makes the file's rule of `serial` the region in force in `regions`, unless this
    /// process has it or a later one: whether it was (or is) adopted; `false` if that
    /// rule's record was rewritten meanwhile for a later one (read the serial again).
    /// It waits for no decision, so a thread may adopt while it decides.
    ///
    /// # Errors
    /// [`SharedError::Incompatible`] if the file's rule in force is no rule of this table (bytes
    /// another writer put there).
    #[cold]
    pub(super) fn adopt(
        &self,
        regions: &Versions<Region>,
        serial: u64,
    ) -> Result<bool, SharedError> {
        let mut change = regions.adopting();
        let adopted = change.current().0.serial;
        let config = match self.rules().adoption(adopted, serial)? {
            Adoption::Has => return Ok(true),
            Adoption::Reread => return Ok(false),
            Adoption::Publish(config) => config,
        };
        let mut region = self.region(serial, &config)?;
        region.counting_in(regions.first());
        change.publish(region);
        Ok(true)
    }
}

/// A table's slots, as a change of its file's rule sweeps them (module docs).
pub(super) struct Slots<'a>(pub(super) &'a TableFile);

impl Carry for Slots<'_> {
    fn started(&self, rules: &Rules<'_>, _: u64) -> bool {
        // Relaxed: written by a dead changer, whose writes the takeover of its lock
        // ordered before this read.
        rules.cursor().load(Ordering::Relaxed) != 0
    }

    fn carry(
        &self,
        rules: &Rules<'_>,
        serial: u64,
        old: &Config,
        new: &Config,
        now: u64,
    ) -> Result<(), SharedError> {
        let (old, new) = (self.0.region(serial, old)?, self.0.region(serial + 1, new)?);
        let cursor = rules.cursor();
        // Relaxed: this lock holder's own, or a dead holder's (see `started`).
        let from = cursor.load(Ordering::Relaxed);
        if from == 0 {
            new.initialize();
        }
        let from = usize::try_from(from.saturating_sub(1)).unwrap_or(usize::MAX);
        for slot in from..old.layout.slot_count {
            // Relaxed: read by a process that takes this change over (see `started`).
            cursor.store(slot as u64 + 1, Ordering::Relaxed);
            let first = old.freeze(slot, rules.frozen())?;
            crash_point();
            new.move_in(&old, slot, first, now);
        }
        Ok(())
    }
}

impl Region {
    /// Sets every word to a new table's value, before a sweep writes the region.
    fn initialize(&self) {
        for (index, word) in self.words().iter().enumerate() {
            // Relaxed: no decision reads the region until its serial's Release store.
            word.store(self.layout.initial(index), Ordering::Relaxed);
        }
    }

    /// Swaps `slot`'s first word to [`MOVED`] once no claim holds it, first writing the
    /// value it held to `frozen`, and returns that value; if the slot holds the marker
    /// already (a sweep taken over at this slot), the frozen word.
    ///
    /// # Errors
    /// `Io(EBUSY)` if a live process holds the slot claimed past the waiters' patience (an
    /// insert stopped mid-way, or bytes forged to name a live process).
    fn freeze(&self, slot: usize, frozen: &AtomicU64) -> Result<u64, SharedError> {
        loop {
            let first = self.settled(slot).ok_or(SharedError::Busy)?;
            if first == MOVED {
                // Relaxed: written before the swap, by the dead changer whose lock this
                // process took over.
                return Ok(frozen.load(Ordering::Relaxed));
            }
            // Relaxed: ordered before the swap by its Release.
            frozen.store(first, Ordering::Relaxed);
            // AcqRel: Acquire as `move_out`'s (the state words are read as new as the
            // value); Release so that a decision that finds the marker reads the change
            // in flight, recorded before (`Rules::is_forged`).
            let swapped = self.first_word(slot).compare_exchange(
                first,
                MOVED,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            if swapped.is_ok() {
                return Ok(first);
            }
        }
    }
}

impl<S> KeyedLimiter<S> {
    /// Adopts the rule in force in the file, if this table follows one.
    ///
    /// # Errors
    /// As [`TableFile::adopt`].
    pub(super) fn follow(&self) -> Result<(), SharedError> {
        let Some(file) = &self.file else {
            return Ok(());
        };
        loop {
            let serial = file.rules().serial();
            let adopted = match self.regions.first_in_force() {
                Some(first) => first.serial,
                None => self.regions.pin().current().serial,
            };
            if adopted >= serial || file.adopt(&self.regions, serial)? {
                return Ok(());
            }
        }
    }
}
