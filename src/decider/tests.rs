//! Every algorithm through the one decider interface, checked against hand-computed decisions.

use super::*;
use crate::state::{owned, Owned, Settle, TryAcquire};
use crate::time::fake::FakeTime;
use crate::time::Bounds;
use std::time::Duration;

/// Histories (time, units) the settling tests start from.
const HISTORIES: [&[(u64, u64)]; 5] = [
    &[],
    &[(40, 1)],
    &[(40, 1), (90, 1)],
    &[(50, 3), (150, 1)],
    &[(120, 2), (130, 1)],
];

/// A fresh state of `decider` after `history`'s acquires.
fn prepared(decider: &Decider, history: &[(u64, u64)]) -> Vec<AtomicU64> {
    let state: Vec<AtomicU64> = (0..decider.state_words())
        .map(|_| AtomicU64::new(0))
        .collect();
    for &(t, n) in history {
        owned(decider.acquire_at(&state, &Owned, t, n, 0));
    }
    state
}

fn words(state: &[AtomicU64]) -> Vec<u64> {
    state.iter().map(|w| w.load(Ordering::Relaxed)).collect()
}

/// The windows of a window counter (fixed or sliding), whose packed current word
/// alone can show a request denied; `None` for the other algorithms.
fn counter_windows(decider: &Decider) -> Option<&Windows> {
    match decider {
        Decider::FixedWindow(fixed) => Some(&fixed.0),
        Decider::SlidingWindow(sliding) => Some(&sliding.0),
        Decider::Gcra(_) | Decider::SlidingLog(_) | Decider::Allowance(_) => None,
    }
}

/// For every algorithm but the log (next test), from several states: whenever
/// `settle` decides an interval, acquiring at each instant in it gives the same
/// outcome and the same new state; and whenever a counter's `full_through` denies, so
/// does an acquire at every instant.
#[test]
fn settle_agrees_with_acquire_at_every_instant() {
    let configs = [
        Config::gcra(4, Duration::from_nanos(400)),
        Config::fixed_window(3, Duration::from_nanos(100)),
        Config::sliding_window(4, Duration::from_nanos(100)),
    ];
    for config in configs {
        let decider = Decider::new(&config).unwrap();
        let prepared = |history: &[(u64, u64)]| prepared(&decider, history);
        let (mut admits, mut denials, mut shortcut_denials) = (0, 0, 0);
        for history in HISTORIES {
            for earliest in (0..450).step_by(11) {
                for width in [0u64, 6, 40, 150] {
                    for n in 1..=3 {
                        let latest = earliest + width;
                        let state = prepared(history);
                        let full = counter_windows(&decider).is_some_and(|windows| {
                            windows.full_through(state[0].load(Ordering::Relaxed), latest, n)
                        });
                        if full {
                            shortcut_denials += 1;
                            for t in earliest..=latest {
                                let state = prepared(history);
                                let precise = owned(decider.acquire_at(&state, &Owned, t, n, 0));
                                assert!(!precise.allowed, "{config:?} {t}");
                            }
                        }
                        let bounds = Bounds { earliest, latest };
                        let Some(settled) =
                            owned(decider.swap(&state, &Owned, Settle { bounds, n }))
                        else {
                            continue;
                        };
                        if settled {
                            admits += 1;
                        } else {
                            denials += 1;
                        }
                        let after = words(&state);
                        for t in earliest..=latest {
                            let state = prepared(history);
                            let precise = owned(decider.acquire_at(&state, &Owned, t, n, 0));
                            assert_eq!(precise.allowed, settled, "{config:?} {t}");
                            assert_eq!(words(&state), after, "{config:?} {t}");
                        }
                    }
                }
            }
        }
        assert!(
            admits >= 20 && denials >= 20,
            "{config:?}: {admits} {denials}"
        );
        // Only the counters have the shortcut, and it is used.
        let counter = matches!(decider, Decider::FixedWindow(_) | Decider::SlidingWindow(_));
        assert_eq!(
            shortcut_denials > 0,
            counter,
            "{config:?}: {shortcut_denials}"
        );
    }
}

