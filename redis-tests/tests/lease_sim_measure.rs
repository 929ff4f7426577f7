//! The lease simulation's measurements (docs/leases.md), not tests: run by
//! `scripts/lease-sim.sh`, which writes them to docs/bench/leases.txt. Each line printed
//! with the prefix `LEASES ` is a row of that file. Nothing here asserts a time; the
//! promise is checked on every run, as in lease_sim.rs.

mod common;

use common::lease_demand::Demand;
use common::lease_sim::{self, Exit, Fault, Life, Run, Scenario, START_NS};
use common::promise::replay;
use common::redis_server::RedisServer;
use librate::redis::RedisLimiter;
use librate::{Config, Instant, LeaseRule};
use std::time::Duration;

fn row(text: impl AsRef<str>) {
    println!("LEASES {}", text.as_ref());
}

/// 10,000 units a second in bursts of 1,000, leased 2 s at a time (renewed every 500 ms).
fn rule() -> LeaseRule {
    LeaseRule::new(
        &Config::per_second(10_000).with_burst(1000),
        Duration::from_secs(2),
    )
    .unwrap()
}

/// 20 holders asking twice the rule, 80% of it from one, another every 10 s.
fn shifting() -> Scenario {
    let demand = Demand::Shifting {
        hot: 0.8,
        every: Duration::from_secs(10),
    };
    Scenario::new(rule(), 20, 20_000.0, demand)
}

/// Runs `scenario` on a fresh server; the over-admission found (units past the rule in
/// the worst interval, 0 if none) and the run.
fn run(scenario: &Scenario) -> (u64, Run) {
    let mut server = RedisServer::start().expect("the measurements need a redis-server");
    let mut run = lease_sim::run(scenario, &mut server);
    let over = match replay(&mut run.log, scenario.promise()) {
        Ok(()) => 0,
        Err(violation) => violation.excess,
    };
    (over, run)
}

/// Admitted units over the rule's capacity (⌊Δ/T⌋) in renewal periods `periods`.
fn utilization(scenario: &Scenario, run: &Run, periods: std::ops::Range<usize>) -> f64 {
    let every = scenario.rule.renew_every().as_nanos() as f64;
    let t = scenario.promise().interval_ns as f64;
    let admitted: u64 = run.periods[periods.clone()]
        .iter()
        .map(|p| p.admitted)
        .sum();
    let requested: u64 = run.periods[periods.clone()]
        .iter()
        .map(|p| p.requested)
        .sum();
    let capacity = periods.len() as f64 * every / t;
    admitted as f64 / capacity.min(requested as f64)
}

fn percent(fraction: f64) -> String {
    format!("{:.1}%", fraction * 100.0)
}

