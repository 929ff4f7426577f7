//! A change of a limiter file's rule, by the process that makes it or one that takes it
//! over from a dead process (the parent module's docs, A change and A process killed
//! mid-change).

use super::{
    side_start, Rules, FROZEN, GIVE_UP, INSTANT, LOCK, PATIENCE, R_RULE, R_SERIAL, SERIAL,
    SIDE_WORDS, STALLED, TARGET,
};
use crate::config::Config;
use crate::decider::Decider;
use crate::error::Error;
use crate::keyed::owner::{crash_point, is_alive, token};
use crate::state::REPLACED;
use crate::sync::{fence, AtomicU64, Backoff, Ordering};
#[cfg(not(loom))]
use std::time::Duration;
use std::time::Instant;

impl<'a> Rules<'a> {
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

/// A rule as a record's words.
fn encode(config: &Config) -> [u64; 4] {
    [
        config.algorithm as u64,
        config.limit,
        config.period_ns,
        config.burst,
    ]
}
