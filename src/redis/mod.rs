//! The Redis tier (docs/redis.md): one limit per key across hosts, decided inside the caller's
//! Redis (or Valkey) by librate's Lua scripts, with the decisions of docs/decision.md bit for bit.
//!
//! The scripts live in `src/redis/lua/`, once for every language, and `scripts.rs` puts
//! each together: `request.lua` (the request's time and cost), `time.lua` (exact u64
//! instants in Lua's doubles), each algorithm's exact decision (the window counters'
//! sharing `windows.lua`), its decision near now in plain numbers (`*_near.lua`, falling
//! back to the exact one, built only then), and `keys.lua`, which decides each key a call
//! names, so a batch of keys is one script call. Redis runs each call of a script atomically,
//! so concurrent clients on any number of hosts decide one key as threads decide one
//! in-process limiter. Time is the server's clock (`TIME`), so the clients' clocks never
//! matter; the `_at` forms pass the time instead.
//!
//! The scripts and their arguments are all this module decides; the clients that send them
//! are each language's: `RedisLimiter` over the `redis` crate (the `redis` cargo feature),
//! and the Python and Go packages, which take the script and its arguments from librate's
//! C ABI (`rate_redis_prepare`), so every language runs the same bytes.
//!
//! The Rust client is split by job: `exchange.rs` is one request's conversation with
//! Redis without its I/O (the script calls, `NOSCRIPT` and `CROSSSLOT`), `reply.rs` turns
//! replies into decisions, `client.rs` sends the calls over a blocking connection and
//! `asynchronous.rs` (the `redis-async` cargo feature) over an async one.

#[cfg(feature = "redis-async")]
mod asynchronous;
#[cfg(feature = "redis")]
mod client;
#[cfg(feature = "redis")]
mod error;
#[cfg(feature = "redis")]
mod exchange;
#[cfg(feature = "redis")]
mod layout;
#[cfg(feature = "redis")]
mod policy;
#[cfg(feature = "redis")]
mod reply;
mod scripts;
mod slot;

#[cfg(feature = "redis")]
pub use client::RedisLimiter;
#[cfg(feature = "redis")]
pub use error::RedisError;
#[cfg(feature = "redis")]
pub use policy::RedisPolicy;
pub use slot::{slot, SLOTS};

use crate::config::{Algorithm, Config};
use crate::decider::Decider;
use crate::error::{ConfigError, InsufficientCapacity, ReserveError};
use scripts::Kind;
use std::time::Duration;

/// The largest duration the scripts hold as one Lua number: below it, doubles are exact.
const EXACT: u64 = 1 << 53;

/// What a client needs to decide one configuration on Redis: the script and the
/// configuration arguments it takes after the three every script takes (`now`, `n`,
/// `max_wait`).
#[derive(Clone, Debug)]
pub struct Script {
    /// The Lua source, NUL-terminated (for C).
    source: &'static str,
    /// The configuration arguments.
    pub config_args: Vec<u64>,
    /// Checks each request as the in-process limiter does.
    decider: Decider,
}

impl Script {
    /// The script and arguments for `config`.
    ///
    /// # Errors
    /// The [`ConfigError`] of a configuration the in-process limiter rejects, or
    /// [`ConfigError::NotExactOnRedis`] for one whose durations reach 2⁵³ ns (104 days),
    /// which Lua's doubles cannot hold exactly: GCRA's `burst × (period_ns / limit)`, or a
    /// window's or the sliding log's `period_ns` (every other number a window script
    /// holds, counts included, then stays below 2⁵³).
    ///
    /// The log's head (the units ever admitted) reaches `limit × 2⁶⁴ / period` in process,
    /// but a decision reads only its remainder modulo `limit` and whether it has reached
    /// `limit`: the script keeps it as it is below `limit`, else as `limit` plus that
    /// remainder, so every position it holds is below `3 × limit ≤ 3 × 2²⁰`. Its
    /// timestamps are exact u64 instants (seconds and nanoseconds), so no time is refused.
    pub fn of(config: &Config) -> Result<Self, ConfigError> {
        let decider = Decider::new(config)?;
        let (kind, config_args) = script_of(config, &decider)?;
        Ok(Self {
            source: kind.source_with_nul(),
            config_args,
            decider,
        })
    }

    /// The Lua source.
    pub fn source(&self) -> &'static str {
        self.source.trim_end_matches('\0')
    }

    /// The Lua source with its NUL, for C (the C ABI's `rate_redis_prepare`).
    #[doc(hidden)]
    pub fn source_with_nul(&self) -> &'static str {
        self.source
    }

    /// The most units one request may take (GCRA: the burst; windows: the limit).
    pub fn limit(&self) -> u64 {
        self.decider.limit()
    }

    /// Checks a request as the in-process limiter does: `n` within the limit, and a
    /// reserve (`max_wait` given) only for GCRA.
    ///
    /// # Errors
    /// [`ReserveError::Acquire`] if `n` exceeds the limit; [`ReserveError::Unsupported`]
    /// for a reserve on a window algorithm.
    pub fn check(
        &self,
        n: u64,
        max_wait: Option<Duration>,
    ) -> Result<(), ReserveError<InsufficientCapacity>> {
        match max_wait {
            Some(_) => self.decider.check_reserve(n),
            None => Ok(self.decider.check(n)?),
        }
    }
}

