//! `CLOCK_MONOTONIC` at the price of the TSC, where the kernel itself keeps time with it.
//!
//! The vDSO's `clock_gettime` reads the TSC too, but orders the read (a fence that waits
//! for every earlier load) and retries around the kernel's sequence count; most of its
//! cost is that fence. Where the kernel's clocksource is `tsc` it has verified that the
//! counter is invariant and in step across CPUs, so a plain `rdtsc` is a valid reading of
//! the same time, once converted. This module converts it with an *anchor*: a pair
//! (`tsc`, `ns`) read together from the TSC and `CLOCK_MONOTONIC`, and `scale`, the
//! nanoseconds per tick as a 32.32 fixed-point number:
//! `now = anchor.ns + (rdtsc − anchor.tsc) · scale / 2³²`.
//!
//! # Staying on `CLOCK_MONOTONIC`
//! An anchor is used for at most [`WINDOW_NS`] of ticks after it was taken. The first
//! reader past five sixths of that takes a new one (the others go on with the old): it
//! reads a fresh pair, and aims the new scale so that the line meets `CLOCK_MONOTONIC`
//! [`AIM_NS`] later, at the rate the TSC has kept against `CLOCK_MONOTONIC` since the
//! first anchor. So an error (a pair read across an interrupt, NTP slewing the clock) is
//! worked off over the next anchors rather than kept, and a reading stays within
//! [`BOUND_NS`] of `CLOCK_MONOTONIC`: NTP slews at most 500 ppm, 0.3 µs over a window.
//! A new pair found more than [`RETIRE_NS`] off the line (the kernel left the TSC, a VM
//! migrated), or a scale so steep that a window's ticks times it needs more than 64
//! bits, retires the TSC for the rest of the process: every later read is the vDSO's,
//! never earlier than the last TSC reading could have been.
//!
//! # Never backwards
//! A new anchor starts where the old line is at its `tsc` (or at the end of the old
//! window, once that has passed), or later. While it is taken,
//! readers on other threads still use the old anchor, up to the end of its window, on a
//! line that may be steeper than the new one; so the new anchor starts at least as far
//! above the old line as the old line could still climb above it by the end of the old
//! window. Every reading on the new anchor is then at least every reading any thread took
//! on the old one at an earlier tick: each thread's readings never decrease.
//!
//! # Without waiting
//! A reader past the end of the window while another thread takes the next anchor does
//! not wait for it (the thread may be descheduled, or be the one a signal handler
//! interrupted): it reads `CLOCK_MONOTONIC` and returns it less [`MAX_ERROR_NS`], or
//! the old line's end if that is later. Every reading on any anchor is at least the clock
//! less that much, so the next anchor's readings are never below this one, and it is no
//! lower than any reading on the old anchor. Such a reading may be up to
//! [`MAX_ERROR_NS`] behind the clock: the bound for this rare case.
//!
//! # Publication
//! Two anchors live in two banks, and a sequence number says which is current: even
//! while the anchor of number `sequence / 2` is the current one, odd while a writer
//! (the only one: it claimed the odd number with a CAS) fills the other bank. A reader
//! reads the sequence, the current bank, then the sequence again: the bank it read was
//! whole unless a later writer began to refill it, which makes the sequence at least
//! `(first | 1) + 2`. Before all of them it reads the age at which an anchor is replaced,
//! in ticks: 0 until the first anchor is published and once the TSC is retired, so one
//! load tells a reader whether to read the TSC at all.

use std::sync::OnceLock;

use crate::sync::{process_fence as fence, Ordering, ProcessAtomicU64 as AtomicU64};

use self::next::reanchor;

