//! Policies (DESIGN §9): several rules over one subject ("10 a second and 1,000 a day"),
//! decided all or nothing.
//!
//! A request is taken from each rule in turn, at one time. When a rule denies it, the
//! rules that took it before give their units back, so a denied request costs no rule
//! anything. The rules that can give back (GCRA and the window counters: see
//! [`Refund`]) take a request first and the sliding logs last, in the order given: a
//! rule that admits last never has to give back, and every sliding log but the first is
//! asked whether it would admit before any rule takes.
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

use crate::config::Config;
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::{ConfigError, Error};
use crate::limiter::{Limiter, RuleRefund};
use crate::time::{self, Monotonic, TimeSource};

/// The most rules one policy holds.
pub const MAX_RULES: usize = 8;

/// Several limits over one subject at once, each a [`Config`] of any algorithm: a request
/// is admitted iff every rule admits it, and a denied request takes nothing from any rule.
///
/// A `Policy` is `Send + Sync` and lock-free, as a [`Limiter`] is; see the module
/// documentation for what concurrent callers may observe.
///
/// ```
/// use rate::{Config, Policy};
/// const SECOND: u64 = 1_000_000_000;
/// // 2 a second, and 3 a minute.
/// let policy = Policy::new(&[
///     Config::gcra(2, SECOND),
///     Config::fixed_window(3, 60 * SECOND),
/// ])
/// .unwrap();
/// assert!(policy.acquire_at(1, 0).unwrap().decision.allowed);
/// assert!(policy.acquire_at(1, 0).unwrap().decision.allowed);
/// // The per-second rule denies; the per-minute one gives its unit back.
/// let denied = policy.acquire_at(1, 0).unwrap();
/// assert_eq!(denied.denied_by, Some(0));
/// assert_eq!(denied.rules()[1].remaining, 1);
/// assert!(policy.acquire_at(1, SECOND).unwrap().decision.allowed);
/// // Three this minute: now the per-minute rule denies, until the next minute.
/// let denied = policy.acquire_at(1, 2 * SECOND).unwrap();
/// assert_eq!(denied.denied_by, Some(1));
/// assert_eq!(denied.decision.retry_after_ns, 58 * SECOND);
/// ```
#[derive(Debug)]
pub struct Policy {
    /// One limiter per rule, in the order given.
    rules: Box<[Limiter]>,
    /// The order the rules take a request in (indices into `rules`): the `givers` rules
    /// that can give units back, then those that cannot.
    order: Box<[usize]>,
    givers: usize,
}

/// How far [`Policy::take_each`] got.
enum Taken {
    /// Every rule admitted.
    All,
    /// The rule of this index denied; the rules before it gave back.
    Denied(usize),
    /// A rule could not decide; the rules before it gave back.
    Undecided,
}

/// A policy's decision: the combined [`Decision`], which rule denied, and each rule's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicyDecision {
    /// The policy's decision: `allowed` iff every rule admitted; `limit` and `remaining`
    /// the least over the rules, `retry_after_ns` and `reset_after_ns` the greatest (the
    /// request is admitted, and every rule full, once each rule is); `wait_ns` 0.
    pub decision: Decision,
    /// The first rule, in the order given, that denied the request; `None` when admitted.
    pub denied_by: Option<usize>,
    rules: [Decision; MAX_RULES],
    len: usize,
}

impl PolicyDecision {
    /// Each rule's own decision, in the order the rules were given. Admitted: what each
    /// rule decided, units taken. Denied: what each rule would decide on its own, with
    /// `remaining` and `reset_after_ns` of the state as it is, since nothing was taken.
    pub fn rules(&self) -> &[Decision] {
        &self.rules[..self.len]
    }
}

impl Policy {
    /// A policy of `rules`, each full at any time.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]: [`ConfigError::PolicyRules`] for no rule or more than
    /// [`MAX_RULES`], else the first invalid rule's reason.
    pub fn new(rules: &[Config]) -> Result<Self, Error> {
        if rules.is_empty() || rules.len() > MAX_RULES {
            return Err(Error::InvalidConfig(ConfigError::PolicyRules));
        }
        let rules: Box<[Limiter]> = rules.iter().map(Limiter::new).collect::<Result<_, _>>()?;
        let mut order: Box<[usize]> = (0..rules.len()).collect();
        // Stable: in the order given, those that give back first.
        order.sort_by_key(|&index| !rules[index].rule().gives_back());
        let givers = rules.iter().filter(|rule| rule.rule().gives_back()).count();
        Ok(Self {
            rules,
            order,
            givers,
        })
    }

    /// The rules, in the order given.
    pub fn rules(&self) -> impl ExactSizeIterator<Item = &Config> {
        self.rules.iter().map(Limiter::config)
    }

    /// The largest cost the policy can ever admit: the least of its rules' limits.
    pub fn limit(&self) -> u64 {
        self.least_limit()
    }

    /// Acquires `n` units now from every rule, or from none. `n == 0` only reports.
    ///
    /// # Errors
    /// [`Error::InsufficientCapacity`] if `n` exceeds a rule's limit.
    pub fn acquire(&self, n: u64) -> Result<PolicyDecision, Error> {
        self.acquire_at(n, time::now_ns())
    }