/// The log's `try_acquire`, from several states, with the time known to lie within
/// bounds ending at `latest` and to be exactly `t`: whenever it decides without
/// reading the exact time, every `t` in the bounds gives that outcome and new state,
/// and whenever it reads it, the result is an acquire's at `t`. Both shortcuts are
/// exercised.
#[test]
fn the_log_decides_as_an_acquire_at_the_exact_time() {
    let decider = Decider::new(&Config::sliding_log(3, Duration::from_nanos(100))).unwrap();
    let (mut bounds_unread, mut exact_unread) = (0, 0);
    for history in HISTORIES {
        for earliest in (0..450).step_by(11) {
            for width in [0u64, 6, 40, 150] {
                for n in 1..=3 {
                    let latest = earliest + width;
                    // Bounds two wide, ending at `latest` (the only end the log uses).
                    let Some(coarse) = latest.checked_sub(2) else {
                        continue;
                    };
                    for t in earliest..=latest {
                        let state = prepared(&decider, history);
                        let time = FakeTime::new(Some(1));
                        time.set(coarse, t);
                        let allowed = owned(decider.try_acquire(&state, &Owned, &time, n));
                        let (bounds_read, exact_read) = time.take_reads();
                        let expected = prepared(&decider, history);
                        let at_t = owned(decider.acquire_at(&expected, &Owned, t, n, 0));
                        let case = format!("{history:?} [{earliest}, {latest}] n={n} t={t}");
                        assert_eq!(allowed, at_t.allowed, "{case}");
                        assert_eq!(words(&state), words(&expected), "{case}");
                        bounds_unread += u64::from(bounds_read == 0);
                        exact_unread += u64::from(exact_read == 0);
                    }
                }
            }
        }
    }
    assert!(
        bounds_unread > 1000 && exact_unread > 1000,
        "{bounds_unread} {exact_unread}"
    );
}

/// docs/keyed.md, reclaim: windows are fresh once nothing is counted in the current or previous
/// window, the log once every entry has expired.
#[test]
fn freshness_of_the_window_algorithms() {
    let cases: [(Config, &[u64], &[u64]); 3] = [
        // One unit admitted at 150 (window 1 of 100 ns).
        (
            Config::fixed_window(4, Duration::from_nanos(100)),
            &[0, 150, 299],
            &[300, 1000],
        ),
        (
            Config::sliding_window(4, Duration::from_nanos(100)),
            &[0, 150, 299],
            &[300, 1000],
        ),
        (
            Config::sliding_log(2, Duration::from_nanos(100)),
            &[0, 150, 249],
            &[250, 1000],
        ),
    ];
    for (config, live, fresh) in cases {
        let decider = Decider::new(&config).unwrap();
        let state: Vec<AtomicU64> = (0..decider.state_words())
            .map(|_| AtomicU64::new(0))
            .collect();
        assert!(decider.is_fresh(&state, 0) && decider.is_fresh(&state, 150));
        assert!(
            decider
                .acquire_at(&state, &Owned, 150, 1, 0)
                .unwrap()
                .allowed
        );
        for &now in live {
            assert!(!decider.is_fresh(&state, now), "{config:?} live at {now}");
        }
        for &now in fresh {
            assert!(decider.is_fresh(&state, now), "{config:?} fresh at {now}");
        }
    }
}

/// Words a state never holds when only this library writes it: anything at all, as a
/// file shared with other processes may hold. Every operation on such a state returns
/// a decision (whatever it is) without panicking, overflowing or looping: checked here
/// in a debug build, where arithmetic overflow panics.
#[test]
fn any_words_give_a_decision() {
    let configs = [
        Config::gcra(3, Duration::from_nanos(300)),
        Config::gcra(1, Duration::from_nanos(u64::MAX / 2)),
        Config::fixed_window(5, Duration::from_nanos(1000)),
        Config::fixed_window(1, Duration::from_nanos(3)),
        Config::sliding_window(5, Duration::from_nanos(1000)),
        Config::sliding_window(1, Duration::from_nanos(3)),
        Config::sliding_log(3, Duration::from_nanos(1000)),
        Config::sliding_log(1, Duration::from_nanos(2)),
    ];
    let mut random = Words(0x9E37_79B9_7F4A_7C15);
    for config in configs {
        let decider = Decider::new(&config).unwrap();
        for round in 0..20_000 {
            let words: Vec<u64> = (0..decider.state_words()).map(|_| random.pick()).collect();
            let state: Vec<AtomicU64> = words.iter().map(|&w| AtomicU64::new(w)).collect();
            let now = random.pick();
            let n = random.next() % (decider.limit() + 1);
            let case = format!("{config:?} round {round}: {words:?} now={now} n={n}");
            let decision = owned(decider.acquire_at(&state, &Owned, now, n, 0));
            assert!(
                decision.remaining <= decider.limit(),
                "{case}: {decision:?}"
            );
            if n > 0 {
                owned(decider.swap(&state, &Owned, TryAcquire { now, n }));
                let time = FakeTime::new(Some(1 + random.next() % 1000));
                let exact = random.pick();
                time.set(exact.saturating_sub(random.next() % 1000), exact);
                owned(decider.try_acquire(&state, &Owned, &time, n));
            }
            let _ = decider.is_fresh(&state, random.pick());
            if round % 2 == 0 {
                owned(decider.reset(&state, &Owned));
                owned(decider.acquire_at(&state, &Owned, now, n, 0));
            }
        }
    }
}

