//! The global rule's promise, checked from a log of every admission of every holder
//! (docs/leases.md): over any interval of length Δ, a GCRA rule of emission interval T and
//! burst B admits at most B + ⌊Δ/T⌋ units.
//!
//! Two checks, written from the definition in docs/decision.md and not through librate:
//! [`replay`] runs the log, sorted by time, through a reference GCRA (every admission must
//! be one it admits), and [`brute_force`] sums every closed interval between two admission
//! times. The two say the same: a reference GCRA admits a unit at tⱼ iff, for every earlier
//! admission time tᵢ, the units in [tᵢ, tⱼ] are at most B + ⌊(tⱼ − tᵢ)/T⌋ (its TAT after
//! tⱼ is the largest tᵢ + T·(units in [tᵢ, tⱼ])), so the brute force, quadratic, cross-checks
//! the replay on small logs.

/// One admission: `units` admitted by `holder` at `at_ns`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    pub at_ns: u64,
    pub units: u64,
    pub holder: u32,
}

/// The first admission the rule alone would not have made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The admission, in time order.
    pub admission: Admission,
    /// Units over the rule in the worst interval ending at it (at least 1).
    pub excess: u64,
    /// Where that interval starts.
    pub from_ns: u64,
}

/// The rule: emission interval T in ns and burst B.
#[derive(Clone, Copy, Debug)]
pub struct Rule {
    pub interval_ns: u64,
    pub burst: u64,
}

impl Rule {
    /// The most units the rule admits in a closed interval of `span_ns`: B + ⌊Δ/T⌋.
    pub fn allows(&self, span_ns: u64) -> u64 {
        self.burst + span_ns / self.interval_ns
    }
}

/// Sorts `log` by time (the order of admissions at one instant does not change a GCRA's
/// verdict: only their sum counts) and replays it through a reference GCRA, TAT in u128:
/// an admission of n at t is admitted iff max(TAT, t) + n·T − t ≤ B·T, and then TAT
/// becomes max(TAT, t) + n·T. The reference starts full (TAT = 0), as the rule alone would.
pub fn replay(log: &mut [Admission], rule: Rule) -> Result<(), Violation> {
    log.sort_by_key(|admission| admission.at_ns);
    let interval = u128::from(rule.interval_ns);
    let tau = u128::from(rule.burst) * interval;
    let mut tat: u128 = 0;
    for (index, admission) in log.iter().enumerate() {
        let t = u128::from(admission.at_ns);
        let after = tat.max(t) + u128::from(admission.units) * interval;
        if after - t > tau {
            return Err(worst_before(log, index, rule));
        }
        tat = after;
    }
    Ok(())
}

/// The worst closed interval ending at admission `end` of `log` (sorted by time), counting
/// the admissions logged before it at its instant and not those after.
fn worst_before(log: &[Admission], end: usize, rule: Rule) -> Violation {
    let last = log[end];
    let mut units = 0u64;
    let mut worst = (0u64, last.at_ns);
    for start in (0..=end).rev() {
        units += log[start].units;
        let allowed = rule.allows(last.at_ns - log[start].at_ns);
        if units > allowed && units - allowed > worst.0 {
            worst = (units - allowed, log[start].at_ns);
        }
    }
    Violation {
        admission: last,
        excess: worst.0,
        from_ns: worst.1,
    }
}

/// Every closed interval between two admission times, summed directly: the first (by its
/// end) holding more than B + ⌊Δ/T⌋ units. Quadratic in the distinct times: small logs.
pub fn brute_force(log: &[Admission], rule: Rule) -> Result<(), Violation> {
    let mut log = log.to_vec();
    log.sort_by_key(|admission| admission.at_ns);
    // Units per distinct instant, in order.
    let mut instants: Vec<(u64, u64)> = Vec::new();
    for admission in &log {
        match instants.last_mut() {
            Some((at, units)) if *at == admission.at_ns => *units += admission.units,
            _ => instants.push((admission.at_ns, admission.units)),
        }
    }
    for end in 0..instants.len() {
        let mut units = 0u64;
        let mut worst: Option<(u64, u64)> = None;
        for start in (0..=end).rev() {
            units += instants[start].1;
            let allowed = rule.allows(instants[end].0 - instants[start].0);
            if units > allowed && worst.map_or(true, |(excess, _)| units - allowed > excess) {
                worst = Some((units - allowed, instants[start].0));
            }
        }
        if let Some((excess, from_ns)) = worst {
            // The last admission logged at this instant.
            let at = instants[end].0;
            let admission = *log.iter().rev().find(|a| a.at_ns == at).unwrap();
            return Err(Violation {
                admission,
                excess,
                from_ns,
            });
        }
    }
    Ok(())
}
