//! Leases of a keyed rule over the `redis` crate: a round of renewals of the keys leased,
//! a request decided in Redis, and [`KeyedLeasedLimiter`], which renews in the background
//! and decides every request (docs/leases.md, keys).

use super::direct::decision_of;
use super::grant::Renewal;
use super::holder::{without_share, Fallback};
use super::keyed::{KeyRenewal, KeyedLeaseHolder};
use super::redis::{call, grant_of};
use super::renewer::{Connection, Renewer};
use super::rule::LeaseRule;
use crate::counters::{Counters, Counts};
use crate::decision::Decision;
use crate::error::{AcquireError, Error, InsufficientCapacity};
use crate::keyed::KeyedLimiter;
use crate::redis::RedisError;
use crate::time::Instant;
use std::sync::Arc;

/// The Redis key of `key` under `prefix`.
fn key_under(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    [prefix, key].concat()
}

/// A round of renewals of `holder`'s keys ([`KeyedLeaseHolder::renewals_at`]) under
/// `prefix`, over `connection`: at `at` on the caller's timeline, or by the server's clock
/// (`None`). Returns how many keys it renewed.
///
/// # Errors
/// The first [`RedisError`]: the keys after it are not renewed this round, and each
/// decides from the lease it holds until it ends.
pub fn renew_keys(
    connection: &mut impl redis::ConnectionLike,
    prefix: &[u8],
    holder: &KeyedLeaseHolder,
    at: Option<Instant>,
) -> Result<usize, RedisError> {
    let round = holder.renewals_at(at);
    for KeyRenewal {
        key,
        holder: leased,
        renewal,
    } in &round
    {
        let reply = call(connection, &key_under(prefix, key), holder.rule(), renewal)?;
        let grant = grant_of(&reply)?;
        let applied = match at {
            Some(at) => leased.apply_at(renewal, &grant, at),
            None => leased.apply(renewal, &grant),
        };
        applied.map_err(|error| RedisError::Reply(error.to_string()))?;
    }
    Ok(round.len())
}

/// Decides `n` units of `rule` for `key` under `prefix` in Redis, against what the key's
/// leases leave: at `at` on the caller's timeline, or by the server's clock (`None`).
///
/// # Errors
/// [`RedisError::Rate`] for `n` past the rule's burst (a window's limit), never sent;
/// [`RedisError::Redis`] if Redis cannot be reached or answers an error;
/// [`RedisError::Reply`] for an answer the script never gives.
pub fn acquire_in_redis(
    connection: &mut impl redis::ConnectionLike,
    prefix: &[u8],
    key: &[u8],
    rule: &LeaseRule,
    n: u64,
    at: Option<Instant>,
) -> Result<Decision, RedisError> {
    if n > rule.most() {
        return Err(InsufficientCapacity.into());
    }
    let reply = call(
        connection,
        &key_under(prefix, key),
        rule,
        &Renewal::acquire(rule, n, at),
    )?;
    let garbage = || RedisError::Reply(format!("{reply:?}"));
    let fields: Vec<i64> = redis::from_redis_value(&reply).map_err(|_| garbage())?;
    let fields: [i64; 5] = fields.try_into().map_err(|_| garbage())?;
    decision_of(rule, n, fields).map_err(|error| RedisError::Reply(error.to_string()))
}

/// A keyed rule kept in Redis, each key its own global rule: the keys hot at this process
/// are leased, renewed in the background by a thread of its own, and decided in process;
/// every other request is one script call on the caller's connection (docs/leases.md,
/// keys). Dropping it, or [`close`](Self::close), stops the thread and hands every share
/// back.
///
/// ```no_run
/// use librate::lease::{Fallback, KeyedLeasedLimiter};
/// use librate::{Config, LeaseRule};
/// use std::time::Duration;
/// let client = redis::Client::open("redis://127.0.0.1/").unwrap();
/// // 100 requests a second per user across every host; a user is leased here once it
/// // asks for 20 units between two renewals, at most 1,000 users at once.
/// let rule = LeaseRule::new(&Config::per_second(100), Duration::from_secs(2))?;
/// let limiter = KeyedLeasedLimiter::open(client.clone(), "api:user:", &rule, 20, 1000, Fallback::Deny)?;
/// let mut connection = client.get_connection()?;
/// if !limiter.try_acquire(&mut connection, b"7", 1)? {
///     // answer 429
/// }
/// limiter.close()?; // hands every share back
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KeyedLeasedLimiter {
    holder: Arc<KeyedLeaseHolder>,
    prefix: Arc<[u8]>,
    /// Decides a request that Redis did not answer, per key.
    fallback: Option<KeyedLimiter>,
    renewer: Renewer,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    counters: Counters,
}

impl KeyedLeasedLimiter {
    /// A keyed rule at the Redis keys `prefix` + key, leasing a key once it asks for
    /// `hot` units between two renewals (at most `capacity` keys), renewed on connections
    /// from `client`; a request Redis does not answer is decided by `fallback`, per key.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for `capacity` 0 or a [`Fallback::Local`] rule's error;
    /// [`Error::Timer`] if its thread cannot be started.
    pub fn open(
        client: redis::Client,
        prefix: impl Into<Vec<u8>>,
        rule: &LeaseRule,
        hot: u64,
        capacity: usize,
        fallback: Fallback,
    ) -> Result<Self, Error> {
        let holder = KeyedLeaseHolder::new(rule, hot, capacity)?;
        Self::open_with(move || client.get_connection(), prefix, holder, fallback)
    }

