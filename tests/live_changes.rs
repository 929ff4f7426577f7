//! Changing a limiter's rule at run time (`Limiter::set_config_at`): the carry-over rules
//! by hand, against sequential models that keep the state the obvious way (GCRA's tokens
//! as exact fractions, a fixed window's counts per window), and under threads racing the
//! changes, where no admission may be lost or counted twice.

#![cfg(not(loom))]

mod common;

use common::processes::rewrite_word;
use common::{at, decision, Rng, SECOND};
use librate::{ChangeError, Config, ConfigError, Instant, InsufficientCapacity, Limiter};
use std::time::Duration;

#[test]
fn gcra_keeps_its_tokens_capped_at_the_new_burst() {
    // 10 a second (T = 100 ms): 7 taken at 0, 3 tokens left; at 250 ms, 5.5.
    let limiter = Limiter::new(&Config::per_second(10)).unwrap();
    assert!(limiter.acquire_at(7, Instant::ZERO).unwrap().allowed);
    // 2 a second, burst 4 (T = 500 ms, τ = 2 s): 4 tokens, full; TAT 250 ms.
    limiter
        .set_config_at(&Config::per_second(2).with_burst(4), at(250_000_000))
        .unwrap();
    assert_eq!(
        limiter.acquire_at(4, at(250_000_000)).unwrap(),
        decision(true, 4, 0, 0, 2 * SECOND)
    );
    // Back to 10 a second (T = 100 ms, τ = 1 s) at 1.25 s: 2 tokens (1 s of room at T =
    // 500 ms), so 0.2 s of room at T = 100 ms: TAT 1.25 + 0.8 s.
    limiter
        .set_config_at(&Config::per_second(10), at(1_250_000_000))
        .unwrap();
    assert_eq!(
        limiter.acquire_at(0, at(1_250_000_000)).unwrap(),
        decision(true, 10, 2, 0, 800_000_000)
    );
    assert_eq!(limiter.config(), &Config::per_second(10));
}

#[test]
fn a_bucket_and_an_allowance_trade_whole_tokens() {
    let limiter = Limiter::new(&Config::per_second(1).with_burst(5)).unwrap();
    assert!(limiter.acquire_at(3, Instant::ZERO).unwrap().allowed);
    // At 500 ms: 2.5 tokens; as an allowance of 10 (the burst), 2 units are left for ever.
    let allowance = Config::gcra(1, Config::FOREVER).with_burst(10);
    limiter.set_config_at(&allowance, at(500_000_000)).unwrap();
    assert_eq!(
        limiter.acquire_at(0, at(100 * SECOND)).unwrap(),
        decision(true, 10, 2, 0, u64::MAX)
    );
    assert!(limiter.acquire_at(1, at(100 * SECOND)).unwrap().allowed);
    // Back to 1 a second, burst 5, at 200 s: 1 token, TAT 200 s + 4 s.
    limiter
        .set_config_at(&Config::per_second(1).with_burst(5), at(200 * SECOND))
        .unwrap();
    assert_eq!(
        limiter.acquire_at(0, at(200 * SECOND)).unwrap(),
        decision(true, 5, 1, 0, 4 * SECOND)
    );
}

