//! Resets (`Limiter::reset`, `KeyedLimiter::reset`) and a keyed table's statistics, in
//! process and in files that real processes share.
#![cfg(not(loom))]

use librate::{Config, Decision, Instant, KeyedAcquireError, KeyedLimiter, Limiter, ReserveError};
use std::time::Duration;

mod common;

use common::processes::{in_processes, rewrite_word, Scratch};
use common::{at, Rng, SECOND};

const HOUR: u64 = 3600 * SECOND;
/// The frozen time the table tests decide at.
const FROZEN: u64 = 1_000 * SECOND;

fn decision(limiter: &Limiter, n: u64, now: u64) -> Decision {
    limiter.acquire_at(n, at(now)).unwrap()
}

/// `(allowed, remaining, retry_after_ns, reset_after_ns)`: the fields the cases check.
fn fields(d: Decision) -> (bool, u64, u64, u64) {
    (d.allowed, d.remaining, d.retry_after_ns, d.reset_after_ns)
}

/// GCRA, 1 per second with bursts of 2 (T = 1 s, τ = 2 s): a drained bucket, reset, is
/// full again, at the time it was drained and before it.
#[test]
fn a_reset_gcra_bucket_is_full_at_any_time() {
    let limiter = Limiter::new(&Config::per_second(1).with_burst(2)).unwrap();
    assert!(decision(&limiter, 2, 0).allowed);
    // TAT 2 s: at 0.5 s, 2 + 1 − 0.5 > 2, denied until 1 s.
    assert_eq!(
        fields(decision(&limiter, 1, SECOND / 2)),
        (false, 0, SECOND / 2, 3 * SECOND / 2)
    );
    limiter.reset();
    // Fresh: TAT 0.5 + 1 = 1.5 s, so 1 unit of room left and full again 1 s later.
    assert_eq!(
        fields(decision(&limiter, 1, SECOND / 2)),
        (true, 1, 0, SECOND)
    );
    limiter.reset();
    assert_eq!(fields(decision(&limiter, 2, 0)), (true, 0, 0, 2 * SECOND));
}

/// Fixed window, 2 per minute: reset mid-window, the window is empty again, and so is an
/// earlier one.
#[test]
fn a_reset_fixed_window_counts_nothing_at_any_time() {
    let limiter = Limiter::new(&Config::fixed_window(2, Duration::from_secs(60))).unwrap();
    assert!(decision(&limiter, 2, 24 * SECOND).allowed);
    assert!(!decision(&limiter, 1, 36 * SECOND).allowed);
    limiter.reset();
    assert_eq!(
        fields(decision(&limiter, 1, 36 * SECOND)),
        (true, 1, 0, 24 * SECOND)
    );
    limiter.reset();
    assert_eq!(fields(decision(&limiter, 2, 0)), (true, 0, 0, 60 * SECOND));
}

/// Sliding window counter, 10 per minute: after a reset neither the current window's count
/// nor the previous one's weighs; the counts after it roll over as a new limiter's do. A
/// request from a window before the latest is judged at that window's start.
#[test]
fn a_reset_sliding_window_forgets_both_windows() {
    let limiter = Limiter::new(&Config::sliding_window(10, Duration::from_secs(60))).unwrap();
    assert!(decision(&limiter, 9, 30 * SECOND).allowed);
    // At 75 s the 9 of window 0 weigh 9·45/60 = 6.75: 3 fit.
    assert!(decision(&limiter, 3, 75 * SECOND).allowed);
    assert!(!decision(&limiter, 1, 75 * SECOND).allowed);
    limiter.reset();
    // Window 0's 9 weigh nothing now: 5 fit with 5 left, and both counts are 0 again at
    // the start of window 3 (180 s). At 80 s window 0's record would weigh 9·40/60 = 6
    // (the first admission after the reset bars it), so 5 are still left.
    assert_eq!(
        fields(decision(&limiter, 5, 75 * SECOND)),
        (true, 5, 0, 105 * SECOND)
    );
    assert_eq!(decision(&limiter, 0, 80 * SECOND).remaining, 5);
    assert!(decision(&limiter, 5, 80 * SECOND).allowed);
    // Window 2 at 130 s: window 1's 10 weigh 10·50/60 = 8.33, ⌈⌉ 9, so 1 is left.
    assert_eq!(decision(&limiter, 0, 130 * SECOND).remaining, 1);
    limiter.reset();
    // Window 1 is the latest admission's: 30 s is judged at 60 s, and a unit counted in
    // window 1 weighs until window 3 (180 s).
    assert_eq!(
        fields(decision(&limiter, 1, 30 * SECOND)),
        (true, 9, 0, 150 * SECOND)
    );
    // Reset in window 1, next request in window 2: window 1's unit does not weigh there.
    limiter.reset();
    assert_eq!(
        fields(decision(&limiter, 10, 130 * SECOND)),
        (true, 0, 0, 110 * SECOND)
    );
}

