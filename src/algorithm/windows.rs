//! The timeline cut into windows `[k·P, (k+1)·P)`, and the packed word `(k, count)` that
//! the fixed window and the sliding window counter store.
//!
//! # The packed word
//! `word = (k << count_bits) | count` with `count_bits = bits(L)`, so any count `0..=L`
//! fits below the index. A config is accepted only if the largest word it can produce,
//! the last window of the `u64` timeline with a full count,
//! `⌊(2⁶⁴−1)/P⌋ · 2^bits(L) + L`, is at most [`MAX_STATE`] = 2⁶⁴ − 257. Then:
//! - the index never wraps, for any `now_ns` a caller can pass (`k ≤ ⌊(2⁶⁴−1)/P⌋`);
//! - the word never holds `u64::MAX` or `u64::MAX − 1`, which the state layer reserves;
//! - the word is monotone over a limiter's life: a write either moves to a later window
//!   or adds to the count of the same one, so comparing words compares (window, count)
//!   lexicographically, and a compare-and-swap can never be fooled by an old value
//!   coming back (no ABA).
//!
//! Every config with `L ≤ P/4` (at most one unit per 4 ns) is accepted; near one unit per
//! nanosecond the bound bites (`L = P` is rejected for every `P`), as GCRA's does at
//! exactly one unit per ns. Beyond it: `LimitTooLarge`, naming the largest limit the
//! period takes (or, if none, the shortest period the limit takes).
//!
//! The zero word is window 0 with nothing counted: a fresh limiter, full at any time.

use super::MAX_STATE;
use crate::error::{Bound, Breach, Field};

/// A validated window configuration: L units per window of P ns, and the word's packing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Windows {
    limit: u64,
    period_ns: u64,
    count_bits: u32,
    /// ⌊(2⁶⁴−1)/P⌋: the window of the last instant of the u64 timeline.
    last_index: u64,
}

/// One window's count, as packed in a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counted {
    /// k: the window `[k·P, (k+1)·P)`.
    pub(crate) index: u64,
    /// Units admitted in it.
    pub(crate) count: u64,
}

/// The bit length of `value`: how many bits its count takes in the packed word.
fn bits(value: u64) -> u32 {
    u64::BITS - value.leading_zeros()
}

/// The largest word a config can produce: its count `limit`, of `count_bits` bits, in the
/// window `last_index` of the last instant of the u64 timeline.
fn largest_word(last_index: u64, count_bits: u32, limit: u64) -> u128 {
    (u128::from(last_index) << count_bits) + u128::from(limit)
}

/// The largest limit L the windows accept with the last window `last_index` (k): the
/// bound `k·2^bits(L) + L ≤ MAX_STATE` solved per bit length b, the largest L of b bits
/// being `min(2^b − 1, MAX_STATE − k·2^b)` if that still has b bits. The word only grows
/// with L, so the longest bit length that holds one is the answer. `None` if no L ≥ 1 is.
fn most_limit(last_index: u64) -> Option<(Field, Bound)> {
    (1..=u64::BITS).rev().find_map(|b| {
        let room = u128::from(MAX_STATE).checked_sub(u128::from(last_index) << b)?;
        let most = room.min((1 << b) - 1);
        let most = u64::try_from(most).ok().filter(|&most| bits(most) == b)?;
        Some((Field::Limit, Bound::AtMost(most)))
    })
}

/// The shortest period the windows accept `limit` L with, for a period in which no limit
/// fits: the last window k = ⌊(2⁶⁴−1)/P⌋ may be at most K = ⌊(MAX_STATE − L) / 2^bits(L)⌋,
/// which holds iff P > (2⁶⁴−1)/(K + 1), from P = ⌊(2⁶⁴−1)/(K + 1)⌋ + 1 on. Every period
/// that ends has k ≥ 1: with K = 0, only the period that never ends
/// ([`Config::FOREVER`](crate::Config::FOREVER), an allowance of `L ≤ MAX_STATE`) does.
fn least_period(limit: u64) -> Option<(Field, Bound)> {
    let room = MAX_STATE.checked_sub(limit)?;
    let most_index = room.checked_shr(bits(limit)).unwrap_or(0);
    let least = match most_index {
        0 => u64::MAX,
        most_index => u64::MAX / (most_index + 1) + 1,
    };
    Some((Field::PeriodNs, Bound::AtLeast(least)))
}

