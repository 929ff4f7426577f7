//! A holder of leases on a keyed rule (docs/leases.md, keys), without I/O: each key is a
//! global rule of its own, in its own hash. Keys hot at this holder are leased and decided
//! in process; every other request is decided in Redis by the lease script, against what
//! the key's leases leave.
//!
//! # Which keys are leased
//! At each round of renewals, a key not leased whose requests since the last round asked
//! for at least `hot` units is leased (the hottest first, up to `capacity` keys leased), and
//! a leased key whose units asked fell below half of `hot` stops being leased (the half
//! keeps a key near the line from going back and forth). A key that stops is not handed
//! back: a decision may still be deciding from its share, so the share returns to the
//! rule when its lease ends.
//!
//! # The leased keys, read lock-free
//! The map of leased keys is immutable once published: a round that changes the set
//! publishes a new map as a version (`versions.rs`), and a decision reads the map in force
//! pinned, so a map replaced is freed once no decision reads it. The units asked for keys
//! not leased are counted under a lock, on the path that calls Redis anyway, in a map of
//! at most `4 × capacity` keys (others wait for the next round to be counted).

use super::grant::Renewal;
use super::holder::{random_name, Fallback, LeaseHolder};
use super::rule::LeaseRule;
use crate::decision::Decision;
use crate::error::{AcquireError, ConfigError};
use crate::time::Instant;
use crate::versions::Versions;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// The keys leased, each with its holder.
type Leased = HashMap<Box<[u8]>, Arc<LeaseHolder>>;

/// One key's renewal in a round ([`KeyedLeaseHolder::renewals_at`]).
#[derive(Debug)]
pub struct KeyRenewal {
    /// The key.
    pub key: Box<[u8]>,
    /// Its holder, which applies the answer ([`LeaseHolder::apply`]).
    pub holder: Arc<LeaseHolder>,
    /// What to send the lease script, at the key's hash.
    pub renewal: Renewal,
}

/// How many keys not leased one round counts, per key that can be leased.
const COUNTED_PER_LEASED: usize = 4;

/// A holder of leases on the keys of a keyed rule that are hot at it. `Send + Sync`.
///
/// ```
/// use librate::lease::{Grant, KeyRenewal, KeyedLeaseHolder};
/// use librate::{Config, Instant, LeaseRule};
/// use std::time::Duration;
/// let rule = LeaseRule::new(&Config::per_second(100), Duration::from_secs(2)).unwrap();
/// // A key is leased once it asks for 4 units between two rounds of renewals.
/// let holder = KeyedLeaseHolder::new(&rule, 4, 1000).unwrap();
/// // A key not leased: decide it in Redis (`Renewal::acquire`).
/// assert_eq!(holder.try_acquire_at(b"user:7", 5, Instant::ZERO).unwrap(), None);
/// // The next round leases it: send its renewal, apply the answer.
/// let round = holder.renewals_at(Some(Instant::ZERO));
/// assert_eq!(round.len(), 1);
/// let KeyRenewal { key, holder: leaseholder, renewal } = &round[0];
/// assert_eq!(&key[..], b"user:7");
/// let grant = Grant::from_fields(b"granted", [1_000_000, 100, 2_000_000, 1, 1_000_000, 100, 1, 0]).unwrap();
/// leaseholder.apply_at(renewal, &grant, Instant::ZERO).unwrap();
/// // Decided in process from now on: a share starts empty, one unit every 10 ms.
/// let later = Instant::ZERO + Duration::from_millis(10);
/// assert_eq!(holder.try_acquire_at(b"user:7", 1, later).unwrap(), Some(true));
/// ```
#[derive(Debug)]
pub struct KeyedLeaseHolder {
    rule: LeaseRule,
    /// This holder's name in every key's hash.
    name: String,
    hot: u64,
    capacity: usize,
    leased: Versions<Leased>,
    /// Units asked for keys not leased since the last round.
    asked: Mutex<HashMap<Box<[u8]>, u64>>,
}

