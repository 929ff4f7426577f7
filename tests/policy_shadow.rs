//! Shadow rules (docs/policies.md, Shadow rules): the enforced rules decide as a policy's
//! rules do, each shadow rule is acquired alone after an admission and only peeked after
//! a denial, and its would-be denials show in the decision without denying. Every value is
//! worked out by hand from GCRA (a rule of `limit` a second holds `limit` tokens, one back
//! every `1/limit` s) and the fixed window.
#![cfg(not(loom))]

mod common;

use common::processes::Scratch;
use common::{at, MS, SECOND};
use librate::{Config, ConfigError, KeyedPolicy, KeyedRule, Policy};
use std::time::Duration;

const ONE: Duration = Duration::from_secs(1);
const HOUR: Duration = Duration::from_secs(3600);

/// Enforced 2 a second, a shadow rule of 1 a second: the shadow rule reports the second
/// request it would deny, takes nothing for it, and denies once enforced.
#[test]
fn shadow_rule_reports_then_enforces() {
    let policy = Policy::new(&[Config::gcra(2, ONE), Config::gcra(1, ONE)]).unwrap();
    policy.set_shadow(0b10).unwrap();
    assert_eq!(policy.shadow(), 0b10);

    let first = policy.acquire_at(1, at(0)).unwrap();
    assert!(first.decision.allowed);
    assert_eq!(first.denied_by, None);
    assert_eq!(first.shadow_denied_by(), None);
    assert!(first.is_shadow(1) && !first.is_shadow(0) && !first.is_shadow(2));
    // Combined over the enforced rule alone: its limit 2 and its 1 token left.
    assert_eq!((first.decision.limit, first.decision.remaining), (2, 1));
    // The shadow rule took its one token.
    assert!(first.rules()[1].allowed);
    assert_eq!(first.rules()[1].remaining, 0);

    let second = policy.acquire_at(1, at(0)).unwrap();
    assert!(second.decision.allowed);
    assert_eq!(second.denied_by, None);
    assert_eq!(second.shadow_denied_by(), Some(1));
    assert!(!second.rules()[1].allowed);
    assert_eq!(second.rules()[1].retry_after_ns, SECOND);
    assert_eq!(second.decision.retry_after_ns, 0);
    assert_eq!(second.decision.remaining, 0);

    // The enforced rule denies (its next token in 500 ms); the shadow rule is only peeked.
    let third = policy.acquire_at(1, at(0)).unwrap();
    assert!(!third.decision.allowed);
    assert_eq!(third.denied_by, Some(0));
    assert_eq!(third.shadow_denied_by(), Some(1));
    assert_eq!(third.decision.retry_after_ns, 500 * MS);

    // Enforced from 1 s on. The shadow rule took one token at 0 (its would-be denial took
    // none): its next is at 1 s, and the one after at 2 s.
    policy.set_shadow(0).unwrap();
    let enforced = policy.acquire_at(1, at(SECOND)).unwrap();
    assert!(enforced.decision.allowed);
    assert!(!enforced.is_shadow(1));
    assert_eq!(enforced.decision.limit, 1);
    let denied = policy.acquire_at(1, at(SECOND)).unwrap();
    assert_eq!(denied.denied_by, Some(1));
    assert_eq!(denied.shadow_denied_by(), None);
    assert_eq!(denied.decision.retry_after_ns, SECOND);
}

/// A request the enforced rule denies takes nothing from the shadow rule: it reports its
/// state as it is, and admits.
#[test]
fn enforced_denial_only_peeks_the_shadow_rule() {
    let policy = Policy::new(&[Config::gcra(1, ONE), Config::gcra(5, ONE)]).unwrap();
    policy.set_shadow(0b10).unwrap();
    assert_eq!(policy.acquire_at(1, at(0)).unwrap().rules()[1].remaining, 4);
    for _ in 0..3 {
        let denied = policy.acquire_at(1, at(0)).unwrap();
        assert_eq!(denied.denied_by, Some(0));
        assert_eq!(denied.shadow_denied_by(), None);
        assert!(denied.rules()[1].allowed);
        assert_eq!(denied.rules()[1].remaining, 4);
    }
    assert!(!policy.try_acquire_at(1, at(0)).unwrap());
    assert_eq!(policy.acquire_at(0, at(0)).unwrap().rules()[1].remaining, 4);
}

