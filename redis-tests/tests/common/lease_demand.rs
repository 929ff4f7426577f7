//! What the lease simulation (lease_sim.rs) asks of its holders: how a total demand
//! divides among them over time, and the fixed-seed random numbers that place their
//! requests, so that a failure reproduces.

use std::time::Duration;

/// xorshift64* (Vigna, "An experimental exploration of Marsaglia's xorshift generators"):
/// small, and the same numbers on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Any state but 0; the odd constant spreads small seeds.
        Self((seed ^ 0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in (0, 1].
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

/// How the total demand divides among holders over time: each holder's fraction of it.
#[derive(Clone, Copy, Debug)]
pub enum Demand {
    /// Evenly.
    Steady,
    /// Holder h in proportion to 1/(h+1)^s.
    Zipf { s: f64 },
    /// One hot holder has `hot` of the demand, the others share the rest evenly; the hot
    /// one is holder ⌊t/every⌋ mod n.
    Shifting { hot: f64, every: Duration },
    /// Each holder asks only during `on` of every `every` (phases spread over holders), at
    /// the rate that keeps its average an even share.
    Bursty { on: Duration, every: Duration },
}

/// A [`Demand`] over `n` holders.
pub struct Shape {
    demand: Demand,
    n: usize,
    /// Σ 1/k^s over the holders, for Zipf.
    zipf_total: f64,
}

impl Shape {
    pub fn new(demand: Demand, n: usize) -> Self {
        let zipf_total = match demand {
            Demand::Zipf { s } => (1..=n).map(|k| (k as f64).powf(-s)).sum(),
            _ => 1.0,
        };
        Self {
            demand,
            n,
            zipf_total,
        }
    }

    /// Holder `h`'s fraction of the demand at `at_ns`.
    pub fn fraction(&self, h: usize, at_ns: u64) -> f64 {
        let n = self.n;
        match self.demand {
            Demand::Steady => 1.0 / n as f64,
            Demand::Zipf { s } => ((h + 1) as f64).powf(-s) / self.zipf_total,
            Demand::Shifting { hot, every } => {
                let hot_one = (at_ns / every.as_nanos() as u64) as usize % n;
                (1.0 - hot) / n as f64 + if h == hot_one { hot } else { 0.0 }
            }
            Demand::Bursty { on, every } => {
                let (on, every) = (on.as_nanos() as u64, every.as_nanos() as u64);
                let phase = (at_ns + h as u64 * every / n as u64) % every;
                if phase < on {
                    every as f64 / on as f64 / n as f64
                } else {
                    0.0
                }
            }
        }
    }

    /// The largest fraction holder `h` ever has.
    pub fn peak(&self, h: usize) -> f64 {
        let n = self.n;
        match self.demand {
            Demand::Steady | Demand::Zipf { .. } => self.fraction(h, 0),
            Demand::Shifting { hot, .. } => (1.0 - hot) / n as f64 + hot,
            Demand::Bursty { on, every } => every.as_secs_f64() / on.as_secs_f64() / n as f64,
        }
    }
}
