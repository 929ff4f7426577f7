//! A shared limiter's rule, kept in its file, and a **change** of it made once in the file
//! for every process attached (docs/shared.md, changing the rule).
//!
//! # The words
//! A limiter file's state starts with this module's block, then the pins' registry
//! (`pins.rs`), then three **sides** of state words:
//! - line 0: the **serial** of the rule in force (0: the rule the file was created with,
//!   which its header names), the pins' epoch, and the changes' lock (the token of the
//!   process making one, 0 for none);
//! - line 1: the change in flight: the serial it makes (0: none), its instant, and the
//!   first word it froze;
//! - lines 2 and 3: the **records** of the rules of odd and of even serials
//!   (`[serial, algorithm, limit, period, burst]`);
//! - side A holds the state of serial 0, side B of odd serials, side C of even ones from 2.
//!
//! A keyed table's file (`keyed/file.rs`) has the same block and registry, and its sides are
//! three whole table regions, which a change **sweeps** from one to the next slot by slot.
//!
//! # A decision
//! A process decides on side A as a file whose rule never changed does, with nothing to
//! pin, and the marker a change leaves there (never removed: side A is never used again)
//! sends it to the rule in force: pinned (`pins.rs`), it reads the serial, the record of
//! that serial's rule (checked whole against a change rewriting it, as a sequence lock),
//! and decides on that serial's side.
//!
//! # A change
//! Made by one process at a time, holding the lock:
//! 1. It checks the new rule can take the old one's state (`Decider::check_change`).
//! 2. From the third change on, the side it will use held the rule two serials back: it
//!    waits, through the pins, until no decision that could have read that rule as the
//!    one in force is still in flight, so none lands on the side once it is reused.
//! 3. It writes the new rule's record, its instant, and then the serial it makes (the
//!    change in flight). Crash point.
//! 4. It zeroes the new side, then **freezes** the old side's first word: writes the value
//!    it holds as the frozen word, then swaps it to the marker, from that value. Every
//!    decision commits by a swap of that word from the value it decided on, so each one
//!    committed before (it is in the frozen value) or fails against the marker and
//!    commits nothing. Crash point.
//! 5. It carries the state over into the new side (`algorithm/carry.rs`), at the change's
//!    instant, then publishes the serial (Release). Crash point.
//! 6. It clears the change in flight and the lock.
//!
//! # A process killed mid-change
//! Its lock names a dead process. Whoever needs the lock next (a change, or a decision
//! that waited for the change in flight past a patience) takes it over. A change that
//! had not frozen the old words yet is dropped: no decision saw it, and the old rule stays
//! in force. One that had is finished: the steps from 4 on write what they would have
//! written again, from the recorded instant and the recorded frozen value (written before
//! the swap). So the state is under one rule, the carried-over state is the one the dead
//! change would have made, and nothing is lost or counted twice.

use super::header::rule_of;
use super::pins::{Entry, Pinned, Pins, ENTRIES, ENTRY_WORDS};
use super::Mapping;
use crate::config::Config;
use crate::error::SharedError;
#[cfg(not(loom))]
use crate::replaced::REPLACED;
use crate::sync::{fence, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod change;

pub(crate) use self::change::{in_file, Carry, OneState};

/// Words of the block before the registry.
const BLOCK_WORDS: usize = 32;
/// Block words.
const SERIAL: usize = 0;
const EPOCH: usize = 1;
const LOCK: usize = 2;
const TARGET: usize = 8;
const INSTANT: usize = 9;
const FROZEN: usize = 10;
/// A table's sweep: one more than the slot it is moving (0: none moved yet).
pub(crate) const CURSOR: usize = 11;
/// The record of odd serials' rule; the even ones' follows a line later.
const RECORDS: usize = 16;
const RECORD_STRIDE: usize = 8;
/// Record words: the serial (0 while being written), then the rule.
const R_SERIAL: usize = 0;
const R_RULE: usize = 1;

/// Words of the block up to the end of its last record.
pub(crate) const RECORDS_END: usize = RECORDS + 2 * RECORD_STRIDE;

/// Words of side B and of side C: the most any algorithm whose rule can change uses.
pub(crate) const SIDE_WORDS: usize = 4;

/// How long a decision waits for a change in flight before it asks whether the changer
/// lives, and how long a change waits for another's lock before it does.
#[cfg(not(any(loom, fuzzing)))]
const PATIENCE: Duration = Duration::from_millis(10);
#[cfg(any(loom, fuzzing))]
const PATIENCE: Duration = Duration::ZERO;
/// How long a decision waits for a live changer's change in flight before it gives up
/// (`EBUSY`): a change takes microseconds, so only a changer stopped mid-change (SIGSTOP,
/// a debugger) makes decisions wait that long. Under loom, never.
#[cfg(not(any(loom, fuzzing)))]
const STALLED: Duration = Duration::from_secs(1);
#[cfg(all(fuzzing, not(loom)))]
const STALLED: Duration = Duration::from_millis(1);
#[cfg(loom)]
const STALLED: Duration = Duration::MAX;

/// How long a change waits for a live changer's lock before it gives up (`EBUSY`).
/// Under loom, never: a live thread always ends its change, and the models' time is not
/// the clock's.
#[cfg(not(any(loom, fuzzing)))]
const GIVE_UP: Duration = Duration::from_secs(10);
#[cfg(all(fuzzing, not(loom)))]
const GIVE_UP: Duration = Duration::from_millis(1);
#[cfg(loom)]
const GIVE_UP: Duration = Duration::MAX;

/// Words of a limiter file's state for a rule of `state_words`: the block, the registry
/// and the three sides.
pub(crate) fn file_words(state_words: usize) -> usize {
    Sides::of_state(state_words).end()
}

/// Where the sides start: after the block and the registry.
pub(crate) fn sides_start() -> usize {
    BLOCK_WORDS + ENTRIES * ENTRY_WORDS
}

/// The sizes of a file's sides, in words: side A's, and side B's and C's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sides {
    pub(crate) first: usize,
    pub(crate) later: usize,
}