/// `try_acquire` answers for the enforced rules and still decides the shadow rules: the
/// shadow rule of 1 a second takes the first request's token and no other.
#[test]
fn try_acquire_decides_shadow_rules() {
    let policy = Policy::new(&[Config::gcra(2, ONE), Config::gcra(1, ONE)]).unwrap();
    policy.set_shadow(0b10).unwrap();
    assert!(policy.try_acquire_at(1, at(0)).unwrap());
    assert!(policy.try_acquire_at(1, at(0)).unwrap());
    assert!(!policy.try_acquire_at(1, at(0)).unwrap());
    assert!(policy.try_acquire_costs_at(&[0, 1], at(0)).unwrap());
    let state = policy.acquire_at(0, at(0)).unwrap();
    assert_eq!(
        (state.rules()[0].remaining, state.rules()[1].remaining),
        (0, 0)
    );
    policy.set_shadow(0).unwrap();
    // One token taken at 0: the shadow rule admits again at 1 s.
    assert!(policy.try_acquire_at(1, at(SECOND)).unwrap());
}

/// A policy of shadow rules alone admits everything, with nothing to combine.
#[test]
fn all_shadow_admits_everything() {
    let policy = Policy::new(&[Config::gcra(1, ONE)]).unwrap();
    policy.set_shadow(1).unwrap();
    for shadow_denied_by in [None, Some(0), Some(0)] {
        let decided = policy.acquire_at(1, at(0)).unwrap();
        assert!(decided.decision.allowed);
        assert_eq!(decided.denied_by, None);
        assert_eq!(decided.shadow_denied_by(), shadow_denied_by);
        assert_eq!(decided.decision.limit, u64::MAX);
        assert_eq!(decided.decision.remaining, u64::MAX);
        assert_eq!(decided.decision.retry_after_ns, 0);
        assert_eq!(decided.decision.reset_after_ns, 0);
    }
    assert!(policy.try_acquire_at(1, at(0)).unwrap());
}

/// A cost of 0 leaves a shadow rule out; a request that costs only shadow rules is a
/// query of the enforced ones.
#[test]
fn costs_leave_shadow_rules_out() {
    let policy = Policy::new(&[Config::gcra(1, ONE), Config::gcra(1, ONE)]).unwrap();
    policy.set_shadow(0b10).unwrap();
    let write = policy.acquire_costs_at(&[1, 0], at(0)).unwrap();
    assert!(write.decision.allowed);
    assert_eq!(write.rules()[1].remaining, 1);
    let denied = policy.acquire_costs_at(&[1, 0], at(0)).unwrap();
    assert_eq!(denied.denied_by, Some(0));
    assert_eq!(denied.shadow_denied_by(), None);
    let shadow_only = policy.acquire_costs_at(&[0, 1], at(0)).unwrap();
    assert!(shadow_only.decision.allowed);
    assert_eq!(shadow_only.shadow_denied_by(), None);
    // The enforced rule, queried: its limit 1, none left.
    assert_eq!(
        (shadow_only.decision.limit, shadow_only.decision.remaining),
        (1, 0)
    );
    assert_eq!(shadow_only.rules()[1].remaining, 0);
    let again = policy.acquire_costs_at(&[0, 1], at(0)).unwrap();
    assert!(again.decision.allowed);
    assert_eq!(again.shadow_denied_by(), Some(1));
}

/// A mask naming a rule past the last is refused, naming the mask and the rule count, and
/// the mask in force stays.
#[test]
fn mask_past_the_rules_is_refused() {
    let policy = Policy::new(&[Config::gcra(1, ONE), Config::gcra(1, ONE)]).unwrap();
    policy.set_shadow(0b01).unwrap();
    let refused = policy.set_shadow(0b101).unwrap_err();
    assert_eq!(refused, ConfigError::ShadowMask { mask: 5, rules: 2 });
    assert_eq!(
        refused.to_string(),
        "shadow mask 0x5 for 2 rules: a shadow mask names only rules the policy holds"
    );
    assert_eq!(policy.shadow(), 1);
    let keyed = KeyedPolicy::new(&[KeyedRule::per_key(Config::gcra(1, ONE))], 4).unwrap();
    assert_eq!(
        keyed.set_shadow(u32::MAX),
        Err(ConfigError::ShadowMask {
            mask: u32::MAX,
            rules: 1
        })
    );
    assert_eq!(keyed.shadow(), 0);
}

