//! Which processes may still be deciding on a file's words: the **pins** that let a change
//! of rule in a file (`rules.rs`) reuse words a rule before last decided on, and no
//! decision of that rule land on them afterwards (docs/shared.md, changing the rule).
//!
//! The scheme is `versions.rs`' two counters and an epoch, across processes: each process
//! counts its threads' pins in an **entry** of the file's registry, a line of its own
//! (`[token, pins in even epochs, pins in odd epochs]`), so that a process killed while
//! pinned leaves counts that a changer can tell are dead (its token names no live
//! process) instead of counts that block every change for good.
//!
//! - A decision pins (`versions::count_in`: count in its epoch's parity, a `SeqCst`
//!   fence, check the epoch did not move) before it reads which rule is in force, and
//!   unpins when it has decided.
//! - A change that will reuse words first moves the epoch on and then waits until no live
//!   entry counts a pin in the epoch before (the same store-then-load pair, fenced on both
//!   sides): every decision that could have read the old rule as the one in force has then
//!   ended, and every later one reads the rule in force after the move.
//!
//! A process takes an entry the first time it pins (a file whose rule never changed is
//! decided on without pins, and takes none) and keeps it while it lives; an entry whose
//! process died is taken over by the next process to need one. A forked child is another
//! process: it takes an entry of its own.

use crate::error::Error;
use crate::shared::owner::{crash_point, is_alive, token};
use crate::sync::{fence, AtomicU64, Backoff, Ordering};
use crate::versions::count_in;
use std::time::{Duration, Instant};

/// Entries in a file's registry: how many processes can decide on a file whose rule
/// changed at once. Under loom, as many as a model's threads.
pub(crate) const ENTRIES: usize = if cfg!(loom) { 3 } else { 512 };
/// Words per entry: a cache line, so no two processes write one line.
pub(crate) const ENTRY_WORDS: usize = 8;
/// Entry words.
const TOKEN: usize = 0;
const PINNED: usize = 1;

/// How long a change waits for a live process's pinned decision before it gives up
/// (`EBUSY`): a decision takes nanoseconds, so only a process stopped mid-decision
/// (SIGSTOP, a debugger) or bytes another writer forged keep a count that long.
/// Under loom, never: a live thread always unpins, and the models' time is not the
/// clock's.
#[cfg(not(any(loom, fuzzing)))]
const GIVE_UP: Duration = Duration::from_secs(5);
#[cfg(all(fuzzing, not(loom)))]
const GIVE_UP: Duration = Duration::from_millis(1);
#[cfg(loom)]
const GIVE_UP: Duration = Duration::MAX;

/// A file's epoch and registry.
pub(crate) struct Pins<'a> {
    pub(crate) epoch: &'a AtomicU64,
    /// `ENTRIES × ENTRY_WORDS` words.
    pub(crate) registry: &'a [AtomicU64],
}

/// This process's entry in a file's registry, as it remembers it: the entry's index and
/// the process it was taken for ([`process`]), 0 for none yet.
#[derive(Debug, Default)]
pub(crate) struct Entry(AtomicU64);

/// A pinned decision's count, given back when dropped.
pub(crate) struct Pinned<'a> {
    counter: &'a AtomicU64,
}

impl Drop for Pinned<'_> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire read in `Pins::wait`, so every read the decision
        // made under its pin happens before a change reuses the words.
        self.counter.fetch_sub(1, Ordering::Release);
    }
}

