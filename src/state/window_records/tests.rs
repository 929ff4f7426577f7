use super::*;
use crate::algorithm::Windows;
use crate::state::{owned, Acquire, Owned};

#[test]
fn a_record_from_a_later_window_under_an_unmoved_current_word_does_not_hang() {
    // L = 4 per 100 ns. Current word: window 2 with 1 unit; the record of window 1's
    // parity claims window 3, which this state never reached (words reset under a
    // late writer). Decisions fall back to a full previous window instead of looping.
    let sliding = SlidingWindow(Windows::new(4, 100).unwrap());
    let state: Vec<AtomicU64> = [
        sliding.0.pack(Counted { index: 2, count: 1 }),
        0,
        sliding.0.pack(Counted { index: 3, count: 2 }),
    ]
    .into_iter()
    .map(AtomicU64::new)
    .collect();
    // At 250: 4·(100 − 50)/100 = 2 weigh, plus 1 counted: 1 left.
    let acquire = |n| owned(sliding.swap(&state, &Owned, Acquire { now: 250, n }));
    assert_eq!(acquire(0).remaining, 1);
    assert!(acquire(1).allowed);
    assert!(!acquire(1).allowed);
    let current = state[CURRENT].load(Ordering::Relaxed);
    assert!(!Stored::is_fresh(&sliding, &state, current, 250));
}
