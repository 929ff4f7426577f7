//! Sliding window log (DESIGN §4): exact. A request of n units at t is admitted iff the
//! units admitted in `(t − P, t]` plus n are at most L. Denied requests are not logged.
//!
//! # State: a ring of the last L admitted timestamps
//! Every admitted unit gets the next *position* 0, 1, 2, … and its timestamp is kept in
//! ring slot `position mod L` until position + L overwrites it. Words:
//! - `state[0]`, **head**: the next position, i.e. the units ever admitted.
//! - `state[1]`, **latest**: the largest timestamp logged (or about to be).
//! - `state[2 + 2i]`, `state[3 + 2i]`: slot i's **timestamp** and **tag**, the tag being
//!   `position + 1` of the entry the timestamp belongs to (0: never written).
//!
//! Memory: `16 + 16·L` bytes of state (a [`Limiter`](crate::Limiter) adds 256 bytes of
//! cache-line padding). L is capped at [`SlidingLog::MAX_LIMIT`] = 2²⁰ (16 MiB + 16 bytes);
//! a larger L is [`ConfigError::LimitTooLarge`].
//!
//! # O(1) admission from the ring's order
//! A request is evaluated at `at = max(t, latest)` and its units are logged at `at`, so
//! timestamps never decrease along positions (a request from the past is moved forward
//! to the latest logged time, which is never more lenient than the latest time seen:
//! entries only expire as time passes). Then the entries alive at `at` are a suffix of
//! the positions, and n more units fit iff position `q = head + n − 1 − L` (the newest one
//! that must be gone) precedes the log or has expired, `ts(q) + P ≤ at`. One slot read.
//! `retry_after_ns` is `ts(q) + P − t`; `reset_after_ns` is `ts(head − 1) + P − t`;
//! `remaining` is L minus the length of the live suffix, found by galloping up from the
//! oldest kept position: O(1) when the log is full or empty, O(log L) slot reads at worst.
//!
//! # Concurrency
//! An admission raises `latest` to `at` (a CAS from the value it read, so `at` is above
//! every timestamp logged before its claim), claims positions `[head, head + n)` by
//! swapping head, then writes each slot's timestamp and tag with `fetch_max`.
//! - **A slot is never claimed twice**: positions come from swaps of one word.
//! - **Writes cannot clobber**: a writer of position p − L that is still in flight when
//!   p is written could otherwise overwrite the newer entry; with `fetch_max` on both
//!   words (timestamps grow along positions, like tags) the newest entry always wins.
//! - **A reader never trusts a stale slot**: it uses a slot's timestamp only if the tag
//!   says it holds exactly the position needed. A claimed position whose tag is not yet
//!   written is *pending*: the reader spins briefly for it (the writer is normally a few
//!   instructions from done), then uses an upper bound on that timestamp instead: the
//!   newest entry's if that one is written (timestamps grow along positions), else
//!   `latest` (the pending writer raised it before claiming, and the reader loaded head
//!   first). A bound only makes entries look younger, so it can deny a request that an
//!   exact read would admit, never the reverse; and it can only change a decision if the
//!   needed entry is at least P older than the request, i.e. if its writer has been in
//!   flight (between reading its clock and writing its slot) for a whole period while
//!   others admitted after it. With no concurrent writer every decision is exact.
//! - A request is evaluated at the latest time *announced*: an admission raises `latest`
//!   before it claims, so a request racing it may be moved forward to that time even if
//!   the other's claim then fails and is retried (it is a time already seen). The log
//!   stays exact for the times it records; only which of two racing requests gets the
//!   last unit depends on the race.
//! - A denial or a query reads several words; it loads head again at the end and starts
//!   over if any unit was admitted meanwhile, so its fields describe one state of the log.
//!   An admission's fields are read just after its claim; units admitted concurrently
//!   after it can only lower its `remaining`.
//!
//! Orderings: head is swapped `Release` and loaded `Acquire`, so a reader sees `latest`
//! raised by every claim below the head it read. Tags and timestamps are written
//! `Release` and read `Acquire`: the tag publishes its timestamp, and a reader that sees a
//! timestamp of a later lap (its head is stale) also sees that lap's claim when it loads
//! head again, so the validation above catches it.
//!
//! # Reserved values and bounds
//! Along positions, `ts(p + L) ≥ ts(p) + P` (p had to expire before p + L was claimed),
//! so `ts(p) ≥ ⌊p/L⌋·P`, and as timestamps are u64 the head never exceeds
//! `L · (⌊(2⁶⁴−1)/P⌋ + 1)`. A config is accepted only if that is at most 2⁶⁴ − 3, so head
//! (the first word) never holds `u64::MAX` or `u64::MAX − 1` (the keyed table's
//! sentinels) and never wraps. Roughly: L < P, at most one unit per nanosecond.
//!
//! Every word only ever grows. A reset must zero all words of the state together (a head
//! of 0 with tags of a former life would make every entry look overwritten); a state
//! whose entries have all expired behaves as a fresh one and may be kept as it is.
//!
//! ```
//! use rate::{Config, Limiter};
//! const SECOND: u64 = 1_000_000_000;
//! // 2 per minute, exactly, over any 60 s.
//! let limiter = Limiter::new(&Config::sliding_log(2, 60 * SECOND)).unwrap();
//! assert!(limiter.acquire_at(1, 24 * SECOND).unwrap().allowed);
//! assert!(limiter.acquire_at(1, 36 * SECOND).unwrap().allowed);
//! let denied = limiter.acquire_at(1, 72 * SECOND).unwrap();
//! assert!(!denied.allowed);
//! assert_eq!(denied.retry_after_ns, 12 * SECOND); // 0:24 leaves the log at 1:24
//! assert!(limiter.acquire_at(1, 84 * SECOND).unwrap().allowed);
//! ```