impl Sides {
    /// A limiter's sides for a first rule of `state_words`: a later rule's state fits
    /// [`SIDE_WORDS`].
    pub(crate) fn of_state(state_words: usize) -> Self {
        Self {
            first: state_words.max(SIDE_WORDS),
            later: SIDE_WORDS,
        }
    }

    /// Where the state of the rule of `serial` starts.
    fn start(&self, serial: u64) -> usize {
        match serial {
            0 => sides_start(),
            odd if odd % 2 == 1 => sides_start() + self.first,
            _ => sides_start() + self.first + self.later,
        }
    }

    /// Words of the block, the registry and the sides.
    pub(crate) fn end(&self) -> usize {
        sides_start() + self.first + 2 * self.later
    }
}

/// Whether a reset for a new boot keeps word `index` of a limiter file's state, holding
/// `value`: the serial and the records (the rule in force stays in force), and side A's
/// first word if a change froze it (it must never be decided on again). The sides, the
/// registry (every process of the old boot is gone), the lock and the change in flight
/// start anew: a change cut short by the reboot is not made.
#[cfg(not(loom))]
pub(crate) fn kept(index: usize, value: u64) -> bool {
    kept_in_block(index) || (index == sides_start() && value == REPLACED)
}

/// Whether a reset for a new boot keeps word `index` of a file's block: the serial and the
/// records (the rule in force stays in force).
#[cfg(not(loom))]
pub(crate) fn kept_in_block(index: usize) -> bool {
    index == SERIAL || (RECORDS..RECORDS + 2 * RECORD_STRIDE).contains(&index)
}

/// A file's rules: its words from the block on, the rule it was created with (the
/// header's, serial 0), and its sides' sizes.
pub(crate) struct Rules<'a> {
    pub(crate) words: &'a [AtomicU64],
    pub(crate) first: &'a Config,
    pub(crate) sides: Sides,
}

/// A handle's hold on a file whose rules can change (a limiter's or a keyed table's,
/// alone or in a keyed policy): the mapping, where its rule block starts, the rule the
/// file was created with (serial 0), and this process's entry in its pins registry.
#[derive(Debug)]
pub(crate) struct Attached {
    pub(crate) mapping: Arc<Mapping>,
    /// The state word of the mapping where the rule block starts.
    pub(crate) start: usize,
    pub(crate) first: Config,
    pub(crate) entry: Entry,
}

impl Attached {
    pub(crate) fn new(mapping: Arc<Mapping>, start: usize, first: Config) -> Self {
        Self {
            mapping,
            start,
            first,
            entry: Entry::default(),
        }
    }

    /// The file's rules, its sides of `sides`.
    pub(crate) fn rules(&self, sides: Sides) -> Rules<'_> {
        Rules {
            words: &self.mapping.state(self.start + sides.end())[self.start..],
            first: &self.first,
            sides,
        }
    }

    /// Whether the file's rule ever changed: its serial in force is not 0. Acquire: as
    /// [`Rules::serial`].
    #[inline(always)]
    pub(crate) fn changed(&self) -> bool {
        self.mapping.state(self.start + 1)[self.start].load(Ordering::Acquire) != 0
    }

    /// Memory that keeps the mapping, for a version on its words.
    pub(crate) fn mapping(&self) -> Arc<Mapping> {
        Arc::clone(&self.mapping)
    }
}

