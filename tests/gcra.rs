//! GCRA through the Rust API: seed scenarios, errors, and a property test against a plain
//! sequential model of DESIGN §4 whose decision fields are found by search from their
//! definitions in DESIGN §3, not by the closed forms the library uses.

mod common;

use common::{smallest, Rng, MS, SECOND};
use rate::{Config, ConfigError, Decision, Error, Limiter};

/// The largest TAT a state stores, 2⁶⁴ − 257: the values above it mark keyed-table
/// slots, so the timeline of a TAT ends there (src/gcra.rs).
const END: u64 = u64::MAX - 256;

fn gcra(limit: u64, period_ns: u64, burst: u64) -> Limiter {
    Limiter::new(&Config::gcra(limit, period_ns).with_burst(burst)).unwrap()
}

#[test]
fn seed_bob_one_per_two_seconds() {
    let bob = gcra(1, 2 * SECOND, 1);
    let alice = gcra(1, 2 * SECOND, 1);
    assert!(bob.acquire_at(1, 0).unwrap().allowed);
    let at_999 = bob.acquire_at(1, 999 * MS).unwrap();
    // TAT = 2000 ms; admitted at t iff 2000 + 2000 − t ≤ 2000 ⟺ t ≥ 2000: retry 1001 ms.
    assert_eq!(
        at_999,
        Decision {
            allowed: false,
            limit: 1,
            remaining: 0,
            retry_after_ns: 1001 * MS,
            reset_after_ns: 1001 * MS,
            wait_ns: 0
        }
    );
    assert!(
        alice.acquire_at(1, 999 * MS).unwrap().allowed,
        "keys are independent"
    );
    assert!(!bob.acquire_at(1, 1000 * MS).unwrap().allowed);
    assert!(bob.acquire_at(1, 2001 * MS).unwrap().allowed);
}

#[test]
fn seed_one_per_second_capacity_two() {
    let limiter = gcra(1, SECOND, 2);
    let a = limiter.acquire_at(1, 0).unwrap();
    let b = limiter.acquire_at(1, 0).unwrap();
    let c = limiter.acquire_at(1, 0).unwrap();
    let d = limiter.acquire_at(1, SECOND).unwrap();
    assert!(a.allowed && b.allowed && !c.allowed && d.allowed);
    // After A: TAT = 1 s, remaining = (2 s − 1 s) / 1 s = 1; after B: TAT = 2 s, 0 left.
    assert_eq!((a.remaining, a.reset_after_ns), (1, SECOND));
    assert_eq!((b.remaining, b.reset_after_ns), (0, 2 * SECOND));
    assert_eq!(c.retry_after_ns, SECOND);
    // D at 1 s: TAT = 3 s, debt 2 s: nothing left, full again after 2 s.
    assert_eq!((d.remaining, d.reset_after_ns), (0, 2 * SECOND));
}

#[test]
fn reserve_queues_with_exact_waits() {
    // 10/s, burst 1: T = 100 ms, τ = 100 ms. Five reserves at t = 0 with max wait 350 ms.
    let shaper = gcra(10, SECOND, 1);
    let waits: Vec<_> = (0..5)
        .map(|_| shaper.reserve_at(1, 0, 350 * MS).unwrap())
        .collect();
    let admitted: Vec<_> = waits.iter().map(|d| (d.allowed, d.wait_ns)).collect();
    // k-th admitted: TAT = (k+1)·100 ms, wait = TAT − τ = k·100 ms while ≤ 350 ms.
    assert_eq!(
        admitted,
        [
            (true, 0),
            (true, 100 * MS),
            (true, 200 * MS),
            (true, 300 * MS),
            (false, 0)
        ]
    );
    // Denied at TAT = 400 ms: admitted at d once 400 + 100 − d − 100 ≤ 350 ⟺ d ≥ 50 ms.
    assert_eq!(waits[4].retry_after_ns, 50 * MS);
    assert_eq!(waits[4].remaining, 0);
}

#[test]
fn errors_are_typed() {
    let invalid = |config: Config| Limiter::new(&config).unwrap_err();
    assert_eq!(
        invalid(Config::gcra(0, SECOND)),
        Error::InvalidConfig(ConfigError::ZeroLimit)
    );
    assert_eq!(
        invalid(Config::gcra(1, 0)),
        Error::InvalidConfig(ConfigError::ZeroPeriod)
    );
    assert_eq!(
        invalid(Config::gcra(2, 1)),
        Error::InvalidConfig(ConfigError::RateTooHigh)
    );
    assert_eq!(
        invalid(Config::gcra(1, u64::MAX - 1).with_burst(2)),
        Error::InvalidConfig(ConfigError::ToleranceTooLarge)
    );
    // τ = B·T must be at most END (a fresh bucket's B units must fit below it).
    assert_eq!(
        invalid(Config::gcra(1, END + 1).with_burst(1)),
        Error::InvalidConfig(ConfigError::ToleranceTooLarge)
    );
    assert!(Limiter::new(&Config::gcra(1, END).with_burst(1)).is_ok());
    let limiter = gcra(3, SECOND, 5);
    assert_eq!(limiter.acquire_at(6, 0), Err(Error::InsufficientCapacity));
    assert_eq!(
        limiter.reserve_at(6, 0, u64::MAX),
        Err(Error::InsufficientCapacity)
    );
    assert_eq!(
        limiter.try_acquire(u64::MAX),
        Err(Error::InsufficientCapacity)
    );
    // The rejected calls changed nothing: the full burst is still there.
    assert_eq!(limiter.acquire_at(0, 0).unwrap().remaining, 5);
}

