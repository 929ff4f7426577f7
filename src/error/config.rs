//! [`ConfigError`]: why a configuration was rejected, naming the field, its value and
//! the bound it broke ([`ConfigError::field`], [`value`](ConfigError::value),
//! [`bound`](ConfigError::bound)). Its `Display` is the sentence every language gives
//! (docs/decision.md, Configuration): the C explain functions write it, Python and Go
//! raise it.

use crate::config::{Algorithm, Config};
use std::fmt;

/// Why a [`Config`] (or a keyed table's capacity, or a policy) was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `limit` is 0; at least one unit per period is required.
    ZeroLimit,
    /// `period_ns` is 0.
    ZeroPeriod,
    /// GCRA: `period_ns / limit` is 0, i.e. more than one unit per nanosecond.
    RateTooHigh(OutOfBounds),
    /// GCRA: `burst × emission interval` exceeds 2⁶⁴ − 257 ns, the largest storable TAT.
    ToleranceTooLarge(OutOfBounds),
    /// Window algorithms: `limit` is too large for `period_ns` (their state could
    /// overflow on the u64 timeline), or above the sliding log's cap of 2²⁰; a period
    /// that never ends: `limit` (GCRA: `burst`) above 2⁶⁴ − 257. The exact bounds are on
    /// each [`Algorithm`] variant.
    LimitTooLarge(OutOfBounds),
    /// Keyed limiters and keyed policies: `capacity` is 0.
    ZeroCapacity,
    /// Keyed limiters and keyed policies: the table of `capacity` keys, `bytes_per_key`
    /// bytes each, is larger than can be allocated or mapped.
    Capacity {
        /// The capacity asked for.
        capacity: u64,
        /// The bytes one key takes in the table.
        bytes_per_key: u64,
    },
    /// The Redis tier: a duration of the configuration (GCRA's `burst × emission
    /// interval`, a window's period) reaches 2⁵³ ns (104 days), past what Redis's Lua,
    /// whose numbers are doubles, decides exactly.
    NotExactOnRedis,
    /// Policies: a rule's configuration is invalid. [`field`](Self::field),
    /// [`value`](Self::value) and [`bound`](Self::bound) are its reason's.
    PolicyRule {
        /// The rule's index, in the order given (from 0).
        rule: usize,
        /// Why the rule's configuration was rejected.
        why: Box<ConfigError>,
    },
    /// Policies: no rule, or more than [`MAX_RULES`](crate::MAX_RULES).
    PolicyRules {
        /// The rules given.
        rules: usize,
    },
    /// The Redis tier: a policy's key prefix holds `{` or `}`, which would make (part of)
    /// the prefix the Cluster hash tag of the rules' keys instead of the key's.
    RedisPrefix {
        /// The prefix given.
        prefix: Vec<u8>,
    },
    /// Policies: a request's costs, one per rule, are not as many as the rules.
    PolicyCosts {
        /// The costs given.
        costs: usize,
    },
    /// A change of rule at run time (`set_config`, `set_rules`) that cannot carry the
    /// state over: to another algorithm (a period of [`Config::FOREVER`] keeps it), to or
    /// from a sliding log's own rule, or to another number of rules.
    ///
    /// [`Config::FOREVER`]: crate::Config::FOREVER
    LiveChange,
    /// Leases (docs/leases.md): the rule's algorithm is not one that leases divide.
    LeaseAlgorithm(Algorithm),
    /// Leases: a lease shorter than 1 ms or of 2⁵³ µs or more, or a renewal interval not
    /// below the lease's end (a thousandth of the lease before it).
    LeaseTiming {
        /// The lease's length.
        lease: std::time::Duration,
        /// The interval between renewals.
        renew_every: std::time::Duration,
    },
    /// Leases: a fixed window whose period is not a whole number of microseconds (the
    /// lease script's unit), or whose limit reaches 2⁴⁸.
    LeaseWindow {
        /// The rule given.
        config: crate::config::Config,
    },
    /// Leases, through the C ABI: a holder's name of more than 64 bytes, or not UTF-8
    /// without NUL (it is an argument of the lease script).
    LeaseName {
        /// The name given (lossily, if it was not UTF-8).
        name: String,
    },
    /// Policies: a shadow mask (docs/policies.md, Shadow rules) naming a rule past the
    /// policy's last.
    ShadowMask {
        /// The mask given, bit `i` for rule `i`.
        mask: u32,
        /// The rules the policy holds.
        rules: usize,
    },
}

