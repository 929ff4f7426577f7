//! A change of a limiter file's rule, by the process that makes it or one that takes it
//! over from a dead process (the parent module's docs, A change and A process killed
//! mid-change).

use super::{
    Rules, CURSOR, FROZEN, GIVE_UP, INSTANT, LOCK, PATIENCE, R_RULE, R_SERIAL, SERIAL, SIDE_WORDS,
    STALLED, TARGET,
};
use crate::config::Config;
use crate::decider::Decider;
use crate::error::{ChangeError, SharedError};
use crate::replaced::REPLACED;
use crate::shared::owner::{crash_point, is_alive, token};
use crate::sync::{fence, AtomicU64, Backoff, Ordering};
#[cfg(not(loom))]
use std::time::Duration;
use std::time::Instant;

/// What a change moves from the side of the rule in force into the next: a limiter's
/// state ([`OneState`]), or a keyed table's slots (`keyed/file.rs`).
pub(crate) trait Carry {
    /// Whether the change in flight from `serial` froze anything yet: a process that takes
    /// it over then finishes it, else drops it (no decision saw it).
    fn started(&self, rules: &Rules<'_>, serial: u64) -> bool;

    /// Freezes the side of `serial`, of rule `old`, and carries it over into the next
    /// side, of rule `new`, at `now` (steps 4 and 5 of a change, but the publication);
    /// from where a dead changer stopped, if one did. The change checked that `old` can
    /// carry its state over to `new`.
    ///
    /// # Errors
    /// `Busy` if what it freezes is held by a live process past a patience (the
    /// change stays in flight, for the next holder of the lock to finish).
    fn carry(
        &self,
        rules: &Rules<'_>,
        serial: u64,
        old: &Config,
        new: &Config,
        now: u64,
    ) -> Result<(), SharedError>;
}

/// A limiter's state: the first words of a side.
pub(crate) struct OneState;

impl Carry for OneState {
    fn started(&self, rules: &Rules<'_>, serial: u64) -> bool {
        // Acquire: pairs with the freeze's Release swap, which follows the frozen word.
        rules.side(serial, 1)[0].load(Ordering::Acquire) == REPLACED
    }

    fn carry(
        &self,
        rules: &Rules<'_>,
        serial: u64,
        old: &Config,
        new: &Config,
        now: u64,
    ) -> Result<(), SharedError> {
        let (old, new) = (&in_file(old)?, &in_file(new)?);
        let old_side = rules.side(serial, old.state_words());
        let new_side = rules.side(serial + 1, new.state_words());
        for word in rules.side(serial + 1, SIDE_WORDS) {
            // Relaxed: no decision reads these words until the serial's Release store.
            word.store(0, Ordering::Relaxed);
        }
        let first = rules.freeze(&old_side[0]);
        crash_point();
        old.carry_over(old_side, first, now, new, new_side);
        Ok(())
    }
}

impl<'a> Rules<'a> {
    /// Waits for the change in flight from `serial` to publish, finishing it if its
    /// changer died.
    ///
    /// # Errors
    /// `Busy` if a live changer has not published it after [`STALLED`] (a process
    /// stopped mid-change: SIGSTOP, a debugger); as [`finish`](Self::finish), for hostile
    /// bytes.
    #[cold]
    #[inline(never)]
    pub(crate) fn wait_for_change(
        &self,
        serial: u64,
        carry: &impl Carry,
    ) -> Result<(), SharedError> {
        let started = Instant::now();
        let mut backoff = Backoff::default();
        while self.serial() == serial {
            if started.elapsed() >= PATIENCE {
                // Relaxed: a token, which names a process or not.
                let holder = self.words[LOCK].load(Ordering::Relaxed);
                if let Some(settled) = self.take_over(holder, carry) {
                    return settled.map(drop);
                }
                if started.elapsed() > STALLED {
                    return Err(SharedError::Busy);
                }
                #[cfg(not(loom))]
                std::thread::sleep(Duration::from_micros(100));
            }
            backoff.snooze();
        }
        Ok(())
    }

    /// Settles a change left in flight by a process that died, or that gave it up (an
    /// `EBUSY` of [`Carry::carry`]): finishes it if it froze anything, else drops it.
    /// For an opener, so that the file it attaches to holds one rule in force. A change
    /// whose live changer holds the lock is its changer's.
    ///
    /// # Errors
    /// As [`Carry::carry`] and [`finish`](Self::finish).
    pub(crate) fn settle(&self, carry: &impl Carry) -> Result<(), SharedError> {
        // Acquire: pairs with the Release store of the change in flight.
        if self.words[TARGET].load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        // Relaxed: a token, which names a process or not; the CAS in `try_lock` decides.
        let holder = self.words[LOCK].load(Ordering::Relaxed);
        self.take_over(holder, carry)
            .map_or(Ok(()), |settled| settled.map(drop))
    }

