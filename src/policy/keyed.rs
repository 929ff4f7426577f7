//! Keyed policies: a policy whose rules are each per key (a bounded keyed table, as a
//! [`KeyedLimiter`]) or global (one state for every key), a request for a key decided
//! against its key's per-key rules and the global rules together, all or nothing.
//!
//! The engine is a policy's (`engine.rs`), and so is what concurrent callers may observe
//! (the parent module's docs), rule by rule: a per-key rule's state is its key's, a
//! global rule's everybody's. A per-key rule gives back in its table as `give_back.rs` in
//! `src/keyed/` argues: in place, or, for a request that inserted its key, by making the
//! key absent again (its former state then holds its slot, under no key, until fresh).
//!
//! `keyed/build.rs`: the rules a keyed policy is built of, and building it;
//! `keyed/rules.rs`: where each rule keeps its state, and the engine's steps on them for
//! one key; `keyed/counts.rs`: counting its requests; `keyed/change.rs`: replacing the
//! rules at run time.

use super::engine::{least_limit, Costs, Engine};
use super::shadow::ShadowMask;
use super::{admitted, PolicyDecision};
use crate::counters::Counters;
use crate::error::{ConfigError, CostsError, KeyedAcquireError, ResetError};
use crate::keyed::{KeyHasher, KeyedLimiter, KeyedStats, Located};
use crate::time::Instant;
use std::hash::BuildHasher;

mod build;
mod change;
mod counts;
mod rules;

pub use self::build::KeyedRule;
use self::rules::ForKey;
pub(super) use self::rules::Scoped;

/// A policy of per-key and global rules: a request for a key is admitted iff each rule
/// admits it (a per-key rule on the key's own state, a global rule on the one state all
/// keys share), and a denied request takes nothing from any rule.
///
/// Each per-key rule is a bounded keyed table of `capacity` keys with a
/// [`KeyedLimiter`]'s semantics: up to `capacity` live keys always fit, fresh keys may
/// be dropped, and a new key that finds a table full of live keys is refused with
/// [`KeyedAcquireError::TableFull`] (the rules that took before it give back). A request may cost
/// each rule differently ([`acquire_costs`](Self::acquire_costs)); a cost of 0 leaves a
/// rule out, so one policy holds the limits of several kinds of request.
///
/// `KeyedPolicy` is `Send + Sync` and lock-free, as [`KeyedLimiter`] is; what concurrent
/// callers may observe is what they may observe of a [`Policy`](crate::Policy), rule by
/// rule.
///
/// ```
/// use librate::{Config, Instant, KeyedPolicy, KeyedRule};
/// use std::time::Duration;
/// const SECOND: Duration = Duration::from_secs(1);
/// // Per customer: 1 post and 5 likes a second; everybody: 3 requests a second.
/// let site = KeyedPolicy::new(
///     &[
///         KeyedRule::per_key(Config::gcra(1, SECOND)),
///         KeyedRule::per_key(Config::gcra(5, SECOND)),
///         KeyedRule::global(Config::fixed_window(3, SECOND)),
///     ],
///     1000,
/// )
/// .unwrap();
/// let (post, like) = ([1, 0, 1], [0, 1, 1]);
/// assert!(site.acquire_costs_at(b"alice", &post, Instant::ZERO).unwrap().decision.allowed);
/// // alice's second post: her post rule denies, and the global rule gives back.
/// let denied = site.acquire_costs_at(b"alice", &post, Instant::ZERO).unwrap();
/// assert_eq!(denied.denied_by, Some(0));
/// assert_eq!(denied.rules()[2].remaining, 2);
/// assert!(site.acquire_costs_at(b"alice", &like, Instant::ZERO).unwrap().decision.allowed);
/// assert!(site.acquire_costs_at(b"bob", &post, Instant::ZERO).unwrap().decision.allowed);
/// // Three requests this second: the global rule denies everybody.
/// assert_eq!(site.acquire_costs_at(b"carol", &like, Instant::ZERO).unwrap().denied_by, Some(2));
/// ```
#[derive(Debug)]
pub struct KeyedPolicy<S = KeyHasher> {
    /// One table or limiter per rule, in the order given; every table of `capacity` keys
    /// and the same hasher, so a key's location in one is its location in all.
    rules: Box<[Scoped<S>]>,
    engine: Engine,
    capacity: u64,
    /// The handle's shadow rules (docs/policies.md, Shadow rules): its own, not the
    /// file's, when the policy is in a shared file.
    shadow: ShadowMask,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    counters: Counters,
}

