//! Policies (docs/policies.md): several rules over one subject ("10 a second and 1,000 a day"),
//! decided all or nothing.
//!
//! A request is taken from each rule in turn, at one time. When a rule denies it, the
//! rules that took it before give their units back, so a denied request costs no rule
//! anything. The rules that can give back (GCRA and the window counters: see
//! [`Refund`](crate::state::Refund)) take a request first and the sliding logs last, in the order
//! given: a rule that admits last never has to give back, and every sliding log but the first is
//! asked whether it would admit before any rule takes.
//!
//! The decision is the engine's (`policy/engine.rs`), which [`KeyedPolicy`] shares
//! (`policy/keyed.rs`): there each rule is per key or global, and what follows holds rule
//! by rule, a per-key rule's state being one key's. Replacing the rules at run time is
//! `policy/change.rs` (and `policy/keyed/change.rs`); `policy/rules.rs` is how the engine
//! takes from a policy's own limiters, and `policy/counts.rs` counts its requests.
//!
//! What concurrent callers may see, on one policy:
//! - No rule ever admits past its limit: each rule's step is its own atomic admission.
//! - Called from one thread at a time, every decision is exact: a denial leaves every
//!   rule as it was, so the decisions are those of the rules' own limiters on the
//!   admitted requests alone.
//! - While a request holds units of the rules it passed, before a later rule denies it
//!   and they are given back, another request can find one of those rules full and be
//!   denied (a denial it would not get a moment later).
//! - A rule gives back only if no other request changed it since it admitted: otherwise
//!   (another request took units of it in between) the denied request's units stay taken,
//!   as if admitted, and expire as admitted units do. So does a sliding log's, when a
//!   later sliding log denies a request that it admitted because a concurrent request
//!   changed the later log's answer after it was asked. Either way a rule only ever errs
//!   on the side of its limit.

mod change;
mod counts;
mod engine;
mod file;
#[cfg(not(loom))]
pub(crate) use self::file::{rule_blocks, rules_described};
mod keyed;
mod rules;
mod shadow;
pub(crate) use self::shadow::ShadowMask;

use self::engine::{least_limit, Costs, Engine, Uniform};
pub use self::keyed::{KeyedPolicy, KeyedRule};
use crate::config::Config;
use crate::counters::{self, Counters};
use crate::decision::Decision;
use crate::error::{ConfigError, CostsError, InsufficientCapacity};
use crate::limiter::Limiter;
use crate::state::owned;
use crate::sync::{AtomicBool, Ordering};
use crate::time::Instant;

/// The most rules one policy holds.
pub const MAX_RULES: usize = 8;
// Every rule's counts are kept apart.
const _: () = assert!(counters::RULES == MAX_RULES);

/// Several limits over one subject at once, each a [`Config`] of any algorithm: a request
/// is admitted iff every rule admits it, and a denied request takes nothing from any rule.
///
/// A `Policy` is `Send + Sync` and lock-free, as a [`Limiter`] is; see the module
/// documentation for what concurrent callers may observe.
///
/// ```
/// use librate::{Config, Instant, Policy};
/// use std::time::Duration;
/// const SECOND: Duration = Duration::from_secs(1);
/// // 2 a second, and 3 a minute.
/// let policy = Policy::new(&[
///     Config::gcra(2, SECOND),
///     Config::fixed_window(3, 60 * SECOND),
/// ])
/// .unwrap();
/// assert!(policy.acquire_at(1, Instant::ZERO).unwrap().decision.allowed);
/// assert!(policy.acquire_at(1, Instant::ZERO).unwrap().decision.allowed);
/// // The per-second rule denies; the per-minute one gives its unit back.
/// let denied = policy.acquire_at(1, Instant::ZERO).unwrap();
/// assert_eq!(denied.denied_by, Some(0));
/// assert_eq!(denied.rules()[1].remaining, 1);
/// assert!(policy.acquire_at(1, Instant::ZERO + SECOND).unwrap().decision.allowed);
/// // Three this minute: now the per-minute rule denies, until the next minute.
/// let denied = policy.acquire_at(1, Instant::ZERO + 2 * SECOND).unwrap();
/// assert_eq!(denied.denied_by, Some(1));
/// assert_eq!(denied.decision.retry_after(), 58 * SECOND);
/// ```
#[derive(Debug)]
pub struct Policy {
    /// One limiter per rule, in the order given.
    rules: Box<[Limiter]>,
    /// The order the rules take a request in, and the limits they were built with.
    engine: Engine,
    /// Whether [`set_rules_at`](Self::set_rules_at) ever began to change the rules: until
    /// then the engine's limits are the rules' own, and a cost within them needs no look
    /// at each rule in force.
    changed: AtomicBool,
    /// The handle's shadow rules (docs/policies.md, Shadow rules).
    shadow: ShadowMask,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    counters: Counters,
}

