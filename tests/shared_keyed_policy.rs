//! Keyed policies in files shared between processes (docs/shared.md, docs/policies.md): real files,
//! real processes (`fork`), and processes killed with SIGKILL in the middle of requests.
#![cfg(not(loom))]

use std::fs;
use std::time::Duration;

use librate::{Config, KeyedAcquireError, KeyedLimiter, KeyedPolicy, KeyedRule, Limiter};

mod common;

use common::processes::{in_processes, in_threads, kill_and_reap, rewrite_word, spawn, Scratch};
use common::{assert_incompatible, at, Rng};

const SECOND: u64 = 1_000_000_000;
const HOUR: Duration = Duration::from_secs(3600);
/// The frozen time every process decides at.
const FROZEN: u64 = 1_000 * SECOND;

/// 4 processes × 2 threads request units of 10 keys at a frozen time, each key 5 an hour
/// and everybody 30 an hour: exactly 30 are admitted between them, and a later opener
/// finds the global rule used up and no key past its 5.
#[test]
fn processes_share_one_policy() {
    let scratch = Scratch::new("keyed-policy-share");
    let path = scratch.path("policy");
    let rules = [
        KeyedRule::per_key(Config::gcra(5, HOUR)),
        KeyedRule::global(Config::fixed_window(30, HOUR)),
    ];
    let keys: Vec<String> = (0..10).map(|k| format!("user-{k}")).collect();
    let admitted = in_processes(4, |_| {
        let policy = KeyedPolicy::open(&path, &rules, 64).unwrap();
        let total = in_threads(2, |thread| {
            let mut admitted = 0;
            for key in keys.iter().cycle().skip(thread).take(keys.len() * 8) {
                let decision = policy.acquire_at(key.as_bytes(), 1, at(FROZEN)).unwrap();
                admitted += u64::from(decision.decision.allowed);
            }
            admitted
        });
        total as u8
    });
    let total: u64 = admitted.iter().map(|&n| u64::from(n)).sum();
    assert_eq!(total, 30, "{admitted:?}");
    let later = KeyedPolicy::open(&path, &rules, 64).unwrap();
    let mut used = 0;
    for key in &keys {
        let state = later.acquire_at(key.as_bytes(), 0, at(FROZEN)).unwrap();
        assert_eq!(state.rules()[1].remaining, 0, "{key}");
        used += 5 - state.rules()[0].remaining;
    }
    // Each admitted unit is held by its key; a denied request's give-back that lost a
    // race to another request keeps its unit there too, so at least 30.
    assert!((30..=50).contains(&used), "{used}");
}

/// A policy file opened with other rules (another order, scope, rule or capacity), as a
/// keyed limiter or as a limiter: refused, and the file left as it was. Opened again with
/// its own rules it is the same policy.
#[test]
fn a_file_of_other_rules_is_refused_untouched() {
    let scratch = Scratch::new("keyed-policy-mismatch");
    let path = scratch.path("policy");
    let posts = Config::per_second(1);
    let everybody = Config::fixed_window(100, Duration::from_secs(1));
    let rules = [KeyedRule::per_key(posts), KeyedRule::global(everybody)];
    let policy = KeyedPolicy::open(&path, &rules, 64).unwrap();
    assert!(
        policy
            .acquire_at(b"a", 1, at(FROZEN))
            .unwrap()
            .decision
            .allowed
    );
    let before = fs::read(&path).unwrap();
    let others: [&[KeyedRule]; 5] = [
        &[rules[1], rules[0]],
        &[KeyedRule::per_key(posts), KeyedRule::per_key(everybody)],
        &[KeyedRule::per_key(posts)],
        &[rules[0], rules[1], rules[1]],
        &[KeyedRule::per_key(Config::per_second(2)), rules[1]],
    ];
    for other in others {
        let refused = KeyedPolicy::open(&path, other, 64).unwrap_err();
        assert_incompatible(refused, &path);
    }
    assert_incompatible(KeyedPolicy::open(&path, &rules, 65).unwrap_err(), &path);
    assert_incompatible(KeyedLimiter::open(&path, &posts, 64).unwrap_err(), &path);
    assert_incompatible(Limiter::open(&path, &posts).unwrap_err(), &path);
    assert_eq!(fs::read(&path).unwrap(), before);
    // Nor does a policy open another kind's file.
    let limiter_path = scratch.path("limiter");
    drop(Limiter::open(&limiter_path, &posts).unwrap());
    let refused = KeyedPolicy::open(&limiter_path, &rules[..1], 64).unwrap_err();
    assert_incompatible(refused, &limiter_path);
    let again = KeyedPolicy::open(&path, &rules, 64).unwrap();
    let denied = again.acquire_at(b"a", 1, at(FROZEN)).unwrap();
    assert_eq!(denied.denied_by, Some(0));
    assert_eq!(denied.rules()[1].remaining, 99);
}

