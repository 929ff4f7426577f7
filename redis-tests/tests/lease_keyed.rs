//! Keyed leases on a real `redis-server` (docs/leases.md, keys): requests decided in Redis
//! by the lease scripts take what the key's leases leave, every value worked out by hand;
//! and holders that lease their hot keys and send the rest to Redis, on virtual time,
//! never admit more for a key than its rule alone would.

mod common;

use common::promise::{self, Admission};
use common::redis_server::{server, RedisServer};
use librate::lease::{
    acquire_in_redis, renew, renew_keys, Fallback, KeyedLeaseHolder, KeyedLeasedLimiter,
    LeaseHolder,
};
use librate::redis::RedisError;
use librate::{Config, Decision, Instant, LeaseRule};
use std::time::Duration;

const MS: u64 = 1_000_000;

fn at_ms(ms: u64) -> Instant {
    Instant::from_nanos(ms * MS)
}

/// A decision as (allowed, limit, remaining, retry_after_us, reset_after_us).
fn fields(decision: Decision) -> (bool, u64, u64, u64, u64) {
    (
        decision.allowed,
        decision.limit,
        decision.remaining,
        decision.retry_after_ns / 1000,
        decision.reset_after_ns / 1000,
    )
}

/// Decides `n` units for key "a" under `prefix` in Redis at `us` µs on the timeline.
fn decide(
    redis: &mut redis::Connection,
    prefix: &[u8],
    rule: &LeaseRule,
    n: u64,
    us: u64,
) -> (bool, u64, u64, u64, u64) {
    let at = Instant::from_nanos(us * 1000);
    fields(acquire_in_redis(redis, prefix, b"a", rule, n, Some(at)).unwrap())
}

#[test]
fn gcra_requests_in_redis_take_what_the_leases_leave() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    // T = 100 ms, B = 10; leases of 2 s.
    let rule = LeaseRule::new(
        &Config::gcra(10, Duration::from_secs(1)),
        Duration::from_secs(2),
    )
    .unwrap();
    // A request made the hash: the whole rule, full, as the rule alone decides.
    assert_eq!(
        decide(&mut redis, b"k:", &rule, 4, 0),
        (true, 10, 6, 0, 400_000)
    );
    assert_eq!(
        decide(&mut redis, b"k:", &rule, 7, 0),
        (false, 10, 6, 100_000, 400_000)
    );
    assert_eq!(
        decide(&mut redis, b"k:", &rule, 0, 0),
        (true, 10, 6, 0, 400_000)
    );
    // 11 units is more than the rule's burst: the caller's error, never sent.
    let past = acquire_in_redis(&mut redis, b"k:", b"a", &rule, 11, Some(at_ms(0)));
    assert!(matches!(past, Err(RedisError::Rate(_))), "{past:?}");

    // A holder asking 100 ms in: the rule is quiet for a lease from when it was made.
    let holder = LeaseHolder::named(&rule, Fallback::Deny, "h").unwrap();
    renew(&mut redis, b"k:a", &holder, Some(at_ms(100))).unwrap();
    assert_eq!(holder.granted().burst, 0);

    // Full again at 2.1 s: one taken, 100 ms to full.
    assert_eq!(
        decide(&mut redis, b"k:", &rule, 1, 2_100_000),
        (true, 10, 9, 0, 100_000)
    );

    // The holder asks again at 2.1 s with no demand of its own. The requests here asked
    // for 11 units (4, and 7 denied) in the lease before (0 to 2 s): 11 · T / lease = 55%
    // of the rule. Their 55% is met, and the spare 45% split evenly: the holder gets
    // 22.5%, and a burst of ⌊10 · 0.225⌋ = 2.
    renew(&mut redis, b"k:a", &holder, Some(at_ms(2100))).unwrap();
    let granted = holder.granted();
    assert_eq!((granted.rate, granted.burst), (225_000, 2));

    // What is left for requests here: 77.5%, one unit every ⌈100 ms / 0.775⌉ =
    // 129,032,259 ns, and a burst of 8. Their 9 tokens are cut to the new burst, 8.
    let every = 129_032_259u64;
    assert_eq!(
        decide(&mut redis, b"k:", &rule, 8, 2_100_000),
        (true, 8, 0, 0, (8 * every).div_ceil(1000))
    );
    assert_eq!(
        decide(&mut redis, b"k:", &rule, 1, 2_100_000),
        (
            false,
            8,
            0,
            every.div_ceil(1000),
            (8 * every).div_ceil(1000)
        )
    );
    // 9 units is more than what is left can ever hold: ask again after a lease.
    assert_eq!(decide(&mut redis, b"k:", &rule, 9, 2_100_000).3, 2_000_000);
}

