//! What a keyed policy is built of ([`KeyedRule`]s), and building one: a table per
//! per-key rule, a limiter per global rule, and the engine's order over them.

use super::super::engine::Engine;
use super::super::shadow::ShadowMask;
use super::super::MAX_RULES;
use super::{KeyedPolicy, Scoped};
use crate::config::Config;
use crate::counters::Counters;
use crate::error::ConfigError;
use crate::keyed::{KeyHasher, KeyedLimiter};
use crate::limiter::Limiter;

/// One rule of a [`KeyedPolicy`]: a [`Config`], kept per key or once for every key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyedRule {
    pub(super) config: Config,
    pub(super) per_key: bool,
}

impl KeyedRule {
    /// A rule each key has its own state of, in a keyed table.
    pub fn per_key(config: Config) -> Self {
        Self {
            config,
            per_key: true,
        }
    }

    /// A rule every key shares one state of.
    pub fn global(config: Config) -> Self {
        Self {
            config,
            per_key: false,
        }
    }

    /// The rule's configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether each key has its own state of this rule.
    pub fn is_per_key(&self) -> bool {
        self.per_key
    }
}

impl KeyedPolicy {
    /// A keyed policy of `rules`, every key's per-key rules in tables of `capacity` keys,
    /// every rule full at any time.
    ///
    /// # Errors
    /// [`ConfigError::PolicyRules`] for no rule or more than
    /// [`MAX_RULES`], [`ConfigError::ZeroCapacity`] or [`ConfigError::Capacity`] for a
    /// `capacity` of 0 or too large, else [`ConfigError::PolicyRule`] naming the first
    /// invalid rule and its reason.
    pub fn new(rules: &[KeyedRule], capacity: u64) -> Result<Self, ConfigError> {
        // One hasher for every table: see `ForKey::key`.
        let hasher = KeyHasher::random();
        Self::build(rules, capacity, |config| {
            KeyedLimiter::with_hasher(config, capacity, hasher)
        })
    }
}

impl<S: Clone> KeyedPolicy<S> {
    /// A keyed policy whose tables hash keys with `hasher`: for the model checks, which
    /// place keys in the slots their races need. Exists only under `cfg(loom)`.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn with_hasher(rules: &[KeyedRule], capacity: u64, hasher: S) -> Result<Self, ConfigError> {
        Self::build(rules, capacity, |config| {
            KeyedLimiter::with_hasher(config, capacity, hasher.clone())
        })
    }
}

impl<S> KeyedPolicy<S> {
    /// The policy of `rules`, each per-key rule's table built by `table`.
    fn build(
        rules: &[KeyedRule],
        capacity: u64,
        table: impl Fn(&Config) -> Result<KeyedLimiter<S>, ConfigError>,
    ) -> Result<Self, ConfigError> {
        if rules.is_empty() || rules.len() > MAX_RULES {
            return Err(ConfigError::PolicyRules { rules: rules.len() });
        }
        if capacity == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        let rules: Box<[Scoped<S>]> = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                let built = if rule.per_key {
                    table(&rule.config).map(Scoped::PerKey)
                } else {
                    Limiter::new(&rule.config).map(Scoped::Global)
                };
                built.map_err(|error| error.in_rule(index))
            })
            .collect::<Result<_, ConfigError>>()?;
        Ok(Self::of(rules, capacity))
    }

    /// The policy over rules already built.
    pub(in crate::policy) fn of(rules: Box<[Scoped<S>]>, capacity: u64) -> Self {
        // A global rule is asked before any rule takes: a request it denies then inserts
        // no key (whose slot, given back, would stay taken until fresh: `give_back.rs` in
        // `src/keyed/`), and a busy global rule's word is written only by requests that
        // every per-key rule admitted.
        let per_key = rules.iter().any(|rule| matches!(rule, Scoped::PerKey(_)));
        let engine = Engine::new(
            rules
                .iter()
                .map(|rule| (rule.decider(), per_key && matches!(rule, Scoped::Global(_)))),
        );
        Self {
            rules,
            engine,
            capacity,
            shadow: ShadowMask::default(),
            counters: Counters::default(),
        }
    }
}
