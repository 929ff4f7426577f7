//! The library against the closed-form reference models of docs/decision.md
//! (`common/exact.rs`), over the whole `u64` timeline and every configuration the bounds
//! table accepts: limits and periods near their bounds, B·T near 2⁶⁴ − 257, periods near
//! `u64::MAX` and FOREVER, costs near the limit, times near 0, near the end of the
//! timeline and going backwards. First the closed forms themselves, against a brute-force
//! search of the definitions ("the smallest wait d such that …") on small configurations.

mod common;

use common::c_decision::decision_of;
use common::exact::{valid, Exact, NEVER, STORABLE};
use common::models::combine;
use common::{refused, Refused, Rng};
use librate::{Algorithm, Config, Decision, Instant, InsufficientCapacity, Limiter, Policy};
use rate::*;
use std::ptr;
use std::time::Duration;

const ALGORITHMS: [Algorithm; 4] = [
    Algorithm::Gcra,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::SlidingLog,
];

/// Whether `n` units at `at` are admitted on `model`'s state (a reserve with `max_wait`).
fn admits(model: &Exact, at: u64, n: u64, max_wait: Option<u64>) -> bool {
    model.clone().decide(at, n, max_wait).unwrap().allowed
}

/// The most units a plain acquire takes at `at`, by trying every cost.
fn most(model: &Exact, at: u64) -> u64 {
    (0..=model.limit())
        .rev()
        .find(|&m| admits(model, at, m, None))
        .unwrap()
}

/// The smallest d ≤ `span` with `holds(now + d)`, scanning every d; never if none and
/// `now + span` is the timeline's last instant.
fn scan(now: u64, span: u64, holds: impl Fn(u64) -> bool) -> u64 {
    let span = span.min(u64::MAX - now);
    match (0..=span).find(|&d| holds(now + d)) {
        Some(d) => d,
        None if now + span == u64::MAX => NEVER,
        None => panic!("nothing within {span} ns of {now}: widen the scan"),
    }
}

/// Each closed form equals its definition, searched by brute force, on small
/// configurations whose answers lie within a short scan: times near 0 and near the end of
/// the timeline (where a TAT cannot pass 2⁶⁴ − 257 and windows run past the last
/// instant), in any order.
#[test]
fn closed_forms_equal_their_definitions() {
    let mut rng = Rng::new(0x6578_6163_745f_6266);
    let (mut cases, mut denials, mut nevers) = (0, 0, 0);
    while cases < 1500 {
        let algorithm = ALGORITHMS[rng.below(4) as usize];
        let limit = rng.range(1, 4);
        let period_ns = if rng.chance(10) {
            RATE_FOREVER
        } else {
            rng.range(1, 40)
        };
        let period = Duration::from_nanos(period_ns);
        let config = Config::new(algorithm, limit, period).with_burst(rng.range(0, 5));
        if !valid(&config) {
            continue;
        }
        cases += 1;
        let mut model = Exact::new(&config);
        let limit = model.limit();
        // An allowance's "never" holds at every time: seen only where the scan reaches
        // the end of the timeline.
        let base = if rng.chance(50) && period_ns != RATE_FOREVER {
            0
        } else {
            u64::MAX - 300
        };
        for _ in 0..16 {
            let now = base + rng.below(301);
            let n = rng.below(limit + 1);
            let max_wait = match (algorithm, rng.below(4)) {
                (Algorithm::Gcra, 0) => Some(rng.below(100)),
                (Algorithm::Gcra, 1) if base > 0 => Some(u64::MAX - rng.below(2)),
                _ => None,
            };
            let before = model.clone();
            let got = model.decide(now, n, max_wait).unwrap();
            let span = 2_000;
            let retry = if got.allowed {
                0
            } else {
                denials += 1;
                scan(now, span, |at| admits(&before, at, n, max_wait))
            };
            let reset = scan(now, span, |at| most(&model, at) == limit);
            nevers += u64::from(retry == NEVER || reset == NEVER);
            let want = Decision {
                remaining: most(&model, now),
                retry_after_ns: retry,
                reset_after_ns: reset,
                ..got
            };
            assert_eq!(
                got, want,
                "{config:?} at {now}, n {n}, max wait {max_wait:?}"
            );
        }
    }
    assert!(
        denials > 2000 && nevers > 500,
        "{denials} denials, {nevers} nevers"
    );
}

