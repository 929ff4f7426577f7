//! Changing a keyed policy's rules at run time: each per-key rule's table as
//! [`KeyedLimiter::set_config_at`](crate::KeyedLimiter::set_config_at) changes one (every
//! key carried over at its move), each global rule's limiter as
//! [`Limiter::set_config_at`](crate::Limiter::set_config_at) does.

use super::{KeyedPolicy, KeyedRule, Scoped};
use crate::decider::Decider;
use crate::error::{ChangeError, ConfigError};
use crate::time::Instant;

impl<S> KeyedPolicy<S> {
    /// Replaces the policy's rules now (`CLOCK_MONOTONIC`): see
    /// [`set_rules_at`](Self::set_rules_at).
    ///
    /// # Errors
    /// As [`set_rules_at`](Self::set_rules_at).
    pub fn set_rules(&self, rules: &[KeyedRule]) -> Result<(), ChangeError> {
        self.set_rules_at(rules, Instant::now())
    }

    /// Replaces the policy's rules at `at` (a customer changes plan), keeping what
    /// was consumed: each per-key rule's table changes as
    /// [`KeyedLimiter::set_config_at`](crate::KeyedLimiter::set_config_at) changes one
    /// (every key's state carried over, a key fresh at the change starting anew), each
    /// global rule as [`Limiter::set_config_at`](crate::Limiter::set_config_at). The new
    /// rules are as many as the old, each per key or global as the one it replaces and of
    /// the same algorithm, so the order the rules take a request in stays.
    ///
    /// The rules change one after another, in order. Each rule's step of a racing request
    /// is decided wholly under that rule's old or new configuration (for a per-key rule,
    /// the key's), so no rule ever admits past its limit; a racing request may see some
    /// rules changed and others not yet. A request that a racing change makes larger than
    /// a rule's new limit takes nothing: a per-key rule refuses it as its table does,
    /// with [`KeyedAcquireError::InsufficientCapacity`], a global rule denies it with a
    /// `retry_after_ns` of `u64::MAX`; a request after the change is refused up front.
    ///
    /// ```
    /// use librate::{Config, Instant, KeyedPolicy, KeyedRule};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// // Per customer 2 a second; everybody 100 a minute.
    /// let site = KeyedPolicy::new(
    ///     &[
    ///         KeyedRule::per_key(Config::gcra(2, SECOND)),
    ///         KeyedRule::global(Config::fixed_window(100, 60 * SECOND)),
    ///     ],
    ///     1000,
    /// )
    /// .unwrap();
    /// assert!(site.acquire_at(b"ann", 2, Instant::ZERO).unwrap().decision.allowed);
    /// // Upgraded: 4 a second per customer, 1,000 a minute for everybody.
    /// site.set_rules_at(
    ///     &[
    ///         KeyedRule::per_key(Config::gcra(4, SECOND)),
    ///         KeyedRule::global(Config::fixed_window(1000, 60 * SECOND)),
    ///     ],
    ///     Instant::ZERO,
    /// )
    /// .unwrap();
    /// let now = site.acquire_at(b"ann", 0, Instant::ZERO).unwrap();
    /// // ann's bucket stays empty (a token now every 250 ms); the window keeps its 2.
    /// assert_eq!((now.rules()[0].remaining, now.rules()[1].remaining), (0, 998));
    /// let later = Instant::ZERO + Duration::from_millis(250);
    /// assert!(site.acquire_at(b"ann", 1, later).unwrap().decision.allowed);
    /// assert_eq!(site.limit(), 4);
    /// ```
    ///
    /// # Errors
    /// [`ChangeError::Config`]: [`ConfigError::PolicyRule`] naming the first invalid rule and
    /// its reason, or
    /// [`ConfigError::LiveChange`] for another number of rules, a per-key rule in place
    /// of a global one or the other way round, or a rule that cannot carry its state over
    /// (another algorithm, or a sliding log: see
    /// [`Limiter::set_config_at`](crate::Limiter::set_config_at)), or
    /// [`ConfigError::Capacity`] if a per-key rule's new table region cannot be
    /// allocated; for a policy in a shared file ([`open`](KeyedPolicy::open)), whose rules
    /// change there for every process, as
    /// [`KeyedLimiter::set_config_at`](crate::KeyedLimiter::set_config_at) and
    /// [`Limiter::set_config_at`](crate::Limiter::set_config_at) in a file. Then no rule
    /// changes, but for an allocation (or, in a file, a busy change) that fails after
    /// some rules changed (those keep their new rule).
    ///
    /// [`ConfigError::LiveChange`]: crate::ConfigError::LiveChange
    /// [`KeyedAcquireError::InsufficientCapacity`]: crate::KeyedAcquireError::InsufficientCapacity
    /// [`ConfigError::Capacity`]: crate::ConfigError::Capacity
    pub fn set_rules_at(&self, rules: &[KeyedRule], at: Instant) -> Result<(), ChangeError> {
        if rules.len() != self.rules.len() {
            return Err(ConfigError::LiveChange.into());
        }
        // Every rule is checked before any changes: whether a rule carries over depends
        // only on its scope, its algorithm and its memory, which no change alters.
        for (index, (rule, new)) in self.rules.iter().zip(rules).enumerate() {
            let decider = Decider::new(&new.config).map_err(|error| error.in_rule(index))?;
            match rule {
                Scoped::PerKey(table) if new.per_key => table.check_change(&decider)?,
                Scoped::Global(limiter) if !new.per_key => limiter.check_change(&decider)?,
                _ => return Err(ConfigError::LiveChange.into()),
            }
        }
        for (rule, new) in self.rules.iter().zip(rules) {
            match rule {
                Scoped::PerKey(table) => table.set_config_at(&new.config, at)?,
                Scoped::Global(limiter) => limiter.set_config_at(&new.config, at)?,
            }
        }
        Ok(())
    }
}