/// A field that a [`ConfigError`] names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// [`Config::limit`](crate::Config::limit).
    Limit,
    /// The period, [`Config::period`](crate::Config::period), in nanoseconds.
    PeriodNs,
    /// [`Config::burst`](crate::Config::burst).
    Burst,
    /// A keyed table's capacity.
    Capacity,
}

impl Field {
    /// The field's name in every language's messages: `limit`, `period_ns`, `burst`,
    /// `capacity`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Limit => "limit",
            Self::PeriodNs => "period_ns",
            Self::Burst => "burst",
            Self::Capacity => "capacity",
        }
    }
}

/// The bound a field's value broke: changing that field alone to the bound makes the
/// configuration valid, and one step further does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Bound {
    /// The value must be at least this.
    AtLeast(u64),
    /// The value must be at most this.
    AtMost(u64),
}

/// A configuration that breaks one of its algorithm's bounds (docs/decision.md,
/// Configuration), and the field whose change alone would mend it, if one would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBounds {
    pub(super) config: Config,
    /// The field to change and its bound; `None` when no one field's change suffices.
    pub(super) fix: Option<(Field, Bound)>,
}

impl OutOfBounds {
    /// The configuration rejected.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The field whose change alone would make the configuration valid, and the bound
    /// that change must meet; `None` when several fields must change.
    pub fn fix(&self) -> Option<(Field, Bound)> {
        self.fix
    }
}

impl ConfigError {
    /// The field the error names (a policy's rule's: [`PolicyRule`](Self::PolicyRule)):
    /// `None` for the errors about a policy as a whole, the Redis tier or a live change,
    /// and for a configuration no one field's change would mend.
    pub fn field(&self) -> Option<Field> {
        match self {
            Self::Capacity { .. } => Some(Field::Capacity),
            Self::PolicyRule { why, .. } => why.field(),
            _ => self.field_and_bound().map(|(field, _)| field),
        }
    }

    /// The value of [`field`](Self::field) that was given.
    pub fn value(&self) -> Option<u64> {
        match *self {
            Self::ZeroLimit | Self::ZeroPeriod | Self::ZeroCapacity => Some(0),
            Self::Capacity { capacity, .. } => Some(capacity),
            Self::PolicyRule { ref why, .. } => why.value(),
            _ => {
                let (field, _) = self.field_and_bound()?;
                self.out_of_bounds()
                    .map(|broken| value_of(&broken.config, field))
            }
        }
    }

    /// The bound [`field`](Self::field)'s value broke, exact: the field at the bound is
    /// accepted (the rest of the configuration unchanged), one past it is not. `None`
    /// for a table too large to allocate, whose bound depends on the memory at hand.
    pub fn bound(&self) -> Option<Bound> {
        match self {
            Self::PolicyRule { why, .. } => why.bound(),
            _ => self.field_and_bound().map(|(_, bound)| bound),
        }
    }

    fn field_and_bound(&self) -> Option<(Field, Bound)> {
        match self.zero() {
            Some(field) => Some((field, Bound::AtLeast(1))),
            None => self.out_of_bounds()?.fix,
        }
    }

