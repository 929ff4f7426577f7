//! Changing a keyed table's rule at run time (`KeyedLimiter::set_config_at`): every key's
//! state carried over by the limiters' rules, by hand, against a model (a `Limiter` per
//! key, whose carry-over `tests/live_changes.rs` checks), for keys far from home and in
//! tables of many keys, and under threads racing the changes, where no admission may be
//! lost or counted twice.

#![cfg(not(loom))]

mod common;

use common::key_is_hash::KeyIsHash;
use common::{at, decision, Rng, MS, SECOND};
use librate::{
    ChangeError, Config, ConfigError, Instant, KeyedAcquireError, KeyedLimiter, Limiter,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[test]
fn gcra_keys_keep_their_tokens_capped_at_the_new_burst() {
    // 10 a second (T = 100 ms, τ = 1 s). At 0 ann takes 6 (4 tokens left), bob 1 (9).
    let users = KeyedLimiter::new(&Config::per_second(10), 100).unwrap();
    assert!(users.acquire_at(b"ann", 6, Instant::ZERO).unwrap().allowed);
    assert!(users.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed);
    // 1 a second, burst 2 (T = 1 s, τ = 2 s): both keep 2 tokens, TAT 0.
    let incident = Config::per_second(1).with_burst(2);
    users.set_config_at(&incident, Instant::ZERO).unwrap();
    assert_eq!(users.config(), &incident);
    for key in [b"ann", b"bob"] {
        assert_eq!(
            users.acquire_at(key, 0, Instant::ZERO).unwrap(),
            decision(true, 2, 2, 0, 0)
        );
    }
    assert_eq!(
        users.acquire_at(b"ann", 2, Instant::ZERO).unwrap(),
        decision(true, 2, 0, 0, 2 * SECOND)
    );
    // TAT 2 s: one more unit fits at TAT + T − τ = 1 s.
    assert_eq!(
        users.acquire_at(b"ann", 1, Instant::ZERO).unwrap(),
        decision(false, 2, 0, SECOND, 2 * SECOND)
    );
    // A new key starts with the new burst.
    assert_eq!(
        users.acquire_at(b"cat", 0, Instant::ZERO).unwrap(),
        decision(true, 2, 2, 0, 0)
    );
}

#[test]
fn gcra_keys_keep_fractions_of_a_token() {
    // 10 a second: 10 taken at 0, TAT 1 s; at 250 ms the debt is 750 ms, 2.5 tokens.
    let users = KeyedLimiter::new(&Config::per_second(10), 100).unwrap();
    assert!(users.acquire_at(b"ann", 10, Instant::ZERO).unwrap().allowed);
    // 2 a second, burst 4 (T = 500 ms, τ = 2 s): 2.5 tokens are 1.25 s of room, so TAT
    // = 250 ms + 2 s − 1.25 s = 1 s: 2 whole tokens, 3 at TAT + 3T − τ = 500 ms.
    let slower = Config::per_second(2).with_burst(4);
    users.set_config_at(&slower, at(250 * MS)).unwrap();
    assert_eq!(
        users.acquire_at(b"ann", 0, at(250 * MS)).unwrap(),
        decision(true, 4, 2, 0, 750 * MS)
    );
    assert_eq!(
        users.acquire_at(b"ann", 3, at(250 * MS)).unwrap(),
        decision(false, 4, 2, 250 * MS, 750 * MS)
    );
}

#[test]
fn fixed_window_keys_keep_their_counts_capped_at_the_new_limit() {
    // 10 a second: at 500 ms ann has 7 counted in [0, 1 s), bob 3.
    let users = KeyedLimiter::new(&Config::fixed_window(10, Duration::from_secs(1)), 100).unwrap();
    assert!(users.acquire_at(b"ann", 7, at(500 * MS)).unwrap().allowed);
    assert!(users.acquire_at(b"bob", 3, at(500 * MS)).unwrap().allowed);
    // 5 per 2 s: the counts move to [0, 2 s), ann's capped at 5.
    users
        .set_config_at(
            &Config::fixed_window(5, Duration::from_secs(2)),
            at(500 * MS),
        )
        .unwrap();
    let ann = users.acquire_at(b"ann", 1, at(1500 * MS)).unwrap();
    assert_eq!((ann.allowed, ann.remaining), (false, 0));
    assert_eq!(ann.retry_after_ns, 500 * MS, "until the window ends at 2 s");
    let bob = users.acquire_at(b"bob", 2, at(1500 * MS)).unwrap();
    assert_eq!((bob.allowed, bob.remaining), (true, 0));
    // The next window counts nothing.
    assert_eq!(
        users
            .acquire_at(b"ann", 0, at(2 * SECOND))
            .unwrap()
            .remaining,
        5
    );
}

#[test]
fn sliding_window_keys_keep_both_windows_counts() {
    // 10 a second: ann takes 4 in [0, 1 s) and 3 at 1.5 s, when the previous window
    // weighs ½: 3 + 2 counted.
    let users =
        KeyedLimiter::new(&Config::sliding_window(10, Duration::from_secs(1)), 100).unwrap();
    assert!(users.acquire_at(b"ann", 4, Instant::ZERO).unwrap().allowed);
    assert!(users.acquire_at(b"ann", 3, at(1500 * MS)).unwrap().allowed);
    // 20 a second: the same windows, the same counts, 15 left.
    users
        .set_config_at(
            &Config::sliding_window(20, Duration::from_secs(1)),
            at(1500 * MS),
        )
        .unwrap();
    assert_eq!(
        users
            .acquire_at(b"ann", 0, at(1500 * MS))
            .unwrap()
            .remaining,
        15
    );
    // 4 a second: the previous window's 4 fit the cap, so 3 + 2 counted: over the limit.
    users
        .set_config_at(
            &Config::sliding_window(4, Duration::from_secs(1)),
            at(1500 * MS),
        )
        .unwrap();
    assert!(!users.acquire_at(b"ann", 1, at(1500 * MS)).unwrap().allowed);
    // At 2.5 s the 3 of [1 s, 2 s) weigh ½: 1.5, rounded up to 2 counted.
    assert_eq!(
        users
            .acquire_at(b"ann", 0, at(2500 * MS))
            .unwrap()
            .remaining,
        2
    );
}

#[test]
fn a_refused_change_changes_nothing() {
    let rule = Config::per_second(10);
    let users = KeyedLimiter::new(&rule, 100).unwrap();
    assert!(users.acquire_at(b"ann", 6, Instant::ZERO).unwrap().allowed);
    let refusals = [
        (
            Config::fixed_window(10, Duration::from_secs(1)),
            ChangeError::Config(ConfigError::LiveChange),
        ),
        (
            Config::sliding_log(10, Duration::from_secs(1)),
            ChangeError::Config(ConfigError::LiveChange),
        ),
        (
            Config::per_second(0),
            ChangeError::Config(ConfigError::ZeroLimit),
        ),
    ];
    for (config, error) in refusals {
        assert_eq!(
            users.set_config_at(&config, Instant::ZERO),
            Err(error),
            "{config:?}"
        );
        assert_eq!(users.config(), &rule);
        assert_eq!(
            users
                .acquire_at(b"ann", 0, Instant::ZERO)
                .unwrap()
                .remaining,
            4
        );
    }
    // A sliding log's entries are not carried, to any log.
    let log = KeyedLimiter::new(&Config::sliding_log(3, Duration::from_secs(1)), 10).unwrap();
    assert!(log.acquire_at(b"ann", 2, Instant::ZERO).unwrap().allowed);
    assert_eq!(
        log.set_config_at(
            &Config::sliding_log(5, Duration::from_secs(1)),
            Instant::ZERO
        ),
        Err(ChangeError::Config(ConfigError::LiveChange))
    );
    assert_eq!(
        log.acquire_at(b"ann", 0, Instant::ZERO).unwrap().remaining,
        1
    );
}

/// A table in a shared file changes there as in process (docs/shared.md): ann's 4 tokens
/// are capped at the new burst of 1.
#[test]
fn a_shared_table_changes_as_in_process() {
    let path = std::env::temp_dir().join(format!("librate-keyed-live-{}", std::process::id()));
    let rule = Config::per_second(10);
    let users = KeyedLimiter::open(&path, &rule, 100).unwrap();
    assert!(users.acquire_at(b"ann", 6, Instant::ZERO).unwrap().allowed);
    users
        .set_config_at(&Config::per_second(1), Instant::ZERO)
        .unwrap();
    assert_eq!(users.config(), &Config::per_second(1));
    assert_eq!(
        users
            .acquire_at(b"ann", 0, Instant::ZERO)
            .unwrap()
            .remaining,
        1
    );
    drop(users);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn keys_far_from_home_and_around_the_end_are_carried_over() {
    // Capacity 8: 16 slots, a key's home the top 4 bits of its hash (its bytes). Five keys at home 3
    // (distances 0 to 4) and three at home 15 (the last two wrap to slots 0 and 1).
    let keys: Vec<u64> = (1..=5)
        .map(|j| 3 << 60 | j)
        .chain((1..=3).map(|j| 15 << 60 | j))
        .collect();
    // T = 1 s, burst 8: key j takes j + 2 units at 0, leaving 6 − j tokens, which a
    // burst of 6 and then of 8 both keep.
    let left = |key: u64| 6 - (key & 0xf);
    let table =
        KeyedLimiter::with_hasher(&Config::per_second(1).with_burst(8), 8, KeyIsHash).unwrap();
    for &key in &keys {
        let taken = 8 - left(key);
        assert!(
            table
                .acquire_at(&key.to_le_bytes(), taken, Instant::ZERO)
                .unwrap()
                .allowed
        );
    }
    for burst in [6, 8] {
        let rule = Config::per_second(1).with_burst(burst);
        table.set_config_at(&rule, Instant::ZERO).unwrap();
    }
    for &key in &keys {
        let left = left(key);
        let state = table
            .acquire_at(&key.to_le_bytes(), 0, Instant::ZERO)
            .unwrap();
        assert_eq!(state.remaining, left, "key {key:#x}");
    }
    assert_eq!(table.live_keys_at(Instant::ZERO), 8);
    // Each key is found where it was carried: a second request takes from the same state.
    for &key in &keys {
        let left = left(key);
        let taken = table
            .acquire_at(&key.to_le_bytes(), left, Instant::ZERO)
            .unwrap();
        assert_eq!((taken.allowed, taken.remaining), (true, 0), "key {key:#x}");
    }
    assert_eq!(
        table.live_keys_at(Instant::ZERO),
        8,
        "no key was inserted twice"
    );
}

/// Many keys under random requests and changes, each against a limiter of its own that
/// sees the same requests and changes, and is built anew under the new rule when its
/// state is fresh before or after a change: a table may drop a fresh key's state at any
/// time, and a change drops it.
#[test]
fn many_keys_follow_a_limiter_each() {
    let families: [&[Config]; 3] = [
        &[
            Config::per_second(10),
            Config::per_second(3).with_burst(5),
            Config::per_second(50).with_burst(20),
            Config::gcra(7, Config::FOREVER),
        ],
        &[
            Config::fixed_window(10, Duration::from_secs(1)),
            Config::fixed_window(4, Duration::from_secs(3)),
            Config::fixed_window(25, Duration::from_millis(250)),
        ],
        &[
            Config::sliding_window(10, Duration::from_secs(1)),
            Config::sliding_window(6, Duration::from_secs(2)),
            Config::sliding_window(30, Duration::from_millis(700)),
            Config::sliding_window(8, Config::FOREVER),
        ],
    ];
    let mut rng = Rng::new(7);
    for rules in families {
        let table = KeyedLimiter::new(&rules[0], 600).unwrap();
        let keys: Vec<[u8; 8]> = (0..900u64).map(u64::to_le_bytes).collect();
        let mut models: Vec<Limiter> = keys
            .iter()
            .map(|_| Limiter::new(&rules[0]).unwrap())
            .collect();
        let mut now = SECOND;
        for round in 1..=6 {
            for (key, model) in keys.iter().zip(&models) {
                if rng.chance(60) {
                    let limit = model.acquire_at(0, at(now)).unwrap().limit;
                    let n = rng.range(1, limit.min(6));
                    let expected = model.acquire_at(n, at(now)).unwrap();
                    assert_eq!(table.acquire_at(key, n, at(now)).unwrap(), expected);
                }
            }
            now += rng.range(0, 400 * MS);
            let rule = &rules[round % rules.len()];
            table.set_config_at(rule, at(now)).unwrap();
            for model in &mut models {
                if !is_fresh(model, now) {
                    model.set_config_at(rule, at(now)).unwrap();
                }
                if is_fresh(model, now) {
                    *model = Limiter::new(rule).unwrap();
                }
            }
            for (key, model) in keys.iter().zip(&models) {
                let expected = model.acquire_at(0, at(now)).unwrap();
                assert_eq!(
                    table.acquire_at(key, 0, at(now)).unwrap(),
                    expected,
                    "{rule:?}"
                );
            }
        }
    }
}

/// Whether `limiter`'s state decides as a new one at `now`: GCRA's TAT ≤ now (a query
/// says the bucket is full again in 0 ns), a window or an allowance counting nothing.
fn is_fresh(limiter: &Limiter, now: u64) -> bool {
    let state = limiter.acquire_at(0, at(now)).unwrap();
    let rule = limiter.config();
    if rule.algorithm == librate::Algorithm::Gcra && rule.period() != Config::FOREVER {
        state.reset_after_ns == 0
    } else {
        state.remaining == state.limit
    }
}

#[test]
fn a_reset_key_and_a_fresh_key_start_anew_under_the_new_rule() {
    // T = 1 ms, burst 10.
    let users = KeyedLimiter::new(
        &Config::gcra(1, Duration::from_millis(1)).with_burst(10),
        100,
    )
    .unwrap();
    assert!(users.acquire_at(b"ann", 10, Instant::ZERO).unwrap().allowed);
    assert!(users.acquire_at(b"bob", 1, Instant::ZERO).unwrap().allowed);
    users.reset(b"ann").unwrap();
    // At 5 ms bob is fresh (TAT 1 ms): neither key is live, and neither is carried.
    let rule = Config::gcra(1, Duration::from_millis(1)).with_burst(3);
    users.set_config_at(&rule, at(5 * MS)).unwrap();
    assert_eq!(users.live_keys_at(at(5 * MS)), 0);
    for key in [b"ann", b"bob"] {
        assert_eq!(users.acquire_at(key, 0, at(5 * MS)).unwrap().remaining, 3);
    }
    // A reset after the change works on the new region.
    assert!(users.acquire_at(b"ann", 3, at(5 * MS)).unwrap().allowed);
    users.reset(b"ann").unwrap();
    assert_eq!(
        users.acquire_at(b"ann", 0, at(5 * MS)).unwrap().remaining,
        3
    );
}

#[test]
fn stats_count_every_region_refusals() {
    // Capacity 1: two slots, both live until 1 s.
    let table = KeyedLimiter::new(&Config::per_second(1), 1).unwrap();
    for key in [b"a", b"b"] {
        assert!(table.acquire_at(key, 1, Instant::ZERO).unwrap().allowed);
    }
    assert_eq!(
        table.acquire_at(b"c", 1, Instant::ZERO),
        Err(KeyedAcquireError::TableFull)
    );
    table
        .set_config_at(&Config::gcra(1, Duration::from_secs(2)), Instant::ZERO)
        .unwrap();
    assert_eq!(
        table.acquire_at(b"c", 1, Instant::ZERO),
        Err(KeyedAcquireError::TableFull)
    );
    let stats = table.stats_at(Instant::ZERO);
    assert_eq!((stats.live_keys, stats.table_full), (2, 2));
}

/// Threads acquire one unit at a time, at one frozen instant, for keys already in the
/// table and for new ones, while another thread changes the rule back and forth; each
/// acquirer goes on until a whole pass over the keys, begun after the last change, admits
/// nothing. With time frozen nothing refills, so what each key admits follows from the
/// rules alone:
/// - GCRA keeps its tokens, and no rule after the first caps them: an existing key admits
///   exactly the tokens it had, and a new key its first rule's burst (40, or 100 if it
///   was inserted after a change);
/// - a fixed window keeps its count, so every key ends at the last rule's limit, 100.
#[test]
fn changes_racing_acquires_lose_and_double_count_nothing() {
    const OLD: u64 = 40;
    const NEW: u64 = 100;
    let families: [[Config; 3]; 2] = [
        [
            Config::gcra(1, Duration::from_millis(1)).with_burst(OLD),
            Config::gcra(1, Duration::from_millis(2)).with_burst(NEW),
            Config::gcra(1, Duration::from_millis(1)).with_burst(NEW),
        ],
        [
            Config::fixed_window(OLD, Duration::from_secs(3_600)),
            Config::fixed_window(NEW, Duration::from_secs(7_200)),
            Config::fixed_window(NEW, Duration::from_secs(3_600)),
        ],
    ];
    let now = 10 * SECOND;
    for [first, second, third] in families {
        let gcra = first.algorithm == librate::Algorithm::Gcra;
        let table = KeyedLimiter::new(&first, 64).unwrap();
        let old_keys: Vec<[u8; 8]> = (0..48u64).map(u64::to_le_bytes).collect();
        let new_keys: Vec<[u8; 8]> = (48..64u64).map(u64::to_le_bytes).collect();
        for key in &old_keys {
            assert!(table.acquire_at(key, 1, at(now)).unwrap().allowed);
        }
        let changed = AtomicBool::new(false);
        let admitted: Vec<Vec<u64>> = std::thread::scope(|scope| {
            let acquirers: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        let mut admitted = vec![0; 64];
                        loop {
                            let done = changed.load(Ordering::Acquire);
                            let mut any = false;
                            for (index, key) in old_keys.iter().chain(&new_keys).enumerate() {
                                if table.acquire_at(key, 1, at(now)).unwrap().allowed {
                                    admitted[index] += 1;
                                    any = true;
                                }
                            }
                            if done && !any {
                                return admitted;
                            }
                        }
                    })
                })
                .collect();
            scope.spawn(|| {
                for change in 0..200 {
                    let rule = if change % 2 == 0 { &second } else { &third };
                    table.set_config_at(rule, at(now)).unwrap();
                }
                changed.store(true, Ordering::Release);
            });
            acquirers.into_iter().map(|t| t.join().unwrap()).collect()
        });
        for index in 0..64 {
            let total: u64 = admitted.iter().map(|each| each[index]).sum();
            if !gcra {
                let before = u64::from(index < 48);
                assert_eq!(total + before, NEW, "{first:?} key {index}");
            } else if index < 48 {
                assert_eq!(total, OLD - 1, "{first:?} key {index}");
            } else {
                assert!(
                    total == OLD || total == NEW,
                    "{first:?} key {index}: {total}"
                );
            }
        }
        assert_eq!(table.config(), &third);
        assert_eq!(table.live_keys_at(at(now)), 64);
    }
}