/// Sliding log, 2 per minute: after a reset the log is empty; a request from before the
/// latest time logged is judged (and logged) at it.
#[test]
fn a_reset_sliding_log_is_empty_from_the_latest_time_on() {
    let limiter = Limiter::new(&Config::sliding_log(2, Duration::from_secs(60))).unwrap();
    assert!(decision(&limiter, 2, 10 * SECOND).allowed);
    assert_eq!(
        fields(decision(&limiter, 1, 20 * SECOND)),
        (false, 0, 50 * SECOND, 50 * SECOND)
    );
    limiter.reset();
    assert_eq!(
        fields(decision(&limiter, 2, 20 * SECOND)),
        (true, 0, 0, 60 * SECOND)
    );
    // Both logged at 20 s: the next unit fits at 80 s.
    assert_eq!(
        fields(decision(&limiter, 1, 50 * SECOND)),
        (false, 0, 30 * SECOND, 30 * SECOND)
    );
    limiter.reset();
    assert_eq!(
        fields(decision(&limiter, 1, 5 * SECOND)),
        (true, 1, 0, 75 * SECOND)
    );
    // A reset with nothing logged since the last one changes nothing.
    limiter.reset();
    limiter.reset();
    assert_eq!(decision(&limiter, 0, 30 * SECOND).remaining, 2);
}

fn all_algorithms(limit: u64, period_ns: u64) -> [Config; 4] {
    [
        Config::gcra(limit, Duration::from_nanos(period_ns)),
        Config::fixed_window(limit, Duration::from_nanos(period_ns)),
        Config::sliding_window(limit, Duration::from_nanos(period_ns)),
        Config::sliding_log(limit, Duration::from_nanos(period_ns)),
    ]
}

/// Random requests as `(n, now)`, `count` of them from `start`, times mostly growing (a
/// few step back, as racing callers' clocks do).
fn requests(rng: &mut Rng, limit: u64, start: u64, count: usize) -> Vec<(u64, u64)> {
    let mut now = start;
    (0..count)
        .map(|_| {
            now += rng.below(40);
            let t = if rng.chance(10) {
                now.saturating_sub(rng.below(30)).max(start)
            } else {
                now
            };
            (rng.below(limit + 1), t)
        })
        .collect()
}

/// For every algorithm, after any history and a reset, every decision from the latest
/// time seen on is the one a new limiter of the same configuration makes on the same
/// requests: a second reset part way starts the comparison over.
#[test]
fn after_a_reset_every_decision_is_a_new_limiters() {
    let mut rng = Rng::new(0x5EED_0FF5);
    for config in all_algorithms(4, 100) {
        for round in 0..300 {
            let limiter = Limiter::new(&config).unwrap();
            let length = rng.below(12) as usize;
            let history = requests(&mut rng, 4, 0, length);
            for &(n, now) in &history {
                decision(&limiter, n, now);
            }
            let latest = history.iter().map(|&(_, now)| now).max().unwrap_or(0);
            limiter.reset();
            let mut fresh = Limiter::new(&config).unwrap();
            let mut after = requests(&mut rng, 4, latest, 16);
            let second_reset = rng.below(16) as usize;
            // From the second reset on, times are again at least the latest seen.
            let seen = after[..second_reset].iter().map(|&(_, now)| now).max();
            for (_, now) in &mut after[second_reset..] {
                *now = (*now).max(seen.unwrap_or(0));
            }
            for (index, &(n, now)) in after.iter().enumerate() {
                if index == second_reset {
                    limiter.reset();
                    fresh = Limiter::new(&config).unwrap();
                }
                let case = format!("{config:?} round {round}: {history:?} then {after:?}");
                assert_eq!(
                    decision(&limiter, n, now),
                    decision(&fresh, n, now),
                    "{case}"
                );
            }
        }
    }
}