use crate::cell::Tenancy;
use crate::cell::MAX_STATE;
use crate::sync::{spin_wait, AtomicU64, Ordering};
use crate::window::until;
use crate::{ConfigError, Decision};

/// Index of the head word in the state.
const HEAD: usize = 0;
/// Index of the latest-timestamp word.
const LATEST: usize = 1;
/// Index of the first ring slot; slot i is words `RING + 2i` (timestamp), `+ 1` (tag).
const RING: usize = 2;
/// Words per ring slot.
const SLOT_WORDS: usize = 2;
/// How many times a reader checks a pending slot before falling back to a bound. A
/// writer finishes a slot a few instructions after its claim; under loom one yield
/// lets the model explore both the wait and the fallback.
const PENDING_CHECKS: u32 = if cfg!(loom) { 2 } else { 128 };

/// A validated sliding window log configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SlidingLog {
    limit: u64,
    period_ns: u64,
}

impl SlidingLog {
    /// The largest L: the ring takes 16 bytes per unit of L.
    pub(crate) const MAX_LIMIT: u64 = 1 << 20;

    pub(crate) fn new(limit: u64, period_ns: u64) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if period_ns == 0 {
            return Err(ConfigError::ZeroPeriod);
        }
        let most_positions = u128::from(limit) * (u128::from(u64::MAX / period_ns) + 1);
        if limit > Self::MAX_LIMIT || most_positions > u128::from(MAX_STATE) {
            return Err(ConfigError::LimitTooLarge);
        }
        Ok(Self { limit, period_ns })
    }

    /// L: the decision's `limit`.
    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    /// Words of state: head, latest and two per ring slot.
    pub(crate) fn state_words(&self) -> usize {
        // limit ≤ 2²⁰, so this cannot overflow.
        RING + SLOT_WORDS * self.limit as usize
    }

    /// Acquires `n ≤ L` units at `now` (`n == 0` queries and never writes).
    // Not inlined into `Policy::acquire`: its size would cost the other algorithms'
    // paths there a larger stack frame and their own inlining.
    #[inline(never)]
    pub(crate) fn acquire<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<Decision, T::Evicted> {
        loop {
            let ring = Ring::load(self, state, tenancy, now)?;
            let admission = if n == 0 {
                Admission::Query
            } else {
                ring.admission(n)
            };
            let decision = match admission {
                Admission::Admit => match ring.admit(now, n)? {
                    Some(decision) => return Ok(decision),
                    None => continue,
                },
                Admission::Deny { oldest_kept, ts } => {
                    let (remaining, reset_after_ns) = ring.standing(now, oldest_kept);
                    if remaining >= n {
                        // A pending slot was written between two reads and the later
                        // read shows room: decide again on what is now known.
                        continue;
                    }
                    Decision {
                        allowed: false,
                        limit: self.limit,
                        remaining,
                        retry_after_ns: ring.expiry(ts, now),
                        reset_after_ns,
                        wait_ns: 0,
                    }
                }
                Admission::Query => {
                    let (remaining, reset_after_ns) = match ring.head.checked_sub(1) {
                        Some(newest) => ring.standing(now, newest),
                        None => (self.limit, 0),
                    };
                    Decision {
                        allowed: true,
                        limit: self.limit,
                        remaining,
                        retry_after_ns: 0,
                        reset_after_ns,
                        wait_ns: 0,
                    }
                }
            };
            if ring.unchanged() {
                return Ok(decision);
            }
        }
    }

    /// Acquires `1 ≤ n ≤ L` units at `now`, reporting only whether they were admitted: the
    /// admission test reads one slot, and without a report no search for the oldest live
    /// entry (`remaining`) is needed, so it is O(1) whatever the log holds.
    #[inline(never)]
    pub(crate) fn admit<T: Tenancy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        now: u64,
        n: u64,
    ) -> Result<bool, T::Evicted> {
        debug_assert!(n >= 1);
        loop {
            let ring = Ring::load(self, state, tenancy, now)?;
            let decided = match ring.admission(n) {
                Admission::Admit => ring.claim(n)?.then_some(true),
                // A denial read several words: it stands if no unit was admitted since.
                _ => ring.unchanged().then_some(false),
            };
            if let Some(allowed) = decided {
                return Ok(allowed);
            }
        }
    }

    /// Acquires `1 ≤ n ≤ L` units now, reporting only whether they were admitted, on one
    /// read of the log, reading the time only as far as the decision needs it: `bounds()`
    /// reads bounds on now (`None` if there are none), whose upper end is `latest_of`
    /// them, and `exact(bounds read, if any)` now itself; each is called at most once.
    /// - If the entry that must be gone (`head + n − 1 − L`) left before the latest time
    ///   logged, or there is none, admission is certain; the units are logged at the
    ///   exact time, so neither bound is read.
    /// - Else, a denial at the upper bound is a denial at every instant before it
    ///   (admission only gets easier with time). An admission there is settled too when
    ///   the bound is at most the latest time logged: every instant up to it is moved
    ///   forward to that same time.
    /// - Else the exact time decides.
    ///
    /// A read the log's head shows stale (an admission raced it) is decided again from a
    /// fresh one, at the same exact time.
    #[inline(always)]
    pub(crate) fn try_acquire<T: Tenancy, B: Copy>(
        &self,
        state: &[AtomicU64],
        tenancy: &T,
        n: u64,
        bounds: impl FnOnce() -> Option<B>,
        latest_of: impl FnOnce(B) -> u64,
        exact: impl FnOnce(Option<B>) -> u64,
    ) -> Result<bool, T::Evicted> {
        debug_assert!(n >= 1);
        // Evaluated at the latest time logged until a clock is read.
        let mut ring = Ring::load(self, state, tenancy, 0)?;
        // The entry that must be gone, and its time if its slot holds it: one check, no
        // wait (a pending entry is left to `admission`, which waits and bounds it).
        let needed = ring
            .must_be_gone(n)
            .map(|position| ring.exact_within(position, 1));
        let certain = match needed {
            None => true,
            Some(Some(ts)) => ring.expired(ts),
            Some(None) => false,
        };
        let mut read = None;
        if !certain {
            read = bounds();
            if let Some(latest) = read.map(latest_of) {
                ring.at = latest.max(ring.latest);
                let live = match needed {
                    Some(Some(ts)) => !ring.expired(ts),
                    _ => matches!(ring.admission(n), Admission::Deny { .. }),
                };
                if live {
                    if ring.unchanged() {
                        return Ok(false);
                    }
                } else if latest <= ring.latest && ring.claim(n)? {
                    return Ok(true);
                }
            }
        }
        let now = exact(read);
        ring.at = now.max(ring.latest);
        // Certain stays certain at a later `at`; otherwise decide at the exact time.
        let decided = if certain || matches!(ring.admission(n), Admission::Admit) {
            ring.claim(n)?.then_some(true)
        } else {
            ring.unchanged().then_some(false)
        };
        match decided {
            Some(allowed) => Ok(allowed),
            None => self.admit(state, tenancy, now, n),
        }
    }

    /// Fresh (DESIGN §5): every entry has expired at `now`. Reads only `latest`, an upper
    /// bound on every timestamp logged, so it may say "not fresh" of a state that is.
    /// `head` is the head word, loaded with Acquire (pairing with the Release swap of
    /// every claim below it, so `latest` is at least each of their timestamps). A
    /// snapshot: the reclaimer's own CAS on head revalidates it.
    pub(crate) fn is_fresh(&self, state: &[AtomicU64], head: u64, now: u64) -> bool {
        // Relaxed: ordered after the caller's Acquire load of head.
        let latest = state[LATEST].load(Ordering::Relaxed);
        head == 0 || u128::from(latest) + u128::from(self.period_ns) <= u128::from(now)
    }

    /// Slot `position mod L`'s first word.
    fn slot(&self, position: u64) -> usize {
        // The remainder is below L ≤ 2²⁰.
        RING + SLOT_WORDS * (position % self.limit) as usize
    }
}