/// A keyed policy's shadow per-key rule, key by key: alice's second request is one it
/// would deny; bob's first is not.
#[test]
fn keyed_shadow_rule_per_key() {
    let policy = KeyedPolicy::new(
        &[
            KeyedRule::global(Config::gcra(10, ONE)),
            KeyedRule::per_key(Config::gcra(1, ONE)),
        ],
        16,
    )
    .unwrap();
    policy.set_shadow(0b10).unwrap();
    assert_eq!(
        policy
            .acquire_at(b"alice", 1, at(0))
            .unwrap()
            .shadow_denied_by(),
        None
    );
    let second = policy.acquire_at(b"alice", 1, at(0)).unwrap();
    assert!(second.decision.allowed);
    assert_eq!(second.shadow_denied_by(), Some(1));
    assert_eq!((second.decision.limit, second.decision.remaining), (10, 8));
    let bob = policy.acquire_at(b"bob", 1, at(0)).unwrap();
    assert_eq!(bob.shadow_denied_by(), None);
    assert!(policy.try_acquire_at(b"alice", 1, at(0)).unwrap());
    // Enforced: alice took one token at 0 and none for her would-be denials.
    policy.set_shadow(0).unwrap();
    assert!(
        policy
            .acquire_at(b"alice", 1, at(SECOND))
            .unwrap()
            .decision
            .allowed
    );
    assert_eq!(
        policy
            .acquire_at(b"alice", 1, at(SECOND))
            .unwrap()
            .denied_by,
        Some(1)
    );
}

/// A shadow per-key rule whose table is full cannot decide a new key: the request is
/// decided by the enforced rule alone, never failed.
#[test]
fn keyed_shadow_rule_with_a_full_table_does_not_decide() {
    let policy = KeyedPolicy::new(
        &[
            KeyedRule::global(Config::gcra(10, ONE)),
            KeyedRule::per_key(Config::gcra(1, HOUR)),
        ],
        1,
    )
    .unwrap();
    policy.set_shadow(0b10).unwrap();
    // A table of capacity 1 holds 2 keys (see `KeyedStats::max_keys`): the third is new to
    // a table full of live keys.
    for key in [b"a", b"b", b"c"] {
        let decided = policy.acquire_at(key, 1, at(0)).unwrap();
        assert!(decided.decision.allowed);
        assert_eq!(decided.shadow_denied_by(), None);
    }
    let stats = policy.stats_at(at(0));
    assert_eq!((stats.live_keys, stats.table_full), (2, 1));
    let state = policy.acquire_at(b"c", 0, at(0)).unwrap();
    assert_eq!(state.decision.remaining, 7);
}

/// Two handles of one file: the mask is each handle's own, the shadow rule's state the
/// file's. The handle with the mask takes the shadow rule's unit; the other, enforcing
/// it, is denied by it.
#[test]
fn shared_file_handles_apply_their_own_mask() {
    let scratch = Scratch::new("policy-shadow");
    let path = scratch.path("policy");
    let rules = [
        KeyedRule::global(Config::fixed_window(2, HOUR)),
        KeyedRule::global(Config::fixed_window(1, HOUR)),
    ];
    let shadowing = KeyedPolicy::open(&path, &rules, 4).unwrap();
    let enforcing = KeyedPolicy::open(&path, &rules, 4).unwrap();
    shadowing.set_shadow(0b10).unwrap();
    assert_eq!((shadowing.shadow(), enforcing.shadow()), (0b10, 0));
    let now = at(10 * SECOND);
    assert!(shadowing.acquire_at(b"k", 1, now).unwrap().decision.allowed);
    assert_eq!(
        enforcing.acquire_at(b"k", 1, now).unwrap().denied_by,
        Some(1)
    );
    let second = shadowing.acquire_at(b"k", 1, now).unwrap();
    assert!(second.decision.allowed);
    assert_eq!(second.shadow_denied_by(), Some(1));
    assert_eq!(
        enforcing.acquire_at(b"k", 1, now).unwrap().denied_by,
        Some(0)
    );
    // A new opener starts with every rule enforced.
    assert_eq!(KeyedPolicy::open(&path, &rules, 4).unwrap().shadow(), 0);
}