/// For every algorithm, a reset key decides as a key never seen, at any time (earlier than
/// its history too), in a private table and a shared one.
#[test]
fn a_reset_key_decides_as_a_new_key_at_any_time() {
    let scratch = Scratch::new("reset-keys");
    let mut rng = Rng::new(0xC0FF_EE00);
    for config in all_algorithms(4, 100) {
        let path = scratch.path(&format!("{:?}", config.algorithm));
        let tables = [
            // Room for every round's two former states (module docs of `reset`), which
            // stay live at the times before the history that the rounds come back to.
            KeyedLimiter::new(&config, 512).unwrap(),
            KeyedLimiter::open(&path, &config, 512).unwrap(),
        ];
        for table in &tables {
            for round in 0..200 {
                let key = format!("key-{round}");
                let length = rng.below(12) as usize;
                for &(n, now) in &requests(&mut rng, 4, 1000, length) {
                    table.acquire_at(key.as_bytes(), n, at(now)).unwrap();
                }
                table.reset(key.as_bytes()).unwrap();
                let fresh = KeyedLimiter::new(&config, 1).unwrap();
                // From 0: before the key's history as well as after it.
                for &(n, now) in &requests(&mut rng, 4, 0, 16) {
                    assert_eq!(
                        table.acquire_at(key.as_bytes(), n, at(now)).unwrap(),
                        fresh.acquire_at(b"new", n, at(now)).unwrap(),
                        "{config:?} round {round}"
                    );
                }
                table.reset(key.as_bytes()).unwrap();
            }
        }
    }
}

/// The README's example ("Resetting a limit, and table statistics"), line for line
/// (scripts/check-docs.py checks it).
#[test]
fn the_readme_example() {
    use librate::{Config, KeyedLimiter};
    const SECOND: u64 = 1_000_000_000;
    let users = KeyedLimiter::new(&Config::per_minute(1), 1000).unwrap();
    assert!(users.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed);
    assert!(!users.acquire_at(b"bob", 1, at(SECOND)).unwrap().allowed);
    users.reset(b"bob").unwrap(); // bob's ticket is resolved
    assert!(users.acquire_at(b"bob", 1, at(SECOND)).unwrap().allowed);
}

/// A reset of a key not in the table inserts nothing: a full table stays full, and the
/// key is refused as new.
#[test]
fn resetting_an_absent_key_inserts_nothing() {
    for config in all_algorithms(1, HOUR) {
        // Capacity 1: two slots.
        let table = KeyedLimiter::new(&config, 1).unwrap();
        for key in [b"a", b"b"] {
            assert!(table.acquire_at(key, 1, at(FROZEN)).unwrap().allowed);
        }
        table.reset(b"c").unwrap();
        table.reset(b"").unwrap();
        assert_eq!(table.live_keys_at(at(FROZEN)), 2, "{config:?}");
        assert_eq!(
            table.acquire_at(b"c", 1, at(FROZEN)),
            Err(KeyedAcquireError::TableFull)
        );
        // The keys in the table are as they were.
        assert!(!table.acquire_at(b"a", 1, at(FROZEN)).unwrap().allowed);
    }
}

/// A reset key's former state keeps its slot until it is fresh: in a table whose other
/// slot is live, the key is refused as new until then, and admitted from then on.
#[test]
fn a_reset_keys_former_state_holds_its_slot_until_fresh() {
    // One per 10 s, burst 1: a TAT 10 s after each admission.
    let table = KeyedLimiter::new(&Config::gcra(1, Duration::from_secs(10)), 1).unwrap();
    assert!(table.acquire_at(b"a", 1, Instant::ZERO).unwrap().allowed);
    assert!(table.acquire_at(b"b", 1, Instant::ZERO).unwrap().allowed);
    table.reset(b"a").unwrap();
    assert_eq!(
        table.live_keys_at(Instant::ZERO),
        1,
        "a's former state is no key"
    );
    assert_eq!(
        table.acquire_at(b"a", 1, at(SECOND)),
        Err(KeyedAcquireError::TableFull)
    );
    // A query never inserts, so it needs no slot: a is new.
    assert_eq!(table.acquire_at(b"a", 0, at(SECOND)).unwrap().remaining, 1);
    // At 10 s the former state is fresh and its slot is reused.
    assert!(table.acquire_at(b"a", 1, at(10 * SECOND)).unwrap().allowed);
    assert_eq!(table.stats_at(at(10 * SECOND)).table_full, 1);
}

