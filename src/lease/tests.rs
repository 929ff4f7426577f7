//! The holder's edges the C tests (tests/c/test_lease.c) do not reach: a request within
//! the rule's burst but past the share's, a caller's time past what the script counts,
//! the sentence of a refused answer, and what a decision now counts (its demand, and its
//! outcome once counting is on). Values worked out by hand: a GCRA rule of 1,000 a second
//! (T = 1 ms, B = 1,000), leased 2 s at a time (a century for decisions now).

use super::{Fallback, Grant, HolderState, LeaseHolder, LeaseRule};
use crate::{AcquireError, Config, Decision, Instant};
use std::time::Duration;

const MS: u64 = 1_000_000;

fn holder() -> LeaseHolder {
    let rule = LeaseRule::new(&Config::per_second(1000), Duration::from_secs(2)).unwrap();
    LeaseHolder::named(&rule, Fallback::Deny, "host-a").unwrap()
}

fn granted(rate: u64, burst: u64) -> Grant {
    Grant::from_fields(b"granted", [rate, burst, 2_000_000, 1, rate, burst, 1, 0]).unwrap()
}

#[test]
fn past_the_share_but_within_the_rule_is_a_denial() {
    let holder = holder();
    let renewal = holder.renewal_at(Instant::ZERO);
    // A tenth of the rate, bursts of 100: one unit every 10 ms, τ = 1 s.
    holder
        .apply_at(&renewal, &granted(100_000, 100), Instant::ZERO)
        .unwrap();
    let at = Instant::from_nanos(1500 * MS);
    // 101 units: more than the share ever holds, fewer than the rule's 1,000. Denied until
    // the next renewal might bring more (500 ms).
    let denied = holder.acquire_at(101, at).unwrap();
    let renew_every = 500 * MS;
    assert_eq!(
        denied,
        Decision {
            allowed: false,
            limit: 100,
            retry_after_ns: renew_every,
            ..Decision::default()
        }
    );
    assert_eq!(holder.try_acquire_at(101, at), Ok(false));
    assert_eq!(
        holder.try_acquire_at(1001, at),
        Err(AcquireError::InsufficientCapacity)
    );
    // The share filled in the 1.5 s since: 100 units now.
    assert!(holder.try_acquire_at(100, at).unwrap());
}

#[test]
fn a_time_past_what_the_script_counts_ends_its_lease_at_once() {
    let holder = holder();
    // 2^53 µs is the script's last exact time: a later one is sent as the last, and the
    // holder counts its lease from there, which has long passed.
    let renewal = holder.renewal_at(Instant::MAX);
    assert_eq!(renewal.args()[1], "9007199254740991");
    assert_eq!(
        renewal.sent_at(),
        Instant::from_nanos(9_007_199_254_740_991_000)
    );
    holder
        .apply_at(&renewal, &granted(1_000_000, 1000), Instant::MAX)
        .unwrap();
    assert_eq!(holder.state_at(Instant::MAX), HolderState::Fallback);
    assert!(!holder.try_acquire_at(1, Instant::MAX).unwrap());
}

#[test]
fn an_answer_the_script_never_gives_is_named_and_not_applied() {
    let holder = holder();
    let renewal = holder.renewal_at(Instant::ZERO);
    let error = holder
        .apply_at(&renewal, &granted(1_000_000, 1001), Instant::ZERO)
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the lease script never answers burst 1001: nothing applied"
    );
    let status = Grant::from_fields(b"maybe", [0; 8]).unwrap_err();
    assert_eq!(
        status.to_string(),
        "the lease script never answers status maybe: nothing applied"
    );
    assert_eq!(holder.state_at(Instant::ZERO), HolderState::Fallback);
    assert_eq!(holder.last_grant(), None);
}

#[test]
fn now_every_request_within_the_rule_counts_in_the_demand_once() {
    // A holder under no lease (fallback: deny) and one of the whole rule for a century:
    // its share, emptied at 0, holds the burst by now, so the first 1,000 units pass.
    let century = Duration::from_secs(100 * 365 * 86_400);
    let rule = LeaseRule::new(&Config::per_second(1000), century).unwrap();
    let unleased = LeaseHolder::named(&rule, Fallback::Deny, "host-a").unwrap();
    let leased = LeaseHolder::named(&rule, Fallback::Deny, "host-b").unwrap();
    let century = century.as_micros() as u64;
    let whole = Grant::from_fields(
        b"granted",
        [1_000_000, 1000, century, 0, 1_000_000, 1000, 1, 0],
    )
    .unwrap();
    let renewal = leased.renewal_at(Instant::ZERO);
    leased.apply_at(&renewal, &whole, Instant::ZERO).unwrap();
    assert_eq!(leased.state(), HolderState::Leased);

    assert_eq!(unleased.try_acquire(3), Ok(false));
    assert_eq!(leased.try_acquire(400), Ok(true));
    assert_eq!(leased.try_acquire(600), Ok(true));
    // Past the rule's burst: refused, and no demand.
    assert_eq!(
        leased.try_acquire(1001),
        Err(AcquireError::InsufficientCapacity)
    );
    assert_eq!((unleased.asked(), leased.asked()), (3, 1000));

    // Counting on: each request is then also counted, once. The share is empty (1,000
    // units taken just now, one back a millisecond).
    unleased.enable_counts();
    leased.enable_counts();
    assert_eq!(unleased.try_acquire(2), Ok(false));
    assert_eq!(leased.try_acquire(1000), Ok(false));
    let counts = |holder: &LeaseHolder| {
        let counts = holder.counts().unwrap();
        (counts.admitted, counts.denied)
    };
    assert_eq!((counts(&unleased), counts(&leased)), ((0, 1), (0, 1)));
    assert_eq!((unleased.asked(), leased.asked()), (5, 2000));
}
