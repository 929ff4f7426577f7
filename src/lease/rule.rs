//! A global rule as leases divide it (docs/leases.md): GCRA (shares of its rate and burst)
//! or a fixed window (counts of each window), how long a lease lasts and how often a holder
//! renews it.

use crate::config::{Algorithm, Config};
use crate::error::ConfigError;
use crate::redis::Script;
use std::time::Duration;

/// Shares and demands count rates in millionths of the rule's rate, as the scripts do.
pub(crate) const SCALE: u64 = 1_000_000;

/// The largest whole number of microseconds the scripts hold exactly.
const EXACT_US: u64 = 1 << 53;

/// A window's most units: its count shares a word with a window's number in a holder.
const WINDOW_LIMIT: u64 = 1 << 48;

/// How the rule is divided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Divided {
    /// GCRA: shares of the emission interval T's rate and of the burst B.
    Gcra { interval_ns: u64, burst: u64 },
    /// A fixed window of `limit` units every `period_us` microseconds: counts of a window.
    FixedWindow { limit: u64, period_us: u64 },
}

/// A global rule that holders lease shares of, with the timing of those leases.
///
/// ```
/// use librate::{Config, LeaseRule};
/// use std::time::Duration;
/// let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(2)).unwrap();
/// assert_eq!(rule.renew_every(), Duration::from_millis(500));
/// let rule = rule.renewing_every(Duration::from_millis(250)).unwrap();
/// assert_eq!(rule.margin(), Duration::from_millis(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseRule {
    config: Config,
    divided: Divided,
    lease: Duration,
    renew_every: Duration,
}

impl LeaseRule {
    /// The rule `config` (GCRA or a fixed window), leased `lease` at a time and renewed
    /// every quarter of it. A fixed window's lease ends with its window at the latest.
    ///
    /// # Errors
    /// [`ConfigError::LeaseAlgorithm`] for the sliding window or log; the [`ConfigError`]
    /// the Redis tier gives `config` ([`ConfigError::NotExactOnRedis`] among them);
    /// [`ConfigError::LeaseWindow`] for a window whose period is not a whole number of
    /// microseconds or whose limit reaches 2⁴⁸; and [`ConfigError::LeaseTiming`] for a
    /// lease shorter than 1 ms or of 2⁵³ µs or more.
    pub fn new(config: &Config, lease: Duration) -> Result<Self, ConfigError> {
        let script = Script::of(config)?;
        let divided = match (config.algorithm, &script.config_args[..]) {
            (Algorithm::Gcra, &[interval_ns, burst]) => Divided::Gcra { interval_ns, burst },
            (Algorithm::FixedWindow, &[limit, period_ns]) => {
                if period_ns % 1000 != 0 || limit >= WINDOW_LIMIT {
                    return Err(ConfigError::LeaseWindow { config: *config });
                }
                Divided::FixedWindow {
                    limit,
                    period_us: period_ns / 1000,
                }
            }
            (algorithm, _) => return Err(ConfigError::LeaseAlgorithm(algorithm)),
        };
        Self {
            config: *config,
            divided,
            lease,
            renew_every: lease / 4,
        }
        .checked()
    }

    /// This rule renewed every `renew_every` instead.
    ///
    /// # Errors
    /// [`ConfigError::LeaseTiming`] unless 1 ms ≤ `renew_every` < the lease less its
    /// [`margin`](Self::margin).
    pub fn renewing_every(self, renew_every: Duration) -> Result<Self, ConfigError> {
        Self {
            renew_every,
            ..self
        }
        .checked()
    }

    fn checked(self) -> Result<Self, ConfigError> {
        let lease_us = self.lease.as_micros();
        let millisecond = Duration::from_millis(1);
        if lease_us < 1000
            || lease_us >= u128::from(EXACT_US)
            || self.renew_every < millisecond
            || self.renew_every >= self.lease - self.margin()
        {
            return Err(ConfigError::LeaseTiming {
                lease: self.lease,
                renew_every: self.renew_every,
            });
        }
        Ok(self)
    }

    /// The global rule.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How long a lease lasts, by Redis's clock.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// How often a holder renews its lease.
    pub fn renew_every(&self) -> Duration {
        self.renew_every
    }

