//! Leases (docs/leases.md) simulated and checked: many sans-IO holders on one virtual
//! timeline against a real `redis-server`, under steady, skewed, shifting and bursty demand,
//! holders joining, leaving and killed, Redis unreachable, stopped and flushed; and
//! `LeasedLimiter`s in processes of their own on real time. Every admission is logged and
//! the log checked against the global rule alone (tests/common/promise.rs), by a check
//! shown here to fail when the rule is broken.
//!
//! The rule throughout: 1,000 units a second (T = 1 ms) in bursts of 20, leases of 1 s
//! renewed every 250 ms, so a holder stops deciding 1 ms (the margin) before Redis's end.

mod common;

use common::lease_demand::{Demand, Rng};
use common::lease_sim::{self, Exit, Fault, Life, Run, Scenario, START_NS};
use common::processes::{in_processes, Scratch};
use common::promise::{brute_force, replay, Admission, Rule, Violation};
use common::redis_server::RedisServer;
use librate::lease::{self, Fallback, HolderState, LeaseHolder, LeasedLimiter};
use librate::{Config, Instant, LeaseRule};
use std::time::Duration;

const MS: u64 = 1_000_000;
const SECOND: u64 = 1_000 * MS;

fn rule() -> LeaseRule {
    LeaseRule::new(
        &Config::per_second(1000).with_burst(20),
        Duration::from_secs(1),
    )
    .unwrap()
}

/// The promise of [`rule`]: T = 1 ms, B = 20.
const PROMISE: Rule = Rule {
    interval_ns: MS,
    burst: 20,
};

fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Runs `scenario` on a server of its own and checks its log; `None` without a server.
fn checked(scenario: &Scenario) -> Option<Run> {
    let mut server = RedisServer::start()?;
    let mut run = lease_sim::run(scenario, &mut server);
    if let Err(violation) = replay(&mut run.log, scenario.promise()) {
        panic!("the rule was exceeded: {violation:?}; {}", summary(&run));
    }
    Some(run)
}

fn summary(run: &Run) -> String {
    let admitted: u64 = run.log.iter().map(|a| a.units).sum();
    format!(
        "{} decisions, {admitted} units admitted, {} calls ({} failed, {} unshared), \
         decided leased {} / unshared {} / fallback {}",
        run.decisions,
        run.calls,
        run.failed,
        run.unshared_answers,
        run.leased,
        run.unshared,
        run.fallback
    )
}

/// The units holder `holder` (any, if `None`) admitted in [from, to) of the run's time.
fn admitted(run: &Run, holder: Option<u32>, from: f64, to: f64) -> u64 {
    let (from, to) = (START_NS + (from * 1e9) as u64, START_NS + (to * 1e9) as u64);
    run.log
        .iter()
        .filter(|a| (from..to).contains(&a.at_ns) && holder.map_or(true, |h| a.holder == h))
        .map(|a| a.units)
        .sum()
}

fn at(at_ns: u64, units: u64) -> Admission {
    Admission {
        at_ns,
        units,
        holder: 0,
    }
}

#[test]
fn the_check_allows_the_burst_and_a_unit_an_interval_and_not_one_more() {
    // B = 20 at once, then one unit at T: the rule's most.
    let mut most = vec![at(0, 20), at(MS, 1)];
    assert_eq!(replay(&mut most, PROMISE), Ok(()));
    assert_eq!(brute_force(&most, PROMISE), Ok(()));
    // One unit too many: 21 at once, or the unit 1 ns before T (20 + ⌊(T − 1)/T⌋ = 20).
    let mut at_once = vec![at(5, 10), at(5, 11)];
    let too_many = Violation {
        admission: at(5, 11),
        excess: 1,
        from_ns: 5,
    };
    assert_eq!(replay(&mut at_once, PROMISE), Err(too_many.clone()));
    assert_eq!(brute_force(&at_once, PROMISE), Err(too_many));
    let mut early = vec![at(MS - 1, 1), at(0, 20)];
    let too_early = Violation {
        admission: at(MS - 1, 1),
        excess: 1,
        from_ns: 0,
    };
    assert_eq!(replay(&mut early, PROMISE), Err(too_early.clone()));
    assert_eq!(brute_force(&early, PROMISE), Err(too_early));
    // A full second at the rate after a burst: 20 + 1,000 in [0, 1 s], one more is over.
    let mut second: Vec<Admission> = (1..=1000).map(|k| at(k * MS, 1)).collect();
    second.push(at(0, 20));
    assert_eq!(replay(&mut second, PROMISE), Ok(()));
    second.push(at(SECOND, 1));
    let over = replay(&mut second, PROMISE).unwrap_err();
    assert_eq!(
        (over.admission.at_ns, over.excess, over.from_ns),
        (SECOND, 1, 0)
    );
}

