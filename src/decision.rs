//! The outcome of one acquire, reserve or query (docs/decision.md).

/// What a limiter decided, and what the caller may do next.
///
/// All durations are nanoseconds from the `now_ns` the decision was made at, and
/// saturate at `u64::MAX` ("never").
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
