//! The plain-data structs of the C ABI.

use librate::Algorithm;
use librate::Config;
use librate::Decision;
use librate::KeyedStats;
use std::time::Duration;

/// Algorithm: GCRA (leaky bucket as a meter; token bucket). Takes `burst`.
pub const RATE_GCRA: u32 = 0;
/// Algorithm: fixed window counter.
pub const RATE_FIXED_WINDOW: u32 = 1;
/// Algorithm: sliding window counter (previous window weighted by overlap).
pub const RATE_SLIDING_WINDOW: u32 = 2;
/// Algorithm: sliding window log (exact rolling count).
pub const RATE_SLIDING_LOG: u32 = 3;

/// `period_ns`: a period that never ends, a rule that never refills (a rate of zero).
/// RATE_GCRA admits `burst` (0 means `limit`) units, ever; the other algorithms `limit`
/// units, ever. A denial's `retry_after_ns` is then `UINT64_MAX` ("never"), and so is
/// `reset_after_ns` once anything was admitted. Bound: `limit` (and GCRA's `burst`)
/// `<= 2^64 - 257`; the sliding log's cap of 2^20 does not apply. State: 8 bytes.
pub const RATE_FOREVER: u64 = u64::MAX;

/// What a limiter enforces: at most `limit` units per `period_ns`.
///
/// Bounds beyond `limit >= 1` and `period_ns >= 1` (else RATE_E_INVALID_CONFIG), for a
/// period other than `RATE_FOREVER`:
/// - RATE_GCRA: `period_ns / limit >= 1` and `burst * (period_ns / limit)` fits 64 bits.
/// - RATE_FIXED_WINDOW, RATE_SLIDING_WINDOW: `floor((2^64-1) / period_ns) *
///   2^bits(limit) + limit <= 2^64 - 257`, where bits(limit) is the bit length of `limit`;
///   always met when `limit <= period_ns / 4`. State: 8 and 24 bytes.
/// - RATE_SLIDING_LOG: `limit <= 2^20` and `limit * (floor((2^64-1) / period_ns) + 1)
///   <= 2^64 - 257` (about `limit < period_ns`). State: 24 + 16 * limit bytes.
///
/// Each `rate_limiter` also takes 256 bytes of cache-line padding.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rate_config {
    /// `RATE_GCRA`, `RATE_FIXED_WINDOW`, `RATE_SLIDING_WINDOW` or `RATE_SLIDING_LOG`;
    /// anything else is `RATE_E_INVALID_CONFIG`.
    pub algorithm: u32,
    /// L >= 1: units admitted per period.
    pub limit: u64,
    /// P >= 1: the period in nanoseconds; `RATE_FOREVER` never ends.
    pub period_ns: u64,
    /// GCRA only: the most units admitted at once; 0 means `limit`. Ignored by the
    /// window algorithms.
    pub burst: u64,
}

impl From<&Config> for rate_config {
    fn from(config: &Config) -> Self {
        Self {
            algorithm: config.algorithm as u32,
            limit: config.limit,
            // Exact: a `Config` saturates its period at `u64::MAX` ns (`Config::FOREVER`).
            period_ns: config.period().as_nanos() as u64,
            burst: config.burst,
        }
    }
}

impl rate_config {
    /// The Rust configuration, or `None` for an unknown algorithm number. The number is
    /// checked before it becomes an enum: an out-of-range discriminant would be UB.
    pub(crate) fn to_config(self) -> Option<Config> {
        let algorithm = match self.algorithm {
            RATE_GCRA => Algorithm::Gcra,
            RATE_FIXED_WINDOW => Algorithm::FixedWindow,
            RATE_SLIDING_WINDOW => Algorithm::SlidingWindow,
            RATE_SLIDING_LOG => Algorithm::SlidingLog,
            _ => return None,
        };
        let period = Duration::from_nanos(self.period_ns);
        Some(Config::new(algorithm, self.limit, period).with_burst(self.burst))
    }
}

/// The outcome of an acquire, reserve or query. Durations are nanoseconds from the
/// decision's `now` and saturate at UINT64_MAX ("never").
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rate_decision {
    /// 1 admitted, 0 denied.
    pub allowed: u8,
    /// Most units this limiter can ever admit at once (GCRA: burst; windows: limit).
    pub limit: u64,
    /// Units that could be admitted at `now` right after this decision.
    pub remaining: u64,
    /// 0 when admitted; else the smallest d such that the same request at now + d, with no
    /// other traffic, would be admitted (for a reserve: with the same max_wait_ns).
    pub retry_after_ns: u64,
    /// The smallest d such that at now + d, with no other traffic, remaining == limit.
    pub reset_after_ns: u64,
    /// Reserve only: how long an admitted caller must wait before acting; else 0.
    pub wait_ns: u64,
}

impl From<Decision> for rate_decision {
    fn from(d: Decision) -> Self {
        Self {
            allowed: u8::from(d.allowed),
            limit: d.limit,
            remaining: d.remaining,
            retry_after_ns: d.retry_after_ns,
            reset_after_ns: d.reset_after_ns,
            wait_ns: d.wait_ns,
        }
    }
}

/// A keyed table's statistics, for dashboards: what `rate_keyed_read_stats` writes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct rate_keyed_stats {
    /// The capacity the table was created with: this many live keys always fit.
    pub capacity: u64,
    /// The most keys the table holds at once: its slots, twice `capacity`.
    pub max_keys: u64,
    /// Keys whose state was not fresh (a new key's) at the time asked.
    pub live_keys: u64,
    /// Requests for new keys refused with RATE_E_TABLE_FULL since the table was created;
    /// for a shared table, since its file was created, by every process that opened it.
    pub table_full: u64,
}

impl From<KeyedStats> for rate_keyed_stats {
    fn from(stats: KeyedStats) -> Self {
        Self {
            capacity: stats.capacity,
            max_keys: stats.max_keys,
            live_keys: stats.live_keys,
            table_full: stats.table_full,
        }
    }
}
