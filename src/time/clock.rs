//! The host's clocks: `CLOCK_MONOTONIC` in nanoseconds, shared by every process on the
//! host (read through the TSC where the kernel keeps it with the TSC: `tsc.rs`), and
//! `CLOCK_MONOTONIC_COARSE`, cheaper and one scheduler tick behind at most (see `slack.rs`
//! for what "at most" costs to keep true). Only `monotonic.rs` reads them.

use std::ffi::CStr;
use std::sync::OnceLock;

use super::tsc;
use crate::sync::{Ordering, ProcessAtomicU64};

/// Nanoseconds on `CLOCK_MONOTONIC`: the timeline every [`Instant`](crate::Instant) of this
/// crate is on; [`Instant::now`](crate::Instant::now) is this reading as an instant.
///
/// Where the kernel's clocksource is the TSC (and the environment variable `LIBRATE_CLOCK`
/// is not `monotonic`), it is read from the TSC and stays within a microsecond of
/// `CLOCK_MONOTONIC`; each thread's readings never decrease either way.
///
/// ```
/// let a = librate::now_ns();
/// let b = librate::now_ns();
/// assert!(b >= a);
/// ```
#[inline(always)]
pub fn now_ns() -> u64 {
    now_ns_inline().unwrap_or_else(now_ns_otherwise)
}

/// Whether [`now_ns`] reads without a call in this process now: the TSC clock runs. For
/// a caller that picks its path before any other work, as the C ABI's
/// `rate_limiter_acquire` does: where it is `false`, `Limiter::try_acquire_inline`
/// never decides.
#[doc(hidden)]
#[inline(always)]
pub fn clock_reads_inline() -> bool {
    tsc::running()
}

/// [`now_ns`]'s common reading, inline: the TSC clock started, its anchor current and
/// young. Anything else (the first reading, which resolves the clocks; an anchor to
/// replace; the vDSO's clock) is `None`, for [`now_ns`] to read out of line.
#[inline(always)]
pub(crate) fn now_ns_inline() -> Option<u64> {
    let now = tsc::now_on_current_anchor()?;
    publish(now);
    Some(now)
}

/// [`now_ns`] when the TSC clock cannot read on its current anchor alone.
#[cold]
#[inline(never)]
fn now_ns_otherwise() -> u64 {
    // First: the clocks are resolved (and the TSC clock started, where it serves) before
    // any reading, so no reading from before the TSC clock started follows one after.
    let function = clock_gettime();
    let now = match tsc::now(|| read(libc::CLOCK_MONOTONIC)) {
        Some(now) => now,
        None => read_with(function, libc::CLOCK_MONOTONIC)
            .unwrap_or(0)
            .max(tsc::floor()),
    };
    publish(now);
    now
}

/// Which clock [`now_ns`] reads; other hosts' clocks may come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClockSource {
    /// The TSC, converted to `CLOCK_MONOTONIC` and kept within a microsecond of it: where
    /// the kernel's clocksource is `tsc` on a CPU with an invariant TSC.
    Tsc,
    /// `CLOCK_MONOTONIC` itself, through the vDSO (or the C library where there is none):
    /// elsewhere, under valgrind, or when the environment variable `LIBRATE_CLOCK` is
    /// `monotonic` as the process starts.
    Monotonic,
}

/// The clock [`now_ns`] reads in this process.
///
/// ```
/// let source = librate::clock_source();
/// assert!(matches!(source, librate::ClockSource::Tsc | librate::ClockSource::Monotonic));
/// ```
pub fn clock_source() -> ClockSource {
    clock_gettime();
    if tsc::running() {
        ClockSource::Tsc
    } else {
        ClockSource::Monotonic
    }
}