impl KeyedLeaseHolder {
    /// A holder of `rule` for every key, leasing a key once it asks for `hot` units
    /// between two rounds of renewals (0: every key asked for), at most `capacity` keys at
    /// once; under a name of its own (random).
    ///
    /// # Errors
    /// [`ConfigError::ZeroCapacity`] for `capacity` 0.
    pub fn new(rule: &LeaseRule, hot: u64, capacity: usize) -> Result<Self, ConfigError> {
        Self::named(rule, hot, capacity, &random_name())
    }

    /// A holder named `name`, which no other holder of the rule may share.
    ///
    /// # Errors
    /// As [`new`](Self::new).
    pub fn named(
        rule: &LeaseRule,
        hot: u64,
        capacity: usize,
        name: &str,
    ) -> Result<Self, ConfigError> {
        if capacity == 0 {
            return Err(ConfigError::ZeroCapacity);
        }
        Ok(Self {
            rule: *rule,
            name: name.to_owned(),
            hot,
            capacity,
            leased: Versions::new(Leased::new()),
            asked: Mutex::default(),
        })
    }

    /// The rule of every key.
    pub fn rule(&self) -> &LeaseRule {
        &self.rule
    }

    /// The lease script of the rule's algorithm ([`LeaseRule::script`]), which also
    /// decides the keys not leased.
    pub fn script(&self) -> &'static str {
        self.rule.script()
    }

    /// [`script`](Self::script) with a NUL, for C.
    #[doc(hidden)]
    pub fn script_with_nul(&self) -> &'static str {
        self.rule.script_with_nul()
    }

    /// The script call that decides `n` units in Redis, against what the key's leases
    /// leave: at `at` on the caller's timeline, or by the server's clock (`None`).
    ///
    /// # Errors
    /// [`AcquireError::InsufficientCapacity`] for `n` past the rule's burst (a window's
    /// limit): never sent.
    pub fn in_redis(&self, n: u64, at: Option<Instant>) -> Result<Renewal, AcquireError> {
        if n > self.rule.most() {
            return Err(AcquireError::InsufficientCapacity);
        }
        Ok(Renewal::acquire(&self.rule, n, at))
    }

    /// Decides `n` units for `key` now from its share if it is leased and holds one:
    /// `Some(admitted)`; else `None`, and the caller decides it in Redis
    /// ([`Renewal::acquire`]).
    ///
    /// # Errors
    /// [`AcquireError::InsufficientCapacity`] if `n` exceeds the rule's burst (a window's
    /// limit).
    pub fn try_acquire(&self, key: &[u8], n: u64) -> Result<Option<bool>, AcquireError> {
        self.try_acquire_at(key, n, Instant::now())
    }

    /// [`try_acquire`](Self::try_acquire) at `at`.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<Option<bool>, AcquireError> {
        self.decide_at(key, n, |holder| holder.try_acquire_leased_at(n, at))
    }

    /// Decides `n` units for `key` now from its share, with the share's decision
    /// (docs/decision.md: exact for the share, conservative for the key's rule), as
    /// [`try_acquire`](Self::try_acquire) does; `None`: decide it in Redis.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn acquire(&self, key: &[u8], n: u64) -> Result<Option<Decision>, AcquireError> {
        self.acquire_at(key, n, Instant::now())
    }

    /// [`acquire`](Self::acquire) at `at`.
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn acquire_at(
        &self,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<Option<Decision>, AcquireError> {
        self.decide_at(key, n, |holder| holder.acquire_leased_at(n, at))
    }

    /// `leased`'s decision of `n` units for `key` if the key is leased (`None` if its
    /// holder has no share); else counts the units towards making the key hot.
    fn decide_at<T>(
        &self,
        key: &[u8],
        n: u64,
        leased: impl FnOnce(&LeaseHolder) -> Result<Option<T>, AcquireError>,
    ) -> Result<Option<T>, AcquireError> {
        {
            let pin = self.leased.pin();
            if let Some(holder) = pin.current().get(key) {
                // A key leased without a share yet (its first renewal on its way, or
                // Redis said none) is decided in Redis; its demand is the holder's.
                return leased(holder);
            }
        }
        if n > self.rule.most() {
            return Err(AcquireError::InsufficientCapacity);
        }
        let mut asked = self.asked.lock().unwrap_or_else(PoisonError::into_inner);
        let counted = asked.len() < self.counted();
        if let Some(units) = asked.get_mut(key) {
            *units = units.saturating_add(n);
        } else if counted {
            asked.insert(key.into(), n);
        }
        Ok(None)
    }

    /// The most keys leased at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The most keys not leased that a round counts: also the keys a local fallback rule
    /// keeps.
    pub fn counted(&self) -> usize {
        self.capacity.saturating_mul(COUNTED_PER_LEASED)
    }

    /// Whether `key` is leased (perhaps still without a share).
    pub fn is_leased(&self, key: &[u8]) -> bool {
        self.leased.pin().current().contains_key(key)
    }

    /// The keys leased now.
    pub fn leased_keys(&self) -> usize {
        self.leased.pin().current().len()
    }

    /// A round of renewals: the keys to lease from now on, and each one's renewal to send
    /// (at `at` on the caller's timeline, or by the server's clock for `None`), whose answer
    /// the caller applies to the holder given ([`LeaseHolder::apply`]). Keys that cooled
    /// stop being leased (module docs).
    pub fn renewals_at(&self, at: Option<Instant>) -> Vec<KeyRenewal> {
        let asked = std::mem::take(&mut *self.asked.lock().unwrap_or_else(PoisonError::into_inner));
        let mut change = self.leased.change();
        let (current, _) = change.current();
        let mut leased: Leased = current
            .iter()
            .filter(|(_, holder)| holder.asked().saturating_mul(2) >= self.hot)
            .map(|(key, holder)| (key.clone(), Arc::clone(holder)))
            .collect();
        let cooled = leased.len() < current.len();
        let mut hot: Vec<_> = asked
            .into_iter()
            .filter(|&(_, units)| units >= self.hot)
            .collect();
        // The hottest first; among equals, by key, so that a round is reproducible.
        hot.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let room = self.capacity.saturating_sub(leased.len());
        let mut added = false;
        for (key, _) in hot.into_iter().take(room) {
            let Ok(holder) = LeaseHolder::named(&self.rule, Fallback::Deny, &self.name) else {
                continue;
            };
            leased.insert(key, Arc::new(holder));
            added = true;
        }
        let renewals = leased
            .iter()
            .map(|(key, holder)| {
                let renewal = match at {
                    Some(at) => holder.renewal_at(at),
                    None => holder.renewal(),
                };
                KeyRenewal {
                    key: key.clone(),
                    holder: Arc::clone(holder),
                    renewal,
                }
            })
            .collect();
        if cooled || added {
            change.publish(leased);
        }
        renewals
    }

    /// Stops leasing every key, and gives each with its holder, to hand back
    /// ([`LeaseHolder::release`]) once no decision can be using it: when the caller alone
    /// decides for this holder, closing it.
    pub fn release_all(&self) -> Vec<(Box<[u8]>, Arc<LeaseHolder>)> {
        let mut change = self.leased.change();
        let (current, _) = change.current();
        let all = current
            .iter()
            .map(|(key, holder)| (key.clone(), Arc::clone(holder)))
            .collect();
        change.publish(Leased::new());
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::lease::Grant;
    use std::time::Duration;

    /// A holder of 100 a second per key, leasing a key at 10 units a round, at most 2.
    fn holder() -> KeyedLeaseHolder {
        let rule = LeaseRule::new(&Config::per_second(100), Duration::from_secs(2)).unwrap();
        KeyedLeaseHolder::named(&rule, 10, 2, "h").unwrap()
    }

    fn ask(holder: &KeyedLeaseHolder, key: &[u8], units: u64) -> Option<bool> {
        holder.try_acquire_at(key, units, Instant::ZERO).unwrap()
    }

    fn keys(round: &[KeyRenewal]) -> Vec<&[u8]> {
        let mut keys: Vec<&[u8]> = round.iter().map(|renewal| &renewal.key[..]).collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn the_hottest_keys_past_the_line_are_leased_up_to_the_capacity() {
        let holder = holder();
        for (key, units) in [(&b"a"[..], 9), (b"b", 10), (b"c", 30), (b"d", 20)] {
            assert_eq!(ask(&holder, key, units), None);
        }
        // "a" is below the line; of the others, the two hottest.
        let round = holder.renewals_at(Some(Instant::ZERO));
        assert_eq!(keys(&round), [&b"c"[..], b"d"]);
        assert!(holder.is_leased(b"c") && !holder.is_leased(b"b"));
        // Leased but without a share yet: still decided in Redis, counted by its holder.
        assert_eq!(ask(&holder, b"c", 7), None);
        assert_eq!(round[0].holder.asked() + round[1].holder.asked(), 7);
        // Units past the rule's burst are refused wherever the key is decided.
        assert!(holder.try_acquire_at(b"c", 101, Instant::ZERO).is_err());
        assert!(holder.try_acquire_at(b"z", 101, Instant::ZERO).is_err());
    }

    #[test]
    fn a_leased_key_is_decided_in_process_and_stops_below_half_the_line() {
        let holder = holder();
        ask(&holder, b"k", 10);
        let round = holder.renewals_at(Some(Instant::ZERO));
        let KeyRenewal {
            holder: leased,
            renewal,
            ..
        } = &round[0];
        let whole = [1_000_000, 100, 2_000_000, 1, 1_000_000, 100, 1, 0];
        let grant = Grant::from_fields(b"granted", whole).unwrap();
        leased.apply_at(renewal, &grant, Instant::ZERO).unwrap();
        // A share starts empty and fills one unit every 10 ms.
        let at = Instant::ZERO + Duration::from_millis(50);
        assert_eq!(holder.try_acquire_at(b"k", 4, at).unwrap(), Some(true));
        // The share's decision: a burst of 100, one unit left, the next in 10 ms, full
        // again in 99 units' time.
        let decided = holder.acquire_at(b"k", 1, at).unwrap().unwrap();
        assert_eq!(
            (decided.allowed, decided.limit, decided.remaining),
            (true, 100, 0)
        );
        assert_eq!(decided.reset_after_ns, 100 * 10_000_000);
        assert_eq!(holder.try_acquire_at(b"k", 1, at).unwrap(), Some(false));
        assert_eq!(holder.acquire_at(b"cold", 1, at).unwrap(), None);
        // 6 units this round: at least half the line, so it stays.
        let round = holder.renewals_at(Some(at));
        assert_eq!(keys(&round), [&b"k"[..]]);
        // 4 this round: below half the line, so it stops, and no renewal is sent.
        holder.try_acquire_at(b"k", 4, at).unwrap();
        assert!(holder.renewals_at(Some(at)).is_empty());
        assert!(!holder.is_leased(b"k"));
        assert_eq!(ask(&holder, b"k", 1), None);
    }

    #[test]
    fn closing_stops_every_lease_and_a_capacity_of_0_is_refused() {
        let holder = holder();
        ask(&holder, b"x", 10);
        holder.renewals_at(Some(Instant::ZERO));
        let released = holder.release_all();
        assert_eq!(released.len(), 1);
        assert_eq!(holder.leased_keys(), 0);
        let rule = *holder.rule();
        assert_eq!(
            KeyedLeaseHolder::new(&rule, 1, 0).unwrap_err(),
            ConfigError::ZeroCapacity
        );
    }
}
