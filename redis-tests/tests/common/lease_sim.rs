//! A simulation of many lease holders (docs/leases.md) on one virtual timeline against a
//! real `redis-server`: each holder is a sans-IO [`LeaseHolder`] that renews every
//! `renew_every` of virtual time (at a phase of its own) through
//! `librate::lease::renew(.., Some(at))`, and decides the requests a demand pattern sends
//! it; every admission is logged for [`promise`](super::promise) to check.
//!
//! Virtual time runs in rounds of one renewal period. A round's events (renewals, joins,
//! exits, faults) run in time order, and before each of a holder's events its requests up
//! to that instant are decided: holders interact only through Redis, at renewals, so this
//! order is the timeline's. Demand and random numbers are lease_demand.rs's.

use super::lease_demand::{Demand, Rng, Shape};
use super::promise::{Admission, Rule};
use super::redis_server::RedisServer;
use librate::lease::{self, Fallback, HolderState, LeaseHolder};
use librate::{Instant, LeaseRule};
use std::time::Duration;

/// Where every simulation keeps its rule.
pub const KEY: &[u8] = b"lease:{sim}";

/// The virtual time a run starts at.
pub const START_NS: u64 = 1_000_000_000;

/// How a holder leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Hands its share back (`librate::lease::release`).
    Release,
    /// Stops deciding and renewing, and says nothing: its lease lapses.
    Kill,
}

/// When a holder is there: from `joins` (it renews at once) to `exits`, if ever.
#[derive(Clone, Copy, Debug)]
pub struct Life {
    pub joins: Duration,
    pub exits: Option<(Duration, Exit)>,
}

/// What goes wrong, at virtual times from the run's start.
#[derive(Clone, Copy, Debug)]
pub enum Fault {
    /// The renewals of `holder` (every holder's if `None`) fail from `from` to `to`: each
    /// is asked for (its demand counted) and never answered.
    Unreachable {
        from: Duration,
        to: Duration,
        holder: Option<usize>,
    },
    /// `FLUSHALL`.
    Flush { at: Duration },
    /// The real redis-server is killed (renewals then fail on their own) ...
    Stop { at: Duration },
    /// ... and started again, empty.
    Restart { at: Duration },
}

/// A simulation to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub rule: LeaseRule,
    pub holders: usize,
    /// Units a second asked for by all holders together.
    pub total_rate: f64,
    pub demand: Demand,
    /// Each request asks for 1 to this many units.
    pub max_units: u64,
    pub duration: Duration,
    /// Holder i's life, when given (every holder is there throughout otherwise).
    pub lives: Vec<Life>,
    pub faults: Vec<Fault>,
    pub fallback: Fallback,
    pub seed: u64,
    /// Where the run's [`Measured`] part starts (the quiet first lease and the shares
    /// settling left out).
    pub measure_from: Duration,
}

impl Scenario {
    /// `holders` holders of `rule` throughout, `demand` summing to `total_rate` units a
    /// second in requests of one unit, denied without a lease.
    pub fn new(rule: LeaseRule, holders: usize, total_rate: f64, demand: Demand) -> Self {
        Self {
            rule,
            holders,
            total_rate,
            demand,
            max_units: 1,
            duration: Duration::from_secs(20),
            lives: Vec::new(),
            faults: Vec::new(),
            fallback: Fallback::Deny,
            seed: 1,
            measure_from: Duration::ZERO,
        }
    }

    /// The rule the promise is checked against.
    pub fn promise(&self) -> Rule {
        let config = self.rule.config();
        Rule {
            interval_ns: config.period().as_nanos() as u64 / config.limit,
            burst: if config.burst == 0 {
                config.limit
            } else {
                config.burst
            },
        }
    }

    fn life(&self, h: usize) -> Life {
        self.lives.get(h).copied().unwrap_or(Life {
            joins: Duration::ZERO,
            exits: None,
        })
    }
}

/// Counts over one renewal period of a run.
#[derive(Clone, Copy, Debug, Default)]
pub struct Period {
    pub requested: u64,
    pub admitted: u64,
}

/// What a run did.
#[derive(Debug, Default)]
pub struct Run {
    /// Every admission, in the order decided.
    pub log: Vec<Admission>,
    /// Requested and admitted units per renewal period from the start.
    pub periods: Vec<Period>,
    pub decisions: u64,
    /// Renewals sent to Redis (answered or not), and hand-backs.
    pub calls: u64,
    /// Renewals that got no answer (faults; a stopped server).
    pub failed: u64,
    /// Renewals answered with no share (quiet, or no room).
    pub unshared_answers: u64,
    /// From `measure_from` to the end.
    pub measured: Measured,
    /// Decisions made in each state.
    pub leased: u64,
    pub unshared: u64,
    pub fallback: u64,
}

