//! The share's decisions and renewals, in one thread (`tests/loom_lease_share.rs` models
//! them racing).

use super::*;
use crate::config::Config;
use crate::lease::share::{carried, emptied};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// One unit every `interval_ms`, bursts of `burst`.
fn rule(interval_ms: u64, burst: u64) -> Decider {
    let config = Config::gcra(1, Duration::from_millis(interval_ms)).with_burst(burst);
    Decider::new(&config).unwrap()
}

/// Renews `share` at `at` to `next`, keeping the tokens (a continuing lease) or not.
fn renew(share: &GcraShare<'_>, next: Decider, at: u64, continuing: bool) {
    let placeholder = rule(1, 1);
    share.change(
        placeholder,
        |placeholder, state| emptied(placeholder, state, at),
        |held, state| {
            let state = if continuing {
                state
            } else {
                emptied(held, state, at)
            };
            (next, carried(held, state, at, &next))
        },
    );
}

fn remaining(share: &GcraShare<'_>, at: u64) -> u64 {
    share.acquire(0, at).unwrap().remaining
}

#[test]
fn the_word_grows_when_a_renewal_moves_the_tat_back() {
    let words: [AtomicU64; WORDS] = Default::default();
    let share = GcraShare::on(&words);
    // One unit every 10 ms, bursts of 10, from empty at 0: TAT = 100 ms.
    renew(&share, rule(10, 10), 0, false);
    let before = words[STATE].load(Relaxed);
    assert_eq!(remaining(&share, 100 * MS), 10);
    // At 0, no token: at one unit a ms, bursts of 10, TAT = 0 + 10 ms, back 90 ms.
    renew(&share, rule(1, 10), 0, true);
    assert_eq!(words[STATE].load(Relaxed), before + 1);
    assert_eq!(remaining(&share, 0), 0);
    assert_eq!(remaining(&share, 4 * MS), 4);
    assert_eq!(share.try_acquire(5, 4 * MS), Some(false));
    assert_eq!(share.try_acquire(4, 4 * MS), Some(true));
    assert_eq!(share.try_acquire(11, 4 * MS), None);
}

#[test]
fn a_renewal_after_one_that_died_midway_starts_empty() {
    let words: [AtomicU64; WORDS] = Default::default();
    let share = GcraShare::on(&words);
    // One unit every 2 ms, bursts of 4, from empty at 0: full at 8 ms.
    renew(&share, rule(2, 4), 0, false);
    assert_eq!(remaining(&share, 8 * MS), 4);
    // A renewal froze the word, and its process died.
    let word = words[STATE].load(Relaxed);
    words[HIGH].store(word, Relaxed);
    words[STATE].store(FROZEN, Relaxed);
    assert_eq!(share.try_acquire(1, 8 * MS), None);
    // The next keeps the tokens it finds: none, for the old rule is unknown.
    renew(&share, rule(2, 4), 8 * MS, true);
    assert_eq!(words[STATE].load(Relaxed), word + 1);
    assert_eq!(remaining(&share, 8 * MS), 0);
    assert_eq!(remaining(&share, 10 * MS), 1);
}

#[test]
fn now_on_the_coarse_clock_as_at_the_exact_time() {
    let words: [AtomicU64; WORDS] = Default::default();
    let share = GcraShare::on(&words);
    // One unit a ms, bursts of 1,000, from empty at 0: full 1 s on, long before now.
    renew(&share, rule(1, 1000), 0, false);
    let lease_end = u64::MAX;
    let hint = ClockHint::default();
    // Full: 600 taken at the exact time (an idle bucket's TAT is past).
    assert_eq!(share.try_acquire_now(600, lease_end, &hint), Some(true));
    // 400 left, more as the call's milliseconds pass: the coarse clock's bounds settle
    // 300 (admitted) and 200 (denied: 100 left, and fewer than 100 ms have passed).
    assert_eq!(share.try_acquire_now(300, lease_end, &hint), Some(true));
    assert_eq!(share.try_acquire_now(200, lease_end, &hint), Some(false));
    assert_eq!(share.try_acquire_now(50, lease_end, &hint), Some(true));
    assert_eq!(share.try_acquire_now(1001, lease_end, &hint), None);
    // Past the lease's end, the decision is not the share's.
    assert_eq!(share.try_acquire_now(1, 1, &hint), None);
}

#[test]
fn a_word_at_the_end_of_its_range_admits_nothing_more() {
    let words: [AtomicU64; WORDS] = Default::default();
    let share = GcraShare::on(&words);
    // Fresh words, but for a word near its end: the state is still 0.
    words[STATE].store(LAST - 3, Relaxed);
    words[BASE].store(0u64.wrapping_sub(LAST - 3), Relaxed);
    // One unit every 2 ms: an admission would move the word 2,000,000 on, past the end.
    renew(&share, rule(2, 4), 0, false);
    assert_eq!(words[STATE].load(Relaxed), LAST - 2);
    assert_eq!(remaining(&share, 8 * MS), 4);
    assert_eq!(share.try_acquire(1, 8 * MS), Some(false));
    let denied = share.acquire(1, 8 * MS).unwrap();
    assert!(!denied.allowed);
    assert_eq!((denied.remaining, denied.retry_after_ns), (4, u64::MAX));
}
