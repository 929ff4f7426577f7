//! Taking the next anchor (the parent module's docs, Staying on `CLOCK_MONOTONIC` and
//! Never backwards): a fresh pair, the new line aimed at the clock and started above every
//! reading on the old one, or the TSC retired when the pair is far off the line.

use super::{
    pair, publish, scale_between, Anchor, AIM_NS, ANCHORS, FIRST, FLOOR_NS, RETIRED, RETIRE_NS,
};
use crate::sync::{process_fence as fence, Ordering};

/// Takes the anchor after `current` (published as number `sequence / 2`), unless another
/// thread is already taking it.
#[cold]
#[inline(never)]
pub(super) fn reanchor(
    sequence: u64,
    current: Anchor,
    window_ticks: u64,
    read_monotonic: &impl Fn() -> u64,
) {
    // Acquire: the bank stores below stay after the claim (the fence orders them).
    if ANCHORS
        .sequence
        .compare_exchange(sequence, sequence + 1, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        return;
    }
    // Release fence: a reader that sees any bank store below also sees the claim above.
    fence(Ordering::Release);
    let number = sequence / 2 + 1;
    match next_anchor(current, window_ticks, read_monotonic) {
        Some(next) => publish(number, next),
        None => retire(current, window_ticks),
    }
}

/// The anchor after `current`, from a fresh pair; `None` when the pair cannot be read or
/// is far off the current line, which retires the TSC.
fn next_anchor(
    current: Anchor,
    window_ticks: u64,
    read_monotonic: &impl Fn() -> u64,
) -> Option<Anchor> {
    let first = *FIRST.get()?;
    aim(current, window_ticks, first, pair(read_monotonic)?)
}

/// The anchor after `current` at the pair (`tsc`, `ns`), given the first anchor's pair;
/// `None` when the pair is more than [`RETIRE_NS`] off the current line within its window,
/// or the new scale times `window_ticks` does not fit 64 bits.
pub(super) fn aim(
    current: Anchor,
    window_ticks: u64,
    first: (u64, u64),
    (tsc, ns): (u64, u64),
) -> Option<Anchor> {
    let window_end = current.tsc.saturating_add(window_ticks);
    let on_line = current.at(tsc.min(window_end));
    if tsc <= window_end && on_line.abs_diff(ns) > RETIRE_NS {
        return None;
    }
    // The long-run rate, from the first anchor: NTP's corrections average out over it.
    let rate = scale_between(first, (tsc, ns))?;
    // Start no lower than any reading on the old line (the line here, or at the end of
    // its window if that has passed), and at least at the clock; aim to meet the clock
    // `AIM_NS` on.
    let start = on_line.max(ns);
    let aim_ticks = ((u128::from(AIM_NS) << 32) / u128::from(rate)).max(1);
    let aimed = (u128::from((ns + AIM_NS).saturating_sub(start)) << 32) / aim_ticks;
    // A scale whose window of ticks does not multiply in 64 bits (`Anchor::within_window_at`)
    // is thousands of times the first one's: no TSC in step with the clock.
    let scale = u64::try_from(aimed)
        .ok()
        .filter(|&scale| scale > 0 && window_ticks.checked_mul(scale).is_some())?;
    // Readers may still use the old line up to the end of its window: start as far above
    // it as it can climb above the new one by then.
    let lead = if current.scale > scale && window_end > tsc {
        let ticks = u128::from(window_end - tsc);
        // Each line's reading rounds down: 2 more covers the two roundings.
        ((ticks * u128::from(current.scale - scale)) >> 32) as u64 + 2
    } else if window_end > tsc && start == on_line {
        // A line at least as steep never climbs above the new one; but a new line that
        // starts on the old one starts on its reading, rounded down, and a reading on it
        // rounds down again: a nanosecond below the old line's single rounding at worst.
        1
    } else {
        0
    };
    Some(Anchor {
        tsc,
        ns: start + lead,
        scale,
    })
}

/// Retires the TSC clock for good: later reads are the vDSO's, no earlier than the end of
/// `current`'s window, the latest time a TSC reading could have been.
#[cold]
fn retire(current: Anchor, window_ticks: u64) {
    let floor = current.at(current.tsc.saturating_add(window_ticks));
    // Relaxed: the sequence's Release store below publishes it.
    FLOOR_NS.fetch_max(floor, Ordering::Relaxed);
    // Release: a reader that sees RETIRED (Acquire in `now`) sees the floor.
    ANCHORS.sequence.store(RETIRED, Ordering::Release);
    // Release: as above, for a reader that sees the clock stopped (`started`); its
    // readings then go to the vDSO at once, without reading the TSC first.
    ANCHORS.reanchor_ticks.store(0, Ordering::Release);
}
