//! What a dashboard reads of a lease holder (docs/metrics.md, leases): the renewals it
//! applied, the time it decided by its fallback, the share it holds (its last grant), and
//! the counts of its requests. The renewals' books are kept by the handle that renews, in
//! process memory: a host holder's other processes renew nothing and see only the share.

use super::grant::Grant;
use super::holder::{HolderState, LeaseHolder};
use super::share::Share;
use super::words;
use crate::counters::Counts;
use crate::sync::CountAtomicU64 as AtomicU64;
use crate::sync::Ordering::Relaxed;
use crate::time::Instant;
use std::time::Duration;

/// A lease holder's statistics, from [`LeaseHolder::stats_at`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseStats {
    /// Answers of the lease script this handle applied: grants, quiet answers and
    /// refusals of a share alike.
    pub renewals: u64,
    /// How long, since this handle's first renewal, decisions came from the
    /// [`Fallback`](super::Fallback): no lease held and no answer from Redis (from the
    /// first renewal to the first answer, and from a lease's end to the next answer).
    pub fallback: Duration,
    /// The share held by the last grant (none before the first).
    pub held: Share,
    /// Where decisions come from at the time asked.
    pub state: HolderState,
}

/// The renewing handle's books: written under the holder's turn to renew, read by anyone.
#[derive(Debug, Default)]
pub(super) struct Books {
    renewals: AtomicU64,
    /// Nanoseconds of fallback counted up to `covered_until`.
    fallback_ns: AtomicU64,
    /// One past where the last answer's cover ends (its lease's end, or the end of a
    /// refusal of a share), or before any answer one past the first renewal's time; 0
    /// before any renewal.
    covered_until: AtomicU64,
}

impl Books {
    /// Notes a renewal sent at `sent_at`: the first starts the clock of the fallback.
    pub(super) fn sent(&self, sent_at: u64) {
        // Relaxed, here and below: the renewer alone writes these words (under its turn);
        // a reader takes each as a report.
        if self.covered_until.load(Relaxed) == 0 {
            self.covered_until.store(sent_at.saturating_add(1), Relaxed);
        }
    }

    /// Notes an answer applied at `at`, whose cover ends at `until`: the time since the
    /// last cover ended, if any, was the fallback's.
    pub(super) fn applied(&self, at: u64, until: u64) {
        self.renewals.fetch_add(1, Relaxed);
        let uncovered = self.uncovered_at(at);
        self.fallback_ns.fetch_add(uncovered, Relaxed);
        let covered = self.covered_until.load(Relaxed);
        let covered = covered.max(at.max(until).saturating_add(1));
        self.covered_until.store(covered, Relaxed);
    }

    /// Nanoseconds since the last cover ended, at `at`.
    fn uncovered_at(&self, at: u64) -> u64 {
        match self.covered_until.load(Relaxed) {
            0 => 0,
            until => at.saturating_sub(until.saturating_sub(1)),
        }
    }
}

impl LeaseHolder {
    /// Turns on counting of this handle's decisions, from this call on (docs/metrics.md,
    /// counters): one atomic add a request, which is why it is off until asked for.
    /// Counting that is on stays on.
    pub fn enable_counts(&self) {
        self.counters.enable();
        // Relaxed: see `LeaseHolder::try_acquire`.
        self.inline_most.store(0, Relaxed);
    }