/// A policy file written during another boot (its boot word, header word 9, differs) is
/// reset when opened: every rule's state is fresh, its description and each table's count
/// of refusals kept.
#[test]
fn a_policy_from_another_boot_is_reset() {
    let scratch = Scratch::new("keyed-policy-boot");
    let path = scratch.path("policy");
    let rules = [
        KeyedRule::per_key(Config::gcra(1, HOUR)),
        KeyedRule::global(Config::fixed_window(10, HOUR)),
    ];
    let policy = KeyedPolicy::open(&path, &rules, 1).unwrap();
    for key in [b"a", b"b"] {
        assert!(
            policy
                .acquire_at(key, 1, at(FROZEN))
                .unwrap()
                .decision
                .allowed
        );
    }
    assert_eq!(
        policy.acquire_at(b"c", 1, at(FROZEN)),
        Err(KeyedAcquireError::TableFull)
    );
    drop(policy);
    rewrite_word(&path, 9, 0x0123_4567_89ab_cdef);
    let reset = KeyedPolicy::open(&path, &rules, 1).unwrap();
    let stats = reset.stats_at(at(FROZEN));
    assert_eq!((stats.live_keys, stats.table_full), (0, 1));
    let again = reset.acquire_at(b"a", 1, at(FROZEN)).unwrap();
    assert!(again.decision.allowed);
    assert_eq!(again.rules()[1].remaining, 9);
    // Its description survived the reset: other rules are still refused.
    let other = [rules[1], rules[0]];
    assert_incompatible(KeyedPolicy::open(&path, &other, 1).unwrap_err(), &path);
}

/// Workers in 4 processes of 4 threads request fresh keys of a three-rule policy without
/// pause while they are killed (SIGKILL) at random moments, 30 times over, and this
/// process keeps using the policy between the kills. Then, once every old key is fresh,
/// each per-key rule's table takes as many new keys as it has slots: nothing stays
/// claimed by a dead process.
#[test]
fn killed_processes_leave_a_usable_policy() {
    let scratch = Scratch::new("keyed-policy-kill");
    let path = scratch.path("policy");
    let rules = [
        KeyedRule::per_key(Config::per_second(2)),
        KeyedRule::per_key(Config::fixed_window(1, Duration::from_secs(1))),
        KeyedRule::global(Config::per_second(1_000_000)),
    ];
    let capacity = 128;
    let policy = KeyedPolicy::open(&path, &rules, capacity).unwrap();
    let mut rng = Rng::new(19);
    for round in 0..30u64 {
        let workers: Vec<_> = (0..4u64)
            .map(|worker| {
                let path = path.clone();
                spawn(move || {
                    let policy = KeyedPolicy::open(&path, &rules, capacity).unwrap();
                    in_threads(4, |thread| loop {
                        for i in 0u64.. {
                            let key = format!("{round}-{worker}-{thread}-{i}");
                            // Times move on (within FROZEN + 1,000 s, below the
                            // survivor's), so older keys go fresh and are reclaimed; every
                            // other request is denied by the window after taking from the
                            // GCRA rule, which gives back.
                            let now = FROZEN + (i % 8_000) * SECOND / 8;
                            let _ = policy.acquire_at(key.as_bytes(), 1, at(now));
                            let _ = policy.acquire_at(key.as_bytes(), 1, at(now));
                        }
                    });
                })
            })
            .collect();
        std::thread::sleep(Duration::from_micros(rng.range(500, 20_000)));
        for pid in workers {
            kill_and_reap(pid);
        }
        // The survivor's own key decides exactly: one a second by the window.
        let key = format!("survivor-{round}");
        let now = FROZEN + 1_000_000 * SECOND * (round + 1);
        let first = policy.acquire_at(key.as_bytes(), 1, at(now)).unwrap();
        assert!(first.decision.allowed, "{round}");
        let second = policy.acquire_at(key.as_bytes(), 1, at(now)).unwrap();
        assert_eq!(second.denied_by, Some(1), "{round}");
    }
    let later = FROZEN + 1_000_000 * SECOND * 100;
    let max_keys = policy.stats_at(at(later)).max_keys;
    assert_eq!(max_keys, 2 * capacity);
    for i in 0..max_keys {
        let key = format!("after-{i}");
        let decision = policy.acquire_at(key.as_bytes(), 1, at(later)).unwrap();
        assert!(decision.decision.allowed, "{key}");
    }
    assert_eq!(policy.stats_at(at(later)).live_keys, max_keys);
    assert_eq!(
        policy
            .acquire_at(b"one-too-many", 1, at(later))
            .unwrap_err(),
        KeyedAcquireError::TableFull
    );
}
