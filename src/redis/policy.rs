//! [`RedisPolicy`]: a policy's rules kept in Redis, decided together by one script call
//! (the `redis` cargo feature).

use super::client::{converse, reset_command};
use super::exchange::{Exchange, Request};
use super::layout::{check_policy_prefix, policy_keys};
use super::reply::rule_decisions;
use super::{PolicyScript, RedisError};
use crate::config::Config;
use crate::counters::{Counters, Counts};
use crate::error::{ConfigError, InsufficientCapacity};
use crate::policy::{PolicyDecision, ShadowMask};
use crate::time::Instant;

/// A [`Policy`](crate::Policy) for every key under a prefix, kept in Redis: a request is
/// admitted iff every rule admits it, and a denied request takes from no rule.
///
/// Each request is one script call over all the key's rules, so it is exact and atomic on
/// Redis: every rule is decided at the one time, and their states are written only if
/// all admit. The decision is the in-process policy's, field for field. Each rule's state
/// is its own Redis key, `prefix{=key}:i` for rule `i` (see [`slot`](super::slot())), all
/// in one Cluster hash slot; each expires when its state is fresh again.
///
/// ```no_run
/// use librate::redis::RedisPolicy;
/// use std::time::Duration;
/// use librate::Config;
/// const SECOND: Duration = Duration::from_secs(1);
/// let client = redis::Client::open("redis://127.0.0.1/").unwrap();
/// let mut connection = client.get_connection().unwrap();
/// // 10 a second and 1,000 a day for each customer, whichever host serves it.
/// let policy = RedisPolicy::new(
///     &[Config::gcra(10, SECOND), Config::fixed_window(1_000, 86_400 * SECOND)],
///     "api:",
/// )?;
/// let decision = policy.acquire(&mut connection, b"customer-7", 1)?;
/// if !decision.decision.allowed {
///     // answer 429, naming rule decision.denied_by
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RedisPolicy {
    rules: Vec<Config>,
    plan: PolicyScript,
    prefix: Vec<u8>,
    script: redis::Script,
    /// This client's shadow rules (docs/policies.md, Shadow rules), sent with each call.
    shadow: ShadowMask,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    counters: Counters,
}

impl RedisPolicy {
    /// A policy of `rules` for the keys under `prefix`.
    ///
    /// # Errors
    /// As [`PolicyScript::of`]; [`ConfigError::RedisPrefix`](crate::ConfigError) for a
    /// prefix holding `{` or `}`.
    pub fn new(rules: &[Config], prefix: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        let plan = PolicyScript::of(rules)?;
        check_policy_prefix(prefix.as_ref())?;
        let script = redis::Script::new(plan.source());
        Ok(Self {
            rules: rules.to_vec(),
            plan,
            prefix: prefix.as_ref().to_vec(),
            script,
            shadow: ShadowMask::default(),
            counters: Counters::default(),
        })
    }

    /// Turns on counting of the requests this handle decides, from this call on
    /// (docs/metrics.md, counters): this process's requests, never another client's.
    /// Counting that is on stays on. A request Redis did not answer is not counted.
    pub fn enable_counts(&self) {
        self.counters.enable();
    }

