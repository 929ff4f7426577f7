//! Published test vectors of peer GCRA and token-bucket libraries
//! (`tests/common/peer_vectors.rs`), replayed through `acquire_at` on a virtual clock.

mod common;

use common::peer_vectors::{self, Decide};
use common::refused;
use librate::{Config, Instant, Limiter};

fn in_process(config: &Config) -> Decide {
    let limiter = Limiter::new(config).unwrap();
    Box::new(move |n, at| {
        limiter
            .acquire_at(n, Instant::from_nanos(at))
            .map_err(refused)
    })
}

#[test]
fn throttled_rate_limit_vectors() {
    peer_vectors::throttled_rate_limit(&mut in_process);
}

#[test]
fn x_time_rate_burst_vectors() {
    peer_vectors::x_time_rate_burst(&mut in_process);
}

#[test]
fn x_time_rate_jump_backwards_vector() {
    peer_vectors::x_time_rate_jump_backwards(&mut in_process);
}

#[test]
fn redis_cell_throttle_example() {
    peer_vectors::redis_cell_throttle(&mut in_process);
}
