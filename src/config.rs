//! What a limiter is asked to enforce: at most `limit` units per `period_ns`.

/// The limiting algorithm. The numbers are the C constants `RATE_GCRA` … `RATE_SLIDING_LOG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Algorithm {
    /// Generic cell rate algorithm: a leaky bucket as a meter (the token bucket is the same
    /// algorithm). Smooth: one unit every `period_ns / limit`, bursts up to `burst`.
    Gcra = 0,
    /// At most `limit` units in each window `[k·period, (k+1)·period)`. A hard cap per
    /// calendar window, but up to 2·`limit` can pass within one period across an edge.
    /// State: 8 bytes. Bound: `⌊(2⁶⁴−1)/period⌋ · 2^bits(limit) + limit ≤ 2⁶⁴ − 257`
    /// (always met when `limit ≤ period / 4`).
    FixedWindow = 1,
    /// The previous window's count, weighted by its overlap with the sliding period, plus
    /// the current window's count, at most `limit`: a smooth estimate with no edge burst.
    /// State: 24 bytes. Bound: as [`FixedWindow`](Self::FixedWindow).
    SlidingWindow = 2,
    /// Exact: at most `limit` units admitted in any period `(t − period, t]`, from a ring
    /// of the last `limit` admitted timestamps. State: `16 + 16·limit` bytes. Bounds:
    /// `limit ≤ 2²⁰` and `limit · (⌊(2⁶⁴−1)/period⌋ + 1) ≤ 2⁶⁴ − 257` (about `limit < period`).
    SlidingLog = 3,
}

/// A limiter's configuration. Plain data; it is validated when a limiter is built from it.
///
/// ```
/// use librate::{Config, Limiter};
/// // 100 requests a minute, in bursts of up to 10.
/// let config = Config::gcra(100, 60_000_000_000).with_burst(10);
/// let limiter = Limiter::new(&config).unwrap();
/// assert!(limiter.acquire_at(1, 0).unwrap().allowed);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Which algorithm enforces the limit.
    pub algorithm: Algorithm,
    /// L ≥ 1: units admitted per period.
    pub limit: u64,
    /// P ≥ 1: the period, in nanoseconds. [`Config::FOREVER`] is a period that never ends:
    /// a rate of zero.
    pub period_ns: u64,
    /// GCRA only: the most units admitted at once; 0 means `limit`. The window
    /// algorithms ignore it.
    pub burst: u64,
}

impl Config {
    /// A period that never ends, the last instant of the timeline (`u64::MAX` ns): a rule
    /// that never refills, whatever its algorithm. GCRA admits its `burst` (0 means
    /// `limit`) and then nothing ever, as a token bucket of rate zero; the fixed window,
    /// the sliding window counter and the sliding log admit `limit` in one window or one
    /// period that never ends. A denial's `retry_after_ns` is then `u64::MAX` ("never"),
    /// and so is `reset_after_ns` once anything was admitted. `limit ≤ 2⁶⁴ − 257` (burst
    /// too, for GCRA), and the log's cap of 2²⁰ does not apply: no log is kept.
    ///
    /// ```
    /// use librate::{Config, Limiter};
    /// // A free trial: 100 requests, ever.
    /// let trial = Limiter::new(&Config::fixed_window(100, Config::FOREVER)).unwrap();
    /// assert!(trial.acquire_at(100, 0).unwrap().allowed);
    /// let denied = trial.acquire_at(1, 3_600_000_000_000).unwrap();
    /// assert_eq!((denied.allowed, denied.retry_after_ns), (false, u64::MAX));
    /// ```
    pub const FOREVER: u64 = u64::MAX;

    /// A configuration for `algorithm` with no explicit burst.
    pub const fn new(algorithm: Algorithm, limit: u64, period_ns: u64) -> Self {
        Self {
            algorithm,
            limit,
            period_ns,
            burst: 0,
        }
    }

    /// GCRA: `limit` units per `period_ns`, burst `limit`.
    pub const fn gcra(limit: u64, period_ns: u64) -> Self {
        Self::new(Algorithm::Gcra, limit, period_ns)
    }

    /// Fixed window: at most `limit` units per window of `period_ns`.
    pub const fn fixed_window(limit: u64, period_ns: u64) -> Self {
        Self::new(Algorithm::FixedWindow, limit, period_ns)
    }

    /// Sliding window counter: at most `limit` units per weighted sliding `period_ns`.
    pub const fn sliding_window(limit: u64, period_ns: u64) -> Self {
        Self::new(Algorithm::SlidingWindow, limit, period_ns)
    }

    /// Sliding window log: at most `limit` units in any `period_ns`, exactly.
    pub const fn sliding_log(limit: u64, period_ns: u64) -> Self {
        Self::new(Algorithm::SlidingLog, limit, period_ns)
    }

    /// The same configuration with GCRA burst `burst` (0 means `limit`).
    pub const fn with_burst(self, burst: u64) -> Self {
        Self { burst, ..self }
    }
}
