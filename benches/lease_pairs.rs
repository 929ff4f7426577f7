//! A leased decision against an in-process one, timed in turns:
//! `cargo bench --bench lease_pairs`.
//!
//! `lease.rs` times each call on its own for seconds, and on a machine shared with other
//! jobs the two rows of a ratio may meet different loads. Here each round times a batch of
//! in-process `try_acquire` calls, then a batch of leased ones, on the shapes `lease.rs`
//! measures (`lease_shapes.rs`), so both meet the same moment's load. For each shape it
//! prints one line: each call's fastest round (the one the other jobs disturbed least),
//! the ratio of the two, and the median of the rounds' own ratios with its quartiles.

#![deny(missing_docs)]

use std::hint::black_box;
use std::time::Instant;

use librate::lease::{HolderState, LeaseHolder};
use librate::Limiter;

mod lease_shapes;
use lease_shapes::shapes;

/// Rounds timed, after one that warms up and is not counted.
const ROUNDS: usize = 400;
/// Calls a round makes of each side.
const CALLS: u32 = 250_000;

/// Each side's time a call (ns) in each round.
struct Rounds {
    in_process: Vec<f64>,
    leased: Vec<f64>,
}

fn main() {
    for shape in shapes() {
        let limiter = shape.limiter();
        let holder = shape.holder();
        let rounds = in_turns(&limiter, &holder);
        // A round in another shape measures the wrong case.
        let admits = limiter.try_acquire(1) == Ok(true) && holder.try_acquire(1) == Ok(true);
        assert!(admits, "{} stopped admitting", shape.label);
        assert_eq!(holder.state(), HolderState::Leased);
        println!("{}", report(shape.label, rounds));
    }
}

/// Times `limiter`'s `try_acquire(1)` then `holder`'s, [`CALLS`] calls each, round after
/// round.
fn in_turns(limiter: &Limiter, holder: &LeaseHolder) -> Rounds {
    let mut rounds = Rounds {
        in_process: Vec::with_capacity(ROUNDS),
        leased: Vec::with_capacity(ROUNDS),
    };
    for round in 0..=ROUNDS {
        // Each closure called from its loop alone, and inlined into it.
        let in_process = per_call(|| limiter.try_acquire(black_box(1)) == Ok(true));
        let leased = per_call(|| holder.try_acquire(black_box(1)) == Ok(true));
        if round > 0 {
            rounds.in_process.push(in_process);
            rounds.leased.push(leased);
        }
    }
    rounds
}

/// The time a call of [`CALLS`] calls to `call` took, in nanoseconds. Inlined with `call`,
/// as into a caller's own loop.
#[inline(always)]
fn per_call(call: impl Fn() -> bool) -> f64 {
    let start = Instant::now();
    for _ in 0..CALLS {
        black_box(call());
    }
    start.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
}

/// The line printed for `shape`: `pairs lease/SHAPE: ...`, read by scripts/perf-page.py.
fn report(shape: &str, rounds: Rounds) -> String {
    let ratios: Vec<f64> = (rounds.leased.iter().zip(&rounds.in_process))
        .map(|(leased, in_process)| leased / in_process)
        .collect();
    let ratios = sorted(ratios);
    let fastest = |times: Vec<f64>| times.into_iter().fold(f64::INFINITY, f64::min);
    let (in_process, leased) = (fastest(rounds.in_process), fastest(rounds.leased));
    let quartile = |index: usize| ratios[index * (ratios.len() - 1) / 4];
    format!(
        "pairs lease/{shape}: in_process {in_process:.2} ns, leased {leased:.2} ns \
         (fastest of {ROUNDS} rounds of {CALLS} calls each); leased / in_process \
         {:.3} fastest, {:.3} median round (quartiles {:.3} to {:.3})",
        leased / in_process,
        quartile(2),
        quartile(1),
        quartile(3),
    )
}

fn sorted(mut values: Vec<f64>) -> Vec<f64> {
    values.sort_by(f64::total_cmp);
    values
}
