//! The Redis tier (DESIGN §8): one limit per key across hosts, decided inside the caller's
//! Redis (or Valkey) by librate's Lua scripts, with the decisions of §3 and §4 bit for bit.
//!
//! The scripts live in `src/redis/lua/`, once for every language: `time.lua` (exact u64
//! instants in Lua's doubles) followed by one algorithm's file. Redis runs each call of a
//! script atomically, so concurrent clients on any number of hosts decide one key as
//! threads decide one in-process limiter. Time is the server's clock (`TIME`), so the
//! clients' clocks never matter; the `_at` forms pass the time instead.
//!
//! ```no_run
//! use rate::redis::RedisLimiter;
//! use rate::Config;
//! let client = redis::Client::open("redis://127.0.0.1/").unwrap();
//! let mut connection = client.get_connection().unwrap();
//! // Each user may make one request per 2 s, whichever host serves it.
//! let limiter = RedisLimiter::new(&Config::gcra(1, 2_000_000_000), "api:")?;
//! if !limiter.acquire(&mut connection, b"bob", 1)?.allowed {
//!     // answer 429
//! }
//! # Ok::<(), rate::redis::RedisError>(())
//! ```

use std::fmt;

use crate::config::{Algorithm, Config};
use crate::decision::Decision;
use crate::error::{ConfigError, Error};
use crate::policy::Policy;

/// The largest duration the scripts hold as one Lua number: below it, doubles are exact.
const EXACT: u64 = 1 << 53;

/// The GCRA script: the instants prelude, then the algorithm.
const GCRA: &str = concat!(include_str!("lua/time.lua"), include_str!("lua/gcra.lua"));

/// The sliding log script: the instants prelude, then the ring.
const SLIDING_LOG: &str = concat!(
    include_str!("lua/time.lua"),
    include_str!("lua/sliding_log.lua")
);

/// The script deciding `config`'s algorithm, and the configuration arguments it takes after
/// the three every script takes (now, n, max_wait).
fn script_of(config: &Config, policy: &Policy) -> Result<(&'static str, Vec<u64>), Error> {
    let not_exact = Error::InvalidConfig(ConfigError::NotExactOnRedis);
    match config.algorithm {
        Algorithm::Gcra => {
            let burst = policy.limit();
            let emission_interval = config.period_ns / config.limit;
            // τ = B·T bounds every duration the script holds as a number (n·T ≤ τ).
            match burst.checked_mul(emission_interval) {
                Some(tolerance) if tolerance < EXACT => Ok((GCRA, vec![emission_interval, burst])),
                _ => Err(not_exact),
            }
        }
        // The period is the one duration held as a number; positions are kept modulo L
        // (below 3·L), so no bound on L·(2⁶⁴/P) is needed beyond the in-process one.
        Algorithm::SlidingLog if config.period_ns < EXACT => {
            Ok((SLIDING_LOG, vec![config.limit, config.period_ns]))
        }
        Algorithm::SlidingLog => Err(not_exact),
        _ => Err(Error::Unsupported),
    }
}

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
pub struct RedisLimiter {
    config: Config,
    /// Checks each request as the in-process limiter does.
    policy: Policy,
    /// The script's configuration arguments (see [`script_of`]).
    config_args: Vec<u64>,
    prefix: Vec<u8>,
    script: redis::Script,
}

impl RedisLimiter {
    /// A limiter of `config` for the keys under `prefix`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a configuration the in-process limiter rejects, or
    /// ([`ConfigError::NotExactOnRedis`]) one whose durations reach 2⁵³ ns (104 days),
    /// which Lua's doubles cannot hold exactly; [`Error::Unsupported`] for an algorithm
    /// this tier does not decide yet (GCRA and the sliding log so far).
    ///
    /// The exact bounds: GCRA needs `burst × ⌊period / limit⌋ < 2⁵³`; the sliding log
    /// needs `period < 2⁵³` and nothing more (besides the in-process limits: `limit ≤ 2²⁰`,
    /// `limit × (⌊(2⁶⁴ − 1) / period⌋ + 1) ≤ 2⁶⁴ − 257`). The log's head (the units ever
    /// admitted) reaches `limit × 2⁶⁴ / period` in process, but a decision reads only its
    /// remainder modulo `limit` and whether it has reached `limit`: the script keeps it as
    /// it is below `limit`, else as `limit` plus that remainder, so every position it holds
    /// is below `3 × limit ≤ 3 × 2²⁰`. Its timestamps are exact u64 instants (seconds and
    /// nanoseconds), so no time is refused.
    pub fn new(config: &Config, prefix: impl AsRef<[u8]>) -> Result<Self, Error> {
        let policy = Policy::new(config)?;
        let (source, config_args) = script_of(config, &policy)?;
        Ok(Self {
            config: *config,
            policy,
            config_args,
            prefix: prefix.as_ref().to_vec(),
            script: redis::Script::new(source),
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
        self.decide(connection, key, n, None, 0)
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
        self.decide(connection, key, n, Some(now_ns), 0)
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
        self.decide(connection, key, n, None, max_wait_ns)
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
        self.decide(connection, key, n, Some(now_ns), max_wait_ns)
    }

    fn decide(
        &self,
        connection: &mut impl redis::ConnectionLike,
        key: &[u8],
        n: u64,
        now_ns: Option<u64>,
        max_wait_ns: u64,
    ) -> Result<Decision, RedisError> {
        self.policy
            .check(n, Some(max_wait_ns).filter(|&wait| wait > 0))?;
        let mut invocation = self.script.key(self.redis_key(key));
        invocation
            .arg(now_ns.map_or_else(String::new, |now| now.to_string()))
            .arg(n)
            .arg(max_wait_ns)
            .arg(&self.config_args);
        let reply: Vec<redis::Value> = invocation.invoke(connection)?;
        decision_of(&reply)
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