    /// [`acquire`](Self::acquire) at `now_ns`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(&self, n: u64, now_ns: u64) -> Result<PolicyDecision, Error> {
        self.check(n)?;
        let mut decisions = [Decision::default(); MAX_RULES];
        if n == 0 {
            for (decision, rule) in decisions.iter_mut().zip(self.rules.iter()) {
                *decision = rule.peek_at(0, now_ns);
            }
            return Ok(self.combined(decisions, None));
        }
        match self.take(n, now_ns, Some(&mut decisions)) {
            Ok(()) => Ok(self.combined(decisions, None)),
            Err(denying) => Ok(self.denial(n, now_ns, denying, decisions[denying])),
        }
    }

    /// Acquires `n` units now from every rule, or from none, and says only whether they
    /// were admitted.
    ///
    /// # Errors
    /// [`Error::InsufficientCapacity`] if `n` exceeds a rule's limit.
    pub fn try_acquire(&self, n: u64) -> Result<bool, Error> {
        self.check(n)?;
        if n == 0 {
            return Ok(true);
        }
        let time = Monotonic;
        // On the cheap clock's bounds where the rules settle there, as a limiter's
        // `try_acquire` does: each rule's outcome then holds at every instant within them.
        // A policy whose sliding logs need asking first (see `take`) takes the exact time.
        let bounds = if self.rules.len() - self.givers <= 1 {
            time.bounds()
        } else {
            None
        };
        if let Some(bounds) = bounds {
            // A rule the bounds leave undecided (an idle GCRA bucket) is decided at the
            // exact time, and so are the rules after it, if that time lies within the
            // bounds: the rules settled before it hold at that instant too.
            let mut exact = None;
            let taken = self.take_each(|_, rule| {
                if let Some(now) = exact {
                    return Some(rule.try_acquire_refundable_at(n, now));
                }
                rule.settle_refundable(n, bounds).or_else(|| {
                    let now = time.now_after(bounds);
                    (now <= bounds.latest).then(|| {
                        exact = Some(now);
                        rule.try_acquire_refundable_at(n, now)
                    })
                })
            });
            match taken {
                Taken::All => return Ok(true),
                Taken::Denied(_) => return Ok(false),
                Taken::Undecided => {}
            }
        }
        Ok(self.take(n, time.now(), None).is_ok())
    }

    /// [`try_acquire`](Self::try_acquire) at `now_ns`.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_at(&self, n: u64, now_ns: u64) -> Result<bool, Error> {
        self.check(n)?;
        Ok(n == 0 || self.take(n, now_ns, None).is_ok())
    }

    fn check(&self, n: u64) -> Result<(), Error> {
        self.rules
            .iter()
            .try_for_each(|rule| rule.rule().check(n, None))
    }

    /// Takes `1 ≤ n` units at `now_ns` from each rule in turn, each rule's decision in
    /// `decisions` if asked for (else only whether it admits, without the report's work).
    /// A rule that denies ends it: the rules before it give their units back, and the
    /// denying rule's index is the error.
    fn take(
        &self,
        n: u64,
        now_ns: u64,
        mut decisions: Option<&mut [Decision; MAX_RULES]>,
    ) -> Result<(), usize> {
        // The rules that cannot give back take last, the first of them before the others:
        // those others are asked first, so that (but for a concurrent request changing an
        // answer) none of them denies once one has taken.
        for &index in self.order[self.givers..].iter().skip(1) {
            let decision = self.rules[index].peek_at(n, now_ns);
            if !decision.allowed {
                if let Some(decisions) = decisions.as_deref_mut() {
                    decisions[index] = decision;
                }
                return Err(index);
            }
        }
        let taken = self.take_each(|index, rule| {
            let (allowed, refund) = match decisions.as_deref_mut() {
                Some(decisions) => {
                    let (decision, refund) = rule.acquire_refundable_at(n, now_ns);
                    decisions[index] = decision;
                    (decision.allowed, refund)
                }
                None => rule.try_acquire_refundable_at(n, now_ns),
            };
            Some((allowed, refund))
        });
        match taken {
            Taken::Denied(index) => Err(index),
            // Every step above decides, at the exact time.
            Taken::All | Taken::Undecided => Ok(()),
        }
    }

    /// Runs `step` on each rule in the order they take: its outcome (`Some((admitted,
    /// refund))`) or `None` when it cannot decide. A rule that denies or cannot decide
    /// ends it, and the rules before it give their units back.
    #[inline(always)]
    fn take_each(
        &self,
        mut step: impl FnMut(usize, &Limiter) -> Option<(bool, Option<RuleRefund<'_>>)>,
    ) -> Taken {
        // What each rule that took gives back, by its index.
        let mut refunds: [Option<RuleRefund<'_>>; MAX_RULES] = [None; MAX_RULES];
        for (position, &index) in self.order.iter().enumerate() {
            let outcome = step(index, &self.rules[index]);
            if let Some((true, refund)) = outcome {
                refunds[index] = refund;
                continue;
            }
            for &taken in self.order[..position].iter().rev() {
                if let Some(refund) = refunds[taken] {
                    self.rules[taken].refund(refund);
                }
            }
            return match outcome {
                Some(_) => Taken::Denied(index),
                None => Taken::Undecided,
            };
        }
        Taken::All
    }

    /// The report of a request of `n` units at `now_ns` that rule `denying` denied (with
    /// `denial`), after the rules before it gave their units back: each other rule's own
    /// decision on the state as it is.
    fn denial(&self, n: u64, now_ns: u64, denying: usize, denial: Decision) -> PolicyDecision {
        let mut decisions = [Decision::default(); MAX_RULES];
        for (index, (decision, rule)) in decisions.iter_mut().zip(self.rules.iter()).enumerate() {
            *decision = if index == denying {
                denial
            } else {
                let state = rule.peek_at(0, now_ns);
                let request = rule.peek_at(n, now_ns);
                Decision {
                    allowed: request.allowed,
                    retry_after_ns: request.retry_after_ns,
                    ..state
                }
            };
        }
        let denied_by = decisions[..self.rules.len()]
            .iter()
            .position(|decision| !decision.allowed);
        self.combined(decisions, denied_by)
    }

    fn combined(&self, rules: [Decision; MAX_RULES], denied_by: Option<usize>) -> PolicyDecision {
        let each = &rules[..self.rules.len()];
        let decision = Decision {
            allowed: denied_by.is_none(),
            limit: self.least_limit(),
            remaining: each.iter().map(|rule| rule.remaining).min().unwrap_or(0),
            retry_after_ns: each
                .iter()
                .map(|rule| rule.retry_after_ns)
                .max()
                .unwrap_or(0),
            reset_after_ns: each
                .iter()
                .map(|rule| rule.reset_after_ns)
                .max()
                .unwrap_or(0),
            wait_ns: 0,
        };
        PolicyDecision {
            decision,
            denied_by,
            rules,
            len: self.rules.len(),
        }
    }
}

impl Policy {
    /// Replaces the policy's rules, now: see [`set_rules_at`](Self::set_rules_at).
    ///
    /// # Errors
    /// As [`set_rules_at`](Self::set_rules_at).
    pub fn set_rules(&self, rules: &[Config]) -> Result<(), Error> {
        self.set_rules_at(rules, time::now_ns())
    }

    /// Replaces the policy's rules at `now_ns` (a customer changes plan), each rule in
    /// turn as [`Limiter::set_config_at`] replaces a limiter's, keeping what it has
    /// consumed. The new rules are as many as the old, each of the same algorithm as the
    /// one it replaces (a period of [`Config::FOREVER`] counts as the same), so that the
    /// order the rules take a request in stays.
    ///
    /// Each rule's step of a racing request is decided wholly under that rule's old or
    /// new configuration, so no rule ever admits past its limit; a request racing the
    /// change may see some rules already changed and others not yet.
    ///
    /// ```
    /// use rate::{Config, Policy};
    /// const SECOND: u64 = 1_000_000_000;
    /// // 2 a second and 3 a minute; a customer upgrades to 4 a second and 10 a minute.
    /// let policy = Policy::new(&[
    ///     Config::gcra(2, SECOND),
    ///     Config::fixed_window(3, 60 * SECOND),
    /// ])
    /// .unwrap();
    /// assert!(policy.acquire_at(2, 0).unwrap().decision.allowed);
    /// let upgrade = [Config::gcra(4, SECOND), Config::fixed_window(10, 60 * SECOND)];
    /// policy.set_rules_at(&upgrade, 0).unwrap();
    /// // The bucket's 0 tokens stay 0 (now 250 ms each); the window keeps its 2.
    /// assert_eq!(policy.acquire_at(0, 0).unwrap().rules()[1].remaining, 8);
    /// assert!(policy.acquire_at(1, 250_000_000).unwrap().decision.allowed);
    /// ```
    ///
    /// # Errors
    /// [`Error::InvalidConfig`]: the first invalid rule's reason, or
    /// [`ConfigError::LiveChange`] for another number of rules or a rule that cannot carry
    /// its state over (see [`Limiter::set_config_at`]). Then no rule changes.
    pub fn set_rules_at(&self, rules: &[Config], now_ns: u64) -> Result<(), Error> {
        if rules.len() != self.rules.len() {
            return Err(Error::InvalidConfig(ConfigError::LiveChange));
        }
        // Every rule is checked before any changes: whether a rule carries over depends
        // only on algorithms, which no change alters, so none of the changes below fails.
        for (rule, config) in self.rules.iter().zip(rules) {
            rule.rule().carries_to(&Decider::new(config)?)?;
        }
        for (rule, config) in self.rules.iter().zip(rules) {
            rule.set_config_at(config, now_ns)?;
        }
        Ok(())
    }

    /// The least of the rules' limits: the largest cost the policy can ever admit.
    fn least_limit(&self) -> u64 {
        self.rules
            .iter()
            .map(|rule| rule.rule().limit())
            .min()
            .unwrap_or(0)
    }
}