#[test]
#[ignore = "measurements: scripts/lease-sim.sh"]
fn measure() {
    let every = rule().renew_every();
    let period_of = |s: f64| (s / every.as_secs_f64()) as usize;
    row("| scenario (rule 10,000/s, B 1,000, leases 2 s renewed every 500 ms) | holders | demand / rule | virtual s | admitted units | over-admission (units) | utilization after 10 s | decisions without a share | Redis calls / holder / s |");
    row("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut scenarios: Vec<(&str, Scenario)> = vec![
        (
            "steady",
            Scenario::new(rule(), 50, 20_000.0, Demand::Steady),
        ),
        (
            "skewed (Zipf, s = 1)",
            Scenario::new(rule(), 50, 20_000.0, Demand::Zipf { s: 1.0 }),
        ),
        (
            "skewed (Zipf, s = 1), demand 1.2x",
            Scenario::new(rule(), 50, 12_000.0, Demand::Zipf { s: 1.0 }),
        ),
        (
            "shifting (80% on one holder, moving every 10 s)",
            shifting(),
        ),
        (
            "bursty (on 200 ms of every 2 s)",
            Scenario::new(
                rule(),
                20,
                20_000.0,
                Demand::Bursty {
                    on: Duration::from_millis(200),
                    every: Duration::from_secs(2),
                },
            ),
        ),
        (
            "skewed, requests of 1 to 8 units",
            Scenario::new(rule(), 50, 20_000.0, Demand::Zipf { s: 1.0 }),
        ),
    ];
    scenarios[5].1.max_units = 8;
    let mut churn = Scenario::new(rule(), 30, 20_000.0, Demand::Steady);
    churn.lives = (0..30)
        .map(|h| Life {
            joins: Duration::from_millis(h as u64 * 500),
            exits: match h % 3 {
                0 => None,
                1 => Some((Duration::from_secs(20 + h as u64), Exit::Release)),
                _ => Some((Duration::from_secs(25 + h as u64), Exit::Kill)),
            },
        })
        .collect();
    scenarios.push(("joining, leaving, killed", churn));
    let mut faults = Scenario::new(rule(), 50, 20_000.0, Demand::Zipf { s: 1.0 });
    faults.faults = vec![
        Fault::Unreachable {
            from: Duration::from_secs(15),
            to: Duration::from_secs(20),
            holder: None,
        },
        Fault::Flush {
            at: Duration::from_secs(30),
        },
        Fault::Stop {
            at: Duration::from_secs(40),
        },
        Fault::Restart {
            at: Duration::from_secs(45),
        },
    ];
    scenarios.push((
        "faults: unreachable 15-20 s, flushed at 30 s, stopped 40-45 s",
        faults,
    ));
    let mut first_leases = String::new();
    for (name, scenario) in &mut scenarios {
        scenario.duration = Duration::from_secs(60);
        let (over, run) = run(scenario);
        let periods = period_of(10.0)..period_of(60.0);
        let admitted: u64 = run.log.iter().map(|a| a.units).sum();
        let calls = run.calls as f64 / scenario.holders as f64 / 60.0;
        let unshared = (run.unshared + run.fallback) as f64 / run.decisions as f64;
        row(format!(
            "| {name} | {} | {:.1} | 60 | {admitted} | {over} | {} | {} | {calls:.2} |",
            scenario.holders,
            scenario.total_rate / 10_000.0,
            percent(utilization(scenario, &run, periods)),
            percent(unshared)
        ));
        if *name == "steady" {
            first_leases = format!(
                "the first 8 s of the steady run, utilization a lease (2 s) at a time: {}",
                (0..4)
                    .map(|l| percent(utilization(
                        scenario,
                        &run,
                        period_of(2.0 * l as f64)..period_of(2.0 * (l + 1) as f64)
                    )))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    row("");
    row(format!("{first_leases} (the first lease length is quiet: Redis made the rule afresh; in the second the shares start empty and fill)"));
    converging();
    throughput();
}

/// Renewal periods, after each shift of the hot holder, until a period's utilization is
/// 90% or more.
fn converging() {
    let mut scenario = shifting();
    scenario.duration = Duration::from_secs(120);
    let (over, run) = run(&scenario);
    let per_shift = 20; // 10 s of 500 ms periods
    let mut after = Vec::new();
    for shift in 1..12 {
        let first = shift * per_shift;
        let settled = (first..first + per_shift)
            .position(|p| utilization(&scenario, &run, p..p + 1) >= 0.9)
            .map_or("never".to_owned(), |p| p.to_string());
        after.push(settled);
    }
    let dips: Vec<String> = (1..12)
        .map(|shift| {
            let first = shift * per_shift;
            let worst = (first..first + per_shift)
                .map(|p| utilization(&scenario, &run, p..p + 1))
                .fold(f64::MAX, f64::min);
            percent(worst)
        })
        .collect();
    row("");
    row(format!(
        "renewal periods (500 ms) after each move of the hot holder (80% of a demand 2x the rule, 20 holders, every 10 s, 11 moves) until a period is 90% used: {}; the worst period after each move: {}; over-admission {over} units",
        after.join(", "),
        dips.join(", ")
    ));
}

/// Decisions a second that 1,000 simulated holders sustain (the simulation's wall clock,
/// its renewals included), with leases of 2 s and of 10 s, against
/// `RedisLimiter::acquire_at` in a loop on one connection.
fn throughput() {
    row("");
    let mut leased = Vec::new();
    for lease in [2, 10] {
        let rule = LeaseRule::new(
            &Config::per_second(1_000_000).with_burst(100_000),
            Duration::from_secs(lease),
        )
        .unwrap();
        let mut scenario = Scenario::new(rule, 1000, 2_000_000.0, Demand::Zipf { s: 1.0 });
        // Measured over 6 s from two renewal periods after the second lease length: the
        // first is quiet, and in the second the first holder to renew holds the whole
        // rule (it alone has told Redis its demand).
        scenario.measure_from = Duration::from_millis(2 * 1000 * lease + 2 * 250 * lease);
        scenario.duration = scenario.measure_from + Duration::from_secs(6);
        let (over, run) = run(&scenario);
        let measured = run.measured;
        let per_second = measured.decisions as f64 / measured.wall.as_secs_f64();
        row(format!(
            "1,000 holders, rule 1,000,000/s (B 100,000), demand 2x (Zipf), leases {lease} s renewed every {} ms, measured over 6 virtual s after {} s: {} decisions and {} renewals in {:.2} s wall ({:.2} s of it in renewal calls, {:.0} µs a renewal): {per_second:.0} decisions/s; over-admission {over} units",
            lease * 250,
            scenario.measure_from.as_secs_f64(),
            measured.decisions,
            measured.renewals,
            measured.wall.as_secs_f64(),
            measured.renewing.as_secs_f64(),
            measured.renewing.as_secs_f64() * 1e6 / measured.renewals as f64,
        ));
        leased.push(per_second);
    }
    let server = RedisServer::start().unwrap();
    let mut connection = server.connection();
    let limiter = RedisLimiter::new(&Config::per_second(1_000_000), "measure").unwrap();
    let started = std::time::Instant::now();
    let mut decisions = 0u64;
    while started.elapsed() < Duration::from_secs(3) {
        let at = Instant::from_nanos(START_NS + decisions * 1000);
        limiter
            .acquire_at(&mut connection, b"k", 1, at)
            .expect("a decision in Redis");
        decisions += 1;
    }
    let redis_per_second = decisions as f64 / started.elapsed().as_secs_f64();
    row(format!(
        "RedisLimiter::acquire_at in a loop on one connection, same run: {redis_per_second:.0} decisions/s; the simulation / Redis per decision: {:.1}x (leases of 2 s), {:.1}x (leases of 10 s)",
        leased[0] / redis_per_second,
        leased[1] / redis_per_second
    ));
}
