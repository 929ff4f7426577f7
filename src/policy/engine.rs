//! The all-or-nothing decision every policy makes, over rules it sees through [`Rules`]:
//! a policy's own limiters ([`Policy`](super::Policy)), or a keyed policy's tables and
//! limiters for one key ([`KeyedPolicy`](super::KeyedPolicy)). The order it takes rules
//! in, and what concurrent callers may see, are in the parent module's docs.

use super::{PolicyDecision, MAX_RULES};
use crate::decider::Decider;
use crate::decision::Decision;
use crate::error::{CostsError, InsufficientCapacity};
use crate::state::{Acquire, Peek, Request, TryAcquire};
use std::cell::Cell;

/// A policy's rules, for one request: what the engine asks of rule number `rule`, as a
/// request of the state layer ([`Request`]: a peek, an acquire with or without the
/// report), and the give-back of what one took.
pub(super) trait Rules {
    /// What giving an admission back takes.
    type Refund: Copy;
    /// What a rule's state fails with: nothing for a policy's own limiters, a keyed
    /// rule's new key a full table.
    type Error;

    /// Runs `request` (checked by the caller against the rule's limit) on rule number
    /// `rule`: what it reports, with what giving its admission back takes put in
    /// `refund` if asked for and there is one (`refund` is left as it was otherwise).
    ///
    /// # Errors
    /// What the rule's state fails with ([`Rules::Error`]).
    fn swap<R: Request>(
        &self,
        rule: usize,
        request: R,
        refund: Option<&Cell<Option<Self::Refund>>>,
    ) -> Result<R::Out, Self::Error>;

    /// Gives an admission back, if nothing moved the rule's state on since.
    fn refund(&self, rule: usize, refund: Self::Refund);
}

/// The decision an acquire of `n` units of rule `rule` at `now` would make, nothing written.
#[inline(always)]
fn peek<R: Rules + ?Sized>(rules: &R, rule: usize, n: u64, now: u64) -> Result<Decision, R::Error> {
    rules.swap(rule, Peek(Acquire { now, n }), None)
}

/// What rule `rule` would decide of `n` units at `now_ns`, nothing taken: whether it
/// would admit them and when it would, with `remaining` and `reset_after_ns` of its state
/// as it is (the report of a rule a denied request took nothing from).
pub(super) fn unchanged<R: Rules + ?Sized>(
    rules: &R,
    rule: usize,
    n: u64,
    now: u64,
) -> Result<Decision, R::Error> {
    let state = peek(rules, rule, 0, now)?;
    let request = peek(rules, rule, n, now)?;
    Ok(Decision {
        allowed: request.allowed,
        retry_after_ns: request.retry_after_ns,
        ..state
    })
}

/// One cost per rule, in the order given: 0 leaves a rule out of the request.
pub(super) type Costs = [u64; MAX_RULES];

/// What a request costs each rule, by the rule's index: 0 leaves the rule out.
pub(super) trait Cost: Copy {
    /// The cost of rule number `rule`.
    fn of(self, rule: usize) -> u64;
}

impl Cost for &Costs {
    #[inline(always)]
    fn of(self, rule: usize) -> u64 {
        self[rule]
    }
}

/// The same cost for every rule: a request of `n` units, with no array to fill and read.
#[derive(Clone, Copy)]
pub(super) struct Uniform(pub(super) u64);

impl Cost for Uniform {
    #[inline(always)]
    fn of(self, _rule: usize) -> u64 {
        self.0
    }
}

/// How far [`Engine::take_each`] got.
pub(super) enum Taken {
    /// Every rule the request costs admitted.
    All,
    /// The rule of this index denied; the rules before it gave back.
    Denied(usize),
    /// A rule could not decide; the rules before it gave back.
    Undecided,
}

/// The least of `rules`' limits: the largest cost a policy of them can admit of each.
pub(super) fn least_limit(rules: impl Iterator<Item = Decider>) -> u64 {
    rules.map(|rule| rule.limit()).min().unwrap_or(0)
}

/// What a policy knows of its rules as they were built: the order they take a request
/// in (which a change of rule keeps), and the least of their limits (which a change may
/// lower: `Policy` checks the rules in force once one began).
#[derive(Debug)]
pub(super) struct Engine {
    /// Indices of the rules: the `givers` rules that can give units back, then those that
    /// cannot, each group in the order given.
    order: Box<[usize]>,
    givers: usize,
    /// The rules asked whether they would admit before any rule takes, besides the
    /// takers after the first: a keyed policy's global rules (see `policy/keyed.rs`).
    asked_first: [bool; MAX_RULES],
    /// The least of the rules' limits.
    least_limit: u64,
    len: usize,
}

