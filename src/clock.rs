//! The library clock: `CLOCK_MONOTONIC` in nanoseconds, shared by every process on the host.
//!
//! A precise read costs ~23 ns here, `CLOCK_MONOTONIC_COARSE` ~3 ns with a resolution of one
//! scheduler tick (4 ms here). [`CoarseNow`] turns a coarse read into bounds on the precise
//! time, so an algorithm can decide without the precise read when every instant within the
//! bounds gives the same outcome and the same new state (see `Limiter::try_acquire`).

use std::ffi::CStr;
use std::sync::OnceLock;

use crate::sync::{Ordering, ProcessAtomicU64};

/// Nanoseconds on `CLOCK_MONOTONIC`: the timeline every `now_ns` in this crate is on.
///
/// ```
/// let a = rate::now_ns();
/// let b = rate::now_ns();
/// assert!(b >= a);
/// ```
#[inline]
pub fn now_ns() -> u64 {
    let now = read(libc::CLOCK_MONOTONIC);
    publish(now);
    now
}

/// A time `CLOCK_MONOTONIC` has certainly reached: a precise reading some thread of this
/// process took earlier (0 before the first). Readings are published at most every
/// [`PUBLISH_STEP_NS`], so while precise reads go on this lags the clock by a little more
/// than that; it costs one load of a line that is almost never written.
///
/// It lets a caller tell from its state alone that the coarse clock could not settle a
/// decision (an idle GCRA bucket's new TAT depends on the exact time), and skip reading it.
#[inline]
pub(crate) fn passed_ns() -> u64 {
    // Relaxed: any value read was a clock reading taken before it was stored, so the
    // clock, being monotonic and system-wide, has reached it; nothing else is published.
    PASSED_NS.load(Ordering::Relaxed)
}

/// Publishes `reading` for [`passed_ns`] if it is a step past the last one published.
#[inline]
fn publish(reading: u64) {
    // Relaxed: see `passed_ns`. The plain load keeps the line shared between the rare
    // writes; fetch_max keeps racing writers from moving it backwards.
    if reading
        > PASSED_NS
            .load(Ordering::Relaxed)
            .saturating_add(PUBLISH_STEP_NS)
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
    // stricter (an earlier `now` never admits more, DESIGN §2).
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
/// saves the wrapper, ~0.8 ns of a ~3 ns coarse read here (measured). Go's runtime calls
/// the vDSO the same way.
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
/// a process run under valgrind.
#[cold]
fn resolve() -> ClockGettime {
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
        return libc::clock_gettime;
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
            return vdso_clock_gettime;
        }
    }
    libc::clock_gettime
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

/// How far the precise clock may run ahead of the coarse one: `UNKNOWN` before the first
/// use, `DISTRUSTED` once the coarse clock proved unusable, else the slack in ns. It only
/// grows (see [`widened`]).
static COARSE_SLACK_NS: ProcessAtomicU64 = ProcessAtomicU64::new(UNKNOWN);
const UNKNOWN: u64 = 0;
const DISTRUSTED: u64 = u64::MAX;
/// A coarse clock coarser than this saves too little to be worth the bookkeeping.
const MAX_RESOLUTION_NS: u64 = 20_000_000;
/// The widest slack worth keeping: past it so few decisions settle on the coarse clock
/// that reading it is wasted.
const MAX_SLACK_NS: u64 = 256_000_000;

/// The slack to use after the coarse clock was seen `lag` ns behind the precise one,
/// beyond the current `slack`: twice the lag (a stall seen once can recur a little
/// longer), at least twice the slack, or [`DISTRUSTED`] past [`MAX_SLACK_NS`].
///
/// The coarse clock lags by more than its resolution when the tick that advances it is
/// late, which happens on virtual machines whose host deschedules the CPU that keeps
/// time. Widening keeps the shortcut for the rest of the process instead of giving it up
/// at the first stall.
fn widened(slack: u64, lag: u64) -> u64 {
    let wider = slack.saturating_mul(2).max(lag.saturating_mul(2));
    if wider > MAX_SLACK_NS {
        DISTRUSTED
    } else {
        wider
    }
}

