//! [`RedisLimiter`]: the Redis tier through the `redis` crate (the `redis` cargo feature).

use super::exchange::{only, Call, Decisions, Exchange, Request};
use super::layout::limiter_key;
use super::{RedisError, Script};
use crate::config::Config;
use crate::counters::{Counters, Counts};
use crate::decision::Decision;
use crate::error::{ConfigError, InsufficientCapacity, ReserveError};
use crate::time::{nanos, Instant};
use std::time::Duration;

/// A limit of one configuration for every key under a prefix, kept in Redis.
///
/// The Redis key of `key` is the prefix followed by `{key}`: the braces make the key its
/// Cluster hash tag (see [`slot`](super::slot()) for the layout of every key). Each Redis key
/// expires when its state is fresh again, so Redis holds live keys only.
///
/// ```no_run
/// use librate::redis::RedisLimiter;
/// use std::time::Duration;
/// use librate::Config;
/// let client = redis::Client::open("redis://127.0.0.1/").unwrap();
/// let mut connection = client.get_connection().unwrap();
/// // Each user may make one request per 2 s, whichever host serves it.
/// let limiter = RedisLimiter::new(&Config::gcra(1, Duration::from_secs(2)), "api:")?;
/// if !limiter.acquire(&mut connection, b"bob", 1)?.allowed {
///     // answer 429
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct RedisLimiter {
    config: Config,
    plan: Script,
    prefix: Vec<u8>,
    script: redis::Script,
    /// This handle's counts of its requests, off until asked for (docs/metrics.md).
    counters: Counters,
}

impl RedisLimiter {
    /// A limiter of `config` for the keys under `prefix`.
    ///
    /// # Errors
    /// As [`Script::of`].
    pub fn new(config: &Config, prefix: impl AsRef<[u8]>) -> Result<Self, ConfigError> {
        let plan = Script::of(config)?;
        let script = redis::Script::new(plan.source());
        Ok(Self {
            config: *config,
            plan,
            prefix: prefix.as_ref().to_vec(),
            script,
            counters: Counters::default(),
        })
    }

    /// Turns on counting of the requests this handle decides, from this call on
    /// (docs/metrics.md, counters): this process's requests, never another client's.
    /// Counting that is on stays on. A request Redis did not answer is not counted.
    pub fn enable_counts(&self) {
        self.counters.enable();
    }

    /// How many requests this handle admitted and denied since
    /// [`enable_counts`](Self::enable_counts); `None` while counting is off.
    pub fn counts(&self) -> Option<Counts> {
        self.counters.counts(1)
    }

    /// `decided`, a request of `n` units, counted if counting is on.
    pub(super) fn counted(
        &self,
        n: u64,
        decided: Result<Decision, RedisError>,
    ) -> Result<Decision, RedisError> {
        self.counters.count(n, &decided);
        decided
    }

    /// A batch's `decided`, each of its requests of `n` units counted if counting is on.
    pub(super) fn counted_batch(
        &self,
        n: u64,
        decided: Result<Vec<Result<Decision, RedisError>>, RedisError>,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        if let Ok(each) = &decided {
            each.iter()
                .for_each(|decided| self.counters.count(n, decided));
        }
        decided
    }

    /// The configuration every key follows.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The Redis key that holds `key`'s state.
    pub fn redis_key(&self, key: &[u8]) -> Vec<u8> {
        limiter_key(&self.prefix, key)
    }

    /// Deletes `key`'s state (`DEL` of its Redis key), so its next request finds the
    /// limit full, as a fresh key does; other keys keep theirs.
    ///
    /// # Errors
    /// [`RedisError::Redis`] if Redis cannot be reached or answers an error.
    pub fn reset(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
    ) -> Result<(), RedisError> {
        reset_command(&[self.redis_key(key)]).exec(connection)?;
        Ok(())
    }

