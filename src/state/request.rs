//! What a caller asks of a state, as pure decision functions: each decides on what a store
//! read, saying what to report and what to store. A store runs any of them through its one
//! read-decide-swap loop ([`Stored::swap`](super::Stored::swap)); an acquire, a query, a
//! peek, a report-free acquire and a decision for an interval of instants differ only in
//! the request passed, never in the store.

use super::Refund;
use crate::algorithm::Algorithm;
use crate::decision::Decision;
use crate::time::Bounds;

/// A decision function. Every method is a function of its arguments alone, so a store may
/// run it again on whatever state it ends up swapping from.
pub(crate) trait Request: Copy {
    /// What the caller is told.
    type Out;

    /// Whether the caller keeps what giving an admission back takes ([`keep`]): only
    /// then does a store work it out.
    ///
    /// [`keep`]: Self::keep
    const REFUNDS: bool = false;

    /// Whether the request may write: a keyed table inserts a missing key only for one
    /// that may, and decides one that may not on a fresh state.
    const WRITES: bool = true;

    /// The units asked for, as checked (`n ≤ limit`) by the caller.
    fn units(self) -> u64;

    /// The time the request decides at (a settle: the latest of its bounds, where a
    /// denial at any of them is a denial).
    fn time(self) -> u64;

    /// What the caller is told of `report`, the full report of this request decided
    /// another way: a keyed table's insert of a missing key, or a denial for good (a
    /// policy's rule whose change lowered its limit below the request, `limiter.rs`).
    fn of_report(self, report: Decision) -> Self::Out;

    /// Decides on `state`, as `algorithm` reads it: what to report, and the update to
    /// store (`None`: nothing is written).
    fn decide<S: ?Sized, A: Algorithm<S>>(
        self,
        algorithm: &A,
        state: &S,
    ) -> (Self::Out, Option<A::Update>);

    /// Whether `out`, decided without an update on the `reads`-th read of a state whose
    /// words a store reads one by one (the log's ring), can stand: `false` asks the store
    /// to read again. It may amend `out`. Stores that read their state at once never ask.
    #[inline(always)]
    fn stands(self, _out: &mut Self::Out, _reads: u32) -> bool {
        true
    }

    /// Keeps what giving back the admission a store just swapped in takes, if the state can
    /// give it back ([`REFUNDS`](Self::REFUNDS) requests only).
    #[inline(always)]
    fn keep(self, _refund: Refund) {}
}

/// Acquires `n` units at `now` (`n == 0` queries), with the full report.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Acquire {
    pub(crate) now: u64,
    pub(crate) n: u64,
}

/// How many reads of a denial that reports room for the request an [`Acquire`] takes before
/// it stops trusting them (see [`Acquire::stands`]).
const INCONSISTENT_READS: u32 = 8;

impl Request for Acquire {
    type Out = Decision;

    #[inline(always)]
    fn units(self) -> u64 {
        self.n
    }

    #[inline(always)]
    fn time(self) -> u64 {
        self.now
    }

    #[inline(always)]
    fn of_report(self, report: Decision) -> Decision {
        report
    }

    #[inline(always)]
    fn decide<S: ?Sized, A: Algorithm<S>>(
        self,
        algorithm: &A,
        state: &S,
    ) -> (Decision, Option<A::Update>) {
        let outcome = algorithm.decide(state, self.now, self.n);
        (outcome.decision, outcome.update)
    }

    /// A denial that reports room for the request read a pending entry before and after it
    /// was written: read again. Entries that read inconsistently read after read can only
    /// be bytes another process wrote (timestamps that do not grow along positions): after
    /// [`INCONSISTENT_READS`] reads, stop, and report what a denial means.
    #[inline(always)]
    fn stands(self, decision: &mut Decision, reads: u32) -> bool {
        if decision.allowed || decision.remaining < self.n {
            return true;
        }
        if reads < INCONSISTENT_READS {
            return false;
        }
        decision.remaining = self.n - 1;
        true
    }
}

