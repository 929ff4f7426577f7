//! The shapes `lease.rs` and `lease_pairs.rs` time a leased decision in, against an
//! in-process one on the same rule: a busy bucket and an idle one, as `gcra.rs` measures.
//! The holder's lease is granted by applying a hand-made grant of the whole rule, so no
//! Redis is needed: sent at time 0 and lasting 100 years, it is live throughout; the share,
//! emptied at time 0, has refilled by now (the machine has been up longer than the rule's
//! τ), and both are then prefilled alike.

use std::time::Duration;

use librate::lease::{Fallback, Grant, HolderState, LeaseHolder};
use librate::{Config, Instant, LeaseRule, Limiter};

/// A lease that outlasts any run (below the 2⁵³ µs a lease may last).
const LEASE: Duration = Duration::from_secs(100 * 365 * 86_400);

/// A rule and the units taken before the measured calls.
pub(crate) struct Shape {
    pub(crate) label: &'static str,
    pub(crate) config: Config,
    prefill: u64,
}

/// The shapes of `gcra.rs`'s `gcra_busy` and `gcra_idle`: T = 100 ns with τ = 429 s and a
/// TAT 100 ms ahead of now (the coarse clock settles every decision), and T = 1 ns
/// (every call finds the bucket full again).
pub(crate) fn shapes() -> [Shape; 2] {
    [
        Shape {
            label: "gcra_busy",
            config: Config::per_second(10_000_000).with_burst(u64::from(u32::MAX)),
            prefill: 1_000_000,
        },
        Shape {
            label: "gcra_idle",
            config: Config::per_second(1_000_000_000),
            prefill: 0,
        },
    ]
}

impl Shape {
    pub(crate) fn limiter(&self) -> Limiter {
        let limiter = Limiter::new(&self.config).expect("bench rules are valid");
        let prefill = limiter.acquire_at(self.prefill, Instant::now());
        assert!(prefill.expect("prefill ≤ burst").allowed, "{}", self.label);
        limiter
    }

    /// A holder of the whole rule, leased from time 0 for [`LEASE`].
    pub(crate) fn holder(&self) -> LeaseHolder {
        let rule = LeaseRule::new(&self.config, LEASE).expect("bench rules lease");
        let holder = LeaseHolder::named(&rule, Fallback::Deny, "bench").unwrap();
        let burst = match self.config.burst {
            0 => self.config.limit,
            burst => burst,
        };
        let lease_us = LEASE.as_micros() as u64;
        let whole = 1_000_000;
        let grant = Grant::from_fields(b"granted", [whole, burst, lease_us, 0, whole, burst, 1, 0])
            .unwrap();
        let renewal = holder.renewal_at(Instant::ZERO);
        let state = holder.apply_at(&renewal, &grant, Instant::ZERO).unwrap();
        assert_eq!(state, HolderState::Leased);
        let prefill = holder.acquire_at(self.prefill, Instant::now());
        assert!(prefill.expect("prefill ≤ burst").allowed, "{}", self.label);
        holder
    }
}