    /// Decides `n` units for `key` now, by the server's clock.
    ///
    /// # Errors
    /// [`RedisError::Rate`] with [`ReserveError::Acquire`] if `n` exceeds the limit;
    /// [`RedisError::Redis`] if Redis cannot be reached in the connection's timeout or
    /// answers an error: never an admission.
    pub fn acquire(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, None, None)?;
        self.counted(n, only(run(connection, exchange)?))
    }

    /// [`acquire`](Self::acquire) at `at` on the caller's timeline instead of the
    /// server's clock (tests, simulations; every call on a key should use one timeline).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, Some(at.as_nanos()), None)?;
        self.counted(n, only(run(connection, exchange)?))
    }

    /// GCRA's queue (docs/decision.md, reserve): admits `n` units if the caller will wait at most
    /// `max_wait`, reporting the wait in `wait_ns`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); [`ReserveError::Unsupported`] (in [`RedisError::Rate`]) for
    /// a window algorithm with a non-zero `max_wait`, as in process.
    pub fn reserve(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, None, Some(nanos(max_wait)))?;
        self.counted(n, only(run(connection, exchange)?))
    }

    /// [`reserve`](Self::reserve) at `at` (the arguments in the order of
    /// [`Limiter::reserve_at`](crate::Limiter::reserve_at)).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn reserve_at(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        at: Instant,
        max_wait: Duration,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, Some(at.as_nanos()), Some(nanos(max_wait)))?;
        self.counted(n, only(run(connection, exchange)?))
    }

    /// Decides `n` units for each of `keys` now, in one round trip and one script call:
    /// the decision or error of each key, in order. Each key is decided as
    /// [`acquire`](Self::acquire) decides it, all at one server time. On a Cluster, whose
    /// nodes refuse a call naming keys of several hash slots (`CROSSSLOT`), the keys are
    /// then sent as one script call per slot, a round trip each (the Python and Go
    /// clients pipeline those on their Cluster clients).
    ///
    /// # Errors
    /// The outer error when no reply came at all (Redis unreachable, past the timeout) or
    /// the request is refused for every key ([`RedisError::Rate`]: `n` above the limit); a
    /// key whose Redis key holds something else has its own error; an error for a whole script call
    /// (OOM, READONLY, where the script writes nothing) is each of its keys' error.
    pub fn acquire_batch(
        &self,
        connection: &mut impl redis::ConnectionLike,
        keys: &[&[u8]],
        n: u64,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        self.counted_batch(n, run(connection, self.batch(keys, n, None)?))
    }

    /// [`acquire_batch`](Self::acquire_batch) at `at`.
    ///
    /// # Errors
    /// As [`acquire_batch`](Self::acquire_batch).
    pub fn acquire_batch_at(
        &self,
        connection: &mut impl redis::ConnectionLike,
        keys: &[&[u8]],
        n: u64,
        at: Instant,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        let exchange = self.batch(keys, n, Some(at.as_nanos()))?;
        self.counted_batch(n, run(connection, exchange))
    }

    /// A single decision's exchange, once `n` (and a reserve) pass the checks the
    /// in-process limiter makes.
    pub(super) fn single(
        &self,
        key: &[u8],
        n: u64,
        now_ns: Option<u64>,
        max_wait_ns: Option<u64>,
    ) -> Result<Exchange<'_>, ReserveError<InsufficientCapacity>> {
        // A reserve is one even with no wait: unsupported by the windows, as in process.
        self.plan.check(n, max_wait_ns.map(Duration::from_nanos))?;
        let request = self.request(n, now_ns, max_wait_ns.unwrap_or(0));
        Ok(Exchange::single(request, self.redis_key(key)))
    }

    /// A batch's exchange, once `n` passes the checks the in-process limiter makes.
    pub(super) fn batch(
        &self,
        keys: &[&[u8]],
        n: u64,
        now_ns: Option<u64>,
    ) -> Result<Exchange<'_>, ReserveError<InsufficientCapacity>> {
        self.plan.check(n, None)?;
        let redis_keys = keys.iter().map(|key| self.redis_key(key)).collect();
        Ok(Exchange::batch(self.request(n, now_ns, 0), redis_keys))
    }

    fn request(&self, n: u64, now_ns: Option<u64>, max_wait_ns: u64) -> Request<'_> {
        Request {
            sha: self.script.get_hash(),
            source: self.plan.source(),
            config_args: &self.plan.config_args,
            now_ns,
            n,
            max_wait_ns,
            shadow: 0,
        }
    }
}

/// Runs `exchange` over a blocking connection.
fn run(
    connection: &mut impl redis::ConnectionLike,
    mut exchange: Exchange<'_>,
) -> Result<Decisions, RedisError> {
    converse(connection, &mut exchange);
    exchange.finish()
}

/// Sends `exchange`'s calls over a blocking connection until it is over.
pub(super) fn converse(connection: &mut impl redis::ConnectionLike, exchange: &mut Exchange<'_>) {
    while let Some(call) = exchange.next() {
        let replies = match call {
            Call::Command(command) => connection.req_command(command).map(|reply| vec![reply]),
            Call::Pipeline(pipeline) => {
                connection.req_packed_commands(&pipeline.get_packed_pipeline(), 0, 1)
            }
        };
        exchange.answer(replies);
    }
}

/// The `DEL` of `redis_keys`: a key's state, gone, is a fresh state.
pub(super) fn reset_command(redis_keys: &[Vec<u8>]) -> redis::Cmd {
    let mut delete = redis::cmd("DEL");
    delete.arg(redis_keys);
    delete
}