/// A time `CLOCK_MONOTONIC` has certainly reached: a precise reading some thread of this
/// process took earlier (0 before the first). Readings are published at most every
/// [`PUBLISH_STEP_NS`], so while precise reads go on this lags the clock by a little more
/// than that; it costs one load of a line that is almost never written.
///
/// It lets a caller tell from its state alone that the coarse clock could not settle a
/// decision (an idle GCRA bucket's new TAT depends on the exact time), and skip reading it.
#[inline]
pub(super) fn passed_ns() -> u64 {
    // Relaxed: any value read was a clock reading taken before it was stored, so the
    // clock, being monotonic and system-wide, has reached it; nothing else is published.
    PASSED_NS.load(Ordering::Relaxed)
}

/// Publishes `reading` for [`passed_ns`] if it is a step past the last one published.
#[inline]
fn publish(reading: u64) {
    // Relaxed: see `passed_ns`. The plain load keeps the line shared between the rare
    // writes; fetch_max keeps racing writers from moving it backwards (and makes the
    // wrapping add harmless: a published time within a step of 2^64 only costs a
    // fetch_max that changes nothing).
    if reading
        > PASSED_NS
            .load(Ordering::Relaxed)
            .wrapping_add(PUBLISH_STEP_NS)
    {
        PASSED_NS.fetch_max(reading, Ordering::Relaxed);
    }
}

/// See [`passed_ns`].
static PASSED_NS: ProcessAtomicU64 = ProcessAtomicU64::new(0);
/// How far the clock runs before a reading is published again: rare enough that the
/// word's cache line stays shared by every core, fine enough for `passed_ns` to call a
/// bucket idle within about a millisecond of its TAT.
const PUBLISH_STEP_NS: u64 = 1_000_000;

#[inline(always)]
fn read(clock: libc::clockid_t) -> u64 {
    // Monotonic clocks cannot fail on Linux; if one ever did, time 0 only makes decisions
    // stricter (an earlier `now` never admits more, docs/clock.md).
    read_with(clock_gettime(), clock).unwrap_or(0)
}

/// Reads `clock` with `function`, one of this module's `clock_gettime`s (the C library's
/// or the vDSO's, see `resolve`); `None` if it fails.
#[inline(always)]
fn read_with(function: ClockGettime, clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call, and
    // `function` has `clock_gettime`'s contract (only such functions are passed).
    let rc = unsafe { function(clock, &mut ts) };
    (rc == 0).then(|| timespec_ns(&ts))
}

/// `clock_gettime(2)`'s signature.
type ClockGettime = unsafe extern "C" fn(libc::clockid_t, *mut libc::timespec) -> libc::c_int;

/// The `clock_gettime` to call: the kernel's own, in the vDSO, where it can be found.
///
/// glibc's `clock_gettime` is a wrapper that calls the vDSO's; calling the vDSO directly
/// saves the wrapper, a noticeable part of a coarse read. Go's runtime calls the vDSO the
/// same way.
#[inline]
fn clock_gettime() -> ClockGettime {
    static RESOLVED: OnceLock<ClockGettime> = OnceLock::new();
    *RESOLVED.get_or_init(resolve)
}

/// Finds the clock function now, if no read has yet: the lookup calls `dlopen`, which takes
/// the dynamic loader's lock and is not async-signal-safe, so constructors call this and
/// every later clock read is a plain call.
pub(crate) fn prepare() {
    clock_gettime();
}

/// Finds the vDSO's `clock_gettime` (vdso(7) names it per architecture), or falls back to
/// the C library's where there is no vDSO to find: another C library, a static binary,
/// a process run under valgrind. With the vDSO's, starts the TSC clock where it serves.
#[cold]
fn resolve() -> ClockGettime {
    match find_in_vdso() {
        Some(function) => {
            tsc::start(|| read_with(function, libc::CLOCK_MONOTONIC).unwrap_or(0));
            function
        }
        None => libc::clock_gettime,
    }
}