/// How long an anchor is used at most, in nanoseconds.
const WINDOW_NS: u64 = 600_000;
/// The age at which a reader takes a new anchor (five sixths of the window), early
/// enough that readers rarely reach the window's end. Computed once, when the clock
/// starts ([`Anchors::reanchor_ticks`]), not on every reading.
const fn reanchor_ticks(window_ticks: u64) -> u64 {
    window_ticks / 6 * 5
}
/// How far ahead a new anchor aims its line at `CLOCK_MONOTONIC`: past the old window's
/// end, so that the lead over the old line (see "Never backwards") takes only part of the
/// correction back.
const AIM_NS: u64 = 1_000_000;
/// How far a reading may be from `CLOCK_MONOTONIC` read at the same instant, while NTP
/// slews the clock at most 500 ppm (its limit) and the TSC keeps in step.
pub(crate) const BOUND_NS: u64 = 1_000;
/// The most a reading can be from `CLOCK_MONOTONIC` before the TSC is retired: a pair
/// found up to [`RETIRE_NS`] off a line starts the next one at most that far ahead, and a
/// line drifts at most a microsecond from the clock within its window. The coarse bounds
/// are widened by this much (`monotonic.rs`).
pub(crate) const MAX_ERROR_NS: u64 = 2 * RETIRE_NS;
/// A new pair this far off the anchor's line (within its window) retires the TSC.
const RETIRE_NS: u64 = 2 * BOUND_NS;
/// A pair whose two TSC reads are further apart than this was interrupted: read again.
const PAIR_TICKS_MAX: u64 = 2_000;
/// How long the first calibration measures the TSC's rate over.
const CALIBRATION_NS: u64 = 200_000;

/// The sequence word's value once the TSC is retired (odd: no writer ever claims it).
const RETIRED: u64 = u64::MAX;

/// An anchor: a TSC reading, `CLOCK_MONOTONIC` at it, and nanoseconds per tick (32.32).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Anchor {
    tsc: u64,
    ns: u64,
    scale: u64,
}

impl Anchor {
    /// The time at `tsc` on this anchor's line; a `tsc` before the anchor's (another
    /// CPU's read a little earlier) is the anchor's own time.
    #[inline(always)]
    fn at(&self, tsc: u64) -> u64 {
        let ticks = tsc.saturating_sub(self.tsc);
        self.ns + ((u128::from(ticks) * u128::from(self.scale)) >> 32) as u64
    }

    /// [`at`](Self::at) the anchor's tick plus `ticks`, at most the window: there the
    /// product fits 64 bits (every published anchor's scale times the window does, see
    /// `start` and `next::aim`), so one multiply and a shift give the same time.
    #[inline(always)]
    fn within_window_at(&self, ticks: u64) -> u64 {
        self.ns + ((ticks * self.scale) >> 32)
    }
}

/// The published anchors: the words every reading loads share one cache line, which a
/// writer changes once a period.
#[repr(C, align(64))]
struct Anchors {
    /// [`reanchor_ticks`] of the window: 0 while the TSC clock does not run (before it
    /// starts, once it is retired), constant between.
    reanchor_ticks: AtomicU64,
    sequence: AtomicU64,
    /// The banks' `[tsc, ns, scale]`, interleaved: `words[k][bank]`, so that a reader
    /// finds its bank's three words at one offset from the first bank's, a multiple of
    /// the bank's number that the loads' addressing scales.
    words: [[AtomicU64; 2]; 3],
    /// The window in ticks, read only past the re-anchor age (on the next line): constant
    /// once the first anchor is published.
    window_ticks: AtomicU64,
}

// The words a reading loads fill the first line, and only those.
const _: () = assert!(std::mem::offset_of!(Anchors, window_ticks) == 64);

static ANCHORS: Anchors = Anchors {
    reanchor_ticks: AtomicU64::new(0),
    sequence: AtomicU64::new(0),
    words: [
        [AtomicU64::new(0), AtomicU64::new(0)],
        [AtomicU64::new(0), AtomicU64::new(0)],
        [AtomicU64::new(0), AtomicU64::new(0)],
    ],
    window_ticks: AtomicU64::new(0),
};

