//! The Rust API's types for time (docs/rust.md, the types): periods and waits are
//! `Duration`s, saturated to the timeline's `u64::MAX` ns; explicit times are `Instant`s.

use librate::{Config, Decision, Instant, Limiter};
use std::time::Duration;

/// A rule can be a `const`: the constructors are `const fn`.
const API: Config = Config::per_minute(600).with_burst(10);

#[test]
fn a_period_is_kept_in_whole_nanoseconds_and_saturates_to_forever() {
    let period = Duration::from_nanos(1_500);
    assert_eq!(Config::gcra(1, period).period(), period);
    assert_eq!(Config::FOREVER, Duration::from_nanos(u64::MAX));
    // One nanosecond past the timeline, and the longest Duration, are both FOREVER.
    let past = Duration::from_nanos(u64::MAX) + Duration::from_nanos(1);
    assert_eq!(Config::fixed_window(3, past).period(), Config::FOREVER);
    assert_eq!(
        Config::sliding_log(3, Duration::MAX),
        Config::sliding_log(3, Config::FOREVER)
    );
}

#[test]
fn the_rate_helpers_are_gcra_over_a_second_a_minute_an_hour() {
    assert_eq!(
        Config::per_second(5),
        Config::gcra(5, Duration::from_secs(1))
    );
    assert_eq!(
        Config::per_minute(5),
        Config::gcra(5, Duration::from_secs(60))
    );
    assert_eq!(
        Config::per_hour(5),
        Config::gcra(5, Duration::from_secs(3600))
    );
    assert_eq!(API.period(), Duration::from_secs(60));
    assert_eq!((API.limit, API.burst), (600, 10));
}

#[test]
fn an_instant_is_nanoseconds_and_saturates_at_both_ends() {
    let t = Instant::from_nanos(7);
    assert_eq!(t.as_nanos(), 7);
    assert_eq!((t + Duration::from_nanos(3)).as_nanos(), 10);
    assert_eq!((t - Duration::from_nanos(3)).as_nanos(), 4);
    assert_eq!(t - Duration::from_nanos(8), Instant::ZERO);
    assert_eq!(
        Instant::from_nanos(u64::MAX - 1) + Duration::from_nanos(2),
        Instant::MAX
    );
    assert_eq!(Instant::ZERO + Duration::MAX, Instant::MAX);
    let mut later = t;
    later += Duration::from_nanos(5);
    assert_eq!(later, Instant::from_nanos(12));
    assert_eq!(
        t.checked_add(Duration::from_nanos(u64::MAX - 7)),
        Some(Instant::MAX)
    );
    assert_eq!(t.checked_add(Duration::from_nanos(u64::MAX - 6)), None);
    assert_eq!(Instant::ZERO.checked_add(Duration::MAX), None);
}

#[test]
fn the_span_between_instants_is_a_duration() {
    let (a, b) = (Instant::from_nanos(10), Instant::from_nanos(25));
    assert_eq!(b - a, Duration::from_nanos(15));
    assert_eq!(a - b, Duration::ZERO);
    assert_eq!(b.checked_duration_since(a), Some(Duration::from_nanos(15)));
    assert_eq!(a.checked_duration_since(b), None);
    assert_eq!(a.saturating_duration_since(b), Duration::ZERO);
    assert!(a < b);
    assert_eq!(format!("{b:?}"), "Instant(25ns)");
}

#[test]
fn a_decision_reads_its_durations() {
    // GCRA, 1 per 2 s, burst 1 (docs/decision.md's example): at 999 ms, TAT = 2000 ms,
    // so the retry and the reset are both 1001 ms away.
    let bob = Limiter::new(&Config::gcra(1, Duration::from_secs(2))).unwrap();
    assert!(bob.acquire_at(1, Instant::ZERO).unwrap().allowed);
    let denied = bob
        .acquire_at(1, Instant::ZERO + Duration::from_millis(999))
        .unwrap();
    assert_eq!(denied.retry_after(), Duration::from_millis(1001));
    assert_eq!(denied.reset_after(), Duration::from_millis(1001));
    assert_eq!(denied.wait(), Duration::ZERO);
    // 10 a second, burst 1: the second reserve at 0 waits one emission interval.
    let shaper = Limiter::new(&Config::per_second(10).with_burst(1)).unwrap();
    let max_wait = Duration::from_millis(500);
    assert_eq!(
        shaper
            .reserve_at(1, Instant::ZERO, max_wait)
            .unwrap()
            .wait(),
        Duration::ZERO
    );
    let queued = shaper.reserve_at(1, Instant::ZERO, max_wait).unwrap();
    assert_eq!(queued.wait(), Duration::from_millis(100));
}

#[test]
fn never_is_the_whole_timeline() {
    assert_eq!(Decision::NEVER, Config::FOREVER);
    let trial = Limiter::new(&Config::fixed_window(1, Config::FOREVER)).unwrap();
    assert!(trial.acquire_at(1, Instant::ZERO).unwrap().allowed);
    let denied = trial.acquire_at(1, Instant::MAX).unwrap();
    assert_eq!(
        (denied.retry_after(), denied.reset_after()),
        (Decision::NEVER, Decision::NEVER)
    );
    assert_eq!(denied.retry_after_ns, u64::MAX);
}
