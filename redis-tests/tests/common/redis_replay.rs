//! The Redis tier's differential model (docs/redis.md): random requests replayed through an
//! in-process limiter and through Redis, every decision and refusal compared field for
//! field, and every admission's expiry checked.

use super::refused;
use librate::redis::{RedisError, RedisLimiter};
use librate::{Algorithm, Config, Decision, Instant, Limiter};
use std::time::Duration;

use super::{Rng, MS};

/// The largest state a limiter stores (docs/clock.md): 2^64 − 257.
pub const MAX_STATE: u64 = u64::MAX - 256;

/// Replays 100 random requests on one key through `config`'s in-process limiter and
/// through Redis, asserting equal every decision and every refusal, and after each
/// admission the expiry the script set. Times start near 0, anywhere below 2⁴⁰, near the
/// end of the timeline or anywhere, and move forward, back, to window edges and to the
/// last instants of the timeline; costs include 0, 1, the limit and one past it; reserves
/// wait 0, anything, or forever.
pub fn replay(redis: &mut redis::Connection, config: &Config, case: u64, rng: &mut Rng) {
    let local = Limiter::new(config).unwrap();
    let remote = RedisLimiter::new(config, format!("model:{case}:")).unwrap();
    let mut redis = Unexpiring::new(redis, vec![remote.redis_key(b"k")]);
    let period = config.period().as_nanos() as u64;
    let capacity = match config.algorithm {
        Algorithm::Gcra if config.burst > 0 => config.burst,
        _ => config.limit,
    };
    let base = match case % 4 {
        0 => 0,
        1 => rng.range(0, 1 << 40),
        2 => MAX_STATE.saturating_sub(rng.below(20u64.saturating_mul(period))),
        _ => rng.next_u64(),
    };
    let mut now = base;
    for step in 0..100 {
        now = match rng.below(100) {
            0..=14 => now.saturating_sub(rng.below(period.saturating_mul(2))),
            15..=24 => base.saturating_add(rng.below(period.saturating_mul(4))),
            // The timeline's last instants, late in the replay: past them every request
            // is decided in the last window.
            25..=29 if step >= 80 => u64::MAX - rng.below(3),
            28..=30 => rng.below(3),
            31..=55 => (now / period)
                .checked_add(rng.below(3))
                .and_then(|window| window.checked_mul(period))
                .map_or(now, |edge| {
                    edge.saturating_add(rng.below(5)).saturating_sub(2)
                }),
            _ => now.saturating_add(rng.below(period)),
        };
        let n = match rng.below(6) {
            0 => 0,
            1 => rng.range(1, 3),
            2 => capacity,
            3 => capacity + 1,
            _ => rng.below(capacity + 2),
        };
        // Half the GCRA requests are reserves; on a window, a few, all refused.
        let reserves = if config.algorithm == Algorithm::Gcra {
            50
        } else {
            10
        };
        let max_wait = rng.chance(reserves).then(|| match rng.below(4) {
            0 => 0,
            1 => u64::MAX - rng.below(2),
            _ => rng.below(period.saturating_mul(3)),
        });
        let want = match max_wait {
            None => local
                .acquire_at(n, Instant::from_nanos(now))
                .map_err(refused),
            Some(wait) => {
                (local.reserve_at(n, Instant::from_nanos(now), Duration::from_nanos(wait)))
                    .map_err(refused)
            }
        };
        let call = |redis: &mut Unexpiring| match max_wait {
            None => remote.acquire_at(redis, b"k", n, Instant::from_nanos(now)),
            Some(wait) => remote.reserve_at(
                redis,
                b"k",
                n,
                Instant::from_nanos(now),
                Duration::from_nanos(wait),
            ),
        };
        let mut got = call(&mut redis);
        while matches!(&got, Ok(admitted) if admitted.allowed && n > 0) && redis.expired() {
            // The key expired between the script and `PERSIST` (Unexpiring): again.
            redis.undo();
            got = call(&mut redis);
        }
        let context = format!("{config:?} step {step}: n {n} at {now}, max_wait {max_wait:?}");
        match (want, got) {
            (Ok(want), Ok(got)) => {
                assert_eq!(got, want, "{context}");
                if want.allowed && n > 0 {
                    redis.assert_kept_for(expiry(config, &want), &context);
                }
            }
            (Err(want), Err(RedisError::Rate(got))) => assert_eq!(refused(got), want, "{context}"),
            (want, got) => panic!("{context}: {want:?} against {got:?}"),
        }
    }
}

