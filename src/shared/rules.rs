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
use crate::config::Config;
use crate::decider::Decider;
use crate::error::Error;
use crate::keyed::owner::{crash_point, is_alive, token};
use crate::state::REPLACED;
use crate::sync::{fence, AtomicU64, Backoff, Ordering};
use std::time::{Duration, Instant};

/// Words of the block before the registry.
const BLOCK_WORDS: usize = 32;
/// Block words.
const SERIAL: usize = 0;
const EPOCH: usize = 1;
const LOCK: usize = 2;
const TARGET: usize = 8;
const INSTANT: usize = 9;
const FROZEN: usize = 10;
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
    sides_start() + state_words.max(SIDE_WORDS) + 2 * SIDE_WORDS
}

fn sides_start() -> usize {
    BLOCK_WORDS + ENTRIES * ENTRY_WORDS
}

/// Whether a reset for a new boot keeps word `index` of a limiter file's state, holding
/// `value`: the serial and the records (the rule in force stays in force), and side A's
/// first word if a change froze it (it must never be decided on again). The sides, the
/// registry (every process of the old boot is gone), the lock and the change in flight
/// start anew: a change cut short by the reboot is not made.
#[cfg(not(loom))]
pub(crate) fn kept(index: usize, value: u64) -> bool {
    index == SERIAL
        || (RECORDS..RECORDS + 2 * RECORD_STRIDE).contains(&index)
        || (index == sides_start() && value == REPLACED)
}

/// Where the state of the rule of `serial` starts, for a first rule of `state_words`.
fn side_start(serial: u64, state_words: usize) -> usize {
    match serial {
        0 => sides_start(),
        odd if odd % 2 == 1 => sides_start() + state_words.max(SIDE_WORDS),
        _ => sides_start() + state_words.max(SIDE_WORDS) + SIDE_WORDS,
    }
}