/// The closed form of the reviewed late GCRA admission (`tests/exact_paths.rs`), by hand:
/// reset_after_ns = n·T = 3,548,822,082,096,038,828.
#[test]
fn the_reviewed_case() {
    let config = Config::gcra(5, Duration::from_nanos(1_432_100_142)).with_burst(32_730_240_330);
    let mut model = Exact::new(&config);
    let decision = model
        .decide(3_028_339_343_176_555_158, 12_390_272_101, None)
        .unwrap();
    assert_eq!(decision.reset_after_ns, 3_548_822_082_096_038_828);
    assert_eq!(decision.remaining, 20_339_968_229);
}

/// A value drawn around `center`: exactly it, or a few ns either side (saturating).
fn near(rng: &mut Rng, center: u64) -> u64 {
    let offset = rng.below(5);
    if rng.chance(50) {
        center.saturating_add(offset)
    } else {
        center.saturating_sub(offset)
    }
}

/// Any value of 64 bits, of any magnitude.
fn any(rng: &mut Rng) -> u64 {
    rng.next_u64() >> rng.below(64)
}

/// A configuration of any shape, often near a bound of docs/decision.md's table: it may
/// be invalid.
fn wide_config(rng: &mut Rng) -> Config {
    let algorithm = ALGORITHMS[rng.below(4) as usize];
    let period_ns = match rng.below(8) {
        0 => rng.range(1, 64),
        1 => near(rng, u64::MAX - 1),
        2 => RATE_FOREVER,
        3 => {
            let power = 1 << rng.range(1, 63);
            near(rng, power)
        }
        _ => any(rng).max(1),
    };
    let log_cap = 1 << 12;
    let limit = match rng.below(8) {
        0 | 1 => rng.range(1, 8),
        2 => near(rng, period_ns),
        3 => near(rng, period_ns / 4),
        4 => {
            let share = period_ns / rng.range(1, 100);
            near(rng, share)
        }
        5 if algorithm == Algorithm::SlidingLog => near(rng, 1 << 20),
        _ => any(rng),
    };
    let limit = if algorithm == Algorithm::SlidingLog && period_ns != RATE_FOREVER {
        // The model logs every unit: keep most logs short.
        limit.min(if rng.chance(2) { 1 << 20 } else { log_cap })
    } else {
        limit
    }
    .max(1);
    let interval = (period_ns / limit).max(1);
    let burst = match rng.below(6) {
        0 => 0,
        1 => rng.range(1, 8),
        2 | 3 => near(rng, (STORABLE as u64) / interval),
        4 => near(rng, u64::MAX - 256),
        _ => any(rng),
    };
    Config::new(algorithm, limit, Duration::from_nanos(period_ns)).with_burst(burst)
}

/// The next time of a sequence: anywhere on the timeline, near 0 or its end, at a
/// window's edge or the last instant a GCRA bucket can be full, or a step from `now`
/// either way.
fn wide_time(rng: &mut Rng, now: u64, config: &Config, limit: u64) -> u64 {
    let p = config.period().as_nanos() as u64;
    match rng.below(10) {
        0 => now,
        1 => now.saturating_add(rng.below(p.saturating_mul(2).max(2))),
        2 => now.saturating_sub(rng.below(p.saturating_mul(2).max(2))),
        3 => near(rng, now),
        4 => {
            let edge = (now / p).saturating_add(rng.below(3)).saturating_mul(p);
            near(rng, edge)
        }
        5 => near(rng, 0),
        6 => near(rng, u64::MAX),
        7 => {
            // The last instants a full GCRA bucket fits below 2⁶⁴ − 257.
            let tau = (p / config.limit).saturating_mul(limit);
            near(rng, (STORABLE as u64).saturating_sub(tau))
        }
        _ => any(rng),
    }
}