#[test]
fn time_going_backwards_never_admits_more() {
    // 1 per second, burst 1. Admit at 10 s, then ask at 5 s: the bucket is judged by its
    // TAT (11 s), so the earlier time must wait 6 s, not be treated as fresh.
    let limiter = gcra(1, SECOND, 1);
    assert!(limiter.acquire_at(1, 10 * SECOND).unwrap().allowed);
    let earlier = limiter.acquire_at(1, 5 * SECOND).unwrap();
    assert!(!earlier.allowed);
    assert_eq!(earlier.retry_after_ns, 6 * SECOND);
    assert!(limiter.acquire_at(1, 11 * SECOND).unwrap().allowed);
}

#[test]
fn extreme_values_saturate_instead_of_wrapping() {
    let limiter = gcra(1, END, 1); // T = τ = END
    assert!(limiter.acquire_at(1, 0).unwrap().allowed);
    let denied = limiter.acquire_at(1, 1).unwrap();
    // TAT = END; another unit would need TAT + T > END: never.
    assert_eq!((denied.allowed, denied.retry_after_ns), (false, u64::MAX));
    // Full again at t ≥ END would need room for a TAT of t + τ > END: never.
    assert_eq!(denied.reset_after_ns, u64::MAX);
    // The end of the timeline: L=5 per 10 ns (T = 2), so at t = END − 5 only the
    // ⌊5 / 2⌋ = 2 units whose TAT is still at most END can be admitted.
    let late = gcra(5, 10, 0);
    let query = late.acquire_at(0, END - 5).unwrap();
    assert_eq!(
        (query.allowed, query.remaining, query.reset_after_ns),
        (true, 2, u64::MAX)
    );
    assert_eq!(
        late.acquire_at(3, END - 5).unwrap().retry_after_ns,
        u64::MAX
    );
    assert!(late.acquire_at(2, END - 5).unwrap().allowed);
    assert!(!late.acquire_at(1, END).unwrap().allowed);
    assert!(!late.acquire_at(1, u64::MAX).unwrap().allowed);
}

#[test]
fn try_acquire_matches_acquire_on_the_same_history() {
    // A busy bucket (1 per hour, burst 3) decided by try_acquire through the real clock:
    // exactly three admitted, however the coarse shortcut settles each call.
    let limiter = gcra(1, 3600 * SECOND, 3);
    let admitted = (0..100).filter(|_| limiter.try_acquire(1).unwrap()).count();
    assert_eq!(admitted, 3);
    assert!(
        limiter.try_acquire(0).unwrap(),
        "a query is always admitted"
    );
}

/// DESIGN §4 GCRA, sequentially, in u128 so nothing can overflow.
#[derive(Clone)]
struct Model {
    emission_interval: u128,
    burst: u128,
    tat: u128,
}

impl Model {
    /// The new TAT if `n` units at `t` with `max_wait` would be admitted, ignoring that
    /// the TAT must fit in u64: this part of the rule is monotone in `t`.
    fn admits_unbounded(&self, t: u128, n: u128, max_wait: u128) -> Option<u128> {
        let new_tat = self.tat.max(t) + n * self.emission_interval;
        (new_tat - t <= self.burst * self.emission_interval + max_wait).then_some(new_tat)
    }

    /// The whole rule: also, the new TAT must be storable, at most END.
    fn admits(&self, t: u128, n: u128, max_wait: u128) -> Option<u128> {
        self.admits_unbounded(t, n, max_wait)
            .filter(|&new_tat| new_tat <= u128::from(END))
    }

    fn remaining(&self, t: u128) -> u128 {
        // The most units a plain acquire could take at t: search 0..=burst.
        (1..=self.burst)
            .rev()
            .find(|&m| self.admits(t, m, 0).is_some())
            .unwrap_or(0)
    }

    /// The smallest d with `holds(d)`, where `holds` = (a monotone rising condition, found
    /// by `rising`) ∧ (the end-of-time condition, which only falls): search the first,
    /// then check the second there.
    fn first(t: u64, rising: impl FnMut(u64) -> bool, holds: impl Fn(u64) -> bool) -> u64 {
        match smallest(u64::MAX - t, rising) {
            d if d != u64::MAX && holds(d) => d,
            _ => u64::MAX,
        }
    }