    /// The field that is 0 where it must be at least 1.
    fn zero(&self) -> Option<Field> {
        match self {
            Self::ZeroLimit => Some(Field::Limit),
            Self::ZeroPeriod => Some(Field::PeriodNs),
            Self::ZeroCapacity => Some(Field::Capacity),
            _ => None,
        }
    }

    fn out_of_bounds(&self) -> Option<&OutOfBounds> {
        match self {
            Self::RateTooHigh(broken)
            | Self::ToleranceTooLarge(broken)
            | Self::LimitTooLarge(broken) => Some(broken),
            _ => None,
        }
    }

    /// The rule broken: the whole sentence of the errors that name no field.
    fn rule(&self) -> &'static str {
        match self {
            Self::PolicyRule { why, .. } => why.rule(),
            Self::ZeroLimit | Self::ZeroPeriod | Self::ZeroCapacity => "must be at least 1",
            Self::RateTooHigh(_) => {
                "period_ns / limit must be at least 1 ns (at most one unit per ns)"
            }
            Self::ToleranceTooLarge(_) => {
                "burst x (period_ns / limit) must be at most 2^64 - 257 ns"
            }
            Self::LimitTooLarge(_) => {
                "limit is too large for this algorithm (for its period, or above the log's cap)"
            }
            Self::Capacity { .. } => "more than can be allocated",
            Self::NotExactOnRedis => {
                "on Redis, burst x (period_ns / limit) and period_ns must be below 2^53 ns \
                 (about 104 days)"
            }
            Self::PolicyRules { .. } => "a policy holds 1 to 8 rules",
            Self::RedisPrefix { .. } => "a Redis policy's prefix must not contain '{' or '}'",
            Self::PolicyCosts { .. } => "a policy request gives one cost per rule",
            Self::LiveChange => {
                "a live change keeps the algorithm (and the number of rules), and a sliding \
                 log's rule does not change"
            }
            Self::LeaseAlgorithm(_) => "leases divide GCRA and fixed-window rules only",
            Self::LeaseWindow { .. } => {
                "a leased window's period is a whole number of microseconds, and its limit \
                 below 2^48"
            }
            Self::LeaseName { .. } => "a holder's name is 1 to 64 bytes of UTF-8 without NUL",
            Self::ShadowMask { .. } => "a shadow mask names only rules the policy holds",
            Self::LeaseTiming { .. } => {
                "a lease lasts from 1 ms to below 2^53 us, and is renewed at least 1 ms apart \
                 and before the last thousandth of it"
            }
        }
    }
}

fn value_of(config: &Config, field: Field) -> u64 {
    match field {
        Field::Limit => config.limit,
        Field::PeriodNs => config.period_ns,
        Field::Burst => config.burst,
        // A capacity is no field of a Config: no OutOfBounds names it.
        Field::Capacity => 0,
    }
}

/// The algorithm as the sentences name it.
fn algorithm_name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::Gcra => "GCRA",
        Algorithm::FixedWindow => "the fixed window",
        Algorithm::SlidingWindow => "the sliding window",
        Algorithm::SlidingLog => "the sliding log",
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(field) = self.zero() {
            return write!(f, "{} 0: {}", field.name(), self.rule());
        }
        match self {
            Self::Capacity {
                capacity,
                bytes_per_key,
            } => write!(
                f,
                "capacity {capacity}: its table needs {} bytes ({bytes_per_key} per key), {}",
                u128::from(*capacity) * u128::from(*bytes_per_key),
                self.rule()
            ),
            Self::RateTooHigh(broken)
            | Self::ToleranceTooLarge(broken)
            | Self::LimitTooLarge(broken) => broken.write(self, f),
            // As Go says it (bindings/go policy.go); Python: "rules[1]: …".
            Self::PolicyRule { rule, why } => write!(f, "rule {rule}: {why}"),
            Self::PolicyRules { rules } => write!(f, "{}, not {rules}", self.rule()),
            Self::PolicyCosts { costs } => write!(f, "{costs} costs: {}", self.rule()),
            // As Go says it (bindings/go/redis policy.go): the prefix quoted.
            Self::RedisPrefix { prefix } => {
                write!(f, "{}: {:?}", self.rule(), String::from_utf8_lossy(prefix))
            }
            Self::LeaseAlgorithm(algorithm) => {
                write!(f, "{}, not {}", self.rule(), algorithm_name(*algorithm))
            }
            Self::LeaseName { name } => write!(f, "name {name:?}: {}", self.rule()),
            Self::ShadowMask { mask, rules } => {
                write!(
                    f,
                    "shadow mask {mask:#x} for {rules} rules: {}",
                    self.rule()
                )
            }
            Self::LeaseWindow { config } => write!(
                f,
                "limit {} with period_ns {}: {}",
                config.limit,
                config.period_ns,
                self.rule()
            ),
            Self::LeaseTiming { lease, renew_every } => write!(
                f,
                "lease_ns {} renewed every {} ns: {}",
                lease.as_nanos(),
                renew_every.as_nanos(),
                self.rule()
            ),
            _ => f.write_str(self.rule()),
        }
    }
}

