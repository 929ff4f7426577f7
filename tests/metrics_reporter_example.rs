//! docs/metrics.md's Rust exposition example, line for line (scripts/check-docs.py
//! checks the page's block).
#![cfg(feature = "metrics")]

use librate::metrics::Reporter;
use librate::{Config, Limiter};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn example() {
    let login = Arc::new(Limiter::new(&Config::gcra(5, Duration::from_secs(60))).unwrap());
    let reporter = Reporter::new();
    reporter.register("login", &login); // turns its counting on
    login.try_acquire(1).unwrap();
    reporter.report(); // ratelimit.requests{limiter="login",result="admitted",rule=""} = 1
    assert_eq!(login.counts().unwrap().admitted, 1);
}