#[test]
fn window_requests_in_redis_count_beside_the_counts_granted() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    // 10 a window of 1 s; leases of 2 s.
    let rule = LeaseRule::new(
        &Config::fixed_window(10, Duration::from_secs(1)),
        Duration::from_secs(2),
    )
    .unwrap();
    assert_eq!(
        decide(&mut redis, b"w:", &rule, 4, 0),
        (true, 10, 6, 0, 1_000_000)
    );
    assert_eq!(
        decide(&mut redis, b"w:", &rule, 7, 100),
        (false, 10, 6, 999_900, 999_900)
    );
    assert_eq!(
        decide(&mut redis, b"w:", &rule, 6, 100),
        (true, 10, 0, 0, 999_900)
    );

    // The window made by a request is quiet for grants to its end. In window 1 the
    // requests here asked for 17 units in the window before (more than the limit): their
    // demand is the whole window, as the holder's is, so each gets half, 5.
    let holder = LeaseHolder::named(&rule, Fallback::Deny, "h").unwrap();
    renew(&mut redis, b"w:a", &holder, Some(at_ms(200))).unwrap();
    assert_eq!(holder.granted().burst, 0);
    holder.try_acquire_at(10, at_ms(500)).unwrap();
    renew(&mut redis, b"w:a", &holder, Some(at_ms(1000))).unwrap();
    assert_eq!(holder.granted().burst, 5);
    assert_eq!(
        decide(&mut redis, b"w:", &rule, 5, 1_000_001),
        (true, 10, 0, 0, 999_999)
    );
    assert_eq!(
        decide(&mut redis, b"w:", &rule, 1, 1_000_001),
        (false, 10, 0, 999_999, 999_999)
    );
}

#[test]
fn a_window_a_renewal_made_waits_for_its_end_before_requests() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    let rule = LeaseRule::new(
        &Config::fixed_window(10, Duration::from_secs(1)),
        Duration::from_secs(2),
    )
    .unwrap();
    // A renewal made the rule (Redis may have lost it): the window's counts may all be
    // in use until it ends at 1 s.
    let holder = LeaseHolder::named(&rule, Fallback::Deny, "h").unwrap();
    renew(&mut redis, b"w:b", &holder, Some(at_ms(500))).unwrap();
    let decided = acquire_in_redis(&mut redis, b"w:", b"b", &rule, 1, Some(at_ms(600))).unwrap();
    assert_eq!(fields(decided), (false, 10, 10, 400_000, 400_000));
    let decided = acquire_in_redis(&mut redis, b"w:", b"b", &rule, 1, Some(at_ms(1000))).unwrap();
    assert_eq!(fields(decided), (true, 10, 9, 0, 1_000_000));
}

/// A small deterministic generator (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// What a run of [`simulate`] logged: each key's admissions, the holders as they ended,
/// and how many requests were decided in process and in Redis.
struct Simulated {
    logs: Vec<Vec<Admission>>,
    holders: Vec<KeyedLeaseHolder>,
    in_process: u64,
    in_redis: u64,
}

/// The keys of [`simulate`], hot, warm and cold.
const KEYS: [&[u8]; 3] = [b"hot", b"warm", b"cold"];

