//! A limiter's paths through the clock, its hint and its live changes, on made-up times.

use super::*;
use crate::time::fake::FakeTime;
use crate::Instant;
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;
const HOUR: u64 = 3600 * SECOND;

fn gcra(limit: u64, period_ns: u64, burst: u64) -> Limiter {
    Limiter::new(&Config::gcra(limit, Duration::from_nanos(period_ns)).with_burst(burst)).unwrap()
}

#[test]
fn a_bucket_at_the_clock_reads_the_precise_time_first() {
    // A unit per nanosecond: each admission leaves the TAT a nanosecond past its
    // time, so every call needs the precise time, and after the first reads it first.
    let limiter = gcra(SECOND, SECOND, SECOND);
    assert!(!limiter.hint.precise_first(), "a fresh limiter peeks first");
    for _ in 0..100 {
        assert!(limiter.try_acquire(1).unwrap());
    }
    assert!(limiter.hint.precise_first());
}

#[test]
fn read_precise_first_a_bucket_admits_exactly_its_burst() {
    // 1 per hour, burst 3, the hint forced to the precise clock before every call: the
    // same 3 admissions as any other path (tests/gcra.rs), denials included.
    let limiter = gcra(1, HOUR, 3);
    let admitted = (0..10)
        .filter(|_| {
            limiter.hint.set(true);
            limiter.try_acquire(1).unwrap()
        })
        .count();
    assert_eq!(admitted, 3);
}

#[test]
fn a_tat_beyond_the_coarse_bounds_hands_back_to_the_coarse_clock() {
    let limiter = gcra(1, HOUR, 3);
    limiter.hint.set(true);
    // Decided on a fresh (zero) TAT: nothing the coarse clock could have settled.
    assert!(limiter.try_acquire(1).unwrap());
    assert!(limiter.hint.precise_first());
    // Decided on a TAT an hour ahead, past any coarse slack (at most 256 ms) unless
    // this host's coarse clock is not used at all.
    assert!(limiter.try_acquire(1).unwrap());
    let coarse_used = Monotonic.slack().is_some();
    assert_eq!(limiter.hint.precise_first(), !coarse_used);
}

