//! Leases over the `redis` crate (the `redis` cargo feature): one renewal as a script call
//! on the caller's connection, and [`LeasedLimiter`], a holder renewed by a thread of its
//! own on connections from the caller's client (or any that a closure opens).

use super::grant::{Grant, Renewal};
use super::holder::{Fallback, HolderState, LeaseHolder};
use super::renewer::{Connection, Renewer};
use super::rule::LeaseRule;
use crate::config::Algorithm;
use crate::counters::Counts;
use crate::decision::Decision;
use crate::error::{AcquireError, Error};
use crate::redis::RedisError;
use crate::time::Instant;
use std::sync::{Arc, OnceLock};

/// The lease script of `rule`'s algorithm, hashed once.
fn script(rule: &LeaseRule) -> &'static redis::Script {
    static GCRA: OnceLock<redis::Script> = OnceLock::new();
    static FIXED_WINDOW: OnceLock<redis::Script> = OnceLock::new();
    let cell = match rule.config().algorithm {
        Algorithm::Gcra => &GCRA,
        _ => &FIXED_WINDOW,
    };
    cell.get_or_init(|| redis::Script::new(rule.script()))
}

/// Sends `renewal` (or any call of the script) for the rule at `key` and reads the answer.
pub(super) fn call(
    connection: &mut impl redis::ConnectionLike,
    key: &[u8],
    rule: &LeaseRule,
    renewal: &Renewal,
) -> Result<redis::Value, RedisError> {
    let mut invocation = script(rule).key(key);
    for arg in renewal.args() {
        invocation.arg(arg);
    }
    Ok(invocation.invoke::<redis::Value>(connection)?)
}

/// The grant a renewal's reply holds.
pub(super) fn grant_of(reply: &redis::Value) -> Result<Grant, RedisError> {
    let garbage = || RedisError::Reply(format!("{reply:?}"));
    let redis::Value::Array(fields) = reply else {
        return Err(garbage());
    };
    let [status, numbers @ ..] = &fields[..] else {
        return Err(garbage());
    };
    let status: Vec<u8> = redis::from_redis_value(status).map_err(|_| garbage())?;
    let mut values = [0u64; 8];
    if numbers.len() != values.len() {
        return Err(garbage());
    }
    for (value, field) in values.iter_mut().zip(numbers) {
        *value = redis::from_redis_value(field).map_err(|_| garbage())?;
    }
    Grant::from_fields(&status, values).map_err(|error| RedisError::Reply(error.to_string()))
}

/// Renews `holder`'s lease on the rule at `key` over `connection`: at `at` on the caller's
/// timeline, or by the server's clock (`None`). Returns where the holder's decisions come
/// from once the answer is applied.
///
/// # Errors
/// [`RedisError::Redis`] if Redis cannot be reached or answers an error (another rule at
/// `key`, another type); [`RedisError::Reply`] for an answer the script never gives. Either
/// way nothing is applied: the holder decides from the lease it holds until it ends.
pub fn renew(
    connection: &mut impl redis::ConnectionLike,
    key: &[u8],
    holder: &LeaseHolder,
    at: Option<Instant>,
) -> Result<HolderState, RedisError> {
    let renewal = match at {
        Some(at) => holder.renewal_at(at),
        None => holder.renewal(),
    };
    let grant = grant_of(&call(connection, key, holder.rule(), &renewal)?)?;
    let applied = match at {
        Some(at) => holder.apply_at(&renewal, &grant, at),
        None => holder.apply(&renewal, &grant),
    };
    applied.map_err(|error| RedisError::Reply(error.to_string()))
}

/// Stops `holder` deciding from its share and hands the share back to the rule at `key`.
///
/// # Errors
/// As [`renew`]: the share then returns to the rule when its lease ends.
pub fn release(
    connection: &mut impl redis::ConnectionLike,
    key: &[u8],
    holder: &LeaseHolder,
) -> Result<(), RedisError> {
    call(connection, key, holder.rule(), &holder.release())?;
    Ok(())
}

/// A holder of a share of a global rule kept in Redis, renewed in the background by a
/// thread of its own over connections from the caller's client (docs/leases.md).
/// Decisions never wait on Redis. Dropping it, or [`close`](Self::close), stops the thread
/// and hands the share back.
///
/// ```no_run
/// use librate::lease::{Fallback, LeasedLimiter};
/// use librate::{Config, LeaseRule};
/// use std::time::Duration;
/// let client = redis::Client::open("redis://127.0.0.1/").unwrap();
/// // 10,000 requests a second across every host, leased 2 s at a time.
/// let rule = LeaseRule::new(&Config::per_second(10_000), Duration::from_secs(2))?;
/// let limiter = LeasedLimiter::open(client, "api:global", &rule, Fallback::Deny)?;
/// if !limiter.try_acquire(1)? {
///     // answer 429
/// }
/// limiter.close()?; // hands the share back
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct LeasedLimiter {
    holder: Arc<LeaseHolder>,
    renewer: Renewer,
}

impl LeasedLimiter {
    /// A holder of `rule` at the Redis key `key`, its first renewal sent at once; it
    /// decides by `fallback` until an answer comes.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] as [`LeaseHolder::new`]; [`Error::Timer`] if its thread
    /// cannot be started.
    pub fn open(
        client: redis::Client,
        key: impl Into<Vec<u8>>,
        rule: &LeaseRule,
        fallback: Fallback,
    ) -> Result<Self, Error> {
        let every = rule.renew_every();
        let connect = move || {
            let opened = client.get_connection_with_timeout(every)?;
            opened.set_read_timeout(Some(every))?;
            opened.set_write_timeout(Some(every))?;
            Ok(opened)
        };
        Self::open_with(connect, key, rule, fallback)
    }