/// The width of the bounds a [`CoarseNow`] read gives (`latest − earliest`), or `None`
/// when the coarse clock cannot be trusted on this host.
#[inline(always)]
pub(crate) fn coarse_slack_ns() -> Option<u64> {
    // Relaxed: the slack is a number that only grows, read by itself (as in `precise`).
    match COARSE_SLACK_NS.load(Ordering::Relaxed) {
        UNKNOWN => Some(calibrate()).filter(|&slack| slack != DISTRUSTED),
        DISTRUSTED => None,
        slack => Some(slack),
    }
}

/// Bounds on the precise time, from one coarse read: `earliest ≤ now ≤ latest`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CoarseNow {
    /// The coarse reading; `CLOCK_MONOTONIC` at this instant is at least this.
    pub(crate) earliest: u64,
    /// The coarse reading plus the slack; `CLOCK_MONOTONIC` at this instant is at most this.
    pub(crate) latest: u64,
}

impl CoarseNow {
    /// Reads the coarse clock, or returns `None` when it cannot be trusted on this host.
    ///
    /// The coarse clock is the precise clock as of the last tick, so the precise time is at
    /// least the coarse one and at most one tick later. We allow two ticks (interrupt
    /// latency), and [`CoarseNow::precise`] checks that assumption on every precise read
    /// that follows a coarse one, widening the slack when a late tick proves it too narrow
    /// (see [`widened`]), up to turning the shortcut off.
    #[inline(always)]
    pub(crate) fn read() -> Option<Self> {
        let slack = coarse_slack_ns()?;
        // Not published for `passed_ns`: that would cost every coarse decision (the fast
        // path) ~0.3 ns, while a stale `passed_ns` costs only an idle bucket's first
        // request one coarse read, whose precise read that follows publishes afresh.
        let earliest = read(libc::CLOCK_MONOTONIC_COARSE);
        Some(Self {
            earliest,
            latest: earliest.saturating_add(slack),
        })
    }

    /// Reads the precise clock after this coarse read, checking the bounds held.
    #[inline]
    pub(crate) fn precise(self) -> u64 {
        let now = now_ns();
        if now > self.latest {
            // Either this thread was descheduled between the two reads, or the coarse
            // clock lags by more than the slack. A second coarse read tells them apart:
            // the precise time at that read is at least `now`, so if even this fresher
            // coarse reading is more than the slack behind `now`, the lag is proven.
            let recheck = read(libc::CLOCK_MONOTONIC_COARSE);
            let slack = self.latest - self.earliest;
            if now > recheck.saturating_add(slack) {
                // Relaxed: the slack is a number that only grows (fetch_max), read by
                // itself; no other memory depends on it.
                COARSE_SLACK_NS.fetch_max(widened(slack, now - recheck), Ordering::Relaxed);
            }
        }
        now
    }
}

/// Finds the coarse clock's slack once per process. Racing first calls compute the same
/// value; `fetch_max` keeps a late one from undoing a widening.
fn calibrate() -> u64 {
    let mut res = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `res` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) };
    let resolution = timespec_ns(&res);
    let slack = if rc != 0 || resolution == 0 || resolution > MAX_RESOLUTION_NS {
        DISTRUSTED
    } else {
        2 * resolution
    };
    // Relaxed: as in `CoarseNow::precise`.
    COARSE_SLACK_NS
        .fetch_max(slack, Ordering::Relaxed)
        .max(slack)
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
    fn a_late_tick_widens_the_slack_until_it_is_not_worth_keeping() {
        const MS: u64 = 1_000_000;
        assert_eq!(widened(8 * MS, 9 * MS), 18 * MS);
        assert_eq!(widened(8 * MS, 1), 16 * MS);
        assert_eq!(widened(100 * MS, 120 * MS), 240 * MS);
        assert_eq!(widened(200 * MS, 1), DISTRUSTED);
        assert_eq!(widened(8 * MS, u64::MAX), DISTRUSTED);
        assert_eq!(widened(DISTRUSTED, 1), DISTRUSTED);
    }

    #[test]
    fn coarse_bounds_contain_the_precise_time() {
        for _ in 0..1000 {
            if let Some(coarse) = CoarseNow::read() {
                let now = now_ns();
                assert!(
                    coarse.earliest <= now,
                    "coarse clock ran ahead of the precise one"
                );
            }
        }
    }
}
