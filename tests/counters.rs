//! Counts of requests (docs/metrics.md, counters): off until asked for; then each
//! request counted once, in the outcome the contract gives it.

use librate::{
    Config, Counts, Instant, KeyedAcquireError, KeyedLimiter, KeyedPolicy, KeyedRule, Limiter,
    Policy,
};
use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);
const T0: Instant = Instant::ZERO;

fn totals(counts: Counts) -> (u64, u64, u64) {
    (counts.admitted, counts.denied, counts.table_full)
}

fn denied_by_rule(counts: Counts) -> Vec<u64> {
    counts.rules().iter().map(|rule| rule.denied).collect()
}

#[test]
fn a_limiter_counts_each_form_of_request_and_nothing_else() {
    // 3 a second in one fixed window: requests 1–3 admitted, then denied.
    let limiter = Limiter::new(&Config::fixed_window(3, SECOND)).unwrap();
    limiter.try_acquire_at(1, T0).unwrap();
    assert_eq!(limiter.counts(), None, "off until asked for");
    limiter.enable_counts();
    assert_eq!(
        totals(limiter.counts().unwrap()),
        (0, 0, 0),
        "counted from then on"
    );
    assert!(limiter.acquire_at(1, T0).unwrap().allowed);
    assert!(limiter.try_acquire_at(1, T0).unwrap());
    assert!(!limiter.try_acquire_at(1, T0).unwrap());
    assert!(!limiter.acquire_at(1, T0).unwrap().allowed);
    // Not requests: a query, and a cost above the limit.
    assert!(limiter.acquire_at(0, T0).unwrap().allowed);
    assert!(limiter.try_acquire_at(4, T0).is_err());
    let counts = limiter.counts().unwrap();
    assert_eq!(totals(counts), (2, 2, 0));
    assert_eq!(denied_by_rule(counts), [2]);
    assert_eq!(counts.rules()[0].shadow_denied, 0);
}

#[test]
fn a_gcra_limiter_counts_reserves_and_its_inline_path() {
    // 1 a second, burst 1: a reserve of up to 1 s queues the second request.
    let limiter = Limiter::new(&Config::gcra(1, SECOND)).unwrap();
    limiter.enable_counts();
    assert!(limiter.reserve_at(1, T0, SECOND).unwrap().allowed);
    assert!(limiter.reserve_at(1, T0, SECOND).unwrap().allowed);
    assert!(!limiter.reserve_at(1, T0, SECOND).unwrap().allowed);
    // The C ABI's inline path: a real-time bucket far ahead of T0's, so its first unit
    // is decided (on the inline path, or by `try_acquire` when it says None).
    let inline = Limiter::new(&Config::gcra(1, SECOND)).unwrap();
    inline.enable_counts();
    let admitted = inline
        .try_acquire_inline(1)
        .unwrap_or_else(|| inline.try_acquire(1).unwrap());
    assert!(admitted);
    assert_eq!(totals(limiter.counts().unwrap()), (2, 1, 0));
    assert_eq!(totals(inline.counts().unwrap()), (1, 0, 0));
}

#[test]
fn threads_lose_no_count() {
    // 1,500 units in one window, asked 4,000 times by 4 threads: exactly 1,500 admitted.
    let limiter = Limiter::new(&Config::fixed_window(1500, SECOND)).unwrap();
    limiter.enable_counts();
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..1000 {
                    limiter.try_acquire_at(1, T0).unwrap();
                }
            });
        }
    });
    assert_eq!(totals(limiter.counts().unwrap()), (1500, 2500, 0));
}

