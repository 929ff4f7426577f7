//! Shadow rules (docs/policies.md, Shadow rules): rules of a policy handle, named by a
//! mask, that are decided and report their would-be denials but never deny a request.
//!
//! The enforced rules (those not in the mask) decide as a policy's rules always do, all
//! or nothing, through the engine. Each shadow rule is then decided on its own: acquired
//! alone if the enforced rules admitted the request (so its state is the rule's as if it
//! were enforced on the traffic that gets through), only peeked if they denied it. A
//! shadow rule never gives back and is never given back for.

use super::engine::{unchanged, Costs, Engine, Rules};
use super::{Policy, PolicyDecision, MAX_RULES};
use crate::decision::Decision;
use crate::error::ConfigError;
use crate::state::{owned, Acquire};
use crate::sync::{AtomicU64, Ordering};
use crate::time::Instant;

/// A policy handle's shadow rules: bit `i` set for rule `i`. The handle's own, never in a
/// shared file nor in Redis: every handle of one file applies its own.
#[derive(Debug, Default)]
pub(crate) struct ShadowMask(AtomicU64);

impl ShadowMask {
    /// The mask in force. Relaxed: the mask guards no other memory (the rules' states
    /// have their own orderings), so a decision racing a change may apply either mask,
    /// and one after the change (in happens-before) reads the new one (coherence).
    #[inline(always)]
    pub(crate) fn get(&self) -> u32 {
        // Only `set` stores, a `u32`.
        self.0.load(Ordering::Relaxed) as u32
    }

    /// Makes `mask` the shadow rules of a policy of `rules` rules.
    ///
    /// # Errors
    /// [`ConfigError::ShadowMask`] if a bit of `mask` is at or past `rules`.
    pub(crate) fn set(&self, mask: u32, rules: usize) -> Result<(), ConfigError> {
        if u64::from(mask) >> rules != 0 {
            return Err(ConfigError::ShadowMask { mask, rules });
        }
        // Relaxed: see `get`.
        self.0.store(u64::from(mask), Ordering::Relaxed);
        Ok(())
    }
}

impl Policy {
    /// Makes the rules of `mask` (bit `i` for rule `i`, in the order given) this handle's
    /// shadow rules, replacing the ones before; 0 enforces every rule. A shadow rule is
    /// decided and reports its would-be denials, but never denies a request
    /// (docs/policies.md, Shadow rules). Nothing else changes: a rule keeps its state
    /// whether shadow or enforced. A decision racing the call may apply either mask.
    ///
    /// ```
    /// use librate::{Config, Instant, Policy};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// // 2 a second, and a new limit of 1 a second rolled out in shadow.
    /// let policy = Policy::new(&[Config::gcra(2, SECOND), Config::gcra(1, SECOND)]).unwrap();
    /// policy.set_shadow(0b10).unwrap();
    /// assert_eq!(policy.acquire_at(1, Instant::ZERO).unwrap().shadow_denied_by(), None);
    /// let second = policy.acquire_at(1, Instant::ZERO).unwrap();
    /// assert!(second.decision.allowed);
    /// assert_eq!(second.shadow_denied_by(), Some(1)); // would have been denied
    /// // Enforced now: the new rule denies.
    /// policy.set_shadow(0).unwrap();
    /// let later = Instant::ZERO + SECOND;
    /// assert!(policy.acquire_at(1, later).unwrap().decision.allowed);
    /// assert_eq!(policy.acquire_at(1, later).unwrap().denied_by, Some(1));
    /// ```
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

    /// The decision of checked `costs` at `at`, the rules of `shadow` (not 0) in shadow.
    /// Out of line and cold: a policy without shadow rules pays one load and one branch.
    #[cold]
    #[inline(never)]
    pub(super) fn acquire_shadowed(
        &self,
        costs: &Costs,
        shadow: u32,
        at: Instant,
    ) -> PolicyDecision {
        owned(
            self.engine
                .acquire_shadowed(&*self.rules, costs, shadow, at.as_nanos()),
        )
    }

    /// [`acquire_shadowed`](Self::acquire_shadowed), saying only whether the enforced
    /// rules admitted.
    #[cold]
    #[inline(never)]
    pub(super) fn try_acquire_shadowed(&self, costs: &Costs, shadow: u32, at: Instant) -> bool {
        owned(
            self.engine
                .try_acquire_shadowed(&*self.rules, costs, shadow, at.as_nanos()),
        )
    }
}

/// Whether rule `rule` is in `mask`.
#[inline(always)]
fn in_mask(mask: u32, rule: usize) -> bool {
    mask >> rule & 1 == 1
}

