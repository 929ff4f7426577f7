//! docs/policies.md's shadow-rules snippet, as a program the tests run (`test = true` in
//! Cargo.toml): `cargo run --release --example shadow`. An API allows 10 a second; a new
//! limit of 5 a second is rolled out in shadow, its would-be denials counted, then
//! enforced with one call on the running policy.

use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);

fn main() -> Result<(), librate::Error> {
    use librate::{Config, Instant, Policy};

    // 10 a second enforced; a new limit of 5 a second (rule 1) rolled out in shadow.
    let api = Policy::new(&[Config::gcra(10, SECOND), Config::gcra(5, SECOND)])?;
    api.set_shadow(0b10)?;
    let mut would_deny = 0;
    for _ in 0..8 {
        let d = api.acquire_at(1, Instant::ZERO)?;
        assert!(d.decision.allowed); // only the enforced rule decides
        if d.shadow_denied_by() == Some(1) {
            would_deny += 1; // the new limit would have denied this request
        }
    }
    println!("{would_deny} of 8 requests would have been denied");
    // Enforce it: one call, no new policy, every rule keeps its state.
    api.set_shadow(0)?;
    let later = Instant::ZERO + SECOND;
    let admitted = (0..6)
        .filter(|_| api.acquire_at(1, later).is_ok_and(|d| d.decision.allowed))
        .count();
    println!("{admitted} of 6 admitted once enforced");
    assert_eq!((would_deny, admitted), (3, 5));
    Ok(())
}

#[test]
fn the_snippet_runs() {
    main().unwrap();
}
