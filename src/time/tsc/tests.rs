//! The TSC clock's arithmetic: anchors, scales and retirement, on made-up ticks.

use super::next::aim;
use super::*;

#[test]
fn an_anchor_converts_ticks_on_its_line() {
    // 0.5 ns per tick (a 2 GHz TSC).
    let anchor = Anchor {
        tsc: 1_000,
        ns: 5_000,
        scale: 1 << 31,
    };
    assert_eq!(anchor.at(1_000), 5_000);
    assert_eq!(anchor.at(3_000), 6_000);
    // Another CPU's read a little before the anchor's: the anchor's own time.
    assert_eq!(anchor.at(999), 5_000);
    // Within the window, by ticks since the anchor: the same times.
    assert_eq!(anchor.within_window_at(0), 5_000);
    assert_eq!(anchor.within_window_at(2_000), 6_000);
    // 0.3 ns a tick, rounded down to 1,288,490,188 / 2^32: 299,999.9998 ns over a
    // million ticks, rounded down.
    let slower = Anchor {
        scale: (3 << 32) / 10,
        ..anchor
    };
    assert_eq!(slower.within_window_at(1_000_000), 5_000 + 299_999);
    assert_eq!(slower.at(1_001_000), 5_000 + 299_999);
}

/// An anchor at tick 1,000,000 on a 2 GHz TSC (0.5 ns a tick), 100 ns ahead of the
/// pair taken at tick 2,000,000, with the first pair at (0, 0): a long-run rate of
/// exactly 0.5 ns a tick.
const HALF: u64 = 1 << 31;
const AHEAD: Anchor = Anchor {
    tsc: 1_000_000,
    ns: 500_100,
    scale: HALF,
};
const WINDOW_TICKS: u64 = 1_200_000;
const PAIR: (u64, u64) = (2_000_000, 1_000_000);

#[test]
fn a_new_anchor_starts_on_the_old_line_and_meets_the_clock_a_period_on() {
    let next = aim(AHEAD, WINDOW_TICKS, (0, 0), PAIR).unwrap();
    assert_eq!(next.tsc, 2_000_000);
    // The old line is at 1,000,100 there; the new one starts no lower.
    assert!(next.ns >= 1_000_100);
    // `AIM_NS` is 2,000,000 ticks at the long-run rate: the new line then reads the
    // clock's 2,000,000, but for the lead over the old line's last 200,000 ticks
    // (the slope 100 ns lower over 2,000,000 ticks: 10 ns, and 2 for rounding).
    let met = next.at(4_000_000);
    assert!((2_000_000..=2_000_013).contains(&met), "{met}");
}

#[test]
fn a_new_anchor_stays_above_the_old_line_to_the_end_of_its_window() {
    let next = aim(AHEAD, WINDOW_TICKS, (0, 0), PAIR).unwrap();
    // The new line is less steep (it works off the 100 ns), so it leads the old one
    // at its start by what the old one gains by the end of its window.
    assert!(next.scale < HALF);
    for tick in (2_000_000..=2_200_000).step_by(1_000) {
        assert!(next.at(tick) >= AHEAD.at(tick), "tick {tick}");
    }
}

#[test]
fn a_clock_behind_the_pair_is_caught_up_at_once() {
    // The clock 100 ns past the line: the new anchor starts at the clock.
    let behind = Anchor {
        ns: 499_900,
        ..AHEAD
    };
    let next = aim(behind, WINDOW_TICKS, (0, 0), PAIR).unwrap();
    assert_eq!(next.ns, 1_000_000);
    assert_eq!(next.scale, HALF, "on the clock: the long-run rate");
}

#[test]
fn after_a_window_no_one_used_the_new_anchor_starts_at_the_clock() {
    // An anchor 10 ms old, whose line would be far off by now: no reader used it past
    // its window's end (tick 2,200,000 here: 1,100,000 on its line).
    let old = Anchor {
        tsc: 1_000_000,
        ns: 500_000,
        scale: HALF + (HALF >> 4),
    };
    let next = aim(old, WINDOW_TICKS, (0, 0), (20_000_000, 10_000_000)).unwrap();
    assert_eq!(
        (next.tsc, next.ns, next.scale),
        (20_000_000, 10_000_000, HALF)
    );
}

#[test]
fn a_pair_far_off_the_line_retires_the_tsc() {
    let far = Anchor {
        ns: 500_000 + RETIRE_NS + 1,
        ..AHEAD
    };
    assert_eq!(aim(far, WINDOW_TICKS, (0, 0), PAIR), None);
    let within = Anchor {
        ns: 500_000 + RETIRE_NS,
        ..AHEAD
    };
    assert!(aim(within, WINDOW_TICKS, (0, 0), PAIR).is_some());
}

#[test]
fn the_scale_between_two_pairs_is_nanoseconds_per_tick() {
    assert_eq!(scale_between((0, 0), (2_000, 1_000)), Some(1 << 31));
    assert_eq!(scale_between((0, 0), (1_000, 3_000)), Some(3 << 32));
    assert_eq!(scale_between((5, 0), (5, 1_000)), None);
    assert_eq!(scale_between((5, 0), (4, 1_000)), None);
}

/// A new line at least as steep as the old still starts above every reading on the old
/// one: a reading rounds down on each line, so the new line's start (the old line at the
/// pair, rounded down) plus its own rounded-down climb can fall a nanosecond short of the
/// old line's single rounding over the same ticks. Scales with fractions of a nanosecond
/// a tick, and every tick of the old window after the pair, at many pairs.
#[test]
fn a_steeper_new_line_never_reads_below_the_old_one() {
    // 0.3 ns a tick (about 3.3 GHz), 100 ns above the long-run line from the first pair
    // at (0, 0), whose rate is then a little higher: the new line is the steeper.
    let old = Anchor {
        tsc: 1_000_000,
        ns: 300_100,
        scale: (3 << 32) / 10,
    };
    let window = 2_000_000;
    for pair_tsc in (1_000_001..1_000_400).step_by(7) {
        // The clock on the old line.
        let on_line = old.at(pair_tsc);
        let next = aim(old, window, (0, 0), (pair_tsc, on_line)).unwrap();
        assert!(next.scale >= old.scale, "pair {pair_tsc}");
        for tick in pair_tsc..pair_tsc + 2_000 {
            assert!(
                next.at(tick) >= old.at(tick),
                "pair {pair_tsc}, tick {tick}: new {} < old {}",
                next.at(tick),
                old.at(tick)
            );
        }
    }
}

#[test]
fn a_scale_whose_window_overflows_64_bits_retires_the_tsc() {
    // The pair on the old line, at a little over 2^31 (0.5 ns a tick): a window of 2^34
    // ticks times that needs 65 bits, so a reading late in it could not multiply in 64;
    // one of 2^32 ticks needs 63.
    assert_eq!(aim(AHEAD, 1 << 34, (0, 0), (2_000_000, 1_000_100)), None);
    assert!(aim(AHEAD, 1 << 32, (0, 0), (2_000_000, 1_000_100)).is_some());
}
