//! Keyed policies against a sequential model: each rule is its own limiter, one per key
//! for a per-key rule and one for everybody for a global rule, given the policy's
//! admissions so far; a request is admitted iff every rule it costs admits it, and a
//! denial changes no rule.

mod common;

use common::{at, Rng, MS, SECOND};
use librate::{
    AcquireError, Config, ConfigError, CostsError, Decision, Instant, InsufficientCapacity,
    KeyedAcquireError, KeyedPolicy, KeyedRule, Limiter, Policy, PolicyDecision,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// An admitted request: its key, its costs and its time.
struct Admitted {
    key: usize,
    costs: Vec<u64>,
    at: u64,
}

/// The model of rule `rule` for `key`: a fresh limiter given the admissions that cost it
/// (of `key` alone for a per-key rule, of every key for a global one).
fn replayed(rules: &[KeyedRule], rule: usize, key: usize, admitted: &[Admitted]) -> Limiter {
    let limiter = Limiter::new(rules[rule].config()).unwrap();
    let counted = admitted
        .iter()
        .filter(|past| past.costs[rule] > 0 && (!rules[rule].is_per_key() || past.key == key));
    for past in counted {
        let decision = limiter.acquire_at(past.costs[rule], at(past.at)).unwrap();
        assert!(decision.allowed, "the model replays admissions");
    }
    limiter
}

/// What the policy must decide for `key`'s request of `costs` at `now`: the combined
/// decision, the denying rule and each rule's decision.
fn model(
    rules: &[KeyedRule],
    admitted: &[Admitted],
    key: usize,
    costs: &[u64],
    now: u64,
) -> (Decision, Option<usize>, Vec<Decision>) {
    let model = |rule| replayed(rules, rule, key, admitted);
    let taken: Vec<Decision> = (0..rules.len())
        .map(|rule| model(rule).acquire_at(costs[rule], at(now)).unwrap())
        .collect();
    let denied_by = taken.iter().position(|decision| !decision.allowed);
    let each: Vec<Decision> = match denied_by {
        None => taken,
        Some(_) => (0..rules.len())
            .map(|rule| Decision {
                allowed: taken[rule].allowed,
                retry_after_ns: taken[rule].retry_after_ns,
                ..model(rule).acquire_at(0, at(now)).unwrap()
            })
            .collect(),
    };
    let query = costs.iter().all(|&cost| cost == 0);
    let counted: Vec<&Decision> = each
        .iter()
        .zip(costs)
        .filter(|(_, &cost)| query || cost > 0)
        .map(|(decision, _)| decision)
        .collect();
    let decision = Decision {
        allowed: denied_by.is_none(),
        limit: counted.iter().map(|d| d.limit).min().unwrap(),
        remaining: counted.iter().map(|d| d.remaining).min().unwrap(),
        retry_after_ns: counted.iter().map(|d| d.retry_after_ns).max().unwrap(),
        reset_after_ns: counted.iter().map(|d| d.reset_after_ns).max().unwrap(),
        wait_ns: 0,
    };
    (decision, denied_by, each)
}

/// A random rule of any algorithm, per key or global, with limits small enough that
/// sequences reach them.
fn random_rule(rng: &mut Rng) -> KeyedRule {
    let limit = rng.range(1, 6);
    let period = [100 * MS, SECOND, 7 * SECOND][rng.below(3) as usize];
    let config = match rng.below(4) {
        0 => Config::gcra(limit, Duration::from_nanos(period)).with_burst(rng.range(1, 6)),
        1 => Config::fixed_window(limit, Duration::from_nanos(period)),
        2 => Config::sliding_window(limit, Duration::from_nanos(period)),
        _ => Config::sliding_log(limit, Duration::from_nanos(period)),
    };
    if rng.chance(60) {
        KeyedRule::per_key(config)
    } else {
        KeyedRule::global(config)
    }
}

/// Random keyed policies of 1 to 4 rules, random keys, costs per rule (0 leaving a rule
/// out, past a limit now and then) and times (mostly forward, sometimes back): every
/// decision, every rule's, and every refusal is the model's.
#[test]
fn keyed_policies_decide_as_their_rules_would_together() {
    const KEYS: [&[u8]; 3] = [b"alice", b"bob", b""];
    let mut rng = Rng::new(0x5eed_0004_cafe);
    let (mut admissions, mut denials) = (0, 0);
    for case in 0..300 {
        let rules: Vec<KeyedRule> = (0..rng.range(1, 5))
            .map(|_| random_rule(&mut rng))
            .collect();
        // Room for every key and every slot a denied insert retires: no key is dropped.
        let policy = KeyedPolicy::new(&rules, 1024).unwrap();
        assert_eq!(policy.rules().collect::<Vec<_>>(), rules);
        let mut admitted = Vec::new();
        let mut now = rng.below(10 * SECOND);
        for step in 0..50 {
            now = if rng.chance(10) {
                now.saturating_sub(rng.below(2 * SECOND))
            } else {
                now + rng.below(500 * MS)
            };
            let key = rng.below(KEYS.len() as u64) as usize;
            let uniform = rng.chance(30);
            let costs: Vec<u64> = if uniform {
                vec![rng.below(policy.limit() + 2); rules.len()]
            } else {
                let limits = rules.iter().map(|rule| rule.config().limit);
                limits
                    .map(|limit| match rng.below(20) {
                        0..=7 => 0,
                        8 => limit + 1,
                        _ => rng.range(1, limit),
                    })
                    .collect()
            };
            let context =
                format!("case {case} step {step}: key {key} {costs:?} at {now}, {rules:?}");
            let too_large = rules.iter().zip(&costs).any(|(rule, &cost)| {
                Limiter::new(rule.config())
                    .unwrap()
                    .acquire_at(cost, Instant::ZERO)
                    == Err(AcquireError::InsufficientCapacity)
            });
            if too_large {
                let got = policy.acquire_costs_at(KEYS[key], &costs, at(now));
                let refused = CostsError::Acquire(KeyedAcquireError::InsufficientCapacity);
                assert_eq!(got, Err(refused), "{context}");
                continue;
            }
            let (decision, denied_by, each) = model(&rules, &admitted, key, &costs, now);
            if rng.chance(30) && costs.iter().any(|&cost| cost > 0) {
                let allowed = if uniform {
                    policy
                        .try_acquire_at(KEYS[key], costs[0], at(now))
                        .map_err(CostsError::from)
                } else {
                    policy.try_acquire_costs_at(KEYS[key], &costs, at(now))
                };
                assert_eq!(allowed, Ok(decision.allowed), "{context}");
            } else {
                let got: PolicyDecision = if uniform {
                    policy
                        .acquire_at(KEYS[key], costs[0], at(now))
                        .map_err(CostsError::from)
                } else {
                    policy.acquire_costs_at(KEYS[key], &costs, at(now))
                }
                .unwrap();
                assert_eq!(got.decision, decision, "{context}");
                assert_eq!(got.denied_by, denied_by, "{context}");
                assert_eq!(got.rules(), &each[..], "{context}");
            }
            if !decision.allowed {
                denials += 1;
            } else if costs.iter().any(|&cost| cost > 0) {
                admissions += 1;
                admitted.push(Admitted {
                    key,
                    costs,
                    at: now,
                });
            }
        }
    }
    assert!(
        admissions > 3000 && denials > 2000,
        "{admissions} {denials}"
    );
}

/// 4 threads take one unit at a time, at one frozen time, until each is denied: exactly
/// the tightest limit is admitted, and no rule holds more than its limit. The per-key rule
/// takes first, so a global denial gives back in keys no other thread touches; or all
/// threads share one key.
#[test]
fn threads_admit_exactly_the_tightest_limit() {
    let policies: [(KeyedRule, KeyedRule, bool, u64); 4] = [
        // Each thread its own key: 4 × 10 per key, 25 for everybody.
        (
            KeyedRule::per_key(Config::per_second(10)),
            KeyedRule::global(Config::fixed_window(25, Duration::from_secs(1))),
            false,
            25,
        ),
        (
            KeyedRule::per_key(Config::sliding_window(5, Duration::from_secs(1))),
            KeyedRule::global(Config::per_second(50)),
            false,
            20,
        ),
        // One key for every thread, per-key rule tighter, second.
        (
            KeyedRule::global(Config::per_second(50)),
            KeyedRule::per_key(Config::fixed_window(20, Duration::from_secs(1))),
            true,
            20,
        ),
        (
            KeyedRule::per_key(Config::sliding_log(30, Duration::from_secs(1))),
            KeyedRule::global(Config::sliding_window(12, Duration::from_secs(1))),
            true,
            12,
        ),
    ];
    for (first, second, one_key, tightest) in policies {
        for _ in 0..20 {
            let policy = KeyedPolicy::new(&[first, second], 100).unwrap();
            let admitted = AtomicU64::new(0);
            std::thread::scope(|scope| {
                for thread in 0..4u8 {
                    let (policy, admitted) = (&policy, &admitted);
                    scope.spawn(move || {
                        let key = [if one_key { 0 } else { thread }];
                        while policy.try_acquire_at(&key, 1, at(SECOND)).unwrap() {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            });
            assert_eq!(
                admitted.load(Ordering::Relaxed),
                tightest,
                "{first:?} {second:?}"
            );
            for thread in 0..4u8 {
                let state = policy.acquire_at(&[thread], 0, at(SECOND)).unwrap();
                for decision in state.rules() {
                    assert!(decision.remaining <= decision.limit);
                }
            }
            // The global rule holds at least every admitted unit.
            let global = usize::from(first.is_per_key());
            let state = policy.acquire_at(b"anyone", 0, at(SECOND)).unwrap();
            let held = state.rules()[global].limit - state.rules()[global].remaining;
            assert!(held >= tightest, "{first:?} {second:?}: {held}");
        }
    }
}

/// A new key that a later rule's table refuses as full: the rules before it give back
/// (a new key's insert by making the key absent again), and the request is `TableFull`.
#[test]
fn a_full_table_after_others_took_gives_everything_back() {
    let posts = Config::per_second(1);
    let friends = Config::fixed_window(150, Duration::from_secs(86_400));
    let everybody = Config::per_second(10);
    // Capacity 1: two slots per table.
    let policy = KeyedPolicy::new(
        &[
            KeyedRule::global(everybody),
            KeyedRule::per_key(posts),
            KeyedRule::per_key(friends),
        ],
        1,
    )
    .unwrap();
    for key in [b"x", b"y"] {
        assert!(
            policy
                .acquire_costs_at(key, &[0, 0, 1], Instant::ZERO)
                .unwrap()
                .decision
                .allowed
        );
    }
    let refused = policy.acquire_costs_at(b"z", &[1, 1, 1], Instant::ZERO);
    let table_full = CostsError::Acquire(KeyedAcquireError::TableFull);
    assert_eq!(refused, Err(table_full));
    let state = policy.acquire_at(b"z", 0, Instant::ZERO).unwrap();
    let remaining: Vec<u64> = state.rules().iter().map(|rule| rule.remaining).collect();
    // Everybody: 10, nothing taken; z's posts: 1, fresh; z's friends: 150, fresh.
    assert_eq!(remaining, [10, 1, 150]);
    let stats = policy.stats_at(Instant::ZERO);
    assert_eq!((stats.capacity, stats.max_keys), (1, 2));
    assert_eq!((stats.live_keys, stats.table_full), (2, 1));
    // The bool form refuses alike, and counts the refusal.
    assert_eq!(
        policy.try_acquire_costs_at(b"z", &[1, 1, 1], Instant::ZERO),
        Err(table_full)
    );
    assert_eq!(policy.stats_at(Instant::ZERO).table_full, 2);
    // z's two inserts, given back, hold the posts table's two slots under no key until
    // their state is fresh (a second after 0), then the table has room again.
    let x = |now| policy.acquire_costs_at(b"x", &[1, 1, 1], now);
    assert_eq!(x(Instant::ZERO), Err(table_full));
    assert!(x(at(SECOND + 1)).unwrap().decision.allowed);
}

/// A denied request that inserted its key in an earlier rule's table leaves the key
/// absent there (fresh), and the key's next request is decided as a new key's.
#[test]
fn a_denied_insert_leaves_its_key_fresh() {
    let policy = KeyedPolicy::new(
        &[
            KeyedRule::per_key(Config::per_second(1)),
            KeyedRule::per_key(Config::fixed_window(1, Duration::from_secs(60))),
        ],
        8,
    )
    .unwrap();
    // alice is in the second table only, and full there.
    assert!(
        policy
            .acquire_costs_at(b"alice", &[0, 1], Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    let denied = policy
        .acquire_costs_at(b"alice", &[1, 1], Instant::ZERO)
        .unwrap();
    assert_eq!(denied.denied_by, Some(1));
    assert_eq!(denied.rules()[0].remaining, 1);
    // The first rule admits her as new, at the same instant.
    let first = policy
        .acquire_costs_at(b"alice", &[1, 0], Instant::ZERO)
        .unwrap();
    assert!(first.decision.allowed);
    assert_eq!(first.decision.remaining, 0);
    assert_eq!(policy.stats_at(Instant::ZERO).live_keys, 1);
}

/// A reset makes the key's per-key rules fresh and leaves the global rules as they are.
#[test]
fn reset_forgets_a_key_in_its_per_key_rules_only() {
    let policy = KeyedPolicy::new(
        &[
            KeyedRule::per_key(Config::per_minute(1)),
            KeyedRule::global(Config::fixed_window(5, Duration::from_secs(60))),
        ],
        8,
    )
    .unwrap();
    assert!(
        policy
            .acquire_at(b"bob", 1, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    assert_eq!(
        policy.acquire_at(b"bob", 1, at(SECOND)).unwrap().denied_by,
        Some(0)
    );
    policy.reset(b"bob").unwrap();
    policy.reset(b"carol").unwrap();
    let again = policy.acquire_at(b"bob", 1, at(SECOND)).unwrap();
    assert!(again.decision.allowed);
    // Two admitted in all: the global rule remembers both.
    assert_eq!(again.rules()[1].remaining, 3);
}

#[test]
fn bad_input_is_an_error() {
    let rule = KeyedRule::per_key(Config::per_second(2));
    let rules_error = |rules| ConfigError::PolicyRules { rules };
    assert_eq!(KeyedPolicy::new(&[], 8).unwrap_err(), rules_error(0));
    assert_eq!(KeyedPolicy::new(&[rule; 9], 8).unwrap_err(), rules_error(9));
    assert_eq!(
        KeyedPolicy::new(&[rule], 0).unwrap_err(),
        ConfigError::ZeroCapacity
    );
    // A GCRA key takes 32 bytes.
    assert_eq!(
        KeyedPolicy::new(&[rule], u64::MAX).unwrap_err(),
        ConfigError::Capacity {
            capacity: u64::MAX,
            bytes_per_key: 32
        }
    );
    // A rule's own error names the rule (docs/policies.md).
    assert_eq!(
        KeyedPolicy::new(&[KeyedRule::global(Config::per_second(0))], 8).unwrap_err(),
        ConfigError::PolicyRule {
            rule: 0,
            why: Box::new(ConfigError::ZeroLimit)
        }
    );
    let policy = KeyedPolicy::new(&[rule, KeyedRule::global(Config::per_second(5))], 8).unwrap();
    assert_eq!(policy.limit(), 2);
    assert_eq!(policy.bytes_per_key(), 32);
    assert_eq!(
        policy
            .acquire_costs_at(b"k", &[1], Instant::ZERO)
            .unwrap_err(),
        CostsError::CostCount { costs: 1 }
    );
    // Its sentence is the configuration error's, as Python and Go give it.
    assert_eq!(
        CostsError::<InsufficientCapacity>::CostCount { costs: 1 }.to_string(),
        "1 costs: a policy request gives one cost per rule"
    );
    assert_eq!(
        policy.try_acquire_costs_at(b"k", &[1, 1, 1], Instant::ZERO),
        Err(CostsError::CostCount { costs: 3 })
    );
    assert_eq!(
        policy.acquire_at(b"k", 3, Instant::ZERO),
        Err(KeyedAcquireError::InsufficientCapacity)
    );
    assert_eq!(
        policy.try_acquire_costs_at(b"k", &[0, 6], Instant::ZERO),
        Err(CostsError::Acquire(KeyedAcquireError::InsufficientCapacity))
    );
    // Nothing was taken by any of those.
    assert_eq!(
        policy
            .acquire_at(b"k", 0, Instant::ZERO)
            .unwrap()
            .decision
            .remaining,
        2
    );
    // A policy's costs per rule, in process, check alike.
    let plain = Policy::new(&[Config::per_second(2)]).unwrap();
    assert_eq!(
        plain.acquire_costs_at(&[1, 1], Instant::ZERO).unwrap_err(),
        CostsError::CostCount { costs: 2 }
    );
    assert_eq!(
        plain.try_acquire_costs_at(&[3], Instant::ZERO),
        Err(CostsError::Acquire(InsufficientCapacity))
    );
}
