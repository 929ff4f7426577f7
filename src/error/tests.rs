//! The sentences of rejected configurations, from docs/decision.md's bounds, and the
//! field, value and bound each error carries.

use super::*;
use crate::limiter::Limiter;
use crate::Config;
use crate::Instant;
use std::time::Duration;

const SECOND: u64 = 1_000_000_000;
/// 2⁶⁴ − 257, the largest storable state (docs/decision.md, the end of the timeline).
const END: u64 = u64::MAX - 256;

fn rejected(config: Config) -> ConfigError {
    match Limiter::new(&config) {
        Err(why) => why,
        other => panic!("{config:?}: {other:?}"),
    }
}

#[test]
fn the_sentences_every_language_gives() {
    // docs/decision.md, Configuration.
    let zero = rejected(Config::per_second(0));
    assert_eq!(zero.to_string(), "limit 0: must be at least 1");
    assert_eq!(
        Error::InvalidConfig(zero).to_string(),
        "invalid configuration: limit 0: must be at least 1"
    );
    // floor(P / L) >= 1: L at most P.
    assert_eq!(
        rejected(Config::gcra(SECOND + 1, Duration::from_secs(1))).to_string(),
        "limit 1000000001: must be at most 1000000000 for GCRA with period_ns 1000000000 \
         (at most one unit per ns)"
    );
    // floor((2^64 - 1) / 10^9) = 18446744073; times 2^29 plus L fits below 2^64 - 257
    // for every L of 29 bits, times 2^30 does not.
    assert_eq!(
        rejected(Config::fixed_window(SECOND, Duration::from_secs(1))).to_string(),
        "limit 1000000000: must be at most 536870911 for the fixed window with period_ns \
         1000000000"
    );
    assert_eq!(
        ConfigError::ZeroCapacity.to_string(),
        "capacity 0: must be at least 1"
    );
}

#[test]
fn each_rejection_names_its_field_value_and_bound() {
    let cases = [
        (
            Config::sliding_log(1, Duration::ZERO),
            "period_ns 0: must be at least 1",
        ),
        // 2 * floor(P / 1) <= 2^64 - 257 up to P = 2^63 - 129.
        (
            Config::gcra(1, Duration::from_nanos(u64::MAX - 1)).with_burst(2),
            "period_ns 18446744073709551614: must be at most 9223372036854775679 for GCRA \
             with limit 1 and burst 2 (burst x (period_ns / limit) must be at most \
             2^64 - 257 ns)",
        ),
        // T = 18446744073 * 10^9 <= 2^64 - 257 < 2T: a burst of 1.
        (
            Config::gcra(1, Duration::from_secs(18_446_744_073)).with_burst(2),
            "burst 2: must be at most 1 for GCRA with limit 1 and period_ns \
             18446744073000000000 (burst x (period_ns / limit) must be at most 2^64 - 257 ns)",
        ),
        // Burst 0 is L = 2: 2 * floor(P / 2) <= 2^64 - 257 up to P = 2^64 - 257.
        (
            Config::gcra(2, Duration::from_nanos(u64::MAX - 1)),
            "period_ns 18446744073709551614: must be at most 18446744073709551359 for GCRA \
             with limit 2 (limit x (period_ns / limit) must be at most 2^64 - 257 ns)",
        ),
        (
            Config::sliding_window(SECOND, Duration::from_secs(1)),
            "limit 1000000000: must be at most 536870911 for the sliding window with \
             period_ns 1000000000",
        ),
        (
            Config::sliding_log((1 << 20) + 1, Duration::from_secs(1)),
            "limit 1048577: must be at most 1048576 for the sliding log with period_ns \
             1000000000",
        ),
        // L = 1: floor((2^64 - 1) / P) * 2 + 1 <= 2^64 - 257 from P = 3 on.
        (
            Config::fixed_window(1, Duration::from_nanos(1)),
            "period_ns 1: must be at least 3 for the fixed window with limit 1",
        ),
        // A period that never ends holds up to 2^64 - 257 units.
        (
            Config::fixed_window(u64::MAX, Config::FOREVER),
            "limit 18446744073709551615: must be at most 18446744073709551359 for the fixed \
             window with period_ns 18446744073709551615",
        ),
        // More than one unit per ns, and a burst no period holds: two fields to change.
        (
            Config::gcra(5, Duration::from_nanos(3)).with_burst(u64::MAX),
            "limit 5 with period_ns 3 and burst 18446744073709551615: period_ns / limit \
             must be at least 1 ns (at most one unit per ns)",
        ),
    ];
    for (config, sentence) in cases {
        assert_eq!(rejected(config).to_string(), sentence, "{config:?}");
    }
}