/// Four holders of `rule` (leases of 1 s renewed every 200 ms) under `prefix`, 8 s of
/// virtual time in steps of 1 ms. A key is leased at a holder once it asks for 60 units
/// between rounds. "hot": 0.6 requests a ms at holders 0 and 1 (about 180 units a round:
/// leased there), 0.1 at the others (30 a round: decided in Redis), all together about
/// ten times a rule of 200 a second; "warm": one in 20 ms anywhere; "cold": one in 400
/// ms anywhere. Holder 1 stops deciding for good at 5 s, its leases left to lapse.
fn simulate(redis: &mut redis::Connection, rule: &LeaseRule, prefix: &[u8]) -> Simulated {
    let holders: Vec<_> = (0..4)
        .map(|i| KeyedLeaseHolder::named(rule, 60, 8, &format!("h{i}")).unwrap())
        .collect();
    let mut logs: Vec<Vec<Admission>> = vec![Vec::new(); KEYS.len()];
    let (mut in_process, mut in_redis) = (0u64, 0u64);
    let mut lcg = Lcg(7);
    for ms in 0..8000u64 {
        let at = at_ms(ms);
        if ms % 200 == 0 {
            for holder in &holders {
                renew_keys(redis, prefix, holder, Some(at)).unwrap();
            }
        }
        for (index, holder) in holders.iter().enumerate() {
            if index == 1 && ms >= 5000 {
                continue;
            }
            let hot = if index < 2 { 6 } else { 1 };
            for (k, key) in KEYS.iter().enumerate() {
                let chance = [10, 200, 4000][k];
                if lcg.below(chance) >= [hot, 10, 10][k] {
                    continue;
                }
                let units = 1 + lcg.below(2);
                let admitted = match holder.try_acquire_at(key, units, at).unwrap() {
                    Some(admitted) => {
                        in_process += 1;
                        admitted
                    }
                    None => {
                        in_redis += 1;
                        acquire_in_redis(redis, prefix, key, rule, units, Some(at))
                            .unwrap()
                            .allowed
                    }
                };
                if admitted {
                    logs[k].push(Admission {
                        at_ns: at.as_nanos(),
                        units,
                        holder: index as u32,
                    });
                }
            }
        }
    }
    Simulated {
        logs,
        holders,
        in_process,
        in_redis,
    }
}

/// The hot key was leased where it is hot and decided there in process; the others were
/// not leased.
fn check_the_leasing(run: &Simulated) {
    let holders = &run.holders;
    assert!(holders[0].is_leased(b"hot") && !holders[2].is_leased(b"hot"));
    assert!(!holders[0].is_leased(b"warm") && !holders[0].is_leased(b"cold"));
    assert!(
        run.in_process > run.in_redis,
        "{} in process, {} in Redis",
        run.in_process,
        run.in_redis
    );
}

#[test]
fn holders_of_hot_keys_and_requests_in_redis_never_pass_a_keys_rule() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    // Per key: 200 a second, T = 5 ms, B = 20.
    let config = Config::gcra(20, Duration::from_millis(100));
    let rule = LeaseRule::new(&config, Duration::from_secs(1))
        .and_then(|rule| rule.renewing_every(Duration::from_millis(200)))
        .unwrap();
    let mut run = simulate(&mut redis, &rule, b"sim:");
    let limit = promise::Rule {
        interval_ns: 5 * MS,
        burst: 20,
    };
    for (k, log) in run.logs.iter_mut().enumerate() {
        assert!(!log.is_empty(), "key {k} admitted nothing");
        promise::brute_force(log, limit).unwrap();
        promise::replay(log, limit).unwrap();
    }
    check_the_leasing(&run);
}

#[test]
fn holders_of_hot_keys_and_requests_in_redis_never_pass_a_keys_window() {
    let Some((_server, mut redis)) = server() else {
        return;
    };
    // Per key: 200 a window of 1 s (renewed five times a window).
    let config = Config::fixed_window(200, Duration::from_secs(1));
    let rule = LeaseRule::new(&config, Duration::from_secs(1))
        .and_then(|rule| rule.renewing_every(Duration::from_millis(200)))
        .unwrap();
    let run = simulate(&mut redis, &rule, b"simw:");
    for (k, log) in run.logs.iter().enumerate() {
        assert!(!log.is_empty(), "key {k} admitted nothing");
        let mut per_window = std::collections::BTreeMap::<u64, u64>::new();
        for admission in log {
            *per_window.entry(admission.at_ns / (1000 * MS)).or_default() += admission.units;
        }
        let over: Vec<_> = per_window
            .iter()
            .filter(|(_, &units)| units > 200)
            .collect();
        assert!(over.is_empty(), "key {k}: windows over the limit {over:?}");
    }
    check_the_leasing(&run);
}

