//! A holder's renewals (docs/leases.md): what it asks the lease script, and how it takes
//! the answer, a GCRA share's or a window's count.

use super::grant::{Grant, GrantStatus, Renewal, ReplyError};
use super::holder::{HolderState, LeaseHolder, Local};
use super::rule::SCALE;
use super::share::empty;
use super::window_share::WindowShare;
use crate::limiter::Limiter;
use crate::time::Instant;
use std::sync::atomic::Ordering::*;

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
        let mut books = self.books();
        let units = self.requested.swap(0, Relaxed);
        let demand = match books.last_sent {
            // Before any count: a fair share of whatever is left.
            None => SCALE,
            Some(last) => self
                .rule
                .demand(units, sent_at.saturating_duration_since(last)),
        };
        let renewal = Renewal::renew(&self.rule, &self.name, demand, sent_at, at);
        books.last_sent = Some(renewal.sent_at);
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
    /// end less the [margin](LeaseRule::margin), counted from when the renewal was asked
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
        let mut books = self.books();
        // Held for `lease_us` from the script's time, which is after the holder asked,
        // less a thousandth of it (the rule's margin, for a whole lease).
        let held = grant.lease_us.saturating_mul(1000);
        let end = renewal
            .sent_at
            .as_nanos()
            .saturating_add(held - held / 1000);
        if grant.status == GrantStatus::Quiet {
            // No new grant: the lease held, if any, runs to its end.
            self.unshared_until.fetch_max(end, Relaxed);
            return Ok(self.state_at(at));
        }
        match &self.local {
            Local::Gcra(share) => self.apply_gcra(share, grant, end, at),
            Local::Window(share) => {
                let current = books.grant.as_ref().map(|held| held.window);
                self.apply_window(share, grant, current, end, at);
            }
        }
        books.grant = Some(grant.clone());
        Ok(self.state_at(at))
    }

    /// A GCRA share from `at` to `end`: a lease that follows one still held keeps its
    /// tokens, any other starts empty.
    fn apply_gcra(&self, share: &Limiter, grant: &Grant, end: u64, at: Instant) {
        let continuing = at.as_nanos() < self.lease_end.load(Relaxed);
        let Some(config) = grant.share.config(self.rule.divided()) else {
            // Tokens are kept only while some share is: none is now.
            self.lease_end.store(0, Relaxed);
            empty(share, at);
            self.unshared_until.store(end, Relaxed);
            return;
        };
        if !continuing {
            empty(share, at);
        }
        // A GCRA rule to another: no change fails but for a file's.
        let _ = share.set_config_at(&config, at);
        // Release: whoever reads this end decides on the share just set.
        self.lease_end.store(end, Release);
    }

    /// A count of window `grant.window` from `at` to `end`: more of the window held
    /// (`current`), or a window of its own.
    fn apply_window(
        &self,
        share: &WindowShare,
        grant: &Grant,
        current: Option<u64>,
        end: u64,
        at: Instant,
    ) {
        let count = grant.share.burst;
        let end = if current == Some(grant.window) {
            share.grow(count, end)
        } else {
            share.begin(grant.window, count, at.as_nanos(), end);
            end
        };
        if count == 0 {
            self.lease_end.store(0, Relaxed);
            self.unshared_until.store(end, Relaxed);
        } else {
            // Release: as a GCRA share's; a window's decisions read its own bounds.
            self.lease_end.store(end, Release);
        }
    }

    /// Stops deciding from the share (decisions fall back from now on) and gives the
    /// renewal that hands it back, with a window's units left unused.
    pub fn release(&self) -> Renewal {
        self.lease_end.store(0, Relaxed);
        self.unshared_until.store(0, Relaxed);
        let unused = match &self.local {
            Local::Gcra(_) => 0,
            Local::Window(share) => share.close(),
        };
        Renewal::release(&self.rule, &self.name, Instant::now(), unused)
    }
}
