//! [`RedisLimiter`]'s async methods (the `redis-async` cargo feature), over the caller's
//! `redis::aio::ConnectionLike`: a `MultiplexedConnection`, a `ConnectionManager`, a
//! Cluster's async connection. The caller brings the runtime and the connection; these
//! methods only send requests on it and await the replies, so librate spawns nothing
//! and runs on whichever runtime the `redis` crate is built for.
//!
//! They are methods of the same type as the blocking ones, not of an async twin: a
//! `RedisLimiter` holds no connection (a configuration, a prefix, a script), so one value
//! serves both kinds of callers, and the two sets differ only in how a request travels.
//! Each method checks, sends and reads exactly as its blocking namesake does: both run
//! the same [`Exchange`], this file only sends its calls.

use super::client::reset_command;
use super::exchange::{only, Call, Decisions, Exchange};
use super::{RedisError, RedisLimiter, RedisPolicy};
use crate::decision::Decision;
use crate::policy::PolicyDecision;
use crate::time::{nanos, Instant};
use std::time::Duration;

/// The async methods: each is the blocking method of the same name without `_async`,
/// awaited on an async connection.
///
/// ```no_run
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// use librate::redis::RedisLimiter;
/// use std::time::Duration;
/// use librate::Config;
/// let client = redis::Client::open("redis://127.0.0.1/")?;
/// // One multiplexed connection serves every task: clone it into each.
/// let mut connection = client.get_multiplexed_async_connection().await?;
/// // Each user may make one request per 2 s, whichever host serves it.
/// let limiter = RedisLimiter::new(&Config::gcra(1, Duration::from_secs(2)), "api:")?;
/// if !limiter.acquire_async(&mut connection, b"bob", 1).await?.allowed {
///     // answer 429
/// }
/// # Ok(())
/// # }
/// ```
impl RedisLimiter {
    /// [`acquire`](Self::acquire), awaited: `n` units for `key` now, by the server's clock.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire): never an admission when Redis fails.
    pub async fn acquire_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, None, None)?;
        self.counted(n, only(run(connection, exchange).await?))
    }

    /// [`acquire_at`](Self::acquire_at), awaited: at `at` on the caller's timeline.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_at_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, Some(at.as_nanos()), None)?;
        self.counted(n, only(run(connection, exchange).await?))
    }

    /// [`reserve`](Self::reserve), awaited: GCRA's queue, waiting at most `max_wait`.
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub async fn reserve_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
        n: u64,
        max_wait: Duration,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, None, Some(nanos(max_wait)))?;
        self.counted(n, only(run(connection, exchange).await?))
    }

    /// [`reserve_at`](Self::reserve_at), awaited.
    ///
    /// # Errors
    /// As [`reserve`](Self::reserve).
    pub async fn reserve_at_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
        n: u64,
        at: Instant,
        max_wait: Duration,
    ) -> Result<Decision, RedisError> {
        let exchange = self.single(key, n, Some(at.as_nanos()), Some(nanos(max_wait)))?;
        self.counted(n, only(run(connection, exchange).await?))
    }

    /// [`acquire_batch`](Self::acquire_batch), awaited: every key in one script call (one
    /// per hash slot on a Cluster), each key's decision or error its own.
    ///
    /// # Errors
    /// As [`acquire_batch`](Self::acquire_batch).
    pub async fn acquire_batch_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        keys: &[&[u8]],
        n: u64,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        let decided = run(connection, self.batch(keys, n, None)?).await;
        self.counted_batch(n, decided)
    }

    /// [`reset`](Self::reset), awaited.
    ///
    /// # Errors
    /// As [`reset`](Self::reset).
    pub async fn reset_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
    ) -> Result<(), RedisError> {
        reset_command(&[self.redis_key(key)])
            .exec_async(connection)
            .await?;
        Ok(())
    }

    /// [`acquire_batch_at`](Self::acquire_batch_at), awaited.
    ///
    /// # Errors
    /// As [`acquire_batch`](Self::acquire_batch).
    pub async fn acquire_batch_at_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        keys: &[&[u8]],
        n: u64,
        at: Instant,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        let decided = run(connection, self.batch(keys, n, Some(at.as_nanos()))?).await;
        self.counted_batch(n, decided)
    }
}

/// [`RedisPolicy`]'s async methods, as [`RedisLimiter`]'s: each the blocking method of the
/// same name without `_async`, awaited on an async connection.
impl RedisPolicy {
    /// [`acquire`](Self::acquire), awaited: `n` units for `key` now, by the server's
    /// clock, from every rule or from none.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire): never an admission when Redis fails.
    pub async fn acquire_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Result<PolicyDecision, RedisError> {
        self.decide_async(connection, key, n, None).await
    }

    /// [`acquire_at`](Self::acquire_at), awaited: every rule decided at `at`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub async fn acquire_at_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
        n: u64,
        at: Instant,
    ) -> Result<PolicyDecision, RedisError> {
        self.decide_async(connection, key, n, Some(at.as_nanos()))
            .await
    }

    /// [`reset`](Self::reset), awaited.
    ///
    /// # Errors
    /// As [`reset`](Self::reset).
    pub async fn reset_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
    ) -> Result<(), RedisError> {
        reset_command(&self.redis_keys(key))
            .exec_async(connection)
            .await?;
        Ok(())
    }
    async fn decide_async(
        &self,
        connection: &mut impl redis::aio::ConnectionLike,
        key: &[u8],
        n: u64,
        now_ns: Option<u64>,
    ) -> Result<PolicyDecision, RedisError> {
        let shadow = self.shadow();
        let mut exchange = self.exchange(key, n, now_ns, shadow)?;
        converse(connection, &mut exchange).await;
        self.counted(n, self.decision(exchange, shadow))
    }
}

/// Runs `exchange` over an async connection.
async fn run(
    connection: &mut impl redis::aio::ConnectionLike,
    mut exchange: Exchange<'_>,
) -> Result<Decisions, RedisError> {
    converse(connection, &mut exchange).await;
    exchange.finish()
}

/// Sends `exchange`'s calls over an async connection until it is over.
pub(super) async fn converse(
    connection: &mut impl redis::aio::ConnectionLike,
    exchange: &mut Exchange<'_>,
) {
    while let Some(call) = exchange.next() {
        let replies = match call {
            Call::Command(command) => connection
                .req_packed_command(command)
                .await
                .map(|reply| vec![reply]),
            Call::Pipeline(pipeline) => connection.req_packed_commands(pipeline, 0, 1).await,
        };
        exchange.answer(replies);
    }
}