/// Waits up to 10 s for `done`; fails saying `what` otherwise.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !done() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "waited 10 s for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_keyed_limiter_leases_what_is_hot_falls_back_and_hands_back() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let client = redis::Client::open(server.url().as_str()).unwrap();
    let mut connection = client.get_connection().unwrap();
    // 1,000 a second per key, leased 1 s at a time, renewed every 100 ms; a key is leased
    // once it asks for 10 units between renewals.
    let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(1))
        .and_then(|rule| rule.renewing_every(Duration::from_millis(100)))
        .unwrap();
    let limiter =
        KeyedLeasedLimiter::open(client.clone(), "kl:", &rule, 10, 4, Fallback::Deny).unwrap();
    // A key Redis never saw: decided there, admitted at once.
    assert!(limiter.try_acquire(&mut connection, b"hot", 1).unwrap());
    assert!(!limiter.holder().is_leased(b"hot"));
    // Asked for often, it is leased, and (after the rule's quiet lease) decided in
    // process: a query then finds a share.
    wait_until("the hot key decided in process", || {
        for _ in 0..20 {
            limiter.try_acquire(&mut connection, b"hot", 1).unwrap();
        }
        limiter.holder().try_acquire(b"hot", 0) == Ok(Some(true))
    });
    // Units past the rule's burst are refused, never sent.
    assert!(limiter.try_acquire(&mut connection, b"cold", 1001).is_err());
    // A key decided in Redis has the fields of what its leases leave: none, so the whole
    // rule, the key new to Redis: 1,000 units, 999 left, full again in 1 ms.
    let decided = limiter.acquire(&mut connection, b"new", 1).unwrap();
    assert_eq!(
        (decided.allowed, decided.limit, decided.remaining),
        (true, 1000, 999)
    );
    assert_eq!(decided.reset_after_ns, 1_000_000);
    // Closing hands the hot key's share back: its holder's record is gone.
    limiter.close().unwrap();
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg("kl:hot")
        .query(&mut connection)
        .unwrap();
    assert!(fields.contains(&"agg".to_owned()), "{fields:?}");
    assert!(
        fields.iter().all(|field| !field.starts_with("h:")),
        "{fields:?}"
    );

    // Redis stops: a key that must go there is decided by the fallback, here a local
    // rule of 2 an hour; with Fallback::Deny, denied.
    let local = Config::per_hour(1).with_burst(2);
    let falling_back =
        KeyedLeasedLimiter::open(client.clone(), "kl:", &rule, 10, 4, Fallback::Local(local))
            .unwrap();
    let denying =
        KeyedLeasedLimiter::open(client.clone(), "kl:", &rule, 10, 4, Fallback::Deny).unwrap();
    falling_back.enable_counts();
    denying.enable_counts();
    server.stop();
    let admitted: Vec<bool> = (0..3)
        .map(|_| {
            falling_back
                .try_acquire(&mut connection, b"cold", 1)
                .unwrap()
        })
        .collect();
    assert_eq!(admitted, [true, true, false]);
    assert!(!denying.try_acquire(&mut connection, b"cold", 1).unwrap());
    // Counted as any decision (docs/metrics.md): the fallback's too.
    let counts = falling_back.counts().unwrap();
    assert_eq!((counts.admitted, counts.denied), (2, 1));
    let counts = denying.counts().unwrap();
    assert_eq!((counts.admitted, counts.denied), (0, 1));
    // Denied by the fallback: ask again after a renewal interval.
    let denied = denying.acquire(&mut connection, b"cold", 1).unwrap();
    assert!(!denied.allowed);
    assert_eq!(denied.retry_after_ns, 100_000_000);
}
