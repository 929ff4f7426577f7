//! Changing a table's rule at run time: a new region, and a **sweep** that moves every
//! key's state into it, carried over (`algorithm/carry.rs`), slot by slot.
//!
//! # Regions as generations
//! A limiter replaces its one state whole (`generations.rs`); a table has a state per key
//! and cannot freeze them all at one instant without a lock. So a change builds a new
//! region (all `VACANT`) for the new rule, publishes it (a Release store of the table's
//! pointer) marked as being swept into, and then, under a lock that only changes take,
//! moves the old region's slots into it one by one:
//! 1. It swaps the slot's first word to [`MOVED`] (a marker no state and no other marker
//!    holds), waiting while the slot holds an insert's or a reset's claim (a thread of
//!    this process, a few steps from giving it up). Every decision commits by a CAS of
//!    that word from the value it decided on, so each decision on the slot committed
//!    before the swap (it is in the swapped-out value) or fails against the marker and
//!    starts again in the new region: the key's change instant is its swap.
//! 2. If the swapped-out value was a key's state (not `VACANT`, not a reset key's
//!    retired state), it writes the key's fingerprint and the state carried over at the
//!    change's `now` into the **same slot** of the new region, after raising its
//!    `max_distance` to the key's distance. The table's hasher and capacity are the
//!    same in both regions, and so are a key's home slot and probe order: the key lies at
//!    the same distance from home, and the layout of every probe chain is kept. A state
//!    whose carried-over form is fresh is left out, as any fresh state may be (docs/keyed.md,
//!    reclaim).
//! 3. When every slot is moved, it clears the new region's `sweeping` flag (Release).
//!
//! How operations find a key while this runs is in `regions.rs`: an existing key is
//! decided in whichever region holds its state, and never waits for the sweep but for the
//! few steps between 1 and 2 of its own slot; a new key waits until the sweep ends, so
//! that nothing but the sweep writes a region being swept into (the slot the sweep writes
//! is then always vacant). A moved slot is never written again, so a CAS that expects an
//! older value never succeeds there, and a refund taken before the move is dropped, as a
//! limiter drops one taken from a replaced generation.
//!
//! # Memory
//! Regions are versions (`versions.rs`): an operation reads any region but the first
//! pinned, through its view (`regions.rs`), and the change retires the region it replaced
//! when its sweep ends (operations that found the new region being swept into still read
//! the old one until then), to be freed once no pinned thread can still read it. So a
//! table holds at most a few regions however many changes it sees.

use super::file::Slots;
use super::layout::NO_KEY;
use super::markers::{is_installing, is_marker, MOVED};
use super::region::Region;
use super::KeyedLimiter;
use crate::config::Config;
use crate::decider::Decider;
use crate::error::{ChangeError, ConfigError};
use crate::sync::{Backoff, Ordering};
use crate::time::Instant;

impl<S> KeyedLimiter<S> {
    /// Replaces the rule every key of this table follows, now, keeping what each key has
    /// consumed. See [`set_config_at`](Self::set_config_at).
    ///
    /// # Errors
    /// As [`set_config_at`](Self::set_config_at).
    pub fn set_config(&self, config: &Config) -> Result<(), ChangeError> {
        self.set_config_at(config, Instant::now())
    }