impl<'a> Pins<'a> {
    /// Pins this thread: counts it in `entry`'s counter of the epoch's parity and checks the
    /// epoch did not move meanwhile.
    ///
    /// # Errors
    /// `Io(EUSERS)` if every entry belongs to a live process.
    pub(crate) fn pin(&self, entry: &Entry) -> Result<Pinned<'a>, Error> {
        let index = self.entry(entry)?;
        let counters = &self.registry[index * ENTRY_WORDS + PINNED..][..2];
        let parity = count_in(self.epoch, counters);
        Ok(Pinned {
            counter: &counters[parity],
        })
    }

    /// This process's entry: the one it took, or one it takes now.
    fn entry(&self, entry: &Entry) -> Result<usize, Error> {
        // Acquire: pairs with the Release store below, so the entry's counts are read as
        // reset by the thread that took it.
        let known = entry.0.load(Ordering::Acquire);
        let process = process();
        if known >> 32 == process && known != 0 {
            return Ok((known & 0xffff_ffff) as usize);
        }
        let index = self.take()?;
        // Release: see the load above.
        entry
            .0
            .store(process << 32 | index as u64, Ordering::Release);
        Ok(index)
    }

    /// Takes a free entry, or one whose process died, for this process; or the one it
    /// took already (another handle's, or another thread's). One thread of a process
    /// takes at a time: another that found the entry this process took must not pin
    /// there before the taker has reset the dead owner's counts.
    #[cold]
    fn take(&self) -> Result<usize, Error> {
        #[cfg(not(loom))]
        static TAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
        #[cfg(not(loom))]
        let _taking = TAKING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let me = token();
        for index in 0..ENTRIES {
            let words = &self.registry[index * ENTRY_WORDS..][..ENTRY_WORDS];
            // Relaxed: the CAS below decides; what an owner counted is reset after it.
            let owner = words[TOKEN].load(Ordering::Relaxed);
            if owner == me {
                return Ok(index);
            }
            if owner != 0 && is_alive(owner) {
                continue;
            }
            // Relaxed: the counts are this process's from here on, reset below before
            // any pin of it counts there.
            if words[TOKEN]
                .compare_exchange(owner, me, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                crash_point();
                for counter in &words[PINNED..PINNED + 2] {
                    // Relaxed: a dead process's counts, which no change waits for.
                    counter.store(0, Ordering::Relaxed);
                }
                return Ok(index);
            }
        }
        Err(Error::Io(libc::EUSERS))
    }

    /// Moves the epoch on and waits until no live process is pinned in the one before:
    /// every decision that could have read the rule in force before the move has ended.
    ///
    /// # Errors
    /// `Io(EBUSY)` if a live process stays pinned past [`GIVE_UP`]; nothing was changed.
    pub(crate) fn wait(&self) -> Result<(), Error> {
        // SeqCst, with the fence: pairs with the fence in `pin` (module docs).
        let before = self.epoch.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let started = Instant::now();
        let mut backoff = Backoff::default();
        for words in self.registry.chunks_exact(ENTRY_WORDS) {
            // Acquire: pairs with the Release of an unpin (`Pinned::drop`).
            while words[PINNED + (before & 1) as usize].load(Ordering::Acquire) != 0 {
                // Relaxed: a dead owner's counts are never waited for, whatever they say.
                let owner = words[TOKEN].load(Ordering::Relaxed);
                if owner == 0 || !is_alive(owner) {
                    break;
                }
                if started.elapsed() > GIVE_UP {
                    return Err(Error::Io(libc::EBUSY));
                }
                backoff.snooze();
            }
        }
        Ok(())
    }
}

/// This process, as an entry remembers it: its pid, never 0. A forked child has another,
/// so it takes an entry of its own rather than count its pins in its parent's.
#[cfg(not(loom))]
fn process() -> u64 {
    use crate::sync::ProcessAtomicU64;
    // The pid, cached: `getpid` is a system call, too slow for every pin. A fork clears
    // the cache in the child (`pthread_atfork`), which then reads its own pid.
    static PID: ProcessAtomicU64 = ProcessAtomicU64::new(0);
    static REGISTER: std::sync::Once = std::sync::Once::new();
    extern "C" fn forgotten() {
        PID.store(0, Ordering::Relaxed);
    }
    // Relaxed: a cache of this process's own pid.
    match PID.load(Ordering::Relaxed) {
        0 => {
            REGISTER.call_once(|| {
                // SAFETY: registers a handler that only stores to an atomic, which is
                // async-signal-safe, as a fork's child handler must be.
                unsafe { libc::pthread_atfork(None, None, Some(forgotten)) };
            });
            // SAFETY: getpid has no preconditions and cannot fail.
            let pid = u64::from(unsafe { libc::getpid() }.unsigned_abs()).max(1);
            PID.store(pid, Ordering::Relaxed);
            pid
        }
        pid => pid,
    }
}

/// Under loom, threads play processes (`owner.rs`): the token they play.
#[cfg(loom)]
fn process() -> u64 {
    token()
}
