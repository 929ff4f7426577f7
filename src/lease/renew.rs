//! A holder's renewals (docs/leases.md): what it asks the lease script, and how it takes
//! the answer, a GCRA share's or a window's count.

use super::grant::{Grant, GrantStatus, Renewal, ReplyError};
use super::holder::{HolderState, LeaseHolder, Local};
use super::rule::SCALE;
use super::share::{carried, emptied, placeholder};
use super::words;
use crate::sync::Ordering::*;
use crate::time::Instant;

impl LeaseHolder {
    /// The renewal to send now, the script reading the server's clock.
    pub fn renewal(&self) -> Renewal {
        self.renewal_with(Instant::now(), false)
    }

    /// The renewal to send at `at` on the caller's timeline, which the script decides at
    /// (simulations; every holder of a rule on one timeline).
    pub fn renewal_at(&self, at: Instant) -> Renewal {
        self.renewal_with(at, true)
    }

    fn renewal_with(&self, sent_at: Instant, at: bool) -> Renewal {
        let _turn = self.turn();
        // Relaxed: the count's exactness is a renewal's; the words below are the
        // renewer's alone.
        let units = self.words.get(words::REQUESTED).swap(0, Relaxed);
        let last_sent = self.words.get(words::LAST_SENT);
        let demand = match last_sent.load(Relaxed) {
            // Before any count: a fair share of whatever is left.
            0 => SCALE,
            last => {
                let last = Instant::from_nanos(last - 1);
                self.rule
                    .demand(units, sent_at.saturating_duration_since(last))
            }
        };
        let renewal = Renewal::renew(&self.rule, &self.name, demand, sent_at, at);
        last_sent.store(renewal.sent_at.as_nanos().saturating_add(1), Relaxed);
        self.books.sent(renewal.sent_at.as_nanos());
        renewal
    }

    /// Applies the script's answer to `renewal`, now.
    ///
    /// # Errors
    /// A [`ReplyError`] for an answer the script never gives; nothing is applied.
    pub fn apply(&self, renewal: &Renewal, grant: &Grant) -> Result<HolderState, ReplyError> {
        self.apply_at(renewal, grant, Instant::now())
    }

    /// Applies the script's answer to `renewal` at `at`: the share, held until the lease's
    /// end less the [margin](crate::LeaseRule::margin), counted from when the renewal was asked
    /// for. A lease that follows one still held keeps the share's tokens (capped at the new
    /// burst); any other starts empty.
    ///
    /// # Errors
    /// As [`apply`](Self::apply).
    pub fn apply_at(
        &self,
        renewal: &Renewal,
        grant: &Grant,
        at: Instant,
    ) -> Result<HolderState, ReplyError> {
        grant.checked(&self.rule)?;
        let _turn = self.turn();
        // Held for `lease_us` from the script's time, which is after the holder asked,
        // less a thousandth of it (the rule's margin, for a whole lease).
        let held = grant.lease_us.saturating_mul(1000);
        let end = renewal
            .sent_at
            .as_nanos()
            .saturating_add(held - held / 1000);
        if grant.status == GrantStatus::Quiet {
            // No new grant: the lease held, if any, runs to its end.
            self.words
                .get(words::UNSHARED_UNTIL)
                .fetch_max(end, Relaxed);
            self.applied_at(at);
            return Ok(self.state_at(at));
        }
        match &self.local {
            Local::Gcra => self.apply_gcra(grant, end, at),
            Local::Window => {
                let current = self.last_grant().map(|held| held.window);
                self.apply_window(grant, current, end, at);
            }
        }
        self.keep(grant);
        self.applied_at(at);
        Ok(self.state_at(at))
    }

    /// Notes in the books an answer applied at `at`, which covers decisions until the
    /// lease's end or the end of a refusal of a share.
    fn applied_at(&self, at: Instant) {
        // Relaxed: the renewer (this caller, under its turn) wrote them.
        let lease_end = self.lease_end().load(Relaxed);
        let unshared_until = self.words.get(words::UNSHARED_UNTIL).load(Relaxed);
        self.books
            .applied(at.as_nanos(), lease_end.max(unshared_until));
    }

    /// A GCRA share from `at` to `end`: a lease that follows one still held keeps its
    /// tokens, any other starts empty.
    fn apply_gcra(&self, grant: &Grant, end: u64, at: Instant) {
        let continuing = at.as_nanos() < self.lease_end().load(Relaxed);
        let at = at.as_nanos();
        let share = grant.share.rule(self.rule.divided());
        if share.is_none() {
            // Tokens are kept only while some share is: none is now.
            self.lease_end().store(0, Relaxed);
        }
        self.gcra_share().change(
            placeholder(self.rule.divided()),
            |placeholder, state| emptied(placeholder, state, at),
            |held, state| match share {
                None => (*held, emptied(held, state, at)),
                Some(share) if continuing => (share, carried(held, state, at, &share)),
                Some(share) => (share, carried(held, emptied(held, state, at), at, &share)),
            },
        );
        if share.is_none() {
            self.words.get(words::UNSHARED_UNTIL).store(end, Relaxed);
        } else {
            // Release: whoever reads this end decides on the share just set.
            self.lease_end().store(end, Release);
        }
    }

    /// A count of window `grant.window` from `at` to `end`: more of the window held
    /// (`current`), or a window of its own.
    fn apply_window(&self, grant: &Grant, current: Option<u64>, end: u64, at: Instant) {
        let share = self.window();
        let count = grant.share.burst;
        let end = if current == Some(grant.window) {
            share.grow(count, end)
        } else {
            share.begin(grant.window, count, at.as_nanos(), end);
            end
        };
        if count == 0 {
            self.lease_end().store(0, Relaxed);
            self.words.get(words::UNSHARED_UNTIL).store(end, Relaxed);
        } else {
            // Release: as a GCRA share's; a window's decisions read its own bounds.
            self.lease_end().store(end, Release);
        }
    }

    /// Stops deciding from the share (decisions fall back from now on) and gives the
    /// renewal that hands it back, with a window's units left unused.
    pub fn release(&self) -> Renewal {
        self.lease_end().store(0, Relaxed);
        self.words.get(words::UNSHARED_UNTIL).store(0, Relaxed);
        let unused = match &self.local {
            Local::Gcra => 0,
            Local::Window => self.window().close(),
        };
        Renewal::release(&self.rule, &self.name, Instant::now(), unused)
    }

    /// Keeps `grant` as the last one applied.
    fn keep(&self, grant: &Grant) {
        let fields = [
            grant.share.rate,
            grant.share.burst,
            grant.lease_us,
            grant.epoch,
            grant.held.rate,
            grant.held.burst,
            grant.holders,
            grant.window,
        ];
        // Relaxed: a report for whoever reads it; the renewer alone writes them.
        for (word, field) in self.words.range(words::GRANT, 8).iter().zip(fields) {
            word.store(field, Relaxed);
        }
        self.words.get(words::GRANTED).store(1, Relaxed);
    }

    /// This process's turn to renew.
    pub(super) fn turn(&self) -> std::sync::MutexGuard<'_, ()> {
        // A panic while renewing left the words whole: each is one store.
        self.renewing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