/// One read of the log: head, latest, and the time `at` a request is evaluated at, by a
/// caller whose claim on the state is `tenancy`.
struct Ring<'a, T> {
    log: &'a SlidingLog,
    state: &'a [AtomicU64],
    tenancy: &'a T,
    head: u64,
    latest: u64,
    at: u64,
}

enum Admission {
    Admit,
    /// Denied: position `oldest_kept`, logged at `ts`, has not expired.
    Deny {
        oldest_kept: u64,
        ts: u64,
    },
    /// `n == 0`.
    Query,
}

impl<'a, T: Tenancy> Ring<'a, T> {
    /// Reads the log, if head (the first word) shows it is still the caller's state.
    #[inline(always)]
    fn load(
        log: &'a SlidingLog,
        state: &'a [AtomicU64],
        tenancy: &'a T,
        now: u64,
    ) -> Result<Self, T::Evicted> {
        // Acquire: pairs with the Release head swap of every claim below this head, so
        // `latest` below is at least each of their timestamps. (Also at least the
        // tenancy's `T::LOAD`, which is never stronger than Acquire.)
        let head = state[HEAD].load(Ordering::Acquire);
        tenancy.check(head)?;
        let latest = state[LATEST].load(Ordering::Relaxed);
        Ok(Self {
            log,
            state,
            tenancy,
            head,
            latest,
            at: now.max(latest),
        })
    }