/// The decision an [`Acquire`] would make, with nothing written: `remaining` and
/// `reset_after_ns` as if the units were taken.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Peek(pub(crate) Acquire);

impl Request for Peek {
    type Out = Decision;
    const WRITES: bool = false;

    #[inline(always)]
    fn units(self) -> u64 {
        self.0.n
    }

    #[inline(always)]
    fn time(self) -> u64 {
        self.0.now
    }

    #[inline(always)]
    fn of_report(self, report: Decision) -> Decision {
        report
    }

    #[inline(always)]
    fn decide<S: ?Sized, A: Algorithm<S>>(
        self,
        algorithm: &A,
        state: &S,
    ) -> (Decision, Option<A::Update>) {
        (self.0.decide(algorithm, state).0, None)
    }
}

/// Acquires `1 ≤ n` units at `now`, reporting only whether they were admitted (without the
/// report's work: GCRA's division, the log's search).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TryAcquire {
    pub(crate) now: u64,
    pub(crate) n: u64,
}

impl Request for TryAcquire {
    type Out = bool;

    #[inline(always)]
    fn units(self) -> u64 {
        self.n
    }

    #[inline(always)]
    fn time(self) -> u64 {
        self.now
    }

    #[inline(always)]
    fn of_report(self, report: Decision) -> bool {
        report.allowed
    }

    #[inline(always)]
    fn decide<S: ?Sized, A: Algorithm<S>>(
        self,
        algorithm: &A,
        state: &S,
    ) -> (bool, Option<A::Update>) {
        let next = algorithm.try_decide(state, self.now, self.n);
        (next.is_some(), next)
    }
}

/// Acquires `1 ≤ n` units for every instant within `bounds` at once: `Some(allowed)` if
/// every instant gives that outcome and the same new state (which is then stored), `None`
/// (nothing written) if they do not.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settle {
    pub(crate) bounds: Bounds,
    pub(crate) n: u64,
}

impl Request for Settle {
    type Out = Option<bool>;

    #[inline(always)]
    fn units(self) -> u64 {
        self.n
    }

    #[inline(always)]
    fn time(self) -> u64 {
        self.bounds.latest
    }

    #[inline(always)]
    fn of_report(self, report: Decision) -> Option<bool> {
        Some(report.allowed)
    }

    #[inline(always)]
    fn decide<S: ?Sized, A: Algorithm<S>>(
        self,
        algorithm: &A,
        state: &S,
    ) -> (Option<bool>, Option<A::Update>) {
        let Bounds { earliest, latest } = self.bounds;
        algorithm
            .settle(state, earliest, latest, self.n)
            .into_parts()
    }
}

/// A request whose caller keeps what giving its admission back takes (a policy's step,
/// `policy.rs`): `keep` is handed it, once, if there is one (not for a denial, a query, or
/// a state that cannot give back).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Refundable<R, K> {
    pub(crate) request: R,
    pub(crate) keep: K,
}

impl<R: Request, K: Fn(Refund) + Copy> Request for Refundable<R, K> {
    type Out = R::Out;
    const REFUNDS: bool = true;
    const WRITES: bool = R::WRITES;

    #[inline(always)]
    fn units(self) -> u64 {
        self.request.units()
    }

    #[inline(always)]
    fn time(self) -> u64 {
        self.request.time()
    }

    #[inline(always)]
    fn of_report(self, report: Decision) -> R::Out {
        self.request.of_report(report)
    }

    #[inline(always)]
    fn decide<S: ?Sized, A: Algorithm<S>>(
        self,
        algorithm: &A,
        state: &S,
    ) -> (R::Out, Option<A::Update>) {
        self.request.decide(algorithm, state)
    }

    #[inline(always)]
    fn stands(self, out: &mut R::Out, reads: u32) -> bool {
        self.request.stands(out, reads)
    }

    #[inline(always)]
    fn keep(self, refund: Refund) {
        (self.keep)(refund);
    }
}