#[test]
fn the_replay_and_the_brute_force_agree_on_random_logs() {
    let mut rng = Rng::new(38);
    let mut failures = 0;
    for _ in 0..3000 {
        let rule = Rule {
            interval_ns: 1 + rng.below(5),
            burst: 1 + rng.below(4),
        };
        // Admissions about one an interval: some logs keep the rule, some do not.
        let mut t = 0;
        let mut log: Vec<Admission> = (0..1 + rng.below(25))
            .map(|_| {
                t += rng.below(3 * rule.interval_ns + 1);
                at(t, 1 + u64::from(rng.below(4) == 0))
            })
            .collect();
        let brute = brute_force(&log, rule);
        let replayed = replay(&mut log, rule);
        // Both find the same first instant over the rule (their counts differ only in
        // which admissions at that instant they include).
        assert_eq!(
            replayed.as_ref().map_err(|v| v.admission.at_ns),
            brute.as_ref().map_err(|v| v.admission.at_ns),
            "{log:?} under {rule:?}"
        );
        failures += usize::from(replayed.is_err());
    }
    // Both verdicts are common: the agreement means something.
    assert!((500..2500).contains(&failures), "{failures} of 3000 failed");
}

#[test]
fn two_holders_of_one_name_exceed_the_rule_and_the_check_says_so() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let mut redis = server.connection();
    // One name twice is one holder to Redis: each copy decides from the same share, so
    // the two admit twice the rule.
    let rule = rule();
    let twins = [0, 1].map(|_| LeaseHolder::named(&rule, Fallback::Deny, "twin").unwrap());
    let mut log = Vec::new();
    for step in 0..4_000u64 {
        // A request of each every 0.5 ms, a renewal of each every 250 ms.
        let t = START_NS + step * MS / 2;
        for (h, twin) in twins.iter().enumerate() {
            if step % 500 == 0 {
                lease::renew(
                    &mut redis,
                    lease_sim::KEY,
                    twin,
                    Some(Instant::from_nanos(t)),
                )
                .unwrap();
            }
            if twin.try_acquire_at(1, Instant::from_nanos(t)).unwrap() {
                log.push(Admission {
                    at_ns: t,
                    units: 1,
                    holder: h as u32,
                });
            }
        }
    }
    assert!(replay(&mut log.clone(), PROMISE).is_err());
    assert!(brute_force(&log, PROMISE).is_err());
    // Each copy alone kept the rule.
    for h in 0..2 {
        let mut alone: Vec<Admission> = log.iter().copied().filter(|a| a.holder == h).collect();
        assert_eq!(replay(&mut alone, PROMISE), Ok(()));
    }
}

#[test]
fn steady_demand_past_the_rule_keeps_it_and_the_brute_force_agrees() {
    let mut scenario = Scenario::new(rule(), 4, 1500.0, Demand::Steady);
    scenario.duration = seconds(6.0);
    let Some(run) = checked(&scenario) else {
        return;
    };
    assert_eq!(brute_force(&run.log, PROMISE), Ok(()));
    // The first second is quiet (a rule Redis has not seen); in the next the first holder
    // to renew holds the whole rule; from the third on the four shares use nearly all of
    // it (demand is 1.5 times the rule): at least 90% of the 3,000 units of [3 s, 6 s).
    // (Were the first holder's whole-rule lease counted as held for as long as it kept
    // renewing, the others would get nothing and this would be a quarter.)
    assert_eq!(admitted(&run, None, 0.0, 1.0), 0);
    assert!(admitted(&run, None, 3.0, 6.0) >= 2700, "{}", summary(&run));
}

#[test]
fn skewed_demand_keeps_the_rule() {
    let mut scenario = Scenario::new(rule(), 16, 3000.0, Demand::Zipf { s: 1.0 });
    scenario.max_units = 3;
    scenario.seed = 2;
    checked(&scenario);
}

#[test]
fn shifting_demand_keeps_the_rule() {
    let demand = Demand::Shifting {
        hot: 0.8,
        every: seconds(3.0),
    };
    let mut scenario = Scenario::new(rule(), 8, 2000.0, demand);
    scenario.seed = 3;
    checked(&scenario);
}

