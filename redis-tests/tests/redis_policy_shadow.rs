//! Shadow rules of a policy on Redis (docs/policies.md, Shadow rules) against a real
//! `redis-server` the test starts: the script decides the enforced rules all or nothing and
//! each shadow rule alone, exactly as the in-process `Policy` with the same mask does.

mod common;

use common::redis_replay::Unexpiring;
use common::redis_server::server;
use common::{random_rule, Rng, MS, SECOND};
use librate::redis::RedisPolicy;
use librate::{Config, ConfigError, Instant, Policy};
use std::time::Duration;

const ONE: Duration = Duration::from_secs(1);

/// Enforced 2 a second, a shadow rule of 1 a second (GCRA, each burst its limit), worked
/// out by hand as in tests/policy_shadow.rs: the second request is admitted and one the
/// shadow rule would deny, which takes nothing from it; once enforced, it denies.
#[test]
fn shadow_rule_reports_then_enforces() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let policy =
        RedisPolicy::new(&[Config::gcra(2, ONE), Config::gcra(1, ONE)], "shadow:").unwrap();
    policy.set_shadow(0b10).unwrap();
    assert_eq!(policy.shadow(), 0b10);
    let mut at = |n: u64, now: u64| {
        policy
            .acquire_at(&mut redis, b"k", n, Instant::from_nanos(now))
            .unwrap()
    };
    let first = at(1, 0);
    assert!(first.decision.allowed);
    assert_eq!(first.shadow_denied_by(), None);
    assert_eq!((first.decision.limit, first.decision.remaining), (2, 1));
    assert_eq!(first.rules()[1].remaining, 0);
    let second = at(1, 0);
    assert!(second.decision.allowed);
    assert_eq!(
        (second.denied_by, second.shadow_denied_by()),
        (None, Some(1))
    );
    assert_eq!(second.rules()[1].retry_after_ns, SECOND);
    let third = at(1, 0);
    assert_eq!(
        (third.denied_by, third.shadow_denied_by()),
        (Some(0), Some(1))
    );
    assert_eq!(third.decision.retry_after_ns, 500 * MS);
    policy.set_shadow(0).unwrap();
    let mut at = |n: u64, now: u64| {
        policy
            .acquire_at(&mut redis, b"k", n, Instant::from_nanos(now))
            .unwrap()
    };
    // The shadow rule took its one token at 0 only: it admits at 1 s, once.
    assert!(at(1, SECOND).decision.allowed);
    let denied = at(1, SECOND);
    assert_eq!(
        (denied.denied_by, denied.shadow_denied_by()),
        (Some(1), None)
    );
    assert_eq!(denied.decision.retry_after_ns, SECOND);
    assert_eq!(
        policy.set_shadow(4),
        Err(ConfigError::ShadowMask { mask: 4, rules: 2 })
    );
}

/// A policy whose rules are all shadow admits everything, with nothing to combine.
#[test]
fn all_shadow_admits_everything() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let policy = RedisPolicy::new(&[Config::gcra(1, ONE)], "all-shadow:").unwrap();
    policy.set_shadow(1).unwrap();
    for shadow_denied_by in [None, Some(0)] {
        let decided = policy
            .acquire_at(&mut redis, b"k", 1, Instant::ZERO)
            .unwrap();
        assert!(decided.decision.allowed);
        assert_eq!(decided.shadow_denied_by(), shadow_denied_by);
        assert_eq!(decided.decision.limit, u64::MAX);
        assert_eq!(decided.decision.remaining, u64::MAX);
        assert_eq!(decided.decision.retry_after_ns, 0);
    }
}

