//! Who holds a claim in a shared table, or a change of a shared limiter's rule: a token
//! per process, which any process on the host can check is still alive. Under loom,
//! threads stand in for processes, and a test stops one for good at a chosen step
//! ([`crash_point`]); with the `testing` feature, a test process can have itself killed
//! (SIGKILL) at one.

#[cfg(not(loom))]
pub(crate) use self::host::{is_alive, token};
#[cfg(loom)]
pub(crate) use self::model::{crash_point, is_alive, token};

/// A step at which a writer may stop for good: nothing outside loom and the `testing`
/// feature.
#[cfg(all(not(loom), not(feature = "testing")))]
#[inline(always)]
pub(crate) fn crash_point() {}

/// A step at which a writer may stop for good: the process kills itself (SIGKILL) here if
/// [`crashes::kill_at`] counted down to this crash point, or stops (SIGSTOP) if
/// [`crashes::stop_at`] did.
#[cfg(all(not(loom), feature = "testing"))]
pub(crate) fn crash_point() {
    use crate::sync::Ordering;
    // Relaxed: the countdown of one test process's own thread.
    match KILL_AT.load(Ordering::Relaxed) {
        0 => {}
        1 => {
            KILL_AT.store(0, Ordering::Relaxed);
            // Relaxed: as the countdown.
            let signal = SIGNAL.load(Ordering::Relaxed) as i32;
            // SAFETY: sends SIGKILL to this process, which ends it here, as `kill -9`
            // would, or SIGSTOP, which stops it here until a SIGCONT.
            unsafe { libc::kill(libc::getpid(), signal) };
        }
        left => KILL_AT.store(left - 1, Ordering::Relaxed),
    }
}

/// The countdown of [`crash_point`]s before this process signals itself (0: never), and
/// the signal.
#[cfg(all(not(loom), feature = "testing"))]
static KILL_AT: crate::sync::ProcessAtomicU64 = crate::sync::ProcessAtomicU64::new(0);
#[cfg(all(not(loom), feature = "testing"))]
static SIGNAL: crate::sync::ProcessAtomicU64 =
    crate::sync::ProcessAtomicU64::new(libc::SIGKILL as u64);

/// Test processes' control over crashes (`tests/shared_change.rs`). Not public API.
#[cfg(all(not(loom), feature = "testing"))]
#[doc(hidden)]
pub mod crashes {
    use crate::sync::Ordering;

    /// Kills this process (SIGKILL) at its crash point number `step` from now (from 1).
    pub fn kill_at(step: u64) {
        super::SIGNAL.store(libc::SIGKILL as u64, Ordering::Relaxed);
        super::KILL_AT.store(step, Ordering::Relaxed);
    }

    /// Stops this process (SIGSTOP) at its crash point number `step` from now (from 1),
    /// until another sends it SIGCONT.
    pub fn stop_at(step: u64) {
        super::SIGNAL.store(libc::SIGSTOP as u64, Ordering::Relaxed);
        super::KILL_AT.store(step, Ordering::Relaxed);
    }
}

#[cfg(not(loom))]
mod host {
    use crate::sync::{Ordering, ProcessAtomicU64};

    /// This process's token, once computed (0: not yet); a forked child has another pid
    /// and computes its own.
    static TOKEN: ProcessAtomicU64 = ProcessAtomicU64::new(0);

    /// This process's token: its pid in the high half, the low half of its start time (in
    /// clock ticks since boot) in the low half, so a later process that reuses the pid
    /// has another token. Never 0.
    pub(crate) fn token() -> u64 {
        // SAFETY: getpid has no preconditions and cannot fail.
        let pid = u64::from(unsafe { libc::getpid() }.unsigned_abs());
        // Relaxed: a cache of a value this process alone computes, the same each time.
        let cached = TOKEN.load(Ordering::Relaxed);
        if cached >> 32 == pid {
            return cached;
        }
        let started = start_time(pid).map_or(0, |(_, started)| started);
        let token = pid << 32 | (started & 0xffff_ffff);
        TOKEN.store(token, Ordering::Relaxed);
        token
    }

