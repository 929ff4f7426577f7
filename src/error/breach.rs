//! [`Breach`]: what an algorithm's constructor finds wrong with its numbers, which the
//! configuration whole turns into its [`ConfigError`].

use super::config::{Bound, ConfigError, Field, OutOfBounds};
use crate::config::Config;

/// What an algorithm's constructor finds wrong with its numbers, before the
/// configuration is known whole: the rule broken, and the field and bound that would mend
/// it. [`Breach::of`] makes the [`ConfigError`] of the whole configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Breach {
    ZeroLimit,
    ZeroPeriod,
    RateTooHigh(Option<(Field, Bound)>),
    ToleranceTooLarge(Option<(Field, Bound)>),
    LimitTooLarge(Option<(Field, Bound)>),
}

impl Breach {
    /// The error of `config`, whose algorithm's constructor found this breach.
    pub(crate) fn of(self, config: &Config) -> ConfigError {
        let broken = |fix| OutOfBounds {
            config: *config,
            fix,
        };
        match self {
            Self::ZeroLimit => ConfigError::ZeroLimit,
            Self::ZeroPeriod => ConfigError::ZeroPeriod,
            Self::RateTooHigh(fix) => ConfigError::RateTooHigh(broken(fix)),
            Self::ToleranceTooLarge(fix) => ConfigError::ToleranceTooLarge(broken(fix)),
            Self::LimitTooLarge(fix) => ConfigError::LimitTooLarge(broken(fix)),
        }
    }
}