#[test]
fn the_accessors_say_what_the_sentence_says() {
    let too_fast = rejected(Config::gcra(SECOND + 1, Duration::from_secs(1)));
    assert!(matches!(too_fast, ConfigError::RateTooHigh(_)));
    assert_eq!(too_fast.field(), Some(Field::Limit));
    assert_eq!(too_fast.value(), Some(SECOND + 1));
    assert_eq!(too_fast.bound(), Some(Bound::AtMost(SECOND)));
    let forever = rejected(Config::gcra(1, Config::FOREVER).with_burst(END + 1));
    assert!(matches!(forever, ConfigError::LimitTooLarge(_)));
    assert_eq!(
        (forever.field(), forever.value(), forever.bound()),
        (Some(Field::Burst), Some(END + 1), Some(Bound::AtMost(END)))
    );
    let zero = rejected(Config::fixed_window(1, Duration::ZERO));
    assert_eq!(
        (zero.field(), zero.value(), zero.bound()),
        (Some(Field::PeriodNs), Some(0), Some(Bound::AtLeast(1)))
    );
    let two_fields = rejected(Config::gcra(5, Duration::from_nanos(3)).with_burst(u64::MAX));
    assert_eq!(
        (two_fields.field(), two_fields.value(), two_fields.bound()),
        (None, None, None)
    );
    let table = ConfigError::Capacity {
        capacity: 1 << 61,
        bytes_per_key: 32,
    };
    assert_eq!(
        (table.field(), table.value(), table.bound()),
        (Some(Field::Capacity), Some(1 << 61), None)
    );
    // 2^61 keys of 32 bytes: 2^66 bytes.
    assert_eq!(
        table.to_string(),
        "capacity 2305843009213693952: its table needs 73786976294838206464 bytes (32 per \
         key), more than can be allocated"
    );
    assert_eq!(ConfigError::LiveChange.field(), None);
}

#[test]
fn a_live_change_says_what_carries_over() {
    assert_eq!(
        ConfigError::LiveChange.to_string(),
        "a live change keeps the algorithm (and the number of rules), and a sliding log's \
         rule does not change"
    );
}

#[test]
fn policies_and_redis_say_what_go_and_python_say() {
    // bindings/go policy.go, bindings/python librate/_policy.py.
    assert_eq!(
        ConfigError::PolicyRules { rules: 9 }.to_string(),
        "a policy holds 1 to 8 rules, not 9"
    );
    // bindings/go policy.go.
    assert_eq!(
        ConfigError::PolicyCosts { costs: 3 }.to_string(),
        "3 costs: a policy request gives one cost per rule"
    );
    // bindings/go redis.go.
    assert_eq!(
        ConfigError::NotExactOnRedis.to_string(),
        "on Redis, burst x (period_ns / limit) and period_ns must be below 2^53 ns (about \
         104 days)"
    );
    // bindings/go/redis policy.go: the prefix quoted (Python: its repr).
    let prefix = b"api{".to_vec();
    assert_eq!(
        ConfigError::RedisPrefix { prefix }.to_string(),
        "a Redis policy's prefix must not contain '{' or '}': \"api{\""
    );
}

