//! A social site's limits as one keyed policy, a program the tests run (`test = true` in
//! Cargo.toml): `cargo run --release --example social`. Per customer: 1 post a second, 5
//! likes a second, 150 friend adds a day; for everybody: 10,000 requests a second. A post
//! is decided against its customer's post rule and the global rule together, all or
//! nothing; a like against the like rule and the same global rule.

use std::time::Duration;

const SECOND: Duration = Duration::from_secs(1);
const DAY: Duration = Duration::from_secs(86_400);

fn main() -> Result<(), librate::Error> {
    use librate::{Config, Instant, KeyedPolicy, KeyedRule};

    // Per customer: posts, likes, friend adds; then everybody. Room for 100,000 customers.
    let site = KeyedPolicy::new(
        &[
            KeyedRule::per_key(Config::gcra(1, SECOND)),
            KeyedRule::per_key(Config::gcra(5, SECOND)),
            KeyedRule::per_key(Config::fixed_window(150, DAY)),
            KeyedRule::global(Config::gcra(10_000, SECOND)),
        ],
        100_000,
    )?;
    // What each action costs each rule: 0 leaves a rule out.
    const POST: [u64; 4] = [1, 0, 0, 1];
    const LIKE: [u64; 4] = [0, 1, 0, 1];
    const FRIEND: [u64; 4] = [0, 0, 1, 1];

    let d = site.acquire_costs_at(b"alice", &POST, Instant::ZERO)?;
    assert!(d.decision.allowed);
    let again = site.acquire_costs_at(b"alice", &POST, Instant::ZERO)?;
    if !again.decision.allowed {
        // denied_by: Some(0), alice's post rule; the global rule took nothing.
        let wait_ms = again.decision.retry_after().as_millis();
        println!("post: rule {:?}, retry in {wait_ms} ms", again.denied_by);
    }
    let like = site.acquire_costs_at(b"alice", &LIKE, Instant::ZERO)?;
    println!("like: allowed {}", like.decision.allowed);

    assert_eq!(again.denied_by, Some(0));
    assert_eq!(again.decision.retry_after(), SECOND);
    // Everybody: the first post alone is counted (the global rule's burst is 10,000).
    assert_eq!(again.rules()[3].remaining, 9_999);
    // The like is decided against the like and global rules; the post rule only reports.
    assert!(like.decision.allowed);
    assert_eq!(like.rules()[1].remaining, 4);
    assert_eq!(like.rules()[3].remaining, 9_998);
    assert_eq!(like.decision.remaining, 4);
    // 150 friend adds a day, then none until the next day.
    for _ in 0..150 {
        let added = site.acquire_costs_at(b"alice", &FRIEND, Instant::ZERO + SECOND)?;
        assert!(added.decision.allowed);
    }
    let friend = site.acquire_costs_at(b"alice", &FRIEND, Instant::ZERO + SECOND)?;
    assert_eq!(friend.denied_by, Some(2));
    assert_eq!(friend.decision.retry_after(), DAY - SECOND);
    // Memory: 32 bytes per customer of capacity for each per-key rule (two slots of 16).
    assert_eq!(site.bytes_per_key(), 96);
    // bob is another customer: his post is his own.
    let bob = site.acquire_costs_at(b"bob", &POST, Instant::ZERO + SECOND)?;
    assert!(bob.decision.allowed);
    Ok(())
}

#[test]
fn the_snippet_runs() {
    main().unwrap();
}