    /// Whether n more units fit at `at`: the newest position that must be gone,
    /// `head + n − 1 − L`, precedes the log or has expired.
    #[inline(always)]
    fn admission(&self, n: u64) -> Admission {
        let Some(position) = self.must_be_gone(n) else {
            return Admission::Admit;
        };
        // The common case, a written entry, inline; a pending one waits out of line.
        let ts = match self.exact_within(position, 1) {
            Some(ts) => ts,
            None => self.logged(position),
        };
        if self.expired(ts) {
            Admission::Admit
        } else {
            Admission::Deny {
                oldest_kept: position,
                ts,
            }
        }
    }

    /// The newest position that must have expired for n more units to fit,
    /// `head + n − 1 − L`; `None` if it precedes the log.
    #[inline(always)]
    fn must_be_gone(&self, n: u64) -> Option<u64> {
        let limit = self.log.limit;
        if self.head >= limit {
            Some(self.head - limit + (n - 1))
        } else {
            (self.head + n - 1).checked_sub(limit)
        }
    }

    /// Claims `[head, head + n)`, logs them at `at` and reports the decision; `Ok(None)`
    /// if another admission came first (the caller reads the log again).
    fn admit(&self, now: u64, n: u64) -> Result<Option<Decision>, T::Evicted> {
        if !self.claim(n)? {
            return Ok(None);
        }
        let limit = self.log.limit;
        let new_head = self.head + n;
        // Our own units are live (P ≥ 1); search the older positions still kept.
        let first_live = self.first_live(new_head.saturating_sub(limit), self.head);
        Ok(Some(Decision {
            allowed: true,
            limit,
            remaining: limit - (new_head - first_live),
            retry_after_ns: 0,
            reset_after_ns: self.expiry(self.at, now),
            wait_ns: 0,
        }))
    }

