//! Waiting until admitted (docs/rust.md, Waiting): `until_ready` sleeps the thread and
//! `until_ready_async` the task, for at most a given wait, on a limiter, a key of a
//! keyed table, a policy or a key of a keyed policy. A wait that gives up has taken
//! nothing.
//!
//! - **GCRA waits in its queue**: one reserve (docs/decision.md, Reserve) willing to wait
//!   what is left of the maximum, then a sleep of the decision's `wait_ns`. A reserve
//!   denied takes nothing: the wait gives up at once, with that denial.
//! - **The others have no queue** (the window algorithms, the log, policies): acquire; if
//!   denied, and the denial's `retry_after_ns` is within what is left of the maximum,
//!   sleep it and acquire again; else give up with that denial. Nothing is held while
//!   sleeping.
//! - **An async wait dropped while its reserve sleeps** (a cancelled task, a timeout)
//!   gives the reserved units back with the core's refund (`state/refund.rs`), as a
//!   policy's step gives back: exactly, unless a later request moved the state on since
//!   (a reserve queued behind it), in which case they stay taken, as if admitted. One
//!   race is not exact: a [`Limiter::reset`](crate::Limiter::reset) lowers the TAT, and
//!   should the admissions after it bring the TAT to exactly the nanosecond the reserve
//!   stored, the give-back lands and returns units they took (`state/refund.rs`: a
//!   policy never resets its rules). A keyed table's reset never lowers a slot's word
//!   (`keyed/give_back.rs`), so a key's give-back is exact.
//!
//! Every step reads librate's clock ([`now_ns`](crate::now_ns)): a wait has no `_at`
//! form. `sleep.rs` is the async sleep, on tokio or on `timer.rs`'s thread; `limiters.rs`
//! and `policies.rs` are the public methods.

mod limiters;
mod policies;
mod sleep;
mod timer;

use crate::decision::Decision;
use crate::error::{ReserveError, WaitError};
use crate::policy::PolicyDecision;
use crate::time;
use std::convert::Infallible;
use std::time::Duration;

/// What a reserve of `W` gives: its decision, with what giving its admission back takes
/// if there is one, or its error.
type Reserved<W> = Result<
    (<W as Waited>::Decided, Option<<W as Waited>::Refund>),
    ReserveError<<W as Waited>::Error>,
>;

/// What a wait asks of a limiter, of a key of a table, or of a policy.
trait Waited {
    /// The decision it reports.
    type Decided: Outcome;
    /// What giving back a reserve's admission takes.
    type Refund: Copy;
    /// What its acquire fails with.
    type Error;

    /// Reserves `n` units at `now_ns` in a GCRA queue, for a caller willing to wait at
    /// most `max_wait_ns`, with what giving them back takes if admitted.
    ///
    /// # Errors
    /// [`ReserveError::Unsupported`] where there is no queue (the wait then acquires), or
    /// the acquire's error.
    fn reserve_at(&self, n: u64, now_ns: u64, max_wait_ns: u64) -> Reserved<Self>;

    /// Acquires `n` units at `now_ns`.
    ///
    /// # Errors
    /// The acquire's.
    fn acquire_at(&self, n: u64, now_ns: u64) -> Result<Self::Decided, Self::Error>;

    /// Gives back what a reserve took, as far as no later request depends on it.
    fn refund(&self, refund: Self::Refund);
}

/// A subject without a queue (a policy, a policy's key), waited on by its acquire.
struct Acquiring<F>(F);

impl<D: Outcome, E, F: Fn(u64, u64) -> Result<D, E>> Waited for Acquiring<F> {
    type Decided = D;
    type Refund = Infallible;
    type Error = E;

    fn reserve_at(
        &self,
        _: u64,
        _: u64,
        _: u64,
    ) -> Result<(D, Option<Infallible>), ReserveError<E>> {
        Err(ReserveError::Unsupported)
    }

    fn acquire_at(&self, n: u64, now_ns: u64) -> Result<D, E> {
        (self.0)(n, now_ns)
    }

    fn refund(&self, refund: Infallible) {
        match refund {}
    }
}

/// What a wait reads of a decision: the combined one, for a policy.
trait Outcome: Copy {
    fn decision(&self) -> &Decision;
}