/// A policy's decision: the combined [`Decision`], which rule denied, and each rule's own.
///
/// With shadow rules (docs/policies.md, Shadow rules) `decision` and `denied_by` are the
/// enforced rules' alone; each shadow rule's own decision is in [`rules`](Self::rules),
/// and the first that would have denied in [`shadow_denied_by`](Self::shadow_denied_by).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyDecision {
    /// The policy's decision: `allowed` iff every enforced rule admitted; `limit` and
    /// `remaining` the least over them, `retry_after_ns` and `reset_after_ns` the greatest
    /// (the request is admitted, and every rule full, once each rule is); `wait_ns` 0.
    /// Every rule shadow: allowed, `limit` and `remaining` `u64::MAX`, the waits 0.
    pub decision: Decision,
    /// The first enforced rule, in the order given, that denied the request; `None` when
    /// admitted.
    pub denied_by: Option<usize>,
    rules: [Decision; MAX_RULES],
    len: usize,
    /// The shadow rules the decision was made with, bit `i` for rule `i` (a byte holds
    /// [`MAX_RULES`]).
    shadow: u8,
}

impl PolicyDecision {
    /// Each rule's own decision, in the order the rules were given. Admitted: what each
    /// rule decided, units taken. Denied: what each rule would decide on its own, with
    /// `remaining` and `reset_after_ns` of the state as it is, since nothing was taken.
    pub fn rules(&self) -> &[Decision] {
        &self.rules[..self.len]
    }

    /// The first shadow rule, in the order given, whose own decision denied the request
    /// (what would have denied it, were the rule enforced); `None` when none did or the
    /// policy has no shadow rule.
    pub fn shadow_denied_by(&self) -> Option<usize> {
        (0..self.len).find(|&rule| self.is_shadow(rule) && !self.rules[rule].allowed)
    }

    /// Whether rule `rule` was a shadow rule of this decision.
    pub fn is_shadow(&self, rule: usize) -> bool {
        rule < self.len && self.shadow >> rule & 1 == 1
    }

    /// Every shadow rule whose own decision denied the request, bit `i` for rule `i`.
    pub(crate) fn shadow_denials(&self) -> u32 {
        let denied = |rule: usize| self.is_shadow(rule) && !self.rules[rule].allowed;
        (0..self.len)
            .filter(|&rule| denied(rule))
            .fold(0, |mask, rule| mask | 1 << rule)
    }

    /// The policy's decision from each rule's own (the first `len` of `rules`, in the
    /// order given), denied by `denied_by`: `limit` and `remaining` the least, the waits
    /// the greatest, over the rules `taking_part` gives a limit for (the rules the request
    /// costs).
    pub(crate) fn combine(
        rules: [Decision; MAX_RULES],
        len: usize,
        taking_part: impl Fn(usize) -> Option<u64>,
        denied_by: Option<usize>,
    ) -> Self {
        let mut decision = Decision {
            allowed: denied_by.is_none(),
            limit: u64::MAX,
            remaining: u64::MAX,
            ..Decision::default()
        };
        for (index, rule) in rules[..len].iter().enumerate() {
            if let Some(limit) = taking_part(index) {
                decision.limit = decision.limit.min(limit);
                decision.remaining = decision.remaining.min(rule.remaining);
                decision.retry_after_ns = decision.retry_after_ns.max(rule.retry_after_ns);
                decision.reset_after_ns = decision.reset_after_ns.max(rule.reset_after_ns);
            }
        }
        Self {
            decision,
            denied_by,
            rules,
            len,
            shadow: 0,
        }
    }
}