    /// Replaces the rule in force by `config` at `now`, in the file (module docs), moving
    /// the state by `carry`, and returns the serial it made.
    ///
    /// # Errors
    /// As [`Decider::check_change`]; [`SharedError::Busy`] if another process holds the lock or a
    /// pinned decision past the patience given; [`SharedError::Incompatible`] if the file's
    /// records hold no rule (bytes another writer put there). Nothing changes then; but
    /// for an `EBUSY` of [`Carry::carry`], after which the change stays in flight and the
    /// next process that needs it finishes it.
    pub(crate) fn change(
        &self,
        config: &Config,
        decider: &Decider,
        now: u64,
        carry: &impl Carry,
    ) -> Result<u64, ChangeError> {
        let _lock = self.lock(carry)?;
        let serial = self.serial();
        let old = self.rule(serial).ok_or(SharedError::Incompatible)?;
        in_file(&old)?.check_change(decider)?;
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
        // Relaxed: as the instant.
        self.words[CURSOR].store(0, Ordering::Relaxed);
        // Release: a process that takes this change over reads the record and instant.
        self.words[TARGET].store(target, Ordering::Release);
        crash_point();
        self.make(serial, &old, config, now, carry)?;
        Ok(target)
    }

    /// Steps 4 to 6 of a change from `serial`'s rule `old` to `new` at `now` (module
    /// docs), by the change or by the process that took it over.
    fn make(
        &self,
        serial: u64,
        old: &Config,
        new: &Config,
        now: u64,
        carry: &impl Carry,
    ) -> Result<(), SharedError> {
        let (old_decider, new_decider) = (in_file(old)?, in_file(new)?);
        // Checked by the change that recorded `new`; again for one taken over, whose
        // record may hold bytes another writer put there.
        (old_decider.check_change(&new_decider)).map_err(|_| SharedError::Incompatible)?;
        carry.carry(self, serial, old, new, now)?;
        // Release: publishes the new side's words with the serial.
        self.words[SERIAL].store(serial + 1, Ordering::Release);
        crash_point();
        // Release: a decision that reads it cleared (`frozen`) reads the serial stored above.
        self.words[TARGET].store(0, Ordering::Release);
        Ok(())
    }

    /// Swaps `first` to the marker and returns the value it held, first written to the
    /// frozen word; if it holds the marker already (a change taken over), the frozen word.
    pub(crate) fn freeze(&self, first: &AtomicU64) -> u64 {
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

    /// The frozen word: what the change in flight swapped a marker for, written before
    /// the swap, for a process that takes the change over.
    pub(crate) fn frozen(&self) -> &'a AtomicU64 {
        &self.words[FROZEN]
    }

    /// A table's sweep cursor ([`CURSOR`]).
    pub(crate) fn cursor(&self) -> &'a AtomicU64 {
        &self.words[CURSOR]
    }

    /// Settles a change a dead process left in flight, holding the lock: finishes it if
    /// it froze the old words (decisions wait for it), else drops it (no decision saw it).
    fn finish(&self, carry: &impl Carry) -> Result<(), SharedError> {
        // Acquire: pairs with the Release store of the change in flight.
        let target = self.words[TARGET].load(Ordering::Acquire);
        let serial = self.serial();
        if target != 0 && target == serial.wrapping_add(1) {
            let (Some(old), Some(new)) = (self.rule(serial), self.rule(target)) else {
                return Err(SharedError::Incompatible);
            };
            if carry.started(self, serial) {
                // Relaxed: published with the change in flight.
                let now = self.words[INSTANT].load(Ordering::Relaxed);
                return self.make(serial, &old, &new, now, carry);
            }
        }
        // Relaxed: as in `make`.
        self.words[TARGET].store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Takes the changes' lock, finishing the change of a dead holder first.
    fn lock(&self, carry: &impl Carry) -> Result<Lock<'a>, SharedError> {
        let started = Instant::now();
        let mut backoff = Backoff::default();
        loop {
            // Relaxed: the CAS in `try_lock` decides.
            let holder = self.words[LOCK].load(Ordering::Relaxed);
            // A holder is asked whether it lives only once it kept the lock a while.
            if holder == 0 || started.elapsed() >= PATIENCE {
                if let Some(taken) = self.take_over(holder, carry) {
                    return taken;
                }
            }
            if started.elapsed() > GIVE_UP {
                return Err(SharedError::Busy);
            }
            backoff.snooze();
            #[cfg(not(loom))]
            if started.elapsed() > PATIENCE {
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }

    /// Takes the lock from `holder` if it is free (0) or names a dead process, and settles
    /// what a dead holder left in flight ([`finish`](Self::finish)): the lock, held; `None`
    /// if `holder` lives, or another process took the lock first.
    fn take_over(&self, holder: u64, carry: &impl Carry) -> Option<Result<Lock<'a>, SharedError>> {
        if holder != 0 && is_alive(holder) {
            return None;
        }
        let lock = self.try_lock(holder)?;
        Some(self.finish(carry).map(|()| lock))
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

/// A rule as a record's words.
fn encode(config: &Config) -> [u64; 4] {
    [
        config.algorithm as u64,
        config.limit,
        config.period_ns,
        config.burst,
    ]
}

/// The decider of a rule the file holds: bytes another writer put there may be no rule.
pub(crate) fn in_file(config: &Config) -> Result<Decider, SharedError> {
    Decider::new(config).map_err(|_| SharedError::Incompatible)
}