/// The premise of `generations.rs`: every rule that can be changed reads words a change
/// replaced (first word [`REPLACED`]) as a state that admits nothing, at any time,
/// reserve and coarse bounds included, and writes nothing there.
#[test]
fn replaced_words_admit_nothing() {
    use crate::replaced::REPLACED;
    let configs = [
        Config::gcra(3, Duration::from_nanos(300)),
        Config::gcra(1, Duration::from_nanos(u64::MAX / 2)),
        Config::fixed_window(5, Duration::from_nanos(1000)),
        Config::sliding_window(5, Duration::from_nanos(1000)),
        Config::gcra(3, Config::FOREVER),
        Config::sliding_window(3, Config::FOREVER),
    ];
    let mut random = Words(0x2545_F491_4F6C_DD1D);
    for config in configs {
        let decider = Decider::new(&config).unwrap();
        for _ in 0..2_000 {
            let mut words: Vec<u64> = (0..decider.state_words()).map(|_| random.pick()).collect();
            words[0] = REPLACED;
            let state: Vec<AtomicU64> = words.iter().map(|&w| AtomicU64::new(w)).collect();
            let (now, n) = (random.pick(), 1 + random.next() % decider.limit());
            let wait = if matches!(decider.algorithm(), Algorithm::Gcra) {
                random.pick()
            } else {
                0
            };
            assert!(!owned(decider.acquire_at(&state, &Owned, now, n, wait)).allowed);
            assert!(!owned(decider.swap(&state, &Owned, TryAcquire { now, n })));
            let bounds = Bounds {
                earliest: now.saturating_sub(random.next() % 1000),
                latest: now,
            };
            let refund = std::cell::Cell::new(None);
            let request = Settle { bounds, n };
            let keep = |taken| refund.set(Some(taken));
            let settled = owned(decider.swap_refundable(&state, &Owned, request, keep));
            assert!(
                settled != Some(true) && refund.get().is_none(),
                "{config:?}"
            );
            let time = FakeTime::new(Some(1 + random.next() % 1000));
            time.set(bounds.earliest, now);
            assert!(!owned(decider.try_acquire(&state, &Owned, &time, n)));
            assert_eq!(self::words(&state), words, "{config:?}: written");
        }
    }
}

/// Words for [`any_words_give_a_decision`]: xorshift64*, a fixed sequence so a failure
/// reproduces, mixed with small numbers and the extremes of the u64 range.
struct Words(u64);

impl Words {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick(&mut self) -> u64 {
        const EXTREMES: [u64; 7] = [0, 1, 2, u64::MAX, u64::MAX - 1, u64::MAX - 2, 1 << 63];
        match self.next() % 4 {
            0 => EXTREMES[(self.next() % EXTREMES.len() as u64) as usize],
            1 => self.next() % 64,
            _ => self.next(),
        }
    }
}

#[test]
fn only_gcra_follows_the_hint() {
    // docs/clock.md, "Which clock a call reads first": only a GCRA bucket's decisions keep
    // a hint; a period that never ends is no bucket (it never refills).
    let second = 1_000_000_000;
    let cases = [
        (Config::gcra(10, Duration::from_nanos(second)), true),
        (
            Config::fixed_window(10, Duration::from_nanos(second)),
            false,
        ),
        (
            Config::sliding_window(10, Duration::from_nanos(second)),
            false,
        ),
        (Config::sliding_log(10, Duration::from_nanos(second)), false),
        (Config::gcra(10, Config::FOREVER), false),
    ];
    for (config, hinted) in cases {
        let decider = Decider::new(&config).unwrap();
        assert_eq!(decider.follows_hint(), hinted, "{config:?}");
    }
}