#[test]
fn a_policy_names_its_invalid_rule_as_go_does() {
    // bindings/go policy.go: "rule 1: " and the rule's own sentence.
    let zero = crate::Policy::new(&[
        Config::gcra(10, Duration::from_nanos(SECOND)),
        Config::gcra(0, Duration::from_nanos(SECOND)),
    ]);
    let Err(why) = zero else {
        panic!("{zero:?}");
    };
    assert_eq!(
        why,
        ConfigError::PolicyRule {
            rule: 1,
            why: Box::new(ConfigError::ZeroLimit)
        }
    );
    assert_eq!(why.to_string(), "rule 1: limit 0: must be at least 1");
    assert_eq!(
        Error::InvalidConfig(why.clone()).to_string(),
        "invalid configuration: rule 1: limit 0: must be at least 1"
    );
    assert_eq!(
        (why.field(), why.value(), why.bound()),
        (Some(Field::Limit), Some(0), Some(Bound::AtLeast(1)))
    );
    // floor(P / L) >= 1: L at most P.
    let too_fast = crate::Policy::new(&[
        Config::fixed_window(3, Duration::from_nanos(SECOND)),
        Config::sliding_log(2, Duration::from_nanos(SECOND)),
        Config::gcra(SECOND + 1, Duration::from_nanos(SECOND)),
    ]);
    assert_eq!(
        too_fast.unwrap_err().to_string(),
        "rule 2: limit 1000000001: must be at most 1000000000 for GCRA \
         with period_ns 1000000000 (at most one unit per ns)"
    );
}

#[test]
fn a_keyed_policy_names_its_rule_but_not_its_capacity() {
    use crate::{KeyedPolicy, KeyedRule};
    let rules = [
        KeyedRule::per_key(Config::sliding_window(1, Duration::from_nanos(0))),
        KeyedRule::global(Config::gcra(1, Duration::from_nanos(SECOND))),
    ];
    let period = KeyedPolicy::new(&rules, 10).unwrap_err();
    assert_eq!(
        period.to_string(),
        "rule 0: period_ns 0: must be at least 1"
    );
    let global = [
        KeyedRule::per_key(Config::gcra(1, Duration::from_nanos(SECOND))),
        KeyedRule::global(Config::sliding_log(
            (1 << 20) + 1,
            Duration::from_nanos(SECOND),
        )),
    ];
    assert_eq!(
        KeyedPolicy::new(&global, 10).unwrap_err().to_string(),
        "rule 1: limit 1048577: must be at most 1048576 for the \
         sliding log with period_ns 1000000000"
    );
    // A policy in a file checks its rules as one in process does.
    let path = std::env::temp_dir().join(format!("librate-rule-{}", std::process::id()));
    let opened = KeyedPolicy::open(&path, &rules, 10);
    let _ = std::fs::remove_file(&path);
    assert!(matches!(opened, Err(crate::OpenError::Config(why)) if why == period));
    // The capacity is the policy's, not a rule's.
    let valid = [KeyedRule::per_key(Config::gcra(
        1,
        Duration::from_nanos(SECOND),
    ))];
    assert_eq!(
        KeyedPolicy::new(&valid, 0).unwrap_err(),
        ConfigError::ZeroCapacity
    );
}

#[test]
fn a_change_of_rules_names_the_invalid_one() {
    let policy = crate::Policy::new(&[
        Config::gcra(1, Duration::from_nanos(SECOND)),
        Config::gcra(2, Duration::from_nanos(SECOND)),
    ])
    .unwrap();
    let changed = policy.set_rules_at(
        &[
            Config::gcra(2, Duration::from_nanos(SECOND)),
            Config::gcra(2, Duration::from_nanos(0)),
        ],
        Instant::from_nanos(0),
    );
    assert_eq!(
        changed.unwrap_err().to_string(),
        "invalid configuration: rule 1: period_ns 0: must be at least 1"
    );
    // Another algorithm is no rule's configuration error: the policy's.
    let other = policy.set_rules_at(
        &[
            Config::fixed_window(1, Duration::from_nanos(SECOND)),
            Config::gcra(2, Duration::from_nanos(SECOND)),
        ],
        Instant::from_nanos(0),
    );
    assert_eq!(other, Err(ChangeError::Config(ConfigError::LiveChange)));
}

#[test]
fn a_redis_policy_names_the_rule_redis_cannot_decide_exactly() {
    // 2^53 ns is 104 days: a window of 105 days is past it.
    let days = |d: u64| d * 86_400 * SECOND;
    let rules = [
        Config::gcra(1, Duration::from_nanos(SECOND)),
        Config::fixed_window(1, Duration::from_nanos(days(105))),
    ];
    assert_eq!(
        crate::redis::PolicyScript::of(&rules)
            .unwrap_err()
            .to_string(),
        "rule 1: on Redis, burst x (period_ns / limit) and period_ns must be below 2^53 ns \
         (about 104 days)"
    );
}