/// The first anchor, the base of the long-run rate; written once, before the first
/// publication.
static FIRST: OnceLock<(u64, u64)> = OnceLock::new();
/// Once retired: the least time a vDSO read may return (the latest any TSC reading was).
static FLOOR_NS: AtomicU64 = AtomicU64::new(0);

/// Whether the TSC clock can serve this process: x86-64, the kernel's clocksource is
/// `tsc`, the CPU says its TSC is invariant, and `LIBRATE_CLOCK` does not ask for the
/// plain clock. Decided once; `read_monotonic` calibrates the first anchor.
pub(super) fn start(read_monotonic: impl Fn() -> u64) -> bool {
    if !usable() {
        return false;
    }
    let Some(first) = pair(&read_monotonic) else {
        return false;
    };
    // Measure the rate over a short spin: long enough that the pairs' own jitter is a
    // small part of it, short enough to pass unnoticed at startup.
    let second = loop {
        let Some(second) = pair(&read_monotonic) else {
            return false;
        };
        if second.1 >= first.1 + CALIBRATION_NS {
            break second;
        }
        std::hint::spin_loop();
    };
    let Some(scale) = scale_between(first, second) else {
        return false;
    };
    // ⌊(WINDOW_NS << 32) / scale⌋ · scale ≤ WINDOW_NS << 32: the window's ticks times
    // this scale fit 64 bits, as `Anchor::within_window_at` needs.
    let window_ticks = ((u128::from(WINDOW_NS) << 32) / u128::from(scale)) as u64;
    let reanchor = reanchor_ticks(window_ticks);
    if reanchor == 0 {
        // A counter of a few ticks a window: not worth reading.
        return false;
    }
    let _ = FIRST.set(first);
    // Relaxed: the Release store of the re-anchor age below publishes it.
    ANCHORS.window_ticks.store(window_ticks, Ordering::Relaxed);
    publish(
        0,
        Anchor {
            tsc: second.0,
            ns: second.1,
            scale,
        },
    );
    // Release: a reader that sees the clock run (Acquire in `now` and
    // `now_on_current_anchor`) reads the first anchor's words and the window as written
    // above, or later ones. (The sequence cannot tell it: it reads 0 before too.)
    ANCHORS.reanchor_ticks.store(reanchor, Ordering::Release);
    true
}

/// Whether this host keeps `CLOCK_MONOTONIC` with an invariant TSC, and the user allows it.
fn usable() -> bool {
    if std::env::var_os("LIBRATE_CLOCK").is_some_and(|clock| clock == "monotonic") {
        return false;
    }
    let clocksource =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    clocksource.is_ok_and(|name| name.trim() == "tsc") && invariant_tsc()
}

/// CPUID leaf 0x8000_0007, EDX bit 8: the TSC runs at a constant rate in every power state.
#[cfg(target_arch = "x86_64")]
// `__cpuid` is a safe function since Rust 1.87; the crate builds on earlier ones too.
#[allow(unused_unsafe)]
fn invariant_tsc() -> bool {
    use std::arch::x86_64::__cpuid;
    // SAFETY: CPUID exists on every x86-64 CPU; leaf 0x8000_0000 reports the highest
    // extended leaf, and 0x8000_0007 is read only when it is at most that.
    let highest = unsafe { __cpuid(0x8000_0000) }.eax;
    // SAFETY: as above.
    highest >= 0x8000_0007 && unsafe { __cpuid(0x8000_0007) }.edx & (1 << 8) != 0
}

#[cfg(not(target_arch = "x86_64"))]
fn invariant_tsc() -> bool {
    false
}