    /// Whether the process `token` names is still running: its pid exists, is not a
    /// zombie, and started when the token says. Where `/proc` cannot be read, a pid that
    /// exists counts as alive (a claim is then never taken from a live process).
    pub(crate) fn is_alive(token: u64) -> bool {
        let pid = token >> 32;
        if pid == 0 || pid > i32::MAX as u64 {
            return false;
        }
        match start_time(pid) {
            Some((state, started)) => {
                state != b'Z' && state != b'X' && started & 0xffff_ffff == token & 0xffff_ffff
            }
            // /proc works (it shows this process) and shows no such process.
            None if start_time(u64::from(std::process::id())).is_some() => false,
            None => {
                // SAFETY: kill with signal 0 sends nothing; it only checks the pid exists.
                let exists = unsafe { libc::kill(pid as libc::pid_t, 0) } == 0;
                exists || errno_is_eperm()
            }
        }
    }

    fn errno_is_eperm() -> bool {
        std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }

    /// The state letter and start time of process `pid`, from `/proc/<pid>/stat`.
    fn start_time(pid: u64) -> Option<(u8, u64)> {
        let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) may hold spaces and parentheses: fields resume after
        // the last ')'. Then: state (field 3), …, start time (field 22).
        let close = stat.iter().rposition(|&byte| byte == b')')?;
        let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
        let mut fields = rest.split_ascii_whitespace();
        let state = *fields.next()?.as_bytes().first()?;
        let started = fields.nth(18)?.parse().ok()?;
        Some((state, started))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn this_process_is_alive_and_a_dead_child_is_not() {
            let me = token();
            assert_eq!(me >> 32, u64::from(std::process::id()));
            assert!(is_alive(me));
            // The same pid with another start time is another process.
            assert!(!is_alive(me ^ 1));
            assert!(!is_alive(0));
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = u64::from(child.id());
            let (_, started) = start_time(pid).unwrap();
            let child_token = pid << 32 | (started & 0xffff_ffff);
            child.wait().unwrap();
            assert!(!is_alive(child_token));
        }
    }
}

#[cfg(loom)]
mod model {
    use std::cell::Cell;

    use loom::sync::atomic::{AtomicU64, Ordering};

    loom::lazy_static! {
        /// The tokens (below 64) of the threads a model stopped, one bit each: a loom
        /// atomic, new in each run, so that finding a process dead happens after all it
        /// wrote, as on a host, where the kernel has ended it before `/proc` says so.
        static ref STOPPED: AtomicU64 = AtomicU64::new(0);
    }

    loom::thread_local! {
        /// The token of the "process" this thread plays, and how many crash points it
        /// passes before it stops (None: it never does).
        static PLAYS: Cell<(u64, Option<u32>)> = Cell::new((1, None));
    }

    pub(crate) fn token() -> u64 {
        PLAYS.with(|plays| plays.get().0)
    }

    pub(crate) fn is_alive(token: u64) -> bool {
        // Acquire: pairs with the Release in `crash_point`, as the kernel orders a killed
        // process's writes before its death.
        token != 0 && (token >= 64 || STOPPED.load(Ordering::Acquire) & 1 << token == 0)
    }

    /// Stops the thread here if its countdown has run out: marks its process dead and
    /// unwinds to [`play`], as if the process were killed at this instruction.
    pub(crate) fn crash_point() {
        PLAYS.with(|plays| match plays.get() {
            (token, Some(0)) => {
                // Release: see `is_alive`.
                STOPPED.fetch_or(1 << token, Ordering::Release);
                std::panic::resume_unwind(Box::new("stopped at a crash point"));
            }
            (token, Some(left)) => plays.set((token, Some(left - 1))),
            (_, None) => {}
        });
    }

    /// Runs `f` as process `token` (below 64), stopping it for good at its crash point number
    /// `stop_at` (from 0) if there is one: `None` if it stopped there. The thread plays
    /// the process it played before afterwards.
    pub fn play<R>(token: u64, stop_at: Option<u32>, f: impl FnOnce() -> R) -> Option<R> {
        let before = PLAYS.with(|plays| plays.replace((token, stop_at)));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
        PLAYS.with(|plays| plays.set(before));
        result
    }
}

/// The model checks' control over crashes (see `tests/loom_shared.rs`). Not public API.
#[cfg(loom)]
#[doc(hidden)]
pub mod crashes {
    pub use super::model::play;
}