    /// Replaces the rule every key of this table follows at `at`, carrying each key's
    /// state over by the rules of [`Limiter::set_config_at`](crate::Limiter::set_config_at):
    /// GCRA keeps each key's tokens (capped at the new burst), the window counters what
    /// each key's windows count (capped at the new limit). A key whose state is fresh (it
    /// would admit as much as a new key) at `at`, under the old rule or carried over
    /// under the new one, starts anew under the new rule, as a new key: a table may drop
    /// a fresh key's state at any time, and the change does.
    ///
    /// The change moves the keys into a new table region one slot after another. Each
    /// decision for a key is made wholly under the old rule, on the state the change then
    /// carries over, or wholly under the new one: a key's change instant is the moment
    /// its slot is moved. Requests for keys already in the table never wait for the
    /// change (but for the few instructions their own slot is moved in); requests for
    /// new keys wait until every key is moved, then are inserted under the new rule.
    /// Changes are serialized: a second one waits for the first to finish.
    ///
    /// Memory: the change allocates a new region of [`table_bytes`](Self::table_bytes),
    /// and the old one is freed once no thread can still be deciding on it, so a table
    /// holds a few regions at most, however many changes it sees. A change waits for
    /// decisions in flight on older regions when several still await them.
    ///
    /// ```
    /// use librate::{Config, Instant, KeyedLimiter};
    /// use std::time::Duration;
    /// const SECOND: Duration = Duration::from_secs(1);
    /// // 10 a second per user; bob has taken 6, so 4 tokens are left.
    /// let users = KeyedLimiter::new(&Config::gcra(10, SECOND), 1000).unwrap();
    /// assert!(users.acquire_at(b"bob", 6, Instant::ZERO).unwrap().allowed);
    /// // An incident: 1 a second, bursts of 2. Bob's 4 tokens are capped at 2.
    /// users.set_config_at(&Config::gcra(1, SECOND).with_burst(2), Instant::ZERO).unwrap();
    /// assert_eq!(users.acquire_at(b"bob", 0, Instant::ZERO).unwrap().remaining, 2);
    /// assert!(users.acquire_at(b"bob", 2, Instant::ZERO).unwrap().allowed);
    /// assert_eq!(users.acquire_at(b"bob", 1, Instant::ZERO).unwrap().retry_after(), SECOND);
    /// // A new user starts with the new burst.
    /// assert_eq!(users.acquire_at(b"ann", 0, Instant::ZERO).unwrap().remaining, 2);
    /// ```
    ///
    /// # Errors
    /// [`ChangeError::Config`] as [`new`](KeyedLimiter::new), or with
    /// [`ConfigError::LiveChange`] for a change of algorithm, or of a sliding log's rule
    /// (its entries are not carried), or with [`ConfigError::Capacity`] if the new region
    /// cannot be allocated. Nothing changes then.
    ///
    /// A table in a file ([`open`](KeyedLimiter::open)) changes there, once, for every
    /// process attached (docs/shared.md, changing the rule): the change sweeps the keys
    /// into the file's next region, and requests for a key it has moved wait until it
    /// ends. There it also returns [`SharedError::Busy`](crate::SharedError::Busy) if another process's change or pinned
    /// decision, or an insert of a process stopped mid-way, held it past a patience
    /// (seconds); if an insert did, the change stays in flight and the next process that
    /// needs it finishes it.
    ///
    /// [`ConfigError::LiveChange`]: crate::ConfigError::LiveChange
    /// [`ConfigError::Capacity`]: crate::ConfigError::Capacity
    pub fn set_config_at(&self, config: &Config, at: Instant) -> Result<(), ChangeError> {
        let now_ns = at.as_nanos();
        let decider = Decider::new(config)?;
        if let Some(file) = &self.file {
            let serial = file
                .rules()
                .change(config, &decider, now_ns, &Slots(file))?;
            return Ok(file.adopt(&self.regions, serial).map(drop)?);
        }
        // Changes are serialized; a change that panicked ended its sweep (`Sweep`), so the
        // next one proceeds as usual.
        let mut change = self.regions.change();
        let (old, old_pointer) = change.current();
        (old.decider).check_change(&decider)?;
        let mut new = Region::private(decider, config, old.layout)?;
        new.replaced = old_pointer;
        new.serial = change.serial();
        new.counting_in(self.first());
        new.set_sweeping(true);
        // Relaxed: a bound for the keys already installed; the pointer's Release store
        // (`publish`) publishes it with the region.
        let bound = old.max_distance().load(Ordering::Relaxed);
        new.max_distance().store(bound, Ordering::Relaxed);
        let sweep = Sweep(change.publish(new));
        for slot in 0..old.layout.slot_count {
            sweep.0.sweep(old, slot, now_ns);
        }
        // Ends the sweep, then (`change` drops after `sweep`) retires the old region.
        drop(sweep);
        Ok(())
    }
}

