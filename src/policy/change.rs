//! Changing a policy's rules at run time: each rule's limiter as
//! [`Limiter::set_config_at`](crate::Limiter::set_config_at) changes one, every rule checked before any changes.

use super::Policy;
use crate::config::Config;
use crate::decider::Decider;
use crate::error::{ChangeError, ConfigError};
use crate::sync::Ordering;
use crate::time::Instant;

impl Policy {
    /// Replaces the policy's rules, now: see [`set_rules_at`](Self::set_rules_at).
    ///
    /// # Errors
    /// As [`set_rules_at`](Self::set_rules_at).
    pub fn set_rules(&self, rules: &[Config]) -> Result<(), ChangeError> {
        self.set_rules_at(rules, Instant::now())
    }

    /// Replaces the policy's rules at `at` (a customer changes plan), each rule in
    /// turn as [`Limiter::set_config_at`](crate::Limiter::set_config_at) replaces a limiter's, keeping what it has
    /// consumed. The new rules are as many as the old, each of the same algorithm as the
    /// one it replaces (a period of [`Config::FOREVER`] counts as the same), so that the
    /// order the rules take a request in stays.
    ///
    /// Each rule's step of a racing request is decided wholly under that rule's old or
    /// new configuration, so no rule ever admits past its limit; a request racing the
    /// change may see some rules already changed and others not yet.
    ///
    /// ```
    /// use librate::{Config, Instant, Policy};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// // 2 a second and 3 a minute; a customer upgrades to 4 a second and 10 a minute.
    /// let policy = Policy::new(&[
    ///     Config::gcra(2, SECOND),
    ///     Config::fixed_window(3, 60 * SECOND),
    /// ])
    /// .unwrap();
    /// assert!(policy.acquire_at(2, Instant::ZERO).unwrap().decision.allowed);
    /// let upgrade = [Config::gcra(4, SECOND), Config::fixed_window(10, 60 * SECOND)];
    /// policy.set_rules_at(&upgrade, Instant::ZERO).unwrap();
    /// // The bucket's 0 tokens stay 0 (now 250 ms each); the window keeps its 2.
    /// assert_eq!(policy.acquire_at(0, Instant::ZERO).unwrap().rules()[1].remaining, 8);
    /// let later = Instant::ZERO + Duration::from_millis(250);
    /// assert!(policy.acquire_at(1, later).unwrap().decision.allowed);
    /// ```
    ///
    /// # Errors
    /// [`ChangeError::Config`]: [`ConfigError::PolicyRule`] naming the first invalid rule and
    /// its reason, or
    /// [`ConfigError::LiveChange`] for another number of rules or a rule that cannot carry
    /// its state over (see [`Limiter::set_config_at`](crate::Limiter::set_config_at)). Then no rule changes.
    pub fn set_rules_at(&self, rules: &[Config], at: Instant) -> Result<(), ChangeError> {
        if rules.len() != self.rules.len() {
            return Err(ConfigError::LiveChange.into());
        }
        // Every rule is checked before any changes: whether a rule carries over depends
        // only on algorithms, which no change alters, so none of the changes below fails.
        for (index, (rule, config)) in self.rules.iter().zip(rules).enumerate() {
            let decider = Decider::new(config).map_err(|error| error.in_rule(index))?;
            rule.check_change(&decider)?;
        }
        // Relaxed: see `uniform`. Before any rule changes, so that no caller after a
        // change checks a cost against the limits the rules were built with.
        self.changed.store(true, Ordering::Relaxed);
        for (rule, config) in self.rules.iter().zip(rules) {
            rule.set_config_at(config, at)?;
        }
        Ok(())
    }
}
