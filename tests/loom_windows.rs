//! loom models of the window algorithms: every interleaving (up to the preemption bound)
//! of 2–3 threads on one limiter.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom
//! cargo test --release --test loom_windows`

#![cfg(loom)]

mod common;
use common::at;

use librate::{Config, Decision, Instant, Limiter};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

/// Runs one acquire per `(n, now)` on its own thread, all at once; returns the decisions
/// in the same order.
fn race(limiter: &Arc<Limiter>, requests: &[(u64, u64)]) -> Vec<Decision> {
    race_with(limiter, requests, || ())
}

/// [`race`], running `meanwhile` on this thread while the acquires run.
fn race_with(
    limiter: &Arc<Limiter>,
    requests: &[(u64, u64)],
    meanwhile: impl FnOnce(),
) -> Vec<Decision> {
    let threads: Vec<_> = requests
        .iter()
        .map(|&(n, now)| {
            let limiter = Arc::clone(limiter);
            thread::spawn(move || limiter.acquire_at(n, at(now)).unwrap())
        })
        .collect();
    meanwhile();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn admitted(decisions: &[Decision]) -> usize {
    decisions.iter().filter(|d| d.allowed).count()
}

fn remaining(limiter: &Limiter, now: u64) -> u64 {
    limiter.acquire_at(0, at(now)).unwrap().remaining
}

#[test]
fn three_threads_never_admit_more_than_the_limit() {
    for config in [
        Config::fixed_window(2, Duration::from_nanos(10)),
        Config::sliding_window(2, Duration::from_nanos(10)),
        Config::sliding_log(2, Duration::from_nanos(10)),
    ] {
        loom::model(move || {
            let limiter = Arc::new(Limiter::new(&config).unwrap());
            let decisions = race(&limiter, &[(1, 5), (1, 5), (1, 5)]);
            assert_eq!(admitted(&decisions), 2, "{config:?}");
            assert_eq!(remaining(&limiter, 5), 0, "{config:?}");
        });
    }
}

#[test]
fn fixed_window_roll_over_racing_an_increment_loses_no_count() {
    loom::model(|| {
        // L = 2 per 10 ns; one unit already in window 0.
        let limiter =
            Arc::new(Limiter::new(&Config::fixed_window(2, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(1, at(5)).unwrap().allowed);
        // One increment in window 0 against two requests in window 1.
        let decisions = race(&limiter, &[(1, 8), (1, 15), (1, 15)]);
        // An admitted request says which window it counted in: reset_after is the time to
        // the end of that window (10 for window 0, 20 for window 1).
        let in_window = |end: u64| {
            decisions
                .iter()
                .zip([8, 15, 15])
                .filter(|(d, t)| d.allowed && t + d.reset_after_ns == end)
                .count() as u64
        };
        let (in_first, in_second) = (in_window(10), in_window(20));
        assert_eq!(in_first + in_second, admitted(&decisions) as u64);
        assert!(in_first <= 1 && in_second <= 2);
        // Window 1 holds exactly the units counted in it; none lost, none doubled.
        assert_eq!(remaining(&limiter, 15), 2 - in_second);
        // Both requests in window 1 are admitted unless the late window-0 request was
        // moved into window 1 (it then took a unit there).
        assert_eq!(in_second, 2);
    });
}

#[test]
fn sliding_window_roll_over_keeps_the_previous_count() {
    loom::model(|| {
        // L = 2 per 10 ns; window 0 full.
        let limiter =
            Arc::new(Limiter::new(&Config::sliding_window(2, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(2, at(5)).unwrap().allowed);
        // At 15 the 2 from window 0 weigh 2·5/10 = 1: one of the two fits. The request at
        // 9 (window 0, or window 1's start once it rolled over) never fits.
        let decisions = race(&limiter, &[(1, 15), (1, 15), (1, 9)]);
        assert_eq!(admitted(&decisions), 1);
        assert!(!decisions[2].allowed);
        // The roll-over recorded window 0's 2: they still weigh ⌈2·1/10⌉ = 1 at 19.
        assert_eq!(remaining(&limiter, 19), 0);
        // In window 2 the previous count is window 1's 1.
        assert_eq!(remaining(&limiter, 20), 1);
        assert_eq!(remaining(&limiter, 30), 2);
    });
}

#[test]
fn sliding_log_never_claims_a_slot_twice() {
    loom::model(|| {
        // L = 2 per 10 ns; the ring is full of entries at 0, which expire at 10.
        let limiter =
            Arc::new(Limiter::new(&Config::sliding_log(2, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(2, Instant::ZERO).unwrap().allowed);
        // Two units at 10 and 11: both fit, and each must land in its own slot. (Three
        // threads here take loom minutes instead of a second, for no new interleaving of a
        // claim: the frozen-time test above already races three claimers.)
        let decisions = race(&limiter, &[(1, 10), (1, 11)]);
        assert_eq!(admitted(&decisions), 2);
        // Each admission logged its unit at now + reset_after − P. Both entries must be in
        // the ring: it is full until the first expires and empty once both have.
        let mut logged: Vec<u64> = decisions
            .iter()
            .zip([10, 11])
            .filter(|(d, _)| d.allowed)
            .map(|(d, t)| t + d.reset_after_ns - 10)
            .collect();
        logged.sort_unstable();
        assert_eq!(remaining(&limiter, logged[0] + 9), 0);
        assert_eq!(
            remaining(&limiter, logged[1] + 9),
            u64::from(logged[0] < logged[1])
        );
        assert_eq!(remaining(&limiter, logged[1] + 10), 2);
    });
}

#[test]
fn sliding_log_reader_of_a_pending_slot_never_over_admits() {
    loom::model(|| {
        // L = 1 per 10 ns: every request needs the newest entry, often still pending, and
        // the slot still holds the entry at 0 until the new one is written.
        let limiter =
            Arc::new(Limiter::new(&Config::sliding_log(1, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
        let decisions = race(&limiter, &[(1, 10), (1, 15)]);
        // Only one fits in any 10 ns; trusting the stale 0 would admit both.
        assert_eq!(admitted(&decisions), 1);
        // The one admitted logged its unit at now + reset_after − P.
        let (d, t) = decisions
            .iter()
            .zip([10, 15])
            .find(|(d, _)| d.allowed)
            .unwrap();
        let logged = t + d.reset_after_ns - 10;
        assert!(logged == 10 || logged == 15, "{logged}");
        assert_eq!(remaining(&limiter, logged + 9), 0);
        assert_eq!(remaining(&limiter, logged + 10), 1);
    });
}

/// Two acquires of one unit at `now` racing a reset of `limiter` (on this thread): how
/// many units they admitted, and how many remain at `now` once all is done.
fn race_a_reset(limiter: &Arc<Limiter>, now: u64) -> (u64, u64) {
    let decisions = race_with(limiter, &[(1, now), (1, now)], || limiter.reset());
    (admitted(&decisions) as u64, remaining(limiter, now))
}

#[test]
fn a_reset_racing_acquires_decides_each_before_or_after_it() {
    for config in [
        Config::fixed_window(1, Duration::from_nanos(10)),
        Config::sliding_window(1, Duration::from_nanos(10)),
        Config::sliding_log(1, Duration::from_nanos(10)),
    ] {
        loom::model(move || {
            // L = 1, used up in window 1: before the reset nothing fits, after it one
            // unit does (the sliding window's first admission after it bars window 0).
            let limiter = Arc::new(Limiter::new(&config).unwrap());
            assert!(limiter.acquire_at(1, at(15)).unwrap().allowed);
            let (admitted, left) = race_a_reset(&limiter, 15);
            // Every admitted unit came after the reset and is still counted.
            assert_eq!(admitted + left, 1, "{config:?}");
        });
    }
}

#[test]
fn a_reset_racing_a_roll_over_never_admits_more_than_either_order() {
    loom::model(|| {
        // L = 2 per 10 ns; window 0 full. At 15 its 2 weigh 2·5/10 = 1: one unit fits
        // before the reset, two after it. A roll-over in flight across the reset may
        // record window 0's count as it stood before the reset, which then still weighs in
        // window 1 (module docs of state/window_records.rs, "What no barrier covers"):
        // that can deny more, never admit more.
        let limiter =
            Arc::new(Limiter::new(&Config::sliding_window(2, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(2, at(5)).unwrap().allowed);
        let (admitted, left) = race_a_reset(&limiter, 15);
        // At 20 (window 2, its start) window 1 weighs in full: exactly the units counted
        // there after the reset.
        let after = 2 - remaining(&limiter, 20);
        assert!(
            admitted >= after && admitted - after <= 1,
            "{admitted} {after}"
        );
        // At 15 window 0 weighs nothing after an exact reset, or what the roll-over saw.
        assert!(left <= 2 - after, "{left} {after}");
    });
}

#[test]
fn a_reset_racing_claims_of_the_log_keeps_only_what_came_after_it() {
    loom::model(|| {
        // L = 2 per 10 ns, full of entries at 0: before the reset nothing fits, after it
        // two units, logged at 5.
        let limiter =
            Arc::new(Limiter::new(&Config::sliding_log(2, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(2, Instant::ZERO).unwrap().allowed);
        let (admitted, left) = race_a_reset(&limiter, 5);
        assert_eq!(admitted + left, 2);
        assert_eq!(remaining(&limiter, 14), left);
        assert_eq!(remaining(&limiter, 15), 2);
    });
}

#[test]
fn an_admission_racing_a_reset_of_the_log_reports_from_one_side_of_it() {
    loom::model(|| {
        // L = 2 per 10 ns, one entry at 0: a unit at 5 fits before the reset (leaving
        // none) and after it (leaving one). Its report and the log left must agree on
        // which: decided before the reset and then erased, or after it and still counted.
        let limiter =
            Arc::new(Limiter::new(&Config::sliding_log(2, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
        let decision = race_with(&limiter, &[(1, 5)], || limiter.reset())[0];
        assert!(decision.allowed);
        let sides = (decision.remaining, remaining(&limiter, 5));
        assert!(sides == (0, 2) || sides == (1, 1), "{sides:?}");
    });
}

#[test]
fn racing_first_admissions_out_of_a_reset_word_lose_no_count() {
    loom::model(|| {
        // L = 2 per 10 ns, reset in window 1 after 2 units there. A request at 15 (window
        // 1) and one at 25 (window 2) race out of the reset word. Either order admits both
        // and leaves nothing at 25: at 15 first, window 2 holds 1 and window 1's 1 weighs
        // ⌈1·5/10⌉ = 1; at 25 first, the one at 15 is judged at 20 and counted in window
        // 2 too. Neither may lose the count window 1 records when it closes.
        let limiter =
            Arc::new(Limiter::new(&Config::sliding_window(2, Duration::from_nanos(10))).unwrap());
        assert!(limiter.acquire_at(2, at(15)).unwrap().allowed);
        limiter.reset();
        let decisions = race(&limiter, &[(1, 15), (1, 25)]);
        assert_eq!(admitted(&decisions), 2);
        assert_eq!(remaining(&limiter, 25), 0);
    });
}
