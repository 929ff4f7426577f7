//! The outcome of one acquire, reserve or query (docs/decision.md).

use std::time::Duration;

/// What a limiter decided, and what the caller may do next.
///
/// All durations are nanoseconds from the instant the decision was made at, and
/// saturate at `u64::MAX` ("never", [`Decision::NEVER`]). The fields are public plain
/// data, so that a decision can be written as a literal (a test's expected value, a
/// model's); [`retry_after`](Self::retry_after), [`reset_after`](Self::reset_after) and
/// [`wait`](Self::wait) read them as [`Duration`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Decision {
    /// Whether the request was admitted.
    pub allowed: bool,
    /// Most units this limiter can ever admit at once (GCRA: burst; windows: limit).
    pub limit: u64,
    /// Units that could be admitted at `now` right after this decision.
    pub remaining: u64,
    /// 0 when admitted; else the smallest `d` such that the same request at `now + d`,
    /// with no other traffic, would be admitted.
    pub retry_after_ns: u64,
    /// The smallest `d` such that at `now + d`, with no other traffic, `remaining == limit`.
    pub reset_after_ns: u64,
    /// Reserve only: how long an admitted caller must wait before acting; else 0.
    pub wait_ns: u64,
}

impl Decision {
    /// The duration that means "never": `u64::MAX` ns, the whole timeline
    /// ([`Config::FOREVER`](crate::Config::FOREVER)). A denial by a rule that never refills
    /// retries after it.
    pub const NEVER: Duration = Duration::from_nanos(u64::MAX);

    /// [`retry_after_ns`](Self::retry_after_ns): zero when admitted, else how long until
    /// the same request would be, [`NEVER`](Self::NEVER) if it never will.
    pub const fn retry_after(&self) -> Duration {
        Duration::from_nanos(self.retry_after_ns)
    }

    /// [`reset_after_ns`](Self::reset_after_ns): how long until the limiter is full again,
    /// [`NEVER`](Self::NEVER) if it never will.
    pub const fn reset_after(&self) -> Duration {
        Duration::from_nanos(self.reset_after_ns)
    }

    /// [`wait_ns`](Self::wait_ns): reserve only, how long an admitted caller must wait
    /// before acting; else zero.
    pub const fn wait(&self) -> Duration {
        Duration::from_nanos(self.wait_ns)
    }
}