impl Windows {
    pub(crate) fn new(limit: u64, period_ns: u64) -> Result<Self, Breach> {
        if limit == 0 {
            return Err(Breach::ZeroLimit);
        }
        if period_ns == 0 {
            return Err(Breach::ZeroPeriod);
        }
        let count_bits = bits(limit);
        let last_index = u64::MAX / period_ns;
        if largest_word(last_index, count_bits, limit) > u128::from(MAX_STATE) {
            let fix = most_limit(last_index).or_else(|| least_period(limit));
            return Err(Breach::LimitTooLarge(fix));
        }
        Ok(Self {
            limit,
            period_ns,
            count_bits,
            last_index,
        })
    }

    /// L: units per window.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// P: the window length in ns.
    pub(crate) fn period_ns(&self) -> u64 {
        self.period_ns
    }

    pub(crate) fn pack(&self, counted: Counted) -> u64 {
        debug_assert!(counted.count <= self.limit);
        (counted.index << self.count_bits) | counted.count
    }

    /// The window and count a word holds. A word this library packed is returned as it
    /// was; any other (the bytes of a file another process writes) is read as the nearest
    /// valid one, its window at most the timeline's last and its count at most L, so every
    /// computation on it stays in range.
    #[inline(always)]
    pub(crate) fn unpack(&self, word: u64) -> Counted {
        Counted {
            index: (word >> self.count_bits).min(self.last_index),
            count: (word & ((1 << self.count_bits) - 1)).min(self.limit),
        }
    }

    /// Where a request at `now` is evaluated, given that the state has seen window
    /// `latest_index`: at `now` itself, or, if `now` lies in an older window, at the start
    /// of window `latest_index` (time going backwards is clamped forward, docs/clock.md).
    /// Returns the window and the time elapsed in it.
    pub(crate) fn locate(&self, latest_index: u64, now: u64) -> (u64, u64) {
        // latest_index ≤ ⌊(2⁶⁴−1)/P⌋, so its start fits u64. Most requests fall in the
        // stored window, and then no division is needed.
        match now.checked_sub(latest_index * self.period_ns) {
            None => (latest_index, 0),
            Some(elapsed) if elapsed < self.period_ns => (latest_index, elapsed),
            Some(_) => {
                let index = now / self.period_ns;
                (index, now - index * self.period_ns)
            }
        }
    }

    /// Whether `n` more units are denied at every instant up to `latest` by the count in
    /// `word` alone: `latest` still lies in the word's window (so does every earlier
    /// instant, clamped forward by [`locate`](Self::locate)), and the window has less
    /// than `n` left. True for both counters: the sliding window's weighted estimate only
    /// adds the previous window to this count.
    #[inline]
    pub(crate) fn full_through(&self, word: u64, latest: u64, n: u64) -> bool {
        let stored = self.unpack(word);
        // index ≤ ⌊(2⁶⁴−1)/P⌋, so its start fits u64 (as in `locate`).
        stored.count + n > self.limit
            && latest
                .checked_sub(stored.index * self.period_ns)
                .map_or(true, |elapsed| elapsed < self.period_ns)
    }

    /// A closed-window record that reads as "nothing counted" and stands above every
    /// record of window `index`: count 0 at window `index + 2` (the same record, by
    /// parity), or at the largest window the word can name, which is later than `index`
    /// since a window after it exists (`state/window_records/`, "Reset").
    pub(crate) fn barrier(&self, index: u64) -> u64 {
        let largest = u64::MAX >> self.count_bits;
        index.saturating_add(2).min(largest) << self.count_bits
    }

    /// The start of window `index + windows_later` in ns, in u128: past the last window
    /// of the u64 timeline it does not fit u64.
    pub(crate) fn start(&self, index: u64, windows_later: u64) -> u128 {
        (u128::from(index) + u128::from(windows_later)) * u128::from(self.period_ns)
    }
}

