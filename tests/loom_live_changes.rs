//! loom model of a limiter's rule changing while two threads acquire: every decision is
//! made wholly under one rule, and the state after is the carry-over (GCRA keeps its
//! tokens, capped at the new burst) of the state at the change's instant.
//!
//! Run: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 CARGO_TARGET_DIR=target/loom \
//!       cargo test --release --test loom_live_changes`
#![cfg(loom)]

mod common;
use common::at;

use librate::{Config, Limiter};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

const NOW: u64 = 1_000;

/// Old: T = 100 ns, burst 3 (3 tokens). New: T = 200 ns, burst 2. Each acquire takes 2
/// units at a frozen time, so tokens never refill and carry over exactly.
fn rules() -> (Config, Config) {
    (
        Config::gcra(1, Duration::from_nanos(100)).with_burst(3),
        Config::gcra(1, Duration::from_nanos(200)).with_burst(2),
    )
}

/// Two threads acquire while the main thread changes the rule. One preemption: with two,
/// loom also explores the schedules where both acquirers, having met the replaced words,
/// wait in turn while the changer sits between its two steps, and their waits multiply
/// the paths past what it can visit (the next model races one waiter at two).
#[test]
fn a_change_racing_two_acquires() {
    let (old, new) = rules();
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(1);
    model.check(move || {
        let limiter = Arc::new(Limiter::new(&old).unwrap());
        let acquirers: Vec<_> = (0..2)
            .map(|_| {
                let limiter = Arc::clone(&limiter);
                thread::spawn(move || limiter.acquire_at(2, at(NOW)).unwrap())
            })
            .collect();
        limiter.set_config_at(&new, at(NOW)).unwrap();
        let decisions: Vec<_> = acquirers.into_iter().map(|t| t.join().unwrap()).collect();
        // A decision's limit is its rule's burst: which rule decided it.
        let admitted_under = |burst: u64| {
            let under: Vec<_> = decisions.iter().filter(|d| d.limit == burst).collect();
            under.iter().filter(|d| d.allowed).count() as u64
        };
        let (before, after) = (admitted_under(3), admitted_under(2));
        assert_eq!(
            decisions
                .iter()
                .filter(|d| d.limit == 3 || d.limit == 2)
                .count(),
            2
        );
        // The model: 3 tokens, 2 per admission under the old rule; what is left at the
        // change, capped at 2, then 2 per admission under the new rule.
        let carried = (3 - 2 * before).min(2);
        assert!(2 * after <= carried);
        let state = limiter.acquire_at(0, at(NOW)).unwrap();
        assert_eq!((state.limit, state.remaining), (2, carried - 2 * after));
    });
}

/// One thread acquires while the main thread acquires and then changes the rule: the
/// thread races both, at two preemptions.
#[test]
fn a_change_racing_an_acquire_after_another() {
    let (old, new) = rules();
    loom::model(move || {
        let limiter = Arc::new(Limiter::new(&old).unwrap());
        let acquirer = {
            let limiter = Arc::clone(&limiter);
            thread::spawn(move || limiter.acquire_at(2, at(NOW)).unwrap())
        };
        let first = limiter.acquire_at(2, at(NOW)).unwrap();
        limiter.set_config_at(&new, at(NOW)).unwrap();
        let raced = acquirer.join().unwrap();
        assert_eq!(first.limit, 3, "decided before the change");
        let before = u64::from(first.allowed) + u64::from(raced.limit == 3 && raced.allowed);
        let after = u64::from(raced.limit == 2 && raced.allowed);
        assert!(raced.limit == 3 || raced.limit == 2);
        let carried = (3 - 2 * before).min(2);
        assert!(2 * after <= carried);
        let state = limiter.acquire_at(0, at(NOW)).unwrap();
        assert_eq!((state.limit, state.remaining), (2, carried - 2 * after));
    });
}