#[test]
fn window_counters_keep_their_counts_in_the_new_windows() {
    // 5 a minute; 4 counted in [60 s, 120 s), changed at 100 s to 3 per 30 s: window
    // [90 s, 120 s) holds min(4, 3) = 3, full until 120 s.
    let fixed = Limiter::new(&Config::fixed_window(5, Duration::from_secs(60))).unwrap();
    assert!(fixed.acquire_at(4, at(70 * SECOND)).unwrap().allowed);
    fixed
        .set_config_at(
            &Config::fixed_window(3, Duration::from_secs(30)),
            at(100 * SECOND),
        )
        .unwrap();
    assert_eq!(
        fixed.acquire_at(1, at(100 * SECOND)).unwrap(),
        decision(false, 3, 0, 20 * SECOND, 20 * SECOND)
    );
    assert!(fixed.acquire_at(3, at(120 * SECOND)).unwrap().allowed);

    // 10 a minute: 9 in [0, 60 s), 2 in [60 s, 120 s). At 75 s, changed to 10 per 100 s:
    // [0, 100 s) holds the 2, nothing before it (window 0). At 75 s: 8 left.
    let sliding = Limiter::new(&Config::sliding_window(10, Duration::from_secs(60))).unwrap();
    assert!(sliding.acquire_at(9, at(30 * SECOND)).unwrap().allowed);
    assert!(sliding.acquire_at(2, at(75 * SECOND)).unwrap().allowed);
    // 10 − 2 − ⌈9·45/60⌉ = 1 left.
    assert_eq!(sliding.acquire_at(0, at(75 * SECOND)).unwrap().remaining, 1);
    sliding
        .set_config_at(
            &Config::sliding_window(10, Duration::from_secs(100)),
            at(75 * SECOND),
        )
        .unwrap();
    assert_eq!(
        sliding.acquire_at(0, at(75 * SECOND)).unwrap(),
        decision(true, 10, 8, 0, 125 * SECOND)
    );
    // At 150 s, changed to 4 per 50 s: window [150 s, 200 s) is empty, [100, 150 s) holds
    // min(2, 4) = 2 (the 2 of [0, 100 s) moved on). Weighted fully at 150 s: 2 left.
    sliding
        .set_config_at(
            &Config::sliding_window(4, Duration::from_secs(50)),
            at(150 * SECOND),
        )
        .unwrap();
    assert_eq!(
        sliding.acquire_at(0, at(150 * SECOND)).unwrap(),
        decision(true, 4, 2, 0, 50 * SECOND)
    );
}

#[test]
fn a_window_and_an_allowance_trade_what_is_counted() {
    // 10 a minute, 9 at 30 s; at 75 s the estimate counts 0 + ⌈9·45/60⌉ = 7.
    let sliding = Limiter::new(&Config::sliding_window(10, Duration::from_secs(60))).unwrap();
    assert!(sliding.acquire_at(9, at(30 * SECOND)).unwrap().allowed);
    sliding
        .set_config_at(
            &Config::sliding_window(20, Config::FOREVER),
            at(75 * SECOND),
        )
        .unwrap();
    assert_eq!(
        sliding.acquire_at(0, at(80 * SECOND)).unwrap(),
        decision(true, 20, 13, 0, u64::MAX)
    );
    // Back to 10 a minute at 100 s: the 7 used are counted in [60 s, 120 s).
    sliding
        .set_config_at(
            &Config::sliding_window(10, Duration::from_secs(60)),
            at(100 * SECOND),
        )
        .unwrap();
    assert_eq!(
        sliding.acquire_at(0, at(100 * SECOND)).unwrap().remaining,
        3
    );
}