/// A limiter reached through the Rust API, or through the C functions with `out` or
/// with NULL (the outcome alone, which may take a cheaper path to it).
enum Handle {
    Rust(Box<Limiter>),
    C(*mut rate_limiter),
}

impl Handle {
    fn new(config: &Config, through_c: bool) -> Result<Self, i32> {
        if !through_c {
            return Limiter::new(config)
                .map(|limiter| Self::Rust(Box::new(limiter)))
                .map_err(|_| RATE_E_INVALID_CONFIG);
        }
        let c_config = rate_config {
            algorithm: match config.algorithm {
                Algorithm::Gcra => RATE_GCRA,
                Algorithm::FixedWindow => RATE_FIXED_WINDOW,
                Algorithm::SlidingWindow => RATE_SLIDING_WINDOW,
                Algorithm::SlidingLog => RATE_SLIDING_LOG,
                algorithm => unimplemented!("no C number for {algorithm:?}"),
            },
            limit: config.limit,
            period_ns: config.period().as_nanos() as u64,
            burst: config.burst,
        };
        let mut handle = ptr::null_mut();
        // SAFETY: both pointers come from live locals.
        match unsafe { rate_limiter_new(&c_config, &mut handle) } {
            RATE_OK => Ok(Self::C(handle)),
            status => Err(status),
        }
    }

    fn reset(&self) {
        match self {
            Self::Rust(limiter) => limiter.reset(),
            // SAFETY: a live handle.
            Self::C(handle) => assert_eq!(unsafe { rate_limiter_reset(*handle) }, RATE_OK),
        }
    }