/// One simulated holder.
struct Sim {
    holder: Option<LeaseHolder>,
    rng: Rng,
    /// Its renewals fall at this offset into every period.
    phase_ns: u64,
    /// The next candidate arrival (a Poisson process at the holder's peak rate, thinned).
    next_ns: u64,
    /// Its peak demand, units a second.
    peak: f64,
    /// Its peak rate of requests, per ns.
    arrivals_per_ns: f64,
    gone: bool,
}

/// Runs `scenario` against `server` (which faults stop and restart) and returns the log.
pub fn run(scenario: &Scenario, server: &mut RedisServer) -> Run {
    let mut link = Link::new(server.url());
    let every = scenario.rule.renew_every().as_nanos() as u64;
    let mean_units = (1 + scenario.max_units) as f64 / 2.0;
    let shape = Shape::new(scenario.demand, scenario.holders);
    let mut seeds = Rng::new(scenario.seed);
    let mut sims: Vec<Sim> = (0..scenario.holders)
        .map(|h| {
            let peak = scenario.total_rate * shape.peak(h);
            Sim {
                holder: None,
                rng: Rng::new(seeds.next_u64()),
                // Whole microseconds, as the script counts.
                phase_ns: seeds.below(every / 1000) * 1000,
                next_ns: START_NS + nanos(scenario.life(h).joins),
                peak,
                arrivals_per_ns: peak / mean_units / 1e9,
                gone: false,
            }
        })
        .collect();
    for sim in &mut sims {
        sim.next_ns += sim.gap();
    }
    let mut out = Run {
        periods: vec![Period::default(); (nanos(scenario.duration) / every + 1) as usize],
        ..Run::default()
    };
    let end = START_NS + nanos(scenario.duration);
    let mut round = START_NS;
    let measure_from = START_NS + nanos(scenario.measure_from);
    let mut started = None;
    while round < end {
        if round >= measure_from && started.is_none() {
            started = Some(std::time::Instant::now());
            out.measured.decisions = out.decisions;
            out.measured.renewals = out.calls;
        }
        let round_end = (round + every).min(end);
        for (at, event) in events(scenario, &sims, round, round_end) {
            match event {
                Event::Renew(h) | Event::Join(h) | Event::Exit(h, _) => {
                    advance(scenario, &shape, &mut sims[h], h, at, &mut out);
                }
                _ => {}
            }
            match event {
                Event::Join(h) => {
                    let name = format!("sim-{}-{h}", scenario.seed);
                    let holder = LeaseHolder::named(&scenario.rule, scenario.fallback, &name);
                    sims[h].holder = Some(holder.unwrap());
                    renew(scenario, &mut link, &sims[h], h, at, &mut out);
                }
                Event::Renew(h) => renew(scenario, &mut link, &sims[h], h, at, &mut out),
                Event::Exit(h, exit) => {
                    let holder = sims[h].holder.take().unwrap();
                    sims[h].gone = true;
                    if exit == Exit::Release {
                        out.calls += 1;
                        if link.release(&holder).is_err() {
                            out.failed += 1;
                        }
                    }
                }
                Event::Flush => link.flush(),
                Event::Stop => server.stop(),
                Event::Restart => server.restart(),
            }
        }
        for (h, sim) in sims.iter_mut().enumerate() {
            advance(scenario, &shape, sim, h, round_end, &mut out);
        }
        round = round_end;
    }
    if let Some(started) = started {
        out.measured.wall = started.elapsed();
        out.measured.decisions = out.decisions - out.measured.decisions;
        out.measured.renewals = out.calls - out.measured.renewals;
    }
    out
}

/// The wall-clock cost of a run's measured part: what the simulation loop sustains.
#[derive(Clone, Copy, Debug, Default)]
pub struct Measured {
    pub decisions: u64,
    pub renewals: u64,
    pub wall: Duration,
    /// Of `wall`, the time in renewal calls.
    pub renewing: Duration,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    Join(usize),
    Renew(usize),
    Exit(usize, Exit),
    Flush,
    Stop,
    Restart,
}

/// The events in [round, round_end), in time order (a holder's join before its renewal
/// at the same instant, and faults before both).
fn events(scenario: &Scenario, sims: &[Sim], round: u64, round_end: u64) -> Vec<(u64, Event)> {
    let within = |at: u64| (round..round_end).contains(&at);
    let mut events = Vec::new();
    for fault in &scenario.faults {
        let (at, event) = match *fault {
            Fault::Flush { at } => (at, Event::Flush),
            Fault::Stop { at } => (at, Event::Stop),
            Fault::Restart { at } => (at, Event::Restart),
            Fault::Unreachable { .. } => continue,
        };
        let at = START_NS + nanos(at);
        if within(at) {
            events.push((at, 0, event));
        }
    }
    for (h, sim) in sims.iter().enumerate() {
        let life = scenario.life(h);
        let joins = START_NS + nanos(life.joins);
        if within(joins) {
            events.push((joins, 1, Event::Join(h)));
        }
        let renews = round + sim.phase_ns;
        if within(renews) && renews > joins {
            events.push((renews, 2, Event::Renew(h)));
        }
        if let Some((exits, exit)) = life.exits {
            let exits = START_NS + nanos(exits);
            if within(exits) {
                events.push((exits, 3, Event::Exit(h, exit)));
            }
        }
    }
    events.sort_by_key(|&(at, order, _)| (at, order));
    events
        .into_iter()
        .map(|(at, _, event)| (at, event))
        .collect()
}