/// A limiter file's rules: its words from the block on, and the rule it was created with
/// (the header's, serial 0).
pub(crate) struct Rules<'a> {
    pub(crate) words: &'a [AtomicU64],
    pub(crate) first: &'a Config,
    /// The first rule's state words (side A's).
    pub(crate) first_words: usize,
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
    /// `Io(EUSERS)` if the registry has no entry for this process.
    pub(crate) fn pin(&self, entry: &Entry) -> Result<Pinned<'a>, Error> {
        self.pins().pin(entry)
    }

    /// The serial of the rule in force. Acquire: pairs with the Release store that
    /// published it, so its side's words are read as its change wrote them.
    pub(crate) fn serial(&self) -> u64 {
        self.words[SERIAL].load(Ordering::Acquire)
    }

    /// The state words of the rule of `serial`.
    pub(crate) fn side(&self, serial: u64, state_words: usize) -> &'a [AtomicU64] {
        &self.words[side_start(serial, self.first_words)..][..state_words]
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
        // Acquire, the fence: the decision read the marker with a Relaxed load; this
        // pairs it with the freeze's Release swap, so the change in flight, recorded
        // before the swap, is read here.
        fence(Ordering::Acquire);
        // Acquire: pairs with the Release store that clears it once the change is
        // published, so a cleared record is read with the serial it published.
        let target = self.words[TARGET].load(Ordering::Acquire);
        target != serial.wrapping_add(1) && self.serial() == serial
    }

    /// Waits for the change in flight from `serial` to publish, finishing it if its
    /// changer died.
    ///
    /// # Errors
    /// `Io(EBUSY)` if a live changer has not published it after [`STALLED`] (a process
    /// stopped mid-change: SIGSTOP, a debugger); as [`finish`](Self::finish), for hostile
    /// bytes.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait_for_change(&self, serial: u64) -> Result<(), Error> {
        let started = Instant::now();
        let mut backoff = Backoff::default();
        while self.serial() == serial {
            if started.elapsed() >= PATIENCE {
                // Relaxed: a token, which names a process or not.
                let holder = self.words[LOCK].load(Ordering::Relaxed);
                if holder == 0 || !is_alive(holder) {
                    if let Some(_lock) = self.try_lock(holder) {
                        return self.finish();
                    }
                } else if started.elapsed() > STALLED {
                    return Err(Error::Io(libc::EBUSY));
                }
                #[cfg(not(loom))]
                std::thread::sleep(Duration::from_micros(100));
            }
            backoff.snooze();
        }
        Ok(())
    }

    /// Replaces the rule in force by `config` at `now`, in the file (module docs), and
    /// returns the serial it made.
    ///
    /// # Errors
    /// As [`Decider::check_change`]; `Io(EBUSY)` if another process holds the lock or a
    /// pinned decision past the patience given; [`Error::Incompatible`] if the file's
    /// records hold no rule (bytes another writer put there). Nothing changes then.
    pub(crate) fn change(
        &self,
        config: &Config,
        decider: &Decider,
        now: u64,
    ) -> Result<u64, Error> {
        let _lock = self.lock()?;
        let serial = self.serial();
        let old = self.rule(serial).ok_or(Error::Incompatible)?;
        Decider::new(&old)?.check_change(decider, true)?;
        let target = serial + 1;
        if target >= 3 {
            self.pins().wait()?;
        }
        let record = self.record(target);
        // Relaxed, the rule's words: published by the Release store of the record's
        // serial, and of the change in flight's below. The 0 first marks the record as
        // being written, for a reader of the rule it held.
        record[R_SERIAL].store(0, Ordering::Relaxed);
        fence(Ordering::Release);
        for (word, value) in record[R_RULE..].iter().zip(encode(config)) {
            word.store(value, Ordering::Relaxed);
        }
        record[R_SERIAL].store(target, Ordering::Release);
        self.words[INSTANT].store(now, Ordering::Relaxed);
        // Release: a process that takes this change over reads the record and instant.
        self.words[TARGET].store(target, Ordering::Release);
        crash_point();
        self.make(serial, &old, config, now)?;
        Ok(target)
    }

    /// Steps 4 to 6 of a change from `serial`'s rule `old` to `new` at `now` (module
    /// docs), by the change or by the process that took it over.
    fn make(&self, serial: u64, old: &Config, new: &Config, now: u64) -> Result<(), Error> {
        let (old_decider, new_decider) = (Decider::new(old)?, Decider::new(new)?);
        // Checked by the change that recorded `new`; again for one taken over, whose
        // record may hold bytes another writer put there.
        old_decider.check_change(&new_decider, true)?;
        let old_side = self.side(serial, old_decider.state_words());
        let new_side = self.side(serial + 1, new_decider.state_words());
        for word in &self.words[side_start(serial + 1, self.first_words)..][..SIDE_WORDS] {
            // Relaxed: no decision reads these words until the serial's Release store.
            word.store(0, Ordering::Relaxed);
        }
        let first = self.freeze(&old_side[0]);
        crash_point();
        old_decider.carry_over(old_side, first, now, &new_decider, new_side);
        // Release: publishes the new side's words with the serial.
        self.words[SERIAL].store(serial + 1, Ordering::Release);
        crash_point();
        // Release: a decision that reads it cleared (`frozen`) reads the serial stored above.
        self.words[TARGET].store(0, Ordering::Release);
        Ok(())
    }

    /// Swaps `first` to the marker and returns the value it held, first written to the
    /// frozen word; if it holds the marker already (a change taken over), the frozen word.
    fn freeze(&self, first: &AtomicU64) -> u64 {
        // Acquire: pairs with the Release swap that installed the value, so the other
        // words it publishes (window records) are read as new as it.
        let mut held = first.load(Ordering::Acquire);
        loop {
            if held == REPLACED {
                // Relaxed: written by this lock's holder, or a dead one's before its swap,
                // which the Acquire load above read.
                return self.words[FROZEN].load(Ordering::Relaxed);
            }
            // Relaxed: ordered before the swap by its Release.
            self.words[FROZEN].store(held, Ordering::Relaxed);
            match first.compare_exchange(held, REPLACED, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return held,
                Err(actual) => held = actual,
            }
        }
    }

    /// Settles a change a dead process left in flight, holding the lock: finishes it if
    /// it froze the old words (decisions wait for it), else drops it (no decision saw it).
    fn finish(&self) -> Result<(), Error> {
        // Acquire: pairs with the Release store of the change in flight.
        let target = self.words[TARGET].load(Ordering::Acquire);
        let serial = self.serial();
        if target != 0 && target == serial.wrapping_add(1) {
            let (Some(old), Some(new)) = (self.rule(serial), self.rule(target)) else {
                return Err(Error::Incompatible);
            };
            // Acquire: pairs with the freeze's Release swap, which follows the frozen word.
            if self.side(serial, 1)[0].load(Ordering::Acquire) == REPLACED {
                // Relaxed: published with the change in flight.
                let now = self.words[INSTANT].load(Ordering::Relaxed);
                return self.make(serial, &old, &new, now);
            }
        }
        // Relaxed: as in `make`.
        self.words[TARGET].store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Takes the changes' lock, finishing the change of a dead holder first.
    fn lock(&self) -> Result<Lock<'a>, Error> {
        let started = Instant::now();
        let mut backoff = Backoff::default();
        loop {
            // Relaxed: the CAS in `try_lock` decides.
            let holder = self.words[LOCK].load(Ordering::Relaxed);
            let dead = holder != 0 && started.elapsed() >= PATIENCE && !is_alive(holder);
            if holder == 0 || dead {
                if let Some(lock) = self.try_lock(holder) {
                    self.finish()?;
                    return Ok(lock);
                }
                continue;
            }
            if started.elapsed() > GIVE_UP {
                return Err(Error::Io(libc::EBUSY));
            }
            backoff.snooze();
            #[cfg(not(loom))]
            if started.elapsed() > PATIENCE {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }

    /// Takes the lock from `holder` (0: free, or a dead process's token).
    fn try_lock(&self, holder: u64) -> Option<Lock<'a>> {
        // Acquire: pairs with the Release that freed the lock (or, for a dead holder, with
        // the Release stores of its change), so this holder reads the file as it was left.
        self.words[LOCK]
            .compare_exchange(holder, token(), Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Lock {
                word: &self.words[LOCK],
            })
    }
}

/// The changes' lock, freed when dropped.
struct Lock<'a> {
    word: &'a AtomicU64,
}

impl Drop for Lock<'_> {
    fn drop(&mut self) {
        // Release: the next holder reads what this one wrote.
        self.word.store(0, Ordering::Release);
    }
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

/// A rule as a record's words.
fn encode(config: &Config) -> [u64; 4] {
    [
        config.algorithm as u64,
        config.limit,
        config.period_ns,
        config.burst,
    ]
}