    /// The decision on `n` units at `now` (a reserve with `max_wait`), or with `written`
    /// false through C, the outcome alone: `allowed` and the rest as `like`.
    fn decide(
        &self,
        n: u64,
        now: u64,
        max_wait: Option<u64>,
        written: bool,
        like: &Result<Decision, Refused>,
    ) -> Result<Decision, Refused> {
        let handle = match self {
            Self::Rust(limiter) => {
                return match max_wait {
                    Some(max_wait) => limiter
                        .reserve_at(n, Instant::from_nanos(now), Duration::from_nanos(max_wait))
                        .map_err(refused),
                    None => limiter
                        .acquire_at(n, Instant::from_nanos(now))
                        .map_err(refused),
                }
            }
            Self::C(handle) => *handle,
        };
        let mut out = rate_decision::default();
        let out_ptr = if written {
            &mut out as *mut rate_decision
        } else {
            ptr::null_mut()
        };
        // SAFETY: a live handle; `out_ptr` NULL or a live local.
        let status = unsafe {
            match max_wait {
                Some(max_wait) => rate_limiter_reserve_at(handle, n, now, max_wait, out_ptr),
                None => rate_limiter_acquire_at(handle, n, now, out_ptr),
            }
        };
        match status {
            RATE_OK | RATE_LIMITED if written => Ok(decision_of(&out)),
            RATE_OK | RATE_LIMITED => Ok(Decision {
                allowed: status == RATE_OK,
                ..like.as_ref().copied().unwrap_or_default()
            }),
            RATE_E_INSUFFICIENT_CAPACITY => Err(Refused::InsufficientCapacity),
            RATE_E_UNSUPPORTED => Err(Refused::Unsupported),
            status => panic!("status {status}"),
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        if let Self::C(handle) = self {
            // SAFETY: made by `rate_limiter_new`, freed once.
            unsafe { rate_limiter_free(*handle) };
        }
    }
}

/// Random sequences of acquires, reserves and resets over configurations and times of every
/// shape, through the Rust API or the C functions: every decision (every outcome, with
/// `out` NULL) equals the reference model's.
fn decides_as_the_models_everywhere(seed: u64, through_c: bool) {
    let mut rng = Rng::new(seed);
    let (mut configs, mut rejected, mut decisions) = (0, 0, 0);
    while configs < 3000 {
        let config = wide_config(&mut rng);
        let built = Handle::new(&config, through_c);
        assert_eq!(built.is_ok(), valid(&config), "{config:?}");
        let Ok(limiter) = built else {
            assert_eq!(built.err(), Some(RATE_E_INVALID_CONFIG));
            rejected += 1;
            continue;
        };
        configs += 1;
        let mut model = Exact::new(&config);
        let limit = model.limit();
        let start = any(&mut rng);
        let mut now = wide_time(&mut rng, start, &config, limit);
        for step in 0..24 {
            now = wide_time(&mut rng, now, &config, limit);
            let n = match rng.below(6) {
                0 => 0,
                1 => near(&mut rng, limit),
                2 => rng.range(1, limit.min(8)),
                _ => rng.below(limit.saturating_add(1)),
            };
            let max_wait = match rng.below(6) {
                0 => Some(0),
                1 => Some(any(&mut rng)),
                2 => Some(near(&mut rng, u64::MAX)),
                _ => None,
            };
            if rng.chance(3) {
                limiter.reset();
                model.reset();
            }
            let want = model.decide(now, n, max_wait);
            let got = limiter.decide(n, now, max_wait, rng.chance(50), &want);
            decisions += 1;
            assert_eq!(
                got, want,
                "{config:?}, step {step}: n {n} at {now}, max wait {max_wait:?}"
            );
        }
    }
    assert!(rejected > 300, "invalid configurations tried: {rejected}");
    assert!(decisions >= 72_000);
}

#[test]
fn the_library_decides_as_the_reference_models_everywhere() {
    decides_as_the_models_everywhere(0x6578_6163_745f_7769, false);
}

#[test]
fn the_c_functions_decide_as_the_reference_models_everywhere() {
    decides_as_the_models_everywhere(0x6578_6163_745f_6369, true);
}

/// Policies of 1 to 4 rules of every shape (docs/policies.md): a request is admitted iff
/// every rule's model admits it, a denial takes nothing from any rule, and the decision
/// and each rule's are what `combine` makes of the models' (the rules' own on an
/// admission; on a denial, each rule's state at that instant with its own answer).
#[test]
fn policies_decide_as_the_reference_models_everywhere() {
    let mut rng = Rng::new(0x6578_6163_745f_706f);
    let mut decisions = 0;
    while decisions < 20_000 {
        let rules: Vec<Config> = (0..rng.range(1, 4))
            .map(|_| loop {
                let rule = wide_config(&mut rng);
                if valid(&rule) {
                    break rule;
                }
            })
            .collect();
        let policy = Policy::new(&rules).unwrap();
        let mut models: Vec<Exact> = rules.iter().map(Exact::new).collect();
        let limit = models.iter().map(Exact::limit).min().unwrap();
        let mut now = any(&mut rng);
        for step in 0..16 {
            let rule = rules[rng.below(rules.len() as u64) as usize];
            now = wide_time(&mut rng, now, &rule, limit);
            let n = match rng.below(4) {
                0 => 0,
                1 => near(&mut rng, limit),
                _ => rng.below(limit.saturating_add(1)),
            };
            let got = policy.acquire_at(n, Instant::from_nanos(now));
            decisions += 1;
            if n > limit {
                assert_eq!(got.err(), Some(InsufficientCapacity));
                continue;
            }
            let mut after = models.clone();
            let taken = after
                .iter_mut()
                .map(|model| model.decide(now, n, None).unwrap())
                .collect();
            let (decision, denied_by, each) =
                combine(taken, |i| models[i].clone().decide(now, 0, None).unwrap());
            if decision.allowed {
                models = after;
            }
            let got = got.unwrap();
            let context = format!("{rules:?}, step {step}: n {n} at {now}");
            assert_eq!(got.decision, decision, "{context}");
            assert_eq!(got.denied_by, denied_by, "{context}");
            assert_eq!(got.rules(), each, "{context}");
        }
    }
}

/// Errors the model names: a cost above the limit, a reserve on a window.
#[test]
fn the_model_names_the_errors() {
    let mut window = Exact::new(&Config::fixed_window(2, Duration::from_nanos(10)));
    assert_eq!(window.decide(0, 0, Some(0)), Err(Refused::Unsupported));
    assert_eq!(
        window.decide(0, 3, None),
        Err(Refused::InsufficientCapacity)
    );
}