impl Engine {
    /// The engine of a policy of `rules` (1 to [`MAX_RULES`], checked by the caller), each
    /// with whether to ask it first.
    pub(super) fn new(rules: impl ExactSizeIterator<Item = (Decider, bool)>) -> Self {
        let len = rules.len();
        let mut least_limit = u64::MAX;
        let mut gives_back = [false; MAX_RULES];
        let mut asked_first = [false; MAX_RULES];
        for (index, (rule, asked)) in rules.enumerate() {
            least_limit = least_limit.min(rule.limit());
            gives_back[index] = rule.gives_back();
            asked_first[index] = asked;
        }
        let mut order: Box<[usize]> = (0..len).collect();
        // Stable: in the order given, those that give back first.
        order.sort_by_key(|&index| !gives_back[index]);
        let givers = gives_back[..len].iter().filter(|&&gives| gives).count();
        Self {
            order,
            givers,
            asked_first,
            least_limit,
            len,
        }
    }

    /// The least of the rules' limits: the largest cost the policy can admit of each.
    #[inline(always)]
    pub(super) fn limit(&self) -> u64 {
        self.least_limit
    }

    /// How many rules the policy holds.
    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Checks a request's costs, one per rule, against the rules (`deciders`, in order).
    ///
    /// # Errors
    /// [`CostsError::CostCount`] if there are not as many costs as rules; the policy's
    /// acquire error `E` for a cost above its rule's limit.
    pub(super) fn costs<E: From<InsufficientCapacity>>(
        &self,
        deciders: impl Iterator<Item = Decider>,
        costs: &[u64],
    ) -> Result<Costs, CostsError<E>> {
        if costs.len() != self.len {
            return Err(CostsError::CostCount { costs: costs.len() });
        }
        let mut checked = [0; MAX_RULES];
        for ((slot, &cost), rule) in checked.iter_mut().zip(costs).zip(deciders) {
            rule.check(cost)
                .map_err(|why| CostsError::Acquire(E::from(why)))?;
            *slot = cost;
        }
        Ok(checked)
    }

    /// The same cost `n` for every rule.
    pub(super) fn uniform(&self, n: u64) -> Costs {
        let mut costs = [0; MAX_RULES];
        costs[..self.len].fill(n);
        costs
    }

    /// Whether a request of `costs` is a query: it costs no rule anything.
    #[inline(always)]
    pub(super) fn is_query(&self, costs: impl Cost) -> bool {
        (0..self.len).all(|rule| costs.of(rule) == 0)
    }

    /// How many rules that cannot give back the request costs: with more than one, all
    /// but the first are asked before any rule takes (see `take`).
    #[inline(always)]
    pub(super) fn takers(&self, costs: impl Cost) -> usize {
        self.order[self.givers..]
            .iter()
            .filter(|&&index| costs.of(index) > 0)
            .count()
    }

