//! Published test vectors of peer GCRA and token-bucket libraries, read through librate's
//! definitions (docs/decision.md), replayed through any limiter that decides at explicit times: the
//! in-process one (`tests/peer_vectors.rs`) and the Redis tier (`tests/redis.rs`).
//!
//! Where a peer's conventions differ from librate's, librate's win and the mapping is stated
//! once per peer: a peer's `-1` "no retry" is librate's `retry_after_ns == 0` for an
//! admission, and a cost above the burst is `InsufficientCapacity` (docs/decision.md),
//! where a peer reports it as a denial.

use super::Refused;
use super::{MS, SECOND};
use librate::{Config, Decision};
use std::time::Duration;

/// A limiter under test: decides `n` units at `at_ns`.
pub type Decide = Box<dyn FnMut(u64, u64) -> Result<Decision, Refused>>;

/// Makes a fresh limiter of a configuration, with no state shared with any other.
pub type Make<'a> = &'a mut dyn FnMut(&Config) -> Decide;

fn gcra(make: Make<'_>, limit: u64, period_ns: u64, burst: u64) -> Decide {
    make(&Config::gcra(limit, Duration::from_nanos(period_ns)).with_burst(burst))
}

/// One step of a vector: at `at_ns`, `n` units, and what librate's decision must say.
struct Step {
    at_ns: u64,
    n: u64,
    allowed: bool,
    remaining: u64,
    reset_after_ns: u64,
    retry_after_ns: u64,
}

fn replay(limiter: &mut Decide, burst: u64, steps: &[Step]) {
    for (i, step) in steps.iter().enumerate() {
        let decision = limiter(step.n, step.at_ns).unwrap();
        let got = (
            decision.allowed,
            decision.limit,
            decision.remaining,
            decision.reset_after_ns,
            decision.retry_after_ns,
        );
        let want = (
            step.allowed,
            burst,
            step.remaining,
            step.reset_after_ns,
            step.retry_after_ns,
        );
        assert_eq!(
            got, want,
            "step {i}: (allowed, limit, remaining, reset, retry)"
        );
    }
}

/// throttled/throttled rate_test.go `TestRateLimit`.
pub fn throttled_rate_limit(make: Make<'_>) {
    // PerSec(1) with MaxBurst 4, a limit of 5 (throttled's burst counts the request in
    // hand: burst = MaxBurst + 1).
    let mut limiter = gcra(make, 1, SECOND, 5);
    // Case 0: 6 units, more than the limit: a capacity error here, and nothing changes.
    assert_eq!(limiter(6, 0).unwrap_err(), Refused::InsufficientCapacity);
    let step = |at_ms: u64, n, allowed, remaining, reset_ms: u64, retry_ms: u64| Step {
        at_ns: at_ms * MS,
        n,
        allowed,
        remaining,
        reset_after_ns: reset_ms * MS,
        retry_after_ns: retry_ms * MS,
    };
    replay(
        &mut limiter,
        5,
        &[
            step(0, 1, true, 4, 1000, 0),
            step(0, 1, true, 3, 2000, 0),
            step(0, 1, true, 2, 3000, 0),
            step(0, 1, true, 1, 4000, 0),
            step(0, 1, true, 0, 5000, 0),
            step(0, 1, false, 0, 5000, 1000),
            step(3000, 1, true, 2, 3000, 0),
            step(3100, 1, true, 1, 3900, 0),
            step(4000, 1, true, 1, 4000, 0),
            step(8000, 1, true, 4, 1000, 0),
            step(9500, 1, true, 4, 1000, 0),
            // A zero-cost request only looks.
            step(9500, 0, true, 4, 1000, 0),
            step(9500, 2, true, 2, 3000, 0),
            // Five units need the full bucket: 3 s until it is.
            step(9500, 5, false, 2, 3000, 3000),
        ],
    );
}

/// Replays one of x/time/rate's `AllowN(t_tick, n)` vectors on `NewLimiter(10, burst)`:
/// GCRA at 10 per second (T = 100 ms), ticks 100 ms apart. A step asking more than the
/// burst fails there as a denial; here it is a capacity error, which changes nothing.
fn replay_allows(make: Make<'_>, burst: u64, test: &str, steps: &[(u64, u64, bool)]) {
    let mut limiter = gcra(make, 10, SECOND, burst);
    for (i, &(tick, n, allowed)) in steps.iter().enumerate() {
        let t = tick * 100 * MS;
        if n > burst {
            assert!(!allowed, "{test}, step {i}: the peer admits past its burst");
            let error = limiter(n, t).unwrap_err();
            assert_eq!(error, Refused::InsufficientCapacity, "{test}, step {i}");
        } else {
            let decision = limiter(n, t).unwrap();
            assert_eq!(decision.allowed, allowed, "{test}, step {i}");
        }
    }
}

/// golang.org/x/time/rate rate_test.go: the token bucket admits what GCRA admits.
pub fn x_time_rate_burst(make: Make<'_>) {
    #[rustfmt::skip]
    replay_allows(make, 1, "TestLimiterBurst1", &[
        (0, 1, true), (0, 1, false), (0, 1, false),
        (1, 1, true), (1, 1, false), (1, 1, false),
        (2, 2, false), (2, 1, true), (2, 1, false),
    ]);
    #[rustfmt::skip]
    replay_allows(make, 3, "TestLimiterBurst3", &[
        (0, 2, true), (0, 2, false), (0, 1, true), (0, 1, false),
        (1, 4, false),
        (2, 1, true), (3, 1, true),
        (4, 1, true), (4, 1, true), (4, 1, false), (4, 1, false),
        (9, 3, true), (9, 0, true),
    ]);
}

/// x/time/rate `TestLimiterJumpBackwards`.
pub fn x_time_rate_jump_backwards(make: Make<'_>) {
    // Burst 3: one unit at t1, then at t0, before
    // it. x/time/rate judges a time before its last as the last and admits a second unit
    // at t0 too; the GCRA rule taken at t = t0 (tat + T − t0 = 400 ms > τ = 300 ms)
    // denies it, which docs/clock.md allows (no more than the latest time would admit). Every other
    // step is the peer's.
    #[rustfmt::skip]
    replay_allows(make, 3, "TestLimiterJumpBackwards", &[
        (1, 1, true),
        (0, 1, true), (0, 1, false /* x/time/rate: true */), (0, 1, false), (0, 1, false),
        (1, 1, true), (1, 1, false), (1, 1, false),
        (2, 1, true), (2, 1, false), (2, 1, false),
    ]);
}

/// redis-cell's README example.
pub fn redis_cell_throttle(make: Make<'_>) {
    // `CL.THROTTLE user123 15 30 60 1` answers allowed, limit 16, remaining 15, retry -1,
    // reset 2 s: max_burst 15 is a burst of 16, 30 per 60 s.
    let mut limiter = gcra(make, 30, 60 * SECOND, 16);
    replay(
        &mut limiter,
        16,
        &[Step {
            at_ns: 5 * SECOND,
            n: 1,
            allowed: true,
            remaining: 15,
            reset_after_ns: 2 * SECOND,
            retry_after_ns: 0,
        }],
    );
}
