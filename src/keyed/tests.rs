//! Unit tests of the keyed table: which clock a thread's keyed decisions read first (a
//! crate-private hint, so not in tests/).

use super::KeyedLimiter;
use crate::config::Config;
use crate::time::{Monotonic, ThreadHint, TimeSource};

/// A keyed try_acquire on an idle key leaves this thread reading the exact clock
/// first, and one on a drained key (which the coarse bounds settle) leaves it peeking
/// first again; either way each outcome is the one the key's state gives.
#[test]
fn keyed_decisions_teach_this_thread_which_clock_to_read_first() {
    if Monotonic.slack().is_none() {
        return; // No coarse clock to trust: every decision reads the exact time.
    }
    let idle = KeyedLimiter::new(&Config::per_second(1_000_000_000), 10).unwrap();
    let drained = KeyedLimiter::new(&Config::per_hour(1).with_burst(1), 10).unwrap();
    // Inserted: a new key teaches nothing.
    assert_eq!(idle.try_acquire(b"a", 1), Ok(true));
    assert_eq!(drained.try_acquire(b"x", 1), Ok(true));
    assert!(!ThreadHint::read());
    for _ in 0..3 {
        // Found, idle: admitted at the exact time (read first after the first round).
        assert_eq!(idle.try_acquire(b"a", 1), Ok(true));
        assert!(ThreadHint::read());
        // Found, drained: denied, whichever clock was read first.
        assert_eq!(drained.try_acquire(b"x", 1), Ok(false));
        assert!(!ThreadHint::read());
        assert_eq!(drained.try_acquire(b"x", 1), Ok(false));
        assert!(!ThreadHint::read());
    }
}