/// How long after an admission its key must live (docs/keyed.md, fresh again): GCRA until its
/// TAT, which `reset_after_ns` reaches; the windows until nothing is counted in the
/// window of now or the one before, the start of the window after next, which the sliding
/// window's reset reaches once something is counted and the fixed window's comes a period
/// before. `None` where the reset lies past the end of the timeline.
fn expiry(config: &Config, admitted: &Decision) -> Option<u128> {
    let reset = u128::from(admitted.reset_after_ns);
    (admitted.reset_after_ns < u64::MAX).then(|| match config.algorithm {
        Algorithm::FixedWindow => reset + config.period().as_nanos(),
        _ => reset,
    })
}

/// A connection on which some keys never expire by Redis's own clock, which runs unrelated
/// to the times the replay passes (a period of microseconds would end in Redis long before
/// the replay's time reaches it): each command runs in a transaction with `PTTL` and
/// `PERSIST` of each key, so the expiry a script set is read, then cleared.
///
/// Redis 7.0 does not stop its clock during a transaction, so a key that a script left to
/// live for 1 ms can still expire before `PERSIST` if Redis is descheduled for that long;
/// the transaction also saves the keys as they were before (`DUMP`), so that the replay
/// can [`undo`](Self::undo) such a command and run it again.
pub struct Unexpiring<'a> {
    connection: &'a mut redis::Connection,
    keys: Vec<Vec<u8>>,
    /// Each key's `DUMP` before the last command (`None`: it did not exist).
    before: Vec<Option<Vec<u8>>>,
    /// Each key's `PTTL` right after the last command (-2: it does not exist).
    ttls: Vec<i64>,
}

impl<'a> Unexpiring<'a> {
    pub fn new(connection: &'a mut redis::Connection, keys: Vec<Vec<u8>>) -> Self {
        Self {
            connection,
            before: vec![None; keys.len()],
            ttls: vec![-2; keys.len()],
            keys,
        }
    }

    /// Whether a key was gone right after the last command: after a write to every key,
    /// one that expired before `PERSIST`.
    pub fn expired(&self) -> bool {
        self.ttls.contains(&-2)
    }

    /// Puts the keys back as they were before the last command.
    pub fn undo(&mut self) {
        for (key, before) in self.keys.iter().zip(&self.before) {
            let command = match before {
                Some(dump) => redis::cmd("RESTORE")
                    .arg(key)
                    .arg(0)
                    .arg(dump)
                    .arg("REPLACE")
                    .clone(),
                None => redis::cmd("DEL").arg(key).clone(),
            };
            command.query::<()>(self.connection).unwrap();
        }
    }

    /// The last command left the key to expire `lead_ns` after now, rounded up to a
    /// millisecond (give or take the few ms between the script and `PTTL`).
    fn assert_kept_for(&self, lead_ns: Option<u128>, context: &str) {
        let Some(lead_ns) = lead_ns else {
            return;
        };
        let want = i64::try_from(lead_ns.div_ceil(u128::from(MS))).unwrap();
        let ttl = self.ttls[0];
        assert!(
            ttl <= want && ttl >= want - 50,
            "{context}: PTTL {ttl} ms, want {want}"
        );
    }
}

impl redis::ConnectionLike for Unexpiring<'_> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> redis::RedisResult<redis::Value> {
        let keys = self.keys.len();
        let mut packed = redis::cmd("MULTI").get_packed_command();
        for key in &self.keys {
            packed.extend(redis::cmd("DUMP").arg(key).get_packed_command());
        }
        packed.extend_from_slice(cmd);
        for command in ["PTTL", "PERSIST"] {
            for key in &self.keys {
                packed.extend(redis::cmd(command).arg(key).get_packed_command());
            }
        }
        packed.extend(redis::cmd("EXEC").get_packed_command());
        // Past MULTI's OK and a QUEUED for each command: EXEC's reply.
        let mut replies = self
            .connection
            .req_packed_commands(&packed, 2 + 3 * keys, 1)?;
        let Some(redis::Value::Array(mut results)) = replies.pop() else {
            panic!("EXEC answered {replies:?}");
        };
        for (index, before) in self.before.iter_mut().enumerate() {
            *before = redis::from_redis_value(&results[index])?;
        }
        for (index, ttl) in self.ttls.iter_mut().enumerate() {
            *ttl = redis::from_redis_value(&results[keys + 1 + index])?;
        }
        results.swap_remove(keys).extract_error()
    }

    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> redis::RedisResult<Vec<redis::Value>> {
        self.connection.req_packed_commands(cmd, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.connection.get_db()
    }

    fn check_connection(&mut self) -> bool {
        self.connection.check_connection()
    }

    fn is_open(&self) -> bool {
        self.connection.is_open()
    }
}
