//! Counts of the requests a limiter, keyed table or policy decided, by outcome
//! (docs/metrics.md, counters): off until asked for, then one atomic add a request.
//!
//! Each request adds one to exactly one word: admitted, table full, or denied by rule `i`
//! (a limiter or a table is rule 0). The events are disjoint, so any reading of the words
//! is a consistent snapshot: every request it counts is counted once, in one outcome, and
//! the totals it derives (denied, the sum over the rules) never disagree with the parts.
//! A shadow rule's would-be denial is counted beside the request's own outcome, in a
//! word of its own.
//!
//! The words are striped by thread, so threads deciding on different keys of one table
//! do not all write one cache line: a thread picks its stripe from the address of its
//! stack, which differs between threads and needs no thread-local lookup (a call through
//! the dynamic linker in a shared library). Two threads on one stripe only share a line;
//! the add is atomic, so no count is lost.

use crate::sync::CountAtomicU64 as AtomicU64;
use crate::sync::Ordering::Relaxed;
use std::sync::OnceLock;

/// The most rules counted apart: a policy's most ([`MAX_RULES`](crate::MAX_RULES),
/// which `policy.rs` checks is this).
pub(crate) const RULES: usize = 8;

/// Stripes of words: a power of two, enough that a few busy threads rarely share one.
const STRIPES: usize = 16;

const ADMITTED: usize = 0;
const TABLE_FULL: usize = 1;
/// Then, per rule: the requests it denied, first in the order given.
const DENIED_BY: usize = 2;
/// Then, per rule: the requests it would have denied, had it not been shadow.
const SHADOW_DENIED_BY: usize = DENIED_BY + RULES;
const WORDS: usize = SHADOW_DENIED_BY + RULES;

/// One stripe's words, on lines of their own.
#[repr(align(128))]
struct Stripe([AtomicU64; WORDS]);

/// A counting handle's words, once counting is on.
struct Words {
    stripes: Box<[Stripe]>,
}

/// The counts of one handle: none until [`enable`](Self::enable), so that a handle that
/// is not counted pays one load and a branch a request.
#[derive(Default)]
pub(crate) struct Counters {
    words: OnceLock<Words>,
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters")
            .field("enabled", &self.words.get().is_some())
            .finish()
    }
}

/// How many requests a limiter, keyed table or policy decided since counting began, by
/// outcome (docs/metrics.md, counters). Queries (`n == 0`) and requests refused for
/// their size (`InsufficientCapacity`) are not counted: they decide nothing.
///
/// ```
/// use librate::{Config, Instant, Limiter};
/// use std::time::Duration;
/// let limiter = Limiter::new(&Config::fixed_window(2, Duration::from_secs(1))).unwrap();
/// assert_eq!(limiter.counts(), None); // off until asked for
/// limiter.enable_counts();
/// for _ in 0..3 {
///     limiter.try_acquire_at(1, Instant::ZERO).unwrap();
/// }
/// let counts = limiter.counts().unwrap();
/// assert_eq!((counts.admitted, counts.denied), (2, 1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Counts {
    /// Requests admitted.
    pub admitted: u64,
    /// Requests denied by the limit: the sum of [`rules`](Self::rules)' `denied`.
    pub denied: u64,
    /// Keyed only: requests for a new key refused because the table was full (nothing
    /// was decided; the caller failed open or closed).
    pub table_full: u64,
    rules: [RuleCounts; RULES],
    len: usize,
}

/// One rule's counts in a [`Counts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct RuleCounts {
    /// Requests this rule denied: it was the first rule, in the order given, to deny
    /// them (the binding rule, the one a 429 names).
    pub denied: u64,
    /// A shadow rule's requests it would have denied, had it been enforced
    /// (docs/policies.md, shadow rules); 0 for an enforced rule.
    pub shadow_denied: u64,
}

impl Counts {
    /// Each rule's counts, in the order the rules were given: one for a limiter or a
    /// keyed table, one a rule for a policy.
    pub fn rules(&self) -> &[RuleCounts] {
        &self.rules[..self.len]
    }
}

