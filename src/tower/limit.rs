//! What a [`RateLimitLayer`](super::RateLimitLayer) limits with: a keyed limiter or
//! keyed policy (a limit per key), or a limiter, policy or leased limiter (one limit for
//! every request).

use crate::config::Config;
use crate::decision::Decision;
use crate::error::Error;
use crate::keyed::KeyedLimiter;
use crate::lease::LeaseHolder;
#[cfg(feature = "redis")]
use crate::lease::LeasedLimiter;
use crate::limiter::Limiter;
use crate::policy::{KeyedPolicy, Policy, PolicyDecision};
use crate::time::Instant;
use std::hash::BuildHasher;
use std::sync::Arc;

/// One request's decision, as the RateLimit fields report it.
pub trait Decided {
    /// The decision: a policy's, its rules' combined.
    fn decision(&self) -> &Decision;
    /// Each rule's own decision, in the order of [`RequestLimit::rules`]: a single
    /// limit's is the decision itself.
    fn rules(&self) -> &[Decision];
    /// The rule that denied, by index: the first, in the order given, of a policy (the
    /// one its counts charge the denial to); `None` when admitted. By default the first
    /// rule whose own decision denies, or rule 0.
    fn denied_by(&self) -> Option<usize> {
        if self.decision().allowed {
            return None;
        }
        Some(
            self.rules()
                .iter()
                .position(|rule| !rule.allowed)
                .unwrap_or(0),
        )
    }
    /// Whether rule `rule` is a shadow rule (docs/policies.md, shadow rules): decided and
    /// reported, never denying, never the rule `RateLimit` reports. By default none is.
    fn is_shadow(&self, rule: usize) -> bool {
        let _ = rule;
        false
    }
    /// The first shadow rule whose own decision denied: the rule that would have denied
    /// the request, were it enforced. By default none.
    fn shadow_denied_by(&self) -> Option<usize> {
        None
    }
}

impl Decided for Decision {
    fn decision(&self) -> &Decision {
        self
    }

    fn rules(&self) -> &[Decision] {
        std::slice::from_ref(self)
    }
}

impl Decided for PolicyDecision {
    fn decision(&self) -> &Decision {
        &self.decision
    }

    fn rules(&self) -> &[Decision] {
        PolicyDecision::rules(self)
    }

    fn denied_by(&self) -> Option<usize> {
        self.denied_by
    }

    fn is_shadow(&self, rule: usize) -> bool {
        PolicyDecision::is_shadow(self, rule)
    }

    fn shadow_denied_by(&self) -> Option<usize> {
        PolicyDecision::shadow_denied_by(self)
    }
}

/// A limit the layer consults for each request: [`KeyedLimiter`] and [`KeyedPolicy`]
/// (per key), [`Limiter`], [`Policy`], a [`LeaseHolder`] and (with the `redis` feature) a
/// `LeasedLimiter` (one for every request: a leased one's, across hosts, docs/leases.md),
/// or an `Arc` of one.
/// Implement it to put the layer in front of another limiter, or, in tests, of fixed
/// decisions.
pub trait RequestLimit: Send + Sync + 'static {
    /// What one request's decision is.
    type Decided: Decided;
    /// Whether the decision depends on the request's key: if not, no key is read.
    const KEYED: bool;
    /// Whether the limit is several rules, named `"rule0"`, `"rule1"`… by default, as a
    /// policy's are; else one, named `"default"`.
    const POLICY: bool;

    /// The rules each key gets, in order, advertised in `RateLimit-Policy`.
    fn rules(&self) -> Vec<Config>;

    /// Decides one request of `key` at `at`: one unit of every rule, or, for a policy
    /// given `costs`, `costs[i]` units of rule `i`, all or nothing.
    ///
    /// # Errors
    /// The limit's own error, as the umbrella [`Error`] (each of librate's converts into
    /// it). Unless the layer fails open, [`Error::TableFull`] is answered 503 with
    /// `Retry-After`, any other error 503.
    fn acquire_at(
        &self,
        key: &[u8],
        costs: Option<&[u64]>,
        at: Instant,
    ) -> Result<Self::Decided, Error>;
}

impl<S: BuildHasher + Send + Sync + 'static> RequestLimit for KeyedLimiter<S> {
    type Decided = Decision;
    const KEYED: bool = true;
    const POLICY: bool = false;

    fn rules(&self) -> Vec<Config> {
        vec![*self.config()]
    }

    fn acquire_at(&self, key: &[u8], _: Option<&[u64]>, at: Instant) -> Result<Decision, Error> {
        Ok(KeyedLimiter::acquire_at(self, key, 1, at)?)
    }
}

/// `RequestLimit` for a limit of one rule for every request: the key and costs unread,
/// one unit a request.
macro_rules! one_limit {
    ($limit:ty, |$this:ident| $config:expr, $acquire:expr) => {
        impl RequestLimit for $limit {
            type Decided = Decision;
            const KEYED: bool = false;
            const POLICY: bool = false;

            fn rules(&self) -> Vec<Config> {
                let $this = self;
                vec![*$config]
            }

            fn acquire_at(
                &self,
                _: &[u8],
                _: Option<&[u64]>,
                at: Instant,
            ) -> Result<Decision, Error> {
                Ok($acquire(self, 1, at)?)
            }
        }
    };
}

one_limit!(Limiter, |limiter| limiter.config(), Limiter::acquire_at);
// A leased limit decides from the share its holder has now (docs/leases.md): the rule it
// advertises is the global rule, which the shares together keep.
one_limit!(
    LeaseHolder,
    |holder| holder.rule().config(),
    LeaseHolder::acquire_at
);
#[cfg(feature = "redis")]
one_limit!(
    LeasedLimiter,
    |leased| leased.holder().rule().config(),
    |leased: &LeasedLimiter, n, at| leased.holder().acquire_at(n, at)
);

impl<S: BuildHasher + Send + Sync + 'static> RequestLimit for KeyedPolicy<S> {
    type Decided = PolicyDecision;
    const KEYED: bool = true;
    const POLICY: bool = true;

    fn rules(&self) -> Vec<Config> {
        KeyedPolicy::rules(self)
            .map(|rule| *rule.config())
            .collect()
    }

    fn acquire_at(
        &self,
        key: &[u8],
        costs: Option<&[u64]>,
        at: Instant,
    ) -> Result<PolicyDecision, Error> {
        match costs {
            Some(costs) => Ok(self.acquire_costs_at(key, costs, at)?),
            None => Ok(KeyedPolicy::acquire_at(self, key, 1, at)?),
        }
    }
}

impl RequestLimit for Policy {
    type Decided = PolicyDecision;
    const KEYED: bool = false;
    const POLICY: bool = true;

    fn rules(&self) -> Vec<Config> {
        Policy::rules(self).copied().collect()
    }

    fn acquire_at(
        &self,
        _: &[u8],
        costs: Option<&[u64]>,
        at: Instant,
    ) -> Result<PolicyDecision, Error> {
        match costs {
            Some(costs) => Ok(self.acquire_costs_at(costs, at)?),
            None => Ok(Policy::acquire_at(self, 1, at)?),
        }
    }
}

impl<L: RequestLimit> RequestLimit for Arc<L> {
    type Decided = L::Decided;
    const KEYED: bool = L::KEYED;
    const POLICY: bool = L::POLICY;

    fn rules(&self) -> Vec<Config> {
        L::rules(self)
    }

    fn acquire_at(
        &self,
        key: &[u8],
        costs: Option<&[u64]>,
        at: Instant,
    ) -> Result<L::Decided, Error> {
        L::acquire_at(self, key, costs, at)
    }
}
