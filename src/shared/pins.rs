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

use crate::error::SharedError;
use crate::shared::owner::{crash_point, is_alive, token};
#[cfg(not(loom))]
use crate::sync::ProcessAtomicU64;
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
    /// `RegistryFull` if every entry belongs to a live process.
    pub(crate) fn pin(&self, entry: &Entry) -> Result<Pinned<'a>, SharedError> {
        let index = self.entry(entry)?;
        let counters = &self.registry[index * ENTRY_WORDS + PINNED..][..2];
        let parity = count_in(self.epoch, counters);
        Ok(Pinned {
            counter: &counters[parity],
        })
    }

    /// This process's entry: the one it took, or one it takes now.
    fn entry(&self, entry: &Entry) -> Result<usize, SharedError> {
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
    fn take(&self) -> Result<usize, SharedError> {
        #[cfg(not(loom))]
        let _taking = Taking::hold();
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
        Err(SharedError::RegistryFull)
    }

    /// Moves the epoch on and waits until no live process is pinned in the one before:
    /// every decision that could have read the rule in force before the move has ended.
    ///
    /// # Errors
    /// `Busy` if a live process stays pinned past [`GIVE_UP`]; nothing was changed.
    pub(crate) fn wait(&self) -> Result<(), SharedError> {
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
                    return Err(SharedError::Busy);
                }
                backoff.snooze();
            }
        }
        Ok(())
    }
}

/// [`process`]' pid, cached: `getpid` is a system call, too slow for every pin. A fork
/// clears the cache in the child (`pthread_atfork`), which then reads its own pid.
#[cfg(not(loom))]
static PID: ProcessAtomicU64 = ProcessAtomicU64::new(0);

/// This process, as an entry remembers it: its pid, never 0. A forked child has another,
/// so it takes an entry of its own rather than count its pins in its parent's.
#[cfg(not(loom))]
fn process() -> u64 {
    // Relaxed: a cache of this process's own pid.
    if let pid @ 1.. = PID.load(Ordering::Relaxed) {
        return pid;
    }
    // SAFETY: getpid has no preconditions and cannot fail.
    let pid = u64::from(unsafe { libc::getpid() }.unsigned_abs()).max(1);
    if forgets_on_fork() {
        // Relaxed, as above. A fork after this store has its child handler clear it.
        PID.store(pid, Ordering::Relaxed);
    }
    pid
}

/// Whether [`forgets_on_fork`] registered its handler: 0 no, else one of these.
#[cfg(not(loom))]
static HANDLER: ProcessAtomicU64 = ProcessAtomicU64::new(0);
#[cfg(not(loom))]
const REGISTERING: u64 = 1;
#[cfg(not(loom))]
const REGISTERED: u64 = 2;

/// Whether a fork's child clears [`process`]'s cache: registers the handler that does,
/// once. Not a `std::sync::Once`: a thread that forks while another registers would leave
/// its child waiting for ever on a registration no thread of the child runs. Here such a
/// child finds the registration under way, and never caches its pid.
#[cfg(not(loom))]
fn forgets_on_fork() -> bool {
    extern "C" fn forget() {
        // Relaxed: this process's own cache, and the child's only thread runs this.
        PID.store(0, Ordering::Relaxed);
    }
    // Acquire: pairs with the Release store of `REGISTERED`, so a cache stored after this
    // read is stored after the registration.
    match HANDLER.compare_exchange(0, REGISTERING, Ordering::Acquire, Ordering::Acquire) {
        Ok(_) => {
            // SAFETY: registers a handler that only stores to an atomic, which is
            // async-signal-safe, as a fork's child handler must be.
            unsafe { libc::pthread_atfork(None, None, Some(forget)) };
            // Release: see the Acquire above.
            HANDLER.store(REGISTERED, Ordering::Release);
            true
        }
        Err(state) => state == REGISTERED,
    }
}

/// One thread of a process taking an entry ([`Pins::take`]), held until dropped. Not a
/// `std::sync::Mutex`: a thread that forks while another holds it would leave the child's
/// mutex locked for ever. The word names the process that holds it, so a child reads its
/// parent's hold as none of its own.
#[cfg(not(loom))]
struct Taking;

#[cfg(not(loom))]
static TAKING: ProcessAtomicU64 = ProcessAtomicU64::new(0);

#[cfg(not(loom))]
impl Taking {
    fn hold() -> Self {
        let me = process();
        let mut backoff = Backoff::default();
        loop {
            // Relaxed: the CAS below decides.
            let holder = TAKING.load(Ordering::Relaxed);
            // Acquire: pairs with the Release of the last holder's drop, so this one
            // reads the entries as it left them.
            if holder != me
                && TAKING
                    .compare_exchange(holder, me, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return Self;
            }
            backoff.snooze();
        }
    }
}

#[cfg(not(loom))]
impl Drop for Taking {
    fn drop(&mut self) {
        // Release: see `hold`.
        TAKING.store(0, Ordering::Release);
    }
}

/// Under loom, threads play processes (`owner.rs`): the token they play.
#[cfg(loom)]
fn process() -> u64 {
    token()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Runs `child` in a child forked from this test process (which runs other tests'
    /// threads), and returns whether it returned `true` within ten seconds; a child still
    /// waiting then is killed.
    fn in_child(child: impl FnOnce() -> bool) -> bool {
        // SAFETY: the child runs `child` (atomics and getpid) and leaves with `_exit`.
        let pid = match unsafe { libc::fork() } {
            // SAFETY: ends the child without running the parent's exit handlers.
            0 => unsafe { libc::_exit(i32::from(!child())) },
            pid => pid,
        };
        assert!(pid > 0, "fork failed");
        let started = Instant::now();
        let mut status = 0;
        // SAFETY: polls the child just forked.
        while unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == 0 {
            if started.elapsed() > Duration::from_secs(10) {
                // SAFETY: kills and reaps the child just forked.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }

    #[test]
    fn a_child_forked_while_a_thread_takes_an_entry_takes_one() {
        let taking = Taking::hold();
        let took = in_child(|| {
            drop(Taking::hold());
            true
        });
        drop(taking);
        assert!(took, "the child waited for its parent's thread");
    }

    #[test]
    fn a_child_forked_while_a_thread_registers_reads_its_pid_each_time() {
        let read = in_child(|| {
            // What a child forked mid-registration finds.
            HANDLER.store(REGISTERING, Ordering::Relaxed);
            PID.store(0, Ordering::Relaxed);
            // SAFETY: getpid has no preconditions and cannot fail.
            let pid = u64::from(unsafe { libc::getpid() }.unsigned_abs());
            process() == pid && PID.load(Ordering::Relaxed) == 0
        });
        assert!(read, "the child waited, or cached its pid");
    }
}
