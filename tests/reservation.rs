//! Cancelling a reservation (docs/rust.md, Cancelling a reservation): the units come
//! back exactly while nothing later depends on them, and stay taken otherwise. Values
//! from docs/decision.md, Reserve: with burst B and T = P/L, τ = B·T; a reserve of n at
//! t is admitted iff max(TAT, t) + n·T − t ≤ τ + W, and waits max(TAT, t) + n·T − t − τ.

use librate::{Config, Instant, KeyedLimiter, Limiter};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);
const AT_0: Instant = Instant::ZERO;

/// L = 1, P = 1 s, B = 1: T = τ = 1 s.
fn one_a_second() -> Config {
    Config::gcra(1, SECOND).with_burst(1)
}

#[test]
fn a_cancelled_reserve_gives_its_place_back() {
    let limiter = Limiter::new(&one_a_second()).unwrap();
    // TAT 0 → 1 s, wait 0 + 1 − 0 − 1 = 0.
    let first = limiter.reserve_cancellable_at(1, AT_0, SECOND).unwrap();
    assert!(first.decision().allowed);
    assert_eq!(first.decision().wait(), Duration::ZERO);
    assert!(first.cancel());
    // TAT back at 0: the same reserve waits 0 again, and an acquire after it is denied.
    let again = limiter.reserve_at(1, AT_0, SECOND).unwrap();
    assert_eq!((again.allowed, again.wait()), (true, Duration::ZERO));
    assert!(!limiter.acquire_at(1, AT_0).unwrap().allowed);
}

#[test]
fn a_later_admission_keeps_the_units() {
    let limiter = Limiter::new(&one_a_second()).unwrap();
    let first = limiter.reserve_cancellable_at(1, AT_0, SECOND).unwrap();
    // Queued behind it: TAT 1 s → 2 s, wait 1 + 1 − 0 − 1 = 1 s.
    let second = limiter.reserve_at(1, AT_0, SECOND).unwrap();
    assert_eq!(second.wait(), SECOND);
    assert!(!first.cancel());
    // TAT still 2 s: a third reserve at 0 would wait 2 s, beyond W = 1 s: denied, and
    // admitted after 2 + 1 − 0 − 1 − 1 = 1 s.
    let third = limiter.reserve_at(1, AT_0, SECOND).unwrap();
    assert!(!third.allowed);
    assert_eq!(third.retry_after(), SECOND);
}

#[test]
fn the_last_of_a_queue_gives_back_first() {
    let limiter = Limiter::new(&one_a_second()).unwrap();
    let first = limiter.reserve_cancellable_at(1, AT_0, SECOND).unwrap();
    let second = limiter.reserve_cancellable_at(1, AT_0, SECOND).unwrap();
    // TAT 2 s → 1 s, then 1 s → 0: both given back, in that order.
    assert!(second.cancel());
    assert!(first.cancel());
    assert_eq!(
        limiter.reserve_at(1, AT_0, SECOND).unwrap().wait(),
        Duration::ZERO
    );
}

#[test]
fn a_denial_and_a_query_hold_nothing() {
    let limiter = Limiter::new(&one_a_second()).unwrap();
    assert!(limiter.acquire_at(1, AT_0).unwrap().allowed);
    // TAT 1 s: a reserve with W = 0 waits 1 s > 0: denied.
    let denied = limiter
        .reserve_cancellable_at(1, AT_0, Duration::ZERO)
        .unwrap();
    assert!(!denied.decision().allowed);
    assert!(!denied.cancel());
    let query = limiter.reserve_cancellable_at(0, AT_0, SECOND).unwrap();
    assert!(!query.cancel());
    // The acquire's units are still taken.
    assert!(!limiter.acquire_at(1, AT_0).unwrap().allowed);
}

