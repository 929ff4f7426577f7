//! Carry-over: what a state holds at the instant its rule is replaced, and the state of the
//! new rule that holds the same, as pure arithmetic (the state layer reads the old words
//! and writes the new ones). A change keeps the algorithm; a period of
//! [`Config::FOREVER`](crate::Config::FOREVER) counts as the same algorithm.
//!
//! - **GCRA keeps the tokens** (as x/time/rate's `SetLimit`): the units a request could
//!   take at the change instant t, `(τ − (TAT − t)⁺) / T` (fractional, negative while
//!   reserves are queued past the tolerance), stay; they then refill at the new rate,
//!   capped at the new burst: `TAT' = t + τ' − min(τ', ⌊tokens·T'⌋)`. Rounding only ever
//!   leaves fewer tokens.
//! - **The window counters keep what is counted**, in units: the count of the window
//!   holding t, and (sliding window counter) of the window before it, move to the window
//!   of the new period holding t and the one before it (windows are `[k·P', (k+1)·P')`,
//!   cut from 0 as always), each at most the new limit. The fixed window carries its
//!   current count alone.
//! - **An allowance** (a period that never ends) keeps its units left as tokens (GCRA)
//!   or its units used as the current window's count (the windows), both ways: a bucket
//!   becomes an allowance of `⌊tokens⌋` units left (at most the new capacity), a window
//!   an allowance with what its rule counts at t used (the sliding window counter's
//!   weighted estimate, rounded up as its `remaining` is).
//!
//! A time t earlier than the state's latest is taken as that latest, as a decision takes
//! it (GCRA, which has no latest, counts from t: only ever more debt).

use super::sliding_window::{Counts, SlidingWindow};
use super::windows::Counted;
use super::{Allowance, FixedWindow, Gcra, Rule, MAX_STATE};

/// The units a GCRA bucket or an allowance holds at an instant: `room / per_unit`, exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tokens {
    /// Nanoseconds of room (a bucket) or units left (an allowance); negative while
    /// reserves are queued past a bucket's tolerance.
    pub(crate) room: i128,
    /// What one unit takes of `room`: T, or 1.
    pub(crate) per_unit: u64,
}

/// What a window counter (or an allowance of one) counts at an instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tally {
    /// The instant, taken forward to the state's latest window.
    pub(crate) at: u64,
    /// Units counted in the window holding `at`.
    pub(crate) current: u64,
    /// Units counted in the window before it.
    pub(crate) previous: u64,
    /// Units the rule counts against its limit at `at`: `current` plus the weight of
    /// `previous`, rounded up.
    pub(crate) counted: u64,
}

impl Gcra {
    /// The tokens a bucket of TAT `tat` holds at `now`.
    pub(crate) fn tokens(&self, tat: u64, now: u64) -> Tokens {
        let debt = i128::from(tat.saturating_sub(now));
        Tokens {
            room: i128::from(self.tolerance) - debt,
            per_unit: self.emission_interval,
        }
    }

    /// The TAT of a bucket holding `tokens` at `now`, capped at its burst, at most
    /// [`MAX_STATE`] (past it, the end of the timeline).
    pub(crate) fn holding(&self, tokens: Tokens, now: u64) -> u64 {
        let tolerance = i128::from(self.tolerance);
        // A debt past 2⁶⁶ ns leaves a TAT past MAX_STATE whatever `now`: clamped there,
        // and the sum below fits. |room| < 2⁶⁴ and T < 2⁶⁴, so the product may not fit
        // i128: past it, it is past either bound.
        const DEEPEST: i128 = -(1 << 66);
        let room = match tokens.room.checked_mul(i128::from(self.emission_interval)) {
            Some(scaled) => scaled.div_euclid(i128::from(tokens.per_unit)),
            None if tokens.room < 0 => DEEPEST,
            None => tolerance,
        }
        .clamp(DEEPEST, tolerance);
        let tat = i128::from(now) + (tolerance - room);
        tat.min(i128::from(MAX_STATE)) as u64
    }
}

impl Allowance {
    /// The units left of `word`, as tokens.
    pub(crate) fn tokens(&self, word: u64) -> Tokens {
        Tokens {
            room: i128::from(self.limit() - self.used(word)),
            per_unit: 1,
        }
    }

    /// The units used, as a tally (an allowance is one window that never ends).
    pub(crate) fn tally(&self, word: u64, now: u64) -> Tally {
        let used = self.used(word);
        Tally {
            at: now,
            current: used,
            previous: 0,
            counted: used,
        }
    }