impl<S> KeyedLimiter<S> {
    /// Whether [`set_config_at`](Self::set_config_at) would take a rule of `decider`: the
    /// check a keyed policy makes of every rule before it changes any. What it checks
    /// (the algorithm, and whether the table lives in a file) no change alters.
    ///
    /// # Errors
    /// As [`set_config_at`](Self::set_config_at), but for an invalid configuration.
    pub(crate) fn check_change(&self, decider: &Decider) -> Result<(), ConfigError> {
        self.first().decider.check_change(decider)
    }
}

/// A sweep into a region, which ends (step 3) when this is dropped: when every slot is
/// moved, or should a bug panic in the middle, so that new keys never wait for a sweep
/// nobody finishes (a key not moved yet would then start anew in the new region).
struct Sweep<'a>(&'a Region);

impl Drop for Sweep<'_> {
    fn drop(&mut self) {
        self.0.set_sweeping(false);
    }
}

impl Region {
    /// Moves `slot` of `old`, this region's predecessor, into this region (module docs,
    /// steps 1 and 2).
    fn sweep(&self, old: &Region, slot: usize, now_ns: u64) {
        let first = old.move_out(slot);
        self.move_in(old, slot, first, now_ns);
    }

    /// Step 2 of a sweep: writes the state of `old`'s `slot`, whose first word held
    /// `first` when it was moved out, carried over at `now_ns`, into the same slot here.
    pub(super) fn move_in(&self, old: &Region, slot: usize, first: u64, now_ns: u64) {
        // Relaxed: ordered after the Acquire swap that moved the slot out; the slot is
        // final now, so nobody writes its fingerprint again.
        let fingerprint = old.fingerprint_word(slot).load(Ordering::Relaxed);
        // A marker holds no key's state (`VACANT`, or in a file, bytes another writer put).
        if is_marker(first)
            || fingerprint == NO_KEY
            || old.decider.is_fresh_on(old.state(slot), first, now_ns)
        {
            return;
        }
        self.with_fresh_state(|carried| {
            old.decider
                .carry_over(old.state(slot), first, now_ns, &self.decider, carried);
            // Relaxed: a private state.
            let carried_first = carried[0].load(Ordering::Relaxed);
            if self.decider.is_fresh_on(carried, carried_first, now_ns) {
                return;
            }
            let state = self.state(slot);
            for (word, value) in state.iter().zip(carried).skip(1) {
                // Relaxed: published by the Release store of the first word below.
                word.store(value.load(Ordering::Relaxed), Ordering::Relaxed);
            }
            // Relaxed, as above. Nobody has written this slot: no claim is made in a
            // region being swept into.
            self.fingerprint_word(slot)
                .store(fingerprint, Ordering::Relaxed);
            let home = self.home(fingerprint);
            let distance = (slot + self.layout.slot_count - home) % self.layout.slot_count;
            // Relaxed: a lookup that misses the key for a stale bound finds the old slot
            // moved, and reads the bound again by an RMW (`regions.rs`).
            self.max_distance()
                .fetch_max(distance as u64, Ordering::Relaxed);
            // Release: publishes the fingerprint and the other words with the state.
            state[0].store(carried_first, Ordering::Release);
        });
    }

    /// Swaps `slot`'s first word to [`MOVED`], once no claim holds it, and returns the
    /// value it held.
    fn move_out(&self, slot: usize) -> u64 {
        let word = self.first_word(slot);
        let mut backoff = Backoff::default();
        // Acquire, the loads and the swap: pairs with the Release store or swap that
        // installed the value, so the fingerprint and the other state words are read at
        // least as new as it.
        let mut first = word.load(Ordering::Acquire);
        loop {
            if is_installing(first) {
                // An insert or a reset of this process holds the slot for a few steps.
                backoff.snooze();
                first = word.load(Ordering::Acquire);
                continue;
            }
            match word.compare_exchange_weak(first, MOVED, Ordering::Acquire, Ordering::Acquire) {
                Ok(_) => return first,
                Err(actual) => first = actual,
            }
        }
    }
}
