//! What a limiter is asked to enforce: at most `limit` units per period.

use std::time::Duration;

use crate::time::nanos;

/// The limiting algorithm. The numbers are the C constants `RATE_GCRA` … `RATE_SLIDING_LOG`;
/// more algorithms may come.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
#[non_exhaustive]
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
/// use librate::{Config, Instant, Limiter};
/// use std::time::Duration;
/// // 100 requests a minute, in bursts of up to 10.
/// let config = Config::per_minute(100).with_burst(10);
/// assert_eq!(config, Config::gcra(100, Duration::from_secs(60)).with_burst(10));
/// let limiter = Limiter::new(&config).unwrap();
/// assert!(limiter.acquire_at(1, Instant::ZERO).unwrap().allowed);
/// ```
///
/// The period is a [`Duration`] in every constructor, kept as whole nanoseconds
/// ([`period`](Self::period)); one of `u64::MAX` ns or more, [`Duration::MAX`] among them,
/// is [`Config::FOREVER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Which algorithm enforces the limit.
    pub algorithm: Algorithm,
    /// L ≥ 1: units admitted per period.
    pub limit: u64,
    /// P ≥ 1: the period in nanoseconds, saturated at `u64::MAX` ([`Config::FOREVER`], a
    /// period that never ends: a rate of zero). Private, so that the period is given and
    /// read one way, as a [`Duration`]; the crate's algorithms compute on it as nanoseconds.
    pub(crate) period_ns: u64,
    /// GCRA only: the most units admitted at once; 0 means `limit`. The window
    /// algorithms ignore it.
    pub burst: u64,
}

impl Config {
    /// A period that never ends, the length of the whole timeline (`u64::MAX` ns, about 584
    /// years; every longer period saturates to it): a rule
    /// that never refills, whatever its algorithm. GCRA admits its `burst` (0 means
    /// `limit`) and then nothing ever, as a token bucket of rate zero; the fixed window,
    /// the sliding window counter and the sliding log admit `limit` in one window or one
    /// period that never ends. A denial's `retry_after_ns` is then `u64::MAX` ("never"),
    /// and so is `reset_after_ns` once anything was admitted ([`Decision::NEVER`](crate::Decision::NEVER)). `limit ≤ 2⁶⁴ − 257` (burst
    /// too, for GCRA), and the log's cap of 2²⁰ does not apply: no log is kept.
    ///
    /// ```
    /// use librate::{Config, Decision, Instant, Limiter};
    /// use std::time::Duration;
    /// // A free trial: 100 requests, ever.
    /// let trial = Limiter::new(&Config::fixed_window(100, Config::FOREVER)).unwrap();
    /// assert!(trial.acquire_at(100, Instant::ZERO).unwrap().allowed);
    /// let denied = trial.acquire_at(1, Instant::ZERO + Duration::from_secs(3600)).unwrap();
    /// assert_eq!((denied.allowed, denied.retry_after()), (false, Decision::NEVER));
    /// assert_eq!(Config::fixed_window(100, Duration::MAX), Config::fixed_window(100, Config::FOREVER));
    /// ```
    pub const FOREVER: Duration = Duration::from_nanos(u64::MAX);

    /// A configuration for `algorithm` with no explicit burst.
    pub const fn new(algorithm: Algorithm, limit: u64, period: Duration) -> Self {
        Self {
            algorithm,
            limit,
            period_ns: nanos(period),
            burst: 0,
        }
    }

    /// GCRA: `limit` units per `period`, burst `limit`.
    pub const fn gcra(limit: u64, period: Duration) -> Self {
        Self::new(Algorithm::Gcra, limit, period)
    }

    /// GCRA: `limit` units a second, burst `limit`.
    pub const fn per_second(limit: u64) -> Self {
        Self::gcra(limit, Duration::from_secs(1))
    }

    /// GCRA: `limit` units a minute, burst `limit`.
    pub const fn per_minute(limit: u64) -> Self {
        Self::gcra(limit, Duration::from_secs(60))
    }

    /// GCRA: `limit` units an hour, burst `limit`.
    pub const fn per_hour(limit: u64) -> Self {
        Self::gcra(limit, Duration::from_secs(3600))
    }

    /// Fixed window: at most `limit` units per window of `period`.
    pub const fn fixed_window(limit: u64, period: Duration) -> Self {
        Self::new(Algorithm::FixedWindow, limit, period)
    }

    /// Sliding window counter: at most `limit` units per weighted sliding `period`.
    pub const fn sliding_window(limit: u64, period: Duration) -> Self {
        Self::new(Algorithm::SlidingWindow, limit, period)
    }

    /// Sliding window log: at most `limit` units in any `period`, exactly.
    pub const fn sliding_log(limit: u64, period: Duration) -> Self {
        Self::new(Algorithm::SlidingLog, limit, period)
    }

    /// The period, whole nanoseconds: [`Config::FOREVER`] for any period of `u64::MAX` ns
    /// or more.
    pub const fn period(&self) -> Duration {
        Duration::from_nanos(self.period_ns)
    }

    /// The same configuration with GCRA burst `burst` (0 means `limit`).
    pub const fn with_burst(self, burst: u64) -> Self {
        Self { burst, ..self }
    }
}