    /// The word of an allowance with `⌊tokens⌋` units left, at most its capacity.
    pub(crate) fn holding_tokens(&self, tokens: Tokens) -> u64 {
        let capacity = self.limit();
        let left = tokens
            .room
            .div_euclid(i128::from(tokens.per_unit))
            .clamp(0, i128::from(capacity));
        capacity - left as u64
    }

    /// The word of an allowance with what `tally` counts used, at most its capacity.
    pub(crate) fn holding_tally(&self, tally: Tally) -> u64 {
        tally.counted.min(self.limit())
    }
}

impl FixedWindow {
    /// What the packed `word` counts at `now`.
    pub(crate) fn tally(&self, word: u64, now: u64) -> Tally {
        let stored = self.0.unpack(word);
        let (index, elapsed) = self.0.locate(stored.index, now);
        let current = if index == stored.index {
            stored.count
        } else {
            0
        };
        Tally {
            at: index * self.0.period_ns() + elapsed,
            current,
            previous: 0,
            counted: current,
        }
    }

    /// The word counting `tally`'s current units in this period's window holding its
    /// instant, at most the limit.
    pub(crate) fn holding(&self, tally: Tally) -> u64 {
        self.0.pack(Counted {
            index: tally.at / self.0.period_ns(),
            count: tally.current.min(self.0.limit()),
        })
    }
}

impl SlidingWindow {
    /// What `counts` count at `now`.
    pub(crate) fn tally(&self, counts: &Counts, now: u64) -> Tally {
        let view = self.view(counts, now);
        Tally {
            at: view.index * self.0.period_ns() + view.elapsed,
            current: view.cur,
            previous: view.prev,
            counted: self.0.limit() - self.remaining(&view),
        }
    }