/// A decision's outcome, as the counts see it.
pub(crate) trait Outcome {
    /// Whether the request was admitted.
    fn admitted(&self) -> bool;
}

impl Outcome for bool {
    #[inline(always)]
    fn admitted(&self) -> bool {
        *self
    }
}

impl Outcome for crate::Decision {
    #[inline(always)]
    fn admitted(&self) -> bool {
        self.allowed
    }
}

impl Counters {
    /// Turns counting on, from this call on; counting that is on stays on.
    pub(crate) fn enable(&self) {
        self.words.get_or_init(|| Words {
            stripes: (0..STRIPES)
                .map(|_| Stripe(std::array::from_fn(|_| AtomicU64::new(0))))
                .collect(),
        });
    }

    /// The counts so far, of `rules` rules; `None` while counting is off.
    pub(crate) fn counts(&self, rules: usize) -> Option<Counts> {
        let words = self.words.get()?;
        // Relaxed: each word is read once, and every request counted in one word only.
        let sum = |word: usize| -> u64 {
            let each = words
                .stripes
                .iter()
                .map(|stripe| stripe.0[word].load(Relaxed));
            each.fold(0, u64::wrapping_add)
        };
        let len = rules.min(RULES);
        let mut counts = Counts {
            admitted: sum(ADMITTED),
            table_full: sum(TABLE_FULL),
            len,
            ..Counts::default()
        };
        for (rule, each) in counts.rules[..len].iter_mut().enumerate() {
            each.denied = sum(DENIED_BY + rule);
            each.shadow_denied = sum(SHADOW_DENIED_BY + rule);
            counts.denied = counts.denied.wrapping_add(each.denied);
        }
        Some(counts)
    }

    /// Counts `outcome`, a request of `n` units of a limiter or a table (rule 0), if
    /// counting is on and the request decided something. Inline, only the check that
    /// counting is on; counting itself is out of line.
    #[inline(always)]
    pub(crate) fn count<T: Outcome, E>(&self, n: u64, outcome: &Result<T, E>) {
        if let Some(words) = self.words.get() {
            words.count(n, outcome.as_ref().ok().map(Outcome::admitted));
        }
    }

    /// Counts a request of a policy: admitted, or denied by rule `denied_by`; and each
    /// shadow rule in `shadow_denied` (bit `i` for rule `i`) as one that would have
    /// denied it.
    #[inline(always)]
    pub(crate) fn count_policy(&self, denied_by: Option<usize>, shadow_denied: u32) {
        if let Some(words) = self.words.get() {
            words.add(denied_by.map_or(ADMITTED, |rule| DENIED_BY + rule.min(RULES - 1)));
            for rule in (0..RULES).filter(|rule| shadow_denied >> rule & 1 == 1) {
                words.add(SHADOW_DENIED_BY + rule);
            }
        }
    }

    /// Counts `outcome`, a request of `n` units of a keyed table, as [`count`](Self::count)
    /// does, or as a full table's refusal if `table_full` says its error is one. Inline,
    /// only the check that counting is on, made once for either.
    #[inline(always)]
    pub(crate) fn count_keyed<T: Outcome, E>(
        &self,
        n: u64,
        outcome: &Result<T, E>,
        table_full: impl Fn(&E) -> bool,
    ) {
        if let Some(words) = self.words.get() {
            match outcome {
                Err(error) if table_full(error) => words.add(TABLE_FULL),
                decided => words.count(n, decided.as_ref().ok().map(Outcome::admitted)),
            }
        }
    }

    /// Counts a request for a new key refused because the table was full.
    #[inline]
    pub(crate) fn count_table_full(&self) {
        if let Some(words) = self.words.get() {
            words.add(TABLE_FULL);
        }
    }

    /// Whether counting is on.
    #[inline(always)]
    pub(crate) fn enabled(&self) -> bool {
        self.words.get().is_some()
    }
}

impl Words {
    /// Counts a request of `n` units that was admitted or not, or (`None`) refused
    /// undecided.
    #[cold]
    #[inline(never)]
    fn count(&self, n: u64, admitted: Option<bool>) {
        match (n, admitted) {
            (1.., Some(true)) => self.add(ADMITTED),
            (1.., Some(false)) => self.add(DENIED_BY),
            _ => {}
        }
    }

