//! Policies of several rules (docs/policies.md) against a sequential model built from the rules'
//! own limiters: a request is admitted iff every rule, having admitted exactly the
//! policy's earlier admissions, admits it; a denial changes no rule.

mod common;

use common::models::combine;
use common::{at, random_rule, Rng, MS, SECOND};
use librate::{
    Algorithm, Config, ConfigError, Decision, Instant, InsufficientCapacity, Limiter, Policy,
    PolicyDecision,
};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// The model of one rule: a fresh limiter of it, given the policy's admissions so far.
fn replayed(rule: &Config, admitted: &[(u64, u64)]) -> Limiter {
    let limiter = Limiter::new(rule).unwrap();
    for &(n, t) in admitted {
        assert!(
            limiter.acquire_at(n, at(t)).unwrap().allowed,
            "the model replays admissions"
        );
    }
    limiter
}

/// What the policy of `rules` must decide for `n` units at `now` after `admitted`.
fn model(rules: &[Config], admitted: &[(u64, u64)], n: u64, now: u64) -> PolicyDecision {
    let taken: Vec<Decision> = rules
        .iter()
        .map(|rule| replayed(rule, admitted).acquire_at(n, at(now)).unwrap())
        .collect();
    let (decision, denied_by, each) = combine(taken, |i| {
        replayed(&rules[i], admitted)
            .acquire_at(0, at(now))
            .unwrap()
    });
    // A PolicyDecision is compared through its public parts (see `same`).
    let policy = Policy::new(rules).unwrap();
    let mut expected = policy.acquire_at(0, Instant::ZERO).unwrap();
    expected.decision = decision;
    expected.denied_by = denied_by;
    assert_eq!(expected.rules().len(), each.len());
    EXPECTED_RULES.with(|slot| *slot.borrow_mut() = each);
    expected
}