    /// How many requests this handle admitted and denied since
    /// [`enable_counts`](Self::enable_counts), whether from its share or by its fallback;
    /// `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(1)
    }

    /// The share last granted (none before the first grant).
    pub fn granted(&self) -> Share {
        self.last_grant()
            .map(|grant| grant.share)
            .unwrap_or_default()
    }

    /// The last grant applied, with what every holder held then.
    pub fn last_grant(&self) -> Option<Grant> {
        // Relaxed: a report; the renewer alone writes these words.
        if self.words.get(words::GRANTED).load(Relaxed) == 0 {
            return None;
        }
        let mut fields = [0; 8];
        for (field, word) in fields.iter_mut().zip(self.words.range(words::GRANT, 8)) {
            *field = word.load(Relaxed);
        }
        Grant::from_fields(b"granted", fields).ok()
    }

    /// This holder's statistics now.
    pub fn stats(&self) -> LeaseStats {
        self.stats_at(Instant::now())
    }

    /// This holder's statistics at `at`: the fallback counted up to `at`.
    pub fn stats_at(&self, at: Instant) -> LeaseStats {
        let at_ns = at.as_nanos();
        let books = &self.books;
        let fallback = books.fallback_ns.load(Relaxed) + books.uncovered_at(at_ns);
        LeaseStats {
            renewals: books.renewals.load(Relaxed),
            fallback: Duration::from_nanos(fallback),
            held: self.granted(),
            state: self.state_at(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Fallback, Grant, HolderState, LeaseHolder, LeaseRule, Share};
    use crate::{Config, Instant};
    use std::time::Duration;

    const MS: Duration = Duration::from_millis(1);

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    /// 1,000 a second leased 2 s at a time; the answer: half the rate, a burst of 500,
    /// held until 2 s less its thousandth (1,998 ms) after the renewal was sent.
    fn holder_and_grant() -> (LeaseHolder, Grant) {
        let rule = LeaseRule::new(&Config::per_second(1000), 2000 * MS).unwrap();
        let holder = LeaseHolder::new(&rule, Fallback::Deny).unwrap();
        let fields = [500_000, 500, 2_000_000, 1, 500_000, 500, 1, 0];
        (holder, Grant::from_fields(b"granted", fields).unwrap())
    }

    #[test]
    fn the_fallback_runs_from_the_first_renewal_to_an_answer_and_after_a_lease_ends() {
        let (holder, grant) = holder_and_grant();
        let before = holder.stats_at(at(100));
        assert_eq!((before.renewals, before.fallback), (0, Duration::ZERO));
        assert_eq!(before.state, HolderState::Fallback);
        let renewal = holder.renewal_at(at(0));
        // Redis answers half a second later: that half second was the fallback's.
        holder.apply_at(&renewal, &grant, at(500)).unwrap();
        let leased = holder.stats_at(at(1000));
        assert_eq!((leased.renewals, leased.fallback), (1, 500 * MS));
        assert_eq!(
            leased.held,
            Share {
                rate: 500_000,
                burst: 500
            }
        );
        assert_eq!(leased.state, HolderState::Leased);
        // The lease ends at 1,998 ms; nothing renews it until 3 s.
        let lapsed = holder.stats_at(at(3000));
        assert_eq!(lapsed.fallback, 500 * MS + 1002 * MS);
        assert_eq!(lapsed.state, HolderState::Fallback);
        let renewal = holder.renewal_at(at(3000));
        holder.apply_at(&renewal, &grant, at(3000)).unwrap();
        let renewed = holder.stats_at(at(4000));
        assert_eq!((renewed.renewals, renewed.fallback), (2, 1502 * MS));
    }

    #[test]
    fn a_holder_counts_its_decisions_from_the_share_and_the_fallback() {
        let (holder, grant) = holder_and_grant();
        holder.enable_counts();
        let renewal = holder.renewal_at(at(0));
        holder.apply_at(&renewal, &grant, at(0)).unwrap();
        // A share starts empty and fills one unit every 2 ms.
        assert!(!holder.try_acquire_at(1, at(0)).unwrap());
        assert!(holder.acquire_at(1, at(2)).unwrap().allowed);
        assert!(!holder.acquire_at(1, at(2)).unwrap().allowed);
        // Past the lease: the fallback denies.
        assert!(!holder.try_acquire_at(1, at(2500)).unwrap());
        // A query: not counted.
        assert!(holder.try_acquire_at(0, at(2500)).unwrap());
        // Now, on the real clock, long past the lease: the fallback denies.
        assert!(!holder.try_acquire(1).unwrap());
        let counts = holder.counts().unwrap();
        assert_eq!((counts.admitted, counts.denied), (1, 4));
    }
}