/// The time counter: a plain `rdtsc`, which the CPU may run a few instructions early or
/// late; that is nanoseconds against the microsecond the clock allows.
///
/// Elsewhere 0: the TSC clock never starts there (`usable`), so no reading ever uses it.
#[inline(always)]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: RDTSC exists on every x86-64 CPU; `usable` checked it counts time.
    return unsafe { std::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// A TSC reading and `CLOCK_MONOTONIC` at the same instant: the monotonic read between two
/// ordered TSC reads close together, paired with their midpoint.
fn pair(read_monotonic: &impl Fn() -> u64) -> Option<(u64, u64)> {
    for _ in 0..100 {
        // SeqCst fences: each TSC read happens after everything before it, so the
        // monotonic read lies between the two.
        fence(Ordering::SeqCst);
        let before = rdtsc();
        fence(Ordering::SeqCst);
        let ns = read_monotonic();
        fence(Ordering::SeqCst);
        let after = rdtsc();
        if after >= before && after - before <= PAIR_TICKS_MAX {
            return Some((before + (after - before) / 2, ns));
        }
    }
    None
}

/// Nanoseconds per tick (32.32) between two pairs, if the TSC advanced between them.
fn scale_between(from: (u64, u64), to: (u64, u64)) -> Option<u64> {
    let ticks = to.0.checked_sub(from.0).filter(|&ticks| ticks > 0)?;
    let ns = to.1.checked_sub(from.1)?;
    let scale = (u128::from(ns) << 32) / u128::from(ticks);
    u64::try_from(scale).ok().filter(|&scale| scale > 0)
}

/// Publishes `anchor` as number `number` (the sequence becomes `2 · number`), filling
/// its bank first. Called by the sequence's sole writer.
fn publish(number: u64, anchor: Anchor) {
    let [tsc, ns, scale] = &ANCHORS.words;
    let bank = (number & 1) as usize;
    // Relaxed: the sequence's Release store below publishes them.
    tsc[bank].store(anchor.tsc, Ordering::Relaxed);
    ns[bank].store(anchor.ns, Ordering::Relaxed);
    scale[bank].store(anchor.scale, Ordering::Relaxed);
    // Release: a reader that reads this number (Acquire) reads the bank's words as
    // written above.
    ANCHORS.sequence.store(2 * number, Ordering::Release);
}

/// One read of the published anchor, then a TSC reading: `(first, anchor, tsc, second)`.
/// The anchor is whole unless `second` shows a later writer began to refill its bank
/// (`second >= (first | 1) + 2`, module docs, Publication); `first` is [`RETIRED`] once
/// the TSC is.
#[inline(always)]
fn read_anchor() -> (u64, Anchor, u64, u64) {
    let (first, anchor) = load_anchor();
    let second = sequence_again();
    (first, anchor, rdtsc(), second)
}

/// [`read_anchor`]'s first part: `(first, anchor)`.
#[inline(always)]
fn load_anchor() -> (u64, Anchor) {
    // Acquire: pairs with `publish`'s Release, for the bank's words.
    let first = ANCHORS.sequence.load(Ordering::Acquire);
    let [tsc, ns, scale] = &ANCHORS.words;
    let bank = ((first >> 1) & 1) as usize;
    // Relaxed: the fence in `sequence_again` orders these before the second sequence
    // read.
    let anchor = Anchor {
        tsc: tsc[bank].load(Ordering::Relaxed),
        ns: ns[bank].load(Ordering::Relaxed),
        scale: scale[bank].load(Ordering::Relaxed),
    };
    (first, anchor)
}

/// [`read_anchor`]'s second part, after [`load_anchor`]: the sequence again.
///
/// The TSC is read after it: an anchor read whole serves every tick of its window, even
/// once a later one is published (module docs, Never backwards), and the CPU may run a
/// plain `rdtsc` before earlier loads anyway. Read last, it is the only value of the
/// clock's that the reading's arithmetic waits for.
#[inline(always)]
fn sequence_again() -> u64 {
    // Acquire fence: if a read in `load_anchor` saw a later writer's store, the sequence
    // read below sees that writer's claim (the CAS before its stores).
    fence(Ordering::Acquire);
    ANCHORS.sequence.load(Ordering::Relaxed)
}

/// [`now`]'s first try, when it needs nothing else: the TSC clock started and not retired,
/// the anchor read whole, and young enough that no reader needs to replace it. `None`
/// otherwise, for [`now`] to settle, never because the reading would differ from it.
#[inline(always)]
pub(super) fn now_on_current_anchor() -> Option<u64> {
    let reanchor_ticks = started();
    // Not started or retired: known before the TSC is read, so that a process on the
    // vDSO's clock pays little for trying this one first.
    if reanchor_ticks == 0 {
        return None;
    }
    let (first, anchor) = load_anchor();
    let second = sequence_again();
    // Retired since `started` read: `(RETIRED | 1) + 2` wraps to 1, and a sequence that
    // was RETIRED stays so, never 0.
    if second >= (first | 1).wrapping_add(2) {
        return None;
    }
    // A tick before the anchor's (another CPU's) wraps past the window: `now` saturates it.
    let ticks = rdtsc().wrapping_sub(anchor.tsc);
    (ticks <= reanchor_ticks).then(|| anchor.within_window_at(ticks))
}

/// The re-anchor age in ticks, 0 while the TSC clock does not run, read before anything
/// else of the clock's.
#[inline(always)]
fn started() -> u64 {
    // Acquire: pairs with the Release stores of `start` (for the first anchor's words and
    // the window; the sequence publishes later anchors) and `next::retire` (the floor).
    ANCHORS.reanchor_ticks.load(Ordering::Acquire)
}

/// The current time, or `None` when the TSC clock was never started or is retired
/// (then the caller reads the vDSO, no earlier than [`floor`]).
pub(super) fn now(read_monotonic: impl Fn() -> u64) -> Option<u64> {
    let reanchor_ticks = started();
    if reanchor_ticks == 0 {
        return None;
    }
    loop {
        let (first, anchor, tsc, second) = read_anchor();
        if first == RETIRED {
            return None;
        }
        if second >= (first | 1) + 2 {
            continue;
        }
        let ticks = tsc.saturating_sub(anchor.tsc);
        // Relaxed: constant since `start`, which `started` synchronized with.
        let window_ticks = ANCHORS.window_ticks.load(Ordering::Relaxed);
        if ticks <= reanchor_ticks {
            return Some(anchor.at(tsc));
        }
        // Only the current anchor's reader may take the next: an anchor from one already
        // replaced would not lead the one that replaced it.
        let claimable = second == first && first & 1 == 0;
        if ticks <= window_ticks {
            // Old enough to replace: take the next anchor if no one is, and go on with
            // this one, which the next leads.
            if claimable {
                reanchor(second, anchor, window_ticks, &read_monotonic);
            }
            return Some(anchor.at(tsc));
        }
        // Past its window: take the next anchor. If another thread is taking it (and was
        // descheduled for most of a window), read the clock instead, never waiting: see
        // "Without waiting".
        if claimable {
            reanchor(second, anchor, window_ticks, &read_monotonic);
        } else if second & 1 == 1 {
            let window_end = anchor.tsc.saturating_add(window_ticks);
            let behind = read_monotonic().saturating_sub(MAX_ERROR_NS);
            return Some(behind.max(anchor.at(window_end)));
        }
    }
}

/// Whether readings come from the TSC now: it was started and is not retired.
#[inline(always)]
pub(super) fn running() -> bool {
    // Relaxed: it only picks a path; a reading on the TSC loads it again (`started`).
    ANCHORS.reanchor_ticks.load(Ordering::Relaxed) != 0
}

/// The least time a vDSO read may return once the TSC clock is retired.
#[inline]
pub(super) fn floor() -> u64 {
    // Relaxed: read after `now` returned `None` with an Acquire load of the sequence or
    // of the re-anchor age, which the floor's store comes before (`next::retire`).
    FLOOR_NS.load(Ordering::Relaxed)
}

mod next;
#[cfg(all(test, not(loom)))]
mod tests;
