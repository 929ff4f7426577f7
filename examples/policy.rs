//! The README's policy snippet, as a program the tests run (`test = true` in Cargo.toml):
//! `cargo run --release --example policy`. An API allows 10 a second and 1,000 a day; a
//! request the daily rule would take but the per-second rule denies costs the day nothing.

use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);
const DAY: Duration = Duration::from_secs(86_400);

fn main() -> Result<(), librate::Error> {
    use librate::{Config, Instant, Policy};

    // 10 a second and 1,000 a day, decided together: all or nothing.
    let api = Policy::new(&[Config::gcra(10, SECOND), Config::fixed_window(1_000, DAY)])?;
    for _ in 0..10 {
        assert!(api.acquire_at(1, Instant::ZERO)?.decision.allowed);
    }
    let d = api.acquire_at(1, Instant::ZERO)?;
    if !d.decision.allowed {
        // denied_by: Some(0), the per-second rule; the day still has 990 left.
        let wait_ms = d.decision.retry_after().as_millis();
        println!("rule {:?}: retry in {wait_ms} ms", d.denied_by);
    }
    assert_eq!(d.denied_by, Some(0));
    assert_eq!(d.rules()[1].remaining, 990);
    assert_eq!(d.decision.retry_after(), SECOND / 10);
    Ok(())
}

#[test]
fn the_snippet_runs() {
    main().unwrap();
}