thread_local! {
    /// The rules' decisions of the last `model` call.
    static EXPECTED_RULES: std::cell::RefCell<Vec<Decision>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Random policies of 1 to 4 rules of any mix, random costs (queries and costs past the
/// limit included) and times (mostly forward, sometimes back): every decision, every
/// rule's, and every refusal is the model's.
#[test]
fn policies_decide_as_their_rules_would_together() {
    let mut rng = Rng::new(0x5eed_0004);
    for case in 0..300 {
        let rules: Vec<Config> = (0..rng.range(1, 5))
            .map(|_| random_rule(&mut rng))
            .collect();
        let policy = Policy::new(&rules).unwrap();
        let limit = rules
            .iter()
            .map(|rule| {
                Limiter::new(rule)
                    .unwrap()
                    .acquire_at(0, Instant::ZERO)
                    .unwrap()
                    .limit
            })
            .min()
            .unwrap();
        assert_eq!(policy.limit(), limit);
        let mut admitted = Vec::new();
        let mut now = rng.below(10 * SECOND);
        for step in 0..40 {
            now = if rng.chance(10) {
                now.saturating_sub(rng.below(2 * SECOND))
            } else {
                now + rng.below(700 * MS)
            };
            let n = rng.below(limit + 2);
            if n > limit {
                assert_eq!(policy.acquire_at(n, at(now)), Err(InsufficientCapacity));
                assert_eq!(policy.try_acquire_at(n, at(now)), Err(InsufficientCapacity));
                continue;
            }
            let want = model(&rules, &admitted, n, now);
            let got = if rng.chance(30) && n > 0 {
                // The bool form takes as the full one does.
                let allowed = policy.try_acquire_at(n, at(now)).unwrap();
                assert_eq!(
                    allowed, want.decision.allowed,
                    "case {case} step {step}: {rules:?}"
                );
                if allowed {
                    admitted.push((n, now));
                }
                continue;
            } else {
                policy.acquire_at(n, at(now)).unwrap()
            };
            let context = format!("case {case} step {step}: n {n} at {now}, {rules:?}");
            assert_eq!(got.decision, want.decision, "{context}");
            assert_eq!(got.denied_by, want.denied_by, "{context}");
            EXPECTED_RULES.with(|each| assert_eq!(got.rules(), &each.borrow()[..], "{context}"));
            if got.decision.allowed && n > 0 {
                admitted.push((n, now));
            }
        }
    }
}

#[test]
fn a_policy_has_one_to_eight_valid_rules() {
    let rule = Config::per_second(1);
    let none = Policy::new(&[]).unwrap_err();
    assert_eq!(none, ConfigError::PolicyRules { rules: 0 });
    assert_eq!(none.to_string(), "a policy holds 1 to 8 rules, not 0");
    assert_eq!(
        Policy::new(&[rule; 9]).unwrap_err(),
        ConfigError::PolicyRules { rules: 9 }
    );
    assert!(Policy::new(&[rule; 8]).is_ok());
    // The invalid rule is named (docs/policies.md), with its own error.
    let zero = Policy::new(&[
        rule,
        Config::new(Algorithm::FixedWindow, 0, Duration::from_secs(1)),
    ])
    .unwrap_err();
    assert_eq!(
        zero,
        ConfigError::PolicyRule {
            rule: 1,
            why: Box::new(ConfigError::ZeroLimit)
        }
    );
    assert_eq!(zero.to_string(), "rule 1: limit 0: must be at least 1");
    let policy = Policy::new(&[rule, Config::sliding_log(3, Duration::from_secs(1))]).unwrap();
    assert_eq!(
        policy.rules().copied().collect::<Vec<_>>(),
        [rule, Config::sliding_log(3, Duration::from_secs(1))]
    );
}

/// Two sliding logs: the first is asked before it takes, so the second's denial leaves
/// it as it was.
#[test]
fn a_log_denied_by_a_later_log_keeps_nothing() {
    let policy = Policy::new(&[
        Config::sliding_log(5, Duration::from_secs(1)),
        Config::sliding_log(2, Duration::from_secs(60)),
    ])
    .unwrap();
    assert!(
        policy
            .acquire_at(1, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    assert!(
        policy
            .acquire_at(1, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    let denied = policy.acquire_at(1, Instant::ZERO).unwrap();
    assert_eq!(denied.denied_by, Some(1));
    // The per-second log holds the two admitted units only: 3 left of 5.
    assert_eq!(denied.rules()[0].remaining, 3);
    assert_eq!(denied.decision.retry_after_ns, 60 * SECOND);
}

/// 4 threads take one unit at a time from a two-rule policy at one frozen time until each
/// is denied: exactly the tighter rule's limit is admitted, and neither rule is past its
/// limit, whichever rule is the tighter and whichever comes first.
#[test]
fn threads_admit_exactly_the_tightest_limit() {
    let pairs = [
        [Config::per_second(50), Config::per_second(20)],
        [Config::per_second(20), Config::per_second(50)],
        [
            Config::fixed_window(30, Duration::from_secs(1)),
            Config::sliding_window(25, Duration::from_secs(1)),
        ],
        [
            Config::sliding_log(40, Duration::from_secs(1)),
            Config::per_second(35),
        ],
    ];
    for rules in pairs {
        for _ in 0..20 {
            let policy = Policy::new(&rules).unwrap();
            let admitted = AtomicU64::new(0);
            std::thread::scope(|scope| {
                for _ in 0..4 {
                    scope.spawn(|| {
                        while policy.try_acquire_at(1, at(SECOND)).unwrap() {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    });
                }
            });
            let tightest = policy.limit();
            assert_eq!(admitted.load(Ordering::Relaxed), tightest, "{rules:?}");
            let state = policy.acquire_at(0, at(SECOND)).unwrap();
            for (rule, decision) in rules.iter().zip(state.rules()) {
                // Within its limit: what it holds is at least the admitted units.
                assert!(decision.limit - decision.remaining >= tightest, "{rule:?}");
            }
        }
    }
}

/// Through the library's clock (the cheap clock's bounds, or the exact time for a rule
/// they leave undecided): the tightest rule's limit exactly, and the other rules hold
/// exactly the admitted units, the denied ones given back (by each rule before the
/// denying one, with three).
#[test]
fn through_the_clock_as_at_one_time() {
    const HOUR: Duration = Duration::from_secs(3600);
    let cases: [&[Config]; 6] = [
        &[
            Config::gcra(1, HOUR).with_burst(5),
            Config::fixed_window(3, HOUR),
        ],
        &[
            Config::sliding_window(3, HOUR),
            Config::gcra(1, HOUR).with_burst(5),
        ],
        &[
            Config::per_second(1_000_000).with_burst(5),
            Config::sliding_log(3, HOUR),
        ],
        &[
            Config::gcra(1, HOUR).with_burst(5),
            Config::gcra(1, HOUR).with_burst(4),
            Config::gcra(1, HOUR).with_burst(3),
        ],
        &[
            Config::gcra(1, HOUR).with_burst(4),
            Config::fixed_window(5, HOUR),
            Config::sliding_window(3, HOUR),
        ],
        &[Config::gcra(1, HOUR).with_burst(3)],
    ];
    for rules in cases {
        let policy = Policy::new(rules).unwrap();
        let admitted = (0..10).filter(|_| policy.try_acquire(1).unwrap()).count();
        assert_eq!(admitted, 3, "{rules:?}");
        let state = policy.acquire(0).unwrap();
        let held: Vec<u64> = state
            .rules()
            .iter()
            .map(|d| d.limit - d.remaining)
            .collect();
        // The per-hour rules hold exactly the 3 admitted units; a million a second drains
        // in microseconds.
        for (rule, held) in rules.iter().zip(held) {
            if rule.period() == HOUR {
                assert_eq!(held, 3, "{rule:?}");
            }
        }
    }
}

/// 3 threads take from an all-GCRA policy at one frozen time while another lowers the
/// first rule's burst from 50 to 20: every caller that sees the change done gets an error
/// for a cost past the new burst (not a denial), nothing is lost or counted twice, and
/// the first rule ends empty.
#[test]
fn a_lowered_limit_binds_every_caller_after_the_change() {
    const HOUR: Duration = Duration::from_secs(3600);
    let now = 10 * SECOND;
    // 1 an hour: nothing refills at one frozen time. The second rule never denies.
    let built = [
        Config::gcra(1, HOUR).with_burst(50),
        Config::gcra(1, HOUR).with_burst(100),
    ];
    let lowered = [Config::gcra(1, HOUR).with_burst(20), built[1]];
    for _ in 0..20 {
        let policy = Policy::new(&built).unwrap();
        let done = AtomicBool::new(false);
        let admitted: u64 = std::thread::scope(|scope| {
            let takers: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        let mut admitted = 0;
                        loop {
                            let after = done.load(Ordering::Acquire);
                            // 30 units: within the built bursts, past the lowered one.
                            let large = policy.try_acquire_at(30, at(now));
                            match large {
                                Ok(true) => admitted += 30,
                                Ok(false) => assert!(!after, "a denial, not an error"),
                                Err(error) => assert_eq!(error, InsufficientCapacity),
                            }
                            if after {
                                assert_eq!(policy.try_acquire(30), Err(InsufficientCapacity));
                                assert_eq!(
                                    policy.acquire_at(30, at(now)),
                                    Err(InsufficientCapacity)
                                );
                            }
                            if policy.try_acquire_at(1, at(now)).unwrap() {
                                admitted += 1;
                            } else if after {
                                return admitted;
                            }
                        }
                    })
                })
                .collect();
            // Once at least 10 units are taken, so the change meets a bucket in use.
            while policy.acquire_at(0, at(now)).unwrap().rules()[0].remaining > 40 {
                std::hint::spin_loop();
            }
            policy.set_rules_at(&lowered, at(now)).unwrap();
            done.store(true, Ordering::Release);
            takers.into_iter().map(|taker| taker.join().unwrap()).sum()
        });
        // k units before the change leave min(50 - k, 20) tokens after it, k ≥ 10.
        assert!((30..=50).contains(&admitted), "{admitted}");
        let state = policy.acquire_at(0, at(now)).unwrap();
        assert_eq!(state.rules()[0].remaining, 0);
        assert_eq!(state.rules()[1].remaining, 100 - admitted);
    }
}