/// Random policies, each with a random mask: every decision, `denied_by`,
/// `shadow_denied_by` and every rule's own fields are the in-process policy's.
#[test]
fn shadowed_policies_decide_as_the_in_process_policy() {
    let Some((_server, mut connection)) = server() else {
        return;
    };
    let mut rng = Rng::new(0x5ad0_3001);
    let mut shadow_denials = 0;
    for case in 0..120 {
        let rules: Vec<Config> = (0..rng.range(1, 8))
            .map(|_| random_rule(&mut rng))
            .collect();
        let mask = rng.below(1 << rules.len()) as u32;
        let local = Policy::new(&rules).unwrap();
        local.set_shadow(mask).unwrap();
        let remote = RedisPolicy::new(&rules, format!("shadowed:{case}:")).unwrap();
        remote.set_shadow(mask).unwrap();
        let mut redis = Unexpiring::new(&mut connection, remote.redis_keys(b"k"));
        let mut now = 1_000 * SECOND + rng.below(10 * SECOND);
        for step in 0..30 {
            now += rng.below(700 * MS);
            let n = rng.below(local.limit() + 1);
            let context =
                format!("case {case} step {step}: n {n} at {now}, mask {mask:#x}, {rules:?}");
            let mut got = remote.acquire_at(&mut redis, b"k", n, Instant::from_nanos(now));
            // A key expired between the script and `PERSIST`: again (as the unshadowed
            // conformance test does).
            while matches!(&got, Ok(admitted) if admitted.decision.allowed && n > 0)
                && redis.expired()
            {
                redis.undo();
                got = remote.acquire_at(&mut redis, b"k", n, Instant::from_nanos(now));
            }
            let got = got.unwrap();
            let want = local.acquire_at(n, Instant::from_nanos(now)).unwrap();
            assert_eq!(got.decision, want.decision, "{context}");
            assert_eq!(got.denied_by, want.denied_by, "{context}");
            assert_eq!(got.shadow_denied_by(), want.shadow_denied_by(), "{context}");
            assert_eq!(got.rules(), want.rules(), "{context}");
            shadow_denials += usize::from(want.shadow_denied_by().is_some());
        }
    }
    assert!(shadow_denials > 100, "{shadow_denials}");
}

/// The async methods send the mask too: the blocking test's first two requests, awaited.
#[tokio::test]
async fn async_requests_send_the_mask() {
    let Some((server, _blocking)) = server() else {
        return;
    };
    let mut redis = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let policy = RedisPolicy::new(&[Config::gcra(2, ONE), Config::gcra(1, ONE)], "async:").unwrap();
    policy.set_shadow(0b10).unwrap();
    let mut shadow_denied_by = Vec::new();
    for _ in 0..2 {
        let decided = policy
            .acquire_at_async(&mut redis, b"k", 1, Instant::ZERO)
            .await
            .unwrap();
        assert!(decided.decision.allowed);
        shadow_denied_by.push(decided.shadow_denied_by());
    }
    assert_eq!(shadow_denied_by, [None, Some(1)]);
}

/// Counts (docs/metrics.md): a Redis policy counts the rule that denied first and each
/// shadow rule that would have. 2 a minute enforced, 1 a minute in shadow, at time 0.
#[test]
fn a_redis_policy_counts_the_binding_rule_and_shadow_denials() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let minute = Duration::from_secs(60);
    let rules = [
        Config::fixed_window(2, minute),
        Config::fixed_window(1, minute),
    ];
    let policy = RedisPolicy::new(&rules, "counted:").unwrap();
    policy.set_shadow(0b10).unwrap();
    policy.enable_counts();
    let at = Instant::ZERO;
    // Admitted (the shadow rule takes its unit); admitted, the shadow rule would deny;
    // denied by rule 0, the shadow rule would deny too; a query, not counted.
    assert!(
        policy
            .acquire_at(&mut redis, b"k", 1, at)
            .unwrap()
            .decision
            .allowed
    );
    let second = policy.acquire_at(&mut redis, b"k", 1, at).unwrap();
    assert_eq!(second.shadow_denied_by(), Some(1));
    assert_eq!(
        policy
            .acquire_at(&mut redis, b"k", 1, at)
            .unwrap()
            .denied_by,
        Some(0)
    );
    policy.acquire_at(&mut redis, b"k", 0, at).unwrap();
    let counts = policy.counts().unwrap();
    assert_eq!((counts.admitted, counts.denied), (2, 1));
    let each: Vec<(u64, u64)> = counts
        .rules()
        .iter()
        .map(|r| (r.denied, r.shadow_denied))
        .collect();
    assert_eq!(each, [(1, 0), (0, 2)]);
}