/// `costs` without the rules of `mask`: what the enforced rules decide on.
fn enforced(costs: &Costs, mask: u32) -> Costs {
    let mut enforced = *costs;
    for (rule, cost) in enforced.iter_mut().enumerate() {
        if in_mask(mask, rule) {
            *cost = 0;
        }
    }
    enforced
}

impl Engine {
    /// The decision of a request of `costs` at `now_ns` on rules of which `mask` (not 0)
    /// names the shadow rules: the enforced rules' decision, combined over them alone,
    /// with each shadow rule's own in [`PolicyDecision::rules`].
    ///
    /// # Errors
    /// What an enforced rule's step returns, as [`acquire_at`](Engine::acquire_at); a
    /// shadow rule's error only leaves it undecided.
    pub(super) fn acquire_shadowed<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: &Costs,
        mask: u32,
        now_ns: u64,
    ) -> Result<PolicyDecision, R::Error> {
        let enforced = enforced(costs, mask);
        let decided = self.acquire_at(rules, &enforced, now_ns)?;
        let mut decisions = decided.rules;
        let admitted = decided.decision.allowed;
        self.shadows(rules, costs, mask, admitted, now_ns, &mut decisions);
        // Over the enforced rules alone: a request that costs none of them is a query of
        // them all, as it is of a policy without shadow rules.
        let query = self.is_query(&enforced);
        Ok(PolicyDecision::shadowed(
            decisions,
            self.len(),
            mask,
            |rule| query || enforced[rule] > 0,
            admitted,
        ))
    }

    /// Whether a request of `costs` at `now_ns` is admitted by the enforced rules, the
    /// rules of `mask` (not 0) decided after them as
    /// [`acquire_shadowed`](Self::acquire_shadowed) decides them.
    ///
    /// # Errors
    /// As [`acquire_shadowed`](Self::acquire_shadowed).
    pub(super) fn try_acquire_shadowed<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: &Costs,
        mask: u32,
        now_ns: u64,
    ) -> Result<bool, R::Error> {
        let enforced = enforced(costs, mask);
        let admitted = self.is_query(&enforced) || self.try_acquire_at(rules, &enforced, now_ns)?;
        let mut decisions = [Decision::default(); MAX_RULES];
        self.shadows(rules, costs, mask, admitted, now_ns, &mut decisions);
        Ok(admitted)
    }

    /// Decides each shadow rule of `mask` the request costs, in order, its decision in
    /// `decisions`: acquired alone if the enforced rules `admitted` the request, else
    /// peeked. A rule whose step fails (a per-key rule's full table) does not decide: its
    /// place in `decisions` is left as it was (the report of a rule the request leaves
    /// out), and the request is not failed for it.
    fn shadows<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: &Costs,
        mask: u32,
        admitted: bool,
        now_ns: u64,
        decisions: &mut [Decision; MAX_RULES],
    ) {
        for rule in (0..self.len()).filter(|&rule| in_mask(mask, rule) && costs[rule] > 0) {
            let n = costs[rule];
            let decided = if admitted {
                rules.swap(rule, Acquire { now: now_ns, n }, None)
            } else {
                unchanged(rules, rule, n, now_ns)
            };
            if let Ok(decision) = decided {
                decisions[rule] = decision;
            }
        }
    }
}

impl PolicyDecision {
    /// The decision of rules each decided on its own (`rules`, the first `len`), `mask`
    /// naming the shadow rules: `admitted` iff the enforced rules admitted, combined over
    /// the enforced rules `taking_part` says the request costs, denied by the first of
    /// them that denied; the first shadow rule that denied is
    /// [`shadow_denied_by`](Self::shadow_denied_by). For the in-process engine and the
    /// Redis policy alike.
    pub(crate) fn shadowed(
        rules: [Decision; MAX_RULES],
        len: usize,
        mask: u32,
        taking_part: impl Fn(usize) -> bool,
        admitted: bool,
    ) -> Self {
        let enforced = |rule: usize| !in_mask(mask, rule) && taking_part(rule);
        let denied_by = match admitted {
            true => None,
            false => (0..len).find(|&rule| enforced(rule) && !rules[rule].allowed),
        };
        let mut decision = Self::combine(
            rules,
            len,
            |rule| enforced(rule).then_some(rules[rule].limit),
            denied_by,
        );
        // `admitted` decides, whether or not a denying rule is found to name.
        decision.decision.allowed = admitted;
        // A checked mask names only rules the policy holds: at most `MAX_RULES` bits.
        decision.shadow = mask as u8;
        decision
    }
}