/// Nanoseconds from `now` until the instant `at` (≥ `now`), or `u64::MAX` ("never") if
/// `at` lies past the end of the u64 timeline, where no `now + d` can reach it.
pub(crate) fn until(at: u128, now: u64) -> u64 {
    match u64::try_from(at) {
        Ok(at) => at - now,
        Err(_) => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::checked_fix;

    #[test]
    fn rejects_zero_and_words_that_could_reach_the_reserved_values() {
        assert_eq!(Windows::new(0, 10).unwrap_err(), Breach::ZeroLimit);
        assert_eq!(Windows::new(1, 0).unwrap_err(), Breach::ZeroPeriod);
        // P = 1: window indexes use all 64 bits, leaving none for the count.
        assert!(Windows::new(1, 1).is_err());
        // L = 1, P = 2: the last word would be (2⁶³−1)·2 + 1 = u64::MAX.
        assert!(Windows::new(1, 2).is_err());
        // L = 1, P = 3: last index 0x5555…55, word 0xAAAA…AB < u64::MAX − 1.
        assert!(Windows::new(1, 3).is_ok());
        // L = P is always rejected; L = P/4 always accepted.
        assert!(Windows::new(1_000_000_000, 1_000_000_000).is_err());
        assert!(Windows::new(250_000_000, 1_000_000_000).is_ok());
        // One window covers the whole timeline: L may use 63 bits, up to 2⁶³ − 257.
        assert!(Windows::new((1 << 63) - 257, u64::MAX).is_ok());
        assert!(Windows::new((1 << 63) - 256, u64::MAX).is_err());
    }

    fn fix(limit: u64, period_ns: u64) -> Option<(Field, Bound)> {
        checked_fix(Windows::new, limit, period_ns)
    }

    #[test]
    fn a_limit_too_large_names_the_largest_limit() {
        let limit = |most| Some((Field::Limit, Bound::AtMost(most)));
        // k = ⌊(2⁶⁴−1)/10⁹⌋ = 18446744073: 2²⁹·k + L fits below 2⁶⁴ − 257 for every L of
        // 29 bits, 2³⁰·k does not: the largest L is 2²⁹ − 1.
        assert_eq!(fix(1_000_000_000, 1_000_000_000), limit((1 << 29) - 1));
        // P = 4, k = 2⁶² − 1: 2 bits, k·4 = 2⁶⁴ − 4; 1 bit, k·2 = 2⁶³ − 2, L = 1.
        assert_eq!(fix(2, 4), limit(1));
        // P = 2⁶⁴ − 2, k = 1: 63 bits, 2⁶³ + L ≤ 2⁶⁴ − 257 up to L = 2⁶³ − 257.
        assert_eq!(fix(1 << 63, u64::MAX - 1), limit((1 << 63) - 257));
    }

    #[test]
    fn a_period_too_short_for_any_limit_names_the_shortest_period() {
        let period = |least| Some((Field::PeriodNs, Bound::AtLeast(least)));
        // L = 1: k·2 + 1 ≤ 2⁶⁴ − 257 up to k = 2⁶³ − 129, from P = 3 on.
        assert_eq!(fix(1, 1), period(3));
        assert_eq!(fix(1, 2), period(3));
        // L = 2²⁰ (21 bits) at P = 1: k ≤ ⌊(2⁶⁴ − 257 − 2²⁰)/2²¹⌋ = 2⁴³ − 1, so P ≥
        // ⌊(2⁶⁴ − 1)/2⁴³⌋ + 1 = 2²¹.
        assert_eq!(fix(1 << 20, 1), period(1 << 21));
        // L = 2⁶³ (64 bits): no period that ends; the one that never ends holds it.
        assert_eq!(fix(1 << 63, 1), period(u64::MAX));
        // L = 2⁶⁴ − 1: above 2⁶⁴ − 257, no period at all.
        assert_eq!(fix(u64::MAX, 1), None);
    }

    #[test]
    fn the_last_word_of_an_accepted_config_is_below_the_reserved_values() {
        for (limit, period) in [(1, 3), (5, 40), (1000, 4000), ((1 << 63) - 257, u64::MAX)] {
            let windows = Windows::new(limit, period).unwrap();
            let last = windows.pack(Counted {
                index: u64::MAX / period,
                count: limit,
            });
            assert!(last <= u64::MAX - 256, "{limit}/{period}: {last:#x}");
            let back = windows.unpack(last);
            assert_eq!((back.index, back.count), (u64::MAX / period, limit));
        }
    }

    #[test]
    fn locate_clamps_an_older_window_to_the_start_of_the_latest() {
        let windows = Windows::new(2, 60).unwrap();
        assert_eq!(windows.locate(0, 75), (1, 15));
        assert_eq!(windows.locate(1, 75), (1, 15));
        assert_eq!(windows.locate(3, 75), (3, 0));
        assert_eq!(
            windows.start(u64::MAX / 60, 1),
            u128::from(u64::MAX / 60 + 1) * 60
        );
        assert_eq!(until(u128::from(u64::MAX) + 5, 7), u64::MAX);
        assert_eq!(until(u128::from(u64::MAX), 7), u64::MAX - 7);
        assert_eq!(until(100, 40), 60);
    }
}