    /// The whole decision of a request of `costs` at `now_ns`: taken from every rule it
    /// costs, or from none.
    ///
    /// # Errors
    /// What a rule's step returns ([`Rules::Error`]), after
    /// the rules before it gave back.
    #[inline]
    pub(super) fn acquire_at<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: impl Cost,
        now_ns: u64,
    ) -> Result<PolicyDecision, R::Error> {
        let mut decisions = [Decision::default(); MAX_RULES];
        if self.is_query(costs) {
            for (index, decision) in decisions[..self.len].iter_mut().enumerate() {
                *decision = peek(rules, index, 0, now_ns)?;
            }
            return Ok(self.combined(decisions, costs, None));
        }
        // Each arm returns its own result: a denial's report is written where the caller
        // reads it, not copied out of an inner result.
        match self.take(rules, costs, now_ns, Some(&mut decisions))? {
            Ok(()) => {
                // The rules the request leaves out report their state.
                for (index, decision) in decisions[..self.len].iter_mut().enumerate() {
                    if costs.of(index) == 0 {
                        *decision = peek(rules, index, 0, now_ns)?;
                    }
                }
                Ok(self.combined(decisions, costs, None))
            }
            Err(denying) => self.denial(rules, costs, now_ns, denying, decisions[denying]),
        }
    }

    /// Whether a request of `costs` at `now_ns` is admitted: taken from every rule it
    /// costs, or from none.
    ///
    /// # Errors
    /// As [`acquire_at`](Self::acquire_at).
    #[inline]
    pub(super) fn try_acquire_at<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: impl Cost,
        now_ns: u64,
    ) -> Result<bool, R::Error> {
        Ok(self.take(rules, costs, now_ns, None)?.is_ok())
    }

    /// Takes `costs` at `now_ns` from each rule in turn, each rule's decision in
    /// `decisions` if asked for (else only whether it admits, without the report's work).
    /// A rule that denies ends it: the rules before it give their units back, and the
    /// denying rule's index is the inner error.
    #[inline]
    fn take<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: impl Cost,
        now_ns: u64,
        mut decisions: Option<&mut [Decision; MAX_RULES]>,
    ) -> Result<Result<(), usize>, R::Error> {
        // The rules that cannot give back take last, the first of them before the others:
        // those others are asked first, so that (but for a concurrent request changing an
        // answer) none of them denies once one has taken. So are the rules marked to be.
        let takers = self.order[self.givers..]
            .iter()
            .filter(|&&index| costs.of(index) > 0)
            .skip(1);
        let marked = self.order[..self.givers]
            .iter()
            .filter(|&&index| costs.of(index) > 0 && self.asked_first[index]);
        for &index in marked.chain(takers) {
            let decision = peek(rules, index, costs.of(index), now_ns)?;
            if !decision.allowed {
                if let Some(decisions) = decisions.as_deref_mut() {
                    decisions[index] = decision;
                }
                return Ok(Err(index));
            }
        }
        let taken = self.take_each(
            rules,
            costs,
            // Into each of `take_each`'s loops, as a policy's own step is.
            #[inline(always)]
            |index, n, refund| {
                Ok(Some(match decisions.as_deref_mut() {
                    Some(decisions) => {
                        let request = Acquire { now: now_ns, n };
                        let decision = rules.swap(index, request, Some(refund))?;
                        decisions[index] = decision;
                        decision.allowed
                    }
                    None => rules.swap(index, TryAcquire { now: now_ns, n }, Some(refund))?,
                }))
            },
        )?;
        Ok(match taken {
            Taken::Denied(index) => Err(index),
            // Every step above decides, at the exact time.
            Taken::All | Taken::Undecided => Ok(()),
        })
    }

    /// Runs `step` on each rule the request costs, in the order they take, with its cost
    /// and where to put what giving an admission back takes: its outcome (`Some(admitted)`),
    /// `None` when it cannot decide, or an error. A rule that denies, cannot decide or
    /// fails ends it, and the rules before it give their units back.
    #[inline(always)]
    pub(super) fn take_each<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: impl Cost,
        step: impl FnMut(usize, u64, &Cell<Option<R::Refund>>) -> Result<Option<bool>, R::Error>,
    ) -> Result<Taken, R::Error> {
        // The common policies of one and two rules by an order of known length: the loop
        // unrolled, and no more places for refunds than rules.
        match self.order.len() {
            1 => take_in_order::<1, _>(rules, costs, &self.order[..1], step),
            2 => take_in_order::<2, _>(rules, costs, &self.order[..2], step),
            _ => take_in_order::<MAX_RULES, _>(rules, costs, &self.order, step),
        }
    }

    /// The report of a request of `costs` at `now_ns` that rule `denying` denied (with
    /// `denial`), after the rules before it gave their units back: each other rule's own
    /// decision on the state as it is.
    fn denial<R: Rules + ?Sized>(
        &self,
        rules: &R,
        costs: impl Cost,
        now_ns: u64,
        denying: usize,
        denial: Decision,
    ) -> Result<PolicyDecision, R::Error> {
        let mut decisions = [Decision::default(); MAX_RULES];
        for (index, decision) in decisions[..self.len].iter_mut().enumerate() {
            *decision = if index == denying {
                denial
            } else {
                unchanged(rules, index, costs.of(index), now_ns)?
            };
        }
        let denied_by = decisions[..self.len]
            .iter()
            .position(|decision| !decision.allowed);
        Ok(self.combined(decisions, costs, denied_by))
    }

    /// The policy's decision from its rules' own: combined over the rules the request
    /// costs (over all of them for a query).
    fn combined(
        &self,
        rules: [Decision; MAX_RULES],
        costs: impl Cost,
        denied_by: Option<usize>,
    ) -> PolicyDecision {
        let query = self.is_query(costs);
        PolicyDecision::combine(
            rules,
            self.len,
            |index| (query || costs.of(index) > 0).then_some(rules[index].limit),
            denied_by,
        )
    }
}

/// [`Engine::take_each`] over the rules of `order`, at most `N`, in turn.
#[inline(always)]
fn take_in_order<const N: usize, R: Rules + ?Sized>(
    rules: &R,
    costs: impl Cost,
    order: &[usize],
    mut step: impl FnMut(usize, u64, &Cell<Option<R::Refund>>) -> Result<Option<bool>, R::Error>,
) -> Result<Taken, R::Error> {
    // What each rule that took gives back, by its place in `order`: each step puts its
    // refund in its own place, and nothing reads it back unless a later rule denies (a
    // read of words just written one by one would wait for them to reach the cache).
    let held: [Cell<Option<R::Refund>>; N] = [const { Cell::new(None) }; N];
    for (position, (&index, refund)) in order.iter().zip(&held).enumerate() {
        let n = costs.of(index);
        if n == 0 {
            continue;
        }
        let ended = match step(index, n, refund) {
            Ok(Some(true)) => continue,
            Ok(Some(false)) => Ok(Taken::Denied(index)),
            Ok(None) => Ok(Taken::Undecided),
            Err(error) => Err(error),
        };
        for (&taken, refund) in order.iter().zip(&held).take(position).rev() {
            if let Some(refund) = refund.get() {
                rules.refund(taken, refund);
            }
        }
        return ended;
    }
    Ok(Taken::All)
}
