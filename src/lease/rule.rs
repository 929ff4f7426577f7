//! A global GCRA rule as leases divide it (docs/leases.md): its emission interval and
//! burst, how long a lease lasts and how often a holder renews it.

use crate::config::{Algorithm, Config};
use crate::error::ConfigError;
use crate::redis::Script;
use std::time::Duration;

/// Shares count rates in millionths of the rule's rate, as `lease_gcra.lua` does.
pub(crate) const SCALE: u64 = 1_000_000;

/// The largest whole number of microseconds the script holds exactly.
const EXACT_US: u64 = 1 << 53;

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
    /// T, the global rule's emission interval.
    interval_ns: u64,
    /// B, the global rule's burst.
    burst: u64,
    lease: Duration,
    renew_every: Duration,
}

impl LeaseRule {
    /// The rule `config` (GCRA), leased `lease` at a time and renewed every quarter of it.
    ///
    /// # Errors
    /// [`ConfigError::LeaseAlgorithm`] for another algorithm; the [`ConfigError`] the Redis
    /// tier gives `config` ([`ConfigError::NotExactOnRedis`] among them); and
    /// [`ConfigError::LeaseTiming`] for a lease shorter than 1 ms or of 2⁵³ µs or more.
    pub fn new(config: &Config, lease: Duration) -> Result<Self, ConfigError> {
        if config.algorithm != Algorithm::Gcra {
            return Err(ConfigError::LeaseAlgorithm(config.algorithm));
        }
        let script = Script::of(config)?;
        let [interval_ns, burst] = script.config_args[..] else {
            unreachable!("a GCRA script takes its interval and burst")
        };
        Self {
            config: *config,
            interval_ns,
            burst,
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
        let timing = ConfigError::LeaseTiming {
            lease: self.lease,
            renew_every: self.renew_every,
        };
        let millisecond = Duration::from_millis(1);
        if lease_us < 1000
            || lease_us >= u128::from(EXACT_US)
            || self.renew_every < millisecond
            || self.renew_every >= self.lease - self.margin()
        {
            return Err(timing);
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

    /// How long before Redis's end of a lease its holder stops deciding from it, by its own
    /// clock: a thousandth of the lease, so that clocks whose rates differ by up to 0.1%
    /// never see one lease at once (their offsets never matter: a holder counts from when
    /// it asked).
    pub fn margin(&self) -> Duration {
        self.lease / 1000
    }

    pub(crate) fn interval_ns(&self) -> u64 {
        self.interval_ns
    }

    pub(crate) fn burst(&self) -> u64 {
        self.burst
    }

    /// The lease in whole microseconds, as the script counts it.
    pub(crate) fn lease_us(&self) -> u64 {
        // Below 2⁵³, checked.
        self.lease.as_micros() as u64
    }
}