    /// How many requests this handle admitted, how many each rule denied first and how
    /// many each shadow rule would have, since [`enable_counts`](Self::enable_counts);
    /// `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(self.rules.len())
    }

    /// `decided`, a request of `n` units, counted if counting is on and it decided
    /// something (not a query).
    pub(super) fn counted(
        &self,
        n: u64,
        decided: Result<PolicyDecision, RedisError>,
    ) -> Result<PolicyDecision, RedisError> {
        if let (Ok(decision), 1..) = (&decided, n) {
            (self.counters).count_policy(decision.denied_by, decision.shadow_denials());
        }
        decided
    }

    /// The rules, in the order given.
    pub fn rules(&self) -> &[Config] {
        &self.rules
    }

    /// The largest cost the policy can ever admit: the least of its rules' limits.
    pub fn limit(&self) -> u64 {
        self.plan.limit()
    }

    /// Makes the rules of `mask` (bit `i` for rule `i`) this client's shadow rules, as
    /// [`Policy::set_shadow`](crate::Policy::set_shadow) does: decided by the script and
    /// reported, never denying. The mask is this client's, sent with each call, never
    /// stored in Redis: every client of the policy applies its own (give them all the
    /// same).
    ///
    /// # Errors
    /// [`ConfigError::ShadowMask`] if `mask` names a rule the policy does not hold; the
    /// mask in force is then left as it was.
    pub fn set_shadow(&self, mask: u32) -> Result<(), ConfigError> {
        self.shadow.set(mask, self.rules.len())
    }

    /// This client's shadow rules, bit `i` for rule `i`: 0 when every rule is enforced.
    pub fn shadow(&self) -> u32 {
        self.shadow.get()
    }

    /// The Redis keys that hold `key`'s rules' states, in rule order.
    pub fn redis_keys(&self, key: &[u8]) -> Vec<Vec<u8>> {
        policy_keys(&self.prefix, key, self.rules.len())
    }

    /// Acquires `n` units for `key` now, by the server's clock, from every rule or from
    /// none. `n == 0` only reports.
    ///
    /// # Errors
    /// [`RedisError::Rate`] with [`ReserveError::Acquire`](crate::ReserveError::Acquire) if
    /// `n` exceeds a rule's limit; [`RedisError::Redis`] if Redis cannot be reached in the
    /// connection's timeout or answers an error (a rule's key holding something else: nothing is written):
    /// never an admission.
    pub fn acquire(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Result<PolicyDecision, RedisError> {
        self.decide(connection, key, n, None)
    }

    /// [`acquire`](Self::acquire) with every rule decided at `at`, the caller's time,
    /// not the server's (tests, simulations: keep one timeline per key).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<PolicyDecision, RedisError> {
        self.decide(connection, key, n, Some(at.as_nanos()))
    }

    /// Deletes `key`'s state in every rule (one `DEL` of its rules' keys), so its next
    /// request finds every rule full, as a fresh key does; other keys keep theirs.
    ///
    /// # Errors
    /// [`RedisError::Redis`] if Redis cannot be reached or answers an error.
    pub fn reset(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
    ) -> Result<(), RedisError> {
        reset_command(&self.redis_keys(key)).exec(connection)?;
        Ok(())
    }

    fn decide(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        now_ns: Option<u64>,
    ) -> Result<PolicyDecision, RedisError> {
        let shadow = self.shadow();
        let mut exchange = self.exchange(key, n, now_ns, shadow)?;
        converse(connection, &mut exchange);
        self.counted(n, self.decision(exchange, shadow))
    }

    /// A request's exchange with the shadow rules of `shadow`, once `n` passes the checks
    /// the in-process policy makes.
    pub(super) fn exchange(
        &self,
        key: &[u8],
        n: u64,
        now_ns: Option<u64>,
        shadow: u32,
    ) -> Result<Exchange<'_>, InsufficientCapacity> {
        self.plan.check(n)?;
        let request = Request {
            sha: self.script.get_hash(),
            source: self.plan.source(),
            config_args: &self.plan.config_args,
            now_ns,
            n,
            max_wait_ns: 0,
            shadow,
        };
        Ok(Exchange::together(request, self.redis_keys(key)))
    }

    /// The decision a finished exchange with the shadow rules of `shadow` holds.
    pub(super) fn decision(
        &self,
        exchange: Exchange<'_>,
        shadow: u32,
    ) -> Result<PolicyDecision, RedisError> {
        let len = self.rules.len();
        let rules = rule_decisions(exchange.finish_together()?, len)?;
        if shadow != 0 {
            // Every rule takes part; the enforced rules admitted iff none of them denied.
            let enforced_denial =
                (0..len).any(|rule| shadow >> rule & 1 == 0 && !rules[rule].allowed);
            return Ok(PolicyDecision::shadowed(
                rules,
                len,
                shadow,
                |_| true,
                !enforced_denial,
            ));
        }
        // Every rule takes part (the script decides them all at the same cost), and the
        // first that denies is the one that denied.
        let denied_by = rules[..len].iter().position(|rule| !rule.allowed);
        let least = self.plan.limit();
        Ok(PolicyDecision::combine(
            rules,
            len,
            |_| Some(least),
            denied_by,
        ))
    }
}