/// What a client needs to decide a policy on Redis: the policy script and the arguments
/// it takes after the three every script takes (`now`, `n`, `max_wait`, always 0): the
/// rule count, then each rule's algorithm number and its two configuration arguments.
#[derive(Clone, Debug)]
pub struct PolicyScript {
    /// The arguments after `now`, `n` and `max_wait`.
    pub config_args: Vec<u64>,
    /// The least of the rules' limits: the largest cost the policy can ever admit.
    limit: u64,
}

impl PolicyScript {
    /// The script and arguments for a policy of `rules`.
    ///
    /// # Errors
    /// [`ConfigError::PolicyRules`] for no rule or more than
    /// [`MAX_RULES`](crate::MAX_RULES), else [`ConfigError::PolicyRule`] naming the first
    /// rule [`Script::of`] refuses and its reason.
    pub fn of(rules: &[Config]) -> Result<Self, ConfigError> {
        if rules.is_empty() || rules.len() > crate::policy::MAX_RULES {
            return Err(ConfigError::PolicyRules { rules: rules.len() });
        }
        let mut config_args = vec![rules.len() as u64];
        let mut limit = u64::MAX;
        for (index, rule) in rules.iter().enumerate() {
            let in_rule = |error: ConfigError| error.in_rule(index);
            let decider = Decider::new(rule).map_err(in_rule)?;
            let (_, rule_args) = script_of(rule, &decider).map_err(in_rule)?;
            config_args.push(rule.algorithm as u64);
            config_args.extend(rule_args);
            limit = limit.min(decider.limit());
        }
        Ok(Self { config_args, limit })
    }

    /// The Lua source.
    pub fn source(&self) -> &'static str {
        self.source_with_nul().trim_end_matches('\0')
    }

    /// The Lua source with its NUL, for C (the C ABI's `rate_redis_prepare`).
    #[doc(hidden)]
    pub fn source_with_nul(&self) -> &'static str {
        Kind::Policy.source_with_nul()
    }

    /// The largest cost the policy can ever admit: the least of its rules' limits.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Checks a request as the in-process policy does: `n` within every rule's limit.
    ///
    /// # Errors
    /// [`InsufficientCapacity`].
    pub fn check(&self, n: u64) -> Result<(), InsufficientCapacity> {
        if n > self.limit {
            Err(InsufficientCapacity)
        } else {
            Ok(())
        }
    }
}

/// The script deciding `config`'s algorithm, and the configuration arguments it takes after
/// the three every script takes (now, n, max_wait).
fn script_of(config: &Config, decider: &Decider) -> Result<(Kind, Vec<u64>), ConfigError> {
    let not_exact = ConfigError::NotExactOnRedis;
    match config.algorithm {
        // A rule that never refills (an allowance) has no script: refused, rather than
        // run as a bucket refilling once per 2⁶⁴/L ns.
        _ if config.period() == Config::FOREVER => Err(not_exact),
        Algorithm::Gcra => {
            let burst = decider.limit();
            let emission_interval = config.period_ns / config.limit;
            // τ = B·T bounds every duration the script holds as a number (n·T ≤ τ).
            match burst.checked_mul(emission_interval) {
                Some(tolerance) if tolerance < EXACT => {
                    Ok((Kind::Gcra, vec![emission_interval, burst]))
                }
                _ => Err(not_exact),
            }
        }
        Algorithm::FixedWindow | Algorithm::SlidingWindow => {
            let script = if config.algorithm == Algorithm::FixedWindow {
                Kind::FixedWindow
            } else {
                Kind::SlidingWindow
            };
            // Every duration the scripts hold as a number is below P (a time elapsed in a
            // window, a remainder modulo P). With P < 2⁵³ the window bound (checked by
            // `Decider::new`) leaves L < 2⁵², so a count plus a cost stays below 2⁵³ too.
            debug_assert!(config.period_ns >= EXACT || config.limit < EXACT / 2);
            if config.period_ns < EXACT {
                Ok((script, vec![config.limit, config.period_ns]))
            } else {
                Err(not_exact)
            }
        }
        // The period is the one duration held as a number; positions are kept modulo L
        // (below 3·L), so no bound on L·(2⁶⁴/P) is needed beyond the in-process one.
        Algorithm::SlidingLog if config.period_ns < EXACT => {
            Ok((Kind::SlidingLog, vec![config.limit, config.period_ns]))
        }
        Algorithm::SlidingLog => Err(not_exact),
    }
}