#[test]
fn changes_that_cannot_carry_over_are_refused_and_change_nothing() {
    let live_change = Err(ChangeError::Config(ConfigError::LiveChange));
    let limiter = Limiter::new(&Config::per_second(2)).unwrap();
    assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
    assert_eq!(
        limiter.set_config_at(
            &Config::fixed_window(2, Duration::from_secs(1)),
            Instant::ZERO
        ),
        live_change
    );
    assert_eq!(
        limiter.set_config_at(&Config::per_second(0), Instant::ZERO),
        Err(ChangeError::Config(ConfigError::ZeroLimit))
    );
    assert_eq!(limiter.acquire_at(0, Instant::ZERO).unwrap().remaining, 1);
    assert_eq!(limiter.config(), &Config::per_second(2));
    let log = Limiter::new(&Config::sliding_log(2, Duration::from_secs(1))).unwrap();
    assert_eq!(
        log.set_config_at(
            &Config::sliding_log(3, Duration::from_secs(1)),
            Instant::ZERO
        ),
        live_change
    );
    assert_eq!(
        log.set_config_at(&Config::sliding_log(2, Config::FOREVER), Instant::ZERO),
        live_change
    );
    // A log's allowance is no ring: it changes as any allowance does.
    let trial = Limiter::new(&Config::sliding_log(2, Config::FOREVER)).unwrap();
    assert!(trial.acquire_at(1, Instant::ZERO).unwrap().allowed);
    trial
        .set_config_at(&Config::sliding_log(5, Config::FOREVER), Instant::ZERO)
        .unwrap();
    assert_eq!(trial.acquire_at(0, Instant::ZERO).unwrap().remaining, 4);
    let path = std::env::temp_dir().join(format!("librate-live-{}", std::process::id()));
    let shared = Limiter::open(&path, &Config::per_second(2)).unwrap();
    assert_eq!(
        shared.set_config_at(
            &Config::fixed_window(3, Duration::from_secs(1)),
            Instant::ZERO
        ),
        live_change
    );
    assert_eq!(shared.config(), &Config::per_second(2));
    std::fs::remove_file(&path).unwrap();
}