#[test]
fn a_keyed_table_counts_a_full_table_apart() {
    // Capacity 1: two slots. Three keys with a request each fill them; a fresh state is
    // not live only once its period passed, so a third key finds the table full.
    let table = KeyedLimiter::new(&Config::fixed_window(1, 60 * SECOND), 1).unwrap();
    table.enable_counts();
    let mut full = 0;
    let mut admitted = 0;
    for key in [&b"a"[..], b"b", b"c", b"d"] {
        match table.try_acquire_at(key, 1, T0) {
            Ok(true) => admitted += 1,
            Err(KeyedAcquireError::TableFull) => full += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(full >= 1, "two slots hold at most two keys");
    assert!(!table.acquire_at(b"a", 1, T0).unwrap().allowed);
    assert!(table.acquire_at(b"a", 0, T0).unwrap().allowed); // a query: not counted
    let counts = table.counts().unwrap();
    assert_eq!(totals(counts), (admitted, 1, full));
    assert_eq!(admitted + full, 4);
    // The batch form counts each key.
    let mut seen = Vec::new();
    table
        .try_acquire_batch_at(&[b"a"], 1, T0, |_, outcome| seen.push(outcome))
        .unwrap();
    assert_eq!(seen, [Ok(false)]);
    assert_eq!(totals(table.counts().unwrap()), (admitted, 2, full));
}

#[test]
fn a_policy_counts_the_rule_that_denied_first() {
    // 2 a second and 3 a minute.
    let policy = Policy::new(&[
        Config::gcra(2, SECOND),
        Config::fixed_window(3, 60 * SECOND),
    ])
    .unwrap();
    policy.enable_counts();
    let at = |seconds: u32| T0 + seconds * SECOND;
    assert!(policy.try_acquire_at(1, at(0)).unwrap());
    assert!(policy.acquire_at(1, at(0)).unwrap().decision.allowed);
    assert_eq!(policy.acquire_at(1, at(0)).unwrap().denied_by, Some(0));
    assert!(!policy.try_acquire_at(1, at(0)).unwrap()); // the per-second rule again
    assert!(policy.try_acquire_costs_at(&[1, 1], at(1)).unwrap());
    // Three this minute: the per-minute rule denies, though the per-second one admits.
    assert_eq!(
        policy.acquire_costs_at(&[1, 1], at(2)).unwrap().denied_by,
        Some(1)
    );
    assert!(
        policy
            .acquire_costs_at(&[0, 0], at(2))
            .unwrap()
            .decision
            .allowed
    ); // a query
    let counts = policy.counts().unwrap();
    assert_eq!(totals(counts), (3, 3, 0));
    assert_eq!(denied_by_rule(counts), [2, 1]);
}

#[test]
fn a_keyed_policy_counts_per_rule_and_a_full_table() {
    // Per key 1 a minute, globally 3 a minute; one key's table of capacity 1.
    let rules = [
        KeyedRule::per_key(Config::fixed_window(1, 60 * SECOND)),
        KeyedRule::global(Config::fixed_window(3, 60 * SECOND)),
    ];
    let policy = KeyedPolicy::new(&rules, 1).unwrap();
    policy.enable_counts();
    assert!(policy.try_acquire_at(b"ann", 1, T0).unwrap());
    assert_eq!(policy.acquire_at(b"ann", 1, T0).unwrap().denied_by, Some(0));
    let mut full = 0;
    let mut admitted = 1;
    for key in [&b"bob"[..], b"cat", b"dan"] {
        match policy.try_acquire_at(key, 1, T0) {
            Ok(true) => admitted += 1,
            Ok(false) => panic!("the global rule has units left for {key:?}"),
            Err(KeyedAcquireError::TableFull) => full += 1,
            Err(other) => panic!("{other:?}"),
        }
    }
    assert!(full >= 1, "two slots hold at most two keys");
    let counts = policy.counts().unwrap();
    assert_eq!(totals(counts), (admitted, 1, full));
    assert_eq!(denied_by_rule(counts), [1, 0]);
}

#[test]
fn a_shared_limiter_counts_per_handle() {
    let dir = std::env::temp_dir().join(format!("librate-counts-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("limiter");
    let config = Config::fixed_window(2, 60 * SECOND);
    let counted = Limiter::open(&path, &config).unwrap();
    let other = Limiter::open(&path, &config).unwrap();
    counted.enable_counts();
    assert!(other.try_acquire_at(1, T0).unwrap());
    assert!(counted.try_acquire_at(1, T0).unwrap());
    assert!(!counted.try_acquire_at(1, T0).unwrap());
    assert_eq!(totals(counted.counts().unwrap()), (1, 1, 0));
    assert_eq!(other.counts(), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_policy_counts_its_shadow_rules_would_be_denials() {
    // 2 a minute enforced, 1 a minute in shadow (docs/policies.md, shadow rules).
    let rules = [
        Config::fixed_window(2, 60 * SECOND),
        Config::fixed_window(1, 60 * SECOND),
    ];
    let policy = Policy::new(&rules).unwrap();
    policy.set_shadow(0b10).unwrap();
    policy.enable_counts();
    // 1: both admit (the shadow rule takes its one unit). 2: admitted; the shadow rule
    // would deny. 3: the enforced rule denies; the shadow rule, asked, would too.
    assert!(policy.try_acquire_at(1, T0).unwrap());
    assert_eq!(
        policy.acquire_at(1, T0).unwrap().shadow_denied_by(),
        Some(1)
    );
    assert_eq!(policy.acquire_at(1, T0).unwrap().denied_by, Some(0));
    let counts = policy.counts().unwrap();
    assert_eq!(totals(counts), (2, 1, 0));
    assert_eq!(denied_by_rule(counts), [1, 0]);
    let shadow: Vec<u64> = counts
        .rules()
        .iter()
        .map(|rule| rule.shadow_denied)
        .collect();
    assert_eq!(shadow, [0, 2]);
}