    /// How long before Redis's end of a whole lease its holder stops deciding from it, by
    /// its own clock: a thousandth of the lease (of the time a grant is held, for a window's
    /// count held to the window's end), so that clocks whose rates differ by up to 0.1%
    /// never see one lease at once (their offsets never matter: a holder counts from when
    /// it asked).
    pub fn margin(&self) -> Duration {
        self.lease / 1000
    }

    /// The lease script of the rule's algorithm (`src/redis/lua/`): it renews holders'
    /// leases and decides the requests sent to Redis.
    pub fn script(&self) -> &'static str {
        let with_nul = self.script_with_nul();
        &with_nul[..with_nul.len() - 1]
    }

    /// [`script`](Self::script) with a NUL, for C.
    pub(crate) fn script_with_nul(&self) -> &'static str {
        match self.divided() {
            Divided::Gcra { .. } => super::GCRA_SCRIPT_WITH_NUL,
            Divided::FixedWindow { .. } => super::FIXED_WINDOW_SCRIPT_WITH_NUL,
        }
    }

    pub(crate) fn divided(&self) -> Divided {
        self.divided
    }

    /// The most units one request may take: GCRA's burst, a window's limit.
    pub(crate) fn most(&self) -> u64 {
        match self.divided {
            Divided::Gcra { burst, .. } => burst,
            Divided::FixedWindow { limit, .. } => limit,
        }
    }

    /// The script's two arguments of the rule: T and B, or L and P in microseconds.
    pub(crate) fn script_args(&self) -> [u64; 2] {
        match self.divided {
            Divided::Gcra { interval_ns, burst } => [interval_ns, burst],
            Divided::FixedWindow { limit, period_us } => [limit, period_us],
        }
    }

    /// The lease in whole microseconds, as the scripts count it.
    pub(crate) fn lease_us(&self) -> u64 {
        // Below 2⁵³, checked.
        self.lease.as_micros() as u64
    }

    /// The demand of `units` asked for over `elapsed`, in millionths of the rule's rate
    /// (T's, or L a period's), rounded up, at most the whole rule.
    pub(crate) fn demand(&self, units: u64, elapsed: Duration) -> u64 {
        let elapsed = elapsed.as_nanos();
        if elapsed == 0 {
            return if units == 0 { 0 } else { SCALE };
        }
        // units / elapsed as a part of 1/T, or of L/P: units·T / elapsed, units·P / (L·elapsed).
        let (time, count) = match self.divided {
            Divided::Gcra { interval_ns, .. } => (u128::from(interval_ns), 1),
            Divided::FixedWindow { limit, period_us } => {
                (u128::from(period_us) * 1000, u128::from(limit))
            }
        };
        let asked = u128::from(units) * time * u128::from(SCALE);
        asked.div_ceil(count * elapsed).min(u128::from(SCALE)) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::LeaseRule;
    use crate::Config;
    use std::time::Duration;

    #[test]
    fn demand_is_the_rate_asked_for_in_millionths_rounded_up() {
        let lease = Duration::from_secs(2);
        let second = Duration::from_secs(1);
        // A rule of 1,000 a second (T = 1 ms): 250 units in a second are a quarter.
        let thousand = LeaseRule::new(&Config::per_second(1000), lease).unwrap();
        assert_eq!(thousand.demand(250, second), 250_000);
        // More than the rule: the whole rule.
        assert_eq!(thousand.demand(5_000, second), 1_000_000);
        assert_eq!(thousand.demand(0, second), 0);
        assert_eq!(thousand.demand(0, Duration::ZERO), 0);
        assert_eq!(thousand.demand(1, Duration::ZERO), 1_000_000);
        // 1 unit in 3 s of a rule of 1 a second: a third, rounded up.
        let one = LeaseRule::new(&Config::per_second(1), lease).unwrap();
        assert_eq!(one.demand(1, 3 * second), 333_334);
        // A window of 300 a minute: 10 units in 4 s are 150 a minute, a half.
        let window = LeaseRule::new(&Config::fixed_window(300, 60 * second), lease).unwrap();
        assert_eq!(window.demand(10, 4 * second), 500_000);
        assert_eq!(window.demand(7, 3 * second), 466_667);
    }
}