    #[inline(always)]
    fn add(&self, word: usize) {
        // Relaxed: a count orders nothing; readers only sum.
        self.stripes[stripe()].0[word].fetch_add(1, Relaxed);
    }
}

/// This thread's stripe: its stack's address, hashed. Threads' stacks lie at least a
/// guard page and a stack apart, so their addresses above the low bits differ; within a
/// thread the address moves with the call depth, which only moves the stripe, never a
/// count.
#[inline(always)]
fn stripe() -> usize {
    let here = 0u8;
    let address = std::ptr::addr_of!(here) as usize as u64;
    // Fibonacci hashing of the address's 64 KiB page: the top bits of the product.
    let hashed = (address >> 16).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (hashed >> (64 - STRIPES.trailing_zeros())) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_nothing_until_enabled_then_each_outcome_once() {
        let counters = Counters::default();
        counters.count(1, &Ok::<bool, ()>(true));
        assert_eq!(counters.counts(1), None);
        counters.enable();
        counters.count(1, &Ok::<bool, ()>(true));
        counters.count(3, &Ok::<bool, ()>(false));
        counters.count(0, &Ok::<bool, ()>(true)); // a query: not counted
        counters.count(1, &Err::<bool, ()>(())); // refused for its size: not counted
        counters.count_table_full();
        counters.enable(); // on stays on, counts kept
        let counts = counters.counts(1).unwrap();
        assert_eq!(
            (counts.admitted, counts.denied, counts.table_full),
            (1, 1, 1)
        );
        assert_eq!(
            counts.rules(),
            [RuleCounts {
                denied: 1,
                shadow_denied: 0
            }]
        );
    }

    #[test]
    fn a_keyed_table_counts_a_full_table_apart() {
        let counters = Counters::default();
        let full = |error: &bool| *error;
        counters.count_keyed(1, &Err::<bool, bool>(true), full);
        assert_eq!(counters.counts(1), None);
        counters.enable();
        counters.count_keyed(1, &Ok::<bool, bool>(true), full);
        counters.count_keyed(1, &Ok::<bool, bool>(false), full);
        counters.count_keyed(0, &Ok::<bool, bool>(false), full); // a query: not counted
        counters.count_keyed(1, &Err::<bool, bool>(false), full); // refused for its size
        counters.count_keyed(1, &Err::<bool, bool>(true), full); // a full table
        let counts = counters.counts(1).unwrap();
        assert_eq!(
            (counts.admitted, counts.denied, counts.table_full),
            (1, 1, 1)
        );
    }

    #[test]
    fn a_policy_counts_the_binding_rule_and_shadow_denials() {
        let counters = Counters::default();
        counters.enable();
        counters.count_policy(None, 0b010);
        counters.count_policy(Some(2), 0b011);
        counters.count_policy(Some(2), 0);
        counters.count_policy(Some(0), 0);
        let counts = counters.counts(3).unwrap();
        assert_eq!((counts.admitted, counts.denied), (1, 3));
        let denied: Vec<_> = counts.rules().iter().map(|rule| rule.denied).collect();
        assert_eq!(denied, [1, 0, 2]);
        let shadow: Vec<_> = counts
            .rules()
            .iter()
            .map(|rule| rule.shadow_denied)
            .collect();
        assert_eq!(shadow, [1, 2, 0]);
    }

    #[test]
    fn threads_on_shared_stripes_lose_no_count() {
        let counters = Counters::default();
        counters.enable();
        std::thread::scope(|scope| {
            for thread in 0..32u64 {
                let counters = &counters;
                scope.spawn(move || {
                    for request in 0..1000u64 {
                        let admitted = (thread + request) % 4 != 0;
                        counters.count(1, &Ok::<bool, ()>(admitted));
                    }
                });
            }
        });
        let counts = counters.counts(1).unwrap();
        assert_eq!((counts.admitted, counts.denied), (24_000, 8_000));
    }
}
