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

    /// Decides `n` units for each of `keys` now, in one round trip and one script call:
    /// the decision or error of each key, in order. Each key is decided as
    /// [`acquire`](Self::acquire) decides it, all at one server time. On a Cluster, whose
    /// nodes refuse a call naming keys of several hash slots (`CROSSSLOT`), the keys are
    /// then sent as one script call per slot, a round trip each (the Python and Go
    /// clients pipeline those on their Cluster clients).
    ///
    /// # Errors
    /// The outer error when no reply came at all (Redis unreachable, past the timeout) or
    /// the request is refused for every key ([`Error::InsufficientCapacity`]); a key whose
    /// Redis key holds something else has its own error; an error for a whole script call
    /// (OOM, READONLY, where the script writes nothing) is each of its keys' error.
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
        let redis_keys: Vec<Vec<u8>> = keys.iter().map(|key| self.redis_key(key)).collect();
        let every_key: Vec<usize> = (0..keys.len()).collect();
        match self.script_call(connection, &redis_keys, &every_key, n, now_ns) {
            // CROSSSLOT as the node's reply, or as a Cluster connection's error.
            Ok(redis::Value::ServerError(error)) if error.code() == "CROSSSLOT" => {}
            Err(RedisError::Redis(error)) if error.kind() == redis::ErrorKind::CrossSlot => {}
            Ok(reply) => return Ok(group_decisions(reply, keys.len())),
            Err(error) => return Err(error),
        }
        // A Cluster (or a proxy in front of one) refuses a call naming keys of several
        // hash slots: one script call per slot, each its own request, since a Cluster
        // connection sends a request to the node of its first key.
        let mut by_slot = std::collections::BTreeMap::<u16, Vec<usize>>::new();
        for (index, key) in redis_keys.iter().enumerate() {
            by_slot.entry(super::slot(key)).or_default().push(index);
        }
        let mut decisions: Vec<Option<Result<Decision, RedisError>>> =
            (0..keys.len()).map(|_| None).collect();
        for group in by_slot.into_values() {
            let reply = self.script_call(connection, &redis_keys, &group, n, now_ns)?;
            for (index, decision) in group.iter().zip(group_decisions(reply, group.len())) {
                decisions[*index] = Some(decision);
            }
        }
        Ok(decisions.into_iter().flatten().collect())
    }

    /// One script call for the `group` of `redis_keys` (indices into it): its reply, a
    /// decision or an array of them, or the error Redis answered.
    fn script_call(
        &self,
        connection: &mut impl redis::ConnectionLike,
        redis_keys: &[Vec<u8>],
        group: &[usize],
        n: u64,
        now_ns: Option<u64>,
    ) -> Result<redis::Value, RedisError> {
        let mut call = redis::cmd("EVALSHA");
        call.arg(self.script.get_hash()).arg(group.len());
        for &index in group {
            call.arg(&redis_keys[index]);
        }
        call.arg(now_ns.map_or_else(String::new, |now| now.to_string()))
            .arg(n)
            .arg(0)
            .arg(&self.plan.config_args);
        // A pipeline of one: its reply is the script's error as a value, not the call's.
        let packed = redis::pipe().add_command(call).get_packed_pipeline();
        let mut replies = connection.req_packed_commands(&packed, 0, 1);
        let no_script = match &replies {
            Ok(replies) => replies.iter().any(is_no_script),
            // A Cluster connection answers a node's error as its own.
            Err(error) => error.kind() == redis::ErrorKind::NoScriptError,
        };
        if no_script {
            // Redis restarted or flushed its scripts: load the script, then send again
            // (a call that failed with NOSCRIPT did nothing).
            self.script.prepare_invoke().load(connection)?;
            replies = connection.req_packed_commands(&packed, 0, 1);
        }
        replies?
            .pop()
            .ok_or_else(|| RedisError::Reply("no reply".to_owned()))
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

/// The decisions of a script call for `keys` keys: one key's reply is its decision, several
/// keys' the array of theirs, each a decision or that key's error; an error for the whole
/// call (OOM, READONLY: the script wrote nothing) is every key's.
fn group_decisions(reply: redis::Value, keys: usize) -> Vec<Result<Decision, RedisError>> {
    match reply {
        _ if keys == 1 => vec![reply_decision(reply)],
        redis::Value::Array(replies) if replies.len() == keys => {
            replies.into_iter().map(reply_decision).collect()
        }
        redis::Value::ServerError(error) => (0..keys)
            .map(|_| Err(RedisError::Redis(error.clone().into())))
            .collect(),
        other => {
            let reply = format!("{other:?}");
            (0..keys)
                .map(|_| Err(RedisError::Reply(reply.clone())))
                .collect()
        }
    }
}

/// One key's reply: a decision, or the error Redis answered.
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