    /// `holder`'s keys at `prefix` + key, renewed on the connections `connect` opens (a
    /// Cluster's, a pool's, any `ConnectionLike`).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with<C: redis::ConnectionLike + 'static>(
        connect: impl FnMut() -> redis::RedisResult<C> + Send + 'static,
        prefix: impl Into<Vec<u8>>,
        holder: KeyedLeaseHolder,
        fallback: Fallback,
    ) -> Result<Self, Error> {
        let fallback = match fallback {
            Fallback::Deny => None,
            Fallback::Local(config) => Some(KeyedLimiter::new(&config, holder.counted() as u64)?),
        };
        let holder = Arc::new(holder);
        let prefix = Arc::<[u8]>::from(prefix.into());
        let (renewing, releasing) = (Arc::clone(&holder), Arc::clone(&holder));
        let (renew_prefix, release_prefix) = (Arc::clone(&prefix), Arc::clone(&prefix));
        let round = move |connection: &mut Connection<C>| {
            let renewed = connection
                .get()
                .and_then(|open| renew_keys(open, &renew_prefix, &renewing, None));
            if renewed.is_err() {
                connection.failed();
            }
        };
        // The hand-backs not sent yet, kept for the renewer's second try.
        let mut unsent = None;
        let last = move |connection: &mut Connection<C>| {
            let unsent = unsent.get_or_insert_with(|| {
                let all = releasing.release_all();
                let calls = all
                    .into_iter()
                    .map(|(key, leased)| (key, leased.release(), leased));
                calls.collect::<Vec<_>>()
            });
            let open = connection.get()?;
            while let Some((key, handed_back, leased)) = unsent.last() {
                call(
                    open,
                    &key_under(&release_prefix, key),
                    leased.rule(),
                    handed_back,
                )?;
                unsent.pop();
            }
            Ok(())
        };
        let renewer = Renewer::start(holder.rule().renew_every(), connect, round, last)?;
        Ok(Self {
            holder,
            prefix,
            fallback,
            renewer,
            counters: Counters::default(),
        })
    }

    /// The holder: which keys are leased, and its `_at` forms.
    pub fn holder(&self) -> &KeyedLeaseHolder {
        &self.holder
    }

    /// Turns on counting of this handle's requests, from this call on (docs/metrics.md,
    /// counters): decided in process, in Redis or by the fallback alike. Counting that is
    /// on stays on.
    pub fn enable_counts(&self) {
        self.counters.enable();
    }

    /// How many requests this handle admitted and denied since
    /// [`enable_counts`](Self::enable_counts); `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(1)
    }

    /// Admits `n` units for `key` now or not: in process if the key is leased here, else
    /// by one script call on `connection`; if Redis does not answer, by the fallback.
    ///
    /// # Errors
    /// [`AcquireError::InsufficientCapacity`] if `n` exceeds the rule's burst (a window's
    /// limit).
    pub fn try_acquire(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Result<bool, AcquireError> {
        let admitted = (self.holder.try_acquire(key, n))
            .map(|leased| leased.unwrap_or_else(|| self.beside_lease(connection, key, n).allowed));
        self.counters.count(n, &admitted);
        admitted
    }

    /// [`try_acquire`](Self::try_acquire) with the decision's fields (docs/decision.md):
    /// a leased key's share's, or those of what the key's leases leave in Redis, or the
    /// fallback's (a denial's `retry_after_ns` is the renewal interval).
    ///
    /// # Errors
    /// As [`try_acquire`](Self::try_acquire).
    pub fn acquire(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Result<Decision, AcquireError> {
        let decided = (self.holder.acquire(key, n))
            .map(|leased| leased.unwrap_or_else(|| self.beside_lease(connection, key, n)));
        self.counters.count(n, &decided);
        decided
    }

    /// The decision on `n` units for `key`, not leased here: by one script call on
    /// `connection`, or, if Redis does not answer, by the fallback.
    fn beside_lease(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Decision {
        let rule = self.holder.rule();
        match acquire_in_redis(connection, &self.prefix, key, rule, n, None) {
            Ok(decision) => decision,
            Err(_) => self.fallback_decision(key, n),
        }
    }

    /// The fallback's decision for `key`: the local rule's, or a denial until the next
    /// renewal.
    fn fallback_decision(&self, key: &[u8], n: u64) -> Decision {
        let local = self
            .fallback
            .as_ref()
            .and_then(|local| local.acquire(key, n).ok());
        local.unwrap_or_else(|| without_share(self.holder.rule(), n, 0))
    }

    /// Stops renewing and hands every share back.
    ///
    /// # Errors
    /// The first [`RedisError`] of the hand-backs: the shares not handed back return to
    /// their rules when their leases end.
    pub fn close(mut self) -> Result<(), RedisError> {
        self.renewer.stop()
    }
}