/// A policy's request checked against a rule that a racing change then lowers below its
/// cost: each rule's step is decided under the old rule (admitted) or under the new one,
/// which can never admit it (denied, "never" to retry), and never panics or over-admits.
#[test]
fn a_change_lowering_a_rule_below_a_racing_request() {
    loom::model(|| {
        let policy = Arc::new(
            librate::Policy::new(&[Config::gcra(1, Duration::from_nanos(100)).with_burst(3)])
                .unwrap(),
        );
        let requester = {
            let policy = Arc::clone(&policy);
            thread::spawn(move || policy.acquire_at(2, at(NOW)))
        };
        policy
            .set_rules_at(
                &[Config::gcra(1, Duration::from_nanos(100)).with_burst(1)],
                at(NOW),
            )
            .unwrap();
        let after = policy.acquire_at(0, at(NOW)).unwrap().decision;
        match requester.join().unwrap() {
            // Checked against the new rule's limit of 1.
            Err(error) => {
                assert_eq!(error, librate::InsufficientCapacity);
                assert_eq!(after.remaining, 1);
            }
            Ok(decided) if decided.decision.allowed => {
                // Under the old rule: 1 token left of 3, capped at 1.
                assert_eq!(decided.rules()[0].limit, 3);
                assert_eq!(after.remaining, 1);
            }
            Ok(decided) => {
                // Checked against the old rule, decided under the new one.
                assert_eq!(decided.rules()[0].limit, 1);
                assert_eq!(decided.decision.retry_after_ns, u64::MAX);
                assert_eq!(after.remaining, 1);
            }
        }
    });
}

/// A caller that knows a policy's change is done (here by a flag of its own, released
/// after `set_rules_at` returned) checks a request against the rules in force: a cost past
/// the lowered limit is an error, never a denial, though the policy's own note that a
/// change began is read `Relaxed`. One that does not know may see either.
#[test]
fn a_caller_after_a_policy_change_checks_the_rules_in_force() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    loom::model(|| {
        let policy = Arc::new(
            librate::Policy::new(&[Config::gcra(1, Duration::from_nanos(100)).with_burst(3)])
                .unwrap(),
        );
        let done = Arc::new(AtomicBool::new(false));
        let changer = {
            let (policy, done) = (Arc::clone(&policy), Arc::clone(&done));
            thread::spawn(move || {
                policy
                    .set_rules_at(
                        &[Config::gcra(1, Duration::from_nanos(100)).with_burst(1)],
                        at(NOW),
                    )
                    .unwrap();
                done.store(true, Ordering::Release);
            })
        };
        let after = done.load(Ordering::Acquire);
        let request = policy.try_acquire_at(2, at(NOW));
        // Without the flag's word it may also be checked against the old burst of 3, and
        // admitted under it or denied under the new one (see the model before).
        if after {
            assert_eq!(request, Err(librate::InsufficientCapacity));
        }
        changer.join().unwrap();
        assert_eq!(
            policy.try_acquire_at(2, at(NOW)),
            Err(librate::InsufficientCapacity)
        );
    });
}

/// A free racing a late reader: once a limiter's rule changed, every decision reads the
/// generation in force pinned. A thread acquires on it while the main thread changes the
/// rule again, which retires that generation and frees it once no thread can still be
/// deciding on it. Under loom every read of a generation is checked against its free
/// (a free not ordered after a read is reported), and the state after is exact.
#[test]
fn a_free_racing_a_late_reader() {
    let (old, new) = rules();
    // 3 tokens, carried over into a burst of 4: still 3.
    let middle = Config::gcra(1, Duration::from_nanos(100)).with_burst(4);
    loom::model(move || {
        let limiter = Arc::new(Limiter::new(&old).unwrap());
        limiter.set_config_at(&middle, at(NOW)).unwrap();
        let reader = {
            let limiter = Arc::clone(&limiter);
            thread::spawn(move || limiter.acquire_at(2, at(NOW)).unwrap())
        };
        limiter.set_config_at(&new, at(NOW)).unwrap();
        let decision = reader.join().unwrap();
        assert!(decision.allowed, "2 of 3 tokens, or of 2 after the change");
        // Before the change: 1 token left, carried over (cap 2); after it: 2 - 2.
        let left = match decision.limit {
            4 => 1,
            2 => 0,
            other => panic!("decided under no rule it had: burst {other}"),
        };
        let state = limiter.acquire_at(0, at(NOW)).unwrap();
        assert_eq!((state.limit, state.remaining), (2, left));
    });
}