#[test]
fn bursty_demand_keeps_the_rule() {
    let demand = Demand::Bursty {
        on: seconds(0.2),
        every: seconds(2.0),
    };
    let mut scenario = Scenario::new(rule(), 8, 1500.0, demand);
    scenario.max_units = 4;
    scenario.seed = 4;
    checked(&scenario);
}

#[test]
fn holders_joining_leaving_and_killed_keep_the_rule() {
    let mut scenario = Scenario::new(rule(), 10, 2500.0, Demand::Steady);
    scenario.seed = 5;
    let life = |joins: f64, exits: Option<(f64, Exit)>| Life {
        joins: seconds(joins),
        exits: exits.map(|(s, exit)| (seconds(s), exit)),
    };
    scenario.lives = vec![
        life(0.0, None),
        life(0.0, Some((5.0, Exit::Kill))),
        life(0.0, Some((8.0, Exit::Release))),
        life(0.0, Some((12.3, Exit::Kill))),
        life(3.0, None),
        life(3.1, Some((9.0, Exit::Release))),
        life(6.0, Some((14.0, Exit::Kill))),
        life(10.0, None),
        life(0.0, Some((4.0, Exit::Release))),
        life(15.0, Some((17.5, Exit::Release))),
    ];
    let Some(run) = checked(&scenario) else {
        return;
    };
    // Gone holders decide nothing after they leave.
    assert_eq!(admitted(&run, Some(1), 5.0, 20.0), 0);
    assert_eq!(admitted(&run, Some(9), 17.5, 20.0), 0);
}

#[test]
fn redis_unreachable_for_every_holder_longer_than_a_lease_keeps_the_rule() {
    let mut scenario = Scenario::new(rule(), 6, 2000.0, Demand::Steady);
    scenario.seed = 6;
    scenario.duration = seconds(12.0);
    scenario.faults = vec![Fault::Unreachable {
        from: seconds(5.0),
        to: seconds(8.0),
        holder: None,
    }];
    let Some(run) = checked(&scenario) else {
        return;
    };
    // Every lease was granted before 5 s and ends by 6 s less the margin: from then to
    // the first renewal at 8 s or later, every holder denies (Fallback::Deny).
    assert_eq!(admitted(&run, None, 6.0 - 0.001, 8.0), 0);
    assert!(run.fallback > 0, "{}", summary(&run));
    assert!(admitted(&run, None, 8.5, 12.0) > 0, "{}", summary(&run));
}

#[test]
fn one_holder_cut_off_from_redis_stops_at_its_lease_end_and_the_others_keep_the_rule() {
    let mut scenario = Scenario::new(rule(), 4, 2000.0, Demand::Steady);
    scenario.seed = 7;
    scenario.duration = seconds(12.0);
    scenario.faults = vec![Fault::Unreachable {
        from: seconds(4.0),
        to: seconds(7.0),
        holder: Some(0),
    }];
    let Some(run) = checked(&scenario) else {
        return;
    };
    assert_eq!(admitted(&run, Some(0), 5.0 - 0.001, 7.0), 0);
    assert!(admitted(&run, Some(1), 5.0, 7.0) > 0, "{}", summary(&run));
}

#[test]
fn a_redis_stopped_longer_than_a_lease_and_restarted_empty_keeps_the_rule() {
    let mut scenario = Scenario::new(rule(), 6, 2000.0, Demand::Steady);
    scenario.seed = 8;
    scenario.duration = seconds(14.0);
    scenario.faults = vec![
        Fault::Stop { at: seconds(5.0) },
        Fault::Restart { at: seconds(7.5) },
    ];
    let Some(run) = checked(&scenario) else {
        return;
    };
    assert!(run.failed >= 6 * 9, "{}", summary(&run));
    // Leases end by 6 s; the restarted Redis has not seen the rule, so it is quiet for a
    // lease from the first renewal after 7.5 s: nothing is admitted before 8.5 s.
    assert_eq!(admitted(&run, None, 6.0 - 0.001, 8.5), 0);
    assert!(admitted(&run, None, 9.0, 14.0) > 0, "{}", summary(&run));
}

#[test]
fn a_redis_flushed_mid_run_keeps_the_rule() {
    let mut scenario = Scenario::new(rule(), 6, 2000.0, Demand::Zipf { s: 1.0 });
    scenario.seed = 9;
    scenario.duration = seconds(12.0);
    scenario.faults = vec![Fault::Flush { at: seconds(6.0) }];
    let Some(run) = checked(&scenario) else {
        return;
    };
    assert!(admitted(&run, None, 8.0, 12.0) > 0, "{}", summary(&run));
}

