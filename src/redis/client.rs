//! [`RedisLimiter`]: the Redis tier through the `redis` crate (the `redis` cargo feature).

use std::fmt;

use super::Script;
use crate::config::Config;
use crate::decision::Decision;
use crate::error::Error;

/// Why a call to Redis gave no decision.
#[derive(Debug)]
pub enum RedisError {
    /// The request or configuration was refused before reaching Redis, as the in-process
    /// limiter refuses it.
    Rate(Error),
    /// Redis could not be reached or answered an error (a timeout, a refused connection,
    /// OOM, READONLY, a key holding something else).
    Redis(redis::RedisError),
    /// Redis answered something the script never returns.
    Reply(String),
}

impl From<Error> for RedisError {
    fn from(error: Error) -> Self {
        Self::Rate(error)
    }
}

impl From<redis::RedisError> for RedisError {
    fn from(error: redis::RedisError) -> Self {
        Self::Redis(error)
    }
}

impl fmt::Display for RedisError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rate(error) => error.fmt(f),
            Self::Redis(error) => write!(f, "redis: {error}"),
            Self::Reply(reply) => write!(f, "redis: unexpected reply {reply}"),
        }
    }
}

impl std::error::Error for RedisError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Rate(error) => Some(error),
            Self::Redis(error) => Some(error),
            Self::Reply(_) => None,
        }
    }
}

/// A limit of one configuration for every key under a prefix, kept in Redis.
///
/// The Redis key of `key` is the prefix followed by `{key}`: the braces make the key its
/// Cluster hash tag, so the keys of one request share a slot. Each Redis key expires when
/// its state is fresh again, so Redis holds live keys only.
///
/// ```no_run
/// use rate::redis::RedisLimiter;
/// use rate::Config;
/// let client = redis::Client::open("redis://127.0.0.1/").unwrap();
/// let mut connection = client.get_connection().unwrap();
/// // Each user may make one request per 2 s, whichever host serves it.
/// let limiter = RedisLimiter::new(&Config::gcra(1, 2_000_000_000), "api:")?;
/// if !limiter.acquire(&mut connection, b"bob", 1)?.allowed {
///     // answer 429
/// }
/// # Ok::<(), rate::redis::RedisError>(())
/// ```
pub struct RedisLimiter {
    config: Config,
    plan: Script,
    prefix: Vec<u8>,
    script: redis::Script,
}

impl RedisLimiter {
    /// A limiter of `config` for the keys under `prefix`.
    ///
    /// # Errors
    /// As [`Script::of`].
    pub fn new(config: &Config, prefix: impl AsRef<[u8]>) -> Result<Self, Error> {
        let plan = Script::of(config)?;
        let script = redis::Script::new(plan.source());
        Ok(Self {
            config: *config,
            plan,
            prefix: prefix.as_ref().to_vec(),
            script,
        })
    }

    /// The configuration every key follows.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The Redis key that holds `key`'s state.
    pub fn redis_key(&self, key: &[u8]) -> Vec<u8> {
        let mut full = Vec::with_capacity(self.prefix.len() + key.len() + 2);
        full.extend_from_slice(&self.prefix);
        full.push(b'{');
        full.extend_from_slice(key);
        full.push(b'}');
        full
    }

    /// Decides `n` units for `key` now, by the server's clock.
    ///
    /// # Errors
    /// [`RedisError::Rate`] with [`Error::InsufficientCapacity`] if `n` exceeds the limit;
    /// [`RedisError::Redis`] if Redis cannot be reached in the connection's timeout or
    /// answers an error: never an admission.
    pub fn acquire(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(connection, key, n, None, None)
    }