#[test]
fn a_change_of_rule_since_gives_nothing_back() {
    let limiter = Limiter::new(&one_a_second()).unwrap();
    let held = limiter.reserve_cancellable_at(1, AT_0, SECOND).unwrap();
    limiter.set_config_at(&one_a_second(), AT_0).unwrap();
    assert!(!held.cancel());
    // The admission was carried over into the new words: TAT 1 s, so W = 0 is denied.
    assert!(!limiter.reserve_at(1, AT_0, Duration::ZERO).unwrap().allowed);
}

#[test]
fn the_window_algorithms_have_no_queue() {
    let limiter = Limiter::new(&Config::fixed_window(1, SECOND)).unwrap();
    let refused = limiter.reserve_cancellable_at(1, AT_0, SECOND);
    assert_eq!(refused.unwrap_err(), librate::ReserveError::Unsupported);
}

#[test]
fn a_new_key_given_back_is_absent_again() {
    let table = KeyedLimiter::new(&one_a_second(), 4).unwrap();
    let held = table.reserve_cancellable_at(b"k", 1, AT_0, SECOND).unwrap();
    assert!(held.decision().allowed);
    assert_eq!(table.stats_at(AT_0).live_keys, 1);
    assert!(held.cancel());
    assert_eq!(table.stats_at(AT_0).live_keys, 0);
    let again = table.reserve_at(b"k", 1, AT_0, SECOND).unwrap();
    assert_eq!((again.allowed, again.wait()), (true, Duration::ZERO));
}

#[test]
fn a_key_in_the_table_gives_back_in_place() {
    let table = KeyedLimiter::new(&Config::gcra(1, SECOND).with_burst(2), 4).unwrap();
    // B = 2, τ = 2 s: the key is inserted at TAT 1 s, then reserved in place at 2 s.
    assert!(table.acquire_at(b"k", 1, AT_0).unwrap().allowed);
    let held = table.reserve_cancellable_at(b"k", 1, AT_0, SECOND).unwrap();
    assert_eq!(held.decision().wait(), Duration::ZERO);
    assert!(held.cancel());
    // TAT back at 1 s: one more unit at 0 is admitted, then none.
    assert!(table.acquire_at(b"k", 1, AT_0).unwrap().allowed);
    assert!(!table.acquire_at(b"k", 1, AT_0).unwrap().allowed);
}

#[test]
fn a_later_admission_of_the_key_keeps_the_units() {
    let table = KeyedLimiter::new(&one_a_second(), 4).unwrap();
    let held = table.reserve_cancellable_at(b"k", 1, AT_0, SECOND).unwrap();
    // Queued behind it: TAT 2 s, wait 1 s.
    assert_eq!(
        table.reserve_at(b"k", 1, AT_0, SECOND).unwrap().wait(),
        SECOND
    );
    assert!(!held.cancel());
    assert!(!table.reserve_at(b"k", 1, AT_0, SECOND).unwrap().allowed);
}

#[test]
fn words_of_another_kind_give_nothing_back() {
    let limiter = Limiter::new(&one_a_second()).unwrap();
    let table = KeyedLimiter::new(&one_a_second(), 4).unwrap();
    let words = limiter
        .reserve_cancellable_at(1, AT_0, SECOND)
        .unwrap()
        .to_words();
    assert!(!table.cancel_words(&words));
    // Any words: nothing happens, nothing panics.
    for fill in [0, 1, 2, u64::MAX] {
        let junk = [fill; librate::RESERVATION_WORDS];
        assert!(!limiter.cancel_words(&junk));
        assert!(!table.cancel_words(&junk));
    }
    // The limiter's own words give back once.
    assert!(limiter.cancel_words(&words));
    assert!(!limiter.cancel_words(&[0; librate::RESERVATION_WORDS]));
}

/// A reservation can be held across an await in a task that moves between threads.
#[test]
fn a_reservation_is_send_and_sync() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let limiter = Limiter::new(&one_a_second()).unwrap();
    let table = KeyedLimiter::new(&one_a_second(), 4).unwrap();
    send_sync(&limiter.reserve_cancellable_at(1, AT_0, SECOND).unwrap());
    send_sync(&table.reserve_cancellable_at(b"k", 1, AT_0, SECOND).unwrap());
}