    /// [`open`](Self::open) over the connections `connect` opens (a Redis Cluster's, a
    /// Sentinel's, one with TLS or a pool's): one at first and one after each failure.
    /// Bound its calls' time below the renewal interval (the connection's timeouts), so
    /// that a slow Redis delays no renewal past the next.
    ///
    /// ```no_run
    /// use librate::lease::{Fallback, LeasedLimiter};
    /// use librate::{Config, LeaseRule};
    /// use std::time::Duration;
    /// // Any connection: here a plain one whose calls wait 200 ms at most; a Cluster's
    /// // `ClusterClient::get_connection` is passed the same way.
    /// let client = redis::Client::open("redis://127.0.0.1/")?;
    /// let timeout = Duration::from_millis(200);
    /// let connect = move || {
    ///     let connection = client.get_connection_with_timeout(timeout)?;
    ///     connection.set_read_timeout(Some(timeout))?;
    ///     Ok(connection)
    /// };
    /// let rule = LeaseRule::new(&Config::per_second(10_000), Duration::from_secs(2))?;
    /// let limiter = LeasedLimiter::open_with(connect, "api:{global}", &rule, Fallback::Deny)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with<C>(
        connect: impl FnMut() -> redis::RedisResult<C> + Send + 'static,
        key: impl Into<Vec<u8>>,
        rule: &LeaseRule,
        fallback: Fallback,
    ) -> Result<Self, Error>
    where
        C: redis::ConnectionLike + 'static,
    {
        Self::renewing(LeaseHolder::new(rule, fallback)?, connect, key.into())
    }

    /// The holder of `rule` for this host, in the file at `path`
    /// ([`LeaseHolder::open`]), renewed over the connections `connect` opens: by this
    /// process while it is the one that renews (the first to claim it, until it dies,
    /// when another process's thread takes over). Every process of the host decides from
    /// the one share; closing one stops its thread, and the share lapses only when no
    /// process renews it.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`], [`Error::Incompatible`] or [`Error::Io`] as
    /// [`LeaseHolder::open`]; [`Error::Timer`] if its thread cannot be started.
    pub fn open_host<C>(
        connect: impl FnMut() -> redis::RedisResult<C> + Send + 'static,
        key: impl Into<Vec<u8>>,
        path: impl AsRef<std::path::Path>,
        rule: &LeaseRule,
        fallback: Fallback,
    ) -> Result<Self, Error>
    where
        C: redis::ConnectionLike + 'static,
    {
        Self::renewing(
            LeaseHolder::open(path, rule, fallback)?,
            connect,
            key.into(),
        )
    }

    /// `holder`, renewed by a thread of its own over the connections `connect` opens.
    fn renewing<C: redis::ConnectionLike + 'static>(
        holder: LeaseHolder,
        connect: impl FnMut() -> redis::RedisResult<C> + Send + 'static,
        key: Vec<u8>,
    ) -> Result<Self, Error> {
        let holder = Arc::new(holder);
        let (renewing, releasing) = (Arc::clone(&holder), Arc::clone(&holder));
        let key = Arc::<[u8]>::from(key);
        let released = Arc::clone(&key);
        // A renewal every interval while this process renews the holder
        // ([`LeaseHolder::lead`]); at the end, the hand-back of a holder of its own, or a
        // host's given up to another process.
        let round = move |connection: &mut Connection<C>| {
            if renewing.lead() {
                let renewed = connection
                    .get()
                    .and_then(|open| renew(open, &key, &renewing, None));
                if renewed.is_err() {
                    connection.failed();
                }
            }
        };
        let last = move |connection: &mut Connection<C>| {
            if !releasing.holds_own_words() {
                releasing.step_down();
                return Ok(());
            }
            release(connection.get()?, &released, &releasing)
        };
        let renewer = Renewer::start(holder.rule().renew_every(), connect, round, last)?;
        Ok(Self { holder, renewer })
    }

    /// The holder: its state, its share, its `_at` forms.
    pub fn holder(&self) -> &LeaseHolder {
        &self.holder
    }

    /// As [`LeaseHolder::try_acquire`].
    ///
    /// # Errors
    /// As [`LeaseHolder::try_acquire`].
    #[inline]
    pub fn try_acquire(&self, n: u64) -> Result<bool, AcquireError> {
        self.holder.try_acquire(n)
    }

    /// As [`LeaseHolder::acquire`].
    ///
    /// # Errors
    /// As [`LeaseHolder::acquire`].
    pub fn acquire(&self, n: u64) -> Result<Decision, AcquireError> {
        self.holder.acquire(n)
    }

    /// Whether decisions come from the fallback now (no lease, Redis not answering).
    pub fn in_fallback(&self) -> bool {
        self.holder.state() == HolderState::Fallback
    }

    /// Turns on counting of this holder's requests (docs/metrics.md, counters), as
    /// [`LeaseHolder::enable_counts`].
    pub fn enable_counts(&self) {
        self.holder.enable_counts();
    }

    /// The holder's counts, as [`LeaseHolder::counts`].
    pub fn counts(&self) -> Option<Counts> {
        self.holder.counts()
    }

    /// Stops renewing and hands the share back.
    ///
    /// # Errors
    /// The [`RedisError`] of the hand-back: the share then returns to the rule when its
    /// lease ends.
    pub fn close(mut self) -> Result<(), RedisError> {
        self.renewer.stop()
    }
}