impl OutOfBounds {
    /// Writes the sentence of `error`, which holds `self`: "FIELD VALUE: must be at
    /// most|least BOUND for ALGORITHM with THE OTHER FIELDS (WHY)", or, when no one field
    /// mends it, the fields given and the rule they break.
    fn write(&self, error: &ConfigError, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let config = &self.config;
        let gcra_burst = config.algorithm == Algorithm::Gcra && config.burst > 0;
        let Some((field, bound)) = self.fix else {
            write!(
                f,
                "limit {} with period_ns {}",
                config.limit, config.period_ns
            )?;
            if gcra_burst {
                write!(f, " and burst {}", config.burst)?;
            }
            return write!(f, ": {}", error.rule());
        };
        let (side, at) = match bound {
            Bound::AtLeast(least) => ("least", least),
            Bound::AtMost(most) => ("most", most),
        };
        write!(
            f,
            "{} {}: must be at {side} {at} for {}",
            field.name(),
            value_of(config, field),
            algorithm_name(config.algorithm)
        )?;
        // The other fields the broken rule reads: GCRA's tolerance reads its burst too.
        let tolerance = matches!(error, ConfigError::ToleranceTooLarge(_));
        let others = [
            (Field::Limit, true),
            (Field::PeriodNs, true),
            (Field::Burst, tolerance && gcra_burst),
        ];
        let mut joiner = " with ";
        for (other, read) in others {
            if read && other != field {
                write!(f, "{joiner}{} {}", other.name(), value_of(config, other))?;
                joiner = " and ";
            }
        }
        match error {
            ConfigError::RateTooHigh(_) if bound == Bound::AtMost(config.period_ns) => {
                f.write_str(" (at most one unit per ns)")
            }
            ConfigError::ToleranceTooLarge(_) => {
                let units = if gcra_burst { "burst" } else { "limit" };
                write!(
                    f,
                    " ({units} x (period_ns / limit) must be at most 2^64 - 257 ns)"
                )
            }
            _ => Ok(()),
        }
    }
}

impl ConfigError {
    /// This error as rule number `rule` of a policy gives it: a rule's own configuration's
    /// error ([`field`](Self::field) and the rest say which field) names the rule; any
    /// other (a table's capacity, the policy's) is the policy's, and stays as it is.
    pub(crate) fn in_rule(self, rule: usize) -> Self {
        match self {
            why @ (Self::ZeroLimit
            | Self::ZeroPeriod
            | Self::RateTooHigh(_)
            | Self::ToleranceTooLarge(_)
            | Self::LimitTooLarge(_)
            | Self::NotExactOnRedis) => Self::PolicyRule {
                rule,
                why: Box::new(why),
            },
            other => other,
        }
    }
}

impl std::error::Error for ConfigError {}
