//! Runs one decision N times, for `benches/callgrind.sh` to count the instructions a call
//! costs (instructions do not depend on the machine's load as a timing does).
//!
//! Usage: `calls CASE N`. Each case sets its limiter up, then makes N calls; the script
//! subtracts the count of a run of 0 calls, so what it reports is the calls' alone. Cases
//! at a chosen time (`_at`) are deterministic; those through the clock pick a state whose
//! decision takes the same path at any time (drained: a coarse read and a denial; idle: an
//! exact read and an admission).

use rate::{Config, KeyedLimiter, Limiter, Policy};
use std::hint::black_box;

const SECOND: u64 = 1_000_000_000;
const HOUR: u64 = 3600 * SECOND;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().expect("usage: calls CASE N");
    let calls: u64 = args.next().and_then(|n| n.parse().ok()).expect("usage: calls CASE N");
    let limiter = |config: Config| Limiter::new(&config).unwrap();
    let keyed = |config: Config| KeyedLimiter::new(&config, 1024).unwrap();
    let mut admitted = 0u64;
    match case.as_str() {
        // Admits every call: each comes one period after the one before.
        "gcra_acquire_at_allow" => {
            let l = limiter(Config::gcra(1, SECOND));
            for i in 0..calls {
                admitted += l.acquire_at(1, black_box(i * SECOND)).unwrap().allowed as u64;
            }
        }
        "gcra_acquire_at_deny" => {
            let l = limiter(Config::gcra(1, HOUR));
            for _ in 0..calls {
                admitted += l.acquire_at(1, black_box(SECOND)).unwrap().allowed as u64;
            }
        }
        "gcra_try_acquire_drained" => {
            let l = limiter(Config::gcra(1, HOUR));
            for _ in 0..calls {
                admitted += l.try_acquire(black_box(1)).unwrap() as u64;
            }
        }
        "gcra_try_acquire_idle" => {
            let l = limiter(Config::gcra(1_000_000_000, SECOND / 1_000_000_000));
            for _ in 0..calls {
                admitted += l.try_acquire(black_box(1)).unwrap() as u64;
            }
        }
        "fixed_window_try_acquire_drained" => {
            let l = limiter(Config::fixed_window(1, HOUR));
            for _ in 0..calls {
                admitted += l.try_acquire(black_box(1)).unwrap() as u64;
            }
        }
        "sliding_window_acquire_at_allow" => {
            let l = limiter(Config::sliding_window(1_000_000_000, HOUR));
            for i in 0..calls {
                admitted += l.acquire_at(1, black_box(i)).unwrap().allowed as u64;
            }
        }
        "sliding_window_try_acquire_drained" => {
            let l = limiter(Config::sliding_window(1, HOUR));
            for _ in 0..calls {
                admitted += l.try_acquire(black_box(1)).unwrap() as u64;
            }
        }
        "sliding_log_acquire_at_deny" => {
            let l = limiter(Config::sliding_log(4, HOUR));
            for _ in 0..calls {
                admitted += l.acquire_at(1, black_box(SECOND)).unwrap().allowed as u64;
            }
        }
        "keyed_gcra_acquire_at_deny" => {
            let t = keyed(Config::gcra(1, HOUR));
            for i in 0..calls {
                let key = (i % 64).to_le_bytes();
                admitted += t.acquire_at(&key, 1, black_box(SECOND)).unwrap().allowed as u64;
            }
        }
        "keyed_gcra_try_acquire_drained" => {
            let t = keyed(Config::gcra(1, HOUR));
            for i in 0..calls {
                let key = (i % 64).to_le_bytes();
                admitted += t.try_acquire(&key, black_box(1)).unwrap() as u64;
            }
        }
        "policy_try_acquire_at_allow" => {
            let p = Policy::new(&[Config::gcra(1, SECOND), Config::sliding_window(10, SECOND)])
                .unwrap();
            for i in 0..calls {
                admitted += p.try_acquire_at(1, black_box(i * SECOND)).unwrap() as u64;
            }
        }
        "policy_try_acquire_drained" => {
            let p = Policy::new(&[Config::gcra(1, HOUR), Config::sliding_window(10, HOUR)])
                .unwrap();
            for _ in 0..calls {
                admitted += p.try_acquire(black_box(1)).unwrap() as u64;
            }
        }
        other => panic!("unknown case {other}"),
    }
    black_box(admitted);
}