#[test]
fn a_holder_without_a_lease_or_an_answer_says_so_and_decides_by_its_local_rule() {
    let Some(mut server) = RedisServer::start() else {
        return;
    };
    let mut redis = server.connection();
    // The local rule: 10 a second (T = 100 ms) in bursts of 2.
    let local = Config::per_second(10).with_burst(2);
    let holder = LeaseHolder::named(&rule(), Fallback::Local(local), "alone").unwrap();
    let t = |ms: u64| Instant::from_nanos(START_NS + ms * MS);
    assert_eq!(holder.state_at(t(0)), HolderState::Fallback);
    assert_eq!(
        [0, 0, 0].map(|_| holder.try_acquire_at(1, t(0)).unwrap()),
        [true, true, false]
    );
    assert!(holder.try_acquire_at(1, t(100)).unwrap());
    // Redis answers quiet (a rule it has not seen) for a lease, 1 s: no share, and no
    // fallback either, until 1 s less the margin after the holder asked.
    assert_eq!(
        lease::renew(&mut redis, lease_sim::KEY, &holder, Some(t(200))).unwrap(),
        HolderState::Unshared
    );
    assert!(!holder.try_acquire_at(1, t(500)).unwrap());
    assert_eq!(holder.state_at(t(1198)), HolderState::Unshared);
    assert_eq!(holder.state_at(t(1199)), HolderState::Fallback);
    // At 1.2 s the whole rule, leased until 2.2 s less 1 ms, starting empty.
    assert_eq!(
        lease::renew(&mut redis, lease_sim::KEY, &holder, Some(t(1200))).unwrap(),
        HolderState::Leased
    );
    assert!(!holder.try_acquire_at(1, t(1200)).unwrap());
    assert!(holder.try_acquire_at(1, t(1201)).unwrap());
    // Redis goes away: the lease runs to its end, then the local rule decides again.
    server.stop();
    assert!(lease::renew(&mut redis, lease_sim::KEY, &holder, Some(t(1450))).is_err());
    let end = Instant::from_nanos(START_NS + 2199 * MS);
    let just_before = Instant::from_nanos(end.as_nanos() - 1);
    assert_eq!(holder.state_at(just_before), HolderState::Leased);
    assert_eq!(holder.state_at(end), HolderState::Fallback);
    assert_eq!(
        [0, 0, 0].map(|_| holder.try_acquire_at(1, end).unwrap()),
        [true, true, false]
    );
}

/// LeasedLimiters in processes of their own on real time, renewed by their threads on the
/// server's clock: their admissions, logged on CLOCK_MONOTONIC (one clock for every
/// process of a host), keep the rule.
#[test]
fn leased_limiters_in_processes_keep_the_rule_on_real_time() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    const PROCESSES: usize = 3;
    // 2,000 a second in bursts of 50, leases of 400 ms (renewed every 100 ms).
    let rule = LeaseRule::new(
        &Config::per_second(2000).with_burst(50),
        Duration::from_millis(400),
    )
    .unwrap();
    let scratch = Scratch::new("lease-sim");
    let url = server.url();
    let statuses = in_processes(PROCESSES, |index| {
        let client = redis::Client::open(url.as_str()).unwrap();
        let limiter = LeasedLimiter::open(client, lease_sim::KEY, &rule, Fallback::Deny).unwrap();
        let mut admitted = Vec::new();
        let started = std::time::Instant::now();
        // A unit every 200 µs or so: 5,000 a second asked of each process.
        while started.elapsed() < Duration::from_millis(2500) {
            let now = Instant::now();
            if limiter.holder().try_acquire_at(1, now).unwrap() {
                admitted.extend_from_slice(&now.as_nanos().to_le_bytes());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        limiter.close().unwrap();
        std::fs::write(scratch.path(&format!("{index}")), admitted).unwrap();
        0
    });
    assert_eq!(statuses, vec![0; PROCESSES]);
    let mut log = Vec::new();
    for index in 0..PROCESSES {
        let bytes = std::fs::read(scratch.path(&format!("{index}"))).unwrap();
        log.extend(bytes.chunks_exact(8).map(|word| Admission {
            at_ns: u64::from_le_bytes(word.try_into().unwrap()),
            units: 1,
            holder: index as u32,
        }));
    }
    let promise = Rule {
        interval_ns: 500_000,
        burst: 50,
    };
    assert_eq!(replay(&mut log, promise), Ok(()));
    // After the first lease length (quiet), 2 s at up to 2,000 a second: some admitted.
    assert!(log.len() > 100, "{} admitted", log.len());
}