impl<'a> Rules<'a> {
    fn pins(&self) -> Pins<'a> {
        Pins {
            epoch: &self.words[EPOCH],
            registry: &self.words[BLOCK_WORDS..BLOCK_WORDS + ENTRIES * ENTRY_WORDS],
        }
    }

    /// Pins this thread (`pins.rs`).
    ///
    /// # Errors
    /// `RegistryFull` if the registry has no entry for this process.
    pub(crate) fn pin(&self, entry: &Entry) -> Result<Pinned<'a>, SharedError> {
        self.pins().pin(entry)
    }

    /// The serial of the rule in force. Acquire: pairs with the Release store that
    /// published it, so its side's words are read as its change wrote them.
    pub(crate) fn serial(&self) -> u64 {
        self.words[SERIAL].load(Ordering::Acquire)
    }

    /// The state words of the rule of `serial`.
    pub(crate) fn side(&self, serial: u64, state_words: usize) -> &'a [AtomicU64] {
        &self.words[self.sides.start(serial)..][..state_words]
    }

    /// The rule of `serial`, read from its record: `None` if the record is rewritten for a
    /// later serial (the caller reads the serial in force again), or holds no rule.
    pub(crate) fn rule(&self, serial: u64) -> Option<Config> {
        if serial == 0 {
            return Some(*self.first);
        }
        let record = self.record(serial);
        // Acquire: pairs with the Release store of the record's serial, which follows the
        // rule's words.
        let before = record[R_SERIAL].load(Ordering::Acquire);
        // Relaxed: checked by the serial read again after the fence.
        let words: [u64; 4] = std::array::from_fn(|i| record[R_RULE + i].load(Ordering::Relaxed));
        // Acquire: orders the reads of the rule before the serial's second read, as a
        // sequence lock's reader does.
        fence(Ordering::Acquire);
        let after = record[R_SERIAL].load(Ordering::Relaxed);
        (before == serial && after == serial).then_some(())?;
        // A later rule's state fits its side; words that say otherwise are no rule.
        rule_of(words)
            .filter(|(_, decider)| decider.state_words() <= SIDE_WORDS)
            .map(|(config, _)| config)
    }

    fn record(&self, serial: u64) -> &'a [AtomicU64] {
        &self.words[record_start(serial)..][..RECORD_STRIDE]
    }

    /// Whether the marker a decision found in the first word of `serial`'s side is bytes
    /// another writer put there, to be read as a state, rather than a change's freeze,
    /// to be waited for ([`wait_for_change`](Self::wait_for_change)).
    #[cold]
    pub(crate) fn is_forged(&self, serial: u64) -> bool {
        is_forged(self.words, serial)
    }
}

/// What a process that decides under the file's rule of serial `adopted` does to adopt
/// the file's rule of serial `serial` ([`Rules::adoption`]).
pub(crate) enum Adoption {
    /// Nothing: it has that rule, or a later one.
    Has,
    /// Read the file's serial again: the rule's record was rewritten for a later one.
    Reread,
    /// Publish the rule of `serial`, this one.
    Publish(Config),
}

impl Rules<'_> {
    /// How a process that decides under the rule of serial `adopted` adopts the rule of
    /// `serial`, which it read as the file's in force.
    ///
    /// # Errors
    /// [`SharedError::Incompatible`] if the file's serial went back, or its rule in force is no
    /// rule (bytes another writer put there).
    pub(crate) fn adoption(&self, adopted: u64, serial: u64) -> Result<Adoption, SharedError> {
        if adopted == serial {
            return Ok(Adoption::Has);
        }
        if adopted > serial {
            // Another thread adopted a later rule: read the serial again, unless the
            // file's serial went back.
            return match self.serial() < adopted {
                true => Err(SharedError::Incompatible),
                false => Ok(Adoption::Reread),
            };
        }
        match self.rule(serial) {
            Some(config) => Ok(Adoption::Publish(config)),
            None if self.serial() == serial => Err(SharedError::Incompatible),
            None => Ok(Adoption::Reread),
        }
    }
}

/// [`Rules::is_forged`] on a file's `block` of words.
#[cold]
pub(crate) fn is_forged(block: &[AtomicU64], serial: u64) -> bool {
    // Acquire, the fence: the decision read the marker with a Relaxed load; this pairs it
    // with the freeze's Release swap, so the change in flight, recorded before the swap,
    // is read here.
    fence(Ordering::Acquire);
    // Acquire: pairs with the Release store that clears it once the change is published,
    // so a cleared record is read with the serial it published.
    let target = block[TARGET].load(Ordering::Acquire);
    // Acquire: as `Rules::serial`.
    target != serial.wrapping_add(1) && block[SERIAL].load(Ordering::Acquire) == serial
}

/// The rule in force and its serial, from a copy of a limiter file's first state words
/// (`describe.rs`), given the header's rule: `None` if they hold none.
pub(crate) fn rule_in_force(words: &[u64], first: Option<Config>) -> Option<(Config, u64)> {
    let serial = *words.get(SERIAL)?;
    if serial == 0 {
        return first.map(|config| (config, 0));
    }
    let record = words.get(record_start(serial)..)?;
    let rule: [u64; 4] = record.get(R_RULE..R_RULE + 4)?.try_into().ok()?;
    (record[R_SERIAL] == serial).then_some(())?;
    rule_of(rule).map(|(config, _)| (config, serial))
}

/// Where the record of the rule of `serial` (from 1) starts: odd serials' first.
fn record_start(serial: u64) -> usize {
    RECORDS + (serial % 2 == 0) as usize * RECORD_STRIDE
}