    fn decide(&mut self, t: u64, n: u64, max_wait: u64) -> Decision {
        let (t128, n128, w128) = (u128::from(t), u128::from(n), u128::from(max_wait));
        let at = |d: u64| t128 + u128::from(d);
        // A query (n = 0) is always admitted and changes nothing (DESIGN §3).
        let new_tat = if n == 0 {
            Some(self.tat)
        } else {
            self.admits(t128, n128, w128)
        };
        let retry_after_ns = match new_tat {
            Some(_) => 0,
            None => Self::first(
                t,
                |d| self.admits_unbounded(at(d), n128, w128).is_some(),
                |d| self.admits(at(d), n128, w128).is_some(),
            ),
        };
        let wait_ns = match new_tat.filter(|_| n > 0) {
            Some(new_tat) => {
                self.tat = new_tat;
                (new_tat - t128).saturating_sub(self.burst * self.emission_interval) as u64
            }
            None => 0,
        };
        let reset_after_ns = Self::first(
            t,
            |d| self.admits_unbounded(at(d), self.burst, 0).is_some(),
            |d| self.remaining(at(d)) == self.burst,
        );
        Decision {
            allowed: new_tat.is_some(),
            limit: self.burst as u64,
            remaining: self.remaining(t128) as u64,
            retry_after_ns,
            reset_after_ns,
            wait_ns,
        }
    }
}

#[test]
fn matches_the_sequential_model_on_random_histories() {
    let mut rng = Rng::new(0x6C69_6272_6174_6531);
    for case in 0..400 {
        let limit = rng.range(1, 8);
        let period_ns = limit * rng.range(1, 1000);
        let burst = if rng.chance(30) { 0 } else { rng.range(1, 10) };
        let limiter = gcra(limit, period_ns, burst);
        let effective_burst = if burst == 0 { limit } else { burst };
        let mut model = Model {
            emission_interval: u128::from(period_ns / limit),
            burst: u128::from(effective_burst),
            tat: 0,
        };
        // Start anywhere, including near the end of time.
        let mut now: u64 = match rng.below(4) {
            0 => 0,
            1 => u64::MAX - rng.below(10 * period_ns),
            _ => rng.below(1 << 40),
        };
        for step in 0..60 {
            now = match rng.below(10) {
                0 => now.saturating_sub(rng.below(3 * period_ns)), // backwards
                1 => now,
                _ => now.saturating_add(rng.below(2 * period_ns)),
            };
            let n = rng.below(effective_burst + 2); // sometimes 0, sometimes > burst
            let max_wait = match rng.below(4) {
                0 => 0,
                1 => u64::MAX - rng.below(3),
                _ => rng.below(3 * period_ns),
            };
            let reserve = rng.chance(50);
            let got = if reserve {
                limiter.reserve_at(n, now, max_wait)
            } else {
                limiter.acquire_at(n, now)
            };
            if n > effective_burst {
                assert_eq!(
                    got,
                    Err(Error::InsufficientCapacity),
                    "case {case} step {step}"
                );
                continue;
            }
            let want = model.decide(now, n, if reserve { max_wait } else { 0 });
            assert_eq!(
                got.unwrap(),
                want,
                "case {case} step {step}: n={n} now={now} reserve={reserve} max_wait={max_wait}"
            );
        }
    }
}

/// Replays `history` on a fresh limiter, then applies `probe`.
fn replay(config: &Config, history: &[(u64, u64)], probe: (u64, u64)) -> Decision {
    let limiter = Limiter::new(config).unwrap();
    for &(n, t) in history {
        limiter.acquire_at(n, t).unwrap();
    }
    limiter.acquire_at(probe.0, probe.1).unwrap()
}

#[test]
fn retry_and_reset_hold_by_definition_on_the_library_itself() {
    let mut rng = Rng::new(7);
    for _ in 0..60 {
        let limit = rng.range(1, 5);
        let config = Config::gcra(limit, limit * rng.range(1, 50)).with_burst(rng.range(0, 4));
        let burst = if config.burst == 0 {
            limit
        } else {
            config.burst
        };
        let mut history = Vec::new();
        let mut now = rng.below(1000);
        for _ in 0..12 {
            now += rng.below(config.period_ns);
            let n = rng.range(1, burst);
            let decision = replay(&config, &history, (n, now));
            if !decision.allowed {
                let d = decision.retry_after_ns;
                assert!(d > 0);
                assert!(
                    !replay(&config, &history, (n, now + d - 1)).allowed,
                    "retry_after is the smallest"
                );
                assert!(
                    replay(&config, &history, (n, now + d)).allowed,
                    "admitted after retry_after"
                );
            }
            history.push((n, now));
            let d = decision.reset_after_ns;
            assert_eq!(
                replay(&config, &history, (0, now + d)).remaining,
                burst,
                "full after reset_after"
            );
            if d > 0 {
                assert!(
                    replay(&config, &history, (0, now + d - 1)).remaining < burst,
                    "reset_after is the smallest"
                );
            }
        }
    }
}