#[test]
fn threads_flipping_the_hint_admit_exactly_the_burst() {
    // 4 threads, 1,000 calls each, on a bucket of 1,000 per hour; each thread forces
    // the precise path on every 7th call, so the two paths race on one TAT.
    let limiter = gcra(1, HOUR, 1000);
    let admitted: usize = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..4)
            .map(|thread| {
                let limiter = &limiter;
                scope.spawn(move || {
                    (0..1000)
                        .filter(|call| {
                            if call % 7 == thread {
                                limiter.hint.set(true);
                            }
                            limiter.try_acquire(1).unwrap()
                        })
                        .count()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    assert_eq!(admitted, 1000);
}

const MS: u64 = 1_000_000;

/// On a fake clock with 8 ms bounds: a fresh bucket needs the exact time (its new TAT
/// is `now + T`), the hint then reads it first once, finds the TAT past the bounds and
/// hands back, and from then on decisions are settled on one coarse reading unless
/// the unit falls due within the bounds; in all, exactly the burst is admitted.
#[test]
fn a_busy_bucket_is_decided_on_the_coarse_clock_alone() {
    // T = 100 ms, burst 10: τ = 1 s.
    let limiter = gcra(10, SECOND, 10);
    let time = FakeTime::new(Some(4 * MS));
    time.set(SECOND, SECOND + 2 * MS);
    assert!(limiter.try_acquire_by(&time, 1).unwrap());
    assert_eq!(time.take_reads(), (0, 1), "fresh: exact only");
    assert!(limiter.hint.precise_first());
    assert!(limiter.try_acquire_by(&time, 1).unwrap());
    assert_eq!(
        time.take_reads(),
        (0, 1),
        "the hint reads the exact clock first"
    );
    assert!(
        !limiter.hint.precise_first(),
        "TAT 1.102 s is past 1.002 s + 8 ms"
    );
    // TAT 1.202 s; the 3rd..9th units are due at TAT + T − τ ≤ 1 s, the bounds'
    // earliest, and the bounds end before the TAT: settled, coarse only.
    for unit in 3..=9 {
        assert!(limiter.try_acquire_by(&time, 1).unwrap(), "unit {unit}");
        assert_eq!(time.take_reads(), (1, 0), "unit {unit}");
    }
    // The 10th falls due at 1.002 s, within the bounds [1.000, 1.008] s: exact.
    assert!(limiter.try_acquire_by(&time, 1).unwrap());
    assert_eq!(time.take_reads(), (1, 1));
    // TAT 2.002 s. The hint reads the exact time first once more, and hands back.
    assert!(!limiter.try_acquire_by(&time, 1).unwrap());
    assert_eq!(time.take_reads(), (0, 1));
    // The 12th is due at 1.102 s, after the bounds' latest: denied on them alone.
    assert!(!limiter.try_acquire_by(&time, 1).unwrap());
    assert_eq!(time.take_reads(), (1, 0));
    let query = limiter
        .acquire_at(0, Instant::from_nanos(SECOND + 2 * MS))
        .unwrap();
    assert_eq!((query.remaining, query.reset_after_ns), (0, SECOND));
}

/// An idle bucket (a unit per nanosecond, called less often) needs the exact time at
/// every call: after the first, the hint has it read first and no coarse read is made.
#[test]
fn an_idle_bucket_reads_only_the_exact_clock() {
    let limiter = gcra(SECOND, SECOND, SECOND);
    let time = FakeTime::new(Some(4 * MS));
    for call in 0..100 {
        let now = SECOND + 10 * call;
        time.set(now - MS, now);
        assert!(limiter.try_acquire_by(&time, 1).unwrap());
        assert_eq!(time.take_reads(), (0, 1), "call {call}");
    }
    assert!(limiter.hint.precise_first());
}

/// A decision the bounds cannot settle (they straddle a fixed window's edge) reads the
/// exact clock after them. Found past the bounds while a fresh coarse reading still
/// lags by more than the slack, it proves a late tick, and the slack becomes twice the
/// lag; past the bounds with a coarse reading that caught up, it was a thread
/// descheduled between the reads, and the slack stays.
#[test]
fn a_late_tick_seen_by_try_acquire_widens_the_bounds() {
    let limiter = Limiter::new(&Config::fixed_window(10, Duration::from_secs(1))).unwrap();
    let time = FakeTime::new(Some(4 * MS));
    // Bounds [996, 1004] ms straddle the edge at 1 s; the exact time is 1,016 ms.
    time.set_with_recheck(996 * MS, 1016 * MS, 1012 * MS);
    assert!(limiter.try_acquire_by(&time, 1).unwrap());
    assert_eq!(time.take_reads(), (2, 1), "bounds, exact, recheck");
    assert_eq!(time.slack(), Some(8 * MS), "1,016 ≤ 1,012 + 8: descheduled");
    // Counted in the window of its exact time, as an acquire then would be.
    assert_eq!(
        limiter
            .acquire_at(0, Instant::from_nanos(1016 * MS))
            .unwrap()
            .remaining,
        9
    );
    // Bounds [1,996, 2,004] ms straddle the edge at 2 s; exact 2,016 ms, and a fresh
    // coarse reading of 1,998 ms.
    time.set_with_recheck(1996 * MS, 2016 * MS, 1998 * MS);
    assert!(limiter.try_acquire_by(&time, 1).unwrap());
    assert_eq!(time.slack(), Some(36 * MS), "lag 18 ms proven: twice that");
    assert_eq!(
        limiter
            .acquire_at(0, Instant::from_nanos(2016 * MS))
            .unwrap()
            .remaining,
        9
    );
}