/// A shared limiter's words are never replaced, so a first word that another process set
/// to the value of the marker a change writes in private words is read as any state: a
/// bucket whose TAT is `u64::MAX` admits nothing, ever, until a reset.
#[test]
fn a_shared_word_holding_the_marker_value_is_a_state() {
    let path = std::env::temp_dir().join(format!("librate-marker-{}", std::process::id()));
    let config = Config::per_second(2);
    let before = {
        let shared = Limiter::open(&path, &config).unwrap();
        let before = std::fs::read(&path).unwrap();
        assert!(shared.acquire_at(1, at(SECOND)).unwrap().allowed);
        before
    };
    // The one word the admission wrote is the state's first word.
    let after = std::fs::read(&path).unwrap();
    let changed: Vec<usize> = (0..after.len() / 8)
        .filter(|&word| after[word * 8..word * 8 + 8] != before[word * 8..word * 8 + 8])
        .collect();
    assert_eq!(changed.len(), 1);
    rewrite_word(&path, changed[0], u64::MAX);
    let shared = Limiter::open(&path, &config).unwrap();
    let denied = shared.acquire_at(1, at(SECOND)).unwrap();
    assert!(!denied.allowed);
    assert_eq!(denied.retry_after_ns, u64::MAX);
    assert_eq!(shared.try_acquire(1), Ok(false));
    shared.reset();
    assert!(shared.acquire_at(2, at(SECOND)).unwrap().allowed);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn reset_after_a_change_resets_the_new_rule() {
    let limiter = Limiter::new(&Config::fixed_window(3, Duration::from_secs(1))).unwrap();
    assert!(limiter.acquire_at(3, Instant::ZERO).unwrap().allowed);
    limiter
        .set_config_at(
            &Config::fixed_window(5, Duration::from_secs(1)),
            Instant::ZERO,
        )
        .unwrap();
    assert_eq!(limiter.acquire_at(0, Instant::ZERO).unwrap().remaining, 2);
    limiter.reset();
    assert_eq!(limiter.acquire_at(0, Instant::ZERO).unwrap().remaining, 5);
}

/// An exact fraction, for the GCRA model's tokens.
#[derive(Clone, Copy, Debug)]
struct Fraction {
    numerator: i128,
    denominator: i128,
}

impl Fraction {
    /// In lowest terms, so denominators stay small.
    fn new(numerator: i128, denominator: i128) -> Self {
        let (mut a, mut b) = (numerator.abs(), denominator);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let divisor = a.max(1);
        Self {
            numerator: numerator / divisor,
            denominator: denominator / divisor,
        }
    }

    fn at_most(self, bound: i128) -> Self {
        if self.numerator > bound * self.denominator {
            Self::new(bound, 1)
        } else {
            self
        }
    }

    fn floor(self) -> i128 {
        self.numerator.div_euclid(self.denominator)
    }
}

/// GCRA as a token bucket kept the obvious way: exact tokens, refilled by one per T and
/// capped at B, taken by admissions; a change keeps them, capped at the new B.
struct BucketModel {
    per_unit: i128,
    burst: i128,
    tokens: Fraction,
    at: u64,
}

impl BucketModel {
    fn new(per_unit: u64, burst: u64) -> Self {
        Self {
            per_unit: i128::from(per_unit),
            burst: i128::from(burst),
            tokens: Fraction::new(i128::from(burst), 1),
            at: 0,
        }
    }

    /// Refills up to `now` (time never goes backwards here).
    fn advance(&mut self, now: u64) {
        let elapsed = i128::from(now - self.at);
        let Fraction {
            numerator,
            denominator,
        } = self.tokens;
        self.tokens = Fraction::new(
            numerator * self.per_unit + elapsed * denominator,
            denominator * self.per_unit,
        )
        .at_most(self.burst);
        self.at = now;
    }

    fn acquire(&mut self, n: u64, now: u64) -> bool {
        self.advance(now);
        let n = i128::from(n);
        let admitted = self.tokens.numerator >= n * self.tokens.denominator;
        if admitted {
            self.tokens.numerator -= n * self.tokens.denominator;
        }
        admitted
    }

    fn change(&mut self, per_unit: u64, burst: u64, now: u64) {
        self.advance(now);
        self.per_unit = i128::from(per_unit);
        self.burst = i128::from(burst);
        self.tokens = self.tokens.at_most(self.burst);
    }
}

/// Random acquires and changes of rate and burst, on a limiter and the model. Times are
/// multiples of every T used (1, 2, 4 or 8 µs), so each bucket's room is a whole number of
/// its units whenever tokens refill in whole units; the limiter may round a carried
/// fraction of a unit down by less than 1 ns of room per change, never up: it never admits
/// where the model denies, and its `remaining` is the model's whole tokens, or one less
/// after such a rounding.
#[test]
fn gcra_changes_match_the_token_model() {
    const MICROSECOND: u64 = 1_000;
    let mut rng = Rng::new(7);
    for round in 0..200 {
        let per_unit = |rng: &mut Rng| MICROSECOND << rng.below(4);
        let (mut t, mut b) = (per_unit(&mut rng), rng.range(1, 8));
        let limiter =
            Limiter::new(&Config::gcra(1, Duration::from_nanos(t)).with_burst(b)).unwrap();
        let mut model = BucketModel::new(t, b);
        let mut now = 0;
        for step in 0..60 {
            now += 8 * MICROSECOND * rng.below(3) + MICROSECOND * rng.below(2);
            if rng.below(5) == 0 {
                (t, b) = (per_unit(&mut rng), rng.range(1, 8));
                limiter
                    .set_config_at(
                        &Config::gcra(1, Duration::from_nanos(t)).with_burst(b),
                        at(now),
                    )
                    .unwrap();
                model.change(t, b, now);
                continue;
            }
            let n = rng.range(1, b);
            let allowed = limiter.acquire_at(n, at(now)).unwrap().allowed;
            let model_allowed = model.acquire(n, now);
            assert!(!allowed || model_allowed, "round {round} step {step}");
            if allowed != model_allowed {
                // Rounded down at a change: the model took units the limiter could not.
                model.tokens.numerator += i128::from(n) * model.tokens.denominator;
            }
            let remaining = i128::from(limiter.acquire_at(0, at(now)).unwrap().remaining);
            let whole = model.tokens.floor();
            assert!(
                remaining == whole || remaining + 1 == whole,
                "round {round} step {step}: {remaining} vs {whole}"
            );
        }
    }
}

/// The fixed window kept the obvious way: a count per window, a change moving the count
/// of the window holding its time to the new window holding it, at most the new limit.
/// Every decision field is compared, from its definition.
#[test]
fn fixed_window_changes_match_the_window_model() {
    let mut rng = Rng::new(11);
    for round in 0..200 {
        let config = |rng: &mut Rng| {
            Config::fixed_window(rng.range(1, 6), Duration::from_nanos(100 * rng.range(1, 5)))
        };
        let mut current = config(&mut rng);
        let limiter = Limiter::new(&current).unwrap();
        // (window index, count) of the latest window, in the current rule's windows.
        let mut counted = (0u64, 0u64);
        let mut now = 0;
        for step in 0..80 {
            now += rng.below(120);
            let (limit, period) = (current.limit, current.period().as_nanos() as u64);
            let index = now / period;
            let count = if counted.0 == index { counted.1 } else { 0 };
            if rng.below(6) == 0 {
                current = config(&mut rng);
                limiter.set_config_at(&current, at(now)).unwrap();
                counted = (
                    now / current.period().as_nanos() as u64,
                    count.min(current.limit),
                );
                continue;
            }
            let n = rng.range(0, limit);
            let allowed = count + n <= limit;
            let after = if allowed { count + n } else { count };
            let next_window = (index + 1) * period - now;
            let expected = decision(
                allowed,
                limit,
                limit - after,
                if allowed { 0 } else { next_window },
                if after > 0 { next_window } else { 0 },
            );
            assert_eq!(
                limiter.acquire_at(n, at(now)).unwrap(),
                expected,
                "round {round} step {step}"
            );
            counted = (index, after);
        }
    }
}

/// Threads acquiring one unit at a time at a frozen time while another thread changes the
/// rule back and forth: rules whose carry-over is exact there (whole tokens; counts under
/// the limit), so every admission must be carried: exactly the capacity is admitted, and
/// the state at the end holds exactly the units admitted.
#[test]
fn changes_racing_acquires_lose_and_double_count_nothing() {
    const CAPACITY: u64 = 2_000;
    let rules: [[Config; 2]; 4] = [
        // T = 1 ms and 2 ms, burst 2,000: whole tokens carry exactly at a frozen time.
        [
            Config::gcra(1, Duration::from_nanos(1_000_000)).with_burst(CAPACITY),
            Config::gcra(1, Duration::from_nanos(2_000_000)).with_burst(CAPACITY),
        ],
        [
            Config::gcra(1, Duration::from_nanos(1_000_000)).with_burst(CAPACITY),
            Config::gcra(1, Config::FOREVER).with_burst(CAPACITY),
        ],
        [
            Config::fixed_window(CAPACITY, Duration::from_secs(3_600)),
            Config::fixed_window(CAPACITY, Duration::from_secs(7_200)),
        ],
        [
            Config::sliding_window(CAPACITY, Duration::from_secs(3_600)),
            Config::sliding_window(CAPACITY, Config::FOREVER),
        ],
    ];
    for [first, second] in rules {
        let limiter = Limiter::new(&first).unwrap();
        let now = 10 * SECOND;
        let admitted: u64 = std::thread::scope(|scope| {
            let acquirers: Vec<_> = (0..3)
                .map(|_| {
                    scope.spawn(|| {
                        (0..CAPACITY)
                            .filter(|_| limiter.acquire_at(1, at(now)).unwrap().allowed)
                            .count() as u64
                    })
                })
                .collect();
            scope.spawn(|| {
                for change in 0..200 {
                    let rule = if change % 2 == 0 { &second } else { &first };
                    limiter.set_config_at(rule, at(now)).unwrap();
                }
            });
            acquirers.into_iter().map(|t| t.join().unwrap()).sum()
        });
        assert_eq!(admitted, CAPACITY, "{first:?}");
        assert_eq!(
            limiter.acquire_at(0, at(now)).unwrap().remaining,
            0,
            "{first:?}"
        );
        assert_eq!(limiter.config().algorithm, first.algorithm);
    }
}

#[test]
fn a_policy_changes_every_rule_or_none() {
    use librate::Policy;
    // 2 a second and 5 a minute; 2 taken at 0.
    let policy = Policy::new(&[
        Config::per_second(2),
        Config::fixed_window(5, Duration::from_secs(60)),
    ])
    .unwrap();
    assert!(
        policy
            .acquire_at(2, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    let live_change = Err(ChangeError::Config(ConfigError::LiveChange));
    // Another number of rules, or another algorithm for the second: nothing changes.
    assert_eq!(
        policy.set_rules_at(&[Config::per_second(9)], Instant::ZERO),
        live_change
    );
    let mixed = [
        Config::per_second(9),
        Config::sliding_window(9, Duration::from_secs(1)),
    ];
    assert_eq!(policy.set_rules_at(&mixed, Instant::ZERO), live_change);
    assert_eq!(policy.rules().next(), Some(&Config::per_second(2)));
    // 1 a second, burst 4: 0 tokens stay 0 (TAT 4 s); 3 a minute: the 2 counted stay.
    let tighter = [
        Config::per_second(1).with_burst(4),
        Config::fixed_window(3, Duration::from_secs(60)),
    ];
    policy.set_rules_at(&tighter, Instant::ZERO).unwrap();
    assert_eq!(policy.limit(), 3);
    // A cost above the new least limit is an error, as for any cost above a rule's
    // limit, not a denial.
    assert_eq!(policy.acquire_at(4, at(SECOND)), Err(InsufficientCapacity));
    assert_eq!(policy.try_acquire(4), Err(InsufficientCapacity));
    let query = policy.acquire_at(0, at(SECOND)).unwrap();
    assert_eq!(query.rules()[0], decision(true, 4, 1, 0, 3 * SECOND));
    assert_eq!(query.rules()[1], decision(true, 3, 1, 0, 59 * SECOND));
    assert_eq!(policy.rules().copied().collect::<Vec<_>>(), tighter);

    // A limit lowered below what the policy was built with binds at once: 3 units were
    // within every rule's limit, and are no longer.
    let wide = Policy::new(&[
        Config::per_second(10),
        Config::fixed_window(10, Duration::from_secs(1)),
    ])
    .unwrap();
    wide.set_rules_at(
        &[
            Config::per_second(2),
            Config::fixed_window(10, Duration::from_secs(1)),
        ],
        Instant::ZERO,
    )
    .unwrap();
    assert_eq!(
        wide.try_acquire_at(3, Instant::ZERO),
        Err(InsufficientCapacity)
    );
    assert_eq!(wide.try_acquire(3), Err(InsufficientCapacity));
    assert_eq!(wide.acquire_at(3, Instant::ZERO), Err(InsufficientCapacity));
}

/// The README's example, line for line.
#[test]
fn readme_a_customer_changes_plan() {
    use librate::Policy;
    const MINUTE: u64 = 60 * SECOND;
    // Free plan: 1 a second, 100 a day.
    let day = 24 * 60 * MINUTE;
    let customer = Policy::new(&[
        Config::per_second(1),
        Config::fixed_window(100, Duration::from_nanos(day)),
    ])
    .unwrap();
    assert!(
        customer
            .acquire_at(1, Instant::ZERO)
            .unwrap()
            .decision
            .allowed
    );
    // Upgraded: 10 a second, bursts of 20, 10,000 a day. What was used stays used.
    let pro = [
        Config::per_second(10).with_burst(20),
        Config::fixed_window(10_000, Duration::from_nanos(day)),
    ];
    customer.set_rules_at(&pro, Instant::ZERO).unwrap();
    let now = customer.acquire_at(0, Instant::ZERO).unwrap();
    assert_eq!(now.rules()[1].remaining, 9_999);
    // The bucket was empty (its 1 unit taken): it refills at the new rate, 1 per 100 ms.
    assert_eq!(now.rules()[0].remaining, 0);
    assert_eq!(
        customer.acquire_at(0, at(100_000_000)).unwrap().rules()[0].remaining,
        1
    );
}
