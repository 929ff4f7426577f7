//! Changing a keyed policy's rules at run time (`KeyedPolicy::set_rules_at`): each per-key
//! rule carried over key by key as a keyed table's is, each global rule as a limiter's;
//! refused changes change nothing; threads racing a change never admit past a rule's
//! limit, and every admission took from every rule.

#![cfg(not(loom))]

mod common;

use common::{at, SECOND};
use librate::{
    ChangeError, Config, ConfigError, Instant, KeyedAcquireError, KeyedPolicy, KeyedRule,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Per customer `per_second` a second (GCRA, burst `per_second`), everybody `per_minute` a
/// minute (fixed window).
fn plan(per_second: u64, per_minute: u64) -> [KeyedRule; 2] {
    [
        KeyedRule::per_key(Config::per_second(per_second)),
        KeyedRule::global(Config::fixed_window(per_minute, Duration::from_secs(60))),
    ]
}

/// `(remaining of the per-key rule, remaining of the global rule)` for `key` at `now`.
fn remaining(policy: &KeyedPolicy, key: &[u8], now: u64) -> (u64, u64) {
    let report = policy.acquire_at(key, 0, at(now)).unwrap();
    (report.rules()[0].remaining, report.rules()[1].remaining)
}

#[test]
fn every_key_and_the_global_rule_carry_over() {
    let site = KeyedPolicy::new(&plan(10, 100), 1000).unwrap();
    // At 0: ann takes 6 (4 tokens left), bob 1 (9 left); the window counts 7.
    assert!(
        site.acquire_at(b"ann", 6, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    assert!(
        site.acquire_at(b"bob", 1, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    // Tightened: 5 a second per customer (T = 200 ms, burst 5), 50 a minute.
    site.set_rules_at(&plan(5, 50), Instant::ZERO).unwrap();
    assert_eq!(site.rules().collect::<Vec<_>>(), plan(5, 50));
    assert_eq!(site.limit(), 5);
    // ann keeps her 4 tokens, bob's 9 are capped at 5; the window keeps its 7 of 50.
    assert_eq!(remaining(&site, b"ann", 0), (4, 43));
    assert_eq!(remaining(&site, b"bob", 0), (5, 43));
    // A new customer starts with the new burst.
    assert_eq!(remaining(&site, b"cat", 0), (5, 43));
    // ann's 4 tokens mean TAT = τ − 4·T = 1 s − 800 ms = 200 ms; her 4 units push it to
    // 1 s = τ, and one more would need 1.2 s: it fits 200 ms later.
    assert!(
        site.acquire_at(b"ann", 4, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    let denied = site.acquire_at(b"ann", 1, Instant::ZERO).unwrap();
    assert_eq!(denied.denied_by, Some(0));
    assert_eq!(denied.rules()[0].retry_after_ns, 200_000_000);
    // The denial took nothing from the window: 7 + 4 counted.
    assert_eq!(remaining(&site, b"ann", 0), (0, 39));
}

#[test]
fn a_cost_beyond_a_lowered_limit_is_refused_and_takes_nothing() {
    let site = KeyedPolicy::new(&plan(10, 100), 1000).unwrap();
    site.set_rules_at(&plan(2, 100), Instant::ZERO).unwrap();
    assert_eq!(
        site.acquire_at(b"ann", 3, Instant::ZERO).unwrap_err(),
        KeyedAcquireError::InsufficientCapacity
    );
    assert_eq!(remaining(&site, b"ann", 0), (2, 100));
}

#[test]
fn a_refused_change_changes_nothing() {
    let site = KeyedPolicy::new(&plan(10, 100), 1000).unwrap();
    assert!(
        site.acquire_at(b"ann", 6, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    let live_change = Err(ChangeError::Config(ConfigError::LiveChange));
    // Another number of rules.
    assert_eq!(
        site.set_rules_at(&plan(5, 50)[..1], Instant::ZERO),
        live_change
    );
    // A per-key rule in place of the global one.
    let scopes = [
        plan(5, 50)[0],
        KeyedRule::per_key(Config::fixed_window(50, Duration::from_secs(1))),
    ];
    assert_eq!(site.set_rules_at(&scopes, Instant::ZERO), live_change);
    // Another algorithm, for the second rule only: the first rule does not change either.
    let algorithm = [
        plan(5, 50)[0],
        KeyedRule::global(Config::sliding_window(50, Duration::from_secs(1))),
    ];
    assert_eq!(site.set_rules_at(&algorithm, Instant::ZERO), live_change);
    // An invalid rule.
    let invalid = [KeyedRule::per_key(Config::per_second(0)), plan(5, 50)[1]];
    assert!(matches!(
        site.set_rules_at(&invalid, Instant::ZERO),
        Err(ChangeError::Config(_))
    ));
    assert_eq!(site.rules().collect::<Vec<_>>(), plan(10, 100));
    assert_eq!(remaining(&site, b"ann", 0), (4, 94));
}

/// A policy in a shared file changes there as in process (docs/shared.md): ann's 4
/// tokens are kept under a burst of 5, and the window's 6 of now 50 leave 44.
#[test]
fn a_policy_in_a_shared_file_changes_as_in_process() {
    let path =
        std::env::temp_dir().join(format!("librate-keyed-policy-live-{}", std::process::id()));
    let site = KeyedPolicy::open(&path, &plan(10, 100), 64).unwrap();
    assert!(
        site.acquire_at(b"ann", 6, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    site.set_rules_at(&plan(5, 50), Instant::ZERO).unwrap();
    assert_eq!(remaining(&site, b"ann", 0), (4, 44));
    assert_eq!(site.rules().collect::<Vec<_>>(), plan(5, 50));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn threads_racing_a_raise_admit_exactly_the_tokens_left_at_a_frozen_time() {
    // At a frozen time a bucket only loses tokens, and a raise keeps them (the new burst
    // caps nothing): ann, who took 1 unit first (so her state is not fresh, which would
    // start anew under the new rule), is admitted exactly her 9 tokens left, however her
    // requests race the change, and each admission counts once in the global window.
    for _ in 0..20 {
        let site = KeyedPolicy::new(&plan(10, 1000), 1000).unwrap();
        assert!(site.try_acquire_at(b"ann", 1, at(SECOND)).unwrap());
        let admitted = AtomicU64::new(0);
        std::thread::scope(|threads| {
            for _ in 0..3 {
                threads.spawn(|| {
                    for _ in 0..20 {
                        if site.try_acquire_at(b"ann", 1, at(SECOND)).unwrap() {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
            threads.spawn(|| site.set_rules_at(&plan(20, 1000), at(SECOND)).unwrap());
        });
        assert_eq!(admitted.load(Ordering::Relaxed), 9);
        assert_eq!(remaining(&site, b"ann", SECOND), (0, 990));
    }
}