/// The statistics count every request refused as a new key in a full table (acquire,
/// try_acquire, reserve, batch), and nothing else: not a query, not a denial.
#[test]
fn statistics_count_every_refusal_of_a_new_key() {
    // The library clock's time, as try_acquire reads it: every key stays live for an hour.
    let now = librate::now_ns();
    for config in all_algorithms(1, HOUR) {
        let gcra = config.algorithm == librate::Algorithm::Gcra;
        // Capacity 2: four slots.
        let table = KeyedLimiter::new(&config, 2).unwrap();
        let fresh = table.stats_at(at(now));
        assert_eq!(
            (
                fresh.capacity,
                fresh.max_keys,
                fresh.live_keys,
                fresh.table_full
            ),
            (2, 4, 0, 0),
            "{config:?}"
        );
        for key in [b"a", b"b", b"c", b"d"] {
            assert!(table.acquire_at(key, 1, at(now)).unwrap().allowed);
        }
        for round in 1..=3 {
            assert_eq!(
                table.acquire_at(b"e", 1, at(now)),
                Err(KeyedAcquireError::TableFull)
            );
            assert_eq!(table.stats_at(at(now)).table_full, round, "{config:?}");
        }
        assert_eq!(
            table.try_acquire(b"f", 1),
            Err(KeyedAcquireError::TableFull)
        );
        let mut refused = 0;
        table
            .try_acquire_batch_at(&[b"g", b"a", b"h"], 1, at(now), |_, outcome| {
                refused += u64::from(outcome == Err(KeyedAcquireError::TableFull));
            })
            .unwrap();
        assert_eq!(refused, 2);
        if gcra {
            assert_eq!(
                table.reserve_at(b"i", 1, at(now), Duration::from_secs(1)),
                Err(ReserveError::Acquire(KeyedAcquireError::TableFull))
            );
        }
        // Neither a query of a new key nor a denial of an existing one is a refusal.
        assert!(table.acquire_at(b"j", 0, at(now)).unwrap().allowed);
        assert!(!table.acquire_at(b"a", 1, at(now)).unwrap().allowed);
        let expected = 3 + 1 + 2 + u64::from(gcra);
        let stats = table.stats_at(at(now));
        assert_eq!(
            (stats.live_keys, stats.table_full),
            (4, expected),
            "{config:?}"
        );
        // Two hours on every key is fresh (the windows': nothing in the current window or
        // the one before): none is live, and the count stays.
        let later = table.stats_at(at(now + 2 * HOUR));
        assert_eq!((later.live_keys, later.table_full), (0, expected));
    }
}

/// A shared table's refusals are counted in its file: every process's, seen by every
/// process, kept when the table is reset for a new boot (when its keys are not).
#[test]
fn a_shared_tables_refusals_are_counted_across_processes() {
    let scratch = Scratch::new("reset-stats");
    let path = scratch.path("table");
    let config = Config::per_hour(1);
    let table = KeyedLimiter::open(&path, &config, 1).unwrap();
    for key in [b"a", b"b"] {
        assert!(table.acquire_at(key, 1, at(FROZEN)).unwrap().allowed);
    }
    // Three processes each have 4 new keys refused.
    let statuses = in_processes(3, |process| {
        let table = KeyedLimiter::open(&path, &config, 1).unwrap();
        let refused = (0..4)
            .filter(|key| {
                let key = format!("new-{process}-{key}");
                table.acquire_at(key.as_bytes(), 1, at(FROZEN)) == Err(KeyedAcquireError::TableFull)
            })
            .count();
        refused as u8
    });
    assert_eq!(statuses, [4, 4, 4]);
    let stats = table.stats_at(at(FROZEN));
    assert_eq!((stats.live_keys, stats.table_full), (2, 12));
    drop(table);
    // Another boot: word 9 of the header is the boot id.
    rewrite_word(&path, 9, 0x0123_4567_89ab_cdef);
    let rebooted = KeyedLimiter::open(&path, &config, 1).unwrap();
    let stats = rebooted.stats_at(at(FROZEN));
    assert_eq!((stats.live_keys, stats.table_full), (0, 12));
}

