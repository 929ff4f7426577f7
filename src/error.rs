//! Typed errors of the Rust API. The C layer maps each to a fixed `RATE_E_*` number.

use std::fmt;

/// Why a [`Config`](crate::Config) was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `limit` is 0; at least one unit per period is required.
    ZeroLimit,
    /// `period_ns` is 0.
    ZeroPeriod,
    /// GCRA: `period_ns / limit` is 0, i.e. more than one unit per nanosecond.
    RateTooHigh,
    /// GCRA: `burst × emission interval` exceeds 2⁶⁴ − 257 ns, the largest storable TAT.
    ToleranceTooLarge,
    /// Window algorithms: `limit` is too large for `period_ns` (their state could
    /// overflow on the u64 timeline), or above the sliding log's cap of 2²⁰. The exact
    /// bounds are on each [`Algorithm`](crate::Algorithm) variant.
    LimitTooLarge,
    /// Keyed limiters: `capacity` is 0 or the table cannot be allocated.
    Capacity,
    /// The Redis tier: a duration of the configuration (GCRA's `burst × emission
    /// interval`, a window's period) reaches 2⁵³ ns (104 days), past what Redis's Lua,
    /// whose numbers are doubles, decides exactly.
    NotExactOnRedis,
    /// Policies: no rule, or more than [`MAX_RULES`](crate::MAX_RULES).
    PolicyRules,
    /// The Redis tier: a policy's key prefix holds `{` or `}`, which would make (part of)
    /// the prefix the Cluster hash tag of the rules' keys instead of the key's.
    RedisPrefix,
    /// Policies: a request's costs, one per rule, are not as many as the rules.
    PolicyCosts,
    /// A change of rule at run time (`set_config`, `set_rules`) that cannot carry the
    /// state over: to another algorithm (a period of [`Config::FOREVER`] keeps it), to or
    /// from a sliding log's own rule, or to another number of rules.
    ///
    /// [`Config::FOREVER`]: crate::Config::FOREVER
    LiveChange,
}

impl ConfigError {
    fn message(self) -> &'static str {
        match self {
            Self::ZeroLimit => "limit must be at least 1",
            Self::ZeroPeriod => "period_ns must be at least 1",
            Self::RateTooHigh => {
                "period_ns / limit must be at least 1 ns (at most one unit per ns)"
            }
            Self::ToleranceTooLarge => "burst x (period_ns / limit) must be at most 2^64 - 257 ns",
            Self::LimitTooLarge => {
                "limit is too large for this algorithm (for its period, or above the log's cap)"
            }
            Self::Capacity => "capacity must be at least 1 and the table must fit in memory",
            Self::NotExactOnRedis => {
                "on Redis, burst x (period_ns / limit) and period_ns must be below 2^53 ns"
            }
            Self::PolicyRules => "a policy has 1 to 8 rules",
            Self::RedisPrefix => "a Redis policy's prefix must not contain '{' or '}'",
            Self::PolicyCosts => "a policy request gives one cost per rule",
            Self::LiveChange => {
                "a live change keeps the algorithm (and the number of rules), and a sliding \
                 log's rule does not change"
            }
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Every way an operation can fail. A denial is not an error: it is a
/// [`Decision`](crate::Decision) with `allowed == false`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid.
    InvalidConfig(ConfigError),
    /// `n` exceeds the most this limiter can ever admit at once (its `limit`), so no
    /// amount of waiting would admit it.
    InsufficientCapacity,
    /// A keyed table is full of live keys and cannot take a new one.
    TableFull,
    /// The operation does not exist for this limiter: a reserve on a window algorithm, or
    /// a change of rule where none can be made (a keyed table or keyed policy in a shared
    /// file).
    Unsupported,
    /// The operating system refused to create, open, size or map a shared file: its
    /// error number (`errno`), as [`std::io::Error::from_raw_os_error`] reads it.
    Io(i32),
    /// The file is not a librate table of this layout, kind, rule and size; it was left
    /// untouched. [`describe_file`](crate::describe_file) says what it holds.
    Incompatible,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidConfig(why) => write!(f, "invalid configuration: {why}"),
            Self::InsufficientCapacity => f.write_str("cost exceeds the limiter's capacity"),
            Self::TableFull => f.write_str("keyed table is full of live keys"),
            Self::Unsupported => {
                f.write_str("operation not supported by this limiter (a reserve needs GCRA)")
            }
            Self::Io(errno) => write!(
                f,
                "shared file: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
            Self::Incompatible => f.write_str(
                "shared file is not a librate table of this kind, rule and size (describe_file \
                 says what it holds; an opener may replace its rules)",
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<ConfigError> for Error {
    fn from(why: ConfigError) -> Self {
        Self::InvalidConfig(why)
    }
}