    /// Claims `[head, head + n)` and logs them at `at`; `Ok(false)` if another admission
    /// came first. Each CAS is preceded by a tenancy check of head, so nothing is written
    /// once the state is no longer the caller's.
    fn claim(&self, n: u64) -> Result<bool, T::Evicted> {
        let state = self.state;
        if self.at > self.latest {
            self.tenancy.check(self.head)?;
            // Relaxed: the Release head swap below publishes it. A CAS from the value
            // read, not a fetch_max: if it moved, `at` may be stale, so start over.
            if state[LATEST]
                .compare_exchange(self.latest, self.at, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
            {
                return Ok(false);
            }
        }
        self.tenancy.check(self.head)?;
        // Release: publishes `latest` (above) to readers that see this head. The head
        // cannot overflow: see "Reserved values and bounds".
        let new_head = self.head + n;
        if state[HEAD]
            .compare_exchange(self.head, new_head, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            return Ok(false);
        }
        for position in self.head..new_head {
            let slot = self.log.slot(position);
            // Release: a reader that sees this timestamp also sees the claim above when
            // it loads head again; one that sees the tag also sees the timestamp.
            state[slot].fetch_max(self.at, Ordering::Release);
            state[slot + 1].fetch_max(position + 1, Ordering::Release);
        }
        Ok(true)
    }

    /// `remaining` and `reset_after_ns` of a log left as it is, given a position
    /// `known_live` that is live if anything is (the newest, or the one a denial found).
    fn standing(&self, now: u64, known_live: u64) -> (u64, u64) {
        let limit = self.log.limit;
        let newest = self.logged(self.head - 1);
        if self.expired(newest) {
            return (limit, 0);
        }
        let first_live = self.first_live(self.head.saturating_sub(limit), known_live);
        (limit - (self.head - first_live), self.expiry(newest, now))
    }

    /// The timestamp at `position` (claimed: below head), or an upper bound on it if its
    /// slot is pending or already holds a later lap: the newest entry's timestamp if that
    /// one is written, else `latest` (module docs).
    fn logged(&self, position: u64) -> u64 {
        self.exact(position).unwrap_or_else(|| {
            let newest = self.head - 1;
            let bound = (newest != position).then(|| self.exact(newest)).flatten();
            bound.unwrap_or(self.latest)
        })
    }

    /// The timestamp at `position` if its slot holds exactly that entry, after waiting
    /// a moment for a pending write.
    fn exact(&self, position: u64) -> Option<u64> {
        self.exact_within(position, PENDING_CHECKS)
    }

    /// [`exact`](Self::exact), checking a pending slot `checks` times.
    #[inline(always)]
    fn exact_within(&self, position: u64, checks: u32) -> Option<u64> {
        let slot = self.log.slot(position);
        let tag = position + 1;
        for _ in 0..checks {
            // Acquire: pairs with the writer's Release tag write; publishes the timestamp.
            match self.state[slot + 1].load(Ordering::Acquire) {
                written if written == tag => {
                    // Acquire: pairs with a later lap's Release timestamp write, so
                    // `unchanged` sees that lap's claim if this read sees its timestamp.
                    return Some(self.state[slot].load(Ordering::Acquire));
                }
                written if written > tag => return None,
                _ => spin_wait(),
            }
        }
        None
    }

    /// Whether an entry logged at `ts` has left the window `(at − P, at]`.
    fn expired(&self, ts: u64) -> bool {
        u128::from(ts) + u128::from(self.log.period_ns) <= u128::from(self.at)
    }

    /// Nanoseconds from `now` until an entry logged at `ts` expires.
    fn expiry(&self, ts: u64, now: u64) -> u64 {
        until(u128::from(ts) + u128::from(self.log.period_ns), now)
    }

    /// The first live position in `[low, high)`, or `high` if all have expired (`high`
    /// itself is live or the end). Gallops up from `low`, then bisects: O(1) when the
    /// boundary is near `low`, O(log(high − low)) reads at worst.
    fn first_live(&self, mut low: u64, mut high: u64) -> u64 {
        let live = |position| !self.expired(self.logged(position));
        let mut step = 1u64;
        while low < high {
            let probe = low + (step - 1).min(high - low - 1);
            if live(probe) {
                high = probe;
                break;
            }
            low = probe + 1;
            step = step.saturating_mul(2);
        }
        while low < high {
            let middle = low + (high - low) / 2;
            if live(middle) {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        low
    }

    /// Whether head is still what this read started from: no unit was admitted since, so
    /// every slot read belongs to the same state of the log.
    fn unchanged(&self) -> bool {
        // Relaxed: ordered after the Acquire slot reads (module docs, "Orderings").
        self.state[HEAD].load(Ordering::Relaxed) == self.head
    }
}