    /// [`acquire`](Self::acquire) at `now_ns` on the caller's timeline instead of the
    /// server's clock (tests, simulations; every call on a key should use one timeline).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn acquire_at(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        now_ns: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(connection, key, n, Some(now_ns), None)
    }

    /// GCRA's queue (DESIGN §4): admits `n` units if the caller will wait at most
    /// `max_wait_ns`, reporting the wait in `wait_ns`.
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire); [`Error::Unsupported`] (in [`RedisError::Rate`]) for
    /// a window algorithm with a non-zero `max_wait_ns`, as in process.
    pub fn reserve(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        max_wait_ns: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(connection, key, n, None, Some(max_wait_ns))
    }

    /// [`reserve`](Self::reserve) at `now_ns` (the arguments in the order of
    /// [`Limiter::reserve_at`](crate::Limiter::reserve_at)).
    ///
    /// # Errors
    /// As [`acquire`](Self::acquire).
    pub fn reserve_at(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        now_ns: u64,
        max_wait_ns: u64,
    ) -> Result<Decision, RedisError> {
        self.decide(connection, key, n, Some(now_ns), Some(max_wait_ns))
    }

    /// Decides `n` units for each of `keys` now, in one round trip (a pipeline of one
    /// script call per key): the decision or error of each key, in order. Each key is
    /// decided as [`acquire`](Self::acquire) decides it, at the server's time of its call.
    ///
    /// # Errors
    /// The outer error when no reply came at all (Redis unreachable, past the timeout) or
    /// the request is refused for every key ([`Error::InsufficientCapacity`]); a key whose
    /// script failed (its Redis key holds something else) has its own error.
    pub fn acquire_batch(
        &self,
        connection: &mut impl redis::ConnectionLike,
        keys: &[&[u8]],
        n: u64,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        self.decide_batch(connection, keys, n, None)
    }

    /// [`acquire_batch`](Self::acquire_batch) at `now_ns`.
    ///
    /// # Errors
    /// As [`acquire_batch`](Self::acquire_batch).
    pub fn acquire_batch_at(
        &self,
        connection: &mut impl redis::ConnectionLike,
        keys: &[&[u8]],
        n: u64,
        now_ns: u64,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        self.decide_batch(connection, keys, n, Some(now_ns))
    }

    fn decide_batch(
        &self,
        connection: &mut impl redis::ConnectionLike,
        keys: &[&[u8]],
        n: u64,
        now_ns: Option<u64>,
    ) -> Result<Vec<Result<Decision, RedisError>>, RedisError> {
        self.plan.check(n, None)?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipeline = redis::pipe();
        for key in keys {
            pipeline
                .cmd("EVALSHA")
                .arg(self.script.get_hash())
                .arg(1)
                .arg(self.redis_key(key))
                .arg(now_ns.map_or_else(String::new, |now| now.to_string()))
                .arg(n)
                .arg(0)
                .arg(&self.plan.config_args);
        }
        let packed = pipeline.get_packed_pipeline();
        let mut replies = connection.req_packed_commands(&packed, 0, keys.len())?;
        if replies.iter().any(is_no_script) {
            // Redis restarted or flushed its scripts: load the script, then send again
            // (a call that failed with NOSCRIPT did nothing).
            self.script.prepare_invoke().load(connection)?;
            replies = connection.req_packed_commands(&packed, 0, keys.len())?;
        }
        Ok(replies.into_iter().map(reply_decision).collect())
    }

    fn decide(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        now_ns: Option<u64>,
        max_wait_ns: Option<u64>,
    ) -> Result<Decision, RedisError> {
        // A reserve is one even with no wait: unsupported by the windows, as in process.
        self.plan.check(n, max_wait_ns)?;
        let mut invocation = self.script.key(self.redis_key(key));
        invocation
            .arg(now_ns.map_or_else(String::new, |now| now.to_string()))
            .arg(n)
            .arg(max_wait_ns.unwrap_or(0))
            .arg(&self.plan.config_args);
        let reply: Vec<redis::Value> = invocation.invoke(connection)?;
        decision_of(&reply)
    }
}

fn is_no_script(reply: &redis::Value) -> bool {
    matches!(reply, redis::Value::ServerError(error) if error.code() == "NOSCRIPT")
}

/// One script call's reply in a pipeline: a decision, or the error Redis answered.
fn reply_decision(reply: redis::Value) -> Result<Decision, RedisError> {
    match reply {
        redis::Value::Array(fields) => decision_of(&fields),
        redis::Value::ServerError(error) => Err(RedisError::Redis(error.into())),
        other => Err(RedisError::Reply(format!("{other:?}"))),
    }
}

/// The decision a script returned: `{allowed, limit, remaining, retry_after_ns,
/// reset_after_ns, wait_ns}`, integers or decimal strings.
fn decision_of(reply: &[redis::Value]) -> Result<Decision, RedisError> {
    let field = |index: usize| -> Result<u64, RedisError> {
        let value = reply
            .get(index)
            .ok_or_else(|| RedisError::Reply(format!("{reply:?}")))?;
        redis::from_redis_value::<u64>(value).map_err(|_| RedisError::Reply(format!("{reply:?}")))
    };
    if reply.len() != 6 {
        return Err(RedisError::Reply(format!("{reply:?}")));
    }
    Ok(Decision {
        allowed: field(0)? == 1,
        limit: field(1)?,
        remaining: field(2)?,
        retry_after_ns: field(3)?,
        reset_after_ns: field(4)?,
        wait_ns: field(5)?,
    })
}