impl<S: BuildHasher> KeyedPolicy<S> {
    /// The rules, in the order given.
    pub fn rules(&self) -> impl ExactSizeIterator<Item = KeyedRule> + '_ {
        self.rules.iter().map(|rule| match rule {
            Scoped::PerKey(table) => KeyedRule::per_key(*table.config()),
            Scoped::Global(limiter) => KeyedRule::global(*limiter.config()),
        })
    }

    /// The least of the rules' limits in force: the largest cost the policy can admit of
    /// each.
    pub fn limit(&self) -> u64 {
        least_limit(self.rules.iter().map(Scoped::decider))
    }

    /// Makes the rules of `mask` (bit `i` for rule `i`, in the order given) this handle's
    /// shadow rules, as [`Policy::set_shadow`](crate::Policy::set_shadow) does, rule by
    /// rule: a shadow per-key rule acquires in the key's own state. A shadow per-key rule
    /// whose table is full of live keys cannot decide a new key: the enforced decision
    /// stands, and the rule reports as one the request left out (docs/policies.md, Shadow
    /// rules). In a shared file the mask is this handle's alone: every process applies
    /// its own.
    ///
    /// # Errors
    /// [`ConfigError::ShadowMask`] if `mask` names a rule the policy does not hold; the
    /// mask in force is then left as it was.
    pub fn set_shadow(&self, mask: u32) -> Result<(), ConfigError> {
        self.shadow.set(mask, self.rules.len())
    }

    /// This handle's shadow rules, bit `i` for rule `i`: 0 when every rule is enforced.
    pub fn shadow(&self) -> u32 {
        self.shadow.get()
    }

    /// The capacity each per-key rule's table was built for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Table memory per key of capacity, in bytes: the sum over the per-key rules of
    /// [`KeyedLimiter::bytes_per_key`] (32 for each GCRA rule).
    pub fn bytes_per_key(&self) -> usize {
        self.tables().map(KeyedLimiter::bytes_per_key).sum()
    }

    /// Acquires `n` units of every rule for `key` now (`CLOCK_MONOTONIC`), or nothing.
    /// `n == 0` only reports, and inserts no key.
    ///
    /// # Errors
    /// [`KeyedAcquireError::InsufficientCapacity`] if `n` exceeds a rule's limit;
    /// [`KeyedAcquireError::TableFull`] if `key` is new to a per-key rule whose table is
    /// full of live keys (nothing is taken); [`KeyedAcquireError::Shared`] only in a
    /// shared file.
    pub fn acquire(&self, key: &[u8], n: u64) -> Result<PolicyDecision, KeyedAcquireError> {
        self.acquire_at(key, n, Instant::now())
    }

    /// [`acquire`](Self::acquire) at `at`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<PolicyDecision, KeyedAcquireError> {
        let costs = self.uniform(n)?;
        let decided = self.acquire_checked(key, &costs, at.as_nanos());
        self.counted(&costs, decided)
    }

    /// Acquires `costs[i]` units of rule `i` for `key` now, for every rule, or nothing: a
    /// rule of cost 0 takes no part (its decision in [`PolicyDecision::rules`] only
    /// reports its state, and the combined decision leaves it out). All costs 0 only
    /// reports.
    ///
    /// # Errors
    /// [`CostsError::Acquire`] as [`acquire`](Self::acquire), and
    /// [`CostsError::CostCount`] if there is not one cost per rule.
    pub fn acquire_costs(
        &self,
        key: &[u8],
        costs: &[u64],
    ) -> Result<PolicyDecision, CostsError<KeyedAcquireError>> {
        self.acquire_costs_at(key, costs, Instant::now())
    }

    /// [`acquire_costs`](Self::acquire_costs) at `at`.
    ///
    /// # Errors
    /// As [`acquire_costs`](Self::acquire_costs).
    pub fn acquire_costs_at(
        &self,
        key: &[u8],
        costs: &[u64],
        at: Instant,
    ) -> Result<PolicyDecision, CostsError<KeyedAcquireError>> {
        let costs = self.costs(costs)?;
        let decided = self.acquire_checked(key, &costs, at.as_nanos());
        Ok(self.counted(&costs, decided)?)
    }

    /// Acquires `n` units of every rule for `key` now, or nothing, and says only whether
    /// they were admitted.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn try_acquire(&self, key: &[u8], n: u64) -> Result<bool, KeyedAcquireError> {
        self.try_acquire_at(key, n, Instant::now())
    }

    /// [`try_acquire`](Self::try_acquire) at `at`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn try_acquire_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<bool, KeyedAcquireError> {
        if self.counters.enabled() {
            return admitted(self.acquire_at(key, n, at));
        }
        let costs = self.uniform(n)?;
        self.try_acquire_checked(key, &costs, at.as_nanos())
    }

    /// [`try_acquire`](Self::try_acquire) of one cost per rule, as
    /// [`acquire_costs`](Self::acquire_costs).
    ///
    /// # Errors
    /// As [`acquire_costs`](Self::acquire_costs).
    pub fn try_acquire_costs(
        &self,
        key: &[u8],
        costs: &[u64],
    ) -> Result<bool, CostsError<KeyedAcquireError>> {
        self.try_acquire_costs_at(key, costs, Instant::now())
    }

    /// [`try_acquire_costs`](Self::try_acquire_costs) at `at`.
    ///
    /// # Errors
    /// As [`acquire_costs`](Self::acquire_costs).
    pub fn try_acquire_costs_at(
        &self,
        key: &[u8],
        costs: &[u64],
        at: Instant,
    ) -> Result<bool, CostsError<KeyedAcquireError>> {
        if self.counters.enabled() {
            return admitted(self.acquire_costs_at(key, costs, at));
        }
        let costs = self.costs(costs)?;
        Ok(self.try_acquire_checked(key, &costs, at.as_nanos())?)
    }

    /// Resets `key` in every per-key rule (as [`KeyedLimiter::reset`]): its next request is
    /// decided as a new key's by those rules. The global rules are left as they are.
    ///
    /// A request of the key racing the reset is decided wholly before or after it in each
    /// rule. A denied one whose units a rule gives back after the reset gives them to the
    /// key's former state, which no key reads: the key still starts afresh.
    ///
    /// # Errors
    /// As [`KeyedLimiter::reset`].
    pub fn reset(&self, key: &[u8]) -> Result<(), ResetError> {
        self.tables().try_for_each(|table| table.reset(key))
    }

    /// The per-key rules' tables' statistics at `at`, summed up: `capacity` and
    /// `max_keys` of each table, `live_keys` of the fullest (the one that refuses new
    /// keys first), and `table_full` the requests refused with `TableFull` (each
    /// counted once, by the table that refused it). All zeros without a per-key rule.
    pub fn stats_at(&self, at: Instant) -> KeyedStats {
        let each = self.tables().map(|table| table.stats_at(at));
        each.fold(
            KeyedStats {
                capacity: 0,
                max_keys: 0,
                live_keys: 0,
                table_full: 0,
            },
            |all, table| KeyedStats {
                capacity: table.capacity,
                max_keys: table.max_keys,
                live_keys: all.live_keys.max(table.live_keys),
                table_full: all.table_full + table.table_full,
            },
        )
    }

    /// [`stats_at`](Self::stats_at) now (`CLOCK_MONOTONIC`).
    pub fn stats(&self) -> KeyedStats {
        self.stats_at(Instant::now())
    }

    fn tables(&self) -> impl Iterator<Item = &KeyedLimiter<S>> {
        self.rules.iter().filter_map(|rule| match rule {
            Scoped::PerKey(table) => Some(table),
            Scoped::Global(_) => None,
        })
    }

    fn for_key(&self, key: &[u8]) -> ForKey<'_, S> {
        // Without a per-key rule the location is never read: the empty key's will do.
        let table = self.tables().next();
        ForKey {
            rules: &self.rules,
            key: table.map_or(Located::NOWHERE, |table| table.locate(key)),
        }
    }

    /// The decision of checked `costs` for `key` at `now_ns`, with this handle's shadow
    /// rules.
    fn acquire_checked(
        &self,
        key: &[u8],
        costs: &Costs,
        now_ns: u64,
    ) -> Result<PolicyDecision, KeyedAcquireError> {
        let shadow = self.shadow.get();
        if shadow != 0 {
            return self.acquire_shadowed(key, costs, shadow, now_ns);
        }
        self.engine.acquire_at(&self.for_key(key), costs, now_ns)
    }

    /// [`acquire_checked`](Self::acquire_checked) with the rules of `shadow` (not 0) in
    /// shadow. Out of line and cold: a policy without shadow rules pays one load and one
    /// branch.
    #[cold]
    #[inline(never)]
    fn acquire_shadowed(
        &self,
        key: &[u8],
        costs: &Costs,
        shadow: u32,
        now_ns: u64,
    ) -> Result<PolicyDecision, KeyedAcquireError> {
        self.engine
            .acquire_shadowed(&self.for_key(key), costs, shadow, now_ns)
    }

    fn try_acquire_checked(
        &self,
        key: &[u8],
        costs: &Costs,
        now_ns: u64,
    ) -> Result<bool, KeyedAcquireError> {
        let shadow = self.shadow.get();
        if shadow != 0 {
            return self.try_acquire_shadowed(key, costs, shadow, now_ns);
        }
        if costs.iter().all(|&cost| cost == 0) {
            return Ok(true);
        }
        self.engine
            .try_acquire_at(&self.for_key(key), costs, now_ns)
    }

    /// [`try_acquire_checked`](Self::try_acquire_checked) with the rules of `shadow` (not
    /// 0) in shadow, out of line as [`acquire_shadowed`](Self::acquire_shadowed) is.
    #[cold]
    #[inline(never)]
    fn try_acquire_shadowed(
        &self,
        key: &[u8],
        costs: &Costs,
        shadow: u32,
        now_ns: u64,
    ) -> Result<bool, KeyedAcquireError> {
        self.engine
            .try_acquire_shadowed(&self.for_key(key), costs, shadow, now_ns)
    }

    /// `n` of every rule, checked.
    fn uniform(&self, n: u64) -> Result<Costs, KeyedAcquireError> {
        for rule in self.rules.iter() {
            rule.decider().check(n)?;
        }
        Ok(self.engine.uniform(n))
    }

    /// One cost per rule, checked.
    fn costs(&self, costs: &[u64]) -> Result<Costs, CostsError<KeyedAcquireError>> {
        self.engine
            .costs(self.rules.iter().map(Scoped::decider), costs)
    }
}