    /// The counts holding `tally`'s units in this period's window holding its instant and
    /// the one before it (none before window 0), each at most the limit.
    pub(crate) fn holding(&self, tally: Tally) -> Counts {
        let limit = self.0.limit();
        let index = tally.at / self.0.period_ns();
        let previous = if index == 0 {
            0
        } else {
            tally.previous.min(limit)
        };
        Counts {
            index,
            cur: tally.current.min(limit),
            prev: previous,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Algorithm, Windows};
    use crate::config::Algorithm as Configured;

    const SECOND: u64 = 1_000_000_000;

    #[test]
    fn gcra_keeps_the_tokens_capped_at_the_new_burst() {
        // 10 a second (T = 100 ms, τ = 1 s); 6 taken at 0: TAT 600 ms, 4 tokens left.
        let old = Gcra::new(10, SECOND, 0).unwrap();
        let tokens = old.tokens(600_000_000, 0);
        assert_eq!(tokens.room, 400_000_000);
        // 1 a second, burst 5 (T = τ/5 = 1 s): 4 tokens are 4 s of room, TAT 1 s.
        let slower = Gcra::new(1, SECOND, 5).unwrap();
        assert_eq!(slower.holding(tokens, 0), SECOND);
        // 100 a second, burst 2 (T = 10 ms, τ = 20 ms): capped at 2 tokens, full: TAT 0.
        let faster = Gcra::new(100, SECOND, 2).unwrap();
        assert_eq!(faster.holding(tokens, 0), 0);
        // 3 a second (T = 333,333,333 ns, τ = 999,999,999): 4·T > τ, so full too.
        let thirds = Gcra::new(3, SECOND, 0).unwrap();
        assert_eq!(thirds.holding(tokens, 0), 0);
        // 1.5 tokens (150 ms of room) into T = 1 s, τ = 5 s: 1.5 s of room, TAT 3.5 s.
        let half = Tokens {
            room: 150_000_000,
            per_unit: 100_000_000,
        };
        assert_eq!(slower.holding(half, 0), 3_500_000_000);
    }

    #[test]
    fn a_queue_past_the_tolerance_carries_over_as_negative_tokens() {
        // T = 100 ms, τ = 1 s, TAT 1.3 s at 0: reserves queued 3 units past the burst.
        let old = Gcra::new(10, SECOND, 0).unwrap();
        let tokens = old.tokens(1_300_000_000, 0);
        assert_eq!(tokens.room, -300_000_000);
        // Into T = 1 s, τ = 1 s: −3 tokens are −3 s of room, TAT 4 s after a time of 7.
        let new = Gcra::new(1, SECOND, 0).unwrap();
        assert_eq!(new.holding(tokens, 7), 7 + 4 * SECOND);
        // Into an allowance: nothing left.
        let allowance = Allowance::new(Configured::Gcra, 5, 0).unwrap();
        assert_eq!(allowance.holding_tokens(tokens), 5);
    }

    #[test]
    fn a_debt_past_the_timeline_carries_over_as_the_end_of_it() {
        // A TAT of u64::MAX at 0 (words another process wrote) under T = 1 ns, τ = 1 ns:
        // −(2⁶⁴ − 2) ns of room. Into T = MAX_STATE, burst 1: the room times T, near
        // −2¹²⁸, does not fit i128; the debt is past any storable TAT, so the new TAT is
        // MAX_STATE.
        let old = Gcra::new(1, 1, 1).unwrap();
        let tokens = old.tokens(u64::MAX, 0);
        assert_eq!(tokens.room, 1 - i128::from(u64::MAX));
        let new = Gcra::new(1, MAX_STATE, 1).unwrap();
        assert_eq!(new.holding(tokens, 0), MAX_STATE);
        assert_eq!(new.holding(tokens, u64::MAX), MAX_STATE);
        // And as many tokens the other way: capped at the burst, full.
        let plenty = Tokens {
            room: -tokens.room,
            per_unit: 1,
        };
        assert_eq!(new.holding(plenty, 5), 5);
    }

    #[test]
    fn an_allowance_and_a_bucket_trade_whole_tokens() {
        let allowance = Allowance::new(Configured::Gcra, 10, 0).unwrap();
        // 3 of 10 used: 7 tokens into T = 1 s, burst 4: capped at 4, full at 50 s.
        let bucket = Gcra::new(1, SECOND, 4).unwrap();
        assert_eq!(
            bucket.holding(allowance.tokens(3), 50 * SECOND),
            50 * SECOND
        );
        // 8 used: 2 tokens, TAT = now + τ − 2·T = 52 s.
        assert_eq!(
            bucket.holding(allowance.tokens(8), 50 * SECOND),
            52 * SECOND
        );
        // A bucket at TAT 52.5 s at 50 s (1.5 tokens) leaves 1 whole unit: 9 of 10 used.
        let tokens = bucket.tokens(52_500_000_000, 50 * SECOND);
        assert_eq!(allowance.holding_tokens(tokens), 9);
    }

    #[test]
    fn windows_keep_their_counts_in_the_new_windows() {
        // 5 a minute; 3 counted in window 1 ([60 s, 120 s)), asked at 100 s.
        let minute = FixedWindow(Windows::new(5, 60 * SECOND).unwrap());
        let word = minute.0.pack(Counted { index: 1, count: 3 });
        let tally = minute.tally(word, 100 * SECOND);
        assert_eq!(
            (tally.at, tally.current, tally.counted),
            (100 * SECOND, 3, 3)
        );
        // 2 per 30 s: window 3 ([90 s, 120 s)) holds 100 s, with min(3, 2) = 2.
        let half = FixedWindow(Windows::new(2, 30 * SECOND).unwrap());
        assert_eq!(
            half.0.unpack(half.holding(tally)),
            Counted { index: 3, count: 2 }
        );
        // Asked at 30 s, before window 1: taken at 60 s, its start.
        assert_eq!(minute.tally(word, 30 * SECOND).at, 60 * SECOND);
        // Asked at 130 s: window 2 counts nothing.
        assert_eq!(minute.tally(word, 130 * SECOND).current, 0);
    }

    #[test]
    fn the_sliding_window_carries_both_counts_and_its_estimate() {
        // 10 a minute; window 1 counted 9, window 2 counts 2; asked at 135 s (e = 15 s):
        // the estimate is 2 + ⌈9·45/60⌉ = 2 + 7 = 9.
        let minute = SlidingWindow(Windows::new(10, 60 * SECOND).unwrap());
        let counts = Counts {
            index: 2,
            cur: 2,
            prev: 9,
        };
        let tally = minute.tally(&counts, 135 * SECOND);
        assert_eq!(
            tally,
            Tally {
                at: 135 * SECOND,
                current: 2,
                previous: 9,
                counted: 9
            }
        );
        // 4 per 100 s: window 1 ([100 s, 200 s)) holds 135 s; 2 there, min(9, 4) before.
        let longer = SlidingWindow(Windows::new(4, 100 * SECOND).unwrap());
        let carried = longer.holding(tally);
        assert_eq!((carried.index, carried.cur, carried.prev), (1, 2, 4));
        // There it counts 2 + ⌈4·65/100⌉ = 5 > 4: nothing more is admitted at 135 s.
        assert_eq!(longer.try_decide(&carried, 135 * SECOND, 1), None);
        // Into an allowance of 20: 9 used.
        let allowance = Allowance::new(Configured::SlidingWindow, 20, 0).unwrap();
        assert_eq!(allowance.holding_tally(tally), 9);
        // In window 0 of a longer period there is no window before: the previous drops.
        let hour = SlidingWindow(Windows::new(100, 3600 * SECOND).unwrap());
        assert_eq!(hour.holding(tally).prev, 0);
    }
}