/// Whether the request of `report` was admitted: the answer of a `try_acquire` form of a
/// policy or keyed policy that counts, decided by its `acquire` form, whose report names
/// the rule that denied.
// Inline, as the branches it serves were inlined code.
#[inline(always)]
fn admitted<E>(report: Result<PolicyDecision, E>) -> Result<bool, E> {
    Ok(report?.decision.allowed)
}

impl Policy {
    /// A policy of `rules`, each full at any time.
    ///
    /// # Errors
    /// [`ConfigError::PolicyRules`] for no rule or more than
    /// [`MAX_RULES`], else [`ConfigError::PolicyRule`] naming the first invalid rule and its
    /// reason.
    pub fn new(rules: &[Config]) -> Result<Self, ConfigError> {
        if rules.is_empty() || rules.len() > MAX_RULES {
            return Err(ConfigError::PolicyRules { rules: rules.len() });
        }
        let rules: Box<[Limiter]> = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| Limiter::new(rule).map_err(|error| error.in_rule(index)))
            .collect::<Result<_, _>>()?;
        let engine = Engine::new(rules.iter().map(|rule| (rule.rule(), false)));
        Ok(Self {
            rules,
            engine,
            changed: AtomicBool::new(false),
            shadow: ShadowMask::default(),
            counters: Counters::default(),
        })
    }

    /// The rules, in the order given.
    pub fn rules(&self) -> impl ExactSizeIterator<Item = &Config> {
        self.rules.iter().map(Limiter::config)
    }

    /// The largest cost the policy can ever admit: the least of its rules' limits.
    pub fn limit(&self) -> u64 {
        least_limit(self.rules.iter().map(Limiter::rule))
    }

    /// Acquires `n` units now from every rule, or from none. `n == 0` only reports.
    ///
    /// # Errors
    /// [`InsufficientCapacity`] if `n` exceeds a rule's limit.
    pub fn acquire(&self, n: u64) -> Result<PolicyDecision, InsufficientCapacity> {
        self.acquire_at(n, Instant::now())
    }

    /// [`acquire`](Self::acquire) at `at`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(&self, n: u64, at: Instant) -> Result<PolicyDecision, InsufficientCapacity> {
        let n = self.uniform(n)?;
        let shadow = self.shadow.get();
        let decision = if shadow != 0 {
            self.acquire_shadowed(&self.engine.uniform(n.0), shadow, at)
        } else {
            owned(self.engine.acquire_at(&*self.rules, n, at.as_nanos()))
        };
        Ok(self.counted(n, decision))
    }

    /// Acquires `costs[i]` units of rule `i` now, for every rule, or nothing: a rule of
    /// cost 0 takes no part (its decision in [`PolicyDecision::rules`] only reports its
    /// state, and the combined decision leaves it out). All costs 0 only reports.
    ///
    /// ```
    /// use librate::{Config, Instant, Policy};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// // Writes: 1 a second; all requests: 3 a second.
    /// let policy = Policy::new(&[Config::gcra(1, SECOND), Config::gcra(3, SECOND)]).unwrap();
    /// assert!(policy.acquire_costs_at(&[1, 1], Instant::ZERO).unwrap().decision.allowed); // a write
    /// assert_eq!(policy.acquire_costs_at(&[1, 1], Instant::ZERO).unwrap().denied_by, Some(0));
    /// let read = policy.acquire_costs_at(&[0, 1], Instant::ZERO).unwrap();
    /// assert!(read.decision.allowed);
    /// assert_eq!(read.decision.remaining, 1); // the write rule is left out
    /// ```
    ///
    /// # Errors
    /// [`CostsError::Acquire`] if a cost exceeds its rule's limit;
    /// [`CostsError::CostCount`] if there is not one cost per rule.
    pub fn acquire_costs(&self, costs: &[u64]) -> Result<PolicyDecision, CostsError> {
        self.acquire_costs_at(costs, Instant::now())
    }

    /// [`acquire_costs`](Self::acquire_costs) at `at`.
    ///
    /// # Errors
    /// As [`acquire_costs`](Self::acquire_costs).
    pub fn acquire_costs_at(
        &self,
        costs: &[u64],
        at: Instant,
    ) -> Result<PolicyDecision, CostsError> {
        let costs = self.costs(costs)?;
        let shadow = self.shadow.get();
        let decision = if shadow != 0 {
            self.acquire_shadowed(&costs, shadow, at)
        } else {
            owned(self.engine.acquire_at(&*self.rules, &costs, at.as_nanos()))
        };
        Ok(self.counted(&costs, decision))
    }

    /// Acquires `n` units now from every rule, or from none, and says only whether they
    /// were admitted.
    ///
    /// # Errors
    /// [`InsufficientCapacity`] if `n` exceeds a rule's limit.
    // Out of line: the body is large, and its result (two bytes) comes back in a register.
    #[inline(never)]
    pub fn try_acquire(&self, n: u64) -> Result<bool, InsufficientCapacity> {
        if self.counters.enabled() {
            return admitted(self.acquire(n));
        }
        let n = self.uniform(n)?;
        let shadow = self.shadow.get();
        if shadow != 0 {
            return Ok(self.try_acquire_shadowed(
                &self.engine.uniform(n.0),
                shadow,
                Instant::now(),
            ));
        }
        Ok(self.try_acquire_now(n))
    }

    /// [`try_acquire`](Self::try_acquire) of one cost per rule, as
    /// [`acquire_costs`](Self::acquire_costs).
    ///
    /// # Errors
    /// As [`acquire_costs`](Self::acquire_costs).
    pub fn try_acquire_costs(&self, costs: &[u64]) -> Result<bool, CostsError> {
        if self.counters.enabled() {
            return admitted(self.acquire_costs(costs));
        }
        let costs = self.costs(costs)?;
        let shadow = self.shadow.get();
        if shadow != 0 {
            return Ok(self.try_acquire_shadowed(&costs, shadow, Instant::now()));
        }
        Ok(self.try_acquire_now(&costs))
    }

    /// [`try_acquire`](Self::try_acquire) at `at`.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_at(&self, n: u64, at: Instant) -> Result<bool, InsufficientCapacity> {
        if self.counters.enabled() {
            return admitted(self.acquire_at(n, at));
        }
        let n = self.uniform(n)?;
        let shadow = self.shadow.get();
        if shadow != 0 {
            return Ok(self.try_acquire_shadowed(&self.engine.uniform(n.0), shadow, at));
        }
        Ok(owned(self.engine.try_acquire_at(
            &*self.rules,
            n,
            at.as_nanos(),
        )))
    }

    /// [`try_acquire_costs`](Self::try_acquire_costs) at `at`.
    ///
    /// # Errors
    /// As [`acquire_costs`](Self::acquire_costs).
    pub fn try_acquire_costs_at(&self, costs: &[u64], at: Instant) -> Result<bool, CostsError> {
        if self.counters.enabled() {
            return admitted(self.acquire_costs_at(costs, at));
        }
        let costs = self.costs(costs)?;
        let shadow = self.shadow.get();
        if shadow != 0 {
            return Ok(self.try_acquire_shadowed(&costs, shadow, at));
        }
        Ok(owned(self.engine.try_acquire_at(
            &*self.rules,
            &costs,
            at.as_nanos(),
        )))
    }

    /// `n` of every rule, checked: against the limits the rules were built with, or
    /// against each rule in force once a change of rule began.
    #[inline(always)]
    fn uniform(&self, n: u64) -> Result<Uniform, InsufficientCapacity> {
        // Relaxed: a caller after a change (in happens-before) reads `true` (coherence),
        // and checks the rules in force. A caller racing the change may check the limits
        // the rules were built with; a rule whose change lowered its limit below `n` then
        // denies the request for good (see `Limiter::beyond_limit`), as it would if the
        // change came just after this check.
        if n > self.engine.limit() || self.changed.load(Ordering::Relaxed) {
            for rule in &*self.rules {
                rule.rule().check(n)?;
            }
        }
        Ok(Uniform(n))
    }

    /// One cost per rule, checked.
    fn costs(&self, costs: &[u64]) -> Result<Costs, CostsError> {
        self.engine
            .costs(self.rules.iter().map(Limiter::rule), costs)
    }
}