impl Outcome for Decision {
    fn decision(&self) -> &Decision {
        self
    }
}

impl Outcome for PolicyDecision {
    fn decision(&self) -> &Decision {
        &self.decision
    }
}

/// Where a wait stands after one decision.
enum Step<D, R> {
    /// Admitted at once, or given up: the answer.
    Done(D),
    /// Admitted in the queue: sleep the `u64` ns out, then answer; the refund, if any,
    /// gives the units back if the wait is abandoned meanwhile.
    Queued(D, u64, Option<R>),
    /// Denied, and admitted after the `u64` ns if nothing else comes: sleep, then decide
    /// again.
    Retry(u64),
}

/// One wait: its deadline on librate's clock, and whether its subject may have a queue.
struct Wait {
    deadline_ns: u64,
    queue: bool,
}

impl Wait {
    fn start(max_wait: Duration) -> Self {
        let max_wait_ns = u64::try_from(max_wait.as_nanos()).unwrap_or(u64::MAX);
        Self {
            deadline_ns: time::now_ns().saturating_add(max_wait_ns),
            queue: true,
        }
    }

    /// Decides `n` units for `waited` now, within what is left of the wait.
    fn step<W: Waited>(
        &mut self,
        waited: &W,
        n: u64,
    ) -> Result<Step<W::Decided, W::Refund>, W::Error> {
        let now_ns = time::now_ns();
        let left = self.deadline_ns.saturating_sub(now_ns);
        if self.queue {
            match waited.reserve_at(n, now_ns, left) {
                Ok((decided, refund)) => {
                    let wait_ns = decided.decision().wait_ns;
                    return Ok(if wait_ns == 0 {
                        Step::Done(decided)
                    } else {
                        Step::Queued(decided, wait_ns, refund)
                    });
                }
                Err(ReserveError::Unsupported) => self.queue = false,
                Err(ReserveError::Acquire(why)) => return Err(why),
            }
        }
        let decided = waited.acquire_at(n, now_ns)?;
        let decision = decided.decision();
        Ok(if decision.allowed || decision.retry_after_ns > left {
            Step::Done(decided)
        } else {
            // At least a nanosecond: a denial always has a wait, and a loop must not spin.
            Step::Retry(decision.retry_after_ns.max(1))
        })
    }
}

/// Waits on the thread until `waited` admits `n` units, for at most `max_wait`.
fn until_ready<W: Waited>(waited: &W, n: u64, max_wait: Duration) -> Result<W::Decided, W::Error> {
    let mut wait = Wait::start(max_wait);
    loop {
        match wait.step(waited, n)? {
            Step::Done(decided) => return Ok(decided),
            Step::Queued(decided, wait_ns, _) => {
                std::thread::sleep(Duration::from_nanos(wait_ns));
                return Ok(decided);
            }
            Step::Retry(retry_ns) => std::thread::sleep(Duration::from_nanos(retry_ns)),
        }
    }
}

/// [`until_ready`], sleeping the task: dropped while queued, it gives the units back.
async fn until_ready_async<W: Waited>(
    waited: &W,
    n: u64,
    max_wait: Duration,
) -> Result<W::Decided, WaitError<W::Error>> {
    let mut wait = Wait::start(max_wait);
    loop {
        match wait.step(waited, n)? {
            Step::Done(decided) => return Ok(decided),
            Step::Queued(decided, wait_ns, refund) => {
                let held = Held { waited, refund };
                sleep::sleep(wait_ns).await.map_err(WaitError::Timer)?;
                held.keep();
                return Ok(decided);
            }
            Step::Retry(retry_ns) => sleep::sleep(retry_ns).await.map_err(WaitError::Timer)?,
        }
    }
}

/// Units a queued wait holds while it sleeps: given back when dropped, unless kept.
struct Held<'a, W: Waited> {
    waited: &'a W,
    refund: Option<W::Refund>,
}

impl<W: Waited> Held<'_, W> {
    /// The wait ended: the units are the caller's.
    fn keep(mut self) {
        self.refund = None;
    }
}

impl<W: Waited> Drop for Held<'_, W> {
    fn drop(&mut self) {
        if let Some(refund) = self.refund.take() {
            self.waited.refund(refund);
        }
    }
}
