//! docs/metrics.md's example, line for line (scripts/check-docs.py checks the page's block).

use librate::{Config, Instant, Policy};
use std::time::Duration;
const SECOND: Duration = Duration::from_secs(1);

#[test]
fn example() {
    let rules = [
        Config::gcra(2, SECOND),
        Config::fixed_window(3, 60 * SECOND),
    ];
    let policy = Policy::new(&rules).unwrap();
    policy.enable_counts();
    for _ in 0..3 {
        policy.try_acquire_at(1, Instant::ZERO).unwrap();
    }
    let counts = policy.counts().unwrap();
    assert_eq!((counts.admitted, counts.denied), (2, 1));
    assert_eq!(counts.rules()[0].denied, 1); // the per-second rule denied the third
}