/// The vDSO's `clock_gettime`, if the process has a vDSO that exports one.
#[cold]
fn find_in_vdso() -> Option<ClockGettime> {
    const SYMBOLS: [&CStr; 2] = [c"__vdso_clock_gettime", c"__kernel_clock_gettime"];
    // SAFETY: with RTLD_NOLOAD, dlopen only returns a handle to an object the process has
    // already loaded (glibc names the vDSO "linux-vdso.so.1"), or NULL; it is never closed,
    // so it stays valid.
    let vdso = unsafe {
        libc::dlopen(
            c"linux-vdso.so.1".as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD,
        )
    };
    if vdso.is_null() {
        return None;
    }
    for symbol in SYMBOLS {
        // SAFETY: `vdso` is a live handle and `symbol` a NUL-terminated string.
        let address = unsafe { libc::dlsym(vdso, symbol.as_ptr()) };
        if address.is_null() {
            continue;
        }
        // SAFETY: vdso(7): the vDSO exports this symbol as a function with
        // clock_gettime's C signature.
        let vdso_clock_gettime: ClockGettime = unsafe { std::mem::transmute(address) };
        if agrees_with_libc(vdso_clock_gettime) {
            return Some(vdso_clock_gettime);
        }
    }
    None
}

/// Whether `candidate` reads `CLOCK_MONOTONIC` as the C library does: it succeeds and its
/// reading lies between two of the library's.
#[cold]
fn agrees_with_libc(candidate: ClockGettime) -> bool {
    let before = read_with(libc::clock_gettime, libc::CLOCK_MONOTONIC);
    let reading = read_with(candidate, libc::CLOCK_MONOTONIC);
    let after = read_with(libc::clock_gettime, libc::CLOCK_MONOTONIC);
    matches!((before, reading, after), (Some(b), Some(r), Some(a)) if b <= r && r <= a)
}

#[inline]
fn timespec_ns(ts: &libc::timespec) -> u64 {
    // tv_sec and tv_nsec are non-negative for CLOCK_MONOTONIC; saturate rather than wrap.
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The coarse clock, `CLOCK_MONOTONIC_COARSE`: the exact clock as of the last tick.
///
/// Not published for [`passed_ns`]: that would cost every decision on the coarse clock
/// (the fast path) a store check, while a stale `passed_ns` costs only an idle bucket's
/// first request one coarse read, whose exact read that follows publishes afresh.
#[inline(always)]
pub(super) fn coarse_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC_COARSE)
}

/// The coarse clock's resolution, if the host reports one.
#[cold]
pub(super) fn coarse_resolution_ns() -> Option<u64> {
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `res` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) };
    (rc == 0).then(|| timespec_ns(&res))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn passed_is_a_published_reading_the_clock_has_reached() {
        let first = now_ns();
        let passed = passed_ns();
        // The first reading (≥ 1 ms after boot) was a step past the initial 0, and every
        // reading published since was taken before the one that follows.
        assert!(passed > 0 && passed <= now_ns());
        // A reading a step past the published one replaces it (or another thread
        // published one at most a step older), and what is published never runs ahead.
        std::thread::sleep(std::time::Duration::from_nanos(2 * PUBLISH_STEP_NS));
        let later = now_ns();
        let published = passed_ns();
        assert!(published + PUBLISH_STEP_NS >= later && published > first);
        assert!(published <= now_ns());
    }

    #[test]
    fn the_clock_reads_as_the_c_library_does() {
        // Whether it is the vDSO's or (where there is none) the C library's own: a speed
        // matter only, so not asserted here; the benches show it.
        assert!(agrees_with_libc(clock_gettime()));
        for clock in [libc::CLOCK_MONOTONIC, libc::CLOCK_MONOTONIC_COARSE] {
            let ours = read(clock);
            let theirs = read_with(libc::clock_gettime, clock);
            assert!(
                theirs.is_some_and(|theirs| ours <= theirs),
                "clock {clock} ran backwards"
            );
        }
    }

    #[test]
    fn coarse_bounds_contain_the_precise_time() {
        for _ in 0..1000 {
            let coarse = coarse_ns();
            let now = now_ns();
            assert!(coarse <= now, "coarse clock ran ahead of the precise one");
        }
    }
}