/// Renews holder `h`'s lease at `at`, unless a fault keeps the answer from it.
fn renew(scenario: &Scenario, link: &mut Link, sim: &Sim, h: usize, at: u64, out: &mut Run) {
    let Some(holder) = &sim.holder else { return };
    out.calls += 1;
    let cut_off = scenario.faults.iter().any(|fault| match *fault {
        Fault::Unreachable {
            from,
            to,
            holder: whose,
        } => {
            let (from, to) = (START_NS + nanos(from), START_NS + nanos(to));
            (from..to).contains(&at) && whose.map_or(true, |whose| whose == h)
        }
        _ => false,
    });
    if cut_off {
        // Asked for (the demand counted since the last one is gone), never answered.
        let _ = holder.renewal_at(Instant::from_nanos(at));
        out.failed += 1;
        return;
    }
    let started = std::time::Instant::now();
    let renewed = link.renew(holder, at);
    if at >= START_NS + nanos(scenario.measure_from) {
        out.measured.renewing += started.elapsed();
    }
    match renewed {
        Ok(HolderState::Leased) => {}
        Ok(_) => out.unshared_answers += 1,
        Err(()) => out.failed += 1,
    }
}

/// Decides holder `h`'s requests before `until`.
fn advance(scenario: &Scenario, shape: &Shape, sim: &mut Sim, h: usize, until: u64, out: &mut Run) {
    let every = scenario.rule.renew_every().as_nanos() as u64;
    while sim.next_ns < until {
        let at = sim.next_ns;
        sim.next_ns += sim.gap();
        let Some(holder) = &sim.holder else {
            if sim.gone {
                sim.next_ns = u64::MAX;
            }
            continue;
        };
        // Thinning: a candidate is a request with the holder's fraction now over its peak.
        let rate = shape.fraction(h, at) * scenario.total_rate;
        if sim.rng.unit() * sim.peak > rate {
            continue;
        }
        let units = 1 + sim.rng.below(scenario.max_units);
        let instant = Instant::from_nanos(at);
        match holder.state_at(instant) {
            HolderState::Leased => out.leased += 1,
            HolderState::Unshared => out.unshared += 1,
            HolderState::Fallback => out.fallback += 1,
        }
        let admitted = holder.try_acquire_at(units, instant).unwrap();
        out.decisions += 1;
        let period = &mut out.periods[((at - START_NS) / every) as usize];
        period.requested += units;
        if admitted {
            period.admitted += units;
            out.log.push(Admission {
                at_ns: at,
                units,
                holder: h as u32,
            });
        }
    }
}

impl Sim {
    /// The gap to the next candidate arrival: exponential at the peak rate.
    fn gap(&mut self) -> u64 {
        if self.arrivals_per_ns <= 0.0 {
            return u64::MAX / 2;
        }
        (-self.rng.unit().ln() / self.arrivals_per_ns).ceil() as u64
    }
}

/// The simulation's one connection, opened again after a failure (a restarted server).
struct Link {
    client: redis::Client,
    connection: Option<redis::Connection>,
}

impl Link {
    fn new(url: String) -> Self {
        Self {
            client: redis::Client::open(url).unwrap(),
            connection: None,
        }
    }

    fn connection(&mut self) -> redis::RedisResult<&mut redis::Connection> {
        if self.connection.is_none() {
            let opened = self
                .client
                .get_connection_with_timeout(Duration::from_secs(1))?;
            self.connection = Some(opened);
        }
        Ok(self.connection.as_mut().unwrap())
    }

    fn renew(&mut self, holder: &LeaseHolder, at: u64) -> Result<HolderState, ()> {
        let renewed = match self.connection() {
            Ok(connection) => {
                lease::renew(connection, KEY, holder, Some(Instant::from_nanos(at))).map_err(|_| ())
            }
            Err(_) => {
                // Asked for, as a real renewer would before finding Redis gone.
                let _ = holder.renewal_at(Instant::from_nanos(at));
                Err(())
            }
        };
        if renewed.is_err() {
            self.connection = None;
        }
        renewed
    }

    fn release(&mut self, holder: &LeaseHolder) -> Result<(), ()> {
        let released = match self.connection() {
            Ok(connection) => lease::release(connection, KEY, holder).map_err(|_| ()),
            Err(_) => Err(()),
        };
        if released.is_err() {
            self.connection = None;
        }
        released
    }

    fn flush(&mut self) {
        let connection = self.connection().unwrap();
        let _: () = redis::cmd("FLUSHALL").query(connection).unwrap();
    }
}

fn nanos(duration: Duration) -> u64 {
    duration.as_nanos() as u64
}