/// A reset in one process is every process's: of a shared limiter, and of a key of a
/// shared table.
#[test]
fn a_reset_in_one_process_holds_in_all() {
    let scratch = Scratch::new("reset-shared");
    for config in all_algorithms(3, HOUR) {
        let limiter_path = scratch.path(&format!("limiter-{:?}", config.algorithm));
        let table_path = scratch.path(&format!("table-{:?}", config.algorithm));
        let limiter = Limiter::open(&limiter_path, &config).unwrap();
        let table = KeyedLimiter::open(&table_path, &config, 8).unwrap();
        assert!(limiter.acquire_at(3, at(FROZEN)).unwrap().allowed);
        assert!(table.acquire_at(b"bob", 3, at(FROZEN)).unwrap().allowed);
        let resets = in_processes(1, |_| {
            Limiter::open(&limiter_path, &config).unwrap().reset();
            let table = KeyedLimiter::open(&table_path, &config, 8).unwrap();
            table.reset(b"bob").unwrap();
            0
        });
        assert_eq!(resets, [0]);
        assert_eq!(
            limiter.acquire_at(0, at(FROZEN)).unwrap().remaining,
            3,
            "{config:?}"
        );
        assert_eq!(
            table.acquire_at(b"bob", 0, at(FROZEN)).unwrap().remaining,
            3
        );
        assert_eq!(table.live_keys_at(at(FROZEN)), 0, "{config:?}");
    }
}

/// Threads acquire one key (and a limiter) at a frozen time while another resets it over
/// and over: every acquire is decided before or after some reset, so at most `limit`
/// units are admitted between two resets, and no call hangs or fails.
#[test]
fn resets_racing_acquires_admit_at_most_a_limit_between_resets() {
    const RESETS: u64 = 200;
    for config in all_algorithms(8, HOUR) {
        let limiter = Limiter::new(&config).unwrap();
        // Room for a former state per reset: at a frozen time none turns fresh.
        let table = KeyedLimiter::new(&config, RESETS).unwrap();
        let (admitted, keyed_admitted) = std::thread::scope(|scope| {
            let acquirers: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        let mut admitted = (0, 0);
                        for _ in 0..2_000 {
                            admitted.0 += u64::from(decision(&limiter, 1, FROZEN).allowed);
                            admitted.1 +=
                                u64::from(table.acquire_at(b"k", 1, at(FROZEN)).unwrap().allowed);
                        }
                        admitted
                    })
                })
                .collect();
            for _ in 0..RESETS {
                limiter.reset();
                table.reset(b"k").unwrap();
                std::thread::yield_now();
            }
            acquirers
                .into_iter()
                .map(|t| t.join().unwrap())
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        });
        // Each reset lets at most 8 more through.
        assert!(admitted <= 8 * (RESETS + 1), "{config:?}: {admitted}");
        assert!(
            keyed_admitted <= 8 * (RESETS + 1),
            "{config:?}: {keyed_admitted}"
        );
        // The state left is whole: what a query says remains is exactly what is admitted.
        let remaining = limiter.acquire_at(0, at(FROZEN)).unwrap().remaining;
        let taken = (0..9)
            .filter(|_| decision(&limiter, 1, FROZEN).allowed)
            .count();
        assert_eq!(taken as u64, remaining, "{config:?}");
        let remaining = table.acquire_at(b"k", 0, at(FROZEN)).unwrap().remaining;
        let taken = (0..9)
            .filter(|_| table.acquire_at(b"k", 1, at(FROZEN)).unwrap().allowed)
            .count();
        assert_eq!(taken as u64, remaining, "{config:?}");
        assert!(table.live_keys_at(at(FROZEN)) <= 1, "{config:?}");
    }
}
